// The graph the binding and resident tests run over caller memory (x [rows, cols] -> softmax -> y -> row sums -> s),
// and the data they bind.
#pragma once

#include "runtime/host_tensor.hpp"
#include "scheduler/graph.hpp"

#include <cstring>
#include <random>
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

// Fresh values in [-3, 3), never a graph's own init: a bound input's contents must come from the caller's memory.
inline std::vector<float> fresh_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float& f : v)
    f = d(rng);
  return v;
}

inline HostTensor tensor_of(const std::vector<float>& v) {
  HostTensor t(DType::f32, static_cast<std::int64_t>(v.size()));
  std::memcpy(t.data(), v.data(), t.bytes());
  return t;
}

} // namespace gridflow::testing
