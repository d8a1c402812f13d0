// The CPU executor: every op against the references, every sync mode and schedule, bit-identical results
// across modes and worker counts, the watchdog, corrupt programs.
#include "bench/noop_program.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/errors.hpp"
#include "runtime/forwarding.hpp"
#include "runtime/tiles.hpp"
#include "scheduler/session.hpp"
#include "tests/common/bad_descriptors.hpp"
#include "tests/common/counting_graphs.hpp"
#include "tests/common/run_checks.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <optional>

namespace gridflow {
namespace {

SessionOptions cpu_options(SyncMode mode, std::uint32_t workers = 4, Schedule schedule = Schedule::dynamic) {
  SessionOptions o;
  o.backend = Backend::cpu;
  o.mode = mode;
  o.schedule = schedule;
  o.cpu_workers = workers;
  o.exec.timeout_ns = 20'000'000'000ull;
  o.exec.trace = true;
  return o;
}

// Runs g in every mode with the given workers; checks references and traces; returns the results of the first.
std::vector<HostTensor> run_everywhere(const Graph& g, std::uint32_t workers, TilePolicy tiles = {}) {
  std::vector<HostTensor> first;
  for (Schedule schedule : {Schedule::dynamic, Schedule::static_list})
    for (SyncMode mode : kAllSyncModes) {
      SessionOptions o = cpu_options(mode, workers, schedule);
      o.tiles = tiles;
      Session s(g, o);
      const RunResult r = s.run();
      const CheckReport c = s.check();
      EXPECT_TRUE(c.passed) << to_string(mode) << ": " << c.summary() << "\n" << c.details();
      EXPECT_EQ(testing::trace_violation(s.program(), r), "") << to_string(mode);
      if (first.empty()) {
        first = s.results();
      } else {
        std::size_t b = 0;
        EXPECT_TRUE(bit_identical(first, s.results(), &b)) << "buffer " << g.buffers()[b].name << " differs in mode "
                                                           << to_string(mode) << " schedule " << to_string(schedule);
      }
    }
  return first;
}

Graph every_op_graph(std::int64_t n, std::int64_t rows, std::int64_t cols) {
  Graph g("ops");
  g.add_buffer("v", DType::f32, {n}, InitUniform{-1, 1, 11});
  g.add_buffer("vi", DType::i32, {n}, InitUniform{-1000, 1000, 12});
  g.add_buffer("m", DType::f32, {rows, cols}, InitUniform{-5, 5, 13});
  g.add_buffer("mi", DType::i32, {rows, cols}, InitUniform{-9, 9, 14});
  for (const char* fn : {"sum", "max", "min", "argmax"}) {
    const ReduceFn f = *parse_reduce_fn(fn);
    const DType out = f == ReduceFn::argmax ? DType::i32 : DType::f32;
    const DType outi = DType::i32;
    g.add_buffer(std::string("r_") + fn, out, {1});
    g.add_buffer(std::string("ri_") + fn, outi, {1});
    g.add_buffer(std::string("rr_") + fn, out, {rows});
    g.add_buffer(std::string("rri_") + fn, outi, {rows});
    g.reduce(std::string("reduce_") + fn, "v", std::string("r_") + fn, f);
    g.reduce(std::string("reducei_") + fn, "vi", std::string("ri_") + fn, f);
    g.reduce(std::string("rowreduce_") + fn, "m", std::string("rr_") + fn, f, Axis::row);
    g.reduce(std::string("rowreducei_") + fn, "mi", std::string("rri_") + fn, f, Axis::row);
  }
  for (const char* fn : {"sum", "max"})
    for (bool ex : {false, true}) {
      const ScanFn f = *parse_scan_fn(fn);
      const std::string tag = std::string(fn) + (ex ? "_ex" : "_in");
      g.add_buffer("s_" + tag, DType::f32, {n});
      g.add_buffer("si_" + tag, DType::i32, {n});
      g.add_buffer("sr_" + tag, DType::f32, {rows, cols});
      g.add_buffer("sri_" + tag, DType::i32, {rows, cols});
      g.scan("scan_" + tag, "v", "s_" + tag, f, ex);
      g.scan("scani_" + tag, "vi", "si_" + tag, f, ex);
      g.scan("rowscan_" + tag, "m", "sr_" + tag, f, ex, Axis::row);
      g.scan("rowscani_" + tag, "mi", "sri_" + tag, f, ex, Axis::row);
    }
  g.add_buffer("sm", DType::f32, {rows, cols});
  g.add_buffer("lsm", DType::f32, {rows, cols});
  g.softmax("softmax", "m", "sm");
  g.softmax("logsoftmax", "m", "lsm", true);
  return g;
}

TEST(CpuExecutor, EveryOpEveryModeSmallTiles) {
  TilePolicy small;
  small.reduce_min_tile = 64; // many tiles per task: exercises partial combines and the look-back tree
  small.set_row_tile_elements(200);
  small.scan_items_per_thread = 1;
  for (std::int64_t n : {1, 31, 32, 33, 1023, 1025, 4099})
    run_everywhere(every_op_graph(n, 7, n % 100 + 1), 3, small);
}

// The empty-task programs of `gridflow bench sync`, built by hand rather than lowered, run to completion in every mode:
// each awaited task publishes what its consumer waits for (a chain of noops once waited for counters nobody
// incremented, until the watchdog fired).
TEST(CpuExecutor, SyncBenchNoopProgramsComplete) {
  for (const SyncMode mode : {SyncMode::flags, SyncMode::barrier, SyncMode::grid_sync})
    for (const bool chain : {false, true}) {
      SCOPED_TRACE(std::string(to_string(mode)) + (chain ? " chain" : " independent"));
      CpuExecutor ex(bench::noop_program(200, chain, mode, 4, 256));
      ExecOptions o;
      o.timeout_ns = 5'000'000'000ull;
      EXPECT_NO_THROW(ex.run(o));
    }
}

// The counting ops at edge sizes: one tile, several (histogram rows folded by the last arriver, scatter rows of
// earlier tiles, select look-back), zero elements; every mode and schedule bit-identical.
TEST(CpuExecutor, CountingOpsEveryModeEdgeSizes) {
  for (std::int64_t n : {0LL, 1LL, 33LL, 4097LL, 40000LL})
    for (std::int32_t bins : {1, 7, 64}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " bins " << bins);
      const Graph g = testing::counting_graph(n, bins, 100 + static_cast<std::uint64_t>(n) + bins);
      const std::vector<HostTensor> r = run_everywhere(g, 4);
      // Routing invariants the references imply: the permutation's placed part is a stable grouping by key.
      const auto& keys = r[0].i32();
      const auto& counts = r[2].i32();
      const auto& offsets = r[3].i32();
      const auto& perm = r[4].i32();
      std::int64_t in_range = 0;
      for (std::int32_t b = 0; b < bins; ++b)
        in_range += counts[b];
      for (std::int64_t j = 0; j < in_range; ++j) {
        const std::int32_t i = perm[j];
        ASSERT_GE(i, 0);
        ASSERT_LT(i, n);
        const std::int32_t k = keys[i];
        EXPECT_GE(j, offsets[k]);
        EXPECT_LT(j, offsets[k] + counts[k]);
        if (j > offsets[k]) {
          EXPECT_LT(perm[j - 1], i) << "stable order within a key";
        }
      }
    }
}

TEST(CpuExecutor, CountingOpsTileCounts) {
  // 40000 keys make 10 histogram / scatter tiles and 10 select tiles of 4096: the multi-tile protocol ran.
  const Graph g = testing::counting_graph(40000, 64, 9);
  Session s(g, cpu_options(SyncMode::flags));
  for (const program::TaskDesc& t : s.program().tasks)
    if (program::is_counting_op(t.opcode)) {
      EXPECT_GT(t.num_tiles, 1u) << "opcode " << t.opcode;
    }
}

TEST(CpuExecutor, LargeScanUsesThreeLookbackLevels) {
  Graph g("big-scan");
  g.add_buffer("v", DType::f32, {300000}, InitUniform{-1, 1, 5});
  g.add_buffer("s", DType::f32, {300000});
  g.scan("scan", "v", "s", ScanFn::sum);
  TilePolicy tiny;
  tiny.scan_items_per_thread = 1; // 256-element tiles: 1172 tiles, three tree levels
  run_everywhere(g, 4, tiny);
}

// Multi-chunk scan tiles (the GPU's reduce / look-back / chunked-scan tile) on the CPU: same contract, every mode.
TEST(CpuExecutor, MultiChunkScanTiles) {
  Graph g("chunked-scan");
  g.add_buffer("v", DType::f32, {300001}, InitUniform{-1, 1, 8});
  g.add_buffer("k", DType::i32, {300001}, InitUniform{-100, 100, 9});
  g.add_buffer("s", DType::f32, {300001});
  g.add_buffer("m", DType::i32, {300001});
  g.scan("scan", "v", "s", ScanFn::sum);
  g.scan("maxscan", "k", "m", ScanFn::max, true);
  TilePolicy p;
  p.scan_items_per_thread = 1; // 256-element chunks
  p.waves = 1;
  p.scan_chunks_per_tile = 3; // 768-element tiles, a partial last one
  run_everywhere(g, 4, p);
}

TEST(CpuExecutor, RowsShapes) {
  TilePolicy p;
  p.set_row_tile_elements(5000);
  run_everywhere(every_op_graph(10, 7, 100001), 4, p);
  run_everywhere(every_op_graph(10, 100000, 7), 4, p);
}

TEST(CpuExecutor, ZeroLengthTasksWriteIdentities) {
  Graph g("empty");
  g.add_buffer("x", DType::f32, {8}, InitUniform{});
  g.add_buffer("s", DType::f32, {1});
  g.add_buffer("m", DType::f32, {1});
  g.add_buffer("a", DType::i32, {1});
  g.add_buffer("e", DType::f32, {0, 4}, InitConstant{1});
  g.add_buffer("e2", DType::f32, {0, 4});
  g.reduce("sum0", ViewSpec::range("x", 2, 0), "s", ReduceFn::sum);
  g.reduce("max0", ViewSpec::range("x", 2, 0), "m", ReduceFn::max);
  g.reduce("arg0", ViewSpec::range("x", 2, 0), "a", ReduceFn::argmax);
  g.softmax("sm0", "e", "e2");
  const auto out = run_everywhere(g, 2);
  EXPECT_EQ(out[1].f32()[0], 0.0f);
  EXPECT_EQ(out[2].f32()[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(out[3].i32()[0], -1);
}

TEST(CpuExecutor, InPlaceAndHazardsAreOrdered) {
  Graph g("hazards");
  g.add_buffer("x", DType::f32, {16, 64}, InitUniform{-2, 2, 3});
  g.add_buffer("r", DType::f32, {16});
  g.add_buffer("t", DType::f32, {1});
  g.reduce("before", "x", "r", ReduceFn::max, Axis::row);
  g.softmax("inplace", "x", "x"); // WAR with "before"
  g.scan("again", "x", "x", ScanFn::sum, false, Axis::row);
  g.reduce("after", "x", "t", ReduceFn::sum);
  run_everywhere(g, 5);
}

TEST(CpuExecutor, PartialWritesLeaveTheRestUntouched) {
  Graph g("partial-writes");
  g.add_buffer("x", DType::f32, {5000}, InitUniform{-1, 1, 8});
  g.add_buffer("y", DType::f32, {5000});
  g.add_buffer("m", DType::f32, {40, 50});
  g.add_buffer("s", DType::f32, {3});
  g.scan("odd", ViewSpec::range("x", 3, 4990), ViewSpec::range("y", 1, 4990), ScanFn::sum);
  g.softmax("rows", ViewSpec::block("x", 7, 20, 50), ViewSpec::block("m", 500, 20, 50));
  g.reduce("mid", ViewSpec::range("y", 17, 2001), ViewSpec::range("s", 1, 1), ReduceFn::sum);
  TilePolicy small;
  small.reduce_min_tile = 128;
  small.scan_items_per_thread = 1;
  run_everywhere(g, 3, small); // the check compares every element nobody writes with its initial bits
}

TEST(CpuExecutor, WatchdogTurnsALostSignalIntoAnErrorAndTheExecutorRecovers) {
  Graph g("lost");
  g.add_buffer("x", DType::f32, {64, 128}, InitUniform{});
  g.add_buffer("y", DType::f32, {64, 128});
  g.add_buffer("r", DType::f32, {64});
  g.softmax("producer", "x", "y");
  g.reduce("consumer", "y", "r", ReduceFn::sum, Axis::row);
  for (bool per_tile : {false, true}) {
    SessionOptions o = cpu_options(SyncMode::flags, 3);
    o.per_tile_deps = per_tile;
    o.exec.timeout_ns = 200'000'000ull;
    o.exec.fault_skip_signal_tile = 0; // the producer's first tile never signals
    Session s(g, o);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      s.run();
      FAIL() << "expected a DeviceError";
    } catch (const DeviceError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("watchdog"), std::string::npos) << msg;
      EXPECT_NE(msg.find("'consumer'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("'producer'"), std::string::npos) << msg;
      EXPECT_EQ(e.record().code, static_cast<std::uint32_t>(program::ErrorCode::watchdog_timeout));
    }
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
    // The executor reset itself: the same session runs correctly next.
    SessionOptions clean = o;
    clean.exec.fault_skip_signal_tile = program::kNoTile;
    Session again(g, clean);
    again.run();
    EXPECT_TRUE(again.check().passed);
  }
}

TEST(CpuExecutor, SameExecutorRunsAgainAfterAWatchdogError) {
  Graph g("lost2");
  g.add_buffer("x", DType::f32, {4096}, InitUniform{});
  g.add_buffer("y", DType::f32, {4096});
  g.add_buffer("s", DType::f32, {1});
  g.scan("a", "x", "y", ScanFn::sum);
  g.reduce("b", "y", "s", ReduceFn::sum);
  SessionOptions o = cpu_options(SyncMode::flags, 2);
  o.exec.timeout_ns = 100'000'000ull;
  Session s(g, o);
  ExecOptions bad = o.exec;
  bad.fault_skip_signal_tile = 0;
  EXPECT_THROW(s.executor().run(bad), DeviceError);
  s.run(); // epoch and counters were reset: no stale state
  EXPECT_TRUE(s.check().passed);
  s.run();
  EXPECT_TRUE(s.check().passed);
}

// One sum reduce of 100 elements, lowered for 2 workers, for the tests that corrupt the lowered program.
LoweredProgram one_reduce_program(Schedule schedule) {
  Graph g("corrupt");
  g.add_buffer("x", DType::f32, {100}, InitUniform{});
  g.add_buffer("s", DType::f32, {1});
  g.reduce("r", "x", "s", ReduceFn::sum);
  LoweringOptions lo;
  lo.grid_blocks = 2;
  lo.schedule = schedule;
  return lower(g, analyze(g), lo);
}

// The DeviceError a run of `p` ends with; empty (and a test failure) when it ends any other way.
std::optional<DeviceError> run_expecting_device_error(LoweredProgram p) {
  CpuExecutor ex(std::move(p));
  try {
    ex.run();
  } catch (const DeviceError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a DeviceError";
  return std::nullopt;
}

TEST(CpuExecutor, CorruptOpcodeIsAnErrorNotACrash) {
  LoweredProgram p = one_reduce_program(Schedule::dynamic);
  p.tasks[0].opcode = 99;
  const std::optional<DeviceError> e = run_expecting_device_error(std::move(p));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->record().code, static_cast<std::uint32_t>(program::ErrorCode::bad_opcode));
  EXPECT_NE(std::string(e->what()).find("unknown opcode 99"), std::string::npos) << e->what();
}

TEST(CpuExecutor, CorruptStaticListIsAnErrorNotACrash) {
  LoweredProgram p = one_reduce_program(Schedule::static_list);
  ASSERT_FALSE(p.block_tiles.empty());
  p.block_tiles[0] = 12345;
  const std::optional<DeviceError> e = run_expecting_device_error(std::move(p));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->record().code, static_cast<std::uint32_t>(program::ErrorCode::bad_descriptor));
  EXPECT_EQ(e->record().tile, 12345u);
}

// The descriptor checks both executors share (tests/common/bad_descriptors.hpp; the GPU suite runs the same list).
TEST(CpuExecutor, EveryBadDescriptorIsNamed) {
  for (const testing::BadDescriptor& bad : testing::bad_descriptors()) {
    const std::optional<DeviceError> e = run_expecting_device_error(bad.make(3, 256));
    ASSERT_TRUE(e.has_value()) << bad.name;
    EXPECT_EQ(e->record().code, static_cast<std::uint32_t>(program::ErrorCode::bad_descriptor)) << bad.name;
    EXPECT_EQ(e->record().detail, static_cast<std::uint32_t>(bad.field)) << bad.name;
    EXPECT_NE(std::string(e->what()).find(program::kDescriptorFieldNames[static_cast<std::uint32_t>(bad.field)]),
              std::string::npos)
        << bad.name << ": " << e->what();
  }
}

// The CPU checks every forwarding decision on every run (the lean megakernel trusts it): a tile wrongly marked as
// taking its input from its block's previous tile stops the run, naming the tile.
TEST(CpuExecutor, AWrongForwardingDecisionIsCaught) {
  Graph g("fw");
  g.add_buffer("x", DType::f32, {8, 128}, InitUniform{-1, 1, 5});
  g.add_buffer("y", DType::f32, {8, 128});
  g.add_buffer("w", DType::f32, {8, 128}, InitUniform{-1, 1, 6});
  g.add_buffer("z", DType::f32, {8, 128});
  g.softmax("a", "x", "y");
  g.softmax("b", "w", "z"); // reads w, not what a wrote
  LoweringOptions lo;
  lo.grid_blocks = 2;
  lo.schedule = Schedule::static_list;
  LoweredProgram p = lower(g, analyze(g), lo);
  ASSERT_FALSE(p.forwarded.empty());
  EXPECT_EQ(std::count(p.forwarded.begin(), p.forwarded.end(), 1), 0);
  // Mark b's tile that follows one of a's on its block.
  bool marked = false;
  for (std::uint32_t i = 1; i < p.block_tiles.size() && !marked; ++i)
    if (p.tiles[p.block_tiles[i]].task == 1 && p.tiles[p.block_tiles[i - 1]].task == 0 &&
        std::find(p.block_begin.begin(), p.block_begin.end(), i) == p.block_begin.end()) {
      p.forwarded[p.block_tiles[i]] = 1;
      marked = true;
    }
  ASSERT_TRUE(marked);
  const std::optional<DeviceError> e = run_expecting_device_error(std::move(p));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->record().code, static_cast<std::uint32_t>(program::ErrorCode::forward_mismatch));
  EXPECT_NE(std::string(e->what()).find("on-chip forwarding"), std::string::npos) << e->what();
}

// Row chains run with forwarding in every mode, and the CPU's check of each decision passes.
TEST(CpuExecutor, ForwardedRowChainsRunInEveryMode) {
  Graph g("chain");
  g.add_buffer("x0", DType::f32, {3, 300}, InitUniform{-3, 3, 8});
  for (int i = 1; i <= 10; ++i) {
    g.add_buffer("x" + std::to_string(i), DType::f32, {3, 300});
    const std::string in = "x" + std::to_string(i - 1), out = "x" + std::to_string(i);
    if (i % 2)
      g.softmax("op" + std::to_string(i), in, out, i % 3 == 0);
    else
      g.scan("op" + std::to_string(i), in, out, ScanFn::sum, i % 4 == 0, Axis::row);
  }
  for (SyncMode m : kAllSyncModes) {
    SessionOptions o = cpu_options(m, 3, Schedule::automatic);
    Session s(g, o);
    ASSERT_EQ(s.program().schedule, Schedule::static_list);
    EXPECT_GT(std::count(s.program().forwarded.begin(), s.program().forwarded.end(), 1), 0) << to_string(m);
    s.run();
    EXPECT_TRUE(s.check().passed) << to_string(m) << ": " << s.check().summary();
  }
}

// A softmax chain over 4 rows whose every step also feeds a whole-range sum and a row maximum.
Graph chain_with_sums() {
  Graph g("chain+sums");
  g.add_buffer("x0", DType::f32, {4, 1024}, InitUniform{-3, 3, 9});
  g.add_buffer("sums", DType::f32, {6});
  g.add_buffer("maxes", DType::f32, {6, 4});
  for (int i = 1; i <= 6; ++i) {
    const std::string in = "x" + std::to_string(i - 1), out = "x" + std::to_string(i);
    g.add_buffer(out, DType::f32, {4, 1024});
    g.softmax("op" + std::to_string(i), in, out);
    g.reduce("sum" + std::to_string(i), out, ViewSpec::range("sums", i - 1, 1), ReduceFn::sum);
    g.reduce("max" + std::to_string(i), out, ViewSpec::range("maxes", 4 * (i - 1), 4), ReduceFn::max, Axis::row);
  }
  return g;
}

// A tile that writes no whole row (a row reduction, a lean partial tile of a whole-range sum) leaves the block's
// forwarded row in place: the next row op on the block, and a partial tile over exactly that row, take it. The CPU's
// check of every such decision passes in every mode, and the decisions are made.
TEST(CpuExecutor, RowsForwardPastTilesThatWriteNoRow) {
  const Graph g = chain_with_sums();
  for (SyncMode m : kAllSyncModes) {
    SessionOptions o = cpu_options(m, 4, Schedule::automatic); // a block per row: one-row tiles
    o.sinks_last = false; // the sums and maxima between the chain's steps, as the graph orders them
    Session s(g, o);
    const LoweredProgram& p = s.program();
    ASSERT_EQ(p.schedule, Schedule::static_list);
    std::size_t partials = 0, past_reduces = 0;
    for (std::uint32_t b = 0; b + 1 < p.block_begin.size(); ++b)
      for (std::uint32_t i = p.block_begin[b] + 1; i < p.block_begin[b + 1]; ++i) {
        const std::uint32_t tile = p.block_tiles[i];
        if (!p.forwarded[tile])
          continue;
        const auto& task = p.tasks[p.tiles[tile].task];
        const auto& prev = p.tasks[p.tiles[p.block_tiles[i - 1]].task];
        partials += task.opcode == static_cast<std::uint32_t>(program::Opcode::reduce_all);
        past_reduces += task.opcode == static_cast<std::uint32_t>(program::Opcode::softmax_rows) &&
                        prev.opcode != static_cast<std::uint32_t>(program::Opcode::softmax_rows);
      }
    EXPECT_GT(partials, 0u) << to_string(m);
    EXPECT_GT(past_reduces, 0u) << to_string(m);
    s.run();
    EXPECT_TRUE(s.check().passed) << to_string(m) << ": " << s.check().summary();
  }
}

// Sink tiles placed last (LoweringOptions::sinks_last) or in graph order: the same bits in every mode.
TEST(CpuExecutor, SinksLastKeepsTheBits) {
  const Graph g = chain_with_sums();
  for (SyncMode m : kAllSyncModes) {
    SessionOptions o = cpu_options(m, 4, Schedule::automatic);
    Session last(g, o);
    o.sinks_last = false;
    Session in_order(g, o);
    last.run();
    in_order.run();
    EXPECT_TRUE(last.check().passed) << to_string(m) << ": " << last.check().summary();
    std::size_t which = 0;
    EXPECT_TRUE(bit_identical(last.results(), in_order.results(), &which)) << to_string(m) << " buffer " << which;
  }
}

// Softmax rows alternating with whole-range scans of 4 x 1024 floats (sum inclusive, max exclusive), and an
// exclusive i32 sum over 5000 elements (a short last tile): every scan runs as lean look-back tiles.
Graph chain_with_scans() {
  Graph g("chain+scans");
  g.add_buffer("c0", DType::f32, {4, 1024}, InitUniform{-3, 3, 5});
  for (int i = 1; i <= 4; ++i) {
    const std::string x = "x" + std::to_string(i), c = "c" + std::to_string(i);
    g.add_buffer(x, DType::f32, {4, 1024});
    g.add_buffer(c, DType::f32, {4, 1024});
    g.softmax("op" + std::to_string(i), "c" + std::to_string(i - 1), x);
    g.scan("scan" + std::to_string(i), x, c, i % 2 ? ScanFn::sum : ScanFn::max, i % 2 == 0);
  }
  g.add_buffer("k", DType::i32, {5000}, InitUniform{-50, 50, 6});
  g.add_buffer("ks", DType::i32, {5000});
  g.scan("iscan", "k", "ks", ScanFn::sum, true);
  return g;
}

// Whole-range scans beside lean rows, as lean look-back tiles: the float64 check passes, and every mode and schedule
// gives the same bits (the look-back's tree fixes the order of every fold). On static lists rows are forwarded into
// the scans and out of them (a block runs one row of every op), and the CPU's check of each such claim passes.
TEST(CpuExecutor, LeanLookbackScansKeepTheBitsInEveryMode) {
  const Graph g = chain_with_scans();
  std::vector<HostTensor> first;
  for (SyncMode m : kAllSyncModes)
    for (Schedule sched : {Schedule::automatic, Schedule::dynamic}) {
      Session s(g, cpu_options(m, 4, sched));
      const std::string config = s.describe();
      std::size_t scans = 0;
      for (const program::TaskDesc& t : s.program().tasks)
        scans += program::lean_scans(t, static_cast<int>(s.program().threads_per_block)) ? 1 : 0;
      EXPECT_EQ(scans, 5u) << config;
      const LoweredProgram& p = s.program();
      if (p.schedule == Schedule::static_list) {
        std::size_t into = 0, out_of = 0;
        const auto scan_tile = [&](std::uint32_t tile) {
          return p.tasks[p.tiles[tile].task].opcode == static_cast<std::uint32_t>(program::Opcode::scan_all);
        };
        for_each_forward_source(p, [&](std::uint32_t i, std::uint32_t source) {
          if (!p.forwarded[p.block_tiles[i]])
            return;
          into += scan_tile(p.block_tiles[i]) ? 1 : 0;
          out_of += scan_tile(p.block_tiles[source]) ? 1 : 0;
        });
        EXPECT_GT(into, 0u) << config;
        EXPECT_GT(out_of, 0u) << config;
      }
      s.run();
      ASSERT_TRUE(s.check().passed) << config << ": " << s.check().summary();
      if (first.empty())
        first = s.results();
      std::size_t which = 0;
      EXPECT_TRUE(bit_identical(first, s.results(), &which)) << config << " buffer " << which;
    }
}

TEST(CpuExecutor, RepeatedRunsNeedNoReset) {
  Graph g = every_op_graph(1000, 5, 50);
  Session s(g, cpu_options(SyncMode::flags, 4));
  for (int i = 0; i < 5; ++i) {
    s.run();
    ASSERT_TRUE(s.check().passed) << "run " << i;
  }
  for (SyncMode m : {SyncMode::barrier, SyncMode::grid_sync, SyncMode::sentinel}) {
    Session t(g, cpu_options(m, 3));
    for (int i = 0; i < 4; ++i) {
      t.run();
      ASSERT_TRUE(t.check().passed) << to_string(m) << " run " << i;
    }
  }
}

// Claim-ahead (dynamic schedule) takes a block's next ticket while its tile runs. A run must still hand out exactly
// tiles + workers tickets per counter, or the next run's epoch offset would skip or repeat tiles: alternate it on
// one executor and check every run's trace (each tile once, no dependency violated) and results.
TEST(CpuExecutor, ClaimAheadKeepsTheTicketCountAcrossRuns) {
  Graph g = every_op_graph(1000, 5, 50);
  for (SyncMode m : kAllSyncModes) {
    Session s(g, cpu_options(m, 5));
    for (int i = 0; i < 6; ++i) {
      ExecOptions e = s.options().exec;
      e.claim_ahead = i % 3 != 1;
      const RunResult r = s.run(e);
      ASSERT_EQ(testing::trace_violation(s.program(), r), "") << to_string(m) << " run " << i;
      ASSERT_TRUE(s.check().passed) << to_string(m) << " run " << i << ": " << s.check().summary();
    }
  }
}

TEST(CpuExecutor, SentinelKernelFill) {
  Graph g = every_op_graph(500, 6, 40);
  SessionOptions o = cpu_options(SyncMode::sentinel, 4);
  o.exec.sentinel_fill = SentinelFill::kernel;
  Session s(g, o);
  for (int i = 0; i < 3; ++i) {
    const RunResult r = s.run();
    EXPECT_TRUE(s.check().passed);
    EXPECT_EQ(r.barriers_per_block, 1u);
  }
}

} // namespace
} // namespace gridflow
