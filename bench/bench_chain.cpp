// gridflow_bench_chain: dependent chains of 512 small row ops (softmax; softmax alternating with a row scan) over
// 16 x 1024 and 256 x 1024 floats, each op reading its predecessor's output. gridflow in the configuration `gridflow
// run` uses by default, and in others for comparison, against what a CUDA engineer runs instead: one lean kernel per
// op on a stream, with PDL, as a CUDA Graph and as a Graph with PDL (baselines/), on the same buffers, checked before
// timing. The task-body-per-launch rows are a diagnostic (gridflow's own tile body launched once per task).
#include "bench/lean_compare.hpp"
#include "runtime/device.hpp"
#include "runtime/gpu_baselines.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

#include <utility>

using namespace gridflow;
using namespace gridflow::bench;

namespace {

constexpr int kOps = 512;

// `ops` tasks over rows x cols f32, each reading the previous output (distinct buffers, so every edge is RAW):
// "softmax" repeats softmax; "mixed" alternates softmax and a row scan.
Graph chain(const std::string& kind, std::int64_t rows, std::int64_t cols, int ops) {
  Graph g(kind + "-chain");
  g.add_buffer("x0", DType::f32, {rows, cols}, InitUniform{-2, 2, 5});
  for (int i = 1; i <= ops; ++i) {
    const std::string in = "x" + std::to_string(i - 1), out = "x" + std::to_string(i);
    g.add_buffer(out, DType::f32, {rows, cols});
    if (kind == "mixed" && i % 2 == 0)
      g.scan("op" + std::to_string(i), in, out, ScanFn::sum, false, Axis::row);
    else
      g.softmax("op" + std::to_string(i), in, out);
  }
  return g;
}

} // namespace

int main(int argc, char** argv) {
  const Args args = Args::parse(argc, argv);
  const std::optional<DeviceInfo> gpu = gpu_to_measure("gridflow_bench_chain");
  if (!gpu)
    return 0;
  Report report("chain", gpu->describe());
  const int reps = args.quick ? 7 : 15;
  const std::vector<Variant> variants = config_variants();
  fmt::print("{:<8} {:>5} {:<44} {:>9} {:>9} {:>7}  {}\n", "chain", "floats", "executor", "us/op", "ms/run", "x lean",
             "bits vs default");
  int failures = 0;
  for (const std::string kind : {"softmax", "mixed"})
    for (std::int64_t rows : {16LL, 256LL}) {
      const Graph g = chain(kind, rows, 1024, kOps);
      const std::string size = rows == 16 ? "16K" : "256K";
      std::vector<std::pair<std::string, double>> rows_out; // executor, ms
      std::vector<HostTensor> reference_bits;
      auto run_gridflow = [&](const std::string& name, SessionOptions o) -> std::optional<double> {
        o.backend = Backend::gpu;
        Session s(g, o);
        const RunResult first = s.run();
        const CheckReport check = s.check();
        std::string bits = "-";
        if (reference_bits.empty())
          reference_bits = s.results();
        else
          bits = bit_identical(reference_bits, s.results()) ? "same" : "DIFFER";
        if (!check.passed || bits == "DIFFER") {
          fmt::print("FAILED {} {} {}: {} (bits {})\n", kind, size, name, check.summary(), bits);
          ++failures;
          return std::nullopt;
        }
        const double ms = median_run_ms(s, reps);
        rows_out.emplace_back(fmt::format("gridflow {}{}", name, first.lean_kernel ? " [lean kernel]" : ""), ms);
        report.add({{"chain", kind},
                    {"floats", rows * 1024},
                    {"ops", kOps},
                    {"executor", "gridflow " + name},
                    {"config", s.describe()},
                    {"lean_kernel", first.lean_kernel},
                    {"ms_per_run", ms},
                    {"us_per_op", ms * 1e3 / kOps},
                    {"bits_vs_default", bits},
                    {"tiles", s.program().tiles.size()}});
        return ms;
      };
      const std::optional<double> gridflow_ms = run_gridflow("default", SessionOptions{});
      for (const Variant& v : variants) {
        SessionOptions o;
        v.change(o);
        run_gridflow(v.name, o);
      }
      // What a CUDA engineer runs instead, on the default session's buffers.
      SessionOptions o;
      o.backend = Backend::gpu;
      Session s(g, o);
      s.run();
      const LeanResult lean = lean_baseline(s, 3, reps);
      if (!lean.ran) {
        fmt::print("FAILED {} {}: no lean baseline: {}\n", kind, size, lean.why);
        ++failures;
        continue;
      }
      const double best = lean.best_ms();
      auto add_lean = [&](const char* name, const Stat& st) {
        rows_out.emplace_back(std::string("lean kernels, ") + name, st.median);
        report.add({{"chain", kind},
                    {"floats", rows * 1024},
                    {"ops", kOps},
                    {"executor", std::string("lean ") + name},
                    {"ms_per_run", st.median},
                    {"us_per_op", st.median * 1e3 / kOps}});
      };
      add_lean("stream", lean.stream);
      add_lean("stream+PDL", lean.stream_pdl);
      add_lean("CUDA graph", lean.graph);
      add_lean("CUDA graph+PDL", lean.graph_pdl);
      if (!args.quick) {
        const BaselineTimes b = time_per_task_launches(s.executor(), 3, reps);
        rows_out.emplace_back("task body per launch, stream (diagnostic)", stat_of(b.stream_ms).median);
        rows_out.emplace_back("task body per launch, CUDA graph (diagnostic)", stat_of(b.graph_ms).median);
      }
      for (const auto& [name, ms] : rows_out)
        fmt::print("{:<8} {:>5} {:<44} {:>9.3f} {:>9.3f} {:>7.2f}\n", kind, size, name, ms * 1e3 / kOps, ms, best / ms);
      if (gridflow_ms)
        report.add({{"chain", kind},
                    {"floats", rows * 1024},
                    {"ops", kOps},
                    {"summary", true},
                    {"gridflow_default_us_per_op", *gridflow_ms * 1e3 / kOps},
                    {"best_lean", lean.best_name()},
                    {"best_lean_us_per_op", best * 1e3 / kOps},
                    {"speedup_vs_best_lean", best / *gridflow_ms}});
      fmt::print("{:<8} {:>5} => gridflow default {:.3f} us/op, best lean ({}) {:.3f} us/op: {:.2f}x\n\n", kind, size,
                 gridflow_ms.value_or(0) * 1e3 / kOps, lean.best_name(), best * 1e3 / kOps,
                 gridflow_ms ? best / *gridflow_ms : 0.0);
    }
  report.write(args.json_path);
  return failures == 0 ? 0 : 1;
}
