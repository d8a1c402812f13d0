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

// Calls f(i, x[i]) for every i in [0, n) that this thread owns: threads take elements in a block-strided
// pattern (coalesced), with 16-byte vector loads and four loads in flight over the aligned middle part when the
// Load policy allows. The order in which one thread visits its elements depends only on (x's alignment, n,
// THREADS), so per-thread accumulations are deterministic.
template <int THREADS, class T, class Load, class F>
__device__ __forceinline__ void for_each_owned(const T* x, long long n, Load load, F&& f) {
  const int tid = static_cast<int>(threadIdx.x);
  if constexpr (Load::kVectorizable && sizeof(T) == 4) {
    using V = typename Vec4<T>::type;
    const auto addr = reinterpret_cast<std::uintptr_t>(x);
    long long head = static_cast<long long>(((16u - (addr & 15u)) & 15u) / sizeof(T));
    if (head > n) head = n;
    for (long long i = tid; i < head; i += THREADS) f(i, x[i]);
    const V* v = reinterpret_cast<const V*>(x + head);
    const long long nv = (n - head) / 4;
    long long i = tid;
    for (; i + 3LL * THREADS < nv; i += 4LL * THREADS) {
      const V a = v[i], b = v[i + THREADS], c = v[i + 2LL * THREADS], d = v[i + 3LL * THREADS];
      const long long base = head + 4 * i;
      f(base, a.x), f(base + 1, a.y), f(base + 2, a.z), f(base + 3, a.w);
      const long long bb = base + 4LL * THREADS;
      f(bb, b.x), f(bb + 1, b.y), f(bb + 2, b.z), f(bb + 3, b.w);
      const long long cb = bb + 4LL * THREADS;
      f(cb, c.x), f(cb + 1, c.y), f(cb + 2, c.z), f(cb + 3, c.w);
      const long long db = cb + 4LL * THREADS;
      f(db, d.x), f(db + 1, d.y), f(db + 2, d.z), f(db + 3, d.w);
    }
    for (; i < nv; i += THREADS) {
      const V a = v[i];
      const long long base = head + 4 * i;
      f(base, a.x), f(base + 1, a.y), f(base + 2, a.z), f(base + 3, a.w);
    }
    for (long long j = head + 4 * nv + tid; j < n; j += THREADS) f(j, x[j]);
  } else {
    for (long long i = tid; i < n; i += THREADS) f(i, load(x + i));
  }
}

} // namespace gridflow::kernels
