// The elementwise map: y = f(scale * x + shift) over f32, with f one of identity, relu, exp, tanh and clamp to
// [lo, hi]. One definition for every executor, so the GPU and the CPU round alike: the affine step is one fused
// multiply-add (one rounding), relu and clamp are exact on its result, exp and tanh are the platform's
// single-precision functions (within a few ulp; the reference check allows for it).
//
// IEEE semantics: a NaN input gives NaN (relu and clamp pass NaN through, as torch does: a comparison with NaN is
// false); infinities follow the arithmetic (exp(-inf) = 0, tanh(+-inf) = +-1, relu(-inf) = 0, clamp(+inf) = hi).
#pragma once

#include "kernels/host_device.hpp"
#include "kernels/op_types.hpp"

#include <math.h>

namespace gridflow::kernels {

// The constants of one map task (TaskDesc::consts carries their bits).
struct MapParams {
  float scale = 1.0f;
  float shift = 0.0f;
  float lo = 0.0f; // clamp only
  float hi = 0.0f; // clamp only
};

template <MapFn F> GRIDFLOW_HOST_DEVICE float map_apply(float x, const MapParams& p) {
  const float v = ::fmaf(p.scale, x, p.shift);
  if constexpr (F == MapFn::relu)
    return v < 0.0f ? 0.0f : v;
  else if constexpr (F == MapFn::exp)
    return ::expf(v);
  else if constexpr (F == MapFn::tanh)
    return ::tanhf(v);
  else if constexpr (F == MapFn::clamp)
    return v < p.lo ? p.lo : (v > p.hi ? p.hi : v);
  else
    return v;
}

// Calls body.template operator()<F>() with the MapFn `fn` as a template argument (identity for an unknown value;
// the descriptor checks refuse one before any body runs).
#ifdef __CUDACC__
#pragma nv_exec_check_disable // Body is a device lambda in device code, a host one in host code
#endif
template <class Body> GRIDFLOW_HOST_DEVICE void with_map_fn(MapFn fn, Body&& body) {
  switch (fn) {
  case MapFn::relu:
    body.template operator()<MapFn::relu>();
    break;
  case MapFn::exp:
    body.template operator()<MapFn::exp>();
    break;
  case MapFn::tanh:
    body.template operator()<MapFn::tanh>();
    break;
  case MapFn::clamp:
    body.template operator()<MapFn::clamp>();
    break;
  default:
    body.template operator()<MapFn::identity>();
    break;
  }
}

inline constexpr std::uint32_t kMapFnCount = 5;

} // namespace gridflow::kernels
