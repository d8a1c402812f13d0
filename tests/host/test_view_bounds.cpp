// Property test of view bounds: random 63-bit offsets, lengths, rows and cols, in every view form, on every view of
// every op. Each graph is either refused by analyze() with an error naming the task and the view's field, or it is
// in range and runs on the CPU backend to a passing float64 check. Nothing in between: no crash, no read or write
// outside a buffer (the sanitizer build runs this too).
#include "scheduler/errors.hpp"
#include "scheduler/session.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace gridflow {
namespace {

struct OpCase {
  const char* op;
  std::vector<const char*> fields; // the views this op has, as analyze() names them
};

const std::vector<OpCase> kOps = {
    {"reduce_all", {"in", "out"}},         {"reduce_rows", {"in", "out"}},    {"scan_all", {"in", "out"}},
    {"scan_rows", {"in", "out"}},          {"softmax", {"in", "out"}},        {"histogram", {"in", "out"}},
    {"scatter", {"in", "out", "offsets"}}, {"select", {"in", "out", "count"}}};

// One task of `op` over small buffers; `field` gets the view `v`, the others their usual whole-buffer views.
Graph make_graph(const std::string& op, const std::string& field, const ViewSpec& v) {
  Graph g("bounds");
  g.add_buffer("x", DType::f32, {8, 16}, InitUniform{-2, 2, 11});
  g.add_buffer("k", DType::i32, {128}, InitUniform{0, 7, 12});
  g.add_buffer("off", DType::i32, {8}, InitIota{0, 16});
  g.add_buffer("y", DType::f32, {8, 16});
  g.add_buffer("yi", DType::i32, {128});
  g.add_buffer("s", DType::f32, {8});
  g.add_buffer("s1", DType::f32, {1});
  g.add_buffer("c", DType::i32, {1});
  auto pick = [&](const char* name, ViewSpec dflt) { return field == name ? v : dflt; };
  if (op == "reduce_all")
    g.reduce("t", pick("in", "x"), pick("out", "s1"), ReduceFn::sum);
  if (op == "reduce_rows")
    g.reduce("t", pick("in", "x"), pick("out", "s"), ReduceFn::max, Axis::row);
  if (op == "scan_all")
    g.scan("t", pick("in", "x"), pick("out", "y"), ScanFn::sum);
  if (op == "scan_rows")
    g.scan("t", pick("in", "x"), pick("out", "y"), ScanFn::sum, true, Axis::row);
  if (op == "softmax")
    g.softmax("t", pick("in", "x"), pick("out", "y"));
  if (op == "histogram")
    g.histogram("t", pick("in", "k"), pick("out", ViewSpec::range("yi", 0, 8)));
  if (op == "scatter")
    g.scatter("t", pick("in", "k"), pick("offsets", "off"), pick("out", "yi"));
  if (op == "select")
    g.select("t", pick("in", "x"), pick("out", ViewSpec::range("y", 0, 128)), pick("count", "c"), CmpFn::gt, 0.0);
  return g;
}

// A value for an offset, length, row or column count: small (often in range), near the int64 limits, random 63-bit,
// or negative.
std::int64_t draw(std::mt19937_64& rng) {
  switch (rng() % 8) {
  case 0:
  case 1:
  case 2:
    return static_cast<std::int64_t>(rng() % 20);
  case 3:
    return static_cast<std::int64_t>(rng() % 140);
  case 4:
    return std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(rng() % 3);
  case 5:
    return static_cast<std::int64_t>(rng() >> 1);
  case 6:
    return std::int64_t{1} << (rng() % 63);
  default:
    return -static_cast<std::int64_t>(rng() % 5) - 1;
  }
}

ViewSpec random_view(std::mt19937_64& rng, const std::string& buffer) {
  switch (rng() % 4) {
  case 0:
    return ViewSpec(buffer);
  case 1: {
    ViewSpec v(buffer);
    v.offset = draw(rng);
    return v;
  }
  case 2:
    return ViewSpec::range(buffer, draw(rng), draw(rng));
  default:
    return ViewSpec::block(buffer, draw(rng), draw(rng), draw(rng));
  }
}

TEST(ViewBounds, RandomViewsAreRefusedByNameOrRunCorrectly) {
  std::mt19937_64 rng(20261201);
  int refused = 0, ran = 0;
  SessionOptions so;
  so.cpu_workers = 3;
  for (int trial = 0; trial < 4000; ++trial) {
    const OpCase& op = kOps[rng() % kOps.size()];
    const std::string field = op.fields[rng() % op.fields.size()];
    const Graph base = make_graph(op.op, field, ViewSpec("x"));
    const std::string& buffer = rng() % 4 == 0   ? base.buffers()[rng() % base.buffers().size()].name
                                : field == "in"  ? base.tasks()[0].in.buffer
                                : field == "out" ? base.tasks()[0].out.buffer
                                                 : base.tasks()[0].aux.buffer;
    const ViewSpec v = random_view(rng, buffer);
    const Graph g = make_graph(op.op, field, v);
    const std::string what = std::string(op.op) + " " + field + " {offset " + std::to_string(v.offset) +
                             (v.length ? ", length " + std::to_string(*v.length) : "") +
                             (v.rows ? ", rows " + std::to_string(*v.rows) + ", cols " + std::to_string(*v.cols) : "") +
                             "} of " + buffer;
    try {
      (void)analyze(g);
    } catch (const GraphError& e) {
      const std::string msg = e.what();
      ++refused;
      EXPECT_EQ(msg.rfind("task 't': ", 0), 0u) << what << ": " << msg;
      // The error names a field of the task: one of its views (or its own field when the view's buffer was swapped).
      EXPECT_TRUE(msg.find(": in") != std::string::npos || msg.find(": out") != std::string::npos ||
                  msg.find(": offsets") != std::string::npos || msg.find(": count") != std::string::npos)
          << what << ": " << msg;
      continue;
    }
    Session s(g, so);
    s.run();
    const CheckReport report = s.check();
    EXPECT_TRUE(report.passed) << what << ": " << report.summary() << "\n" << report.details();
    ++ran;
  }
  // Both outcomes are exercised.
  EXPECT_GT(refused, 1000);
  EXPECT_GT(ran, 100);
}

} // namespace
} // namespace gridflow
