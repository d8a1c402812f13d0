// Baselines a user would otherwise pick, run on the GPU executor's own program, data and tiles: one kernel launch
// per task on a stream (stream order replaces every dependency), and a CUDA Graph of those launches.
#pragma once

#include "runtime/executor.hpp"

#include <vector>

namespace gridflow {

struct BaselineTimes {
  std::vector<double> stream_ms; // per repetition: every task launched in topological order on one stream
  std::vector<double> graph_ms;  // per repetition: one replay of a CUDA Graph capturing those launches
};

// `executor` must be a GPU executor (RuntimeError otherwise). The program's buffers are used as they are.
BaselineTimes time_per_task_launches(Executor& executor, int warmup, int repeat);

} // namespace gridflow
