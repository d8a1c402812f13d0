// Graphs of the counting ops for the host and GPU suites: the MoE routing chain (histogram -> exclusive scan ->
// scatter) and compactions of f32 and i32 data, over keys that include out-of-range values.
#pragma once

#include "scheduler/graph.hpp"

#include <cstdint>

namespace gridflow::testing {

// n keys in [-1, bins] (so -1 and `bins` fall outside the histogram), bins <= 1024:
//   counts = histogram(keys); offsets = exclusive scan(counts); perm = scatter(keys, offsets);
//   kept/kept_n = select(x > 0.25) over n f32 values; hits/hits_n = select(keys == 3).
Graph counting_graph(std::int64_t n, std::int32_t bins, std::uint64_t seed);

} // namespace gridflow::testing
