#include "kernels/reference.hpp"

#include "kernels/counting.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gridflow::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Two's-complement wrap of an int64 running sum to int32, as the device's 32-bit adds produce.
std::int32_t wrap_i32(std::int64_t v) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
}

// Index of the first maximum, -1 for an empty range.
template <class T> Expected first_argmax(std::span<const T> x) {
  std::int64_t best = -1;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (best < 0 || x[i] > x[static_cast<std::size_t>(best)])
      best = static_cast<std::int64_t>(i);
  return {static_cast<double>(best), 0.0};
}

} // namespace

double identity_f32(ReduceFn fn) {
  switch (fn) {
  case ReduceFn::sum:
    return 0.0;
  case ReduceFn::max:
    return -kInf;
  case ReduceFn::min:
    return kInf;
  case ReduceFn::argmax:
    return -1.0;
  }
  return 0.0;
}

std::int32_t identity_i32(ReduceFn fn) {
  switch (fn) {
  case ReduceFn::sum:
    return 0;
  case ReduceFn::max:
    return std::numeric_limits<std::int32_t>::min();
  case ReduceFn::min:
    return std::numeric_limits<std::int32_t>::max();
  case ReduceFn::argmax:
    return -1;
  }
  return 0;
}

Expected reduce(ReduceFn fn, std::span<const float> x) {
  switch (fn) {
  case ReduceFn::sum: {
    double s = 0.0, mag = 0.0;
    for (float v : x) {
      s += v;
      mag += std::fabs(static_cast<double>(v));
    }
    return {s, mag};
  }
  case ReduceFn::max: {
    double m = -kInf;
    for (float v : x)
      m = std::max(m, static_cast<double>(v));
    return {m, 0.0};
  }
  case ReduceFn::min: {
    double m = kInf;
    for (float v : x)
      m = std::min(m, static_cast<double>(v));
    return {m, 0.0};
  }
  case ReduceFn::argmax:
    return first_argmax(x);
  }
  return {};
}

Expected reduce(ReduceFn fn, std::span<const std::int32_t> x) {
  switch (fn) {
  case ReduceFn::sum: {
    std::int64_t s = 0;
    for (std::int32_t v : x)
      s += v;
    return {static_cast<double>(wrap_i32(s)), 0.0};
  }
  case ReduceFn::max: {
    std::int32_t m = identity_i32(fn);
    for (std::int32_t v : x)
      m = std::max(m, v);
    return {static_cast<double>(m), 0.0};
  }
  case ReduceFn::min: {
    std::int32_t m = identity_i32(fn);
    for (std::int32_t v : x)
      m = std::min(m, v);
    return {static_cast<double>(m), 0.0};
  }
  case ReduceFn::argmax:
    return first_argmax(x);
  }
  return {};
}

void scan(ScanFn fn, bool exclusive, std::span<const float> x, std::span<Expected> out) {
  double running = identity_f32(fn), mag = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    if (exclusive)
      out[i] = {running, fn == ScanFn::sum ? mag : 0.0};
    running = fn == ScanFn::sum ? running + v : std::max(running, v);
    mag += std::fabs(v);
    if (!exclusive)
      out[i] = {running, fn == ScanFn::sum ? mag : 0.0};
  }
}

void scan(ScanFn fn, bool exclusive, std::span<const std::int32_t> x, std::span<Expected> out) {
  std::int64_t running = identity_i32(fn);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (exclusive)
      out[i] = {static_cast<double>(wrap_i32(running)), 0.0};
    running =
        fn == ScanFn::sum ? static_cast<std::int64_t>(wrap_i32(running + x[i])) : std::max<std::int64_t>(running, x[i]);
    if (!exclusive)
      out[i] = {static_cast<double>(wrap_i32(running)), 0.0};
  }
}

void softmax(std::span<const float> row, bool log, std::span<Expected> out) {
  double m = -kInf;
  for (float v : row)
    m = std::max(m, static_cast<double>(v));
  double s = 0.0;
  for (float v : row)
    s += std::exp(static_cast<double>(v) - m);
  const double log_s = std::log(s);
  double max_y = 0.0;
  for (std::size_t i = 0; i < row.size(); ++i) {
    const double shifted = static_cast<double>(row[i]) - m;
    if (log) {
      // Terms of magnitude |x - m| and log(s) enter the float32 result, and log(s) carries an absolute error of
      // about the relative error of the float32 sum s >= 1 (the "+ 1"), however small log(s) is.
      out[i] = {shifted - log_s, (std::isfinite(shifted) ? std::fabs(shifted) : 0.0) + std::fabs(log_s) + 1.0};
    } else {
      out[i] = {std::exp(shifted) / s, 0.0};
      max_y = std::max(max_y, out[i].value);
    }
  }
  if (!log) {
    // Relative to each probability, with a floor of 1e-6 of the row's largest (tiny probabilities come from
    // exp of large negative arguments, where a fast exp loses relative accuracy).
    for (Expected& e : out)
      e.scale = e.value + 1e-6 * max_y;
  }
}

MapExpected map(MapFn fn, float x, float scale, float shift, float lo, float hi) {
  const double a = scale, v = a * x + shift; // a * x is exact in double; one rounding at the add
  double y = v, slope = 1.0;                 // identity; relu and clamp: slope 1 bounds both sides of a corner
  switch (fn) {
  case MapFn::relu:
    y = v < 0.0 ? 0.0 : v;
    break;
  case MapFn::exp:
    y = std::exp(v);
    slope = y;
    break;
  case MapFn::tanh:
    y = std::tanh(v);
    slope = 1.0 - y * y;
    break;
  case MapFn::clamp:
    y = v < lo ? lo : (v > hi ? hi : v);
    break;
  case MapFn::identity:
    break;
  }
  // NaN and infinities are exact (scale 0): the executor must produce the same.
  if (!std::isfinite(y) || !std::isfinite(v))
    return {{y, 0.0}, 0.0};
  const double entered = std::fabs(v) + std::fabs(a * x) + std::fabs(static_cast<double>(shift));
  return {{y, slope * entered + std::fabs(y)}, std::fabs(a) * slope};
}

void histogram(std::span<const std::int32_t> keys, std::span<std::int32_t> counts) {
  std::fill(counts.begin(), counts.end(), 0);
  const auto bins = static_cast<std::int64_t>(counts.size());
  for (const std::int32_t k : keys)
    if (k >= 0 && k < bins)
      ++counts[static_cast<std::size_t>(k)];
}

namespace {
template <class T> std::int64_t select_impl(CmpFn cmp, std::span<const T> x, T threshold, std::span<T> out) {
  std::int64_t count = 0;
  for (const T v : x)
    if (kernels::select_keep(cmp, v, threshold))
      out[static_cast<std::size_t>(count++)] = v;
  return count;
}
} // namespace

std::int64_t select(CmpFn cmp, std::span<const float> x, float threshold, std::span<float> out) {
  return select_impl(cmp, x, threshold, out);
}
std::int64_t select(CmpFn cmp, std::span<const std::int32_t> x, std::int32_t threshold, std::span<std::int32_t> out) {
  return select_impl(cmp, x, threshold, out);
}

double tolerance(OpKind op, DType dtype, ReduceFn rfn, ScanFn sfn) {
  if (dtype == DType::i32)
    return 0.0;
  switch (op) {
  case OpKind::reduce:
    return rfn == ReduceFn::sum ? 1e-5 : 0.0;
  case OpKind::scan:
    return sfn == ScanFn::sum ? 1e-5 : 0.0;
  case OpKind::softmax:
  case OpKind::map:
    return 1e-5;
  case OpKind::histogram:
  case OpKind::scatter:
  case OpKind::select:
    return 0.0; // exact: counts, indices and copies
  }
  return 0.0;
}

double scaled_error(double out, const Expected& e) {
  if (std::isnan(out))
    return std::isnan(e.value) ? 0.0 : std::numeric_limits<double>::infinity();
  if (out == e.value)
    return 0.0;
  if (e.scale <= 0.0)
    return std::numeric_limits<double>::infinity();
  return std::fabs(out - e.value) / e.scale;
}

} // namespace gridflow::ref
