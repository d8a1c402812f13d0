// gridflow profile: one graph in every sync mode and schedule, and (on the GPU) the per-task launch baselines,
// on identical data in one process; outputs checked and compared bit for bit; a traced run of each gridflow
// configuration analysed into a breakdown.
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/run_result.hpp"
#include "scheduler/report.hpp"
#include "scheduler/session.hpp"

#include <functional>
#include <string>
#include <vector>

namespace gridflow {

// A library equivalent of the whole graph (CUB, say) timed on the graph's initial data: returns the milliseconds
// of each timed repetition after `warmup` untimed ones.
struct ExternalBaseline {
  std::string name;
  std::function<std::vector<double>(const std::vector<HostTensor>& initial, int warmup, int repeat)> time;
};

struct ProfileOptions {
  SessionOptions base; // backend, threads, tiles ... (mode and schedule are varied)
  int warmup = 3;
  int repeat = 10;
  bool baselines = true; // GPU only: one launch per task on a stream, and a CUDA Graph of those launches
  std::vector<ExternalBaseline> external; // GPU only: timed after the gridflow configurations
};

struct ProfiledTrace {
  std::string executor;
  LoweredProgram program;
  RunResult run;
};

struct ProfileResult {
  std::string device;
  std::vector<ProfileEntry> entries;
  std::vector<ProfiledTrace> traces; // one per gridflow entry
  bool all_match = true;             // every gridflow configuration matched the first bit for bit
  bool all_checked = true;           // every gridflow configuration passed the reference check
  std::vector<std::string> not_run;  // baselines that could not run here, each "what: why"
};

ProfileResult profile(const Graph& graph, const ProfileOptions& options);

// One line per entry: executor, median time, speedups over the baselines, synchronization share.
std::string profile_table(const ProfileResult& result);

} // namespace gridflow
