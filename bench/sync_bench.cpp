// What synchronization costs on this GPU (gridflow bench sync, gridflow_bench_sync).
//   - grid barrier latency: cooperative_groups grid.sync vs gridflow's barrier (flat, and SM-aggregated arrivals),
//     across blocks per SM and threads per block, by the difference method;
//   - one-way hand-off latency between two SMs: release/acquire flag, and data-as-flag (sentinel);
//   - empty-task dispatch through the megakernel: independent tasks (claim throughput) and a dependent chain;
//   - launch cost: cooperative and ordinary launch of an empty kernel;
//   - Hopper's primitives (hopper_sync_kernels.hpp): cluster barriers, a grid barrier on clusters against grid.sync
//     at the same grid, mbarrier against __syncthreads, a hand-off through distributed shared memory, and dependent
//     kernels on a stream, with PDL, as CUDA Graph nodes and both;
//   - the host's doorbell into the resident kernel: the round trip of a submission with nothing to run.
#include "bench/sync_bench.hpp"

#include "bench/bench_common.hpp"
#include "bench/hopper_sync_kernels.hpp"
#include "bench/noop_program.hpp"
#include "bench/sync_kernels.hpp"
#include "runtime/device.hpp"
#include "runtime/gpu_executor.hpp"
#include "scheduler/percentiles.hpp"
#include "scheduler/resident_session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

using namespace gridflow;

namespace gridflow::bench {

namespace {

nlohmann::json figure_or_null(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
std::string shown(const std::optional<double>& v, int precision = 3) {
  return v ? fmt::format("{:.{}f}", *v, precision) : std::string("-");
}

void hopper_primitives(Report& report, int sms, int reps) {
  fmt::print(
      "\n== thread-block cluster barrier cluster.sync(), us (difference method: 1100 vs 100; - : not resident)\n");
  fmt::print("{:>8} {:>8} {:>10} {:>10} {:>10}\n", "threads", "blk/SM", "cluster 2", "cluster 4", "cluster 8");
  for (int threads : {128, 256, 1024})
    for (int bps : {1, 2, 4, 8}) {
      std::optional<double> us[3];
      for (int i = 0; i < 3; ++i) {
        const int cluster = 2 << i;
        us[i] = cluster_sync_us(cluster, bps, threads, reps);
        report.add({{"what", "cluster_sync"},
                    {"cluster", cluster},
                    {"threads", threads},
                    {"blocks_per_sm", bps},
                    {"us", figure_or_null(us[i])}});
      }
      if (us[0] || us[1] || us[2])
        fmt::print("{:>8} {:>8} {:>10} {:>10} {:>10}\n", threads, bps, shown(us[0]), shown(us[1]), shown(us[2]));
    }

  fmt::print("\n== grid barrier on clusters (one arrival per cluster), us, against grid.sync() and gridflow's flat "
             "barrier at the same grid\n");
  fmt::print("{:>8} {:>8} {:>7} {:>7} {:>10} {:>10} {:>12} {:>13} {:>10}\n", "threads", "cluster", "blk/SM", "blocks",
             "cg.sync", "flat", "cl: 1st polls", "cl: all poll", "best/cg");
  for (int threads : {128, 256, 1024})
    for (int cluster : {2, 4, 8})
      for (int bps : {1, 2, 4, 8}) {
        if (bps > barrier_max_blocks_per_sm(threads))
          continue; // grid.sync() and the flat barrier cannot run this grid
        const int most = cluster_grid_barrier_max_blocks(cluster, threads);
        const int blocks = std::min(bps * sms, most) / cluster * cluster;
        if (blocks < bps * sms / 2 || blocks == 0 || (bps > 1 && blocks <= (bps - 1) * sms))
          continue; // the shape is not resident (or only its previous one is)
        const double cg_us = (time_barrier_loop(BarrierKind::cg, blocks, threads, 1100, reps) -
                              time_barrier_loop(BarrierKind::cg, blocks, threads, 100, reps)) *
                             1e3 / 1000.0;
        const double flat_us = (time_barrier_loop(BarrierKind::flat, blocks, threads, 1100, reps) -
                                time_barrier_loop(BarrierKind::flat, blocks, threads, 100, reps)) *
                               1e3 / 1000.0;
        const std::optional<double> first = cluster_grid_barrier_us(cluster, blocks, threads, false, reps);
        const std::optional<double> all = cluster_grid_barrier_us(cluster, blocks, threads, true, reps);
        double best = flat_us;
        for (const auto& v : {first, all})
          if (v)
            best = std::min(best, *v);
        fmt::print("{:>8} {:>8} {:>7} {:>7} {:>10.3f} {:>10.3f} {:>12} {:>13} {:>10.2f}\n", threads, cluster, bps,
                   blocks, cg_us, flat_us, shown(first), shown(all), best / cg_us);
        report.add({{"what", "cluster_grid_barrier"},
                    {"threads", threads},
                    {"cluster", cluster},
                    {"blocks_per_sm", bps},
                    {"blocks", blocks},
                    {"cg_us", cg_us},
                    {"flat_us", flat_us},
                    {"cluster_first_polls_us", figure_or_null(first)},
                    {"cluster_all_poll_us", figure_or_null(all)}});
      }

  fmt::print("\n== block barrier, one block per SM, us (difference method: 11000 vs 1000)\n");
  fmt::print("{:>8} {:>14} {:>10}\n", "threads", "__syncthreads", "mbarrier");
  for (int threads : {128, 256, 512, 1024}) {
    const double sync = block_barrier_us(false, threads, reps), mbar = block_barrier_us(true, threads, reps);
    fmt::print("{:>8} {:>14.4f} {:>10.4f}\n", threads, sync, mbar);
    report.add({{"what", "block_barrier"}, {"threads", threads}, {"syncthreads_us", sync}, {"mbarrier_us", mbar}});
  }

  const std::optional<double> dsmem = dsmem_handoff_us(reps);
  fmt::print("\n== one-way hand-off through distributed shared memory (cluster of 2), us: {}\n", shown(dsmem));
  report.add({{"what", "handoff"}, {"kind", "dsmem"}, {"us_per_hop", figure_or_null(dsmem)}});

  fmt::print("\n== dependent empty kernels ({} blocks x 128), us per kernel (difference method: 1100 vs 100)\n", sms);
  for (bool graph : {false, true})
    for (bool pdl : {false, true}) {
      const double us = kernel_chain_us(graph, pdl, sms, reps);
      const std::string kind = fmt::format("{}{}", graph ? "graph" : "stream", pdl ? "+pdl" : "");
      fmt::print("{:<28} {:8.3f} us\n", kind, us);
      report.add({{"what", "kernel_chain"}, {"kind", kind}, {"blocks", sms}, {"us_per_kernel", us}});
    }
}

// The host's doorbell into the resident kernel (ResidentSession at its default shape and idle settings): `n` pings one
// at a time, each a submission block 0 takes from the ring and completes with nothing to run, after 200 unmeasured.
// Last in the benchmark: while the resident kernel runs nothing else may wait for the whole device.
void doorbell(Report& report, int n) {
  ResidentOptions o;
  o.backend = Backend::gpu;
  ResidentSession rs(o);
  rs.start();
  for (int i = 0; i < 200; ++i)
    rs.ping();
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const ResidentResult r = rs.ping();
    us.push_back(static_cast<double>(r.seen_ns - r.submitted_ns) / 1e3);
  }
  const std::string shape = rs.describe();
  rs.stop();
  const Percentiles p = percentiles(us);
  fmt::print(
      "\n== host doorbell into the resident kernel (a ping: block 0 takes it and completes it), round trip, us\n");
  fmt::print("{:>10} {:>10} {:>10} {:>10}  {}\n", "pings", "p50", "p90", "p99", shape);
  fmt::print("{:>10} {:>10.2f} {:>10.2f} {:>10.2f}\n", n, p.p50, p.p90, p.p99);
  report.add({{"what", "doorbell"},
              {"kind", "ping"},
              {"round_trips", n},
              {"p50_us", p.p50},
              {"p90_us", p.p90},
              {"p99_us", p.p99},
              {"runtime", shape}});
}

} // namespace

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
  fmt::print("(flat, checked each poll: the same barrier with the watchdog's checks after every poll instead of every "
             "{})\n",
             program::PollPacing{}.check_every);
  fmt::print("{:>8} {:>8} {:>7} {:>10} {:>10} {:>14} {:>14} {:>9} {:>9} {:>9} {:>10}\n", "threads", "blk/SM", "blocks",
             "cg.sync", "flat", "flat, checked", "sm-aggregated", "split 2", "split 4", "split 8", "best/cg");
  struct Kind {
    BarrierKind kind;
    int ways;
    const char* name;
    int check_every = static_cast<int>(program::PollPacing{}.check_every);
  };
  const Kind kinds[] = {{BarrierKind::cg, 1, "cg"},
                        {BarrierKind::flat, 1, "flat"},
                        {BarrierKind::flat, 1, "flat_checked_each_poll", 1},
                        {BarrierKind::sm_aggregated, 1, "sm_aggregated"},
                        {BarrierKind::split, 2, "split2"},
                        {BarrierKind::split, 4, "split4"},
                        {BarrierKind::split, 8, "split8"}};
  constexpr std::size_t kKinds = std::size(kinds);
  for (int threads : {128, 256, 1024}) {
    const int max_bps = barrier_max_blocks_per_sm(threads);
    for (int bps : {1, 2, 4, 8}) {
      if (bps > max_bps)
        continue;
      const int blocks = bps * sms;
      double us[kKinds];
      for (std::size_t k = 0; k < kKinds; ++k) {
        const double t1 =
            time_barrier_loop(kinds[k].kind, blocks, threads, 100, reps, kinds[k].ways, kinds[k].check_every);
        const double t2 =
            time_barrier_loop(kinds[k].kind, blocks, threads, 1100, reps, kinds[k].ways, kinds[k].check_every);
        us[k] = (t2 - t1) * 1e3 / 1000.0;
        report.add({{"what", "grid_barrier"},
                    {"kind", kinds[k].name},
                    {"threads", threads},
                    {"blocks_per_sm", bps},
                    {"blocks", blocks},
                    {"us_per_barrier", us[k]}});
      }
      const double best = *std::min_element(us + 1, us + kKinds);
      fmt::print("{:>8} {:>8} {:>7} {:>10.3f} {:>10.3f} {:>14.3f} {:>14.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>10.2f}\n",
                 threads, bps, blocks, us[0], us[1], us[2], us[3], us[4], us[5], us[6], best / us[0]);
    }
  }

  fmt::print("\n== one-way hand-off between two SMs, us (difference method: 5000 vs 1000 round trips)\n");
  struct Handoff {
    bool sentinel;
    int check_every;
    const char* kind;
    const char* label;
  };
  const int every = static_cast<int>(program::PollPacing{}.check_every);
  for (const Handoff h : {Handoff{false, every, "flag", "release/acquire flag"},
                          Handoff{false, 1, "flag_checked_each_poll", "flag, watchdog each poll"},
                          Handoff{true, every, "sentinel", "data-as-flag (sentinel)"}}) {
    int smids[2] = {-1, -1};
    const double t1 = time_pingpong(1000, h.sentinel, reps, smids, h.check_every);
    const double t2 = time_pingpong(5000, h.sentinel, reps, smids, h.check_every);
    const double hop = (t2 - t1) * 1e3 / (2.0 * 4000);
    fmt::print("{:<28} {:8.3f} us   (SMs {} and {})\n", h.label, hop, smids[0], smids[1]);
    report.add({{"what", "handoff"}, {"kind", h.kind}, {"us_per_hop", hop}, {"smids", {smids[0], smids[1]}}});
  }

  fmt::print("\n== launch to completion of an empty kernel, us (median of 50)\n");
  for (bool coop : {false, true}) {
    const double us = time_empty_launch(sms, coop, 50) * 1e3;
    fmt::print("{:<28} {:8.2f} us\n", coop ? "cooperative launch" : "ordinary launch", us);
    report.add({{"what", "empty_launch"}, {"kind", coop ? "cooperative" : "ordinary"}, {"us", us}});
  }

  hopper_primitives(report, sms, reps);

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

  doorbell(report, args.quick ? 2000 : 10000);
  return report.rows();
}

} // namespace gridflow::bench
