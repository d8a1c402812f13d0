// The JSON graph format: round trip, strictness, error positions.
#include "scheduler/analysis.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/json_format.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace gridflow {
namespace {

const char* kGood = R"({
  "gridflow": 1,
  "name": "demo",
  "buffers": [
    {"name": "x", "dtype": "f32", "shape": [4, 8], "init": {"uniform": {"low": -2, "high": 2, "seed": 9}}},
    {"name": "k", "dtype": "i32", "shape": [16], "init": {"iota": {"start": 3, "step": 2}}},
    {"name": "c", "dtype": "f32", "shape": [5], "init": {"constant": 0.5}},
    {"name": "f", "dtype": "f32", "shape": [2], "init": {"file": "f.bin"}},
    {"name": "y", "dtype": "f32", "shape": [4, 8], "save": "y.bin"},
    {"name": "ks", "dtype": "i32", "shape": [16]},
    {"name": "m", "dtype": "i32", "shape": [1]}
  ],
  "tasks": [
    {"name": "sm", "op": "softmax", "log": true, "in": "x", "out": "y"},
    {"name": "sc", "op": "scan", "fn": "sum", "exclusive": true, "in": "k", "out": "ks", "after": ["sm"]},
    {"name": "am", "op": "reduce", "fn": "argmax", "in": {"buffer": "y", "offset": 8, "length": 16}, "out": "m"},
    {"name": "blk", "op": "reduce", "fn": "max", "axis": "row", "in": {"buffer": "x", "offset": 8, "rows": 2, "cols": 8},
     "out": {"buffer": "c", "offset": 1, "length": 2}}
  ]
})";

std::string error_of(const std::string& text) {
  try {
    graph_from_json(text, "g.json");
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

TEST(Json, ParsesEveryFeature) {
  const Graph g = graph_from_json(kGood, "g.json");
  EXPECT_EQ(g.name(), "demo");
  ASSERT_EQ(g.buffers().size(), 7u);
  ASSERT_EQ(g.tasks().size(), 4u);
  const auto& u = std::get<InitUniform>(g.buffers()[0].init);
  EXPECT_EQ(u.seed, 9u);
  EXPECT_EQ(std::get<InitIota>(g.buffers()[1].init).step, 2.0);
  EXPECT_EQ(std::get<InitFile>(g.buffers()[3].init).path, "f.bin");
  EXPECT_EQ(g.buffers()[4].save, "y.bin");
  EXPECT_TRUE(g.tasks()[0].log);
  EXPECT_TRUE(g.tasks()[1].exclusive);
  EXPECT_EQ(g.tasks()[1].after, std::vector<std::string>{"sm"});
  EXPECT_EQ(g.tasks()[2].reduce_fn, ReduceFn::argmax);
  EXPECT_EQ(*g.tasks()[2].in.length, 16);
  EXPECT_EQ(*g.tasks()[3].in.rows, 2);
  EXPECT_EQ(g.tasks()[3].axis, Axis::row);
}

TEST(Json, RoundTripIsStable) {
  const Graph g = graph_from_json(kGood, "g.json");
  const std::string once = graph_to_json(g);
  const std::string twice = graph_to_json(graph_from_json(once, "again"));
  EXPECT_EQ(once, twice);
  const Graph back = graph_from_json(once, "again");
  EXPECT_EQ(back.tasks()[3].out.offset, 1);
  EXPECT_EQ(std::get<InitUniform>(back.buffers()[0].init).low, -2.0);
}

TEST(Json, MalformedGivesLineAndColumn) {
  const std::string msg = error_of("{\n  \"gridflow\": 1,\n  \"name\": \"x\",,\n}");
  EXPECT_NE(msg.find("g.json:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
  EXPECT_NE(error_of("").find("g.json:1:1: malformed JSON"), std::string::npos) << error_of("");
  EXPECT_NE(error_of("\x01\x02garbage").find("malformed JSON"), std::string::npos);
}

TEST(Json, UnknownKeysAreErrors) {
  std::string t = kGood;
  t.replace(t.find("\"log\": true"), 11, "\"logg\": true");
  const std::string msg = error_of(t);
  EXPECT_NE(msg.find("tasks[0].logg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key for a softmax task"), std::string::npos) << msg;
  // A key of another op does not apply.
  std::string u = kGood;
  u.replace(u.find("\"fn\": \"argmax\""), 14, "\"exclusive\": true");
  EXPECT_NE(error_of(u).find("unknown key for a reduce task"), std::string::npos) << error_of(u);
}

TEST(Json, WrongTypesNameThePath) {
  std::string t = kGood;
  t.replace(t.find("\"offset\": 8, \"length\""), 11, "\"offset\": \"8\"");
  const std::string msg = error_of(t);
  EXPECT_NE(msg.find("tasks[2].in.offset: expected an integer, got string \"8\""), std::string::npos) << msg;
  EXPECT_NE(error_of(R"({"gridflow": 1, "buffers": {}, "tasks": []})").find("buffers: expected an array"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"gridflow": 1, "buffers": [{"name": "a", "dtype": "f64", "shape": [1]}], "tasks": []})")
                .find("\"f64\" is not one of"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"gridflow": 1, "buffers": [{"name": "a", "dtype": "f32", "shape": [1.5]}], "tasks": []})")
                .find("buffers[0].shape[0]: expected an integer"),
            std::string::npos);
}

TEST(Json, MissingKeysAndVersion) {
  EXPECT_NE(error_of(R"({"buffers": [], "tasks": []})").find("needs the key 'gridflow'"), std::string::npos);
  EXPECT_NE(error_of(R"({"gridflow": 2, "buffers": [], "tasks": []})").find("format version 2 is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"gridflow": 1, "buffers": [], "tasks": [{"name": "t", "op": "softmax", "in": "x"}]})")
                .find("tasks[0]: a task needs the key 'out'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"gridflow": 1, "buffers": [], "tasks": [{"name": "t", "op": "matmul"}]})")
                .find("\"matmul\" is not one of"),
            std::string::npos);
}

TEST(Json, InitTakesExactlyOneKind) {
  const std::string msg = error_of(
      R"({"gridflow": 1, "buffers": [{"name": "a", "dtype": "f32", "shape": [1], "init": {"constant": 1, "iota": {}}}], "tasks": []})");
  EXPECT_NE(msg.find("exactly one of"), std::string::npos) << msg;
}

TEST(Json, CountingOpsParseRoundTripAndStayStrict) {
  const std::string text = R"({"gridflow": 1, "name": "route", "buffers": [
    {"name": "k", "dtype": "i32", "shape": [100], "init": {"uniform": {"low": 0, "high": 7, "seed": 1}}},
    {"name": "x", "dtype": "f32", "shape": [100], "init": {"uniform": {"low": -1, "high": 1, "seed": 2}}},
    {"name": "c", "dtype": "i32", "shape": [8]}, {"name": "o", "dtype": "i32", "shape": [8]},
    {"name": "p", "dtype": "i32", "shape": [100]}, {"name": "y", "dtype": "f32", "shape": [100]},
    {"name": "n", "dtype": "i32", "shape": [1]}],
   "tasks": [
    {"name": "count", "op": "histogram", "in": "k", "out": "c"},
    {"name": "offsets", "op": "scan", "fn": "sum", "exclusive": true, "in": "c", "out": "o"},
    {"name": "group", "op": "scatter", "in": "k", "offsets": "o", "out": "p"},
    {"name": "keep", "op": "select", "in": "x", "out": "y", "count": "n", "cmp": "le", "threshold": -0.25}]})";
  const Graph g = graph_from_json(text, "g.json");
  ASSERT_EQ(g.tasks().size(), 4u);
  EXPECT_EQ(g.tasks()[0].op, OpKind::histogram);
  EXPECT_EQ(g.tasks()[2].aux.buffer, "o");
  EXPECT_EQ(g.tasks()[3].aux.buffer, "n");
  EXPECT_EQ(g.tasks()[3].cmp, CmpFn::le);
  EXPECT_EQ(g.tasks()[3].threshold, -0.25);
  EXPECT_NO_THROW(analyze(g));
  const std::string once = graph_to_json(g);
  EXPECT_EQ(graph_to_json(graph_from_json(once, "again")), once);

  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return error_of(t);
  };
  EXPECT_NE(with("\"offsets\": \"o\", ", "").find("a scatter task needs the key 'offsets'"), std::string::npos)
      << with("\"offsets\": \"o\", ", "");
  EXPECT_NE(with("\"cmp\": \"le\"", "\"cmp\": \"lte\"").find("\"lte\" is not one of"), std::string::npos);
  EXPECT_NE(with("\"count\": \"n\", ", "").find("a select task needs the key 'count'"), std::string::npos);
  EXPECT_NE(with("\"in\": \"k\", \"out\": \"c\"", "\"in\": \"k\", \"out\": \"c\", \"axis\": \"row\"")
                .find("unknown key for a histogram task"),
            std::string::npos);
}

TEST(Json, HostDataCannotBeWritten) {
  Graph g("h");
  g.add_buffer("a", {2}, std::vector<float>{1.f, 2.f});
  EXPECT_THROW(graph_to_json(g), GraphError);
}

TEST(Json, MissingFileIsAGraphError) {
  EXPECT_THROW(load_graph("/nonexistent/graph.json"), GraphError);
}

// Every example graph in the repository loads, validates and round-trips.
TEST(Json, ExampleGraphsAreValid) {
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(GRIDFLOW_SOURCE_DIR "/examples/graphs")) {
    if (entry.path().extension() != ".json")
      continue;
    ++seen;
    const Graph g = load_graph(entry.path());
    EXPECT_NO_THROW(analyze(g)) << entry.path();
    EXPECT_EQ(graph_to_json(graph_from_json(graph_to_json(g))), graph_to_json(g)) << entry.path();
  }
  EXPECT_GE(seen, 3);
}

} // namespace
} // namespace gridflow
