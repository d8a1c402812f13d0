// gridflow_bench_ops: large single ops through the megakernel against CUB, as bandwidth (bytes read + written).
// Every gridflow configuration is checked against the float64 references before it is timed.
#include "bench/bench_common.hpp"
#include "bench/cub_baselines.hpp"
#include "bench/lean_compare.hpp"
#include "runtime/device.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

using namespace gridflow;
using namespace gridflow::bench;

namespace {

struct Timed {
  double ms;
  bool checked;
  std::string check;
};

// Every measured configuration: the GPU backend in flags mode.
SessionOptions gpu_options(std::uint32_t threads, std::uint32_t bps, const TilePolicy& tiles = {}) {
  SessionOptions o;
  o.tiles = tiles;
  o.backend = Backend::gpu;
  o.mode = SyncMode::flags;
  o.threads_per_block = threads;
  o.blocks_per_sm = bps;
  return o;
}

// The session's check against the float64 references; throws before anything is timed when it fails.
std::string checked(Session& s) {
  const CheckReport c = s.check();
  if (!c.passed)
    throw std::runtime_error("check failed before timing: " + c.summary());
  return c.summary();
}

Timed time_graph(const Graph& g, std::uint32_t threads, std::uint32_t bps, int reps, bool check,
                 const TilePolicy& tiles = {}) {
  Session s(g, gpu_options(threads, bps, tiles));
  s.run();
  Timed t{0, check, check ? checked(s) : ""};
  t.ms = median_run_ms(s, reps);
  return t;
}

} // namespace

// Sections (--only): reduce, scan, rowreduce, select, scatter, map, histogram, softmax. The "vs CUB" column is the
// baseline's time over gridflow's (CUB's; for map the lean kernel's).
int main(int argc, char** argv) {
  const Args args = Args::parse(argc, argv);
  const std::optional<DeviceInfo> gpu = gpu_to_measure("gridflow_bench_ops");
  if (!gpu)
    return 0;
  Report report("ops", gpu->describe());
  const long long n = args.quick ? (1LL << 26) : (1LL << 28);
  const int reps = args.quick ? 5 : 10;
  fmt::print("{:<22} {:<18} {:<22} {:>10} {:>9} {:>9}\n", "op", "shape", "impl", "ms", "TB/s", "vs CUB");
  auto row = [&](const std::string& op, const std::string& shape, const std::string& impl, double ms, double bytes,
                 double cub_ms, const std::string& check) {
    const double tbs = bytes / (ms * 1e-3) / 1e12;
    fmt::print("{:<22} {:<18} {:<22} {:>10.3f} {:>9.3f} {:>9}\n", op, shape, impl, ms, tbs,
               cub_ms > 0 ? fmt::format("{:.2f}x", cub_ms / ms) : "");
    report.add({{"op", op},
                {"shape", shape},
                {"impl", impl},
                {"ms", ms},
                {"tb_per_s", tbs},
                {"bytes", bytes},
                {"speedup_vs_cub", cub_ms > 0 ? cub_ms / ms : 0.0},
                {"check", check}});
  };
  const std::string vec = fmt::format("2^{}", n == (1LL << 28) ? 28 : 26);

  // Reduce and scan of n floats.
  if (args.runs("reduce scan")) {
    float* in = device_uniform(n, 1);
    float* out = device_floats(n);
    const double cub_reduce = stat_of(time_cub_reduce_sum(in, out, n, 3, reps)).median;
    const double cub_scan = stat_of(time_cub_inclusive_sum(in, out, n, 3, reps)).median;
    free_device(in);
    free_device(out);
    row("reduce sum f32", vec, "cub::DeviceReduce", cub_reduce, 4.0 * n, 0, "");
    Graph g("reduce");
    g.add_buffer("x", DType::f32, {n}, InitUniform{-1, 1, 1});
    g.add_buffer("s", DType::f32, {1});
    g.reduce("sum", "x", "s", ReduceFn::sum);
    for (auto [threads, bps] : {std::pair{256u, 2u}, std::pair{512u, 1u}, std::pair{256u, 1u}}) {
      const Timed t = time_graph(g, threads, bps, reps, threads == 256 && bps == 2);
      row("reduce sum f32", vec, fmt::format("gridflow {}x{}/SM", threads, bps), t.ms, 4.0 * n, cub_reduce, t.check);
    }
    row("scan incl sum f32", vec, "cub::DeviceScan", cub_scan, 8.0 * n, 0, "");
    Graph h("scan");
    h.add_buffer("x", DType::f32, {n}, InitUniform{-1, 1, 2});
    h.add_buffer("y", DType::f32, {n});
    h.scan("scan", "x", "y", ScanFn::sum);
    // Chunks (register tiles) per scan tile: 1 is one look-back per chunk; more pay one look-back per tile and read
    // the tile twice: from shared memory when it fits the bulk-copy ring (4 chunks at 256 and at 512 threads),
    // else from L2. The default policy is TilePolicy{}.scan_chunks_per_tile.
    for (auto [threads, bps] : {std::pair{256u, 2u}, std::pair{512u, 1u}})
      for (std::uint32_t chunks : {1u, 4u, 8u, 16u}) {
        if (threads == 512 && chunks != 4 && chunks != 8)
          continue;
        TilePolicy tiles;
        tiles.scan_chunks_per_tile = chunks;
        const Timed t = time_graph(h, threads, bps, reps, true, tiles);
        row("scan incl sum f32", vec, fmt::format("gridflow {}x{}/SM {}ch", threads, bps, chunks), t.ms, 8.0 * n,
            cub_scan, t.check);
      }
  }
  // Row reduce vs segmented reduce.
  if (args.runs("rowreduce")) {
    const long long cols = 1024, rows = n / cols;
    float* in = device_uniform(n, 3);
    float* out = device_floats(rows);
    const double cub_seg = stat_of(time_cub_segmented_sum(in, out, rows, cols, 3, reps)).median;
    free_device(in);
    free_device(out);
    const std::string shape = fmt::format("{}x{}", rows, cols);
    row("row reduce sum f32", shape, "cub::DeviceSegmentedReduce", cub_seg, 4.0 * n + 4.0 * rows, 0, "");
    Graph g("rowreduce");
    g.add_buffer("x", DType::f32, {rows, cols}, InitUniform{-1, 1, 3});
    g.add_buffer("r", DType::f32, {rows});
    g.reduce("rows", "x", "r", ReduceFn::sum, Axis::row);
    const Timed t = time_graph(g, 256, 2, reps, true);
    row("row reduce sum f32", shape, "gridflow 256x2/SM", t.ms, 4.0 * n + 4.0 * rows, cub_seg, t.check);
  }
  // Stream compaction of 10^8 uniform floats in [-1, 1] keeping about 1%, 50% and 99% (x > 0.98, 0, -0.98) vs
  // cub::DeviceSelect::If; bytes: read n, write the kept.
  for (const float threshold : {0.98f, 0.0f, -0.98f}) {
    if (!args.runs("select"))
      break;
    const long long m = args.quick ? 10'000'000LL : 100'000'000LL;
    float* in = device_uniform(m, 5);
    float* out = device_floats(m);
    long long kept = 0;
    const double cub_ms = stat_of(time_cub_select_gt(in, out, m, threshold, 3, reps, &kept)).median;
    free_device(in);
    free_device(out);
    const double bytes = 4.0 * m + 4.0 * static_cast<double>(kept);
    const std::string what = fmt::format("select x > {} f32", threshold);
    const std::string shape = fmt::format("{} ({:.0f}% kept)", m, 100.0 * static_cast<double>(kept) / m);
    row(what, shape, "cub::DeviceSelect::If", cub_ms, bytes, 0, "");
    Graph g("select");
    g.add_buffer("x", DType::f32, {m}, InitUniform{-1, 1, 5});
    g.add_buffer("y", DType::f32, {m});
    g.add_buffer("n", DType::i32, {1});
    g.select("compact", "x", "y", "n", CmpFn::gt, threshold);
    // Chunks per select tile: 1 is one look-back per chunk; 4 (the default at 256 threads: what the ring holds)
    // counts the tile streamed through the ring, looks back once and compacts the chunks from the ring.
    for (const std::uint32_t chunks : {1u, 4u}) {
      TilePolicy tiles;
      tiles.scan_chunks_per_tile = chunks;
      const Timed t = time_graph(g, 256, 2, reps, true, tiles);
      row(what, shape, fmt::format("gridflow 256x2/SM {}ch", chunks), t.ms, bytes, cub_ms, t.check);
    }
  }
  // Stable grouping of 2^26 keys by bin (MoE routing's dispatch): gridflow's histogram -> exclusive scan -> scatter
  // graph against cub::DeviceRadixSort::SortPairs of (key, index) over ceil(log2(bins)) bits, the same permutation
  // (compared before timing); bytes: the keys read and the indices written.
  for (const int bins : {64, 1024}) {
    if (!args.runs("scatter"))
      break;
    const long long m = 1LL << 26;
    Graph g("scatter");
    g.add_buffer("k", DType::i32, {m}, InitUniform{0, static_cast<double>(bins - 1), 9});
    g.add_buffer("c", DType::i32, {bins});
    g.add_buffer("o", DType::i32, {bins});
    g.add_buffer("p", DType::i32, {m});
    g.histogram("count", "k", "c");
    g.scan("offsets", "c", "o", ScanFn::sum, /*exclusive=*/true);
    g.scatter("group", "k", "o", "p");
    Session s(g, gpu_options(256, 2));
    s.run();
    const std::string check = checked(s);
    std::vector<std::int32_t> grouped;
    const int bits = std::bit_width(static_cast<unsigned>(bins - 1));
    const double cub_ms = stat_of(time_cub_sort_pairs(s.initial()[0].i32(), bits, 3, reps, &grouped)).median;
    const auto perm = s.results()[3].i32();
    if (!std::equal(perm.begin(), perm.end(), grouped.begin(), grouped.end()))
      throw std::runtime_error("gridflow's grouping differs from cub::DeviceRadixSort::SortPairs'");
    const double ms = median_run_ms(s, reps);
    const std::string what = fmt::format("group by {} bins i32", bins);
    row(what, "2^26", fmt::format("cub::DeviceRadixSort {} bits", bits), cub_ms, 8.0 * m, 0, "");
    row(what, "2^26", "gridflow 256x2/SM", ms, 8.0 * m, cub_ms, check);
  }
  // The elementwise map of n floats (tanh(2x - 0.5)) vs the lean grid-stride kernel a CUDA engineer writes
  // (baselines/lean_kernels.cuh) on the same buffers, checked against the same float64 reference first.
  if (args.runs("map")) {
    Graph g("map");
    g.add_buffer("x", DType::f32, {n}, InitUniform{-3, 3, 8});
    g.add_buffer("y", DType::f32, {n});
    g.map("act", "x", "y", MapFn::tanh, 2.0, -0.5);
    Session s(g, gpu_options(256, 2));
    s.run();
    const std::string check = checked(s);
    const double ms = median_run_ms(s, reps);
    const LeanResult lean = lean_baseline(s, 3, reps);
    if (!lean.ran)
      throw std::runtime_error("the lean map baseline did not run: " + lean.why);
    row("map tanh f32", vec, fmt::format("lean kernel ({})", lean.best_name()), lean.best_ms(), 8.0 * n, 0, "");
    row("map tanh f32", vec, "gridflow 256x2/SM", ms, 8.0 * n, lean.best_ms(), check);
  }
  // Histogram of 2^28 uniform keys into 1 (every key in one bin), 64 (MoE routing counts), 1024 and 4096 bins vs
  // cub::DeviceHistogram::HistogramEven.
  for (const int bins : {1, 64, 1024, 4096}) {
    if (!args.runs("histogram"))
      break;
    const std::string what = fmt::format("histogram {} bins i32", bins);
    int* keys = device_keys(n, bins, 6);
    int* counts = nullptr;
    counts = reinterpret_cast<int*>(device_floats(bins));
    const double cub_ms = stat_of(time_cub_histogram(keys, counts, n, bins, 3, reps)).median;
    free_device(keys);
    free_device(counts);
    row(what, vec, "cub::DeviceHistogram", cub_ms, 4.0 * n, 0, "");
    Graph g("histogram");
    g.add_buffer("k", DType::i32, {n}, InitUniform{0, static_cast<double>(bins - 1), 6});
    g.add_buffer("c", DType::i32, {bins});
    g.histogram("count", "k", "c");
    const Timed t = time_graph(g, 256, 2, reps, true);
    row(what, vec, "gridflow 256x2/SM", t.ms, 4.0 * n, cub_ms, t.check);
  }
  // Softmax rows (no CUB equivalent: torch in bench/torch_baselines.py).
  for (long long cols : {1024LL, 4096LL, 8192LL, 32768LL}) {
    if (!args.runs("softmax"))
      break;
    const long long rows = n / cols;
    Graph g("softmax");
    g.add_buffer("x", DType::f32, {rows, cols}, InitUniform{-4, 4, 4});
    g.add_buffer("y", DType::f32, {rows, cols});
    g.softmax("softmax", "x", "y");
    const std::string shape = fmt::format("{}x{}", rows, cols);
    for (auto [threads, bps] : {std::pair{256u, 2u}, std::pair{512u, 1u}}) {
      const Timed t = time_graph(g, threads, bps, reps, threads == 256);
      row("softmax f32", shape, fmt::format("gridflow {}x{}/SM", threads, bps), t.ms, 8.0 * n, 0, t.check);
    }
  }
  report.write(args.json_path);
  return 0;
}
