// The megakernel's runtime behaviour on the GPU: random DAGs in every mode, traces, the watchdog, co-residency
// refusal, corrupt programs.
#include "runtime/errors.hpp"
#include "runtime/gpu_executor.hpp"
#include "tests/common/bad_descriptors.hpp"
#include "tests/common/random_graph.hpp"
#include "tests/common/run_checks.hpp"
#include "tests/device/gpu_fixture.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace gridflow {
namespace {

using testing::gpu_options;
using testing::same_bits;

class GpuRuntime : public testing::GpuTest {};

struct DagCase {
  std::uint32_t tasks;
  std::uint64_t seed;
  bool hazards;
};

class GpuRandomDag : public testing::GpuTest, public ::testing::WithParamInterface<DagCase> {};

TEST_P(GpuRandomDag, EveryModeAgreesBitForBitAndTracesAreConsistent) {
  const DagCase c = GetParam();
  testing::RandomGraphOptions ro;
  ro.tasks = c.tasks;
  ro.seed = c.seed;
  ro.hazards = c.hazards;
  const Graph g = testing::random_graph(ro);
  // Bit-identical across modes and schedules at one block size (the block size sets the reduction trees);
  // one more block size is checked against the references.
  std::vector<HostTensor> first;
  for (SyncMode mode : kAllSyncModes)
    for (Schedule sched : {Schedule::dynamic, Schedule::static_list}) {
      SessionOptions o = gpu_options(mode, 256);
      o.schedule = sched;
      o.exec.trace = true;
      Session s(g, o);
      const RunResult r = s.run();
      ASSERT_EQ(testing::trace_violation(s.program(), r), "") << to_string(mode) << " " << to_string(sched);
      const CheckReport check = s.check();
      ASSERT_TRUE(check.passed) << to_string(mode) << ": " << check.summary() << "\n" << check.details();
      if (first.empty())
        first = s.results();
      std::string which;
      ASSERT_TRUE(same_bits(first, s.results(), &which))
          << "buffer " << g.buffers()[std::stoul(which)].name << " (" << which << ")"
          << " differs: " << to_string(mode) << " " << to_string(sched);
    }
  Session other(g, gpu_options(SyncMode::flags, 128));
  other.run();
  EXPECT_TRUE(other.check().passed) << "128 threads: " << other.check().summary();
}

INSTANTIATE_TEST_SUITE_P(Graphs, GpuRandomDag,
                         ::testing::Values(DagCase{1, 1, false}, DagCase{10, 2, true}, DagCase{100, 3, true},
                                           DagCase{100, 4, false}, DagCase{500, 5, true}, DagCase{2000, 6, true},
                                           DagCase{2000, 7, false}),
                         [](const auto& param_info) {
                           return "n" + std::to_string(param_info.param.tasks) + "_seed" +
                                  std::to_string(param_info.param.seed);
                         });

// Runs per graph per mode: GRIDFLOW_STRESS_RUNS (default 25; scripts/gpu-check.sh sets 250: 1000 runs per mode).
TEST_F(GpuRuntime, RandomDagStressManyRunsPerMode) {
  const int runs = testing::stress_runs(25);
  testing::RandomGraphOptions ro;
  ro.tasks = 300;
  for (SyncMode mode : kAllSyncModes) {
    for (std::uint64_t seed = 100; seed < 104; ++seed) {
      ro.seed = seed;
      const Graph g = testing::random_graph(ro);
      Session s(g, gpu_options(mode));
      s.run();
      ASSERT_TRUE(s.check().passed) << to_string(mode) << " seed " << seed;
      const std::vector<HostTensor> first = s.results();
      for (int i = 0; i < runs; ++i) {
        ExecOptions e = s.options().exec;
        e.claim_ahead = i % 4 != 3; // on in three runs of four: the ticket count per run must not depend on it
        s.run(e);
        ASSERT_TRUE(same_bits(first, s.results())) << to_string(mode) << " seed " << seed << " run " << i;
      }
    }
  }
}

TEST_F(GpuRuntime, CoResidencyViolationIsRefusedBeforeLaunch) {
  try {
    plan_gpu_shape(256, 64); // far beyond what fits on an SM
    FAIL() << "expected a refusal";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be co-resident"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan_gpu_shape(100, 1), RuntimeError); // not a compiled block size
}

TEST_F(GpuRuntime, WatchdogTurnsALostSignalIntoAnErrorAndTheDeviceRunsOn) {
  Graph g("lost");
  g.add_buffer("x", DType::f32, {256, 512}, InitUniform{});
  g.add_buffer("y", DType::f32, {256, 512});
  g.add_buffer("r", DType::f32, {256});
  g.softmax("producer", "x", "y");
  g.reduce("consumer", "y", "r", ReduceFn::sum, Axis::row);
  SessionOptions o = gpu_options(SyncMode::flags);
  o.per_tile_deps = false;
  o.exec.timeout_ns = 100'000'000ull; // 100 ms
  o.exec.fault_skip_signal_tile = 0;
  Session s(g, o);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    s.run();
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("watchdog"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'producer'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'consumer'"), std::string::npos) << msg;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // The same executor runs again correctly once the fault is gone.
  ExecOptions clean = o.exec;
  clean.fault_skip_signal_tile = program::kNoTile;
  for (int i = 0; i < 3; ++i)
    EXPECT_NO_THROW(s.executor().run(clean));
}

TEST_F(GpuRuntime, WatchdogRecoveryThenCleanRuns) {
  Graph g("lost2");
  g.add_buffer("x", DType::f32, {1 << 20}, InitUniform{});
  g.add_buffer("y", DType::f32, {1 << 20});
  g.add_buffer("s", DType::f32, {1});
  g.scan("a", "x", "y", ScanFn::sum);
  g.reduce("b", "y", "s", ReduceFn::sum);
  for (SyncMode mode : {SyncMode::flags, SyncMode::sentinel}) {
    SessionOptions o = gpu_options(mode);
    o.exec.timeout_ns = 100'000'000ull;
    Session s(g, o);
    ExecOptions bad = o.exec;
    bad.fault_skip_signal_tile = 0; // a scan tile that never signals: 'b' waits forever (flags mode)
    if (mode == SyncMode::flags) {
      EXPECT_THROW(s.executor().run(bad), DeviceError);
    }
    for (int i = 0; i < 3; ++i) {
      s.run();
      EXPECT_TRUE(s.check().passed) << to_string(mode) << " run " << i;
    }
  }
}

TEST_F(GpuRuntime, TracesAreCompleteAndMonotone) {
  testing::RandomGraphOptions ro;
  ro.tasks = 200;
  ro.seed = 11;
  const Graph g = testing::random_graph(ro);
  for (SyncMode mode : kAllSyncModes) {
    SessionOptions o = gpu_options(mode);
    o.exec.trace = true;
    Session s(g, o);
    const RunResult r = s.run();
    EXPECT_EQ(testing::trace_violation(s.program(), r), "") << to_string(mode);
    for (const program::BarrierTrace& b : r.barriers)
      EXPECT_LE(b.arrive, b.leave);
    EXPECT_EQ(r.barriers.size(), std::size_t{r.blocks} * r.barriers_per_block);
  }
}

TEST_F(GpuRuntime, CorruptOpcodeIsAnErrorNotAHang) {
  Graph g("corrupt");
  g.add_buffer("x", DType::f32, {1000}, InitUniform{});
  g.add_buffer("s", DType::f32, {1});
  g.reduce("r", "x", "s", ReduceFn::sum);
  const GpuShape shape = plan_gpu_shape(256, 1);
  LoweringOptions lo;
  lo.grid_blocks = shape.grid_blocks;
  LoweredProgram p = lower(g, analyze(g), lo);
  p.tasks[0].opcode = 77;
  auto ex = make_gpu_executor(std::move(p), shape);
  try {
    ex->run();
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.record().code, static_cast<std::uint32_t>(program::ErrorCode::bad_opcode));
  }
}

// The same corrupt programs the host suite feeds the CPU executor: the same field named (program::check_descriptor).
TEST_F(GpuRuntime, EveryBadDescriptorIsNamedAsOnTheCpu) {
  const GpuShape shape = plan_gpu_shape(256, 1);
  for (const testing::BadDescriptor& bad : testing::bad_descriptors()) {
    auto ex = make_gpu_executor(bad.make(shape.grid_blocks, 256), shape);
    try {
      ex->run();
      ADD_FAILURE() << bad.name << ": expected a DeviceError";
    } catch (const DeviceError& e) {
      EXPECT_EQ(e.record().code, static_cast<std::uint32_t>(program::ErrorCode::bad_descriptor)) << bad.name;
      EXPECT_EQ(e.record().detail, static_cast<std::uint32_t>(bad.field)) << bad.name << ": " << e.what();
    }
  }
}

} // namespace
} // namespace gridflow
