#include "tests/common/map_graphs.hpp"

#include <limits>
#include <string>
#include <vector>

namespace gridflow::testing {

Graph map_graph(std::int64_t n, std::uint64_t seed) {
  Graph g("map-ops");
  g.add_buffer("x", DType::f32, {n}, InitUniform{-3, 3, seed});
  struct Case {
    const char* name;
    MapFn fn;
    double scale, shift;
  };
  for (const Case& c : {Case{"identity", MapFn::identity, 1.0, 0.0}, Case{"affine", MapFn::identity, -2.5, 0.75},
                        Case{"relu", MapFn::relu, 1.0, -0.5}, Case{"exp", MapFn::exp, 1.5, -1.0},
                        Case{"tanh", MapFn::tanh, 0.8, 0.1}}) {
    g.add_buffer(std::string("y_") + c.name, DType::f32, {n});
    g.map(c.name, "x", std::string("y_") + c.name, c.fn, c.scale, c.shift);
  }
  g.add_buffer("y_clamp", DType::f32, {n});
  g.clamp("clamp", "x", "y_clamp", -1.0, 0.5, 2.0, 0.25);
  if (n > 1) {
    g.add_buffer("y_unaligned", DType::f32, {n - 1});
    g.map("unaligned", ViewSpec::range("x", 1, n - 1), "y_unaligned", MapFn::relu, 3.0, 0.0);
  }
  g.add_buffer("w", DType::f32, {n}, InitUniform{-2, 2, seed + 1});
  g.map("in_place", "w", "w", MapFn::tanh, 1.0, 0.0);
  if (n >= 64) {
    const std::int64_t rows = n / 64;
    g.add_buffer("m", DType::f32, {rows, 64}, InitUniform{-4, 4, seed + 2});
    g.add_buffer("p", DType::f32, {rows, 64});
    g.add_buffer("q", DType::f32, {rows, 64});
    g.add_buffer("row_sums", DType::f32, {rows});
    g.softmax("normalize", "m", "p");
    g.map("activate", "p", "q", MapFn::tanh, 4.0, -0.05);
    g.reduce("sum_rows", "q", "row_sums", ReduceFn::sum, Axis::row);
  }
  return g;
}

Graph map_special_values_graph() {
  constexpr float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special = {std::numeric_limits<float>::quiet_NaN(),
                                      inf,
                                      -inf,
                                      0.0f,
                                      -0.0f,
                                      std::numeric_limits<float>::denorm_min(),
                                      std::numeric_limits<float>::max(),
                                      -std::numeric_limits<float>::max(),
                                      1.0f,
                                      -1.0f};
  Graph g("map-special-values");
  g.add_buffer("special", {static_cast<std::int64_t>(special.size())}, special);
  for (MapFn fn : {MapFn::identity, MapFn::relu, MapFn::exp, MapFn::tanh}) {
    const std::string name(to_string(fn));
    g.add_buffer("y_" + name, DType::f32, {kSpecialValues});
    g.map(name, "special", "y_" + name, fn);
  }
  g.add_buffer("y_clamp", DType::f32, {kSpecialValues});
  g.clamp("clamp", "special", "y_clamp", -2.0, 3.0);
  return g;
}

} // namespace gridflow::testing
