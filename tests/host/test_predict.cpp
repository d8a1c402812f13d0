// The run-time predictor: the replay against hand-computed schedules, the calibration's JSON, and calibration and
// prediction end to end on the CPU backend.
#include "runtime/errors.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/predict.hpp"
#include "scheduler/session.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gridflow {
namespace {

constexpr double kBody = 1000, kDispatch = 50, kSignal = 20, kHop = 300, kBarrier = 2000, kOverhead = 5000;

SessionOptions cpu(SyncMode mode, Schedule schedule, std::uint32_t workers = 4) {
  SessionOptions o;
  o.backend = Backend::cpu;
  o.mode = mode;
  o.schedule = schedule;
  o.cpu_workers = workers;
  return o;
}

// Every body costs kBody, whatever its bytes; every configuration the same sync costs.
Calibration flat_calibration(const LoweredProgram& p) {
  Calibration c;
  c.device = "test";
  for (const program::TaskDesc& t : p.tasks)
    c.bodies[body_key(t, p.threads_per_block, false)] = {kBody, 0.0, 1};
  c.configs[config_key(p, false)] = {kOverhead, kDispatch, kSignal, kHop, kBarrier, 1};
  return c;
}

// Three dependent one-tile tasks (one row: the scan and the reduce lower to their whole-range forms).
Graph chain3() {
  Graph g("chain3");
  g.add_buffer("a", DType::f32, {1, 16}, InitUniform{-1, 1, 1});
  g.add_buffer("b", DType::f32, {1, 16});
  g.add_buffer("c", DType::f32, {1, 16});
  g.add_buffer("d", DType::f32, {1});
  g.softmax("s", "a", "b");
  g.scan("t", "b", "c", ScanFn::sum, false, Axis::row);
  g.reduce("r", "c", "d", ReduceFn::sum, Axis::row);
  return g;
}

TEST(Predict, ChainsPayDispatchBodiesAndBarriersOrHandOffs) {
  const Graph g = chain3();
  for (Schedule schedule : {Schedule::dynamic, Schedule::static_list}) {
    const LoweredProgram levels = plan_run(g, cpu(SyncMode::grid_sync, schedule)).program;
    ASSERT_EQ(levels.tiles.size(), 3u);
    const Prediction l = predict(levels, false, flat_calibration(levels));
    EXPECT_DOUBLE_EQ(l.makespan_ns, 3 * (kDispatch + kBody + kSignal) + 2 * kBarrier);
    EXPECT_DOUBLE_EQ(l.elapsed_ms, (kOverhead + l.makespan_ns) * 1e-6);
    EXPECT_NEAR(l.sync_ms, (kOverhead + 3 * (kDispatch + kSignal) + 2 * kBarrier) * 1e-6, 1e-12);
    EXPECT_TRUE(l.uncalibrated.empty());
    // Dataflow: a tile on another block than its producer waits a hop after the producer signalled (the dynamic
    // schedule claims each tile on a free block); on the producer's own block program order needs no hop.
    const LoweredProgram flags = plan_run(g, cpu(SyncMode::flags, schedule)).program;
    const Prediction f = predict(flags, false, flat_calibration(flags));
    bool one_block = false;
    if (schedule == Schedule::static_list)
      for (std::uint32_t b = 0; b + 1 < flags.block_begin.size(); ++b)
        one_block = one_block || flags.block_begin[b + 1] - flags.block_begin[b] == 3;
    if (one_block)
      EXPECT_DOUBLE_EQ(f.makespan_ns, 3 * (kDispatch + kBody + kSignal));
    else
      EXPECT_DOUBLE_EQ(f.makespan_ns, kDispatch + 3 * (kBody + kSignal) + 2 * kHop) << to_string(schedule);
  }
}

TEST(Predict, IndependentTilesSpreadOverTheBlocks) {
  Graph g("wide");
  g.add_buffer("x", DType::f32, {64, 256}, InitUniform{-1, 1, 2});
  g.add_buffer("y", DType::f32, {64, 256});
  g.softmax("s", "x", "y");
  SessionOptions o = cpu(SyncMode::flags, Schedule::dynamic, 4);
  o.tiles.set_row_tile_elements(256); // one row per tile
  LoweredProgram p = plan_run(g, o).program;
  const auto tiles = static_cast<double>(p.tiles.size());
  ASSERT_EQ(tiles, 64);
  const Prediction pr = predict(p, false, flat_calibration(p));
  EXPECT_DOUBLE_EQ(pr.makespan_ns, std::ceil(tiles / 4) * (kDispatch + kBody + kSignal));
}

TEST(Predict, BodiesGrowWithBytesAndMissingCostsAreNamed) {
  const Graph g = chain3();
  const LoweredProgram p = plan_run(g, cpu(SyncMode::flags, Schedule::dynamic)).program;
  Calibration c = flat_calibration(p);
  const Prediction base = predict(p, false, c);
  for (auto& [key, b] : c.bodies)
    b.ns_per_byte = 1.0;
  EXPECT_GE(predict(p, false, c).makespan_ns, base.makespan_ns + 3 * 16 * 4); // at least the inputs' bytes
  c.bodies.erase(body_key(p.tasks[0], p.threads_per_block, false));
  c.configs.clear();
  const Prediction missing = predict(p, false, c);
  EXPECT_EQ(missing.uncalibrated.size(), 2u);
  EXPECT_EQ(missing.uncalibrated[0], config_key(p, false));
}

TEST(Predict, CalibrationJsonRoundTripsAndBadFieldsAreNamed) {
  Calibration c;
  c.device = "dev";
  c.bodies["softmax_rows"] = {120.5, 0.25, 3};
  c.configs["flags dynamic"] = {4000, 80, 10, 600, 0, 5};
  const Calibration back = calibration_from_json(calibration_json(c));
  EXPECT_EQ(back.device, "dev");
  EXPECT_DOUBLE_EQ(back.bodies.at("softmax_rows").ns_per_byte, 0.25);
  EXPECT_DOUBLE_EQ(back.configs.at("flags dynamic").hop_ns, 600);
  nlohmann::json j = calibration_json(c);
  j["configs"]["flags dynamic"]["hop_ns"] = -1;
  try {
    calibration_from_json(j);
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("'hop_ns'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(calibration_from_json(nlohmann::json::object()), GraphError);
}

TEST(Predict, CalibrationJsonKeepsTheGpuTheSamplesAndRowCosts) {
  Calibration c;
  c.device = "dev";
  c.bodies["softmax_rows/short-rows"] = {10, 0.5, 4, 75};
  c.gpu.threads_per_block = 256;
  c.gpu.sm_count = 132;
  c.gpu.max_blocks_per_sm = 2;
  c.gpu.max_lean_blocks_per_sm = 3;
  c.samples.bodies["softmax_rows/short-rows"] = {{1024, 4, 0.5, 812}, {2048, 8, 1.0, 1612}};
  c.samples.configs["flags static"].hop_ns = {500, 520};
  const Calibration back = calibration_from_json(calibration_json(c));
  EXPECT_DOUBLE_EQ(back.bodies.at("softmax_rows/short-rows").ns_per_row, 75);
  EXPECT_EQ(back.gpu.sm_count, 132u);
  EXPECT_EQ(back.gpu.max_blocks_per_sm, 2u);
  EXPECT_EQ(back.gpu.max_lean_blocks_per_sm, 3u);
  ASSERT_EQ(back.samples.bodies.at("softmax_rows/short-rows").size(), 2u);
  EXPECT_DOUBLE_EQ(back.samples.bodies.at("softmax_rows/short-rows")[1].rows, 8);
  EXPECT_DOUBLE_EQ(back.samples.bodies.at("softmax_rows/short-rows")[0].share, 0.5);
  EXPECT_EQ(back.samples.configs.at("flags static").hop_ns, (std::vector<double>{500, 520}));
  nlohmann::json j = calibration_json(c);
  j["gpu"]["sm_count"] = 0.5;
  EXPECT_THROW(calibration_from_json(j), GraphError);
  j["gpu"]["sm_count"] = 1 << 20; // a grid no GPU has
  EXPECT_THROW(calibration_from_json(j), GraphError);
  j = calibration_json(c);
  j["gpu"]["max_blocks_per_sm"] = 1000;
  EXPECT_THROW(calibration_from_json(j), GraphError);
  j = calibration_json(c);
  j["gpu"]["max_lean_blocks_per_sm"] = 0;
  EXPECT_THROW(calibration_from_json(j), GraphError);
  j = calibration_json(c);
  j["gpu"].erase("max_lean_blocks_per_sm"); // a calibration that did not record it
  EXPECT_EQ(calibration_from_json(j).gpu.max_lean_blocks_per_sm, 0u);
  j = calibration_json(c);
  j["gpu"]["threads_per_block"] = 100; // not a compiled block size
  EXPECT_THROW(calibration_from_json(j), GraphError);
  j = calibration_json(c);
  j["samples"]["bodies"]["softmax_rows/short-rows"][0] = {1, 2, 3};
  try {
    calibration_from_json(j);
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("[bytes, rows, share, ns, passes, task bytes]"), std::string::npos)
        << e.what();
  }
}

// A body whose time grows with its row passes at a fixed size in bytes is fitted a cost per pass, not per byte; one
// whose time follows its bytes alone, a cost per byte; one whose cost per byte grows with the grid's share streaming,
// both byte terms; one whose streams miss the L2 cache, a cost per byte from DRAM.
TEST(Predict, BodyFitsKeepTheCostsTheSamplesShow) {
  CalibrationSamples s;
  for (double rows : {4.0, 8.0, 16.0, 32.0})
    for (int run = 0; run < 3; ++run)
      s.bodies["per-row"].push_back({8192, 8 * rows, 1.0, 200 + 50 * rows, rows, 0});
  for (double bytes : {4096.0, 16384.0, 65536.0})
    s.bodies["per-byte"].push_back({bytes, 0, 1.0, 0.25 * bytes});
  // Bandwidth shared: at a full grid a byte costs 2.5 times what it costs with a tenth of the grid streaming.
  for (double share : {0.1, 0.4, 1.0})
    for (double bytes : {8192.0, 65536.0})
      s.bodies["shared"].push_back({bytes, 0, share, (0.05 + 0.1 * share) * bytes});
  s.bodies["flat"] = {{0, 0, 1, 700}, {0, 0, 1, 900}, {0, 0, 1, 800}};
  // Tasks of 1, 4 and 16 times the L2's 1000 bytes: 0, 3/4 and 15/16 of their bytes from DRAM at 0.2 ns more each.
  for (double task : {1000.0, 4000.0, 16000.0})
    for (double bytes : {100.0, 400.0})
      s.bodies["dram"].push_back({bytes, 0, 1.0, (0.1 + 0.2 * (1 - std::min(1.0, 1000 / task))) * bytes, 0, task});
  const Calibration c = fit(s, 1000.0);
  const BodyCost& r = c.bodies.at("per-row");
  EXPECT_NEAR(r.ns_per_row, 50, 1e-6);
  EXPECT_NEAR(r.fixed_ns + r.ns_per_byte * 8192, 200, 1e-3);
  const BodyCost& b = c.bodies.at("per-byte");
  EXPECT_NEAR(b.ns_per_byte, 0.25, 1e-9);
  EXPECT_NEAR(b.fixed_ns, 0, 1e-6);
  // A constant fitted by relative error: sum(1/y) / sum(1/y^2).
  const double inv = 1.0 / 700 + 1.0 / 900 + 1.0 / 800, inv2 = 1.0 / (700.0 * 700) + 1.0 / (900.0 * 900) + 1.0 / 640000;
  EXPECT_NEAR(c.bodies.at("flat").fixed_ns, inv / inv2, 1e-6);
  EXPECT_EQ(c.bodies.at("flat").ns_per_byte, 0.0);
  const BodyCost& sh = c.bodies.at("shared");
  EXPECT_NEAR(sh.ns_per_byte, 0.05, 1e-9);
  EXPECT_NEAR(sh.ns_per_shared_byte, 0.1, 1e-9);
  const BodyCost& d = c.bodies.at("dram");
  EXPECT_NEAR(d.ns_per_byte + d.ns_per_shared_byte, 0.1, 1e-9);
  EXPECT_NEAR(d.ns_per_dram_byte, 0.2, 1e-9);
  EXPECT_EQ(c.samples.bodies.size(), 5u); // kept for a later refit
}

// The overhead of a sentinel-mode configuration is fitted a cost per byte its fill wrote beyond a fixed part; other
// configurations keep the median of their runs.
TEST(Predict, SentinelOverheadGrowsWithTheBytesFilled) {
  CalibrationSamples s;
  CalibrationSamples::Config& k = s.configs["sentinel dynamic"];
  for (double bytes : {0.0, 1e6, 4e6, 16e6, 64e6}) {
    k.overhead_ns.push_back(9000 + 0.002 * bytes);
    k.fill_bytes.push_back(bytes);
  }
  s.configs["flags dynamic"].overhead_ns = {9000, 30000, 8000};
  const Calibration c = fit(s, 0.0);
  EXPECT_NEAR(c.configs.at("sentinel dynamic").ns_per_fill_byte, 0.002, 1e-9);
  EXPECT_NEAR(c.configs.at("sentinel dynamic").overhead_ns, 9000, 1e-3);
  EXPECT_EQ(c.configs.at("flags dynamic").overhead_ns, 9000);
  EXPECT_EQ(c.configs.at("flags dynamic").ns_per_fill_byte, 0.0);
  const Calibration back = calibration_from_json(calibration_json(c));
  EXPECT_EQ(back.samples.configs.at("sentinel dynamic").fill_bytes, k.fill_bytes);
  EXPECT_DOUBLE_EQ(back.configs.at("sentinel dynamic").ns_per_fill_byte,
                   c.configs.at("sentinel dynamic").ns_per_fill_byte);
  nlohmann::json j = calibration_json(c);
  j["samples"]["configs"]["sentinel dynamic"]["fill_bytes"].erase(0);
  try {
    calibration_from_json(j);
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("fill_bytes"), std::string::npos) << e.what();
  }
  // A sentinel run pays its fill: the bytes of the outputs its consumers poll, at the fitted cost per byte.
  const Graph g = chain3();
  const LoweredProgram p = plan_run(g, cpu(SyncMode::sentinel, Schedule::dynamic)).program;
  Calibration flat = flat_calibration(p);
  const double without = predict(p, false, flat).elapsed_ms;
  flat.configs.at(config_key(p, false)).ns_per_fill_byte = 1000;
  const std::vector<std::int64_t> ranges = sentinel_ranges(p);
  double filled = 0;
  for (std::size_t b = 1; b < ranges.size(); b += 2)
    filled += 4.0 * static_cast<double>(ranges[b]);
  EXPECT_GT(filled, 0);
  EXPECT_NEAR(predict(p, false, flat).elapsed_ms, without + 1000 * filled * 1e-6, 1e-9);
}

// Short softmax rows: a tile with a row per warp takes one pass, a tile of fewer rows than warps spreads each row over
// the block and takes a pass per row (kernels::short_row_group_warps); a body's cost per pass follows.
TEST(Predict, ShortRowTilesCostTheirPasses) {
  const auto one_tile_body = [](std::int64_t rows, std::int64_t cols) {
    Graph g("rows");
    g.add_buffer("x", DType::f32, {rows, cols}, InitUniform{-1, 1, 2});
    g.add_buffer("y", DType::f32, {rows, cols});
    g.softmax("s", "x", "y");
    SessionOptions o = cpu(SyncMode::flags, Schedule::dynamic, 1);
    o.tiles.set_row_tile_elements(rows * cols); // one tile
    const LoweredProgram p = plan_run(g, o).program;
    EXPECT_EQ(p.tiles.size(), 1u);
    EXPECT_EQ(p.threads_per_block, 256u); // eight warps
    Calibration c = flat_calibration(p);
    c.bodies.begin()->second = {0.0, 0.0, 1, 100.0};
    const double per_pass = predict(p, false, c).makespan_ns - kDispatch - kSignal;
    // A calibration file of the format before row passes costs rows, as it did when it was written.
    nlohmann::json old = calibration_json(c);
    old.erase("row_costs");
    const double per_row = predict(p, false, calibration_from_json(old)).makespan_ns - kDispatch - kSignal;
    EXPECT_DOUBLE_EQ(per_row, 100.0 * static_cast<double>(rows));
    return per_pass;
  };
  EXPECT_DOUBLE_EQ(one_tile_body(8, 768), 100);  // a warp per row, one pass
  EXPECT_DOUBLE_EQ(one_tile_body(16, 768), 200); // two rows per warp
  EXPECT_DOUBLE_EQ(one_tile_body(6, 768), 600);  // the block per row, six passes
}

// A task whose bytes exceed the calibrated GPU's L2 pays the cost per byte from DRAM on the share beyond it.
TEST(Predict, StreamsBeyondTheL2PayDramBytes) {
  Graph g("big");
  g.add_buffer("x", DType::f32, {1 << 16}, InitUniform{-1, 1, 2});
  g.add_buffer("y", DType::f32, {1 << 16});
  g.map("m", "x", "y", MapFn::tanh);
  const LoweredProgram p = plan_run(g, cpu(SyncMode::flags, Schedule::dynamic, 1)).program;
  Calibration c = flat_calibration(p);
  c.bodies.begin()->second.ns_per_dram_byte = 1.0;
  const double in_l2 = predict(p, false, c).makespan_ns;
  c.l2_bytes = 1 << 17; // a quarter of the task's 2^19 bytes
  const double share = std::min(1.0, static_cast<double>(p.tiles.size()) / p.grid_blocks);
  EXPECT_NEAR(predict(p, false, c).makespan_ns - in_l2, share * 0.75 * (1 << 19), 1e-6);
}

// A calibration that names its GPU predicts GPU runs on a machine without one: the programs lowered for that GPU
// (its SMs times the blocks per SM plan_gpu_shape would pick).
TEST(Predict, PredictsForTheCalibratedGpuWithoutOne) {
  const Graph g = chain3();
  SessionOptions o;
  o.backend = Backend::gpu;
  GpuShape h200;
  h200.threads_per_block = 256;
  h200.sm_count = 132;
  h200.max_blocks_per_sm = 2;
  const GpuPlan plan = lower_for_gpu(g, analyze(g), o, h200, "H200");
  EXPECT_EQ(plan.shape.grid_blocks, plan.shape.blocks_per_sm * 132);
  EXPECT_EQ(plan.program.grid_blocks, plan.shape.grid_blocks);
  o.blocks_per_sm = 3;
  EXPECT_THROW(lower_for_gpu(g, analyze(g), o, h200, "H200"), RuntimeError);
  o.blocks_per_sm = 0;
  o.threads_per_block = 512;
  EXPECT_THROW(lower_for_gpu(g, analyze(g), o, h200, "H200"), RuntimeError);
  o.threads_per_block = 256;
  Calibration c = flat_calibration(plan.program);
  c.device = "H200";
  c.gpu = h200;
  const std::vector<PredictionRow> rows = predict_graph(g, o, c, false, 1);
  ASSERT_EQ(rows.size(), 8u); // every sync mode x schedule
  for (const PredictionRow& r : rows) {
    EXPECT_GT(r.predicted.elapsed_ms, 0.0) << r.configuration;
    EXPECT_LT(r.measured_ms, 0.0);
  }
}

TEST(Predict, CalibratesAndPredictsEveryConfigurationOnTheCpuBackend) {
  const Graph g = chain3();
  ProfileOptions po;
  po.base = cpu(SyncMode::flags, Schedule::dynamic);
  po.repeat = 2;
  po.warmup = 0;
  po.baselines = false;
  CalibrationSamples samples;
  add_samples(profile(g, po), Backend::cpu, samples);
  const Calibration c = fit(samples, 0.0);
  EXPECT_EQ(c.configs.size(), 8u); // every sync mode x schedule
  EXPECT_EQ(c.bodies.count("softmax_rows/lean-rows"), 1u) << calibration_json(c).dump();
  for (const auto& [key, k] : c.configs)
    EXPECT_GT(k.dispatch_ns, 0.0) << key;
  for (SyncMode mode : kAllSyncModes)
    for (Schedule schedule : {Schedule::dynamic, Schedule::static_list}) {
      const LoweredProgram p = plan_run(g, cpu(mode, schedule)).program;
      const Prediction pr = predict(p, false, c);
      EXPECT_TRUE(pr.uncalibrated.empty()) << config_key(p, false) << ": " << pr.uncalibrated.front();
      EXPECT_GT(pr.elapsed_ms, 0.0);
      EXPECT_LE(pr.sync_ms, pr.elapsed_ms);
    }
}

} // namespace
} // namespace gridflow
