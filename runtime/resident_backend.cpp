#include "runtime/resident_backend.hpp"

namespace gridflow::resident {

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
  return r;
}

} // namespace gridflow::resident
