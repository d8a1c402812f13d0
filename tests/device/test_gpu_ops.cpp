// Every op on the GPU against the float64 references, at the edge sizes, in every sync mode; outputs poisoned
// before each run; results bit-identical across modes and across repeated runs.
#include "kernels/tile_shapes.hpp"
#include "tests/common/counting_graphs.hpp"
#include "tests/common/map_graphs.hpp"
#include "tests/device/gpu_fixture.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

#include <fmt/ranges.h>

namespace gridflow {
namespace {

using testing::gpu_options;
using testing::same_bits;

// Whole-range ops on f32 and i32 vectors of n elements.
Graph vector_ops(std::int64_t n, std::uint64_t seed) {
  Graph g("vector-ops");
  g.add_buffer("x", DType::f32, {n}, InitUniform{-1, 1, seed});
  g.add_buffer("k", DType::i32, {n}, InitUniform{-1000, 1000, seed + 1});
  for (const char* fn : {"sum", "max", "min", "argmax"}) {
    const ReduceFn f = *parse_reduce_fn(fn);
    g.add_buffer(std::string("r_") + fn, f == ReduceFn::argmax ? DType::i32 : DType::f32, {1});
    g.add_buffer(std::string("ri_") + fn, DType::i32, {1});
    g.reduce(std::string("reduce_") + fn, "x", std::string("r_") + fn, f);
    g.reduce(std::string("reducei_") + fn, "k", std::string("ri_") + fn, f);
  }
  for (const char* fn : {"sum", "max"})
    for (bool ex : {false, true}) {
      const std::string tag = std::string(fn) + (ex ? "_ex" : "_in");
      g.add_buffer("s_" + tag, DType::f32, {n});
      g.add_buffer("si_" + tag, DType::i32, {n});
      g.scan("scan_" + tag, "x", "s_" + tag, *parse_scan_fn(fn), ex);
      g.scan("scani_" + tag, "k", "si_" + tag, *parse_scan_fn(fn), ex);
    }
  return g;
}

// Row ops on rows x cols.
Graph row_ops(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Graph g("row-ops");
  g.add_buffer("m", DType::f32, {rows, cols}, InitUniform{-4, 4, seed});
  g.add_buffer("mi", DType::i32, {rows, cols}, InitUniform{-50, 50, seed + 1});
  for (const char* fn : {"sum", "max", "min", "argmax"}) {
    const ReduceFn f = *parse_reduce_fn(fn);
    g.add_buffer(std::string("rr_") + fn, f == ReduceFn::argmax ? DType::i32 : DType::f32, {rows});
    g.add_buffer(std::string("rri_") + fn, DType::i32, {rows});
    g.reduce(std::string("rowreduce_") + fn, "m", std::string("rr_") + fn, f, Axis::row);
    g.reduce(std::string("rowreducei_") + fn, "mi", std::string("rri_") + fn, f, Axis::row);
  }
  for (const char* fn : {"sum", "max"})
    for (bool ex : {false, true}) {
      const std::string tag = std::string(fn) + (ex ? "_ex" : "_in");
      g.add_buffer("sr_" + tag, DType::f32, {rows, cols});
      g.add_buffer("sri_" + tag, DType::i32, {rows, cols});
      g.scan("rowscan_" + tag, "m", "sr_" + tag, *parse_scan_fn(fn), ex, Axis::row);
      g.scan("rowscani_" + tag, "mi", "sri_" + tag, *parse_scan_fn(fn), ex, Axis::row);
    }
  g.add_buffer("sm", DType::f32, {rows, cols});
  g.add_buffer("lsm", DType::f32, {rows, cols});
  g.softmax("softmax", "m", "sm");
  g.softmax("logsoftmax", "m", "lsm", true);
  return g;
}

// Runs g in every mode; every run checked; all modes bit-identical.
void every_mode(const Graph& g, std::uint32_t threads = 256, const TilePolicy& tiles = {},
                std::uint32_t blocks_per_sm = 0) {
  std::vector<HostTensor> first;
  for (SyncMode mode : kAllSyncModes) {
    SessionOptions o = gpu_options(mode, threads, blocks_per_sm);
    o.tiles = tiles;
    Session s(g, o);
    s.run();
    const CheckReport c = s.check();
    EXPECT_TRUE(c.passed) << to_string(mode) << " threads " << threads << ": " << c.summary() << "\n" << c.details();
    if (first.empty()) {
      first = s.results();
    } else {
      std::string which;
      EXPECT_TRUE(same_bits(first, s.results(), &which))
          << "buffer " << which << " differs in mode " << to_string(mode);
    }
  }
}

class GpuOps : public testing::GpuTest {};

TEST_F(GpuOps, VectorEdgeSizes) {
  for (std::int64_t n : {1, 31, 32, 33, 1023, 1025, 4097, 65536 + 3, 1000003}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    every_mode(vector_ops(n, static_cast<std::uint64_t>(n)));
  }
}

TEST_F(GpuOps, VectorTwoToThe26) {
  every_mode(vector_ops(std::int64_t{1} << 26, 26));
}

// For an exact (i32 sum) whole-range scan whose bits moved from `good` to `bad`: the tile where they first differ, the
// difference there, and the tile before it by ring stages (16 KB: 4096 elements) of its input `in`. A carry that is
// wrong from one tile's start to the end is the previous tile's published aggregate; a difference equal to one
// stage's sum, or to the difference of two stages', names what that tile's fold read instead of its input.
std::string diagnose_exact_scan(const LoweredProgram& p, const std::string& task, const HostTensor& in,
                                const HostTensor& good, const HostTensor& bad) {
  const auto it = std::find(p.task_names.begin(), p.task_names.end(), task);
  if (it == p.task_names.end())
    return "task not found";
  const program::TaskDesc& d = p.tasks[static_cast<std::size_t>(it - p.task_names.begin())];
  const auto g = good.i32(), b = bad.i32(), x = in.i32();
  std::size_t first = 0;
  while (first < g.size() && g[first] == b[first])
    ++first;
  if (first == g.size())
    return "no difference";
  const long long tile = static_cast<long long>(first) / d.tile_size;
  const long long delta = static_cast<long long>(b[first]) - g[first];
  std::string out = fmt::format("tile_size {}, first difference at element {} = tile {} + {}, bad - good = {}",
                                d.tile_size, first, tile, static_cast<long long>(first) - tile * d.tile_size, delta);
  if (tile == 0)
    return out;
  constexpr long long kStage = 4096;
  std::vector<long long> sums;
  for (long long e = (tile - 1) * d.tile_size; e < tile * d.tile_size; e += kStage) {
    long long acc = 0;
    for (long long i = e; i < e + kStage && i < static_cast<long long>(x.size()); ++i)
      acc += x[static_cast<std::size_t>(i)];
    sums.push_back(acc);
  }
  out += fmt::format("; tile {} stage sums [{}]", tile - 1, fmt::join(sums, ", "));
  for (std::size_t i = 0; i < sums.size(); ++i) {
    if (sums[i] == delta || sums[i] == -delta)
      out += fmt::format("; = {}stage {}", sums[i] == delta ? "+" : "-", i);
    for (std::size_t j = 0; j < sums.size(); ++j)
      if (i != j && sums[i] - sums[j] == delta)
        out += fmt::format("; = stage {} read in place of stage {}", i, j);
  }
  return out;
}

// The whole-range scans of VectorTwoToThe26, run again and again on one session per mode (the state arena carried
// from run to run, epochs advancing): every run bit for bit the mode's first, and every mode's first the grid-sync
// one's. The f32 sums are the scans whose bits depend on the association (the look-back tree, the chunk carries);
// the i32 sums are exact, so a mismatch there is lost or stale data rather than a different order.
// GRIDFLOW_STRESS_RUNS / 25 runs per mode (at least 2).
TEST_F(GpuOps, WholeRangeScansRepeatBitForBitInEveryMode) {
  const Graph g = vector_ops(std::int64_t{1} << 26, 26);
  const std::vector<std::string> watched = {"s_sum_in", "s_sum_ex", "si_sum_in", "si_sum_ex"};
  const int runs = std::max(2, testing::stress_runs(50) / 25);
  std::vector<HostTensor> reference;
  for (SyncMode mode : kAllSyncModes) {
    Session s(g, gpu_options(mode));
    s.run();
    ASSERT_TRUE(s.check().passed) << to_string(mode) << ": " << s.check().summary();
    std::vector<HostTensor> first;
    for (const std::string& name : watched)
      first.push_back(s.download(name));
    if (reference.empty())
      reference = first;
    for (std::size_t k = 0; k < watched.size(); ++k)
      EXPECT_TRUE(bit_identical(reference[k], first[k]))
          << to_string(mode) << " " << watched[k]
          << " against grid_sync: " << testing::describe_difference(reference[k], first[k]);
    int failures = 0;
    for (int run = 1; run < runs; ++run) {
      s.time(0, 1); // over the same inputs; outputs overwritten (sentinel mode: filled again first)
      for (std::size_t k = 0; k < watched.size(); ++k) {
        const HostTensor now = s.download(watched[k]);
        if (bit_identical(first[k], now))
          continue;
        ADD_FAILURE() << to_string(mode) << " run " << run << " " << watched[k] << ": "
                      << testing::describe_difference(first[k], now) << "\n"
                      << (watched[k][1] == 'i' ? diagnose_exact_scan(s.program(), "scan" + watched[k].substr(1),
                                                                     s.download("k"), first[k], now)
                                               : std::string());
        ++failures;
      }
      if (failures >= 4)
        break; // enough to see the pattern
    }
    std::printf("[ STRESS   ] %s: %d runs, %d with moved bits\n", std::string(to_string(mode)).c_str(), runs, failures);
  }
}

// Streamed reads (bulk copies into the shared ring) and multi-chunk scan tiles: views starting off a 16-byte
// boundary (head elements) and on one, lengths that leave a partial last stage, chunk and tile; 3 chunks per tile
// (the tile stays in the ring and its chunks are scanned from there) and 9 (copied into the ring again); the
// sentinel run reads every element polled instead, so "all modes bit-identical" also checks that a streamed fold
// equals a register-loaded one, and a scan read through the ring equals one staged element by element.
TEST_F(GpuOps, StreamedReadsAndMultiChunkScanTiles) {
  for (std::uint32_t threads : {256u, 512u}) {
    for (std::uint32_t chunks : {3u, 9u}) {
      TilePolicy tiles;
      tiles.waves = 1;
      tiles.scan_chunks_per_tile = chunks;
      // The second n leaves a last chunk of 2 elements at both block sizes (4997122 = 610 * 8192 + 2): no whole
      // 16-byte group, so its ring slot completes with nothing copied.
      for (std::int64_t n : {std::int64_t{3} * 16 * threads * 132 * 2 + 12345, std::int64_t{4997122}}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " chunks " + std::to_string(chunks) + " n " +
                     std::to_string(n));
        Graph g("streamed");
        g.add_buffer("x", DType::f32, {n + 3}, InitUniform{-1, 1, static_cast<std::uint64_t>(n)});
        g.add_buffer("k", DType::i32, {n + 3}, InitUniform{-1000, 1000, static_cast<std::uint64_t>(n) + 1});
        for (const char* fn : {"sum", "argmax"}) {
          const ReduceFn f = *parse_reduce_fn(fn);
          g.add_buffer(std::string("r_") + fn, f == ReduceFn::argmax ? DType::i32 : DType::f32, {1});
          g.reduce(std::string("reduce_") + fn, ViewSpec::range("x", 3, n), std::string("r_") + fn, f);
        }
        for (const char* fn : {"sum", "max"})
          for (bool ex : {false, true}) {
            const std::string tag = std::string(fn) + (ex ? "_ex" : "_in");
            g.add_buffer("s_" + tag, DType::f32, {n});
            g.add_buffer("si_" + tag, DType::i32, {n});
            g.scan("scan_" + tag, ViewSpec::range("x", 1, n), "s_" + tag, *parse_scan_fn(fn), ex);
            g.scan("scani_" + tag, ViewSpec::range("k", 2, n), "si_" + tag, *parse_scan_fn(fn), ex);
            // 16-byte aligned inputs (3 chunks: the tile stays in the ring after its reduce and its chunks are
            // scanned from there; 9: bulk-copied into the ring again, chunk by chunk); one output off 16 bytes.
            g.add_buffer("sa_" + tag, DType::f32, {n});
            g.add_buffer("sai_" + tag, DType::i32, {n + 1});
            g.scan("scan_aligned_" + tag, ViewSpec::range("x", 0, n), "sa_" + tag, *parse_scan_fn(fn), ex);
            g.scan("scani_aligned_" + tag, ViewSpec::range("k", 0, n), ViewSpec::range("sai_" + tag, 1, n),
                   *parse_scan_fn(fn), ex);
          }
        g.add_buffer("m", DType::f32, {5, 65536 + 7}, InitUniform{-4, 4, 77});
        g.add_buffer("sm", DType::f32, {5, 65536 + 7});
        g.add_buffer("rr", DType::f32, {5});
        g.softmax("softmax_long_rows", "m", "sm");
        g.reduce("rowreduce_long_rows", "m", "rr", ReduceFn::sum, Axis::row);
        every_mode(g, threads, tiles);
      }
    }
  }
}

// Streamed reads at sizes the sanitizers can afford (scripts/gpu-check.sh runs this under memcheck, racecheck and
// synccheck): a misaligned view several ring stages long, and block-per-row softmax rows of ~10 stages. (Multi-chunk
// scan tiles need about a million elements per grid of blocks: StreamedReadsAndMultiChunkScanTiles.)
TEST_F(GpuOps, StreamedReadsSmall) {
  const std::int64_t n = 3 * 4096 * 2 + 77;
  Graph g("streamed-small");
  g.add_buffer("x", DType::f32, {n + 1}, InitUniform{-1, 1, 42});
  g.add_buffer("r", DType::f32, {1});
  g.add_buffer("a", DType::i32, {1});
  g.add_buffer("m", DType::f32, {2, 20000 + 3}, InitUniform{-4, 4, 43});
  g.add_buffer("sm", DType::f32, {2, 20000 + 3});
  g.add_buffer("m2", DType::f32, {3, 12001}, InitUniform{-4, 4, 44});
  g.add_buffer("sm2", DType::f32, {3, 12001});
  g.reduce("reduce", ViewSpec::range("x", 1, n), "r", ReduceFn::sum);
  g.reduce("argmax", ViewSpec::range("x", 1, n), "a", ReduceFn::argmax);
  g.softmax("softmax", "m", "sm");    // 5 stages at 256 threads: 4 left in the ring, 1 read again
  g.softmax("softmax2", "m2", "sm2"); // 3 stages: the whole row left in the ring
  every_mode(g);
}

// Softmax and log-softmax of a rows x cols view starting `offset` elements into its buffer (inputs in [-range,
// range)), and the tile policy that gives exactly `rows_per_tile` rows per tile when no grid splits finer.
Graph softmax_rows_graph(const std::string& name, std::int64_t rows, std::int64_t cols, std::int64_t offset,
                         double range) {
  Graph g(name);
  g.add_buffer("m", DType::f32, {rows * cols + offset}, InitUniform{-range, range, static_cast<std::uint64_t>(cols)});
  g.add_buffer("sm", DType::f32, {rows, cols});
  g.add_buffer("lsm", DType::f32, {rows, cols});
  g.softmax("softmax", ViewSpec::block("m", offset, rows, cols), "sm");
  g.softmax("logsoftmax", ViewSpec::block("m", offset, rows, cols), "lsm", true);
  return g;
}
TilePolicy rows_per_tile_policy(std::int64_t rows_per_tile, std::int64_t cols) {
  TilePolicy tiles;
  tiles.waves = 1;
  tiles.set_row_tile_elements(rows_per_tile * cols);
  return tiles;
}

// Short softmax rows spread over groups of warps (kernels::short_row_group_warps): tiles of exactly `rows_per_tile`
// rows (the last one partial) so groups of 2, 4 and 8 warps, several passes of one-row groups and the warp-per-row
// path are all taken; odd column counts (scalar tails), a view starting off a 16-byte boundary (scalar accesses) and
// aligned rows of exactly 128 g elements (16-byte loads and stores).
TEST_F(GpuOps, ShortSoftmaxRowsAcrossWarps) {
  struct Shape {
    std::int64_t rows_per_tile, cols;
  };
  for (const Shape sh : {Shape{1, 1024}, Shape{1, 1000}, Shape{2, 1023}, Shape{3, 129}, Shape{1, 300}, Shape{5, 513},
                         Shape{8, 64}, Shape{1, 5}, Shape{2, 256}}) {
    for (const std::int64_t offset : {0, 1}) {
      SCOPED_TRACE("rows per tile " + std::to_string(sh.rows_per_tile) + " cols " + std::to_string(sh.cols) +
                   " offset " + std::to_string(offset));
      const std::int64_t rows = 2048 * sh.rows_per_tile + 5; // enough rows that no grid up to 2048 blocks splits finer
      every_mode(softmax_rows_graph("short-softmax", rows, sh.cols, offset, 6), 256,
                 rows_per_tile_policy(sh.rows_per_tile, sh.cols));
    }
  }
}

// The same at a size the sanitizers can afford (racecheck covers the groups' shared partials): one-row tiles,
// groups of 8 and of 2 warps.
TEST_F(GpuOps, ShortSoftmaxRowsSmall) {
  for (const std::int64_t cols : {1000, 129}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    Graph g("short-softmax-small");
    g.add_buffer("m", DType::f32, {40 * cols + 1}, InitUniform{-6, 6, 3});
    g.add_buffer("sm", DType::f32, {40, cols});
    g.softmax("softmax", ViewSpec::block("m", 1, 40, cols), "sm");
    every_mode(g);
  }
}

// Warps with several short rows each read them from the ring, staged by the copy engine while they work on earlier
// rows (kernels::for_each_warp_row_staged): one block per SM, tiles of 2 to 8 rows per warp, the last tile partial;
// every block size's slot (the ring is sized to the tile, at most 40 KB at 128 threads, 64 KB at 256, 128 KB at 512
// and 1024) with 1 to 4 row buffers per warp (3 at 128 threads and 800 columns: buffers not a power of two); rows of
// one 16-byte group; views 16 bytes into their buffer (staged too) and off a 16-byte boundary, and column counts not
// a multiple of 4 (those two take direct loads). every_mode compares the sentinel runs, which never stage, bit for
// bit.
TEST_F(GpuOps, ShortSoftmaxRowsStagedPerWarp) {
  struct Shape {
    std::uint32_t threads;
    std::int64_t rows_per_tile, cols;
  };
  for (const Shape sh : {Shape{256, 16, 1024}, Shape{256, 23, 1000}, Shape{256, 64, 4}, Shape{256, 17, 1023},
                         Shape{128, 13, 800}, Shape{512, 37, 1024}, Shape{1024, 66, 256}}) {
    for (const std::int64_t offset : {4, 1}) {
      SCOPED_TRACE("threads " + std::to_string(sh.threads) + " rows per tile " + std::to_string(sh.rows_per_tile) +
                   " cols " + std::to_string(sh.cols) + " offset " + std::to_string(offset));
      const std::int64_t rows = 140 * sh.rows_per_tile + 5; // at one block per SM no grid splits finer
      every_mode(softmax_rows_graph("staged-softmax", rows, sh.cols, offset, 6), sh.threads,
                 rows_per_tile_policy(sh.rows_per_tile, sh.cols), 1);
    }
  }
}

// The same at a size the sanitizers can afford (memcheck covers the bulk copies' ranges, racecheck the buffers'
// reuse): one block per SM, tiles of 19 rows (2 or 3 per warp, 3 buffers each in a 24 KB ring) of 256 columns, 16
// bytes into the buffer.
TEST_F(GpuOps, ShortSoftmaxRowsStagedSmall) {
  every_mode(softmax_rows_graph("staged-softmax-small", 132 * 19 + 7, 256, 4, 6), 256, rows_per_tile_policy(19, 256),
             1);
}

// Medium softmax rows held in registers by the whole block (kernels::block_softmax_register_rows): Q quads per
// thread per row and 8 / Q rows per pass, so tiles of `rows_per_tile` rows leave full and partial passes; column
// counts that fill the quads exactly, leave partial quads, or are odd (scalar accesses), a view off a 16-byte
// boundary (scalar accesses), and every Q at 128, 256 and 512 threads.
TEST_F(GpuOps, MediumSoftmaxRowsInRegisters) {
  struct Shape {
    std::uint32_t threads;
    std::int64_t rows_per_tile, cols;
  };
  for (const Shape sh :
       {Shape{256, 1, 1025}, Shape{256, 5, 2048}, Shape{256, 3, 3000}, Shape{256, 2, 4096}, Shape{256, 1, 4097},
        Shape{256, 1, 8192}, Shape{128, 2, 3000}, Shape{128, 3, 1500}, Shape{512, 3, 1500}, Shape{512, 1, 16384}}) {
    for (const std::int64_t offset : {0, 1}) {
      SCOPED_TRACE("threads " + std::to_string(sh.threads) + " rows per tile " + std::to_string(sh.rows_per_tile) +
                   " cols " + std::to_string(sh.cols) + " offset " + std::to_string(offset));
      const std::int64_t rows = 600 * sh.rows_per_tile + 5; // no grid of the defaults (at most 528 blocks) splits finer
      every_mode(softmax_rows_graph("medium-softmax", rows, sh.cols, offset, 8), sh.threads,
                 rows_per_tile_policy(sh.rows_per_tile, sh.cols));
    }
  }
}

// The same at a size the sanitizers can afford (racecheck covers the warps' shared partials, two sets used in
// turn, and the ring slots of staged passes): one block per SM, 2 quads per thread and 4 rows per pass; tiles of 9
// rows of 1025 columns (scalar accesses; passes of 4, 4 and 1 rows) and of 8 rows of 1028 (16-byte accesses, each
// pass's rows staged through the ring; passes of 4 and 4).
TEST_F(GpuOps, MediumSoftmaxRowsSmall) {
  const std::int64_t rows = 132 * 9;
  Graph g("medium-softmax-small");
  for (const std::int64_t cols : {1025, 1028}) {
    const std::string tag = std::to_string(cols);
    g.add_buffer("m" + tag, DType::f32, {rows, cols}, InitUniform{-6, 6, static_cast<std::uint64_t>(cols)});
    g.add_buffer("sm" + tag, DType::f32, {rows, cols});
    g.softmax("softmax" + tag, "m" + tag, "sm" + tag);
  }
  every_mode(g, 256, rows_per_tile_policy(9, 1025), 1);
}

// Long softmax rows (block per row, two passes): the write pass starts on the stages the first pass left in the
// ring and reads the rest again (kernels::for_each_owned_streamed_twice). At each block size (the ring sized to the
// row, at most 40 KB at 128 threads, 64 KB at 256, 128 KB at 512) rows that fit the ring or overflow it, with a
// partial last stage or not, in views off a 16-byte boundary (head and tail elements read directly) or not.
TEST_F(GpuOps, LongSoftmaxRowsResidentInRing) {
  for (const std::uint32_t threads : {128u, 256u, 512u})
    for (const std::int64_t cols : {8193, 10240, 16384 + 5, 24000, 32768, 40000, 65543})
      for (const std::int64_t offset : {0, 3}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " cols " + std::to_string(cols) + " offset " +
                     std::to_string(offset));
        every_mode(softmax_rows_graph("long-softmax", 5, cols, offset, 8), threads);
      }
}

// The copy ring each launch gets is sized by the program (gpu::copy_ring_bytes): none when no tile streams (one-row
// tiles of short rows, rows held in registers), enough for the longest streamed range otherwise (several 1024-float
// rows per warp: the tile, 64 rows by the default short_softmax_tile_elements; long rows: the row), at most the block
// size's maximum (64 KB at 256 threads, 128 KB at 512); runs are correct at each.
TEST_F(GpuOps, CopyRingSizedPerProgram) {
  struct Case {
    std::int64_t rows, cols;
    std::uint32_t threads;
    const char* ring;
  };
  for (const Case k : {Case{3, 1024, 256, " 0 KB copy ring"}, Case{3, 4096, 256, " 0 KB copy ring"},
                       Case{20000, 1024, 256, " 64 KB copy ring"}, Case{3, 12000, 256, " 48 KB copy ring"},
                       Case{3, 1 << 20, 256, " 64 KB copy ring"}, Case{3, 1 << 20, 512, " 128 KB copy ring"}}) {
    Graph g("ring");
    g.add_buffer("m", DType::f32, {k.rows, k.cols}, InitUniform{-4, 4, 9});
    g.add_buffer("sm", DType::f32, {k.rows, k.cols});
    g.softmax("softmax", "m", "sm");
    Session s(g, gpu_options(SyncMode::flags, k.threads, 0));
    EXPECT_NE(s.describe().find(k.ring), std::string::npos) << s.describe();
    s.run();
    EXPECT_TRUE(s.check().passed) << s.check().summary();
  }
}

TEST_F(GpuOps, ZeroLength) {
  Graph g("zero");
  g.add_buffer("x", DType::f32, {4}, InitUniform{});
  g.add_buffer("s", DType::f32, {1});
  g.add_buffer("a", DType::i32, {1});
  g.add_buffer("e", DType::f32, {0, 3}, InitConstant{1});
  g.add_buffer("e2", DType::f32, {0, 3});
  g.add_buffer("z", DType::f32, {0});
  g.reduce("sum0", ViewSpec::range("x", 1, 0), "s", ReduceFn::sum);
  g.reduce("arg0", ViewSpec::range("x", 1, 0), "a", ReduceFn::argmax);
  g.softmax("sm0", "e", "e2");
  g.scan("scan0", ViewSpec::range("x", 2, 0), "z", ScanFn::sum);
  every_mode(g);
}

TEST_F(GpuOps, RowShapes) {
  every_mode(row_ops(1, 1000003, 1)); // lowers to whole-range ops
  every_mode(row_ops(7, 100001, 2));  // block per row
  every_mode(row_ops(100000, 7, 3));  // warp per row
  every_mode(row_ops(33, 1024, 4));   // warp softmax at its widest
  every_mode(row_ops(9, 4096, 5));
  every_mode(row_ops(3, 32768, 6));
}

TEST_F(GpuOps, EveryBlockSize) {
  for (std::uint32_t threads : {128u, 512u, 1024u}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    every_mode(vector_ops(300007, 9), threads);
    every_mode(row_ops(40, 3000, 10), threads);
  }
}

TEST_F(GpuOps, ViewsAndOffsets) {
  Graph g("views");
  g.add_buffer("x", DType::f32, {100000}, InitUniform{-3, 3, 77});
  g.add_buffer("y", DType::f32, {100000});
  g.add_buffer("r", DType::f32, {1});
  g.add_buffer("rows", DType::f32, {50});
  g.scan("odd", ViewSpec::range("x", 3, 99990), ViewSpec::range("y", 1, 99990), ScanFn::sum); // misaligned
  g.reduce("mid", ViewSpec::range("y", 17, 5001), "r", ReduceFn::sum);
  g.reduce("block", ViewSpec::block("x", 5, 50, 1999), "rows", ReduceFn::max, Axis::row);
  every_mode(g);
}

TEST_F(GpuOps, BitIdenticalOverTenRunsWithPoisonedOutputs) {
  const Graph g = vector_ops(1000003, 42);
  for (SyncMode mode : kAllSyncModes) {
    Session s(g, gpu_options(mode));
    s.run();
    ASSERT_TRUE(s.check().passed);
    const std::vector<HostTensor> first = s.results();
    for (int i = 1; i < 10; ++i) {
      s.run(); // re-uploads inputs and re-poisons every output
      std::string which;
      ASSERT_TRUE(same_bits(first, s.results(), &which)) << to_string(mode) << " run " << i << " buffer " << which;
    }
  }
}

TEST_F(GpuOps, StaticScheduleMatchesDynamic) {
  const Graph g = row_ops(64, 1024, 12);
  SessionOptions a = gpu_options(SyncMode::flags);
  SessionOptions b = a;
  b.schedule = Schedule::static_list;
  Session sa(g, a), sb(g, b);
  sa.run();
  sb.run();
  EXPECT_TRUE(sb.check().passed);
  EXPECT_TRUE(same_bits(sa.results(), sb.results()));
}

TEST_F(GpuOps, SentinelKernelFillMatchesSubmitFill) {
  const Graph g = row_ops(200, 500, 13);
  SessionOptions a = gpu_options(SyncMode::sentinel);
  SessionOptions b = a;
  b.exec.sentinel_fill = SentinelFill::kernel;
  Session sa(g, a), sb(g, b);
  for (int i = 0; i < 3; ++i) {
    sa.run();
    sb.run();
    EXPECT_TRUE(sb.check().passed);
    EXPECT_TRUE(same_bits(sa.results(), sb.results()));
  }
}

// The counting ops (histogram, scatter, select): exact, so every mode, every block size and the CPU backend
// agree bit for bit; sizes cover one tile, many tiles, zero elements; bins up to each op's limit.
TEST_F(GpuOps, CountingOpsEdgeSizesEveryMode) {
  for (std::int64_t n : {0LL, 1LL, 31LL, 33LL, 1023LL, 4097LL, 65539LL, 1000003LL})
    for (std::int32_t bins : {1, 64, 1024}) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " bins " << bins);
      every_mode(testing::counting_graph(n, bins, 300 + static_cast<std::uint64_t>(n) + bins));
    }
}

TEST_F(GpuOps, CountingOpsEveryBlockSizeMatchesTheCpu) {
  const Graph g = testing::counting_graph(200003, 256, 17);
  SessionOptions cpu;
  cpu.backend = Backend::cpu;
  Session ref(g, cpu);
  ref.run();
  ASSERT_TRUE(ref.check().passed) << ref.check().summary();
  for (std::uint32_t threads : {128u, 256u, 512u, 1024u}) {
    every_mode(g, threads);
    Session s(g, gpu_options(SyncMode::flags, threads));
    s.run();
    std::string which;
    EXPECT_TRUE(same_bits(ref.results(), s.results(), &which)) << "threads " << threads << " buffer " << which;
  }
}

// Select tiles of several chunks (waves = 1 leaves the task chunks to spare, more per block than the ring holds): the
// tile's count streamed through the ring, then its chunks compacted from there (16-byte aligned views) or read again
// from global memory (a view off 16 bytes), at each block size's ring; f32 and i32, a last chunk of a few elements.
TEST_F(GpuOps, SelectTilesOfSeveralChunksEveryMode) {
  TilePolicy tiles;
  tiles.waves = 1;
  for (std::uint32_t threads : {128u, 256u, 1024u}) {
    const std::int64_t chunk = std::int64_t{threads} * kernels::scan_items_for(static_cast<int>(threads));
    const std::int64_t n = 5 * chunk * 132 * 2 + 6;
    SCOPED_TRACE("threads " + std::to_string(threads) + " n " + std::to_string(n));
    Graph g("select-chunks");
    g.add_buffer("x", DType::f32, {n + 1}, InitUniform{-1, 1, static_cast<std::uint64_t>(n)});
    g.add_buffer("k", DType::i32, {n}, InitUniform{-50, 50, static_cast<std::uint64_t>(n) + 1});
    for (const char* out : {"kept", "kept_off", "hits"}) {
      g.add_buffer(out, std::string(out) == "hits" ? DType::i32 : DType::f32, {n});
      g.add_buffer(std::string(out) + "_n", DType::i32, {1});
    }
    g.select("aligned", ViewSpec::range("x", 0, n), "kept", "kept_n", CmpFn::gt, 0.25);
    g.select("off16", ViewSpec::range("x", 1, n), "kept_off", "kept_off_n", CmpFn::le, -0.5);
    g.select("keys", "k", "hits", "hits_n", CmpFn::ne, 7);
    every_mode(g, threads, tiles);
  }
}

// The smallest select with tiles of several chunks at 256 threads (two per tile at one block per SM), for the
// sanitizers: the ring-resident and the re-read chunks.
TEST_F(GpuOps, SelectTilesOfSeveralChunksSmall) {
  TilePolicy tiles;
  tiles.waves = 1;
  const std::int64_t n = 2 * 4096 * 132 - 1000;
  Graph g("select-chunks-small");
  g.add_buffer("x", DType::f32, {n + 1}, InitUniform{-1, 1, 91});
  g.add_buffer("kept", DType::f32, {n});
  g.add_buffer("kept_n", DType::i32, {1});
  g.add_buffer("kept_off", DType::f32, {n});
  g.add_buffer("kept_off_n", DType::i32, {1});
  g.select("aligned", ViewSpec::range("x", 0, n), "kept", "kept_n", CmpFn::gt, 0.0);
  g.select("off16", ViewSpec::range("x", 1, n), "kept_off", "kept_off_n", CmpFn::lt, 0.5);
  every_mode(g, 256, tiles, 1);
}

// Small enough for the sanitizers (scripts/gpu-check.sh runs it under memcheck, racecheck and synccheck).
TEST_F(GpuOps, CountingOpsSmall) {
  every_mode(testing::counting_graph(20000, 64, 23));
}

TEST_F(GpuOps, HistogramOfSkewedKeysAndMaxBins) {
  // All keys equal (one warp-aggregated add per chunk), then 4096 bins over 2^22 keys.
  Graph g("skewed");
  const std::int64_t n = 1 << 22;
  g.add_buffer("same", DType::i32, {n}, InitConstant{5});
  g.add_buffer("c8", DType::i32, {8});
  g.histogram("same_keys", "same", "c8");
  g.add_buffer("wide", DType::i32, {n}, InitUniform{-3, 4100, 5});
  g.add_buffer("c4096", DType::i32, {4096});
  g.histogram("wide_keys", "wide", "c4096");
  every_mode(g);
}

// The map: every function at the edge sizes in every mode (the float64 reference within its tolerance, modes bit
// for bit); the exactly rounded functions (identity, affine, relu, clamp) bit for bit as on the CPU backend, both
// through 16-byte groups and element by element (the unaligned view).
TEST_F(GpuOps, MapEveryFunctionEdgeSizesEveryModeAndAsOnTheCpu) {
  for (std::int64_t n : {0LL, 1LL, 3LL, 4LL, 5LL, 1023LL, 4097LL, 1000003LL}) {
    SCOPED_TRACE(::testing::Message() << "n " << n);
    const Graph g = testing::map_graph(n, 70 + static_cast<std::uint64_t>(n));
    every_mode(g);
    SessionOptions cpu;
    cpu.backend = Backend::cpu;
    Session ref(g, cpu), gpu(g, gpu_options(SyncMode::sentinel));
    ref.run();
    gpu.run();
    for (std::size_t b = 0; b < g.buffers().size(); ++b) {
      const std::string& name = g.buffers()[b].name;
      if (name == "y_identity" || name == "y_affine" || name == "y_relu" || name == "y_clamp" ||
          name == "y_unaligned") {
        EXPECT_TRUE(bit_identical(ref.results()[b], gpu.results()[b])) << name;
      }
    }
  }
}

// The IEEE cases: NaN stays NaN (the GPU's is the canonical one, the CPU's the input's payload), the rest bit for bit
// as on the CPU for the exactly rounded functions; exp and tanh within the reference's tolerance (check()).
TEST_F(GpuOps, MapSpecialValuesAsOnTheCpu) {
  const Graph g = testing::map_special_values_graph();
  SessionOptions cpu;
  cpu.backend = Backend::cpu;
  Session ref(g, cpu), gpu(g, gpu_options(SyncMode::flags));
  ref.run();
  gpu.run();
  EXPECT_TRUE(gpu.check().passed) << gpu.check().details();
  for (std::size_t b = 0; b < g.buffers().size(); ++b) {
    const std::string& name = g.buffers()[b].name;
    if (name == "y_exp" || name == "y_tanh")
      continue;
    const auto want = ref.results()[b].f32(), got = gpu.results()[b].f32();
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE((std::isnan(want[i]) && std::isnan(got[i])) ||
                  std::bit_cast<std::uint32_t>(want[i]) == std::bit_cast<std::uint32_t>(got[i]))
          << name << "[" << i << "]: " << got[i] << ", CPU " << want[i];
  }
}

} // namespace
} // namespace gridflow
