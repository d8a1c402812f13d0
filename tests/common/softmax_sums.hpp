// The graph the binding tests run over caller memory: x [rows, cols] -> softmax -> y -> row sums -> s.
#pragma once

#include "scheduler/graph.hpp"

#include <vector>

namespace gridflow::testing {

// x holds `x` when given, else seeded uniform values in [-1, 1).
inline Graph softmax_sums(std::int64_t rows, std::int64_t cols, const std::vector<float>* x = nullptr) {
  Graph g("bound");
  if (x)
    g.add_buffer("x", {rows, cols}, *x);
  else
    g.add_buffer("x", DType::f32, {rows, cols}, InitUniform{-1, 1, 7});
  g.add_buffer("y", DType::f32, {rows, cols});
  g.add_buffer("s", DType::f32, {rows});
  g.softmax("soft", "x", "y");
  g.reduce("sums", "y", "s", ReduceFn::sum, Axis::row);
  return g;
}

} // namespace gridflow::testing
