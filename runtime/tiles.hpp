// Tile geometry, shared by the lowering (host), the CPU executor and the GPU task bodies: which rows or
// elements tile k of a task covers, and which output elements it produces.
#pragma once

#include "kernels/host_device.hpp"
#include "kernels/tile_shapes.hpp"
#include "runtime/op_traits.hpp"
#include "runtime/program.hpp"

#include <cstdint>

namespace gridflow::program {

// The op table's properties (op_traits.hpp) under the names the tile code uses.
GRIDFLOW_HOST_DEVICE bool is_row_op(std::uint32_t opcode) {
  return op_has(kRowOps, opcode);
}

// Half-open range of items (rows for row ops, elements otherwise) relative to the task's view.
struct ItemRange {
  std::int64_t begin;
  std::int64_t end;
  GRIDFLOW_HOST_DEVICE std::int64_t size() const { return end - begin; }
};

// Number of items the task's tiles partition: rows for row ops, elements (rows * cols) otherwise.
GRIDFLOW_HOST_DEVICE std::int64_t task_items(const TaskDesc& t) {
  return is_row_op(t.opcode) ? t.rows : t.rows * t.cols;
}

// Items of tile k.
GRIDFLOW_HOST_DEVICE ItemRange tile_items(const TaskDesc& t, std::uint32_t k) {
  const std::int64_t n = task_items(t);
  const std::int64_t begin = static_cast<std::int64_t>(k) * t.tile_size;
  const std::int64_t end = begin + t.tile_size < n ? begin + t.tile_size : n;
  return {begin < n ? begin : n, end};
}

// Input elements per item, output elements per item.
GRIDFLOW_HOST_DEVICE std::int64_t input_per_item(const TaskDesc& t) {
  return is_row_op(t.opcode) ? t.cols : 1;
}
GRIDFLOW_HOST_DEVICE std::int64_t output_per_item(const TaskDesc& t) {
  return op_has(kOnePerItemOps, t.opcode) ? 1 : input_per_item(t);
}

// True for the counting ops (histogram, scatter, select): integer bookkeeping whose outputs land away from the
// tile's input range, which read and write with plain accesses only (never polled, never sentinel outputs).
GRIDFLOW_HOST_DEVICE bool is_counting_op(std::uint32_t opcode) {
  return op_has(kCountingOps, opcode);
}

// True when tile k's outputs are final as soon as tile k signals and lie over its own input range.
GRIDFLOW_HOST_DEVICE bool output_is_tile_local(const TaskDesc& t) {
  return op_has(kTileLocalOps, t.opcode);
}

// True when a tile waits for earlier tiles of its own task (look-back carries, scatter rows): one launch of
// such a task needs all its tiles co-resident.
GRIDFLOW_HOST_DEVICE bool waits_on_own_tiles(std::uint32_t opcode) {
  return op_has(kOwnTileOps, opcode);
}

// True when the task's tiles share state in the arena (partials, counters, look-back words, count rows).
GRIDFLOW_HOST_DEVICE bool has_cross_tile_state(const TaskDesc& t) {
  return t.num_tiles > 1 && op_has(kSharedStateOps, t.opcode);
}

// True when the task's tiles are lean row tiles (kernels/tile_shapes.hpp): a row op over rows of 1 to
// lean_max_cols(threads) columns, at most kLeanMaxTileRows rows per tile. Both megakernels run them with the lean
// bodies (kernels/device/lean_rows.cuh), the lean megakernel nothing else.
GRIDFLOW_HOST_DEVICE bool lean_rows(const TaskDesc& t, int threads) {
  return is_row_op(t.opcode) && t.cols >= 1 && t.cols <= kernels::lean_max_cols(threads) && t.tile_size >= 1 &&
         t.tile_size <= kernels::kLeanMaxTileRows;
}

// True when the task is a whole-range reduce cut into lean partial tiles: tiles of lean_max_cols(threads) elements
// (the last one shorter), each one lean row whose value goes to the task's partials, at most lean_max_cols(threads)
// of them, which the last arriving tile folds as one more lean row (runtime/gpu/lean_ops.cuh: lean_partial). Not
// argmax (a partial would need its index too). Both megakernels run them with that body.
GRIDFLOW_HOST_DEVICE bool lean_partials(const TaskDesc& t, int threads) {
  const long long cols = kernels::lean_max_cols(threads);
  return t.opcode == static_cast<std::uint32_t>(Opcode::reduce_all) &&
         t.fn != static_cast<std::uint32_t>(ReduceFn::argmax) && t.tile_size == cols && t.num_tiles >= 1 &&
         t.num_tiles <= cols;
}

// True when the task is a whole-range scan cut into lean look-back tiles: tiles of lean_max_cols(threads) elements
// (the last one shorter), each one lean row scanned by the lean body, its prefix from the deterministic look-back
// over the task's tiles (runtime/gpu/device_access.cuh: LookbackPrefix) added before the row is stored. Both
// megakernels run them with that body.
GRIDFLOW_HOST_DEVICE bool lean_scans(const TaskDesc& t, int threads) {
  return t.opcode == static_cast<std::uint32_t>(Opcode::scan_all) && t.tile_size == kernels::lean_max_cols(threads) &&
         t.num_tiles >= 1;
}

// True when the task's lean tiles share state across tiles (lean partials, lean look-back scans): the lean Block
// compiled without them (runtime/gpu/lean_kernel.cuh: CROSS_TILE) cannot run the task.
GRIDFLOW_HOST_DEVICE bool lean_cross_tiles(const TaskDesc& t, int threads) {
  return lean_partials(t, threads) || lean_scans(t, threads);
}

// True when the task's tiles are lean (lean rows, lean partials, lean look-back scans): what the lean megakernel runs.
GRIDFLOW_HOST_DEVICE bool lean_tiles(const TaskDesc& t, int threads) {
  return lean_rows(t, threads) || lean_cross_tiles(t, threads);
}

// Scatter scratch: `num_tiles` count rows of `param` i32 bins, then (from this byte offset, line-aligned) one
// 64-bit ready word per tile.
GRIDFLOW_HOST_DEVICE std::uint64_t scatter_ready_words_offset(const TaskDesc& t) {
  const std::uint64_t rows = 4ull * t.param * t.num_tiles;
  return (rows + kLine - 1) / kLine * kLine;
}

} // namespace gridflow::program
