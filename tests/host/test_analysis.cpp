// Validation messages, hazard inference, cycles, levels.
#include "scheduler/analysis.hpp"
#include "scheduler/errors.hpp"
#include "tests/common/graph_errors.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gridflow {
namespace {

Graph base() {
  Graph g("g");
  g.add_buffer("x", DType::f32, {4, 8}, InitUniform{});
  g.add_buffer("y", DType::f32, {4, 8});
  g.add_buffer("r", DType::f32, {4});
  g.add_buffer("s", DType::f32, {1});
  g.add_buffer("k", DType::i32, {4}, InitIota{});
  g.add_buffer("idx", DType::i32, {1});
  return g;
}

using testing::expect_graph_error;

TEST(Analysis, EmptyGraphIsAnError) {
  expect_graph_error(base(), {"graph 'g'", "no tasks"});
}

TEST(Analysis, UnknownBufferNamesTaskFieldAndValue) {
  Graph g = base();
  g.softmax("sm", "nope", "y");
  expect_graph_error(g, {"task 'sm'", "in.buffer", "'nope'", "no buffer of that name"});
}

TEST(Analysis, DuplicateNames) {
  Graph g = base();
  g.add_buffer("x", DType::f32, {1});
  g.softmax("sm", "x", "y");
  expect_graph_error(g, {"buffer 'x'", "defined twice"});
  Graph h = base();
  h.softmax("sm", "x", "y");
  h.reduce("sm", "y", "s", ReduceFn::sum);
  expect_graph_error(h, {"task 'sm'", "defined twice"});
}

TEST(Analysis, BadShapesAndInits) {
  Graph g("g");
  g.add_buffer("a", DType::f32, {2, 3, 4});
  expect_graph_error(g, {"buffer 'a'", "shape", "[2, 3, 4]"});
  Graph h("g");
  h.add_buffer("a", DType::f32, {-1});
  expect_graph_error(h, {"buffer 'a'", "dimensions must be >= 0"});
  Graph u("g");
  u.add_buffer("a", DType::f32, {3}, InitUniform{1.0, 1.0, 1});
  expect_graph_error(u, {"buffer 'a'", "init.uniform.high", "must be > low"});
  Graph c("g");
  c.add_buffer("a", DType::i32, {3}, InitConstant{1.5});
  expect_graph_error(c, {"buffer 'a'", "init.constant", "1.5", "integer"});
  Graph big("g");
  big.add_buffer("a", DType::f32, {std::int64_t{1} << 30, std::int64_t{1} << 20});
  expect_graph_error(big, {"buffer 'a'", "limit"});
}

TEST(Analysis, ViewOutOfRange) {
  Graph g = base();
  g.reduce("r1", ViewSpec::range("x", 30, 5), "s", ReduceFn::sum);
  expect_graph_error(g, {"task 'r1'", "in", "offset 30", "length 5", "ends past the end", "32 elements"});
  Graph h = base();
  h.reduce("r1", ViewSpec::range("x", -1, 5), "s", ReduceFn::sum);
  expect_graph_error(h, {"task 'r1'", "in.offset", "-1"});
  Graph k = base();
  ViewSpec v("x");
  v.rows = 2;
  k.reduce("r1", v, "s", ReduceFn::sum);
  expect_graph_error(k, {"task 'r1'", "rows and cols go together"});
}

TEST(Analysis, DtypeAndShapeMismatches) {
  Graph g = base();
  g.reduce("am", "x", "s", ReduceFn::argmax);
  expect_graph_error(g, {"task 'am'", "out.buffer", "'s'", "is f32", "produces i32"});
  Graph h = base();
  h.reduce("rr", "x", "s", ReduceFn::sum, Axis::row);
  expect_graph_error(h, {"task 'rr'", "out", "1 elements", "needs 4 output elements"});
  Graph k = base();
  k.softmax("sm", "k", "y");
  expect_graph_error(k, {"task 'sm'"}); // i32 -> f32 output mismatch or softmax of i32
  Graph m = base();
  m.scan("sc", "x", "r", ScanFn::sum);
  expect_graph_error(m, {"task 'sc'", "needs as many output elements as inputs (32)"});
}

TEST(Analysis, AliasingRules) {
  Graph g = base();
  g.softmax("sm", "x", "x"); // exactly in place: allowed
  EXPECT_NO_THROW(analyze(g));
  Graph h = base();
  h.scan("sc", ViewSpec::range("x", 0, 16), ViewSpec::range("x", 8, 16), ScanFn::sum);
  expect_graph_error(h, {"task 'sc'", "overlaps the input", "in place only on exactly its input"});
  Graph k = base();
  k.reduce("r", ViewSpec::range("x", 0, 16), ViewSpec::range("x", 3, 1), ReduceFn::sum);
  expect_graph_error(k, {"task 'r'", "cannot write over its own input"});
}

TEST(Analysis, ReadBeforeWriteOfUninitialisedBuffer) {
  Graph g = base();
  g.reduce("r", "y", "s", ReduceFn::sum);
  expect_graph_error(g, {"task 'r'", "'y'", "before any task writes them", "no init"});
}

TEST(Analysis, SoftmaxNeedsAColumn) {
  Graph g = base();
  g.add_buffer("e", DType::f32, {0}, InitConstant{1.0});
  g.add_buffer("e2", DType::f32, {0});
  g.softmax("sm", "e", "e2");
  expect_graph_error(g, {"task 'sm'", "in.cols", "at least one column"});
}

TEST(Analysis, ZeroLengthTasksAreValid) {
  Graph g = base();
  g.add_buffer("e", DType::f32, {0, 5}, InitConstant{1.0});
  g.add_buffer("e2", DType::f32, {0, 5});
  g.softmax("sm", "e", "e2");                                       // zero rows
  g.reduce("sum0", ViewSpec::range("x", 3, 0), "s", ReduceFn::sum); // empty range -> identity
  const Analysis a = analyze(g);
  EXPECT_EQ(a.in[1].elements(), 0);
}

TEST(Analysis, HazardsRawWarWawAndAfter) {
  Graph g = base();
  g.softmax("a", "x", "y");                          // writes y
  g.reduce("b", "y", "r", ReduceFn::max, Axis::row); // RAW on y
  g.softmax("c", "x", "y");                          // WAR (b read y), WAW (a wrote y)
  g.reduce("d", "x", "s", ReduceFn::sum).after = {"a"};
  const Analysis a = analyze(g);
  ASSERT_EQ(a.deps[1].size(), 1u);
  EXPECT_EQ(a.deps[1][0].producer, 0u);
  EXPECT_EQ(a.deps[1][0].hazards, kHazardRaw);
  ASSERT_EQ(a.deps[2].size(), 2u);
  EXPECT_EQ(a.deps[2][0].hazards, kHazardWaw);
  EXPECT_EQ(a.deps[2][1].hazards, kHazardWar);
  ASSERT_EQ(a.deps[3].size(), 1u);
  EXPECT_EQ(a.deps[3][0].hazards, kHazardAfter);
  EXPECT_EQ(a.level[0], 0u);
  EXPECT_EQ(a.level[1], 1u);
  EXPECT_EQ(a.level[2], 2u);
  EXPECT_EQ(a.level[3], 1u);
  EXPECT_EQ(a.num_levels, 3u);
  EXPECT_EQ(hazard_names(kHazardRaw | kHazardWar), "RAW|WAR");
}

TEST(Analysis, DisjointRangesOfOneBufferDoNotDepend) {
  Graph g("g");
  g.add_buffer("x", DType::f32, {100}, InitUniform{});
  g.add_buffer("y", DType::f32, {100});
  g.scan("lo", ViewSpec::range("x", 0, 50), ViewSpec::range("y", 0, 50), ScanFn::sum);
  g.scan("hi", ViewSpec::range("x", 50, 50), ViewSpec::range("y", 50, 50), ScanFn::sum);
  g.reduce("r", ViewSpec::range("y", 40, 20), ViewSpec::range("x", 0, 1), ReduceFn::sum); // reads both halves
  const Analysis a = analyze(g);
  EXPECT_TRUE(a.deps[1].empty());
  ASSERT_EQ(a.deps[2].size(), 2u); // RAW on both halves; WAR on x[0] with "lo"
  EXPECT_EQ(a.deps[2][0].hazards, kHazardRaw | kHazardWar);
  EXPECT_EQ(a.deps[2][1].hazards, kHazardRaw);
}

TEST(Analysis, CycleIsPrinted) {
  Graph g = base();
  g.softmax("a", "x", "y");
  g.reduce("b", "y", "r", ReduceFn::max, Axis::row);
  g.tasks()[0].after = {"b"};
  expect_graph_error(g, {"dependency cycle", "'a' -(RAW)-> 'b'", "'b' -(after)-> 'a'"});
}

TEST(Analysis, AfterErrors) {
  Graph g = base();
  g.softmax("a", "x", "y").after = {"zzz"};
  expect_graph_error(g, {"task 'a'", "after[0]", "'zzz'", "no task of that name"});
  Graph h = base();
  h.softmax("a", "x", "y").after = {"a"};
  expect_graph_error(h, {"task 'a'", "cannot follow itself"});
}

TEST(Analysis, OrderIsTopologicalByLevelThenDeclaration) {
  Graph g = base();
  g.softmax("a", "x", "y");
  g.reduce("z", "x", "idx", ReduceFn::argmax);
  g.reduce("b", "y", "r", ReduceFn::max, Axis::row);
  const Analysis a = analyze(g);
  EXPECT_EQ(a.order, (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(a.writers[1], 1u);
}

TEST(Analysis, CountingOpsValidateKeysBinsAndTheirThirdView) {
  {
    Graph g = base();
    g.add_buffer("c", DType::i32, {4});
    g.histogram("h", "x", "c");
    expect_graph_error(g, {"task 'h'", "in.buffer", "'x'", "histogram needs i32 keys"});
  }
  {
    Graph g = base();
    g.add_buffer("c", DType::i32, {5000});
    g.histogram("h", "k", "c");
    expect_graph_error(g, {"task 'h'", "out", "5000 elements", "1 to 4096 bins"});
  }
  {
    Graph g = base();
    g.add_buffer("off", DType::i32, {2000});
    g.add_buffer("p", DType::i32, {4});
    g.scatter("route", "k", "off", "p");
    expect_graph_error(g, {"task 'route'", "offsets", "2000 elements", "1 to 1024 bins"});
  }
  {
    Graph g = base();
    g.add_buffer("off", DType::f32, {4});
    g.add_buffer("p", DType::i32, {4});
    g.scatter("route", "k", "off", "p");
    expect_graph_error(g, {"task 'route'", "offsets.buffer", "'off'", "must be i32"});
  }
  {
    Graph g = base();
    g.add_buffer("z", DType::f32, {4, 8});
    g.add_buffer("n2", DType::i32, {2});
    g.select("keep", "x", "z", "n2", CmpFn::gt, 0.0);
    expect_graph_error(g, {"task 'keep'", "count", "2 elements", "one count"});
  }
  {
    Graph g = base();
    g.add_buffer("z", DType::i32, {4});
    g.select("keep", "k", "z", "idx", CmpFn::lt, 1.5);
    expect_graph_error(g, {"task 'keep'", "threshold", "1.5", "integer in the int32 range"});
  }
  {
    Graph g = base();
    g.select("keep", "x", "y", "nope", CmpFn::gt, 0.0);
    expect_graph_error(g, {"task 'keep'", "count.buffer", "'nope'"});
  }
  {
    Graph g = base();
    Task& t = g.softmax("sm", "x", "y");
    t.aux = ViewSpec("s");
    expect_graph_error(g, {"task 'sm'", "aux", "'s'", "takes no third view"});
  }
}

TEST(Analysis, CountingOpsOrderTheirThirdView) {
  Graph g = base();
  g.add_buffer("c", DType::i32, {4});
  g.add_buffer("off", DType::i32, {4});
  g.add_buffer("p", DType::i32, {4});
  g.add_buffer("z", DType::f32, {4, 8});
  g.add_buffer("n", DType::i32, {1});
  g.histogram("h", "k", "c");
  g.scan("sc", "c", "off", ScanFn::sum, true);
  g.scatter("route", "k", "off", "p"); // reads off: RAW on sc
  g.select("keep", "x", "z", "n", CmpFn::gt, 0.0);
  g.reduce("use", "n", "idx", ReduceFn::sum); // reads keep's count: RAW on keep
  const Analysis a = analyze(g);
  ASSERT_EQ(a.deps[2].size(), 1u);
  EXPECT_EQ(a.deps[2][0].producer, 1u);
  EXPECT_EQ(a.deps[2][0].hazards, kHazardRaw);
  ASSERT_EQ(a.deps[4].size(), 1u);
  EXPECT_EQ(a.deps[4][0].producer, 3u);
  EXPECT_EQ(a.writers[g.find_buffer("n") - g.buffers().data()], 1u);
}

} // namespace
} // namespace gridflow
