// Property tests on random DAGs of 1-2000 tasks: the CPU executor with 1-16 workers, every sync mode and both
// schedules gives bit-identical results to one sequential worker, within tolerance of the float64 references;
// every tile runs exactly once and no dependency is violated (checked on the recorded trace).
#include "scheduler/session.hpp"
#include "tests/common/random_graph.hpp"
#include "tests/common/run_checks.hpp"

#include <gtest/gtest.h>

namespace gridflow {
namespace {

struct Case {
  std::uint32_t tasks;
  std::uint64_t seed;
  bool hazards;
};

class RandomDag : public ::testing::TestWithParam<Case> {};

Graph graph_of(const Case& c) {
  testing::RandomGraphOptions ro;
  ro.tasks = c.tasks;
  ro.seed = c.seed;
  ro.hazards = c.hazards;
  if (c.tasks >= 1000) {
    ro.max_cols = 120;
    ro.max_vector = 1500;
  }
  return testing::random_graph(ro);
}

// One sequential CPU worker, traced, with the tiling every run of these tests shares.
SessionOptions sequential_options() {
  SessionOptions base;
  base.backend = Backend::cpu;
  base.cpu_workers = 1;
  base.exec.trace = true;
  base.tiles.reduce_min_tile = 256; // several tiles per task even for small buffers
  base.tiles.set_row_tile_elements(256);
  base.tiles.scan_items_per_thread = 2;
  // Tile sizes of large reduces and scans follow the grid, and so do their float bits; these small buffers keep
  // reduce tiles at the minimum, and one chunk per scan tile keeps scans grid-independent too.
  base.tiles.scan_chunks_per_tile = 1;
  return base;
}

TEST_P(RandomDag, AllModesAllWorkerCountsAgreeBitForBit) {
  const Graph g = graph_of(GetParam());
  const SessionOptions base = sequential_options();
  Session sequential(g, base);
  sequential.run();
  const CheckReport ref = sequential.check();
  ASSERT_TRUE(ref.passed) << ref.summary() << "\n" << ref.details();
  const std::vector<HostTensor> expect = sequential.results();

  const std::uint32_t workers[] = {2, 5, 16};
  int k = 0;
  for (SyncMode mode : kAllSyncModes)
    for (std::uint32_t w : workers) {
      SessionOptions o = base;
      o.mode = mode;
      o.cpu_workers = w;
      o.schedule = (k++ % 2) ? Schedule::static_list : Schedule::dynamic;
      Session s(g, o);
      const RunResult r = s.run();
      ASSERT_EQ(testing::trace_violation(s.program(), r), "") << to_string(mode) << " workers " << w;
      std::size_t b = 0;
      ASSERT_TRUE(bit_identical(expect, s.results(), &b))
          << "buffer " << g.buffers()[b].name << " differs: mode " << to_string(mode) << ", " << w
          << " workers, schedule " << to_string(o.schedule);
    }
}

// Graph-order lists (LoweringOptions::graph_order): the same bits as one sequential worker, and no dependency
// violated, in the dataflow modes (level modes keep level order).
TEST_P(RandomDag, GraphOrderListsAgreeBitForBit) {
  const Graph g = graph_of(GetParam());
  const SessionOptions base = sequential_options();
  Session sequential(g, base);
  sequential.run();
  const std::vector<HostTensor> expect = sequential.results();
  for (SyncMode mode : {SyncMode::flags, SyncMode::sentinel}) {
    SessionOptions o = base;
    o.mode = mode;
    o.cpu_workers = 5;
    o.schedule = Schedule::static_list;
    o.graph_order = true;
    Session s(g, o);
    const RunResult r = s.run();
    ASSERT_EQ(testing::trace_violation(s.program(), r), "") << to_string(mode);
    std::size_t b = 0;
    ASSERT_TRUE(bit_identical(expect, s.results(), &b))
        << "buffer " << g.buffers()[b].name << " differs: mode " << to_string(mode);
  }
}

INSTANTIATE_TEST_SUITE_P(Graphs, RandomDag,
                         ::testing::Values(Case{1, 1, false}, Case{1, 2, true}, Case{7, 3, true}, Case{50, 4, false},
                                           Case{50, 5, true}, Case{300, 6, true}, Case{300, 7, false},
                                           Case{2000, 8, true}, Case{2000, 9, false}),
                         [](const auto& param_info) {
                           return "n" + std::to_string(param_info.param.tasks) + "_seed" +
                                  std::to_string(param_info.param.seed) +
                                  (param_info.param.hazards ? "_hazards" : "_ssa");
                         });

// Found on the H200: in random DAG n2000/seed6, an argmax near-tie (t410 -> b416) gives the GPU keys [18, 0, 0]
// where the float64 reference picks [94, 96, 0]; the histogram, offsets and scatter after it follow those keys,
// and the scatter then writes a slot the reference leaves untouched. The check must accept exactly what the GPU
// produced, and still reject a wrong value in a decidable buffer.
TEST(RandomDag, UndecidableKeysLetTheScatterWriteOtherSlots) {
  testing::RandomGraphOptions ro;
  ro.tasks = 2000;
  ro.seed = 6;
  ro.hazards = true;
  const Graph g = testing::random_graph(ro);
  SessionOptions o;
  o.backend = Backend::cpu;
  o.cpu_workers = 2;
  Session s(g, o);
  s.run();
  auto buffer = [&](std::string_view name) {
    for (std::size_t i = 0; i < g.buffers().size(); ++i)
      if (g.buffers()[i].name == name)
        return i;
    throw std::runtime_error("no buffer " + std::string(name));
  };
  std::vector<HostTensor> gpu = s.results();
  auto set = [&](std::string_view name, std::vector<std::int32_t> v) {
    std::copy(v.begin(), v.end(), gpu[buffer(name)].i32().begin());
  };
  set("b416", {18, 0, 0});                                                    // keys (argmax near-ties)
  set("b1455", {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});    // their histogram
  set("b1456", {0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3}); // exclusive scan
  set("b1457", {1, 2, 0});                                                    // placement
  const Analysis a = analyze(g);
  const CheckReport accepted = check_outputs(g, a, s.initial(), gpu);
  EXPECT_TRUE(accepted.passed) << accepted.summary() << "\n" << accepted.details();
  gpu[0].i32()[0] ^= 0x40000000; // an exponent bit flipped in the first buffer (an input: must stay as it was)
  EXPECT_FALSE(check_outputs(g, a, s.initial(), gpu).passed);
}

TEST(RandomDag, GeneratorIsDeterministicAndValid) {
  testing::RandomGraphOptions ro;
  ro.tasks = 200;
  ro.seed = 42;
  const Graph a = testing::random_graph(ro);
  const Graph b = testing::random_graph(ro);
  ASSERT_EQ(a.tasks().size(), b.tasks().size());
  for (std::size_t i = 0; i < a.tasks().size(); ++i)
    EXPECT_EQ(a.tasks()[i].in.buffer, b.tasks()[i].in.buffer);
  const Analysis an = analyze(a);
  std::size_t ops[6] = {0, 0, 0, 0, 0, 0}; // per OpKind
  for (const Task& t : a.tasks())
    ++ops[static_cast<int>(t.op)];
  for (OpKind k : {OpKind::reduce, OpKind::scan, OpKind::softmax})
    EXPECT_GT(ops[static_cast<int>(k)], 10u) << to_string(k);
  for (OpKind k : {OpKind::histogram, OpKind::scatter, OpKind::select})
    EXPECT_GT(ops[static_cast<int>(k)], 0u) << to_string(k);
  EXPECT_GT(an.num_levels, 3u);
}

} // namespace
} // namespace gridflow
