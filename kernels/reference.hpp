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

namespace gridflow::ref {

struct Expected {
  double value = 0.0;
  double scale = 0.0; // 0: exact
};

// Identity of a reduction / scan in its element type (what an empty range reduces to; the first output of an
// exclusive scan). argmax of an empty range is -1.
double identity_f32(ReduceFn);
std::int32_t identity_i32(ReduceFn);
inline double identity_f32(ScanFn fn) { return identity_f32(fn == ScanFn::sum ? ReduceFn::sum : ReduceFn::max); }
inline std::int32_t identity_i32(ScanFn fn) { return identity_i32(fn == ScanFn::sum ? ReduceFn::sum : ReduceFn::max); }

// Reductions of a 1-D range. i32 sums wrap modulo 2^32 exactly as the device's two's-complement adds do.
// argmax returns the first index of the maximum.
Expected reduce(ReduceFn fn, std::span<const float> x);
Expected reduce(ReduceFn fn, std::span<const std::int32_t> x);

// Inclusive or exclusive scans of a 1-D range; out.size() == x.size().
void scan(ScanFn fn, bool exclusive, std::span<const float> x, std::span<Expected> out);
void scan(ScanFn fn, bool exclusive, std::span<const std::int32_t> x, std::span<Expected> out);

// Numerically stable softmax (or log-softmax) of one row; out.size() == row.size() >= 1.
void softmax(std::span<const float> row, bool log, std::span<Expected> out);

// Tolerances (relative to Expected::scale) a float32 implementation must meet; 0 for exact results.
double tolerance(OpKind op, DType dtype, ReduceFn rfn = ReduceFn::sum, ScanFn sfn = ScanFn::sum);

// Error of one element in units of its tolerance scale: 0 when exact; +inf for NaN or any mismatch of an
// exact result.
double scaled_error(double out, const Expected& e);

} // namespace gridflow::ref
