// gridflow_bench_bound: what running on the caller's memory and stream saves (Session::bind, run_async, wait).
// Per graph, the host clock from the call until the host has seen the run end, median of repetitions after warm-up:
//   host copies  Session::run(): every buffer uploaded, the outputs poisoned, the run, every buffer downloaded;
//   bound        every buffer bound to device memory the caller owns, run_async(stream) then wait();
// and over the same memory the program's lean pipeline (baselines/: lean kernels and CUB calls) launched from the host
// and synchronized, on a stream and as a CUDA Graph, each with and without PDL. Device times (CUDA events) beside.
// Before anything is timed the bound run is checked bit for bit against the host-copy run, which passes the float64
// check, and the lean pipeline passes the same check. Graphs: the examples (examples/graphs, read from the working
// directory: run it from the repository root).
#include "baselines/lean_pipeline.hpp"
#include "bench/bench_common.hpp"
#include "runtime/gpu/device_memory.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/reference_check.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

#include <chrono>

using namespace gridflow;
using namespace gridflow::bench;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Timed {
  Stat host, device; // ms
};

template <class Run> Timed time_host(int warmup, int reps, Run run) {
  std::vector<double> host, device;
  for (int i = 0; i < warmup + reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const double dev = run();
    const double h = ms_since(t0);
    if (i >= warmup) {
      host.push_back(h);
      device.push_back(dev);
    }
  }
  return {stat_of(host), stat_of(device)};
}

} // namespace

int main(int argc, char** argv) {
  const Args args = Args::parse(argc, argv);
  const auto gpu = gpu_to_measure("gridflow_bench_bound");
  if (!gpu)
    return 0;
  const int warmup = 5, reps = args.quick ? 50 : 200;
  Report report("bound", gpu->describe());
  std::printf("gridflow_bench_bound on %s: host round trip, us (device us), median of %d\n", gpu->describe().c_str(),
              reps);
  std::printf("%-16s %14s %14s %14s %14s %14s %14s  %s\n", "graph", "host copies", "bound", "lean stream",
              "lean stream+P", "lean graph", "lean graph+P", "bound x best lean");
  int failures = 0;
  for (const char* example : {"attention_rows", "softmax_chain_16k", "varlen_batch", "mixed_chain_256k"}) {
    if (!args.runs(example))
      continue;
    const Graph g = load_graph(std::string("examples/graphs/") + example + ".json");
    SessionOptions o;
    o.backend = Backend::gpu;

    // Host copies: the reference results and the first figure.
    Session plain(g, o);
    plain.run();
    const CheckReport checked = plain.check();
    if (!checked.passed) {
      std::printf("%-16s FAILED its check: %s\n", example, checked.summary().c_str());
      ++failures;
      continue;
    }
    const std::vector<HostTensor> expect = plain.results();
    const std::vector<HostTensor>& initial = plain.initial();
    const Timed copies = time_host(warmup, reps, [&] { return plain.run().elapsed_ms; });

    // Bound: the caller's device memory, holding the same initial contents, and the caller's stream.
    Session s(g, o);
    std::vector<gpu::DeviceBuffer> memory;
    std::vector<void*> addresses;
    const auto fill = [&] {
      for (std::size_t b = 0; b < initial.size(); ++b)
        GRIDFLOW_CUDA_CHECK(cudaMemcpy(memory[b].get(), initial[b].data(), initial[b].bytes(), cudaMemcpyHostToDevice));
    };
    for (std::size_t b = 0; b < g.buffers().size(); ++b) {
      memory.emplace_back(std::max<std::size_t>(16, initial[b].bytes()));
      addresses.push_back(memory.back().get());
      ExternalTensor t;
      t.data = memory.back().get();
      t.elements = initial[b].size();
      t.dtype = initial[b].dtype();
      t.device = s.executor().memory_device();
      s.bind(g.buffers()[b].name, t);
    }
    fill();
    const gpu::Stream caller_stream;
    const cudaStream_t stream = caller_stream.get();
    s.run_async(stream);
    s.wait();
    bool same = true;
    for (std::size_t b = 0; b < expect.size(); ++b) {
      HostTensor got(initial[b].dtype(), initial[b].size());
      GRIDFLOW_CUDA_CHECK(cudaMemcpy(got.data(), memory[b].get(), got.bytes(), cudaMemcpyDeviceToHost));
      same = same && bit_identical(got, expect[b]);
    }
    if (!same) {
      std::printf("%-16s the bound run DIFFERS from the host-copy run\n", example);
      ++failures;
      continue;
    }
    fill();
    const Timed bound = time_host(warmup, reps, [&] {
      s.run_async(stream);
      return s.wait().elapsed_ms;
    });

    // The lean pipeline over the same memory, checked first.
    std::string why;
    auto lean = baselines::LeanPipeline::build(s.program(), addresses, &why);
    nlohmann::json row = {{"graph", example},
                          {"config", s.describe()},
                          {"host_copies_host_ms", copies.host.median},
                          {"host_copies_device_ms", copies.device.median},
                          {"bound_host_ms", bound.host.median},
                          {"bound_device_ms", bound.device.median},
                          {"bound_speedup_vs_host_copies", copies.host.median / bound.host.median}};
    const auto us = [](const Stat& h, const Stat& d) {
      return fmt::format("{:.1f} ({:.1f})", h.median * 1e3, d.median * 1e3);
    };
    std::string lean_cols = fmt::format("{:>14} {:>14} {:>14} {:>14}", "-", "-", "-", "-"), verdict = why;
    if (lean) {
      fill();
      lean->run_once();
      std::vector<HostTensor> results(expect.size());
      for (std::size_t b = 0; b < expect.size(); ++b) {
        results[b] = HostTensor(initial[b].dtype(), initial[b].size());
        GRIDFLOW_CUDA_CHECK(cudaMemcpy(results[b].data(), memory[b].get(), results[b].bytes(), cudaMemcpyDeviceToHost));
      }
      const CheckReport lean_check = check_outputs(g, plain.analysis(), initial, results);
      if (!lean_check.passed) {
        verdict = "the lean pipeline failed its check: " + lean_check.summary();
      } else {
        const baselines::LeanTimes t = lean->time(warmup, reps);
        const Stat sh = stat_of(t.stream_host_ms), sph = stat_of(t.stream_pdl_host_ms), gh = stat_of(t.graph_host_ms),
                   gph = stat_of(t.graph_pdl_host_ms);
        const double best = std::min({sh.median, sph.median, gh.median, gph.median});
        lean_cols =
            fmt::format("{:>14} {:>14} {:>14} {:>14}", us(sh, stat_of(t.stream_ms)), us(sph, stat_of(t.stream_pdl_ms)),
                        us(gh, stat_of(t.graph_ms)), us(gph, stat_of(t.graph_pdl_ms)));
        verdict = fmt::format("{:.2f}x", best / bound.host.median);
        row["lean_stream_host_ms"] = sh.median;
        row["lean_stream_pdl_host_ms"] = sph.median;
        row["lean_graph_host_ms"] = gh.median;
        row["lean_graph_pdl_host_ms"] = gph.median;
        row["lean_graph_device_ms"] = stat_of(t.graph_ms).median;
        row["lean_graph_pdl_device_ms"] = stat_of(t.graph_pdl_ms).median;
        row["bound_speedup_vs_best_lean_host"] = best / bound.host.median;
      }
    }
    row["lean"] = verdict;
    std::printf("%-16s %14s %14s %s  %s\n", example, us(copies.host, copies.device).c_str(),
                us(bound.host, bound.device).c_str(), lean_cols.c_str(), verdict.c_str());
    report.add(row);
  }
  report.write(args.json_path);
  return failures == 0 ? 0 : 1;
}
