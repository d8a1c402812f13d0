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
template <> struct Vec4<float> {
  using type = float4;
};
template <> struct Vec4<std::int32_t> {
  using type = int4;
};

// Calls f(i, x[i]) for every i in [0, n) that this thread owns, in a fixed order: the elements before x's first
// 16-byte boundary (block-strided), then groups of four consecutive elements (thread t takes groups t, t +
// THREADS, ...), then the tail. With a vectorizable Load each group is one 16-byte load, four in flight; otherwise
// the same elements are loaded one by one in the same order. Ownership and order depend only on (x's alignment,
// n, THREADS), never on the Load policy, so a polled run (sentinel mode) folds bit-identically to a plain one.
template <int THREADS, class T, class Load, class F>
__device__ __forceinline__ void for_each_owned(const T* x, long long n, Load load, F&& f) {
  static_assert(sizeof(T) == 4, "4-byte elements");
  const int tid = static_cast<int>(threadIdx.x);
  const auto addr = reinterpret_cast<std::uintptr_t>(x);
  long long head = static_cast<long long>(((16u - (addr & 15u)) & 15u) / sizeof(T));
  if (head > n) head = n;
  for (long long i = tid; i < head; i += THREADS) f(i, load(x + i));
  const long long groups = (n - head) / 4;
  auto group = [&](long long g) {
    const long long base = head + 4 * g;
    if constexpr (Load::kVectorizable) {
      const auto v = *reinterpret_cast<const typename Vec4<T>::type*>(x + base);
      f(base, v.x), f(base + 1, v.y), f(base + 2, v.z), f(base + 3, v.w);
    } else {
      for (int j = 0; j < 4; ++j) f(base + j, load(x + base + j));
    }
  };
  long long g = tid;
  if constexpr (Load::kVectorizable) {
    // Four independent 16-byte loads in flight before the first use.
    using V = typename Vec4<T>::type;
    const V* v = reinterpret_cast<const V*>(x + head);
    for (; g + 3LL * THREADS < groups; g += 4LL * THREADS) {
      const V a = v[g], b = v[g + THREADS], c = v[g + 2LL * THREADS], d = v[g + 3LL * THREADS];
      const long long base = head + 4 * g, step = 4LL * THREADS;
      f(base, a.x), f(base + 1, a.y), f(base + 2, a.z), f(base + 3, a.w);
      f(base + step, b.x), f(base + step + 1, b.y), f(base + step + 2, b.z), f(base + step + 3, b.w);
      f(base + 2 * step, c.x), f(base + 2 * step + 1, c.y), f(base + 2 * step + 2, c.z), f(base + 2 * step + 3, c.w);
      f(base + 3 * step, d.x), f(base + 3 * step + 1, d.y), f(base + 3 * step + 2, d.z), f(base + 3 * step + 3, d.w);
    }
  }
  for (; g < groups; g += THREADS) group(g);
  for (long long j = head + 4 * groups + tid; j < n; j += THREADS) f(j, load(x + j));
}

} // namespace gridflow::kernels
