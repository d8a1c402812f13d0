// Scans over one tile. Whole-range tiles: ITEMS per thread in registers (cub::BlockLoad / BlockStore with a warp
// transpose for coalescing), cub::BlockScan with a prefix callback that supplies the carry from earlier tiles
// (the runtime's deterministic look-back). Rows: one warp per short row (shfl_up scan, carried chunk to chunk),
// the whole block per long row (BlockScan with a running carry).
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/device/functors.cuh"
#include "kernels/op_types.hpp"
#include "kernels/tile_shapes.hpp"

#include <cub/block/block_exchange.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

namespace gridflow::kernels {

inline constexpr int kRowScanItems = 4; // items per thread per chunk of a block-per-row scan


template <int THREADS, int ITEMS = scan_items_for(THREADS)> struct ScanStorage {
  union {
    typename cub::BlockLoad<float, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>::TempStorage load_f32;
    typename cub::BlockLoad<std::int32_t, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>::TempStorage load_i32;
    typename cub::BlockStore<float, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>::TempStorage store_f32;
    typename cub::BlockStore<std::int32_t, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>::TempStorage store_i32;
    typename cub::BlockExchange<float, THREADS, ITEMS>::TempStorage exchange_f32;
    typename cub::BlockExchange<std::int32_t, THREADS, ITEMS>::TempStorage exchange_i32;
    typename cub::BlockScan<float, THREADS>::TempStorage scan_f32;
    typename cub::BlockScan<std::int32_t, THREADS>::TempStorage scan_i32;
  };
};

template <int THREADS, int ITEMS, class T> struct ScanTypes {
  using Load = cub::BlockLoad<T, THREADS, ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<T, THREADS, ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Exchange = cub::BlockExchange<T, THREADS, ITEMS>;
  using Scan = cub::BlockScan<T, THREADS>;
  template <class S> __device__ static auto& load(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>) return s.load_f32;
    else return s.load_i32;
  }
  template <class S> __device__ static auto& store(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>) return s.store_f32;
    else return s.store_i32;
  }
  template <class S> __device__ static auto& exchange(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>) return s.exchange_f32;
    else return s.exchange_i32;
  }
  template <class S> __device__ static auto& scan(S& s) {
    if constexpr (cuda::std::is_same_v<T, float>) return s.scan_f32;
    else return s.scan_i32;
  }
};

// Scans `valid` (<= THREADS * ITEMS) elements of `in` into `out` with carry from `prefix_op`, a cub block
// prefix callback: called by the first warp with this tile's aggregate, it returns the fold of all earlier
// tiles (the identity for the first). Exclusive scans put the carry in front.
template <int THREADS, int ITEMS, class T, class Op, class Load, class Store, class PrefixOp>
__device__ void block_scan_tile(Op op, bool exclusive, const T* in, T* out, int valid, Load load, Store store,
                                PrefixOp& prefix_op, ScanStorage<THREADS, ITEMS>& s) {
  using Types = ScanTypes<THREADS, ITEMS, T>;
  T items[ITEMS];
  const T identity = Op::template identity<T>();
  if constexpr (Load::kVectorizable) {
    typename Types::Load(Types::load(s)).Load(in, items, valid, identity);
  } else {
    // Polled loads, striped (coalesced), then to the blocked arrangement BlockScan wants.
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = j * THREADS + static_cast<int>(threadIdx.x);
      items[j] = i < valid ? load(in + i) : identity;
    }
    typename Types::Exchange(Types::exchange(s)).StripedToBlocked(items, items);
  }
  __syncthreads();
  if (exclusive) typename Types::Scan(Types::scan(s)).ExclusiveScan(items, items, op, prefix_op);
  else typename Types::Scan(Types::scan(s)).InclusiveScan(items, items, op, prefix_op);
  __syncthreads();
  if constexpr (Store::kVectorizable) {
    typename Types::Store(Types::store(s)).Store(out, items, valid);
  } else {
    typename Types::Exchange(Types::exchange(s)).BlockedToStriped(items, items);
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) {
      const int i = j * THREADS + static_cast<int>(threadIdx.x);
      if (i < valid) store(out + i, items[j]);
    }
  }
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
    if (lane == 0) ex = Op::template identity<T>();
    if (i < n) store(out + i, exclusive ? (lane == 0 ? carry : op(carry, ex)) : op(carry, inc));
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
    if (exclusive) Scan(ScanTypes<THREADS, ITEMS, T>::scan(s)).ExclusiveScan(items, items, op, carry);
    else Scan(ScanTypes<THREADS, ITEMS, T>::scan(s)).InclusiveScan(items, items, op, carry);
#pragma unroll
    for (int j = 0; j < kRowScanItems; ++j) {
      const long long i = base + static_cast<long long>(threadIdx.x) * kRowScanItems + j;
      if (i < n) store(out + i, items[j]);
    }
    __syncthreads(); // the scan storage is reused by the next chunk
  }
}

} // namespace gridflow::kernels
