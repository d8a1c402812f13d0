#include "runtime/executor.hpp"

#include "runtime/errors.hpp"
#include "runtime/gpu_executor.hpp"
#include "runtime/op_traits.hpp"

#include <fmt/format.h>

#include <algorithm>

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
  r.plain_tiles = o.plain_tiles ? 1u : 0u;
  r.barriers_in_run = p.barriers_per_run + (kernel_fill ? 1u : 0u);
  return r;
}

std::uint32_t most_blocks_per_sm(const GpuShape& device) {
  return std::max(device.max_blocks_per_sm, device.max_lean_blocks_per_sm);
}

std::uint32_t lean_row_blocks_per_sm(const GpuShape& device) {
  return std::max(std::min(device.max_lean_blocks_per_sm, lean_row_min_blocks_per_sm(device.threads_per_block)),
                  std::min<std::uint32_t>(2, device.max_blocks_per_sm));
}

GpuShape fit_gpu_shape(const GpuShape& device, std::uint32_t blocks_per_sm, const std::string& device_name) {
  GpuShape s = device;
  s.blocks_per_sm = blocks_per_sm == 0 ? std::min<std::uint32_t>(2, s.max_blocks_per_sm) : blocks_per_sm;
  if (s.max_blocks_per_sm == 0 || s.blocks_per_sm > most_blocks_per_sm(s))
    throw RuntimeError(
        fmt::format("grid cannot be co-resident: {} blocks per SM of {} threads requested, the occupancy "
                    "of the megakernel allows {} on {} ({} SMs); lower --blocks-per-sm or --threads",
                    s.blocks_per_sm, s.threads_per_block, most_blocks_per_sm(s), device_name, s.sm_count));
  s.grid_blocks = s.blocks_per_sm * s.sm_count;
  return s;
}

} // namespace gridflow
