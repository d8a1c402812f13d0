// How task bodies read inputs and write outputs. Bodies are templates over a Load and a Store policy so the
// same math serves plain reads (16-byte vector loads allowed) and sentinel-mode reads (each element polled).
// Policies:
//   Load:  static constexpr bool kVectorizable;  T operator()(const T* p) const;
//   Store: static constexpr bool kVectorizable;  void operator()(T* p, T v) const;
// The runtime supplies the polling/canonicalising policies; kernels/ only defines the plain ones.
#pragma once

#include <cuda/std/cstdint>

namespace gridflow::kernels {

struct PlainLoad {
  static constexpr bool kVectorizable = true;
  template <class T> __device__ __forceinline__ T operator()(const T* p) const { return *p; }
};

struct PlainStore {
  static constexpr bool kVectorizable = true;
  template <class T> __device__ __forceinline__ void operator()(T* p, T v) const { *p = v; }
};

template <class T> struct Vec4;
template <> struct Vec4<float> { using type = float4; };
template <> struct Vec4<std::int32_t> { using type = int4; };

// Calls f(i, x[i]) for every i in [0, n) that this thread owns, in a fixed order: the elements before x's first
// 16-byte boundary (block-strided), then groups of four consecutive elements (thread t takes groups t, t +
// THREADS, ...), then the tail. With a vectorizable Load each group is one 16-byte load, eight in flight (the
// megakernel runs 8-16 warps per SM, so each thread must keep many bytes in flight); otherwise the same elements
// are loaded one by one in the same order. Ownership and order depend only on (x's alignment, n, THREADS), never
// on the Load policy, so a polled run (sentinel mode) folds bit-identically to a plain one.
template <int THREADS, class T, class Load, class F>
__device__ __forceinline__ void for_each_owned(const T* x, long long n, Load load, F&& f) {
  static_assert(sizeof(T) == 4, "4-byte elements");
  const int tid = static_cast<int>(threadIdx.x);
  const auto addr = reinterpret_cast<std::uintptr_t>(x);
  long long head = static_cast<long long>(((16u - (addr & 15u)) & 15u) / sizeof(T));
  if (head > n)
    head = n;
  for (long long i = tid; i < head; i += THREADS)
    f(i, load(x + i));
  const long long groups = (n - head) / 4;
  auto group = [&](long long g) {
    const long long base = head + 4 * g;
    if constexpr (Load::kVectorizable) {
      const auto v = *reinterpret_cast<const typename Vec4<T>::type*>(x + base);
      f(base, v.x), f(base + 1, v.y), f(base + 2, v.z), f(base + 3, v.w);
    } else {
      for (int j = 0; j < 4; ++j)
        f(base + j, load(x + base + j));
    }
  };
  long long g = tid;
  if constexpr (Load::kVectorizable) {
    // kInFlight independent 16-byte loads issued before the first use, consumed in ownership order.
    constexpr int kInFlight = 8;
    using V = typename Vec4<T>::type;
    const V* v = reinterpret_cast<const V*>(x + head);
    for (; g + (kInFlight - 1LL) * THREADS < groups; g += kInFlight * static_cast<long long>(THREADS)) {
      V r[kInFlight];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u)
        r[u] = v[g + static_cast<long long>(u) * THREADS];
#pragma unroll
      for (int u = 0; u < kInFlight; ++u) {
        const long long base = head + 4 * (g + static_cast<long long>(u) * THREADS);
        f(base, r[u].x), f(base + 1, r[u].y), f(base + 2, r[u].z), f(base + 3, r[u].w);
      }
    }
  }
  for (; g < groups; g += THREADS)
    group(g);
  for (long long j = head + 4 * groups + tid; j < n; j += THREADS)
    f(j, load(x + j));
}

} // namespace gridflow::kernels
