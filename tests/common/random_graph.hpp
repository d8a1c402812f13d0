// Random task graphs for property tests (host and GPU suites).
#pragma once

#include "scheduler/graph.hpp"

#include <cstdint>
#include <string>

namespace gridflow::testing {

struct RandomGraphOptions {
  std::uint32_t tasks = 50;
  std::uint64_t seed = 1;
  std::int64_t max_rows = 12; // 2-D buffers: up to max_rows x max_cols
  std::int64_t max_cols = 300;
  std::int64_t max_vector = 5000; // 1-D buffers: up to this many elements
  bool hazards = true;            // also overwrite earlier buffers and run in place (WAR / WAW / in-place)
  bool explicit_after = true;     // add some explicit `after` edges
  bool counting = true;           // also the counting ops: histogram -> scan -> scatter chains, selects
};

// A valid graph of `tasks` tasks mixing every op, dtype and view kind, with fresh random inputs.
Graph random_graph(const RandomGraphOptions& options);

} // namespace gridflow::testing
