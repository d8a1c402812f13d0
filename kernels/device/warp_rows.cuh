// Warp row bodies: the lean row ops (kernels/device/lean_rows.cuh) with one row held by one warp instead of the whole
// block, so a tile of up to THREADS / 32 rows runs its rows side by side, one per warp, with warp collectives only:
// no shared memory and no block barrier inside a body.
//
// The same bits as the lean bodies, by construction: lane l's group v holds the elements 4 * (32 * v + l) + k, k < 4,
// which are the elements thread 32 * v + l holds in a lean row of the same block size (kLeanVecs == 1), and every
// step is the lean body's step for "warp v" done on group v: the same per-thread folds in the same order, the same
// butterflies and scans over the lanes, the warps' words folded in the same pairwise order, and where a lean body
// takes one lane's value (lane 0's word, lane 31's total, thread 0's store) the same lane's value here. A tile's bits
// therefore do not depend on whether its rows ran as lean rows or warp rows, nor on how many rows a tile holds.
//
// Every function is called by all 32 lanes of one warp with the same arguments and returns the same value in all
// lanes (the row results, lane-distributed as above).
#pragma once

#include "kernels/device/lean_rows.cuh"

namespace gridflow::kernels {

static_assert(kLeanVecs == 1, "warp rows mirror lean rows of one group per thread");

// One row as a warp holds it: group v of lane l is lean thread 32 * v + l's group. GROUPS = THREADS / 32.
template <int GROUPS> struct WarpRow { std::uint32_t w[GROUPS][4]; };

template <int GROUPS> __device__ __forceinline__ int warp_lane() {
  return static_cast<int>(threadIdx.x & 31);
}

// Column of (group v, element k) for this lane: lean_col of thread 32 * v + lane.
template <int GROUPS> __device__ __forceinline__ int warp_col(int v, int k) {
  return 4 * (v * 32 + warp_lane<GROUPS>()) + k;
}

template <class T, int G> __device__ __forceinline__ T warp_get(const WarpRow<G>& r, int v, int k) {
  return cuda::std::bit_cast<T>(r.w[v][k]);
}
template <class T, int G> __device__ __forceinline__ void warp_set(WarpRow<G>& r, int v, int k, T x) {
  r.w[v][k] = cuda::std::bit_cast<std::uint32_t>(x);
}

// Loads row x (n <= 128 * GROUPS columns); elements past n get `pad` (lean_load's rule per group).
template <int G, class T, class Load>
__device__ __forceinline__ void warp_load(WarpRow<G>& r, const T* x, int n, T pad, Load load) {
  const bool vec = Load::kVectorizable && lean_vector_row(x, n);
#pragma unroll
  for (int v = 0; v < G; ++v) {
    const int c = warp_col<G>(v, 0);
    if (vec && c < n) {
      const auto q = *reinterpret_cast<const typename Vec4<T>::type*>(x + c);
      warp_set(r, v, 0, q.x), warp_set(r, v, 1, q.y), warp_set(r, v, 2, q.z), warp_set(r, v, 3, q.w);
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        warp_set(r, v, k, c + k < n ? load(x + c + k) : pad);
    }
  }
}

// Stores the row's n columns to y (lean_store's rule per group).
template <int G, class T, class Store>
__device__ __forceinline__ void warp_store(const WarpRow<G>& r, T* y, int n, Store store) {
  const bool vec = Store::kVectorizable && lean_vector_row(y, n);
#pragma unroll
  for (int v = 0; v < G; ++v) {
    const int c = warp_col<G>(v, 0);
    if (vec && c < n) {
      typename Vec4<T>::type q;
      q.x = warp_get<T>(r, v, 0), q.y = warp_get<T>(r, v, 1), q.z = warp_get<T>(r, v, 2), q.w = warp_get<T>(r, v, 3);
      *reinterpret_cast<typename Vec4<T>::type*>(y + c) = q;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (c + k < n)
          store(y + c + k, warp_get<T>(r, v, k));
    }
  }
}

// lean_allreduce of the per-group values x[v]: a butterfly per group (the lean body's butterfly in warp v), then the
// groups' values folded pairwise. `first_lane`: take lane 0's butterfly result (the word a lean body's lane 0 writes)
// where the op may give lanes different bits; Sum (IEEE addition commutes bit for bit) needs no shuffle.
template <int G, class T, class Op> __device__ __forceinline__ T warp_allreduce_groups(T (&x)[G], Op op) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1)
#pragma unroll
    for (int v = 0; v < G; ++v)
      x[v] = op(x[v], __shfl_xor_sync(0xffffffffu, x[v], k));
  if constexpr (!cuda::std::is_same_v<Op, Sum>) {
#pragma unroll
    for (int v = 0; v < G; ++v)
      x[v] = __shfl_sync(0xffffffffu, x[v], 0);
  }
  return lean_tree_fold(x, op);
}

// Row softmax (log: log-softmax): lean_softmax's steps.
template <int G> __device__ __forceinline__ WarpRow<G> warp_softmax(const WarpRow<G>& x, int n, bool log) {
  // The maximum: each group's fmaxf fold (a lean thread's), then the exact integer maximum of the ordered bits over
  // every group and lane (lean_block_max: redux.sync per warp, then the warps' words).
  int best = lean_ordered(__float_as_int(-cuda::std::numeric_limits<float>::infinity()));
#pragma unroll
  for (int v = 0; v < G; ++v) {
    float m = -cuda::std::numeric_limits<float>::infinity();
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (warp_col<G>(v, k) < n)
        m = fmaxf(m, warp_get<float>(x, v, k));
    const int o = lean_ordered(__float_as_int(m));
    best = o > best ? o : best;
  }
  const float m = __int_as_float(lean_ordered(__reduce_max_sync(0xffffffffu, best)));
  WarpRow<G> y;
  float sum[G];
#pragma unroll
  for (int v = 0; v < G; ++v) {
    sum[v] = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float e = warp_col<G>(v, k) < n ? fast_exp(warp_get<float>(x, v, k) - m) : 0.0f;
      warp_set(y, v, k, e);
      sum[v] += e;
    }
  }
  const float total = warp_allreduce_groups(sum, Sum{});
  if (log) {
    const float log_sum = logf(total);
#pragma unroll
    for (int v = 0; v < G; ++v)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        warp_set(y, v, k, (warp_get<float>(x, v, k) - m) - log_sum);
  } else {
    const float scale = lean_rcp(total);
#pragma unroll
    for (int v = 0; v < G; ++v)
#pragma unroll
      for (int k = 0; k < 4; ++k)
        warp_set(y, v, k, warp_get<float>(y, v, k) * scale);
  }
  return y;
}

// Row scan (inclusive or exclusive) under op: lean_scan's steps, group v as warp v.
template <int G, class T, class Op>
__device__ __forceinline__ WarpRow<G> warp_scan(const WarpRow<G>& x, int n, bool exclusive, Op op) {
  const int lane = warp_lane<G>();
  const T identity = Op::template identity<T>();
  T incl[G][4], thread_excl[G], total[G];
#pragma unroll
  for (int v = 0; v < G; ++v) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const T e = warp_col<G>(v, k) < n ? warp_get<T>(x, v, k) : identity;
      incl[v][k] = k == 0 ? e : op(incl[v][k - 1], e);
    }
  }
  // The lanes' inclusive scans of every group side by side (warp_inclusive_scan's steps), so their shuffles overlap.
  T warp_incl[G];
#pragma unroll
  for (int v = 0; v < G; ++v)
    warp_incl[v] = incl[v][3];
#pragma unroll
  for (int d = 1; d < 32; d <<= 1)
#pragma unroll
    for (int v = 0; v < G; ++v) {
      const T up = __shfl_up_sync(0xffffffffu, warp_incl[v], d);
      if (lane >= d)
        warp_incl[v] = op(up, warp_incl[v]);
    }
#pragma unroll
  for (int v = 0; v < G; ++v) {
    thread_excl[v] = __shfl_up_sync(0xffffffffu, warp_incl[v], 1);
    if (lane == 0)
      thread_excl[v] = identity;
    total[v] = __shfl_sync(0xffffffffu, warp_incl[v], 31); // the word lane 31 of lean warp v writes
  }
  WarpRow<G> y;
  T warp_prefix = identity;
#pragma unroll
  for (int v = 0; v < G; ++v) {
    const T prefix = op(identity, op(warp_prefix, thread_excl[v])); // lean_scan: op(carry, ...), carry the identity
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const T before = k == 0 ? identity : incl[v][k - 1];
      warp_set(y, v, k, op(prefix, exclusive ? before : incl[v][k]));
    }
    warp_prefix = op(warp_prefix, total[v]);
  }
  // Past the row's end a lean body stops at its last group (its loop breaks); those elements are never stored.
  return y;
}

// Row reduction: lean_reduce's value (sum, max, min) or argmax column, as the bits lean thread 0 stores.
template <int G, class T>
__device__ __forceinline__ std::uint32_t warp_reduce(const WarpRow<G>& x, int n, ReduceFn fn) {
  if (fn == ReduceFn::argmax) {
    ArgBest<T> best[G];
#pragma unroll
    for (int v = 0; v < G; ++v) {
      best[v] = ArgBest<T>{T(0), -1};
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int c = warp_col<G>(v, k);
        if (c < n)
          best[v] = ArgMax{}(best[v], ArgBest<T>{warp_get<T>(x, v, k), c});
      }
    }
#pragma unroll
    for (int v = 0; v < G; ++v) {
      best[v] = warp_allreduce(best[v], ArgMax{});
      best[v].value = __shfl_sync(0xffffffffu, best[v].value, 0); // lane 0's, as a lean warp's word
      best[v].index = __shfl_sync(0xffffffffu, best[v].index, 0);
    }
    ArgBest<T> r;
    if constexpr (cuda::std::is_same_v<T, float>) {
      // lean_allreduce(ArgBest): thread 0 folds the words with xor steps G/2 .. 1, keeping its own value first.
#pragma unroll
      for (int k = G / 2; k > 0; k >>= 1)
#pragma unroll
        for (int j = 0; j < k; ++j)
          best[j] = ArgMax{}(best[j], best[j + k]);
      r = best[0];
    } else {
      r = ArgBest<T>{T(0), -1}; // lean_reduce's i32 path: the words in warp order
#pragma unroll
      for (int v = 0; v < G; ++v)
        r = ArgMax{}(r, best[v]);
    }
    return static_cast<std::uint32_t>(static_cast<std::int32_t>(r.index));
  }
  auto fold = [&](auto op) {
    using Op = decltype(op);
    T acc[G];
#pragma unroll
    for (int v = 0; v < G; ++v) {
      acc[v] = Op::template identity<T>();
#pragma unroll
      for (int k = 0; k < 4; ++k)
        if (warp_col<G>(v, k) < n)
          acc[v] = op(acc[v], warp_get<T>(x, v, k));
    }
    return cuda::std::bit_cast<std::uint32_t>(warp_allreduce_groups(acc, op));
  };
  return fn == ReduceFn::sum ? fold(Sum{}) : fn == ReduceFn::max ? fold(Max{}) : fold(Min{});
}

} // namespace gridflow::kernels
