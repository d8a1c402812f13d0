#include "tests/common/counting_graphs.hpp"

namespace gridflow::testing {

Graph counting_graph(std::int64_t n, std::int32_t bins, std::uint64_t seed) {
  Graph g("counting");
  g.add_buffer("keys", DType::i32, {n}, InitUniform{-1.0, static_cast<double>(bins), seed});
  g.add_buffer("x", DType::f32, {n}, InitUniform{-1.0, 1.0, seed + 1});
  g.add_buffer("counts", DType::i32, {bins});
  g.add_buffer("offsets", DType::i32, {bins});
  g.add_buffer("perm", DType::i32, {n});
  g.add_buffer("kept", DType::f32, {n});
  g.add_buffer("kept_n", DType::i32, {1});
  g.add_buffer("hits", DType::i32, {n});
  g.add_buffer("hits_n", DType::i32, {1});
  g.histogram("count", "keys", "counts");
  g.scan("offsets", "counts", "offsets", ScanFn::sum, /*exclusive=*/true);
  g.scatter("route", "keys", "offsets", "perm");
  g.select("compact", "x", "kept", "kept_n", CmpFn::gt, 0.25);
  g.select("find", "keys", "hits", "hits_n", CmpFn::eq, 3);
  return g;
}

} // namespace gridflow::testing
