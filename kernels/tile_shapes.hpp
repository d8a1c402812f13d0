// Tile shapes the device bodies are compiled for, visible to the host lowering (plain C++).
#pragma once

namespace gridflow::kernels {

// Items per thread of a whole-range scan tile for a block size: the register tile and its transpose in shared
// memory stay within 48 KB of static shared memory. A scan_all tile holds threads * scan_items_for(threads).
constexpr int scan_items_for(int threads) {
  return threads >= 1024 ? 8 : 16;
}

// Softmax rows a warp holds whole in registers (kWarpRowValues per lane): rows up to kShortRowMaxCols are "short"
// (a warp or a group of warps per row, kernels/device/softmax.cuh). The lowering sizes their tiles apart.
inline constexpr int kWarpRowValues = 32;
inline constexpr long long kShortRowMaxCols = 32LL * kWarpRowValues;

// Short softmax rows take one of two shapes (kernels/device/softmax.cuh), which the predictor costs too:
//   * a warp per row (warp_softmax_row), when the tile has a row for every warp or rows of at most 128 elements;
//   * a group of G warps per row (group_softmax_rows), G the smallest power of two with 128 G >= n, when the tile
//     has fewer rows than the block has warps: a one-row tile spreads its row over the block instead of leaving
//     7 of 8 warps idle behind one warp's 32 serial values.
// The shape depends only on (rows in the tile, n, warps), never on the access policies, so a polled (sentinel) run
// folds bit-identically to a plain one. Returns G (1: a warp per row).
constexpr int short_row_group_warps(long long rows, long long n, int warps) {
  const long long need = (n + 127) / 128; // warps that hold the row at one float4 quad per thread
  if (rows >= warps || need <= 1 || need > warps)
    return 1;
  int g = 1;
  while (g < need)
    g *= 2;
  return g;
}
static_assert(short_row_group_warps(1, kShortRowMaxCols, 8) == 8 && short_row_group_warps(8, kShortRowMaxCols, 8) == 1);
static_assert(short_row_group_warps(3, 129, 8) == 2 && short_row_group_warps(1, 1000, 4) == 1);

// Lean row tiles (kernels/device/lean_rows.cuh): rows of up to lean_max_cols(threads) columns, the whole block per row,
// kLeanVecs 4-element groups per thread, in tiles of at most kLeanMaxTileRows rows. The lowering aims small row ops at
// them; both megakernels run such tiles with the lean bodies.
inline constexpr int kLeanVecs = 1; // each further group costs every lean row its instructions, masked or not
inline constexpr long long kLeanMaxTileRows = 4;
constexpr long long lean_max_cols(int threads) {
  return 4LL * kLeanVecs * threads;
}

// The bulk-copy ring (kernels/device/bulk_stream.cuh) lives in the launch's dynamic shared memory. Its stages are
// stream_stage_bytes(threads) (16 KB; 8 KB at 128 threads), and a launch sizes it per
// program (runtime/gpu/copy_ring.hpp: copy_ring_bytes), up to stream_ring_bytes(threads): what the block size's
// full occupancy (512 / threads blocks per SM at 128 registers per thread, 1 at 1024 threads) leaves of an H200 SM's
// 228 KB beside the static shared storage (about 11, 19, 36 and 38 KB) and 1 KB reserved per block: 4 x 40 KB,
// 2 x 64 KB, 1 x 128 KB. The occupancy check at plan time counts the maximum.
constexpr int stream_stage_bytes(int threads) {
  return threads <= 128 ? 8192 : 16384;
}
constexpr int stream_ring_bytes(int threads) {
  return threads <= 128 ? 40 * 1024 : threads <= 256 ? 64 * 1024 : 128 * 1024;
}

} // namespace gridflow::kernels
