// Device-side combine functions and identities for the ops' element types, and the warp collectives built on
// them (shuffles, as the seeds teach: butterfly all-reduce, shfl_up scan). Every function here is deterministic:
// the association depends only on lane ids, never on timing.
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/limits>

namespace gridflow::kernels {

struct Sum {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
  template <class T> __device__ __forceinline__ static T identity() { return T(0); }
};

struct Max {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  __device__ __forceinline__ std::int32_t operator()(std::int32_t a, std::int32_t b) const { return a > b ? a : b; }
  template <class T> __device__ __forceinline__ static T identity() {
    if constexpr (cuda::std::is_same_v<T, float>)
      return -cuda::std::numeric_limits<float>::infinity();
    else
      return cuda::std::numeric_limits<T>::min();
  }
};

struct Min {
  __device__ __forceinline__ float operator()(float a, float b) const { return fminf(a, b); }
  __device__ __forceinline__ std::int32_t operator()(std::int32_t a, std::int32_t b) const { return a < b ? a : b; }
  template <class T> __device__ __forceinline__ static T identity() {
    if constexpr (cuda::std::is_same_v<T, float>)
      return cuda::std::numeric_limits<float>::infinity();
    else
      return cuda::std::numeric_limits<T>::max();
  }
};

// argmax state: the best value and its index; index < 0 means "nothing seen". Ties keep the lower index, so the
// result is the first maximum whatever the association.
template <class T> struct ArgBest {
  T value;
  long long index;
};

struct ArgMax {
  template <class T> __device__ __forceinline__ ArgBest<T> operator()(ArgBest<T> a, ArgBest<T> b) const {
    if (a.index < 0)
      return b;
    if (b.index < 0)
      return a;
    return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
  }
  template <class T> __device__ __forceinline__ static ArgBest<T> identity() { return {T(0), -1}; }
};

// Butterfly all-reduce over the 32 lanes: every lane gets the result.
template <class T, class Op> __device__ __forceinline__ T warp_allreduce(T x, Op op) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1)
    x = op(x, __shfl_xor_sync(0xffffffffu, x, k));
  return x;
}

template <class T> __device__ __forceinline__ ArgBest<T> warp_allreduce(ArgBest<T> x, ArgMax op) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) {
    ArgBest<T> o;
    o.value = __shfl_xor_sync(0xffffffffu, x.value, k);
    o.index = __shfl_xor_sync(0xffffffffu, x.index, k);
    x = op(x, o);
  }
  return x;
}

// Inclusive scan over the 32 lanes (Kogge-Stone with shfl_up).
template <class T, class Op> __device__ __forceinline__ T warp_inclusive_scan(T x, Op op) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= d)
      x = op(y, x);
  }
  return x;
}

} // namespace gridflow::kernels
