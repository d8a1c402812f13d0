// Trace analysis on synthetic traces with known answers; the trace, report and plot formats.
#include "runtime/cpu_executor.hpp"
#include "runtime/errors.hpp"
#include "scheduler/profile.hpp"
#include "scheduler/report.hpp"
#include "scheduler/trace_analysis.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace gridflow {
namespace {

// Two tasks, a -> b (b's tile waits for a's only tile); two blocks; times in ns chosen by hand.
//   block 0: tile 0 (a): claim 0-10, ready 10, executed 110, signalled 120
//   block 1: tile 1 (b): claim 0-20, wait 20-125, work 125-325, signal 325-330
// makespan 330; per block 330 -> total 660.
std::pair<LoweredProgram, RunResult> synthetic() {
  LoweredProgram p;
  p.mode = SyncMode::flags;
  p.grid_blocks = 2;
  program::TaskDesc a, b;
  a.num_tiles = b.num_tiles = 1;
  a.first_tile = 0;
  b.first_tile = 1;
  b.level = 1;
  p.tasks = {a, b};
  p.task_names = {"a", "b"};
  p.deps = {{0, 0, 1, static_cast<std::uint32_t>(program::DepKind::task)}};
  p.pred_begin = {0, 0, 1};
  p.pred_tasks = {0};
  p.tiles = {{0, 0, 0, 0}, {1, 0, 0, 1}};
  p.level_begin = {0, 1, 2};
  RunResult r;
  r.blocks = 2;
  r.barriers_per_block = 0;
  r.tiles.resize(2);
  r.tiles[0] = {0, 5, 0, 0, 1000, 1010, 1010, 1110, 1120, 1};
  r.tiles[1] = {1, 6, 1, 1, 1000, 1020, 1125, 1325, 1330, 1};
  return {p, r};
}

// Per-tile dependencies: two row tiles per task, b's tile k waits only for a's tile k. a's long tile (row 0) and b's
// long tile (row 1) overlap in time, so the longest-tile-per-task sum (100 + 100) would exceed the makespan; the
// tile-level path is a1 (10) -> b1 (100) = 110, against a makespan of 110.
//   block 0: a0 ready 0 executed 100; b0 ready 100 executed 110
//   block 1: a1 ready 0 executed 10;  b1 ready 10 executed 110
TEST(TraceAnalysis, CriticalPathFollowsTileDependencies) {
  LoweredProgram p;
  p.mode = SyncMode::flags;
  p.grid_blocks = 2;
  program::TaskDesc a, b;
  a.num_tiles = b.num_tiles = 2;
  a.first_tile = 0;
  b.first_tile = 2;
  b.level = 1;
  p.tasks = {a, b};
  p.task_names = {"a", "b"};
  const auto tiles = static_cast<std::uint32_t>(program::DepKind::tiles);
  p.deps = {{0, 0, 1, tiles}, {0, 1, 2, tiles}};
  p.pred_begin = {0, 0, 1};
  p.pred_tasks = {0};
  p.tiles = {{0, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 0, 1}, {1, 1, 1, 1}};
  p.level_begin = {0, 2, 4};
  RunResult r;
  r.blocks = 2;
  r.barriers_per_block = 0;
  r.tiles.resize(4);
  r.tiles[0] = {0, 0, 0, 0, 1000, 1000, 1000, 1100, 1100, 1};
  r.tiles[1] = {1, 1, 0, 1, 1000, 1000, 1000, 1010, 1010, 1};
  r.tiles[2] = {0, 0, 1, 2, 1100, 1100, 1100, 1110, 1110, 1};
  r.tiles[3] = {1, 1, 1, 3, 1010, 1010, 1010, 1110, 1110, 1};
  const TraceAnalysis an = analyze_trace(p, r);
  EXPECT_DOUBLE_EQ(an.makespan_ns, 110);
  EXPECT_DOUBLE_EQ(an.critical_path_ns, 110);
  EXPECT_DOUBLE_EQ(an.tasks[0].longest_tile_ns, 100);
  EXPECT_DOUBLE_EQ(an.tasks[1].longest_tile_ns, 100);
}

// claimed -> ready is the staging of a tile without dependencies and the wait of a tile with some: the two go to
// different statistics.
TEST(TraceAnalysis, StagingAndDependencyWaitAreSeparate) {
  auto [p, r] = synthetic();
  r.tiles[0].ready = 1014; // a: staged for 4 ns, body 96
  const TraceAnalysis a = analyze_trace(p, r);
  EXPECT_EQ(a.stage.count, 1u);
  EXPECT_DOUBLE_EQ(a.stage.median_ns, 4);
  EXPECT_EQ(a.dependency_wait.count, 1u);
  EXPECT_DOUBLE_EQ(a.dependency_wait.median_ns, 105);
  EXPECT_DOUBLE_EQ(a.body.median_ns, (96 + 200) / 2.0);
  // The staging is dispatch work, not a dependency wait: in the breakdown, a's task profile and the trace.
  EXPECT_DOUBLE_EQ(a.breakdown.wait.ns, 105);
  EXPECT_DOUBLE_EQ(a.breakdown.dispatch.ns, 10 + 4 + 10 + 20 + 5);
  EXPECT_DOUBLE_EQ(a.tasks[0].wait_ns, 0);
  const std::string trace = chrome_trace_json(p, r, "t");
  EXPECT_NE(trace.find("\"name\":\"stage\""), std::string::npos);
}

TEST(TraceAnalysis, BreakdownOfAKnownTrace) {
  const auto [p, r] = synthetic();
  const TraceAnalysis a = analyze_trace(p, r);
  EXPECT_DOUBLE_EQ(a.makespan_ns, 330);
  EXPECT_DOUBLE_EQ(a.breakdown.work.ns, 100 + 200);
  EXPECT_DOUBLE_EQ(a.breakdown.wait.ns, 105);
  EXPECT_DOUBLE_EQ(a.breakdown.dispatch.ns, 10 + 10 + 20 + 5);
  EXPECT_DOUBLE_EQ(a.breakdown.barrier.ns, 0);
  EXPECT_DOUBLE_EQ(a.breakdown.idle.ns, 660 - 300 - 105 - 45);
  const double sum = a.breakdown.work.share + a.breakdown.wait.share + a.breakdown.barrier.share +
                     a.breakdown.dispatch.share + a.breakdown.idle.share;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(a.critical_path_ns, 300); // a (100) then b (200)
  EXPECT_EQ(a.dependency_wait.count, 1u);
  EXPECT_DOUBLE_EQ(a.dependency_wait.median_ns, 105);
  EXPECT_EQ(a.claim.count, 2u); // per-tile phases: claims 10 and 20, bodies 100 and 200, signals 10 and 5
  EXPECT_DOUBLE_EQ(a.claim.median_ns, 15);
  EXPECT_DOUBLE_EQ(a.body.median_ns, 150);
  EXPECT_DOUBLE_EQ(a.body.max_ns, 200);
  EXPECT_DOUBLE_EQ(a.signal.median_ns, 7.5);
  EXPECT_EQ(a.stage.count, 1u); // a's tile has no dependencies: claimed -> ready is its staging (0 here)
  EXPECT_DOUBLE_EQ(a.stage.median_ns, 0);
  ASSERT_EQ(a.tasks.size(), 2u);
  EXPECT_EQ(a.tasks[1].name, "b");
  EXPECT_DOUBLE_EQ(a.tasks[1].wait_ns, 105);
}

TEST(TraceAnalysis, BarrierTimeAndLevelCriticalPath) {
  auto [p, r] = synthetic();
  p.mode = SyncMode::barrier;
  p.deps.clear();
  p.tiles[1].dep_count = 0;
  r.barriers_per_block = 1;
  r.barriers = {{1120, 1124}, {1020, 1124}};
  r.tiles[1] = {1, 6, 1, 1, 1124, 1126, 1126, 1326, 1330, 1};
  const TraceAnalysis a = analyze_trace(p, r);
  EXPECT_DOUBLE_EQ(a.breakdown.barrier.ns, 4 + 104);
  EXPECT_EQ(a.barrier_wait.count, 2u);
  EXPECT_DOUBLE_EQ(a.barrier_wait.max_ns, 104);
  EXPECT_DOUBLE_EQ(a.critical_path_ns, 300);
}

TEST(TraceAnalysis, RejectsIncompleteTraces) {
  auto [p, r] = synthetic();
  r.tiles[1].runs = 0;
  EXPECT_THROW(analyze_trace(p, r), RuntimeError);
  r.tiles.pop_back();
  EXPECT_THROW(analyze_trace(p, r), RuntimeError);
}

TEST(TraceAnalysis, EventStats) {
  const EventStats s = event_stats({5, 1, 3, 2, 4});
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.median_ns, 3);
  EXPECT_DOUBLE_EQ(s.max_ns, 5);
  EXPECT_DOUBLE_EQ(s.p99_ns, 5);
  EXPECT_DOUBLE_EQ(s.total_ns, 15);
  EXPECT_EQ(event_stats({}).count, 0u);
}

TEST(TraceExport, ChromeTraceIsValidAndComplete) {
  const auto [p, r] = synthetic();
  const auto doc = nlohmann::json::parse(chrome_trace_json(p, r, "t"));
  ASSERT_TRUE(doc.contains("traceEvents"));
  int slices = 0, flows_s = 0, flows_f = 0, threads = 0;
  for (const auto& e : doc["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid"));
    const std::string ph = e["ph"];
    if (ph == "X") {
      ++slices;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      EXPECT_GE(e["ts"].get<double>(), 0.0);
      EXPECT_TRUE(e.contains("tid") && e.contains("name"));
    }
    flows_s += ph == "s";
    flows_f += ph == "f";
    threads += ph == "M" && e["name"] == "thread_name";
  }
  EXPECT_EQ(threads, 2);
  EXPECT_EQ(flows_s, 1);
  EXPECT_EQ(flows_f, 1);
  EXPECT_EQ(slices, 2 + 3 + 2); // tile 0: claim, work, signal (no wait); tile 1: claim, wait, work, signal
}

TEST(Report, JsonHasTheBreakdownAndCsvOneRowPerEntry) {
  const auto [p, r] = synthetic();
  ProfileEntry e;
  e.executor = "gridflow flags dynamic";
  e.median_ms = 0.5;
  e.runs = 3;
  e.analysis = analyze_trace(p, r);
  ProfileEntry base;
  base.executor = "stream: one launch per task";
  base.median_ms = 1.0;
  const auto j = profile_json("g", "cpu", {e, base});
  ASSERT_EQ(j["entries"].size(), 2u);
  const auto& b = j["entries"][0]["breakdown"];
  for (const char* k : {"work", "wait", "barrier", "dispatch", "idle"})
    ASSERT_TRUE(b.contains(k)) << k;
  EXPECT_NEAR(b["work"]["us"].get<double>(), 0.3, 1e-12);
  const auto& an = j["entries"][0]["analysis"];
  EXPECT_NEAR(an["body"]["median_us"].get<double>(), 0.15, 1e-12);
  for (const char* k : {"dependency_wait", "barrier_wait", "dispatch", "claim", "stage", "signal"})
    ASSERT_TRUE(an["sync"].contains(k)) << k;
  EXPECT_FALSE(j["entries"][1].contains("breakdown"));
  const std::string csv = profile_csv({e, base});
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_NE(csv.find("gridflow flags dynamic"), std::string::npos);
}

TEST(Report, SvgPlotsAreWellFormed) {
  const auto [p, r] = synthetic();
  for (const std::string& svg :
       {timeline_svg(p, r, "t <1>"),
        breakdown_svg({ProfileEntry{"x", "", 1, 1, 1, 1, analyze_trace(p, r), "", true}}, "t"),
        barrier_svg(
            nlohmann::json::array({{{"kind", "cg"}, {"threads", 256}, {"blocks_per_sm", 1}, {"us_per_barrier", 1.0}},
                                   {{"kind", "cg"}, {"threads", 256}, {"blocks_per_sm", 8}, {"us_per_barrier", 2.2}}}),
            "b")}) {
    EXPECT_EQ(svg.rfind("<svg", 0), 0u);
    EXPECT_NE(svg.find("</svg>"), std::string::npos);
    EXPECT_EQ(svg.find("<1>"), std::string::npos); // escaped
    EXPECT_GT(std::count(svg.begin(), svg.end(), '<'), 5);
  }
}

TEST(Profile, EveryModeOnTheCpuMatchesAndReportsShares) {
  Graph g("p");
  g.add_buffer("x", DType::f32, {32, 300}, InitUniform{-1, 1, 4});
  g.add_buffer("y", DType::f32, {32, 300});
  g.add_buffer("s", DType::f32, {32});
  g.add_buffer("t", DType::f32, {1});
  g.softmax("sm", "x", "y");
  g.reduce("rows", "y", "s", ReduceFn::max, Axis::row);
  g.reduce("total", "s", "t", ReduceFn::sum);
  ProfileOptions o;
  o.base.cpu_workers = 3;
  o.repeat = 2;
  o.warmup = 1;
  const ProfileResult r = profile(g, o);
  EXPECT_EQ(r.entries.size(), 8u); // 4 modes x 2 schedules, no GPU baselines on the CPU
  EXPECT_TRUE(r.all_match);
  EXPECT_TRUE(r.all_checked);
  for (const ProfileEntry& e : r.entries) {
    ASSERT_TRUE(e.analysis.has_value());
    const Breakdown& b = e.analysis->breakdown;
    EXPECT_NEAR(b.work.share + b.wait.share + b.barrier.share + b.dispatch.share + b.idle.share, 1.0, 1e-9);
    EXPECT_GT(e.analysis->critical_path_ns, 0);
    EXPECT_LE(e.analysis->critical_path_ns, e.analysis->makespan_ns * 1.0001);
  }
  EXPECT_NE(profile_table(r).find("gridflow sentinel static"), std::string::npos);
  EXPECT_NE(profile_table(r).find("sentinel: a tile polls its inputs inside the body"), std::string::npos);
}

} // namespace
} // namespace gridflow
