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
