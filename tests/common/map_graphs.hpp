// Graphs of the elementwise map for the host and GPU suites.
#pragma once

#include "scheduler/graph.hpp"

#include <cstdint>

namespace gridflow::testing {

// Every map function over n random f32 values in [-3, 3], with constants (scale, shift, clamp bounds), from an
// unaligned view (offset 1: the element-by-element path), in place on a buffer of its own, and inside the pipeline
// maps exist for: row softmax -> tanh -> row sums (rows of 64 columns: n / 64 of them; none when n < 64).
Graph map_graph(std::int64_t n, std::uint64_t seed);

// The IEEE cases: NaN, both infinities, both zeros, a denormal, the f32 extremes, through every function.
// Buffer "special" holds kSpecialValues; task "<fn>" writes buffer "y_<fn>".
Graph map_special_values_graph();
inline constexpr int kSpecialValues = 10;

} // namespace gridflow::testing
