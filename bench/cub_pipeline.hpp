// "CUB where it has the op": a graph run as one CUB device-wide call per task, in declaration order on one stream,
// over device copies of every buffer. `gridflow profile` adds it beside the gridflow configurations when every task
// of the graph has a CUB equivalent (reduce over a whole view, scan over a whole view with sum / max, row sums,
// histogram, select); otherwise it says which task has none.
#pragma once

#include "kernels/op_types.hpp"
#include "runtime/host_tensor.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gridflow::bench {

// One task as a CUB call (plain data, so the CUDA side needs no scheduler headers).
struct CubStep {
  enum class Kind { reduce_sum, reduce_max, reduce_min, scan_sum, scan_max, row_sum, histogram, select };
  Kind kind = Kind::reduce_sum;
  bool exclusive = false;                 // scan_sum only (an exclusive max scan has no CUB shorthand: not offered)
  DType dtype = DType::f32;               // input element type
  std::uint32_t in = 0, out = 0, aux = 0; // buffer indices
  std::int64_t in_offset = 0, out_offset = 0, aux_offset = 0;
  std::int64_t n = 0;              // input elements
  std::int64_t rows = 0, cols = 0; // row_sum
  std::int32_t bins = 0;           // histogram
  CmpFn cmp = CmpFn::gt;           // select
  double threshold = 0;            // select
};

// Times the steps (CUDA events around the whole sequence) after `warmup` untimed runs; buffers start from
// `initial` once (later runs read what earlier ones wrote, as repeated graph runs do).
std::vector<double> time_cub_steps(const std::vector<CubStep>& steps, const std::vector<HostTensor>& initial,
                                   int warmup, int reps);

} // namespace gridflow::bench

namespace gridflow {
class Graph;
struct Analysis;
struct ExternalBaseline;
} // namespace gridflow

namespace gridflow::bench {

// The graph's tasks as CUB steps, or nothing, with `why_not` naming the first task CUB has no call for.
std::optional<std::vector<CubStep>> cub_steps_for(const Graph& graph, const Analysis& analysis, std::string* why_not);

// The profile baseline "CUB, one call per task" for `graph`, or nothing (see cub_steps_for).
std::optional<ExternalBaseline> cub_pipeline_baseline(const Graph& graph, std::string* why_not);

} // namespace gridflow::bench
