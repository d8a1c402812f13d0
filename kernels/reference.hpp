// CPU references for every op: the oracle of both executors. Floating-point ops accumulate in double.
//
// Each result is an `Expected`: the float64 value and the magnitude its float32 error is measured against.
// A float32 implementation passes when |out - value| <= tolerance * scale. `scale` is the sum of the
// magnitudes that entered the value (sums, scans), |value| plus a row-relative floor (softmax), or 0 for results
// that must match exactly (max, min, argmax, every i32 op).
#pragma once

#include "kernels/op_types.hpp"

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace gridflow::ref {

struct Expected {
  double value = 0.0;
  double scale = 0.0; // 0: exact
};

// Identity of a reduction / scan in its element type (what an empty range reduces to; the first output of an
// exclusive scan). argmax of an empty range is -1.
double identity_f32(ReduceFn);
std::int32_t identity_i32(ReduceFn);
inline double identity_f32(ScanFn fn) {
  return identity_f32(fn == ScanFn::sum ? ReduceFn::sum : ReduceFn::max);
}
inline std::int32_t identity_i32(ScanFn fn) {
  return identity_i32(fn == ScanFn::sum ? ReduceFn::sum : ReduceFn::max);
}

// Reductions of a 1-D range. i32 sums wrap modulo 2^32 exactly as the device's two's-complement adds do.
// argmax returns the first index of the maximum.
Expected reduce(ReduceFn fn, std::span<const float> x);
Expected reduce(ReduceFn fn, std::span<const std::int32_t> x);

// Inclusive or exclusive scans of a 1-D range; out.size() == x.size().
void scan(ScanFn fn, bool exclusive, std::span<const float> x, std::span<Expected> out);
void scan(ScanFn fn, bool exclusive, std::span<const std::int32_t> x, std::span<Expected> out);

// Numerically stable softmax (or log-softmax) of one row; out.size() == row.size() >= 1.
void softmax(std::span<const float> row, bool log, std::span<Expected> out);

// The map (kernels/map.hpp) of one f32 element, in float64 with the f32 constants the device uses (MapParams):
// the value, its error scale (the magnitudes that entered it, times the function's slope, plus |y| for the
// function's own rounding), and `slope`, |dy/dx|, which carries an error of the input into the output.
struct MapExpected {
  Expected e;
  double slope = 0.0;
};
MapExpected map(MapFn fn, float x, float scale, float shift, float lo, float hi);

// The counting ops (contracts in kernels/counting.hpp); all exact.
// histogram: counts.size() is the number of bins.
void histogram(std::span<const std::int32_t> keys, std::span<std::int32_t> counts);
// scatter: calls place(position, index) for every placed key, in index order (position within `out_size`).
template <class Place>
void scatter(std::span<const std::int32_t> keys, std::span<const std::int32_t> offsets, std::int64_t out_size,
             Place place);
// select: writes the kept elements to out[0, count) and returns count.
std::int64_t select(CmpFn cmp, std::span<const float> x, float threshold, std::span<float> out);
std::int64_t select(CmpFn cmp, std::span<const std::int32_t> x, std::int32_t threshold, std::span<std::int32_t> out);

// Tolerances (relative to Expected::scale) a float32 implementation must meet; 0 for exact results.
double tolerance(OpKind op, DType dtype, ReduceFn rfn = ReduceFn::sum, ScanFn sfn = ScanFn::sum);

// Error of one element in units of its tolerance scale: 0 when exact; +inf for NaN or any mismatch of an
// exact result.
double scaled_error(double out, const Expected& e);

template <class Place>
void scatter(std::span<const std::int32_t> keys, std::span<const std::int32_t> offsets, std::int64_t out_size,
             Place place) {
  std::vector<std::int64_t> next(offsets.begin(), offsets.end());
  const auto bins = static_cast<std::int64_t>(offsets.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::int32_t k = keys[i];
    if (k < 0 || k >= bins)
      continue;
    const std::int64_t pos = next[static_cast<std::size_t>(k)]++;
    if (pos >= 0 && pos < out_size)
      place(pos, static_cast<std::int64_t>(i));
  }
}

} // namespace gridflow::ref
