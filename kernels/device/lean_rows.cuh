// Lean row bodies: one row of up to lean_max_cols(THREADS) columns held by the whole block in registers (a float4 or
// int4 group per thread per pass), the row ops as a CUDA engineer writes them for latency-bound tiles of a few rows:
// one load and one store per element, warp shuffles, one shared-memory exchange per block reduction. They run the
// tiles the host calls lean (runtime/tiles.hpp: lean_rows), in both megakernels, so a tile's bits never depend on
// which kernel ran it.
//
// Layout (every function below): thread t holds, for pass v < kLeanVecs, the row's elements 4 * (v * THREADS + t) + k,
// k < 4. Elements past the row's end hold padding the op ignores. Every function is called by all threads of the
// block with the same arguments and returns the same value in all; block reductions use `s` and one barrier each,
// alternating its two halves (`half`, which the caller keeps across tiles), so two consecutive reductions never race
// and a caller needs no barrier between them, within a tile or across tiles.
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/device/functors.cuh"
#include "kernels/device/softmax.cuh"
#include "kernels/op_types.hpp"
#include "kernels/tile_shapes.hpp"

#include <cuda/std/bit>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>

namespace gridflow::kernels {

// One row as the block holds it: raw 32-bit words (f32 or i32 bits), so a row can be kept between ops of either
// dtype (on-chip forwarding).
struct LeanRow {
  std::uint32_t w[kLeanVecs][4];
};

template <int THREADS> struct LeanStorage {
  static constexpr int kWarps = THREADS / 32;
  static_assert(kWarps % 4 == 0, "the warps' words are read four at a time");
  alignas(16) std::uint32_t word[2][kWarps];
  long long index[2][kWarps]; // argmax
};

// Every thread: the kWarps words of s.word[half], read 16 bytes at a time (broadcast loads).
template <int THREADS, class T>
__device__ __forceinline__ void lean_warp_words(const LeanStorage<THREADS>& s, int half,
                                                T (&y)[LeanStorage<THREADS>::kWarps]) {
  const uint4* q = reinterpret_cast<const uint4*>(s.word[half]);
#pragma unroll
  for (int i = 0; i < LeanStorage<THREADS>::kWarps / 4; ++i) {
    const uint4 w = q[i];
    y[4 * i] = cuda::std::bit_cast<T>(w.x), y[4 * i + 1] = cuda::std::bit_cast<T>(w.y);
    y[4 * i + 2] = cuda::std::bit_cast<T>(w.z), y[4 * i + 3] = cuda::std::bit_cast<T>(w.w);
  }
}

// The pairwise fold of y[0, N) (N a power of two): ((y0 y1) (y2 y3)) ..., the same order in every thread.
template <int N, class T, class Op> __device__ __forceinline__ T lean_tree_fold(T (&y)[N], Op op) {
#pragma unroll
  for (int step = 1; step < N; step *= 2)
#pragma unroll
    for (int i = 0; i + step < N; i += 2 * step)
      y[i] = op(y[i], y[i + step]);
  return y[0];
}

template <class T> __device__ __forceinline__ T lean_get(const LeanRow& r, int v, int k) {
  return cuda::std::bit_cast<T>(r.w[v][k]);
}
template <class T> __device__ __forceinline__ void lean_set(LeanRow& r, int v, int k, T x) {
  r.w[v][k] = cuda::std::bit_cast<std::uint32_t>(x);
}

// This thread's index in the block (THREADS threads by contract), with its range [0, THREADS) visible to the compiler,
// so a column test against a full row (n == lean_max_cols(THREADS)) folds away.
template <int THREADS> __device__ __forceinline__ int lean_thread() {
  static_assert((THREADS & (THREADS - 1)) == 0, "a power-of-two block");
  return static_cast<int>(threadIdx.x & (THREADS - 1));
}

// Column of (pass v, element k) for this thread.
template <int THREADS> __device__ __forceinline__ int lean_col(int v, int k) {
  return 4 * (v * THREADS + lean_thread<THREADS>()) + k;
}

// Whether the row at x (n columns) takes whole 16-byte groups: aligned, and n a multiple of 4.
template <class T> __device__ __forceinline__ bool lean_vector_row(const T* x, int n) {
  return (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0 && (n & 3) == 0;
}

// Loads row x (n <= lean_max_cols(THREADS) columns); elements past n get `pad`. `vector`: the caller knows that
// lean_vector_row(x, n) holds (a constant true folds the test away).
template <int THREADS, class T, class Load>
__device__ __forceinline__ void lean_load(LeanRow& r, const T* x, int n, T pad, Load load, bool vector = false) {
  const bool vec = Load::kVectorizable && (vector || lean_vector_row(x, n));
#pragma unroll
  for (int v = 0; v < kLeanVecs; ++v) {
    const int c = lean_col<THREADS>(v, 0);
    if (vec && c < n) {
      const auto q = *reinterpret_cast<const typename Vec4<T>::type*>(x + c);
      lean_set(r, v, 0, q.x), lean_set(r, v, 1, q.y), lean_set(r, v, 2, q.z), lean_set(r, v, 3, q.w);
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        lean_set(r, v, k, c + k < n ? load(x + c + k) : pad);
    }
  }
}

// Stores the row's n columns to y. `vector`: as for lean_load.
template <int THREADS, class T, class Store>
__device__ __forceinline__ void lean_store(const LeanRow& r, T* y, int n, Store store, bool vector = false) {
  const bool vec = Store::kVectorizable && (vector || lean_vector_row(y, n));
#pragma unroll
  for (int v = 0; v < kLeanVecs; ++v) {
    const int c = lean_col<THREADS>(v, 0);
    if (vec && c < n) {
      typename Vec4<T>::type q;
      q.x = lean_get<T>(r, v, 0), q.y = lean_get<T>(r, v, 1), q.z = lean_get<T>(r, v, 2), q.w = lean_get<T>(r, v, 3);
      *reinterpret_cast<typename Vec4<T>::type*>(y + c) = q;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (c + k < n)
          store(y + c + k, lean_get<T>(r, v, k));
    }
  }
}

// Block all-reduce of one value per thread: a butterfly within each warp, the warps' values exchanged through
// s.word[half], then every thread folds them in the same pairwise order: every thread gets the same bits.
template <int THREADS, class T, class Op>
__device__ __forceinline__ T lean_allreduce(T x, Op op, LeanStorage<THREADS>& s, int& half) {
  constexpr int kWarps = LeanStorage<THREADS>::kWarps;
  static_assert((kWarps & (kWarps - 1)) == 0, "a power-of-two number of warps");
  const int lane = lean_thread<THREADS>() & 31, warp = lean_thread<THREADS>() >> 5;
  x = warp_allreduce(x, op);
  if (lane == 0)
    s.word[half][warp] = cuda::std::bit_cast<std::uint32_t>(x);
  __syncthreads();
  T y[kWarps];
  lean_warp_words<THREADS>(s, half, y);
  half ^= 1;
  return lean_tree_fold(y, op);
}

template <int THREADS>
__device__ __forceinline__ ArgBest<float> lean_allreduce(ArgBest<float> x, ArgMax op, LeanStorage<THREADS>& s,
                                                         int& half) {
  constexpr int kWarps = LeanStorage<THREADS>::kWarps;
  const int lane = lean_thread<THREADS>() & 31, warp = lean_thread<THREADS>() >> 5;
  x = warp_allreduce(x, op);
  if (lane == 0) {
    s.word[half][warp] = cuda::std::bit_cast<std::uint32_t>(x.value);
    s.index[half][warp] = x.index;
  }
  __syncthreads();
  ArgBest<float> y{cuda::std::bit_cast<float>(s.word[half][lane & (kWarps - 1)]), s.index[half][lane & (kWarps - 1)]};
#pragma unroll
  for (int k = kWarps / 2; k > 0; k >>= 1) {
    ArgBest<float> o;
    o.value = __shfl_xor_sync(0xffffffffu, y.value, k);
    o.index = __shfl_xor_sync(0xffffffffu, y.index, k);
    y = op(y, o);
  }
  half ^= 1;
  return y;
}

// A float's bits as an int that orders like the float (negative values' magnitude bits flipped): max over these ints
// is the float maximum, a NaN of either sign counting as above or below every number, which is what a softmax then
// returns anyway (NaN everywhere). Its own inverse.
__device__ __forceinline__ int lean_ordered(int bits) {
  return bits ^ ((bits >> 31) & 0x7fffffff);
}

// Block maximum of one float per thread: one warp reduction instruction (redux.sync) on the ordered ints, the warps'
// maxima exchanged through s.word[half] as for lean_allreduce. Every thread gets the same bits.
template <int THREADS> __device__ __forceinline__ float lean_block_max(float x, LeanStorage<THREADS>& s, int& half) {
  constexpr int kWarps = LeanStorage<THREADS>::kWarps;
  const int lane = lean_thread<THREADS>() & 31, warp = lean_thread<THREADS>() >> 5;
  const int w = __reduce_max_sync(0xffffffffu, lean_ordered(__float_as_int(x)));
  if (lane == 0)
    s.word[half][warp] = static_cast<std::uint32_t>(w);
  __syncthreads();
  int y[kWarps];
  lean_warp_words<THREADS>(s, half, y);
  half ^= 1;
  return __int_as_float(lean_ordered(lean_tree_fold(y, [](int a, int b) { return a > b ? a : b; })));
}

// 1 / x to within one ulp (the hardware's approximation; x >= 1 here: the row's maximum contributes exp(0)).
__device__ __forceinline__ float lean_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// Row softmax (log: log-softmax) of n columns: max, then the sum of exp(x - max) (fast_exp), then the scaled values.
template <int THREADS>
__device__ __forceinline__ LeanRow lean_softmax(const LeanRow& x, int n, bool log, LeanStorage<THREADS>& s, int& half) {
  float m = -cuda::std::numeric_limits<float>::infinity();
#pragma unroll
  for (int v = 0; v < kLeanVecs; ++v)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (lean_col<THREADS>(v, k) < n)
        m = fmaxf(m, lean_get<float>(x, v, k));
  m = lean_block_max<THREADS>(m, s, half);
  LeanRow y;
  float sum = 0.0f;
#pragma unroll
  for (int v = 0; v < kLeanVecs; ++v)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float e = lean_col<THREADS>(v, k) < n ? fast_exp(lean_get<float>(x, v, k) - m) : 0.0f;
      lean_set(y, v, k, e);
      sum += e;
    }
  sum = lean_allreduce<THREADS>(sum, Sum{}, s, half);
  // Only the normalizer the op needs: the log of the sum (log-softmax) or its reciprocal.
  if (log) {
    const float log_sum = logf(sum);
#pragma unroll
    for (int v = 0; v < kLeanVecs; ++v)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        lean_set(y, v, k, (lean_get<float>(x, v, k) - m) - log_sum);
  } else {
    const float scale = lean_rcp(sum);
#pragma unroll
    for (int v = 0; v < kLeanVecs; ++v)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        lean_set(y, v, k, lean_get<float>(y, v, k) * scale);
  }
  return y;
}

// Row scan (inclusive or exclusive) of n columns under op: each thread scans its four elements, a warp scans the
// threads' totals (shfl_up), the warps' totals go through s; pass v starts from the fold of every earlier pass.
// `total`: the fold of the row's n elements, the same bits in every thread.
template <int THREADS, class T, class Op>
__device__ __forceinline__ LeanRow lean_scan(const LeanRow& x, int n, bool exclusive, Op op, LeanStorage<THREADS>& s,
                                             int& half, T& total_out) {
  constexpr int kWarps = LeanStorage<THREADS>::kWarps;
  const int lane = lean_thread<THREADS>() & 31, warp = lean_thread<THREADS>() >> 5;
  const T identity = Op::template identity<T>();
  LeanRow y;
  T carry = identity;
#pragma unroll
  for (int v = 0; v < kLeanVecs; ++v) {
    if (4 * v * THREADS >= n)
      break; // uniform: every thread sees the same n
    T incl[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const T e = lean_col<THREADS>(v, k) < n ? lean_get<T>(x, v, k) : identity;
      incl[k] = k == 0 ? e : op(incl[k - 1], e);
    }
    const T warp_incl = warp_inclusive_scan(incl[3], op);
    T thread_excl = __shfl_up_sync(0xffffffffu, warp_incl, 1);
    if (lane == 0)
      thread_excl = identity;
    if (lane == 31)
      s.word[half][warp] = cuda::std::bit_cast<std::uint32_t>(warp_incl);
    __syncthreads();
    T words[kWarps];
    lean_warp_words<THREADS>(s, half, words);
    T warp_prefix = identity, total = identity;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      if (w < warp)
        warp_prefix = op(warp_prefix, words[w]);
      total = op(total, words[w]);
    }
    half ^= 1;
    const T prefix = op(carry, op(warp_prefix, thread_excl));
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const T before = k == 0 ? identity : incl[k - 1];
      lean_set(y, v, k, op(prefix, exclusive ? before : incl[k]));
    }
    carry = op(carry, total);
  }
  total_out = carry;
  return y;
}

template <int THREADS, class T, class Op>
__device__ __forceinline__ LeanRow lean_scan(const LeanRow& x, int n, bool exclusive, Op op, LeanStorage<THREADS>& s,
                                             int& half) {
  T total;
  return lean_scan<THREADS, T>(x, n, exclusive, op, s, half, total);
}

// Row reduction of n columns to its value: sum, max or min (fn is not argmax). Every thread returns the value's bits.
template <int THREADS, class T>
__device__ __forceinline__ std::uint32_t lean_reduce_value(const LeanRow& x, int n, ReduceFn fn,
                                                           LeanStorage<THREADS>& s, int& half) {
  auto fold = [&](auto op) {
    T acc = decltype(op)::template identity<T>();
#pragma unroll
    for (int v = 0; v < kLeanVecs; ++v)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (lean_col<THREADS>(v, k) < n)
          acc = op(acc, lean_get<T>(x, v, k));
    return cuda::std::bit_cast<std::uint32_t>(lean_allreduce<THREADS>(acc, op, s, half));
  };
  return fn == ReduceFn::sum ? fold(Sum{}) : fn == ReduceFn::max ? fold(Max{}) : fold(Min{});
}

// Row reduction of n columns: the value (sum, max, min) or, for argmax, the column of the first maximum (-1 when
// n == 0) as an i32 output. Every thread returns the result's bits.
template <int THREADS, class T>
__device__ __forceinline__ std::uint32_t lean_reduce(const LeanRow& x, int n, ReduceFn fn, LeanStorage<THREADS>& s,
                                                     int& half) {
  if (fn == ReduceFn::argmax) {
    ArgBest<T> best{T(0), -1};
#pragma unroll
    for (int v = 0; v < kLeanVecs; ++v)
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int c = lean_col<THREADS>(v, k);
        if (c < n)
          best = ArgMax{}(best, ArgBest<T>{lean_get<T>(x, v, k), c});
      }
    if constexpr (cuda::std::is_same_v<T, float>) {
      best = lean_allreduce<THREADS>(best, ArgMax{}, s, half);
    } else {
      // i32 values through the float path would lose bits: fold the warps' (value, index) pairs directly.
      constexpr int kWarps = LeanStorage<THREADS>::kWarps;
      const int lane = lean_thread<THREADS>() & 31, warp = lean_thread<THREADS>() >> 5;
      best = warp_allreduce(best, ArgMax{});
      if (lane == 0) {
        s.word[half][warp] = static_cast<std::uint32_t>(best.value);
        s.index[half][warp] = best.index;
      }
      __syncthreads();
      ArgBest<T> r{T(0), -1};
#pragma unroll
      for (int w = 0; w < kWarps; ++w)
        r = ArgMax{}(r, ArgBest<T>{static_cast<T>(s.word[half][w]), s.index[half][w]});
      half ^= 1;
      best = r;
    }
    return static_cast<std::uint32_t>(static_cast<std::int32_t>(best.index));
  }
  return lean_reduce_value<THREADS, T>(x, n, fn, s, half);
}

} // namespace gridflow::kernels
