// gridflow next to what a CUDA engineer runs instead (baselines/lean_pipeline.hpp), over the session's own device
// buffers and data: the lean pipeline runs once and must pass the same float64 check before it is timed.
#pragma once

#include "baselines/lean_pipeline.hpp"
#include "bench/bench_common.hpp"
#include "scheduler/reference_check.hpp"
#include "scheduler/session.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace gridflow::bench {

struct LeanResult {
  bool ran = false;
  std::string why; // when not ran: no lean pipeline for the program, or it failed its check
  Stat stream, stream_pdl, graph, graph_pdl;
  double best_ms() const { return std::min({stream.median, stream_pdl.median, graph.median, graph_pdl.median}); }
  const char* best_name() const {
    const double b = best_ms();
    return b == graph_pdl.median    ? "graph+PDL"
           : b == graph.median      ? "graph"
           : b == stream_pdl.median ? "stream+PDL"
                                    : "stream";
  }
};

inline LeanResult lean_baseline(Session& s, int warmup, int reps) {
  LeanResult r;
  std::vector<void*> buffers;
  for (std::uint32_t b = 0; b < s.program().buffers.size(); ++b)
    buffers.push_back(s.executor().buffer_address(b));
  auto pipe = baselines::LeanPipeline::build(s.program(), buffers, &r.why);
  if (!pipe)
    return r;
  s.reset_buffers();
  pipe->run_once();
  std::vector<HostTensor> results(buffers.size());
  for (std::uint32_t b = 0; b < buffers.size(); ++b)
    s.executor().download(b, results[b]);
  const CheckReport check = check_outputs(s.graph(), s.analysis(), s.initial(), results);
  if (!check.passed) {
    r.why = "the lean pipeline failed its check: " + check.summary();
    return r;
  }
  const baselines::LeanTimes t = pipe->time(warmup, reps);
  r.ran = true;
  r.stream = stat_of(t.stream_ms);
  r.stream_pdl = stat_of(t.stream_pdl_ms);
  r.graph = stat_of(t.graph_ms);
  r.graph_pdl = stat_of(t.graph_pdl_ms);
  return r;
}

} // namespace gridflow::bench
