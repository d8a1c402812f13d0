// What a traced run's time went to: per-block breakdown into work / dependency wait / barrier / dispatch / idle,
// per-task figures, per-sync-event statistics, and the critical path of the task graph against the makespan.
//
// Definitions (per block, over the run's makespan [t0, t_end], t0 = first claim of any block):
//   dispatch = claim (claim_begin -> claimed) + stage (claimed -> ready of a tile without dependencies: staging its
//              descriptors) + signal (executed -> signalled)
//   wait     = dependency wait (claimed -> ready of a tile with dependencies; its staging overlaps the wait)
//   work     = the body (ready -> executed)
//   barrier  = inside grid barriers (arrive -> leave)
//   idle     = the rest (before the first claim, failed claims, after the last tile)
// Shares are over blocks x makespan, so they sum to 100%.
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/run_result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gridflow {

struct Share {
  double ns = 0;    // summed over blocks
  double share = 0; // of blocks x makespan
};

struct Breakdown {
  Share work, wait, barrier, dispatch, idle;
};

struct EventStats {
  std::size_t count = 0;
  double median_ns = 0, p99_ns = 0, max_ns = 0, total_ns = 0;
};

struct TaskProfile {
  std::string name;
  std::uint32_t tiles = 0;
  double work_ns = 0; // summed over its tiles
  double wait_ns = 0;
  double span_ns = 0; // first ready -> last executed
  double longest_tile_ns = 0;
};

struct TraceAnalysis {
  std::uint32_t blocks = 0;
  double makespan_ns = 0;
  double critical_path_ns = 0; // longest path through the task graph, each task weighted by its longest tile
  Breakdown breakdown;
  EventStats dependency_wait; // per tile that had dependencies: claimed -> ready
  EventStats barrier_wait;    // per block per barrier: arrive -> leave
  EventStats dispatch;        // per tile: claim + stage + signal
  EventStats claim;           // per tile: claim_begin -> claimed (the claim and its descriptor check)
  EventStats stage;           // per tile without dependencies: claimed -> ready (staging its descriptors and the
                              // block barrier that publishes them; with dependencies that overlaps the wait)
  EventStats body;            // per tile: ready -> executed (in sentinel mode this includes polling the inputs)
  EventStats signal;          // per tile: executed -> signalled (0 for a tile nobody awaits)
  std::vector<TaskProfile> tasks;
};

// Whether tile g's claimed -> ready span is a dependency wait (it has dependencies) or only its staging.
inline bool tile_waits(const LoweredProgram& program, std::size_t g) {
  return program.tiles[g].dep_count > 0;
}

// Throws RuntimeError when the trace does not match the program (wrong sizes, tiles that never ran).
TraceAnalysis analyze_trace(const LoweredProgram& program, const RunResult& run);

EventStats event_stats(std::vector<double> durations_ns);

// Chrome trace JSON (Perfetto, chrome://tracing): one track per block, slices for dispatch / wait / the task
// body / signal / barriers, flow arrows from producer tiles to the tiles that waited for them.
std::string chrome_trace_json(const LoweredProgram& program, const RunResult& run, const std::string& title);

} // namespace gridflow
