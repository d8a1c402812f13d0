// What every example program does with its graph: `--write-json FILE` writes the graph as JSON (the files in
// examples/graphs are made this way) and exits; otherwise it runs the graph in every sync mode and schedule on the
// GPU when there is one (else on the CPU reference backend, with a notice), checks every output against the
// float64 references, and prints the profile table: gridflow next to one launch per task on a stream, a CUDA Graph
// of those launches, and the library equivalents the example names (CUB). Exit status: 0 when every
// configuration passed its check and all agreed bit for bit, 1 otherwise, 2 for bad arguments.
#pragma once

#include "runtime/device.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/profile.hpp"

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace gridflow::examples {

inline int run_example(const Graph& graph, int argc, char** argv, std::vector<ExternalBaseline> external = {}) {
  if (argc == 3 && !std::strcmp(argv[1], "--write-json")) {
    std::ofstream(argv[2]) << graph_to_json(graph, 1);
    fmt::print("wrote {}\n", argv[2]);
    return 0;
  }
  if (argc != 1) {
    fmt::print(stderr, "usage: {} [--write-json FILE]\n", argv[0]);
    return 2;
  }
  const DeviceInfo gpu = probe_gpu();
  ProfileOptions o;
  o.base.backend = gpu.available && gpu_backend_built() ? Backend::gpu : Backend::cpu;
  if (o.base.backend == Backend::cpu)
    fmt::print("no GPU ({}): running on the CPU reference backend\n", gpu.reason);
  o.repeat = 20;
  o.external = std::move(external);
  const ProfileResult r = profile(graph, o);
  fmt::print("{} on {}\n{}", graph.name(), r.device, profile_table(r));
  for (const ProfileEntry& e : r.entries)
    if (!e.check.empty()) {
      fmt::print("check: {}\n", e.check);
      break;
    }
  if (!r.all_checked || !r.all_match) {
    fmt::print("FAILED: {}\n",
               !r.all_checked ? "a configuration failed its reference check" : "configurations disagree bit for bit");
    return 1;
  }
  return 0;
}

} // namespace gridflow::examples
