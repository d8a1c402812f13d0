// gridflow_bench_patterns: dependency patterns beyond chains, each at 16K and 256K floats per op, timed like the chains
// (launch included on both sides), gridflow's default configuration against the lean pipeline of the same program
// (baselines/: lean kernels and CUB calls, on a stream, with PDL, as a CUDA Graph keeping the program's edges, and
// with PDL), on the same buffers, the baseline checked before it is timed:
//   scan-between-rows  softmax rows alternating with an inclusive scan of the whole tensor (every scan tile waits for
//                      every softmax tile before it, every softmax row for the scan tiles under it);
//   row-chain+sums     a softmax chain whose every step also feeds a whole-tensor sum (fan-out to a reduction);
//   fan-out/fan-in     one op feeds four ops on quarters of its rows, whose outputs one op reads whole;
//   random DAG N       N row ops (softmax, row scans) each reading one of the 16 latest outputs, a third of them also
//                      after two other recent ops;
// and the example pipelines (examples/graphs, read from the working directory: run it from the repository root).
// --variants also times each pattern in the configurations of config_variants() (bench/bench_common.hpp), each
// checked like the default and, where the variant keeps the default's tiles (Variant::keeps_bits), bit for bit
// against it.
#include "bench/lean_compare.hpp"
#include "runtime/device.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

#include <random>

using namespace gridflow;
using namespace gridflow::bench;

namespace {

constexpr std::int64_t kCols = 1024;

std::string name_of(const char* prefix, int i) {
  return prefix + std::to_string(i);
}

Graph scan_between_rows(std::int64_t rows, int ops) {
  Graph g("scan-between-rows");
  g.add_buffer("x0", DType::f32, {rows, kCols}, InitUniform{-2, 2, 1});
  for (int i = 1; i <= ops; ++i) {
    g.add_buffer(name_of("x", i), DType::f32, {rows, kCols});
    if (i % 2)
      g.softmax(name_of("op", i), name_of("x", i - 1), name_of("x", i));
    else
      g.scan(name_of("op", i), name_of("x", i - 1), name_of("x", i), ScanFn::sum);
  }
  return g;
}

Graph row_chain_with_sums(std::int64_t rows, int steps) {
  Graph g("row-chain+sums");
  g.add_buffer("x0", DType::f32, {rows, kCols}, InitUniform{-2, 2, 2});
  g.add_buffer("sums", DType::f32, {steps});
  for (int i = 1; i <= steps; ++i) {
    g.add_buffer(name_of("x", i), DType::f32, {rows, kCols});
    g.softmax(name_of("sm", i), name_of("x", i - 1), name_of("x", i));
    g.reduce(name_of("sum", i), name_of("x", i), ViewSpec::range("sums", i - 1, 1), ReduceFn::sum);
  }
  return g;
}

Graph fan_out_fan_in(std::int64_t rows, int layers) {
  Graph g("fan-out/fan-in");
  const std::int64_t quarter = rows / 4;
  g.add_buffer("a0", DType::f32, {rows, kCols}, InitUniform{-2, 2, 3});
  for (int l = 1; l <= layers; ++l) {
    const std::string a = name_of("a", l - 1), b = name_of("b", l), next = name_of("a", l);
    g.add_buffer(b, DType::f32, {rows, kCols});
    g.add_buffer(next, DType::f32, {rows, kCols});
    for (int q = 0; q < 4; ++q) {
      const std::int64_t off = q * quarter * kCols;
      g.softmax(fmt::format("out{}_{}", l, q), ViewSpec::block(a, off, quarter, kCols),
                ViewSpec::block(b, off, quarter, kCols));
    }
    g.scan(name_of("in", l), b, next, ScanFn::max, false, Axis::row);
  }
  return g;
}

Graph random_dag(std::int64_t rows, int ops, std::uint64_t seed) {
  Graph g(fmt::format("random-dag-{}", ops));
  std::mt19937_64 rng(seed);
  g.add_buffer("x0", DType::f32, {rows, kCols}, InitUniform{-2, 2, seed});
  for (int i = 1; i <= ops; ++i) {
    const int window = std::min(i, 16);
    const int src = i - 1 - static_cast<int>(rng() % static_cast<unsigned>(window));
    g.add_buffer(name_of("x", i), DType::f32, {rows, kCols});
    Task& t = rng() % 2 ? g.softmax(name_of("op", i), name_of("x", src), name_of("x", i))
                        : g.scan(name_of("op", i), name_of("x", src), name_of("x", i),
                                 rng() % 2 ? ScanFn::sum : ScanFn::max, false, Axis::row);
    if (i > 3 && rng() % 3 == 0)
      for (int k = 0; k < 2; ++k) {
        const int dep = i - 1 - static_cast<int>(rng() % static_cast<unsigned>(std::min(i - 1, 16)));
        if (dep >= 1 && dep != src)
          t.after.push_back(name_of("op", dep));
      }
  }
  return g;
}

} // namespace

int main(int argc, char** argv) {
  const Args args = Args::parse(argc, argv);
  const std::optional<DeviceInfo> gpu = gpu_to_measure("gridflow_bench_patterns");
  if (!gpu)
    return 0;
  Report report("patterns", gpu->describe());
  const int reps = args.quick ? 7 : 15;
  int failures = 0;
  fmt::print("{:<20} {:>5} {:>5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}\n", "pattern", "floats", "ops", "gridflow",
             "lean strm", "strm+PDL", "graph", "graph+PDL", "x lean");
  auto measure = [&](const Graph& g, const std::string& size) {
    SessionOptions o;
    o.backend = Backend::gpu;
    Session s(g, o);
    const RunResult first = s.run();
    const CheckReport check = s.check();
    if (!check.passed) {
      fmt::print("FAILED {} {}: {}\n", g.name(), size, check.summary());
      ++failures;
      return;
    }
    // The default's outputs, before the lean pipeline reuses the session's buffers: every variant must match them.
    const std::vector<HostTensor> default_bits = args.variants ? s.results() : std::vector<HostTensor>{};
    const double ms = median_run_ms(s, reps);
    const LeanResult lean = lean_baseline(s, 3, reps);
    const double ops = static_cast<double>(g.tasks().size());
    nlohmann::json row = {{"pattern", g.name()},
                          {"floats", size},
                          {"ops", g.tasks().size()},
                          {"config", s.describe()},
                          {"lean_kernel", first.lean_kernel},
                          {"gridflow_ms", ms},
                          {"gridflow_us_per_op", ms * 1e3 / ops}};
    if (!lean.ran) {
      fmt::print("{:<20} {:>5} {:>5} {:>10.3f}   no lean baseline: {}\n", g.name(), size, g.tasks().size(), ms,
                 lean.why);
      row["lean"] = lean.why;
      report.add(row);
      return;
    }
    fmt::print("{:<20} {:>5} {:>5} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>7.2f}{}\n", g.name(), size,
               g.tasks().size(), ms, lean.stream.median, lean.stream_pdl.median, lean.graph.median,
               lean.graph_pdl.median, lean.best_ms() / ms, first.lean_kernel ? "  [lean kernel]" : "");
    row["lean_stream_ms"] = lean.stream.median;
    row["lean_stream_pdl_ms"] = lean.stream_pdl.median;
    row["lean_graph_ms"] = lean.graph.median;
    row["lean_graph_pdl_ms"] = lean.graph_pdl.median;
    row["best_lean"] = lean.best_name();
    row["speedup_vs_best_lean"] = lean.best_ms() / ms;
    report.add(row);
    if (args.variants)
      for (const Variant& v : config_variants()) {
        SessionOptions vo = o;
        v.change(vo);
        Session vs(g, vo);
        const RunResult vfirst = vs.run();
        const CheckReport vcheck = vs.check();
        const bool same_bits = bit_identical(default_bits, vs.results());
        if (!vcheck.passed || (v.keeps_bits && !same_bits)) {
          fmt::print("FAILED {} {} {}: {} (bits {} the default's)\n", g.name(), size, v.name, vcheck.summary(),
                     same_bits ? "same as" : "DIFFER from");
          ++failures;
          continue;
        }
        const double vms = median_run_ms(vs, reps);
        fmt::print("  {:<28} {:>10.3f} {:>7.2f}{}\n", v.name, vms, lean.best_ms() / vms,
                   vfirst.lean_kernel ? "  [lean kernel]" : "");
        report.add({{"pattern", g.name()},
                    {"floats", size},
                    {"variant", v.name},
                    {"config", vs.describe()},
                    {"gridflow_ms", vms},
                    {"speedup_vs_best_lean", lean.best_ms() / vms}});
      }
  };
  for (std::int64_t rows : {16LL, 256LL}) {
    const std::string size = rows == 16 ? "16K" : "256K";
    if (args.runs("scan"))
      measure(scan_between_rows(rows, 64), size);
    if (args.runs("sums"))
      measure(row_chain_with_sums(rows, 32), size);
    if (args.runs("fan"))
      measure(fan_out_fan_in(rows, 12), size);
    if (args.runs("dag")) {
      measure(random_dag(rows, 100, 7), size);
      measure(random_dag(rows, 1000, 8), size);
      if (rows == 16 && !args.quick)
        measure(random_dag(rows, 2000, 9), size);
    }
  }
  if (args.runs("examples"))
    for (const char* example : {"attention_rows", "varlen_batch", "compaction_1m", "moe_routing"})
      measure(load_graph(std::string("examples/graphs/") + example + ".json"), "example");
  report.write(args.json_path);
  return failures == 0 ? 0 : 1;
}
