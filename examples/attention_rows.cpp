// The attention-rows pipeline from C++: softmax over a scores matrix, then row max and row sum statistics, then a
// global reduce; run on the GPU when there is one (else the CPU backend), checked against the float64 references,
// timed in every sync mode.
#include "runtime/device.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

int main() {
  using namespace gridflow;
  Graph g("attention-rows");
  g.add_buffer("scores", DType::f32, {256, 1024}, InitUniform{-4, 4, 7});
  g.add_buffer("probs", DType::f32, {256, 1024});
  g.add_buffer("row_max", DType::f32, {256});
  g.add_buffer("row_sum", DType::f32, {256});
  g.add_buffer("total", DType::f32, {1});
  g.softmax("softmax", "scores", "probs");
  g.reduce("row_max", "probs", "row_max", ReduceFn::max, Axis::row);
  g.reduce("row_sum", "probs", "row_sum", ReduceFn::sum, Axis::row);
  g.reduce("total", "row_max", "total", ReduceFn::sum);

  const DeviceInfo gpu = probe_gpu();
  SessionOptions base;
  base.backend = gpu.available && gpu_backend_built() ? Backend::gpu : Backend::cpu;
  if (base.backend == Backend::cpu) fmt::print("no GPU ({}): running on the CPU reference backend\n", gpu.reason);
  for (SyncMode mode : kAllSyncModes) {
    SessionOptions o = base;
    o.mode = mode;
    Session s(g, o);
    s.run();
    const CheckReport check = s.check();
    std::vector<double> ms;
    for (const RunResult& r : s.time(3, 20)) ms.push_back(r.elapsed_ms);
    std::sort(ms.begin(), ms.end());
    fmt::print("{:<10} {:.4f} ms (median of 20)  total of row maxima = {:.6f}  {}\n", to_string(mode), ms[ms.size() / 2],
               s.results()[4].f32()[0], check.summary());
    if (!check.passed) return 1;
  }
  return 0;
}
