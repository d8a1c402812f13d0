// On-chip forwarding's rule, shared by the lowering (which marks the forwarded tiles) and the CPU executor (which
// checks every claim on every run). Host only.
//
// The lean megakernel keeps in registers the last row a block's whole-row tile wrote (its last row); a tile that
// writes no whole row (a row reduction, a lean partial tile) leaves it there. So a tile on a static list may take its
// input row from the latest entry before it that writes whole rows, past any entries between that write none.
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/tiles.hpp"

#include <cstdint>

namespace gridflow {

// Whether a tile of task `t` leaves the block's forwarded row as it found it: it writes no whole row.
inline bool keeps_forwarded_row(const program::TaskDesc& t) {
  return t.opcode == static_cast<std::uint32_t>(program::Opcode::reduce_rows) ||
         t.opcode == static_cast<std::uint32_t>(program::Opcode::reduce_all);
}

// Calls f(entry, source) for every entry of every static list that has a possible forwarding source: `source` is the
// latest entry before it on its list that writes whole rows, past entries between that write none (list positions
// in p.block_tiles). One pass over the lists.
template <class F> void for_each_forward_source(const LoweredProgram& p, F f) {
  for (std::size_t b = 0; b + 1 < p.block_begin.size(); ++b) {
    std::uint32_t source = program::kNoTile;
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i) {
      const std::uint32_t tile = p.block_tiles[i];
      if (tile >= p.tiles.size()) {
        source = program::kNoTile;
        continue;
      }
      if (source != program::kNoTile)
        f(i, source);
      if (!keeps_forwarded_row(p.tasks[p.tiles[tile].task]))
        source = i;
    }
  }
}

// A row forwarding moves: elements [first, first + count) of one buffer.
struct ForwardedRow {
  std::int64_t first;
  std::int64_t count;
};

// The input elements of tile `index` of task `t` that forwarding replaces: its one row (a row op), or its elements (a
// lean partial or look-back tile), in the task's input buffer.
inline ForwardedRow forwarded_input(const program::TaskDesc& t, std::uint32_t index) {
  const program::ItemRange items = program::tile_items(t, index);
  if (!program::is_row_op(t.opcode))
    return {t.in_offset + items.begin, items.size()};
  return {t.in_offset + items.begin * t.cols, t.cols};
}

// The row that tile `index` of task `t` leaves in the block's registers as a forwarding source, in the task's output
// buffer: the last row of a row tile writing whole rows, or a lean look-back tile's elements (its one row).
inline ForwardedRow forwarded_output(const program::TaskDesc& t, std::uint32_t index) {
  const program::ItemRange items = program::tile_items(t, index);
  if (!program::is_row_op(t.opcode))
    return {static_cast<std::int64_t>(t.out_offset) + items.begin, items.size()};
  return {static_cast<std::int64_t>(t.out_offset) + (items.end - 1) * t.cols, t.cols};
}

} // namespace gridflow
