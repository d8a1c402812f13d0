// The elementwise map (kernels/map.hpp) over a range of f32, by one block.
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/map.hpp"

#include <cuda/std/cstdint>

namespace gridflow::kernels {

// y[i] = map_apply<F>(x[i]) for i in [0, n), by all THREADS threads of the block; x and y may be the same range
// (each element is read and written by one thread, read first). When both policies are vectorizable and x and y
// share their 16-byte phase, the aligned middle moves as 16-byte loads and stores, eight per thread in flight;
// otherwise every element is loaded and stored through the policies one by one (for_each_owned's order).
template <int THREADS, MapFn F, class Load, class Store>
__device__ void block_map(const float* x, float* y, long long n, const MapParams& p, Load load, Store store) {
  const auto phase = [](const void* q) { return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(q) & 15u); };
  if constexpr (Load::kVectorizable && Store::kVectorizable) {
    if (phase(x) == phase(y)) {
      const int tid = static_cast<int>(threadIdx.x);
      long long head = static_cast<long long>(((16u - phase(x)) & 15u) / 4u);
      if (head > n)
        head = n;
      for (long long i = tid; i < head; i += THREADS)
        y[i] = map_apply<F>(x[i], p);
      const long long groups = (n - head) / 4;
      const auto* vx = reinterpret_cast<const float4*>(x + head);
      auto* vy = reinterpret_cast<float4*>(y + head);
      const auto apply4 = [&p](float4 v) {
        return make_float4(map_apply<F>(v.x, p), map_apply<F>(v.y, p), map_apply<F>(v.z, p), map_apply<F>(v.w, p));
      };
      constexpr int kInFlight = 8;
      long long g = tid;
      for (; g + (kInFlight - 1LL) * THREADS < groups; g += kInFlight * static_cast<long long>(THREADS)) {
        float4 r[kInFlight];
#pragma unroll
        for (int u = 0; u < kInFlight; ++u)
          r[u] = vx[g + static_cast<long long>(u) * THREADS];
#pragma unroll
        for (int u = 0; u < kInFlight; ++u)
          vy[g + static_cast<long long>(u) * THREADS] = apply4(r[u]);
      }
      for (; g < groups; g += THREADS)
        vy[g] = apply4(vx[g]);
      for (long long j = head + 4 * groups + tid; j < n; j += THREADS)
        y[j] = map_apply<F>(x[j], p);
      return;
    }
  }
  for_each_owned<THREADS>(x, n, load, [&](long long i, float v) { store(y + i, map_apply<F>(v, p)); });
}

} // namespace gridflow::kernels
