// One lean row tile run as warp rows (kernels/device/warp_rows.cuh): row r of the tile on warp r, every row at once,
// no barrier inside. The lean megakernel runs its tiles this way where kWarpRows says so; the bits are those of the
// lean bodies (runtime/gpu/lean_ops.cuh), which the general megakernel runs for the same tiles.
#pragma once

#include "kernels/device/warp_rows.cuh"
#include "runtime/gpu/lean_ops.cuh"
#include "runtime/lean_program.hpp"

namespace gridflow::gpu {

// Whether the lean megakernel at THREADS (SENTINEL: its sentinel-mode kernel) runs its tiles as warp rows
// (program::warp_rows): a lean row of 4 * THREADS columns is THREADS / 32 groups per lane, kept in registers (8 groups,
// 32 registers, at 256 threads), and every lean tile's rows (kLeanMaxTileRows) fit its warps.
template <int THREADS, bool SENTINEL>
inline constexpr bool kWarpRows = program::warp_rows(THREADS, SENTINEL ? SyncMode::sentinel : SyncMode::flags);
static_assert(kernels::kLeanMaxTileRows <= 128 / 32, "a lean tile has a warp per row at every warp-row block size");

template <int THREADS> using WarpRowOf = kernels::WarpRow<THREADS / 32>;

template <int G> __device__ __forceinline__ void canonicalize(kernels::WarpRow<G>& r) {
#pragma unroll
  for (int v = 0; v < G; ++v)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (r.w[v][k] == program::kSentinelBits)
        r.w[v][k] = program::kCanonicalNanBits;
}

// Every lane of warp `row` < t.rows (the caller skips the others): row `row` of lean tile `t` of opcode OP under one
// pair of access policies, lean_rows_as's contract per row. `forward`: on entry, when t.flags has kForwardInput, the
// row this warp's previous tile left it (the host forwards only between tiles of the same rows); on return, this
// row's output as memory holds it (ops that write whole rows).
template <int THREADS, program::Opcode OP, class T, class ScanOp, class Load, class Store>
__device__ __forceinline__ void warp_row_as(const LeanTile& t, int row, Load load, Store store,
                                            WarpRowOf<THREADS>& forward) {
  constexpr int G = THREADS / 32;
  const T* in = static_cast<const T*>(t.in) + static_cast<long long>(row) * t.cols;
  auto body = [&](const int n) {
    WarpRowOf<THREADS> x;
    if (t.flags & program::kForwardInput)
      x = forward;
    else
      kernels::warp_load<G, T>(x, in, n, T(0), load);
    if constexpr (OP == program::Opcode::reduce_rows) {
      const std::uint32_t bits = kernels::warp_reduce<G, T>(x, n, static_cast<ReduceFn>(t.fn));
      if ((threadIdx.x & 31) == 0)
        store(reinterpret_cast<std::uint32_t*>(t.out) + static_cast<long long>(row) * t.out_stride, bits);
    } else {
      WarpRowOf<THREADS> y;
      if constexpr (OP == program::Opcode::softmax_rows)
        y = kernels::warp_softmax<G>(x, n, t.flags & program::kLogSoftmax);
      else
        y = kernels::warp_scan<G, T>(x, n, t.flags & program::kExclusive, ScanOp{});
      kernels::warp_store<G, T>(y, static_cast<T*>(t.out) + static_cast<long long>(row) * t.out_stride, n, store);
      if constexpr (cuda::std::is_same_v<Store, CanonicalStore>) // the policy of tiles with kSentinelOutput
        canonicalize(y);
      forward = y;
    }
  };
  constexpr int kFullRow = static_cast<int>(kernels::lean_max_cols(THREADS));
  if (t.cols == kFullRow)
    body(kFullRow);
  else
    body(t.cols);
}

template <int THREADS, class Load, class Store>
__device__ __forceinline__ void warp_row_with(const LeanTile& t, int row, Load load, Store store,
                                              WarpRowOf<THREADS>& forward) {
  using program::Opcode;
  const bool i32 = t.dtype == static_cast<std::uint32_t>(DType::i32);
  const bool max = t.fn == static_cast<std::uint32_t>(ScanFn::max);
  switch (static_cast<Opcode>(t.opcode)) {
  case Opcode::softmax_rows:
    warp_row_as<THREADS, Opcode::softmax_rows, float, kernels::Sum>(t, row, load, store, forward);
    break;
  case Opcode::scan_rows:
    if (i32)
      max ? warp_row_as<THREADS, Opcode::scan_rows, std::int32_t, kernels::Max>(t, row, load, store, forward)
          : warp_row_as<THREADS, Opcode::scan_rows, std::int32_t, kernels::Sum>(t, row, load, store, forward);
    else
      max ? warp_row_as<THREADS, Opcode::scan_rows, float, kernels::Max>(t, row, load, store, forward)
          : warp_row_as<THREADS, Opcode::scan_rows, float, kernels::Sum>(t, row, load, store, forward);
    break;
  default: // reduce_rows
    i32 ? warp_row_as<THREADS, Opcode::reduce_rows, std::int32_t, kernels::Sum>(t, row, load, store, forward)
        : warp_row_as<THREADS, Opcode::reduce_rows, float, kernels::Sum>(t, row, load, store, forward);
  }
}

// Every lane of warp `row` < t.rows: that row of tile `t`, plain loads and stores (warp rows run in the modes without
// polled inputs or canonical outputs: program::warp_rows).
template <int THREADS>
__device__ __forceinline__ void warp_tile(const LeanTile& t, int row, WarpRowOf<THREADS>& forward) {
  warp_row_with<THREADS>(t, row, kernels::PlainLoad{}, kernels::PlainStore{}, forward);
}

} // namespace gridflow::gpu
