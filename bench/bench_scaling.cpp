// gridflow_bench_scaling: per-task overhead of the megakernel against graph size (10 to 100k tasks) and grid
// shape (blocks per SM), for independent tasks and for a dependent chain, next to one launch per task on a stream
// and a CUDA Graph of those launches. Every task is a 256-float reduce, so the body is small and the figure is
// dominated by claim, wait and signal.
#include "bench/bench_common.hpp"
#include "runtime/device.hpp"
#include "runtime/gpu_baselines.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

using namespace gridflow;
using namespace gridflow::bench;

namespace {

constexpr std::int64_t kTaskElements = 256;

// `tasks` reduces of disjoint 256-float slices of x into r[i]; chained: task i also waits for task i-1.
Graph reduces(std::int64_t tasks, bool chained) {
  Graph g(fmt::format("{}-reduces-{}", chained ? "chained" : "independent", tasks));
  g.add_buffer("x", DType::f32, {tasks * kTaskElements}, InitUniform{-1, 1, 3});
  g.add_buffer("r", DType::f32, {tasks});
  for (std::int64_t i = 0; i < tasks; ++i) {
    Task& t = g.reduce(fmt::format("t{}", i), ViewSpec::range("x", i * kTaskElements, kTaskElements),
                       ViewSpec::range("r", i, 1), ReduceFn::sum);
    if (chained && i > 0)
      t.after.push_back(fmt::format("t{}", i - 1));
  }
  return g;
}

} // namespace

int main(int argc, char** argv) {
  const Args args = Args::parse(argc, argv);
  const std::optional<DeviceInfo> gpu = gpu_to_measure("gridflow_bench_scaling");
  if (!gpu)
    return 0;
  Report report("scaling", gpu->describe());
  const int reps = args.quick ? 5 : 10;
  fmt::print("{:<12} {:>7} {:>6} {:<26} {:>10} {:>10}\n", "graph", "tasks", "bps", "executor", "ms/run", "us/task");
  for (bool chained : {false, true})
    for (std::int64_t tasks : {10LL, 100LL, 1000LL, 10000LL, 100000LL}) {
      if (chained && tasks > 10000)
        continue; // a 100k-long chain is 100k serial hops: minutes of device time
      if (args.quick && tasks > 10000)
        continue;
      const Graph g = reduces(tasks, chained);
      for (std::uint32_t bps : {1u, 2u}) { // 128 registers per thread: at most 2 blocks of 256 threads per SM
        SessionOptions o;
        o.backend = Backend::gpu;
        o.mode = SyncMode::flags;
        o.blocks_per_sm = bps;
        Session s(g, o);
        s.run();
        if (!s.check().passed) {
          fmt::print("CHECK FAILED {}\n", s.check().summary());
          return 1;
        }
        auto print = [&](const std::string& executor, double med) {
          fmt::print("{:<12} {:>7} {:>6} {:<26} {:>10.4f} {:>10.4f}\n", chained ? "chain" : "independent", tasks, bps,
                     executor, med, med * 1e3 / static_cast<double>(tasks));
          report.add({{"graph", chained ? "chain" : "independent"},
                      {"tasks", tasks},
                      {"blocks_per_sm", bps},
                      {"executor", executor},
                      {"ms_per_run", med},
                      {"us_per_task", med * 1e3 / static_cast<double>(tasks)}});
        };
        print("gridflow flags dynamic", median_run_ms(s, reps));
        if (bps == 2 && tasks <= 10000) {
          const BaselineTimes b = time_per_task_launches(s.executor(), 3, reps);
          print("stream launch per task", stat_of(b.stream_ms).median);
          print("CUDA graph of launches", stat_of(b.graph_ms).median);
        }
      }
    }
  report.write(args.json_path);
  return 0;
}
