// The elementwise map: every function against the float64 reference in every sync mode and schedule on the CPU
// backend, the IEEE cases, validation, JSON and lowering.
#include "runtime/program.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/lowering.hpp"
#include "scheduler/session.hpp"
#include "tests/common/graph_errors.hpp"
#include "tests/common/map_graphs.hpp"
#include "tests/common/run_checks.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace gridflow {
namespace {

SessionOptions cpu_options(SyncMode mode, Schedule schedule) {
  SessionOptions o;
  o.backend = Backend::cpu;
  o.mode = mode;
  o.schedule = schedule;
  o.cpu_workers = 4;
  o.exec.timeout_ns = 20'000'000'000ull;
  o.exec.trace = true;
  return o;
}

const HostTensor& result(const Session& s, const Graph& g, const std::string& buffer) {
  for (std::size_t b = 0; b < g.buffers().size(); ++b)
    if (g.buffers()[b].name == buffer)
      return s.results()[b];
  throw std::runtime_error("no buffer " + buffer);
}

TEST(Map, EveryFunctionEveryModeAndScheduleMatchesTheReference) {
  TilePolicy small;
  small.reduce_min_tile = 1024; // several tiles per map task from 2048 elements on
  for (std::int64_t n : {0LL, 1LL, 3LL, 4LL, 5LL, 1023LL, 4097LL, 100003LL}) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    const Graph g = testing::map_graph(n, 40 + static_cast<std::uint64_t>(n));
    std::vector<HostTensor> first;
    for (Schedule schedule : {Schedule::dynamic, Schedule::static_list})
      for (SyncMode mode : kAllSyncModes) {
        SessionOptions o = cpu_options(mode, schedule);
        o.tiles = small;
        Session s(g, o);
        const RunResult r = s.run();
        const CheckReport c = s.check();
        EXPECT_TRUE(c.passed) << to_string(mode) << ": " << c.summary() << "\n" << c.details();
        EXPECT_EQ(testing::trace_violation(s.program(), r), "") << to_string(mode);
        if (first.empty())
          first = s.results();
        else
          EXPECT_TRUE(bit_identical(first, s.results())) << to_string(mode) << " " << to_string(schedule);
      }
  }
}

TEST(Map, IeeeSpecialValuesFollowTheArithmetic) {
  const Graph g = testing::map_special_values_graph();
  Session s(g, cpu_options(SyncMode::flags, Schedule::dynamic));
  s.run();
  const CheckReport c = s.check();
  EXPECT_TRUE(c.passed) << c.summary() << "\n" << c.details();
  constexpr float inf = std::numeric_limits<float>::infinity();
  constexpr float big = std::numeric_limits<float>::max();
  // Inputs: NaN, inf, -inf, 0, -0, denorm_min, max, -max, 1, -1.
  const auto expect = [&](const std::string& fn, std::initializer_list<float> want) {
    const auto got = result(s, g, "y_" + fn).f32();
    std::size_t i = 0;
    for (const float w : want) {
      if (std::isnan(w))
        EXPECT_TRUE(std::isnan(got[i])) << fn << "[" << i << "] = " << got[i];
      else
        EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(w))
            << fn << "[" << i << "] = " << got[i] << ", want " << w;
      ++i;
    }
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float dmin = std::numeric_limits<float>::denorm_min();
  // fma(1, x, 0) turns -0 into +0 (-0 + +0 = +0 in round-to-nearest).
  expect("identity", {nan, inf, -inf, 0.0f, 0.0f, dmin, big, -big, 1.0f, -1.0f});
  expect("relu", {nan, inf, 0.0f, 0.0f, 0.0f, dmin, big, 0.0f, 1.0f, 0.0f});
  expect("clamp", {nan, 3.0f, -2.0f, 0.0f, 0.0f, dmin, 3.0f, -2.0f, 1.0f, -1.0f});
  const auto e = result(s, g, "y_exp").f32();
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_EQ(e[1], inf);
  EXPECT_EQ(e[2], 0.0f);
  EXPECT_EQ(e[3], 1.0f);
  EXPECT_EQ(e[6], inf);
  EXPECT_EQ(e[7], 0.0f);
  const auto t = result(s, g, "y_tanh").f32();
  EXPECT_TRUE(std::isnan(t[0]));
  EXPECT_EQ(t[1], 1.0f);
  EXPECT_EQ(t[2], -1.0f);
  EXPECT_EQ(t[6], 1.0f);
  EXPECT_EQ(t[7], -1.0f);
}

using testing::expect_graph_error;

Graph two_buffers() {
  Graph g("g");
  g.add_buffer("x", DType::f32, {8}, InitUniform{});
  g.add_buffer("y", DType::f32, {8});
  return g;
}

TEST(Map, ValidationNamesTaskFieldAndValue) {
  {
    Graph g = two_buffers();
    g.add_buffer("k", DType::i32, {8}, InitIota{});
    g.map("m", "k", "y", MapFn::relu);
    expect_graph_error(g, {"task 'm'", "in.buffer", "'k'", "map needs an f32 input"});
  }
  {
    Graph g = two_buffers();
    g.add_buffer("z", DType::f32, {4});
    g.map("m", "x", "z", MapFn::exp);
    expect_graph_error(g, {"task 'm'", "out", "4 elements", "as many output elements"});
  }
  {
    Graph g = two_buffers();
    g.map("m", "x", "y", MapFn::tanh, std::numeric_limits<double>::infinity());
    expect_graph_error(g, {"task 'm'", "scale", "inf", "finite number within the f32 range"});
  }
  {
    Graph g = two_buffers();
    g.map("m", "x", "y", MapFn::identity, 1.0, 1e39);
    expect_graph_error(g, {"task 'm'", "shift", "1e+39", "f32 range"});
  }
  {
    Graph g = two_buffers();
    g.map("m", "x", "y", MapFn::clamp);
    expect_graph_error(g, {"task 'm'", "lo", "missing", "clamp needs both lo and hi"});
  }
  {
    Graph g = two_buffers();
    g.clamp("m", "x", "y", 2.0, 1.0);
    expect_graph_error(g, {"task 'm'", "lo", "2", "must not exceed hi (1)"});
  }
  {
    Graph g = two_buffers();
    g.map("m", "x", "y", MapFn::relu).hi = 3.0;
    expect_graph_error(g, {"task 'm'", "hi", "3", "only clamp takes bounds", "relu"});
  }
  {
    Graph g = two_buffers();
    g.map("m", ViewSpec::range("x", 0, 4), ViewSpec::range("x", 2, 4), MapFn::relu);
    expect_graph_error(g, {"task 'm'", "out", "{offset 2}", "in place only on exactly its input"});
  }
  Graph ok = two_buffers();
  ok.map("m", "x", "x", MapFn::relu);
  EXPECT_NO_THROW(analyze(ok)); // in place on exactly its input
}

TEST(Map, JsonRoundTripAndStrictKeys) {
  const std::string text = R"({"gridflow": 1, "name": "act",
    "buffers": [{"name": "x", "dtype": "f32", "shape": [16], "init": {"uniform": {"low": -1, "high": 1, "seed": 2}}},
                {"name": "y", "dtype": "f32", "shape": [16]}],
    "tasks": [{"name": "c", "op": "map", "fn": "clamp", "scale": 2, "shift": -0.5, "lo": -1, "hi": 1.5,
               "in": "x", "out": "y"},
              {"name": "e", "op": "map", "fn": "exp", "in": "y", "out": "y"}]})";
  const Graph g = graph_from_json(text, "g.json");
  ASSERT_EQ(g.tasks().size(), 2u);
  const Task& c = g.tasks()[0];
  EXPECT_EQ(c.op, OpKind::map);
  EXPECT_EQ(c.map_fn, MapFn::clamp);
  EXPECT_EQ(c.scale, 2.0);
  EXPECT_EQ(c.shift, -0.5);
  EXPECT_EQ(c.lo, -1.0);
  EXPECT_EQ(c.hi, 1.5);
  EXPECT_EQ(g.tasks()[1].map_fn, MapFn::exp);
  EXPECT_EQ(g.tasks()[1].scale, 1.0);
  EXPECT_FALSE(g.tasks()[1].lo.has_value());
  const std::string once = graph_to_json(g);
  EXPECT_EQ(once, graph_to_json(graph_from_json(once, "again")));
  EXPECT_NO_THROW(analyze(g));

  const auto error_of = [](std::string t) {
    try {
      graph_from_json(t, "g.json");
    } catch (const GraphError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string no_fn = text;
  no_fn.erase(no_fn.find("\"fn\": \"exp\", "), 13);
  EXPECT_NE(error_of(no_fn).find("fn"), std::string::npos) << error_of(no_fn);
  std::string bad_fn = text;
  bad_fn.replace(bad_fn.find("\"exp\""), 5, "\"sigmoid\"");
  EXPECT_NE(error_of(bad_fn).find("\"sigmoid\" is not one of \"identity\", \"relu\", \"exp\", \"tanh\", \"clamp\""),
            std::string::npos)
      << error_of(bad_fn);
  std::string foreign = text;
  foreign.replace(foreign.find("\"scale\": 2"), 10, "\"threshold\": 2");
  EXPECT_NE(error_of(foreign).find("unknown key for a map task"), std::string::npos) << error_of(foreign);
}

TEST(Map, LowersToItsOpcodeWithTheConstantsAsF32Bits) {
  Graph g = two_buffers();
  g.add_buffer("big", DType::f32, {100000}, InitUniform{});
  g.add_buffer("out", DType::f32, {100000});
  g.clamp("c", "x", "y", -0.25, 0.75, 0.1, 2.0);
  g.map("wide", "big", "out", MapFn::tanh);
  LoweringOptions lo;
  lo.grid_blocks = 8;
  lo.threads_per_block = 256;
  const LoweredProgram p = lower(g, analyze(g), lo);
  ASSERT_EQ(p.tasks.size(), 2u);
  const program::TaskDesc& c = p.tasks[0];
  EXPECT_EQ(c.opcode, static_cast<std::uint32_t>(program::Opcode::map));
  EXPECT_EQ(c.fn, static_cast<std::uint32_t>(MapFn::clamp));
  EXPECT_EQ(c.consts[0], std::bit_cast<std::uint32_t>(0.1f));
  EXPECT_EQ(c.consts[1], std::bit_cast<std::uint32_t>(2.0f));
  EXPECT_EQ(c.consts[2], std::bit_cast<std::uint32_t>(-0.25f));
  EXPECT_EQ(c.consts[3], std::bit_cast<std::uint32_t>(0.75f));
  EXPECT_EQ(c.num_tiles, 1u);
  const program::TaskDesc& w = p.tasks[1];
  EXPECT_EQ(w.fn, static_cast<std::uint32_t>(MapFn::tanh));
  EXPECT_GT(w.num_tiles, 1u); // element chunks spread over the blocks
  EXPECT_EQ(w.tile_size % 1024, 0);
}

} // namespace
} // namespace gridflow
