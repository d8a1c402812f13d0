#include "runtime/executor.hpp"

#include "runtime/op_traits.hpp"

namespace gridflow {

std::vector<bool> written_buffers(const LoweredProgram& p) {
  std::vector<bool> out(p.buffers.size(), false);
  const auto mark = [&](std::uint32_t b) {
    if (b < out.size())
      out[b] = true;
  };
  for (const program::TaskDesc& t : p.tasks) {
    if (program::op_has(program::kBufferOps, t.opcode))
      mark(t.out_buffer);
    if (program::op_traits(t.opcode).aux == program::AuxUse::write)
      mark(t.aux_buffer);
  }
  return out;
}

bool kernel_fills_sentinels(const LoweredProgram& p, const ExecOptions& o) {
  return p.mode == SyncMode::sentinel && o.sentinel_fill == SentinelFill::kernel;
}

program::RunParams run_params(const LoweredProgram& p, const ExecOptions& o, std::uint32_t epoch,
                              std::uint64_t barrier_base) {
  const bool kernel_fill = kernel_fills_sentinels(p, o);
  program::RunParams r;
  r.epoch = epoch;
  r.sentinel_fill = kernel_fill ? 1u : 0u;
  r.barrier_base = barrier_base;
  r.timeout_ns = o.timeout_ns;
  r.pacing = o.pacing;
  r.wait_pacing = o.wait_pacing;
  r.fault_skip_signal_tile = o.fault_skip_signal_tile;
  r.claim_ahead = o.claim_ahead ? 1u : 0u;
  r.barriers_in_run = p.barriers_per_run + (kernel_fill ? 1u : 0u);
  return r;
}

} // namespace gridflow
