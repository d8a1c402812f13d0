#include "scheduler/op_kinds.hpp"

#include "kernels/counting.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>

#include <array>
#include <bit>
#include <cmath>

namespace gridflow {
namespace {

using program::AuxUse;
using program::Opcode;

std::string in_quotes(std::string_view s) {
  return fmt::format("'{}'", s);
}

const Buffer& buffer_of(const OpCheck& c, const ResolvedView& v) {
  return c.graph.buffers()[v.buffer];
}

// The output buffer's dtype is what the op writes.
void check_output_dtype(const OpCheck& c, std::string_view what) {
  const DType in = buffer_of(c, c.in).dtype;
  const Buffer& out = buffer_of(c, c.out);
  const DType want = kind_traits(c.task.op).output_dtype(c.task, in);
  if (out.dtype != want)
    throw_task_error(
        c.task.name, "out.buffer", in_quotes(out.name),
        fmt::format("is {}, but {} of {} produces {}", to_string(out.dtype), what, to_string(in), to_string(want)));
}

void check_same_size(const OpCheck& c) {
  if (c.out.elements() != c.in.elements())
    throw_task_error(
        c.task.name, "out", fmt::format("{} elements", c.out.elements()),
        fmt::format("{} needs as many output elements as inputs ({})", to_string(c.task.op), c.in.elements()));
}

void check_no_overlap(const OpCheck& c, std::string_view why) {
  if (overlaps(c.in, c.out))
    throw_task_error(c.task.name, "out", in_quotes(buffer_of(c, c.out).name), why);
}

// In place only on exactly the input range.
void check_in_place(const OpCheck& c) {
  const bool same_range =
      c.in.buffer == c.out.buffer && c.in.offset == c.out.offset && c.in.elements() == c.out.elements();
  if (overlaps(c.in, c.out) && !same_range)
    throw_task_error(c.task.name, "out", fmt::format("{{offset {}}}", c.out.offset),
                     fmt::format("overlaps the input (offset {}) without being the same range: {} can run in place "
                                 "only on exactly its input",
                                 c.in.offset, to_string(c.task.op)));
}

void check_i32(const OpCheck& c, const ResolvedView& v, const char* field, std::string_view why) {
  const Buffer& b = buffer_of(c, v);
  if (b.dtype != DType::i32)
    throw_task_error(c.task.name, field, in_quotes(b.name), why);
}

// ---- reduce, scan, softmax -------------------------------------------------------------------------------------

void validate_reduce(const OpCheck& c) {
  check_output_dtype(c, fmt::format("reduce {}", to_string(c.task.reduce_fn)));
  const std::int64_t want = c.task.axis == Axis::all ? 1 : c.in.rows;
  if (c.out.elements() != want)
    throw_task_error(c.task.name, "out", fmt::format("{} elements", c.out.elements()),
                     fmt::format("reduce over {} needs {} output element{}",
                                 c.task.axis == Axis::all ? "the whole view" : "rows", want, want == 1 ? "" : "s"));
  check_no_overlap(c, "a reduce cannot write over its own input");
}

void validate_scan(const OpCheck& c) {
  check_output_dtype(c, fmt::format("scan {}", to_string(c.task.scan_fn)));
  check_same_size(c);
  check_in_place(c);
}

void validate_softmax(const OpCheck& c) {
  check_output_dtype(c, "softmax");
  const Buffer& in = buffer_of(c, c.in);
  if (in.dtype != DType::f32)
    throw_task_error(c.task.name, "in.buffer", in_quotes(in.name), "softmax needs an f32 input");
  if (c.task.axis != Axis::row)
    throw_task_error(c.task.name, "axis", "\"all\"", "softmax works on rows");
  if (c.in.rows > 0 && c.in.cols < 1)
    throw_task_error(c.task.name, "in.cols", fmt::format("{}", c.in.cols), "softmax needs at least one column");
  check_same_size(c);
  check_in_place(c);
}

// ---- the counting ops (kernels/counting.hpp): i32 keys, bin limits, no aliasing -----------------------------------

void validate_histogram(const OpCheck& c) {
  check_i32(c, c.in, "in.buffer", "histogram needs i32 keys");
  check_output_dtype(c, "histogram");
  if (c.out.elements() < 1 || c.out.elements() > kernels::kHistogramMaxBins)
    throw_task_error(c.task.name, "out", fmt::format("{} elements", c.out.elements()),
                     fmt::format("a histogram has 1 to {} bins (one per output element)", kernels::kHistogramMaxBins));
  check_no_overlap(c, "a histogram cannot write over its input");
}

void validate_scatter(const OpCheck& c) {
  check_i32(c, c.in, "in.buffer", "scatter needs i32 keys");
  check_i32(c, *c.aux, "offsets.buffer", "must be i32");
  check_output_dtype(c, "scatter");
  if (c.aux->elements() < 1 || c.aux->elements() > kernels::kScatterMaxBins)
    throw_task_error(c.task.name, "offsets", fmt::format("{} elements", c.aux->elements()),
                     fmt::format("scatter takes 1 to {} bins (one offset each)", kernels::kScatterMaxBins));
  if (overlaps(*c.aux, c.out))
    throw_task_error(c.task.name, "out", in_quotes(buffer_of(c, c.out).name),
                     "a scatter cannot write over its offsets");
  check_no_overlap(c, "a scatter cannot write over its input");
}

void validate_select(const OpCheck& c) {
  check_i32(c, *c.aux, "count.buffer", "must be i32");
  check_output_dtype(c, "select");
  if (c.out.elements() != c.in.elements())
    throw_task_error(c.task.name, "out", fmt::format("{} elements", c.out.elements()),
                     fmt::format("select needs as many output elements as inputs ({})", c.in.elements()));
  if (c.aux->elements() != 1)
    throw_task_error(c.task.name, "count", fmt::format("{} elements", c.aux->elements()), "select writes one count");
  if (overlaps(*c.aux, c.in) || overlaps(*c.aux, c.out))
    throw_task_error(c.task.name, "count", in_quotes(buffer_of(c, *c.aux).name),
                     "the count cannot overlap the input or the output");
  // An f32 threshold may also be an infinity (x < inf keeps every finite x); nothing else outside the f32 range.
  const DType in = buffer_of(c, c.in).dtype;
  if (!fits_dtype(in, c.task.threshold) && !(in == DType::f32 && std::isinf(c.task.threshold)))
    throw_task_error(c.task.name, "threshold", fmt::format("{}", c.task.threshold),
                     in == DType::i32 ? "an i32 select needs an integer in the int32 range"
                                      : "an f32 select needs a number within the f32 range (or an infinity)");
  check_no_overlap(c, "a select cannot write over its input");
}

// ---- map (kernels/map.hpp) -----------------------------------------------------------------------------------

// A map constant must be an f32: finite and within its range (its bits travel in the descriptor).
void check_map_constant(const OpCheck& c, const char* field, double v) {
  if (!std::isfinite(v) || !fits_dtype(DType::f32, v))
    throw_task_error(c.task.name, field, fmt::format("{}", v), "must be a finite number within the f32 range");
}

void validate_map(const OpCheck& c) {
  const Buffer& in = buffer_of(c, c.in);
  if (in.dtype != DType::f32)
    throw_task_error(c.task.name, "in.buffer", in_quotes(in.name), "map needs an f32 input");
  check_output_dtype(c, "map");
  check_same_size(c);
  check_in_place(c);
  check_map_constant(c, "scale", c.task.scale);
  check_map_constant(c, "shift", c.task.shift);
  const bool clamp = c.task.map_fn == MapFn::clamp;
  for (const auto& [field, bound] : {std::pair{"lo", c.task.lo}, std::pair{"hi", c.task.hi}}) {
    if (clamp && !bound)
      throw_task_error(c.task.name, field, "missing", "clamp needs both lo and hi");
    if (!clamp && bound)
      throw_task_error(c.task.name, field, fmt::format("{}", *bound),
                       fmt::format("only clamp takes bounds (fn is \"{}\")", to_string(c.task.map_fn)));
    if (bound)
      check_map_constant(c, field, *bound);
  }
  if (clamp && *c.task.lo > *c.task.hi)
    throw_task_error(c.task.name, "lo", fmt::format("{}", *c.task.lo),
                     fmt::format("must not exceed hi ({})", *c.task.hi));
}

DType same_dtype(const Task&, DType in) {
  return in;
}
DType i32_output(const Task&, DType) {
  return DType::i32;
}
DType reduce_dtype(const Task& t, DType in) {
  return t.reduce_fn == ReduceFn::argmax ? DType::i32 : in;
}

// A row op over a single row lowers to its whole-range form.
Opcode lower_reduce(const Task& t, const ResolvedView& in) {
  return t.axis == Axis::row && in.rows != 1 ? Opcode::reduce_rows : Opcode::reduce_all;
}
Opcode lower_scan(const Task& t, const ResolvedView& in) {
  return t.axis == Axis::row && in.rows != 1 ? Opcode::scan_rows : Opcode::scan_all;
}
Opcode lower_softmax(const Task&, const ResolvedView&) {
  return Opcode::softmax_rows;
}
Opcode lower_histogram(const Task&, const ResolvedView&) {
  return Opcode::histogram;
}
Opcode lower_scatter(const Task&, const ResolvedView&) {
  return Opcode::scatter;
}
Opcode lower_select(const Task&, const ResolvedView&) {
  return Opcode::select;
}
Opcode lower_map(const Task&, const ResolvedView&) {
  return Opcode::map;
}

std::uint32_t f32_bits(double v) {
  return std::bit_cast<std::uint32_t>(static_cast<float>(v));
}
void encode_reduce(const OpCheck& c, program::TaskDesc& d) {
  d.fn = static_cast<std::uint32_t>(c.task.reduce_fn);
}
void encode_scan(const OpCheck& c, program::TaskDesc& d) {
  d.fn = static_cast<std::uint32_t>(c.task.scan_fn);
  if (c.task.exclusive)
    d.flags |= program::kExclusive;
}
void encode_softmax(const OpCheck& c, program::TaskDesc& d) {
  if (c.task.log)
    d.flags |= program::kLogSoftmax;
}
void encode_histogram(const OpCheck& c, program::TaskDesc& d) {
  d.param = static_cast<std::uint32_t>(c.out.elements());
}
void encode_scatter(const OpCheck& c, program::TaskDesc& d) {
  d.param = static_cast<std::uint32_t>(c.aux->elements());
  program::set_const_u64(d, 0, static_cast<std::uint64_t>(c.out.elements()));
}
void encode_select(const OpCheck& c, program::TaskDesc& d) {
  d.param = static_cast<std::uint32_t>(c.task.cmp);
  d.consts[0] = buffer_of(c, c.in).dtype == DType::f32
                    ? f32_bits(c.task.threshold)
                    : static_cast<std::uint32_t>(static_cast<std::int32_t>(c.task.threshold));
}

void encode_map(const OpCheck& c, program::TaskDesc& d) {
  d.fn = static_cast<std::uint32_t>(c.task.map_fn);
  d.consts[0] = f32_bits(c.task.scale);
  d.consts[1] = f32_bits(c.task.shift);
  d.consts[2] = f32_bits(c.task.lo.value_or(0.0));
  d.consts[3] = f32_bits(c.task.hi.value_or(0.0));
}

bool set_reduce_fn(Task& t, std::string_view name) {
  const std::optional<ReduceFn> fn = parse_reduce_fn(name);
  if (fn)
    t.reduce_fn = *fn;
  return fn.has_value();
}
bool set_scan_fn(Task& t, std::string_view name) {
  const std::optional<ScanFn> fn = parse_scan_fn(name);
  if (fn)
    t.scan_fn = *fn;
  return fn.has_value();
}
bool set_map_fn(Task& t, std::string_view name) {
  const std::optional<MapFn> fn = parse_map_fn(name);
  if (fn)
    t.map_fn = *fn;
  return fn.has_value();
}
std::string_view map_fn_name(const Task& t) {
  return to_string(t.map_fn);
}
std::string_view reduce_fn_name(const Task& t) {
  return to_string(t.reduce_fn);
}
std::string_view scan_fn_name(const Task& t) {
  return to_string(t.scan_fn);
}

constexpr OpKey kReduceKeys[] = {{"fn", false}, {"axis", false}};
constexpr OpKey kScanKeys[] = {{"fn", false}, {"axis", false}, {"exclusive", false}};
constexpr OpKey kSoftmaxKeys[] = {{"log", false}, {"axis", false}};
constexpr OpKey kScatterKeys[] = {{"offsets", true}};
constexpr OpKey kSelectKeys[] = {{"count", true}, {"cmp", true}, {"threshold", true}};
constexpr OpKey kMapKeys[] = {{"fn", true}, {"scale", false}, {"shift", false}, {"lo", false}, {"hi", false}};

const OpKindTraits kKinds[] = {
    // kind, keys, aux, aux key, rows only, counting, validate, output dtype, lower, encode, fn choices, set fn, fn name
    {OpKind::reduce, kReduceKeys, AuxUse::none, nullptr, false, false, validate_reduce, reduce_dtype, lower_reduce,
     encode_reduce, "\"sum\", \"max\", \"min\", \"argmax\"", set_reduce_fn, reduce_fn_name},
    {OpKind::scan, kScanKeys, AuxUse::none, nullptr, false, false, validate_scan, same_dtype, lower_scan, encode_scan,
     "\"sum\", \"max\"", set_scan_fn, scan_fn_name},
    {OpKind::softmax, kSoftmaxKeys, AuxUse::none, nullptr, true, false, validate_softmax, same_dtype, lower_softmax,
     encode_softmax, nullptr, nullptr, nullptr},
    {OpKind::histogram,
     {},
     AuxUse::none,
     nullptr,
     false,
     true,
     validate_histogram,
     i32_output,
     lower_histogram,
     encode_histogram,
     nullptr,
     nullptr,
     nullptr},
    {OpKind::scatter, kScatterKeys, AuxUse::read, "offsets", false, true, validate_scatter, i32_output, lower_scatter,
     encode_scatter, nullptr, nullptr, nullptr},
    {OpKind::select, kSelectKeys, AuxUse::write, "count", false, true, validate_select, same_dtype, lower_select,
     encode_select, nullptr, nullptr, nullptr},
    {OpKind::map, kMapKeys, AuxUse::none, nullptr, false, false, validate_map, same_dtype, lower_map, encode_map,
     "\"identity\", \"relu\", \"exp\", \"tanh\", \"clamp\"", set_map_fn, map_fn_name},
};
static_assert(std::size(kKinds) == kOpKindCount, "one row per graph op");

} // namespace

const OpKindTraits& kind_traits(OpKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  if (i >= std::size(kKinds) || kKinds[i].kind != kind)
    throw GraphError(fmt::format("op kind {}: unknown", i));
  return kKinds[i];
}

std::span<const OpKindTraits> all_kinds() {
  return kKinds;
}

} // namespace gridflow
