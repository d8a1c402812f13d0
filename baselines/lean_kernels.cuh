// Lean kernels: one small kernel per row op (and a grid-stride elementwise map), as a CUDA engineer writes it for rows
// up to 4 x 256 x VECS columns: a
// block of 256 threads per row, VECS float4 (int4) groups per thread, warp shuffles plus one shared-memory merge per
// reduction, cub::BlockScan for the row scan. Every kernel opens with the programmatic-dependent-launch calls, so the
// same kernel serves launches with and without PDL: cudaTriggerProgrammaticLaunchCompletion() lets the next kernel of
// the stream launch early, cudaGridDependencySynchronize() waits until the previous one has finished and its writes
// are visible (both return at once in a launch without the PDL attribute).
#pragma once

#include "kernels/map.hpp"

#include <cub/block/block_scan.cuh>
#include <cuda/std/limits>

namespace gridflow::baselines {

inline constexpr int kLeanThreads = 256;

__device__ __forceinline__ void pdl_entry() {
#if __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
#endif
}

// Block all-reduce: warp butterflies, each warp's value to shared memory, every thread folds the eight.
template <class T, class Op> __device__ __forceinline__ T block_allreduce(T v, Op op, T* smem) {
  for (int k = 16; k > 0; k >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, k));
  if ((threadIdx.x & 31) == 0)
    smem[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = smem[0];
#pragma unroll
  for (int w = 1; w < kLeanThreads / 32; ++w)
    r = op(r, smem[w]);
  return r;
}

struct MaxOp {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a > b ? a : b; }
};
struct MinOp {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? a : b; }
};
struct SumOp {
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

template <class T> struct Vec4;
template <> struct Vec4<float> { using type = float4; };
template <> struct Vec4<int> { using type = int4; };

// Loads row `x` (cols columns, cols a multiple of 4 and the row 16-byte aligned when `vec`) into v; pads with `pad`.
template <int VECS, class T>
__device__ __forceinline__ void load_row(T (&v)[VECS][4], const T* x, int cols, bool vec, T pad) {
#pragma unroll
  for (int g = 0; g < VECS; ++g) {
    const int c = 4 * (g * kLeanThreads + threadIdx.x);
    if (vec && c < cols) {
      const auto q = *reinterpret_cast<const typename Vec4<T>::type*>(x + c);
      v[g][0] = q.x, v[g][1] = q.y, v[g][2] = q.z, v[g][3] = q.w;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        v[g][k] = c + k < cols ? x[c + k] : pad;
    }
  }
}

template <int VECS, class T>
__device__ __forceinline__ void store_row(const T (&v)[VECS][4], T* y, int cols, bool vec) {
#pragma unroll
  for (int g = 0; g < VECS; ++g) {
    const int c = 4 * (g * kLeanThreads + threadIdx.x);
    if (vec && c < cols) {
      typename Vec4<T>::type q;
      q.x = v[g][0], q.y = v[g][1], q.z = v[g][2], q.w = v[g][3];
      *reinterpret_cast<typename Vec4<T>::type*>(y + c) = q;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (c + k < cols)
          y[c + k] = v[g][k];
    }
  }
}

// Elementwise map (kernels/map.hpp), grid-stride: 16-byte groups when x and y are 16-byte aligned (vec), else one
// element at a time.
template <MapFn F>
__global__ void __launch_bounds__(kLeanThreads)
    map_kernel(const float* x, float* y, long long n, kernels::MapParams p, int vec) {
  pdl_entry();
  const long long stride = static_cast<long long>(gridDim.x) * kLeanThreads;
  const long long first = static_cast<long long>(blockIdx.x) * kLeanThreads + threadIdx.x;
  long long done = 0;
  if (vec) {
    const long long groups = n / 4;
    for (long long g = first; g < groups; g += stride) {
      const float4 v = reinterpret_cast<const float4*>(x)[g];
      reinterpret_cast<float4*>(y)[g] = make_float4(kernels::map_apply<F>(v.x, p), kernels::map_apply<F>(v.y, p),
                                                    kernels::map_apply<F>(v.z, p), kernels::map_apply<F>(v.w, p));
    }
    done = 4 * groups;
  }
  for (long long i = done + first; i < n; i += stride)
    y[i] = kernels::map_apply<F>(x[i], p);
}

// Row softmax (log: log-softmax), one block per row: row r of x is at x + r * stride.
template <int VECS>
__global__ void __launch_bounds__(kLeanThreads)
    softmax_rows_kernel(const float* x, float* y, int cols, long long stride, int log, int vec) {
  pdl_entry();
  __shared__ float smem[2][kLeanThreads / 32];
  x += blockIdx.x * stride;
  y += blockIdx.x * stride;
  float v[VECS][4];
  load_row<VECS>(v, x, cols, vec, -cuda::std::numeric_limits<float>::infinity());
  float m = -cuda::std::numeric_limits<float>::infinity();
#pragma unroll
  for (int g = 0; g < VECS; ++g)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      m = fmaxf(m, v[g][k]);
  m = block_allreduce(m, MaxOp{}, smem[0]);
  float s = 0.0f;
  float e[VECS][4];
#pragma unroll
  for (int g = 0; g < VECS; ++g)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      e[g][k] = __expf(v[g][k] - m);
      s += e[g][k];
    }
  s = block_allreduce(s, SumOp{}, smem[1]);
  if (log) {
    const float log_s = logf(s);
#pragma unroll
    for (int g = 0; g < VECS; ++g)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        v[g][k] = (v[g][k] - m) - log_s;
  } else {
    const float inv = __frcp_rn(s);
#pragma unroll
    for (int g = 0; g < VECS; ++g)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        v[g][k] = e[g][k] * inv;
  }
  store_row<VECS>(v, y, cols, vec);
}

// Row scan (sum or max; inclusive or exclusive), one block per row, cub::BlockScan over the threads' groups.
template <int VECS, class T, class Op>
__global__ void __launch_bounds__(kLeanThreads)
    scan_rows_kernel(const T* x, T* y, int cols, long long stride, int exclusive, int vec, T identity) {
  pdl_entry();
  using Scan = cub::BlockScan<T, kLeanThreads>;
  __shared__ typename Scan::TempStorage temp;
  x += blockIdx.x * stride;
  y += blockIdx.x * stride;
  T v[VECS][4];
  load_row<VECS>(v, x, cols, vec, identity);
  T carry = identity;
#pragma unroll
  for (int g = 0; g < VECS; ++g) {
    if (4 * g * kLeanThreads >= cols)
      break;
    T incl[4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      incl[k] = k == 0 ? v[g][0] : Op{}(incl[k - 1], v[g][k]);
    T prefix, total;
    Scan(temp).ExclusiveScan(incl[3], prefix, identity, Op{}, total);
    __syncthreads(); // temp is reused by the next group
    prefix = Op{}(carry, prefix);
#pragma unroll
    for (int k = 0; k < 4; ++k)
      v[g][k] = Op{}(prefix, exclusive ? (k == 0 ? identity : incl[k - 1]) : incl[k]);
    carry = Op{}(carry, total);
  }
  store_row<VECS>(v, y, cols, vec);
}

// Row reduction (sum, max, min), one block per row, one output per row.
template <int VECS, class T, class Op>
__global__ void __launch_bounds__(kLeanThreads)
    reduce_rows_kernel(const T* x, T* y, int cols, long long stride, int vec, T identity) {
  pdl_entry();
  __shared__ T smem[kLeanThreads / 32];
  x += blockIdx.x * stride;
  T v[VECS][4];
  load_row<VECS>(v, x, cols, vec, identity);
  T acc = identity;
#pragma unroll
  for (int g = 0; g < VECS; ++g)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      acc = Op{}(acc, v[g][k]);
  acc = block_allreduce(acc, Op{}, smem);
  if (threadIdx.x == 0)
    y[blockIdx.x] = acc;
}

} // namespace gridflow::baselines
