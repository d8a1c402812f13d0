#include "runtime/resident_backend.hpp"

namespace gridflow::resident {

// A block with an empty list waits for nothing of a flags-mode program and nothing waits for it.
std::uint64_t participants(const LoweredProgram& p) {
  if (p.mode != SyncMode::flags || p.block_begin.size() != std::size_t{p.grid_blocks} + 1)
    return 0;
  auto has_tiles = [&](std::uint32_t b) { return p.block_begin[b] < p.block_begin[b + 1]; };
  std::uint32_t n = 0;
  while (n < p.grid_blocks && has_tiles(n))
    ++n;
  for (std::uint32_t b = n; b < p.grid_blocks; ++b)
    if (has_tiles(b))
      return 0;
  return n;
}

ProgramRecord make_record(const LoweredProgram& p, const ExecOptions& options, const program::ProgramArrays& arrays,
                          std::uint32_t ring_bytes) {
  ExecOptions o = options;
  o.trace = false;
  o.sentinel_fill = SentinelFill::kernel;
  o.fault_skip_signal_tile = program::kNoTile; // per submission
  ProgramRecord r;
  r.view = make_view(p, arrays);
  r.params = run_params(p, o, 1, 0);
  r.params.ring_bytes = ring_bytes;
  r.state_bytes = p.layout.total;
  // The arena's barrier counter moves by one generation per grid barrier where gridflow's barrier is used (always on
  // the CPU); under cooperative_groups barriers nothing reads it, so advancing the base there too is harmless.
  r.barrier_advance = r.params.barriers_in_run;
  r.participants = participants(p);
  r.table = r.view.buffers;
  return r;
}

} // namespace gridflow::resident
