// gridflow_bench_chain: dependent chains of small ops, each reading its predecessor's output, in every sync mode
// and schedule, against the same tiles launched one kernel per task on a stream and as a CUDA Graph.
#include "bench/bench_common.hpp"
#include "runtime/device.hpp"
#include "runtime/gpu_baselines.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

using namespace gridflow;
using namespace gridflow::bench;

namespace {

// `ops` tasks over rows x cols f32, each reading the previous output (distinct buffers, so every edge is RAW):
// "softmax" repeats softmax; "mixed" alternates softmax and a row scan.
Graph chain(const std::string& kind, std::int64_t rows, std::int64_t cols, int ops) {
  Graph g(kind + "-chain");
  g.add_buffer("x0", DType::f32, {rows, cols}, InitUniform{-2, 2, 5});
  for (int i = 1; i <= ops; ++i) {
    const std::string in = "x" + std::to_string(i - 1), out = "x" + std::to_string(i);
    g.add_buffer(out, DType::f32, {rows, cols});
    if (kind == "mixed" && i % 2 == 0)
      g.scan("op" + std::to_string(i), in, out, ScanFn::sum, false, Axis::row);
    else
      g.softmax("op" + std::to_string(i), in, out);
  }
  return g;
}

} // namespace

int main(int argc, char** argv) {
  const Args args = Args::parse(argc, argv);
  const std::optional<DeviceInfo> gpu = gpu_to_measure("gridflow_bench_chain");
  if (!gpu)
    return 0;
  Report report("chain", gpu->describe());
  const int ops = 512, reps = args.quick ? 5 : 10;
  fmt::print("{:<10} {:>6} {:<30} {:>10} {:>10} {:>8}\n", "chain", "floats", "executor", "us/op", "ms/run", "tiles");
  for (const std::string kind : {"softmax", "mixed"})
    for (std::int64_t rows : {16LL, 256LL}) {
      const std::int64_t cols = 1024;
      const Graph g = chain(kind, rows, cols, ops);
      const std::string size = rows == 16 ? "16K" : "256K";
      auto print = [&](const std::string& executor, double ms, std::size_t tiles) {
        const double us = ms * 1e3 / ops;
        fmt::print("{:<10} {:>6} {:<30} {:>10.3f} {:>10.3f} {:>8}\n", kind, size, executor, us, ms, tiles);
        report.add({{"chain", kind},
                    {"floats", rows * cols},
                    {"ops", ops},
                    {"executor", executor},
                    {"us_per_op", us},
                    {"ms_per_run", ms},
                    {"tiles", tiles}});
      };
      for (std::uint32_t bps : {1u, 2u})
        for (SyncMode mode : kAllSyncModes)
          if (!(args.quick && bps == 1))
            for (Schedule sched : {Schedule::dynamic, Schedule::static_list}) {
              SessionOptions o;
              o.backend = Backend::gpu;
              o.mode = mode;
              o.schedule = sched;
              o.blocks_per_sm = bps;
              Session s(g, o);
              s.run();
              if (!s.check().passed) {
                fmt::print("CHECK FAILED {} {} {}\n", kind, to_string(mode), s.check().summary());
                return 1;
              }
              print(fmt::format("gridflow {} {} {}/SM", to_string(mode), to_string(sched), bps), median_run_ms(s, reps),
                    s.program().tiles.size());
              if (mode == SyncMode::flags && sched == Schedule::dynamic && bps == 2) {
                const BaselineTimes b = time_per_task_launches(s.executor(), 3, reps);
                print("stream launch per task", stat_of(b.stream_ms).median, s.program().tiles.size());
                print("CUDA graph of launches", stat_of(b.graph_ms).median, s.program().tiles.size());
                // The same configuration traced: what recording costs (tracing is off in every other row).
                print("gridflow flags dynamic 2/SM traced", median_run_ms(s, reps, true), s.program().tiles.size());
                // Whole-task dependencies instead of per-tile ones: the gain of waiting only for the covering tiles.
                SessionOptions whole = o;
                whole.per_tile_deps = false;
                Session w(g, whole);
                w.run();
                print("gridflow flags dynamic 2/SM task-deps", median_run_ms(w, reps), w.program().tiles.size());
                // Claim-ahead on (off by default): each claim's ticket round trip overlaps the previous tile.
                SessionOptions ahead = o;
                ahead.exec.claim_ahead = true;
                Session ca(g, ahead);
                ca.run();
                print("gridflow flags dynamic 2/SM claim-ahead", median_run_ms(ca, reps), ca.program().tiles.size());
                // Tiles per task: smaller row tiles give per-tile dependencies independent row chains to overlap.
                for (std::int64_t tile_elements : {4096LL, 1024LL}) {
                  SessionOptions t = o;
                  t.tiles.set_row_tile_elements(tile_elements);
                  Session ts(g, t);
                  ts.run();
                  if (!ts.check().passed) {
                    fmt::print("CHECK FAILED {} row tiles {} {}\n", kind, tile_elements, ts.check().summary());
                    return 1;
                  }
                  print(fmt::format("gridflow flags dynamic 2/SM {}-elt tiles", tile_elements), median_run_ms(ts, reps),
                        ts.program().tiles.size());
                }
              }
              // Poll pacing. Sentinel body polls: the default (32 back-to-back polls, then sleeps from 32 ns doubling
              // up to 512 ns) against never sleeping and sleeps capped at 64 ns. Flags dependency waits: the default
              // (never sleep) against the body polls' default and sleeps capped at 64 ns.
              using Pacing = std::pair<const char*, program::PollPacing>;
              const std::array<Pacing, 2> poll_variants{Pacing{"spin", program::kSpinPacing},
                                                        Pacing{"sleep<=64ns", {32, 64}}};
              const std::array<Pacing, 2> wait_variants{Pacing{"sleep<=512ns", {}}, Pacing{"sleep<=64ns", {32, 64}}};
              if (bps == 2 && (mode == SyncMode::sentinel || (mode == SyncMode::flags && sched == Schedule::dynamic)))
                for (const auto& [name, pacing] : mode == SyncMode::sentinel ? poll_variants : wait_variants) {
                  SessionOptions po = o;
                  (mode == SyncMode::sentinel ? po.exec.pacing : po.exec.wait_pacing) = pacing;
                  Session ps(g, po);
                  ps.run();
                  if (!ps.check().passed) {
                    fmt::print("CHECK FAILED {} poll {} {}\n", kind, name, ps.check().summary());
                    return 1;
                  }
                  print(fmt::format("gridflow {} {} 2/SM {} {}", to_string(mode), to_string(sched),
                                    mode == SyncMode::sentinel ? "poll" : "wait", name),
                        median_run_ms(ps, reps), ps.program().tiles.size());
                }
              if (mode == SyncMode::sentinel && sched == Schedule::dynamic && bps == 2) {
                // Pre-fill inside the megakernel (one grid barrier) instead of a fill kernel at submission.
                SessionOptions kf = o;
                kf.exec.sentinel_fill = SentinelFill::kernel;
                Session k(g, kf);
                k.run();
                print("gridflow sentinel dynamic 2/SM kernel-fill", median_run_ms(k, reps), k.program().tiles.size());
              }
            }
    }
  report.write(args.json_path);
  return 0;
}
