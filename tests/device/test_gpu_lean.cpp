// The lean megakernel (runtime/gpu/lean_kernel.cuh) and the lean row bodies both megakernels run: the same bits as
// the general megakernel in every sync mode and schedule, with on-chip forwarding on and off, plain tiles on and off,
// at two block sizes; passing the float64 check; complete traces; the watchdog.
#include "runtime/device.hpp"
#include "runtime/errors.hpp"
#include "runtime/gpu_executor.hpp"
#include "tests/common/run_checks.hpp"
#include "tests/device/gpu_fixture.hpp"

namespace gridflow {
namespace {

using testing::gpu_options;
using testing::same_bits;

class GpuLean : public testing::GpuTest {};

// Every lean row op over rows x cols: softmax and log-softmax, row scans (sum and max, inclusive and exclusive, one in
// place), row reductions (sum, max, min, argmax), i32 scans and reductions, a view that starts one element in (not
// 16-byte aligned, so the bodies load element by element), and whole-range reductions and scans of those buffers.
Graph lean_graph(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Graph g("lean");
  g.add_buffer("x", DType::f32, {rows, cols}, InitUniform{-3, 3, seed});
  g.add_buffer("k", DType::i32, {rows, cols}, InitUniform{-50, 50, seed + 1});
  g.add_buffer("off", DType::f32, {rows * cols + 1}, InitUniform{-3, 3, seed + 2});
  for (const char* b : {"p", "lp", "s1", "s2", "s3", "q"})
    g.add_buffer(b, DType::f32, {rows, cols});
  for (const char* b : {"ki", "km"})
    g.add_buffer(b, DType::i32, {rows, cols});
  for (const char* b : {"r_sum", "r_max", "r_min"})
    g.add_buffer(b, DType::f32, {rows});
  for (const char* b : {"r_arg", "k_sum", "k_min"})
    g.add_buffer(b, DType::i32, {rows});
  g.softmax("softmax", "x", "p");
  g.scan("scan", "p", "s1", ScanFn::sum, false, Axis::row);
  g.scan("scan_ex", "s1", "s2", ScanFn::sum, true, Axis::row);
  g.scan("in_place", "s2", "s2", ScanFn::max, false, Axis::row);
  g.softmax("log_softmax", "s2", "lp", true);
  g.scan("max_ex", "lp", "s3", ScanFn::max, true, Axis::row);
  g.reduce("row_sum", "s1", "r_sum", ReduceFn::sum, Axis::row);
  g.reduce("row_max", "lp", "r_max", ReduceFn::max, Axis::row);
  g.reduce("row_min", "x", "r_min", ReduceFn::min, Axis::row);
  g.reduce("row_argmax", "x", "r_arg", ReduceFn::argmax, Axis::row);
  g.scan("i_scan", "k", "ki", ScanFn::sum, false, Axis::row);
  g.scan("i_max", "ki", "km", ScanFn::max, true, Axis::row);
  g.reduce("i_sum", "km", "k_sum", ReduceFn::sum, Axis::row);
  g.reduce("i_min", "k", "k_min", ReduceFn::min, Axis::row);
  g.softmax("misaligned", ViewSpec::block("off", 1, rows, cols), "q");
  // Whole-range reductions beside them: lean partial tiles where the view has more elements than one lean row
  // (a short last tile where the count is no multiple of it), a polled produced input, i32, an unaligned view.
  for (const char* b : {"t_sum", "t_max", "t_min", "t_off"})
    g.add_buffer(b, DType::f32, {1});
  g.add_buffer("t_isum", DType::i32, {1});
  g.reduce("all_sum", "p", "t_sum", ReduceFn::sum);
  g.reduce("all_max", "x", "t_max", ReduceFn::max);
  g.reduce("all_min", "s1", "t_min", ReduceFn::min);
  g.reduce("all_isum", "k", "t_isum", ReduceFn::sum);
  g.reduce("all_off", ViewSpec::block("off", 1, rows, cols), "t_off", ReduceFn::sum);
  // Whole-range scans beside them: lean look-back tiles likewise (sum and max, inclusive and exclusive, i32, an
  // unaligned view), one of them read by a softmax of its rows.
  for (const char* b : {"a_sum", "a_ex", "a_max", "a_off", "a_soft"})
    g.add_buffer(b, DType::f32, {rows, cols});
  g.add_buffer("a_isum", DType::i32, {rows, cols});
  g.scan("all_scan", "p", "a_sum", ScanFn::sum);
  g.scan("all_scan_ex", "x", "a_ex", ScanFn::sum, true);
  g.scan("all_scan_max", "s1", "a_max", ScanFn::max);
  g.scan("all_iscan", "k", "a_isum", ScanFn::sum);
  g.scan("all_scan_off", ViewSpec::block("off", 1, rows, cols), "a_off", ScanFn::sum);
  g.softmax("after_scan", "a_sum", "a_soft");
  return g;
}

struct Shape {
  std::int64_t rows, cols;
};

// Every sync mode, schedule, forwarding choice and kernel at one block size and shape: the same bits, each checked.
void agree_everywhere(std::uint32_t threads, Shape shape) {
  const Graph g = lean_graph(shape.rows, shape.cols, 11);
  const std::string where =
      std::to_string(threads) + " threads, " + std::to_string(shape.rows) + " x " + std::to_string(shape.cols);
  std::vector<HostTensor> first;
  for (SyncMode mode : kAllSyncModes)
    for (Schedule sched : {Schedule::dynamic, Schedule::static_list})
      for (bool forward : {true, false})
        for (int kernel : {0, 1, 2}) { // lean, lean with every tile through the protocol's steps, general
          const bool lean = kernel < 2;
          if (kernel == 1 && sched != Schedule::static_list)
            continue; // plain tiles are static-list tiles
          SessionOptions o = gpu_options(mode, threads);
          o.schedule = sched;
          o.forward = forward;
          o.exec.lean_kernel = lean;
          o.exec.plain_tiles = kernel == 0;
          o.exec.trace = mode == SyncMode::flags || mode == SyncMode::barrier;
          Session s(g, o);
          const RunResult r = s.run();
          const std::string config = where + ": " + s.describe();
          if (o.exec.trace) {
            ASSERT_EQ(testing::trace_violation(s.program(), r), "") << config;
          }
          const CheckReport check = s.check();
          ASSERT_TRUE(check.passed) << config << ": " << check.summary() << "\n" << check.details();
          if (first.empty())
            first = s.results();
          std::string which;
          ASSERT_TRUE(same_bits(first, s.results(), &which))
              << "buffer " << g.buffers()[std::stoul(which)].name << " differs (" << which << "): " << config;
          // The lean megakernel runs whenever every task is a lean tile and it is not turned off.
          const bool all_lean = s.executor().describe().find("lean megakernel") != std::string::npos;
          EXPECT_EQ(r.lean_kernel, lean && all_lean) << config;
        }
}

TEST_F(GpuLean, BothKernelsAgreeBitForBitInEveryConfiguration) {
  for (std::uint32_t threads : {256u, 128u})
    for (const Shape shape : {Shape{16, 1024}, Shape{7, 1000}, Shape{5, 33}, Shape{3, 2048}, Shape{40, 256}})
      agree_everywhere(threads, shape);
}

// The same at one small shape, for the sanitizers (scripts/gpu-check.sh).
TEST_F(GpuLean, BothKernelsAgreeSmall) {
  agree_everywhere(256, Shape{5, 1000});
}

TEST_F(GpuLean, RowChainsRunOnTheLeanKernelWithForwarding) {
  Graph g("chain");
  g.add_buffer("x0", DType::f32, {16, 1024}, InitUniform{-2, 2, 5});
  for (int i = 1; i <= 64; ++i) {
    g.add_buffer("x" + std::to_string(i), DType::f32, {16, 1024});
    const std::string in = "x" + std::to_string(i - 1), out = "x" + std::to_string(i);
    if (i % 2)
      g.softmax("op" + std::to_string(i), in, out);
    else
      g.scan("op" + std::to_string(i), in, out, ScanFn::sum, false, Axis::row);
  }
  Session s(g, gpu_options(SyncMode::flags));
  EXPECT_EQ(s.program().schedule, Schedule::static_list); // what auto picks for row graphs
  // 16 rows per level: one block per SM is all the program can use, so that is what it gets (the default is 2).
  EXPECT_EQ(s.program().grid_blocks, static_cast<std::uint32_t>(probe_gpu().sm_count)) << s.describe();
  const RunResult r = s.run();
  EXPECT_TRUE(r.lean_kernel);
  EXPECT_TRUE(s.check().passed) << s.check().summary();
  std::size_t forwarded = 0;
  for (std::uint8_t f : s.program().forwarded)
    forwarded += f;
  EXPECT_EQ(forwarded, 16u * 63u);
  for (int i = 0; i < 3; ++i) { // repeated runs on one executor (epochs)
    s.run();
    EXPECT_TRUE(s.check().passed) << "run " << i;
  }
}

// A level wider than the default grid runs on the lean row kernel at the blocks per SM it is built for (more rows in
// flight per SM), in the flags, barrier and grid-sync modes and both schedules: the same bits as the general
// megakernel at two blocks per SM, each run checked, its trace complete; sentinel mode keeps two.
TEST_F(GpuLean, WideRowLevelsRunOnTheLeanRowKernelsBlocksPerSm) {
  Graph g("wide");
  g.add_buffer("x", DType::f32, {1024, 1024}, InitUniform{-2, 2, 6});
  for (const char* b : {"y", "z", "w"})
    g.add_buffer(b, DType::f32, {1024, 1024});
  g.add_buffer("r", DType::f32, {1024});
  g.softmax("s", "x", "y");
  g.softmax("log_s", "x", "w", true);
  g.scan("scan", "y", "z", ScanFn::sum, false, Axis::row);
  g.reduce("row_max", "w", "r", ReduceFn::max, Axis::row);
  const std::uint32_t sms = static_cast<std::uint32_t>(probe_gpu().sm_count);
  const std::uint32_t per_sm = lean_row_blocks_per_sm(plan_gpu_shape(256, 0));
  EXPECT_EQ(per_sm, 4u); // 64 registers: four blocks of 256 threads fit an SM
  SessionOptions general = gpu_options(SyncMode::flags);
  general.exec.lean_kernel = false;
  Session reference(g, general);
  EXPECT_EQ(reference.program().grid_blocks, 2 * sms) << reference.describe();
  EXPECT_FALSE(reference.run().lean_kernel);
  ASSERT_TRUE(reference.check().passed) << reference.check().summary();
  for (SyncMode mode : {SyncMode::flags, SyncMode::barrier, SyncMode::grid_sync})
    for (Schedule sched : {Schedule::static_list, Schedule::dynamic}) {
      SessionOptions o = gpu_options(mode);
      o.schedule = sched;
      o.exec.trace = true;
      Session s(g, o);
      const std::string config = s.describe();
      EXPECT_EQ(s.program().grid_blocks, per_sm * sms) << config;
      const RunResult r = s.run();
      EXPECT_TRUE(r.lean_kernel) << config;
      ASSERT_EQ(testing::trace_violation(s.program(), r), "") << config;
      ASSERT_TRUE(s.check().passed) << config << ": " << s.check().summary();
      std::string which;
      EXPECT_TRUE(same_bits(reference.results(), s.results(), &which)) << "buffer " << which << ": " << config;
    }
  Session sentinel(g, gpu_options(SyncMode::sentinel));
  EXPECT_EQ(sentinel.program().grid_blocks, 2 * sms) << sentinel.describe();
  EXPECT_TRUE(sentinel.run().lean_kernel);
  EXPECT_TRUE(sentinel.check().passed) << sentinel.check().summary();
}

TEST_F(GpuLean, WatchdogStopsALostSignal) {
  Graph g("chain");
  g.add_buffer("x0", DType::f32, {16, 1024}, InitUniform{-2, 2, 5});
  for (int i = 1; i <= 4; ++i) {
    g.add_buffer("x" + std::to_string(i), DType::f32, {16, 1024});
    g.softmax("op" + std::to_string(i), "x" + std::to_string(i - 1), "x" + std::to_string(i));
  }
  SessionOptions o = gpu_options(SyncMode::flags);
  o.schedule = Schedule::dynamic; // tiles wait on other blocks' flags
  o.exec.timeout_ns = 200'000'000ull;
  Session s(g, o);
  ExecOptions bad = o.exec;
  bad.fault_skip_signal_tile = s.program().tasks[0].first_tile;
  try {
    s.run(bad);
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.record().code, static_cast<std::uint32_t>(program::ErrorCode::watchdog_timeout)) << e.what();
  }
  s.run(); // the arena was reset: the next run is clean
  EXPECT_TRUE(s.check().passed);
}

} // namespace
} // namespace gridflow
