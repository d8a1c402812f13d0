// Which graphs CUB can run task by task, and the profile baseline that does it (the calls: cub_pipeline.cu).
#include "bench/cub_pipeline.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/profile.hpp"

#include <fmt/format.h>

namespace gridflow::bench {

std::optional<std::vector<CubStep>> cub_steps_for(const Graph& g, const Analysis& a, std::string* why_not) {
  std::vector<CubStep> steps;
  for (std::uint32_t i = 0; i < g.tasks().size(); ++i) {
    const Task& t = g.tasks()[i];
    CubStep s;
    s.dtype = g.buffers()[a.in[i].buffer].dtype;
    s.in = a.in[i].buffer;
    s.in_offset = a.in[i].offset;
    s.out = a.out[i].buffer;
    s.out_offset = a.out[i].offset;
    s.n = a.in[i].elements();
    bool ok = true;
    switch (t.op) {
    case OpKind::reduce:
      if (t.axis == Axis::row && a.in[i].rows != 1) {
        ok = t.reduce_fn == ReduceFn::sum;
        s.kind = CubStep::Kind::row_sum;
        s.rows = a.in[i].rows;
        s.cols = a.in[i].cols;
      } else {
        ok = t.reduce_fn != ReduceFn::argmax;
        s.kind = t.reduce_fn == ReduceFn::sum   ? CubStep::Kind::reduce_sum
                 : t.reduce_fn == ReduceFn::max ? CubStep::Kind::reduce_max
                                                : CubStep::Kind::reduce_min;
      }
      break;
    case OpKind::scan:
      ok = (t.axis == Axis::all || a.in[i].rows == 1) && !(t.scan_fn == ScanFn::max && t.exclusive);
      s.kind = t.scan_fn == ScanFn::sum ? CubStep::Kind::scan_sum : CubStep::Kind::scan_max;
      s.exclusive = t.exclusive;
      break;
    case OpKind::histogram:
      s.kind = CubStep::Kind::histogram;
      s.bins = static_cast<std::int32_t>(a.out[i].elements());
      break;
    case OpKind::select:
      s.kind = CubStep::Kind::select;
      s.aux = a.aux[i]->buffer;
      s.aux_offset = a.aux[i]->offset;
      s.cmp = t.cmp;
      s.threshold = t.threshold;
      break;
    case OpKind::softmax:
    case OpKind::scatter:
    case OpKind::map:
      ok = false;
      break;
    }
    if (!ok) {
      if (why_not)
        *why_not = fmt::format("CUB has no single call for task '{}' ({})", t.name, to_string(t.op));
      return std::nullopt;
    }
    steps.push_back(s);
  }
  return steps;
}

std::optional<ExternalBaseline> cub_pipeline_baseline(const Graph& graph, std::string* why_not) {
  const Analysis a = analyze(graph);
  std::optional<std::vector<CubStep>> steps = cub_steps_for(graph, a, why_not);
  if (!steps)
    return std::nullopt;
  return ExternalBaseline{"CUB, one call per task",
                          [steps = std::move(*steps)](const std::vector<HostTensor>& initial, int warmup, int reps) {
                            return time_cub_steps(steps, initial, warmup, reps);
                          }};
}

} // namespace gridflow::bench
