// copy_ring_bytes: which tiles stream through the ring is the bodies' choice, so it is decided here beside their
// shape constants (compiled by nvcc for that reason; host code only).
#include "runtime/gpu/copy_ring.hpp"

#include "kernels/device/reduce.cuh"
#include "kernels/device/softmax.cuh"
#include "kernels/tile_shapes.hpp"
#include "runtime/tiles.hpp"

#include <algorithm>

namespace gridflow::gpu {

namespace {

// Bytes of the longest range one tile of `t` streams through the ring at THREADS per block; 0 when its body reads
// directly.
template <int THREADS> std::int64_t streamed_bytes(const program::TaskDesc& t) {
  const std::int64_t tile_bytes = t.tile_size * program::input_per_item(t) * 4;
  const std::int64_t row_bytes = t.cols * 4;
  if (program::lean_tiles(t, THREADS)) // the lean bodies read and write directly
    return 0;
  switch (static_cast<program::Opcode>(t.opcode)) {
  case program::Opcode::reduce_all:
    return tile_bytes;
  case program::Opcode::reduce_rows:
    return t.cols > kernels::kWarpReduceRowMaxCols ? row_bytes : 0;
  case program::Opcode::scan_all: // several chunks: a streamed reduce first, then the chunks from the ring
  case program::Opcode::select:   // several chunks: a streamed count first, then the chunks from the ring
    return t.tile_size > std::int64_t{THREADS} * kernels::scan_items_for(THREADS) ? tile_bytes : 0;
  case program::Opcode::softmax_rows:
    if (t.cols <= kernels::kShortRowMaxCols) // warps with two rows or more stage them
      return t.tile_size >= 2 * (THREADS / 32) ? tile_bytes : 0;
    if (t.cols <= kernels::register_row_max_cols<THREADS>()) // rows held in registers, two passes' rows staged
      return t.tile_size > kernels::register_rows_per_pass<THREADS>(t.cols)
                 ? 2 * kernels::register_rows_per_pass<THREADS>(t.cols) * row_bytes
                 : 0;
    return row_bytes; // two passes over each row
  default:
    return 0;
  }
}

template <int THREADS> std::uint32_t ring_for(const LoweredProgram& p) {
  std::int64_t longest = 0;
  for (const program::TaskDesc& t : p.tasks)
    longest = std::max(longest, streamed_bytes<THREADS>(t));
  if (longest == 0)
    return 0;
  const std::int64_t stage = kernels::stream_stage_bytes(THREADS);
  const std::int64_t stages = std::max<std::int64_t>(2, (longest + stage - 1) / stage);
  return static_cast<std::uint32_t>(std::min<std::int64_t>(stages * stage, kernels::stream_ring_bytes(THREADS)));
}

} // namespace

std::uint32_t copy_ring_bytes(const LoweredProgram& program, std::uint32_t threads) {
  switch (threads) {
  case 128:
    return ring_for<128>(program);
  case 256:
    return ring_for<256>(program);
  case 512:
    return ring_for<512>(program);
  case 1024:
    return ring_for<1024>(program);
  default:
    return 0;
  }
}

} // namespace gridflow::gpu
