// What a CUDA engineer runs instead of gridflow, over the same device buffers: one lean kernel per row op
// (baselines/lean_kernels.cuh) and one CUB device-wide call per whole-view op (reduce, scan, histogram, select), in the
// program's topological order, launched four ways:
//   stream:           every step on one stream (stream order replaces every dependency);
//   stream + PDL:     the same, each lean kernel with programmatic dependent launch;
//   graph:            a CUDA Graph captured from streams that keep the program's edges (a step joins the stream of
//                     a producer whose stream it can extend, else another; other producers through events);
//   graph + PDL:      the same capture with the PDL attribute (stream-ordered kernel edges become programmatic).
// Plain C++ interface; the implementation is CUDA (lean_pipeline.cu).
#pragma once

#include "runtime/lowered_program.hpp"

#include <memory>
#include <string>
#include <vector>

namespace gridflow::baselines {

struct LeanTimes {
  std::vector<double> stream_ms, stream_pdl_ms, graph_ms, graph_pdl_ms; // per timed repetition, whole program
  // The same repetitions on the host clock: from before the launches are enqueued until the host has seen them end.
  std::vector<double> stream_host_ms, stream_pdl_host_ms, graph_host_ms, graph_pdl_host_ms;
};

class LeanPipeline {
public:
  // The program's tasks over `buffers` (device addresses, by buffer index), or null when a task has no lean kernel or
  // CUB call (`why_not` then names it): rows longer than 4096 columns, argmax, a scan of rows by max with i32, scatter.
  static std::unique_ptr<LeanPipeline> build(const LoweredProgram& program, const std::vector<void*>& buffers,
                                             std::string* why_not);
  ~LeanPipeline();
  LeanPipeline(const LeanPipeline&) = delete;
  LeanPipeline& operator=(const LeanPipeline&) = delete;

  std::size_t steps() const;
  // One run on one stream, no PDL, to completion: the result check runs on what it leaves in the buffers.
  void run_once();
  // Each launch form after `warmup` untimed runs of it; CUDA events around each whole run, and the host clock from
  // enqueueing it to having synchronized with its end.
  LeanTimes time(int warmup, int reps);

private:
  struct Impl;
  explicit LeanPipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace gridflow::baselines
