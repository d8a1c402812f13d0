// The example pipelines (issue: example pipelines users run) on the CPU backend: each graph in examples/graphs
// that a C++ example writes runs in every sync mode, passes the float64 reference check, and every mode agrees
// bit for bit. (The GPU suite and scripts/gpu-check.sh run them on the GPU.)
#include "scheduler/json_format.hpp"
#include "scheduler/session.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gridflow {
namespace {

class ExamplePipeline : public ::testing::TestWithParam<std::string> {};

TEST_P(ExamplePipeline, EveryModePassesTheReferenceCheckAndAgrees) {
  const Graph g = load_graph(std::string(GRIDFLOW_SOURCE_DIR "/examples/graphs/") + GetParam() + ".json");
  std::vector<HostTensor> first;
  for (SyncMode mode : kAllSyncModes) {
    SessionOptions o;
    o.backend = Backend::cpu;
    o.mode = mode;
    o.cpu_workers = 4;
    Session s(g, o);
    s.run();
    const CheckReport c = s.check();
    EXPECT_TRUE(c.passed) << to_string(mode) << ": " << c.summary() << "\n" << c.details();
    EXPECT_EQ(c.buffers.size(), g.buffers().size());
    if (first.empty())
      first = s.results();
    else
      EXPECT_TRUE(bit_identical(first, s.results())) << to_string(mode);
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, ExamplePipeline,
                         ::testing::Values("attention_rows", "moe_routing", "varlen_batch", "compaction_1m"));

// The routing result itself: `order` lists every token once, grouped by expert in expert order, tokens ascending.
TEST(ExamplePipelines, MoeRoutingGroupsEveryTokenByExpert) {
  const Graph g = load_graph(GRIDFLOW_SOURCE_DIR "/examples/graphs/moe_routing.json");
  SessionOptions o;
  o.backend = Backend::cpu;
  Session s(g, o);
  s.run();
  ASSERT_TRUE(s.check().passed);
  auto get = [&](const char* name) { return s.results()[s.analysis().buffer_index.at(name)].i32(); };
  const auto expert = get("expert"), order = get("order"), offsets = get("offsets"), counts = get("counts");
  std::vector<int> seen(expert.size(), 0);
  for (std::size_t j = 0; j < order.size(); ++j) {
    const std::int32_t t = order[j];
    ASSERT_GE(t, 0);
    ASSERT_LT(static_cast<std::size_t>(t), expert.size());
    ++seen[static_cast<std::size_t>(t)];
    const std::int32_t e = expert[static_cast<std::size_t>(t)];
    EXPECT_GE(static_cast<std::int64_t>(j), offsets[static_cast<std::size_t>(e)]);
    EXPECT_LT(static_cast<std::int64_t>(j), offsets[static_cast<std::size_t>(e)] + counts[static_cast<std::size_t>(e)]);
    if (j > 0 && expert[static_cast<std::size_t>(order[j - 1])] == e) {
      EXPECT_LT(order[j - 1], t);
    }
  }
  for (int c : seen)
    ASSERT_EQ(c, 1);
}

} // namespace
} // namespace gridflow
