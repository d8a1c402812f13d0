// The vocabulary every layer shares: element types and the functions the ops compute.
// Plain enums with fixed underlying values: they travel inside device descriptors.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gridflow {

enum class DType : std::uint32_t { f32 = 0, i32 = 1 };

// Graph-level operation kinds. histogram, scatter and select are the counting ops (integer bookkeeping of
// routing and compaction pipelines): see graph.hpp for their contracts. map is elementwise (kernels/map.hpp).
enum class OpKind : std::uint32_t {
  reduce = 0,
  scan = 1,
  softmax = 2,
  histogram = 3,
  scatter = 4,
  select = 5,
  map = 6,
};
inline constexpr std::size_t kOpKindCount = 7;

// The predicate of select: keep x when `x CMP threshold`.
enum class CmpFn : std::uint32_t { gt = 0, ge = 1, lt = 2, le = 3, eq = 4, ne = 5 };

enum class ReduceFn : std::uint32_t { sum = 0, max = 1, min = 2, argmax = 3 };
enum class ScanFn : std::uint32_t { sum = 0, max = 1 };
// The function f of map, y = f(scale * x + shift): kernels/map.hpp.
enum class MapFn : std::uint32_t { identity = 0, relu = 1, exp = 2, tanh = 3, clamp = 4 };

// Whether an op treats its view as one range (`all`) or row by row (`row`).
enum class Axis : std::uint32_t { all = 0, row = 1 };

constexpr std::size_t dtype_size(DType) {
  return 4;
}

std::string_view to_string(DType);
std::string_view to_string(OpKind);
std::string_view to_string(ReduceFn);
std::string_view to_string(ScanFn);
std::string_view to_string(Axis);
std::string_view to_string(CmpFn);
std::string_view to_string(MapFn);

std::optional<DType> parse_dtype(std::string_view);
std::optional<OpKind> parse_op_kind(std::string_view);
std::optional<ReduceFn> parse_reduce_fn(std::string_view);
std::optional<ScanFn> parse_scan_fn(std::string_view);
std::optional<Axis> parse_axis(std::string_view);
std::optional<CmpFn> parse_cmp_fn(std::string_view);
std::optional<MapFn> parse_map_fn(std::string_view);

} // namespace gridflow
