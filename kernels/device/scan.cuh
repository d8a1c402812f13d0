// Scans over one tile. Whole-range chunks (THREADS * ITEMS elements): warp-striped in registers (lane l of warp w
// holds 16-byte group l of each of the warp's ITEMS / 4 consecutive 128-element rows), so the loads and stores are
// coalesced 16-byte accesses and shared-memory reads conflict-free, with no transposes; the carry comes from a
// prefix functor (the runtime's deterministic look-back, or the running carry of a multi-chunk tile). Rows: one warp
// per short row (shfl_up scan, carried chunk to chunk), the whole block per long row (BlockScan with a running
// carry).
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/device/functors.cuh"
#include "kernels/op_types.hpp"
#include "kernels/tile_shapes.hpp"

#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>

namespace gridflow::kernels {

inline constexpr int kRowScanItems = 4; // items per thread per chunk of a block-per-row scan

// A whole-range chunk's shared memory: a staging copy of the chunk (sources that cannot be read as 16-byte groups:
// polled or misaligned inputs) and the warps' totals.
template <int THREADS, int ITEMS, class T> struct StripedScanStorage {
  alignas(16) T staging[THREADS * ITEMS];
  T warp_totals[THREADS / 32];
};

// A select chunk's shared memory: the kept elements gathered in order, and the warps' kept counts.
template <int THREADS, int ITEMS, class T> struct SelectChunkStorage {
  alignas(16) T staged[THREADS * ITEMS];
  int warp_counts[THREADS / 32];
};

template <int THREADS, int ITEMS = scan_items_for(THREADS)> struct ScanStorage {
  union {
    typename cub::BlockLoad<float, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>::TempStorage load_f32;
    typename cub::BlockLoad<std::int32_t, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>::TempStorage load_i32;
    typename cub::BlockScan<float, THREADS>::TempStorage scan_f32;
    typename cub::BlockScan<std::int32_t, THREADS>::TempStorage scan_i32;
    StripedScanStorage<THREADS, ITEMS, float> striped_f32;
    StripedScanStorage<THREADS, ITEMS, std::int32_t> striped_i32;
    SelectChunkStorage<THREADS, ITEMS, float> select_f32;
    SelectChunkStorage<THREADS, ITEMS, std::int32_t> select_i32;
  };
};

template <int THREADS, int ITEMS, class T> struct ScanTypes {
  using Load = cub::BlockLoad<T, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<T, THREADS>;
  template <class S> __device__ static auto& load(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>)
      return s.load_f32;
    else
      return s.load_i32;
  }
  template <class S> __device__ static auto& scan(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>)
      return s.scan_f32;
    else
      return s.scan_i32;
  }
  template <class S> __device__ static auto& striped(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>)
      return s.striped_f32;
    else
      return s.striped_i32;
  }
  template <class S> __device__ static auto& select(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>)
      return s.select_f32;
    else
      return s.select_i32;
  }
};

// Where a chunk's elements come from: element e < vec_end from `vec` (16-byte aligned; shared or global memory), as
// part of 16-byte group e / 4 when the whole group is below vec_end; e in [vec_end, n) through tail(e) (T(int)); e >= n
// is the identity. vec_end <= n.
template <class T, class Tail> struct ChunkSource {
  const T* vec;
  int vec_end;
  int n;
  Tail tail;
};

// Scans one chunk of src.n (<= THREADS * ITEMS) elements into out[0, src.n), warp-striped: warp w scans its rows
// w * R .. w * R + R - 1 (R = ITEMS / 4, 128 elements each: lane l holds elements 4l .. 4l + 3 of a row), the warps'
// totals meet in shared memory, and prefix(total) - called by every thread with the chunk's total, which it may
// block-synchronise - gives the carry from everything before the chunk. Element i's result is
// op(op(op(op(carry, warps before), rows before), lanes before), the lane's own group up to i), exclusive: up to
// i - 1. The association depends only on i and THREADS, never on where the chunk was read from. Stores are
// 16-byte when the Store allows it and out is 16-byte aligned. Every thread of the block calls it; it contains one
// block barrier (plus any in prefix); a block barrier must separate it from the next use of `s`.
template <int THREADS, int ITEMS, class T, class Op, class Tail, class Store, class Prefix>
__device__ __forceinline__ void striped_scan_chunk(Op op, bool exclusive, const ChunkSource<T, Tail>& src, T* out,
                                                   Store store, Prefix& prefix,
                                                   StripedScanStorage<THREADS, ITEMS, T>& s) {
  static_assert(ITEMS % 4 == 0 && sizeof(T) == 4);
  constexpr int R = ITEMS / 4, kWarps = THREADS / 32;
  using V = typename Vec4<T>::type;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const T identity = Op::template identity<T>();
  V v[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int e = ((warp * R + r) * 32 + lane) * 4;
    if (e + 4 <= src.vec_end) {
      v[r] = reinterpret_cast<const V*>(src.vec)[e / 4];
    } else {
      T x[4];
#pragma unroll
      for (int k = 0; k < 4; ++k)
        x[k] = e + k < src.vec_end ? src.vec[e + k] : e + k < src.n ? src.tail(e + k) : identity;
      v[r] = V{x[0], x[1], x[2], x[3]};
    }
  }
  // Within each lane's group, then across the lanes of each row, then across the warp's rows.
  T lanes_before[R], rows_before[R];
  T row_total[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    v[r].y = op(v[r].x, v[r].y);
    v[r].z = op(v[r].y, v[r].z);
    v[r].w = op(v[r].z, v[r].w);
    const T inclusive = warp_inclusive_scan(v[r].w, op);
    const T up = __shfl_up_sync(0xffffffffu, inclusive, 1);
    lanes_before[r] = lane == 0 ? identity : up;
    row_total[r] = __shfl_sync(0xffffffffu, inclusive, 31);
  }
  T warp_total = identity;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    rows_before[r] = warp_total;
    warp_total = op(warp_total, row_total[r]);
  }
  if (lane == 0)
    s.warp_totals[warp] = warp_total;
  __syncthreads();
  T warps_before = identity, total = identity;
#pragma unroll
  for (int k = 0; k < kWarps; ++k) {
    const T t = s.warp_totals[k];
    if (k < warp)
      warps_before = op(warps_before, t);
    total = op(total, t);
  }
  const T carry = op(prefix(total), warps_before);
  const bool vector_store = Store::kVectorizable && (reinterpret_cast<std::uintptr_t>(out) & 15u) == 0;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const T b = op(op(carry, rows_before[r]), lanes_before[r]);
    const V y = exclusive ? V{b, op(b, v[r].x), op(b, v[r].y), op(b, v[r].z)}
                          : V{op(b, v[r].x), op(b, v[r].y), op(b, v[r].z), op(b, v[r].w)};
    const int e = ((warp * R + r) * 32 + lane) * 4;
    if (vector_store && e + 4 <= src.n) {
      reinterpret_cast<V*>(out)[e / 4] = y;
    } else {
      if (e < src.n)
        store(out + e, y.x);
      if (e + 1 < src.n)
        store(out + e + 1, y.y);
      if (e + 2 < src.n)
        store(out + e + 2, y.z);
      if (e + 3 < src.n)
        store(out + e + 3, y.w);
    }
  }
}

// Compacts one chunk: the elements of src (src.n <= THREADS * ITEMS, read warp-striped as striped_scan_chunk reads
// them) for which keep(x) holds go, in order, to out[start, start + kept), where start = prefix(kept) - called by
// every thread with the chunk's kept count; it may block-synchronise. They gather in s.staged first and leave in
// coalesced runs. Returns start + kept (where the next chunk's elements go). src may alias s.staged (stage_chunk's
// copy in the same union): every element is in registers before the first barrier. Every thread of the block calls
// it; it contains two block barriers (plus any in prefix); a block barrier must separate it from the next use of s.
template <int THREADS, int ITEMS, class T, class Tail, class Keep, class Prefix>
__device__ __forceinline__ int striped_select_chunk(const ChunkSource<T, Tail>& src, Keep keep, T* out, Prefix& prefix,
                                                    SelectChunkStorage<THREADS, ITEMS, T>& s) {
  static_assert(ITEMS % 4 == 0 && sizeof(T) == 4);
  constexpr int R = ITEMS / 4, kWarps = THREADS / 32;
  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  T x[R][4];
  unsigned mask[R]; // bit k: element k of the lane's group r is kept
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int e = ((warp * R + r) * 32 + lane) * 4;
    if (e + 4 <= src.vec_end) {
      const auto v = reinterpret_cast<const typename Vec4<T>::type*>(src.vec)[e / 4];
      x[r][0] = v.x, x[r][1] = v.y, x[r][2] = v.z, x[r][3] = v.w;
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k)
        x[r][k] = e + k < src.vec_end ? src.vec[e + k] : e + k < src.n ? src.tail(e + k) : T(0);
    }
    mask[r] = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      mask[r] |= (e + k < src.n && keep(x[r][k]) ? 1u : 0u) << k;
  }
  // Positions within the chunk: lanes before in the row, rows before in the warp, warps before in the block.
  int before[R];
  int warp_total = 0;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int n = __popc(mask[r]);
    const int inclusive = warp_inclusive_scan(n, Sum{});
    before[r] = warp_total + inclusive - n;
    warp_total += __shfl_sync(0xffffffffu, inclusive, 31);
  }
  if (lane == 0)
    s.warp_counts[warp] = warp_total;
  __syncthreads(); // every thread's elements are in registers (src may be s.staged) and the warps' counts are in
  int warps_before = 0, total = 0;
#pragma unroll
  for (int k = 0; k < kWarps; ++k) {
    const int t = s.warp_counts[k];
    warps_before += k < warp ? t : 0;
    total += t;
  }
  const int start = prefix(total);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    int p = warps_before + before[r];
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (mask[r] >> k & 1u)
        s.staged[p++] = x[r][k];
  }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < total; i += THREADS)
    out[start + i] = s.staged[i];
  return start + total;
}

// Copies in[0, n) (n <= THREADS * ITEMS) into the chunk's staging buffer through `load` (one element per thread per
// step, coalesced), for a source {s.staging, n, n, ...}. Ends with a block barrier.
template <int THREADS, int ITEMS, class T, class Load>
__device__ __forceinline__ void stage_chunk(const T* in, int n, Load load, StripedScanStorage<THREADS, ITEMS, T>& s) {
#pragma unroll 1
  for (int i = static_cast<int>(threadIdx.x); i < n; i += THREADS)
    s.staging[i] = load(in + i);
  __syncthreads();
}

// One row of n elements scanned by one warp, 32 elements per step with the carry passed along.
template <class T, class Op, class Load, class Store>
__device__ void warp_scan_row(Op op, bool exclusive, const T* in, T* out, long long n, Load load, Store store) {
  const int lane = threadIdx.x & 31;
  T carry = Op::template identity<T>();
  for (long long base = 0; base < n; base += 32) {
    const long long i = base + lane;
    const T v = i < n ? load(in + i) : Op::template identity<T>();
    const T inc = warp_inclusive_scan(v, op);
    T ex = __shfl_up_sync(0xffffffffu, inc, 1);
    if (lane == 0)
      ex = Op::template identity<T>();
    if (i < n)
      store(out + i, exclusive ? (lane == 0 ? carry : op(carry, ex)) : op(carry, inc));
    carry = op(carry, __shfl_sync(0xffffffffu, inc, 31));
  }
}

// Running-carry callback for a block scanning one long row chunk by chunk.
template <class T, class Op> struct RunningCarry {
  T carry;
  Op op;
  __device__ T operator()(T aggregate) {
    const T before = carry;
    carry = op(carry, aggregate);
    return before;
  }
};

// One row of n elements scanned by the whole block, THREADS * kRowScanItems elements per chunk.
template <int THREADS, int ITEMS, class T, class Op, class Load, class Store>
__device__ void block_scan_row(Op op, bool exclusive, const T* in, T* out, long long n, Load load, Store store,
                               ScanStorage<THREADS, ITEMS>& s) {
  using Scan = cub::BlockScan<T, THREADS>;
  RunningCarry<T, Op> carry{Op::template identity<T>(), op};
  for (long long base = 0; base < n; base += static_cast<long long>(THREADS) * kRowScanItems) {
    T items[kRowScanItems];
#pragma unroll
    for (int j = 0; j < kRowScanItems; ++j) {
      const long long i = base + static_cast<long long>(threadIdx.x) * kRowScanItems + j;
      items[j] = i < n ? load(in + i) : Op::template identity<T>();
    }
    if (exclusive)
      Scan(ScanTypes<THREADS, ITEMS, T>::scan(s)).ExclusiveScan(items, items, op, carry);
    else
      Scan(ScanTypes<THREADS, ITEMS, T>::scan(s)).InclusiveScan(items, items, op, carry);
#pragma unroll
    for (int j = 0; j < kRowScanItems; ++j) {
      const long long i = base + static_cast<long long>(threadIdx.x) * kRowScanItems + j;
      if (i < n)
        store(out + i, items[j]);
    }
    __syncthreads(); // the scan storage is reused by the next chunk
  }
}

} // namespace gridflow::kernels
