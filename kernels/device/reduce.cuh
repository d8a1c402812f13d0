// Reductions over one tile: the seeds' modern pattern. Each thread accumulates sequentially (16-byte loads,
// several in flight), then a block reduce (cub::BlockReduce: warp shuffles, per-warp partials, one barrier).
// Rows: one warp per row (butterfly all-reduce) for short rows, the whole block per row for long ones.
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/device/bulk_stream.cuh"
#include "kernels/device/functors.cuh"
#include "kernels/op_types.hpp"

#include <cub/block/block_reduce.cuh>

namespace gridflow::kernels {

template <int THREADS> struct ReduceStorage {
  union {
    typename cub::BlockReduce<float, THREADS>::TempStorage f32;
    typename cub::BlockReduce<std::int32_t, THREADS>::TempStorage i32;
    typename cub::BlockReduce<ArgBest<float>, THREADS>::TempStorage arg_f32;
    typename cub::BlockReduce<ArgBest<std::int32_t>, THREADS>::TempStorage arg_i32;
  };
};

template <int THREADS, class T>
__device__ __forceinline__ typename cub::BlockReduce<T, THREADS>::TempStorage& reduce_temp(ReduceStorage<THREADS>& s) {
  if constexpr (cuda::std::is_same_v<T, float>)
    return s.f32;
  else
    return s.i32;
}
template <int THREADS, class T>
__device__ __forceinline__ typename cub::BlockReduce<ArgBest<T>, THREADS>::TempStorage&
arg_temp(ReduceStorage<THREADS>& s) {
  if constexpr (cuda::std::is_same_v<T, float>)
    return s.arg_f32;
  else
    return s.arg_i32;
}

// Block reduce of this thread's value; the result is valid in thread 0. The storage may be reused after the
// next __syncthreads().
template <int THREADS, class T, class Op>
__device__ __forceinline__ T block_reduce(T v, Op op, ReduceStorage<THREADS>& s) {
  return cub::BlockReduce<T, THREADS>(reduce_temp<THREADS, T>(s)).Reduce(v, op);
}
template <int THREADS, class T>
__device__ __forceinline__ ArgBest<T> block_reduce(ArgBest<T> v, ArgMax op, ReduceStorage<THREADS>& s) {
  return cub::BlockReduce<ArgBest<T>, THREADS>(arg_temp<THREADS, T>(s)).Reduce(v, op);
}

// Reduction of x[0, n) by the whole block; `first_index` offsets argmax indices. Result in thread 0
// (argmax: index < 0 for an empty range). With `stream` long ranges are read through
// the bulk copy engine; the fold is bit-identical either way (same ownership and order).
template <int THREADS, class T, class Load>
__device__ ArgBest<T> block_reduce_range(ReduceFn fn, const T* x, long long n, long long first_index, Load load,
                                         ReduceStorage<THREADS>& s, const BlockStream<THREADS>* stream = nullptr) {
  switch (fn) {
  case ReduceFn::sum: {
    T acc = Sum::identity<T>();
    for_each_owned_streamed<THREADS>(x, n, load, stream, [&](long long, T v) { acc = acc + v; });
    return {block_reduce<THREADS>(acc, Sum{}, s), 0};
  }
  case ReduceFn::max: {
    T acc = Max::identity<T>();
    for_each_owned_streamed<THREADS>(x, n, load, stream, [&](long long, T v) { acc = Max{}(acc, v); });
    return {block_reduce<THREADS>(acc, Max{}, s), 0};
  }
  case ReduceFn::min: {
    T acc = Min::identity<T>();
    for_each_owned_streamed<THREADS>(x, n, load, stream, [&](long long, T v) { acc = Min{}(acc, v); });
    return {block_reduce<THREADS>(acc, Min{}, s), 0};
  }
  case ReduceFn::argmax: {
    ArgBest<T> acc = ArgMax::identity<T>();
    for_each_owned_streamed<THREADS>(x, n, load, stream, [&](long long i, T v) {
      acc = ArgMax{}(acc, ArgBest<T>{v, first_index + i});
    });
    return block_reduce<THREADS>(acc, ArgMax{}, s);
  }
  }
  return {T(0), -1};
}

// Reduction of `count` partials produced by `get(k)` (in index order per thread, then the block tree).
// Result in thread 0.
template <int THREADS, class T, class Get>
__device__ ArgBest<T> block_combine(ReduceFn fn, unsigned count, Get get, ReduceStorage<THREADS>& s) {
  const unsigned tid = threadIdx.x;
  switch (fn) {
  case ReduceFn::sum: {
    T acc = Sum::identity<T>();
    for (unsigned k = tid; k < count; k += THREADS)
      acc = acc + get(k).value;
    return {block_reduce<THREADS>(acc, Sum{}, s), 0};
  }
  case ReduceFn::max: {
    T acc = Max::identity<T>();
    for (unsigned k = tid; k < count; k += THREADS)
      acc = Max{}(acc, get(k).value);
    return {block_reduce<THREADS>(acc, Max{}, s), 0};
  }
  case ReduceFn::min: {
    T acc = Min::identity<T>();
    for (unsigned k = tid; k < count; k += THREADS)
      acc = Min{}(acc, get(k).value);
    return {block_reduce<THREADS>(acc, Min{}, s), 0};
  }
  case ReduceFn::argmax: {
    ArgBest<T> acc = ArgMax::identity<T>();
    for (unsigned k = tid; k < count; k += THREADS)
      acc = ArgMax{}(acc, get(k));
    return block_reduce<THREADS>(acc, ArgMax{}, s);
  }
  }
  return {T(0), -1};
}

// Longest row the row reduce folds one warp per row (runtime/gpu/ops.cuh reduce_rows); longer rows are folded by the
// whole block, streamed.
inline constexpr long long kWarpReduceRowMaxCols = 2048;

// One row reduced by one warp; every lane gets the result (argmax: index within the row).
template <class T, class Load> __device__ ArgBest<T> warp_reduce_row(ReduceFn fn, const T* x, long long n, Load load) {
  const int lane = threadIdx.x & 31;
  switch (fn) {
  case ReduceFn::sum: {
    T acc = Sum::identity<T>();
    for (long long i = lane; i < n; i += 32)
      acc = acc + load(x + i);
    return {warp_allreduce(acc, Sum{}), 0};
  }
  case ReduceFn::max: {
    T acc = Max::identity<T>();
    for (long long i = lane; i < n; i += 32)
      acc = Max{}(acc, load(x + i));
    return {warp_allreduce(acc, Max{}), 0};
  }
  case ReduceFn::min: {
    T acc = Min::identity<T>();
    for (long long i = lane; i < n; i += 32)
      acc = Min{}(acc, load(x + i));
    return {warp_allreduce(acc, Min{}), 0};
  }
  case ReduceFn::argmax: {
    ArgBest<T> acc = ArgMax::identity<T>();
    for (long long i = lane; i < n; i += 32)
      acc = ArgMax{}(acc, ArgBest<T>{load(x + i), i});
    return warp_allreduce(acc, ArgMax{});
  }
  }
  return {T(0), -1};
}

} // namespace gridflow::kernels
