#include "kernels/op_types.hpp"

#include <array>
#include <utility>

namespace gridflow {
namespace {

template <class E, std::size_t N> using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<DType, 2> dtype_names{{{DType::f32, "f32"}, {DType::i32, "i32"}}};
constexpr NameTable<OpKind, kOpKindCount> op_names{{{OpKind::reduce, "reduce"},
                                                    {OpKind::scan, "scan"},
                                                    {OpKind::softmax, "softmax"},
                                                    {OpKind::histogram, "histogram"},
                                                    {OpKind::scatter, "scatter"},
                                                    {OpKind::select, "select"},
                                                    {OpKind::map, "map"}}};
constexpr NameTable<ReduceFn, 4> reduce_names{
    {{ReduceFn::sum, "sum"}, {ReduceFn::max, "max"}, {ReduceFn::min, "min"}, {ReduceFn::argmax, "argmax"}}};
constexpr NameTable<ScanFn, 2> scan_names{{{ScanFn::sum, "sum"}, {ScanFn::max, "max"}}};
constexpr NameTable<Axis, 2> axis_names{{{Axis::all, "all"}, {Axis::row, "row"}}};
constexpr NameTable<CmpFn, 6> cmp_names{
    {{CmpFn::gt, "gt"}, {CmpFn::ge, "ge"}, {CmpFn::lt, "lt"}, {CmpFn::le, "le"}, {CmpFn::eq, "eq"}, {CmpFn::ne, "ne"}}};

constexpr NameTable<MapFn, 5> map_names{{{MapFn::identity, "identity"},
                                         {MapFn::relu, "relu"},
                                         {MapFn::exp, "exp"},
                                         {MapFn::tanh, "tanh"},
                                         {MapFn::clamp, "clamp"}}};

template <class E, std::size_t N> std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [e, name] : table)
    if (e == value)
      return name;
  return "?";
}

template <class E, std::size_t N> std::optional<E> parse(const NameTable<E, N>& table, std::string_view text) {
  for (const auto& [e, name] : table)
    if (name == text)
      return e;
  return std::nullopt;
}

} // namespace

std::string_view to_string(DType v) {
  return name_of(dtype_names, v);
}
std::string_view to_string(OpKind v) {
  return name_of(op_names, v);
}
std::string_view to_string(ReduceFn v) {
  return name_of(reduce_names, v);
}
std::string_view to_string(ScanFn v) {
  return name_of(scan_names, v);
}
std::string_view to_string(Axis v) {
  return name_of(axis_names, v);
}
std::string_view to_string(CmpFn v) {
  return name_of(cmp_names, v);
}

std::string_view to_string(MapFn v) {
  return name_of(map_names, v);
}

std::optional<DType> parse_dtype(std::string_view s) {
  return parse(dtype_names, s);
}
std::optional<OpKind> parse_op_kind(std::string_view s) {
  return parse(op_names, s);
}
std::optional<ReduceFn> parse_reduce_fn(std::string_view s) {
  return parse(reduce_names, s);
}
std::optional<ScanFn> parse_scan_fn(std::string_view s) {
  return parse(scan_names, s);
}
std::optional<Axis> parse_axis(std::string_view s) {
  return parse(axis_names, s);
}
std::optional<CmpFn> parse_cmp_fn(std::string_view s) {
  return parse(cmp_names, s);
}

std::optional<MapFn> parse_map_fn(std::string_view s) {
  return parse(map_names, s);
}

} // namespace gridflow
