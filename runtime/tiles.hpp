// Tile geometry, shared by the lowering (host), the CPU executor and the GPU task bodies: which rows or
// elements tile k of a task covers, and which output elements it produces.
#pragma once

#include "kernels/host_device.hpp"
#include "runtime/program.hpp"

#include <cstdint>

namespace gridflow::program {

GRIDFLOW_HOST_DEVICE bool is_row_op(std::uint32_t opcode) {
  return opcode == static_cast<std::uint32_t>(Opcode::reduce_rows) ||
         opcode == static_cast<std::uint32_t>(Opcode::scan_rows) ||
         opcode == static_cast<std::uint32_t>(Opcode::softmax_rows);
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
GRIDFLOW_HOST_DEVICE std::int64_t input_per_item(const TaskDesc& t) { return is_row_op(t.opcode) ? t.cols : 1; }
GRIDFLOW_HOST_DEVICE std::int64_t output_per_item(const TaskDesc& t) {
  return t.opcode == static_cast<std::uint32_t>(Opcode::reduce_rows) ? 1 : input_per_item(t);
}

// True when tile k's outputs are final as soon as tile k signals (false for reduce_all, whose single output is
// written by the last tile to arrive).
GRIDFLOW_HOST_DEVICE bool output_is_tile_local(const TaskDesc& t) {
  return t.opcode != static_cast<std::uint32_t>(Opcode::reduce_all) &&
         t.opcode != static_cast<std::uint32_t>(Opcode::noop);
}

} // namespace gridflow::program
