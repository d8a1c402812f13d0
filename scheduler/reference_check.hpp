// Checking an executor's results against the float64 references.
//
// Two strategies, chosen per graph:
// - per task (graphs where nothing a task read or wrote is overwritten later: no WAR/WAW hazards, no in-place
//   task): every task is checked against the reference applied to the very inputs the executor gave it (read
//   back from its final buffers). Errors do not accumulate and exact results (max, min, argmax, i32) must match
//   bit for bit.
// - whole graph (anything else): the reference runs the graph from the initial data, carrying for each element
//   the magnitude its float32 error may reach (propagated through every op), and the final buffers are compared
//   with that. argmax accepts any index whose reference value ties the maximum within the propagated error;
//   i32 values computed from such a near-tie depend on the executor's pick and are counted as undecidable.
// In both, elements no task writes must still hold their initial bits, and a float32 element passes when
// |out - ref| <= tolerance * scale (kernels/reference.hpp).
#pragma once

#include "runtime/host_tensor.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gridflow {

inline constexpr double kCheckTolerance = 1e-5; // relative to each element's error scale

struct BufferCheck {
  std::string buffer;
  bool written = false;         // some task writes it
  std::int64_t checked = 0;     // elements compared
  std::int64_t mismatches = 0;  // elements outside tolerance
  std::int64_t undecidable = 0; // i32 elements downstream of an argmax near-tie (whole-graph check only)
  double max_error = 0.0;       // max |out - ref| / scale over its float elements (0 when all exact)
  std::int64_t worst_index = -1;
  double worst_out = 0.0;
  double worst_expected = 0.0;
};

struct CheckReport {
  bool passed = true;
  bool per_task = false;  // which strategy ran
  double max_error = 0.0; // max |out - ref| / scale over every checked element with a scale
  std::vector<BufferCheck> buffers;
  std::string summary() const; // one line: "check passed: max rel error 3.1e-08 (per task, 5 buffers)"
  std::string details() const; // one line per failing buffer
};

// `initial`: every buffer before the run; `final`: every buffer after it (index = graph buffer index).
CheckReport check_outputs(const Graph& graph, const Analysis& analysis, const std::vector<HostTensor>& initial,
                          const std::vector<HostTensor>& final);

// The whole graph run on the float64 references from `initial` (outputs rounded to their dtype).
std::vector<HostTensor> reference_outputs(const Graph& graph, const Analysis& analysis,
                                          const std::vector<HostTensor>& initial);

} // namespace gridflow
