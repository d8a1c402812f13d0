// What synchronization costs on this GPU (gridflow bench sync, gridflow_bench_sync).
//   - grid barrier latency: cooperative_groups grid.sync vs gridflow's barrier (flat, and SM-aggregated arrivals),
//     across blocks per SM and threads per block, by the difference method;
//   - one-way hand-off latency between two SMs: release/acquire flag, and data-as-flag (sentinel);
//   - empty-task dispatch through the megakernel: independent tasks (claim throughput) and a dependent chain;
//   - launch cost: cooperative and ordinary launch of an empty kernel.
#include "bench/sync_bench.hpp"

#include "bench/bench_common.hpp"
#include "bench/noop_program.hpp"
#include "bench/sync_kernels.hpp"
#include "runtime/device.hpp"
#include "runtime/gpu_executor.hpp"

#include <fmt/format.h>

using namespace gridflow;

namespace gridflow::bench {

nlohmann::json run_sync_bench(bool quick) {
  Args args;
  args.quick = quick;
  const std::optional<DeviceInfo> gpu = gpu_to_measure("gridflow bench sync");
  if (!gpu)
    return nlohmann::json::array();
  Report report("sync", gpu->describe());
  const int sms = gpu->sm_count;
  const int reps = args.quick ? 3 : 7;

  fmt::print("== grid barrier, us per barrier (difference method: 1100 vs 100 barriers, median of {})\n", reps);
  fmt::print("{:>8} {:>8} {:>7} {:>10} {:>10} {:>14} {:>10}\n", "threads", "blk/SM", "blocks", "cg.sync", "flat",
             "sm-aggregated", "best/cg");
  const char* names[] = {"cg", "flat", "sm_aggregated"};
  for (int threads : {128, 256, 1024}) {
    const int max_bps = barrier_max_blocks_per_sm(threads);
    for (int bps : {1, 2, 4, 8}) {
      if (bps > max_bps)
        continue;
      const int blocks = bps * sms;
      double us[3];
      for (int k = 0; k < 3; ++k) {
        const double t1 = time_barrier_loop(static_cast<BarrierKind>(k), blocks, threads, 100, reps);
        const double t2 = time_barrier_loop(static_cast<BarrierKind>(k), blocks, threads, 1100, reps);
        us[k] = (t2 - t1) * 1e3 / 1000.0;
        report.add({{"what", "grid_barrier"},
                    {"kind", names[k]},
                    {"threads", threads},
                    {"blocks_per_sm", bps},
                    {"blocks", blocks},
                    {"us_per_barrier", us[k]}});
      }
      fmt::print("{:>8} {:>8} {:>7} {:>10.3f} {:>10.3f} {:>14.3f} {:>10.2f}\n", threads, bps, blocks, us[0], us[1],
                 us[2], std::min(us[1], us[2]) / us[0]);
    }
  }

  fmt::print("\n== one-way hand-off between two SMs, us (difference method: 5000 vs 1000 round trips)\n");
  for (bool sentinel : {false, true}) {
    int smids[2] = {-1, -1};
    const double t1 = time_pingpong(1000, sentinel, reps, smids);
    const double t2 = time_pingpong(5000, sentinel, reps, smids);
    const double hop = (t2 - t1) * 1e3 / (2.0 * 4000);
    fmt::print("{:<28} {:8.3f} us   (SMs {} and {})\n", sentinel ? "data-as-flag (sentinel)" : "release/acquire flag",
               hop, smids[0], smids[1]);
    report.add({{"what", "handoff"},
                {"kind", sentinel ? "sentinel" : "flag"},
                {"us_per_hop", hop},
                {"smids", {smids[0], smids[1]}}});
  }

  fmt::print("\n== launch to completion of an empty kernel, us (median of 50)\n");
  for (bool coop : {false, true}) {
    const double us = time_empty_launch(sms, coop, 50) * 1e3;
    fmt::print("{:<28} {:8.2f} us\n", coop ? "cooperative launch" : "ordinary launch", us);
    report.add({{"what", "empty_launch"}, {"kind", coop ? "cooperative" : "ordinary"}, {"us", us}});
  }

  fmt::print("\n== empty tasks through the megakernel (256 threads)\n");
  fmt::print("{:<34} {:>6} {:>10} {:>12} {:>14}\n", "workload", "blk/SM", "tasks", "ms", "result");
  for (std::uint32_t bps : {1u, 2u}) {
    const GpuShape shape = plan_gpu_shape(256, bps);
    const std::uint32_t n_indep = args.quick ? 200000 : 1000000;
    for (SyncMode mode : {SyncMode::flags, SyncMode::grid_sync}) {
      auto ex = make_gpu_executor(noop_program(n_indep, false, mode, shape.grid_blocks, 256), shape);
      std::vector<double> ms;
      for (int r = 0; r < reps + 1; ++r) {
        const double t = ex->run().elapsed_ms;
        if (r)
          ms.push_back(t);
      }
      const double med = stat_of(ms).median;
      const double mtps = n_indep / med / 1e3;
      fmt::print("{:<34} {:>6} {:>10} {:>12.3f} {:>10.1f} M/s\n",
                 fmt::format("independent, claim{}", mode == SyncMode::flags ? " + signal" : " only"), bps, n_indep,
                 med, mtps);
      report.add({{"what", "empty_tasks_independent"},
                  {"mode", to_string(mode)},
                  {"blocks_per_sm", bps},
                  {"tasks", n_indep},
                  {"ms", med},
                  {"mtasks_per_s", mtps}});
    }
    const std::uint32_t n_chain = 4000;
    for (SyncMode mode : {SyncMode::flags, SyncMode::barrier, SyncMode::grid_sync}) {
      auto ex = make_gpu_executor(noop_program(n_chain, true, mode, shape.grid_blocks, 256), shape);
      std::vector<double> ms;
      for (int r = 0; r < reps + 1; ++r) {
        const double t = ex->run().elapsed_ms;
        if (r)
          ms.push_back(t);
      }
      const double us = stat_of(ms).median * 1e3 / n_chain;
      fmt::print("{:<34} {:>6} {:>10} {:>12.3f} {:>10.3f} us/task\n",
                 fmt::format("dependent chain, {}", to_string(mode)), bps, n_chain, stat_of(ms).median, us);
      report.add({{"what", "empty_tasks_chain"},
                  {"mode", to_string(mode)},
                  {"blocks_per_sm", bps},
                  {"tasks", n_chain},
                  {"us_per_task", us}});
    }
  }
  return report.rows();
}

} // namespace gridflow::bench
