#include "runtime/lean_program.hpp"

#include "runtime/tiles.hpp"

namespace gridflow {

bool lean_tasks(const LoweredProgram& p, std::uint32_t threads) {
  for (const program::TaskDesc& t : p.tasks)
    if (!program::lean_tiles(t, static_cast<int>(threads)))
      return false;
  return !p.tasks.empty();
}

bool lean_cross_program(const LoweredProgram& p, std::uint32_t threads) {
  for (const program::TaskDesc& t : p.tasks)
    if (program::lean_cross_tiles(t, static_cast<int>(threads)))
      return true;
  return false;
}

bool lean_program(const LoweredProgram& p, std::uint32_t threads) {
  return lean_tasks(p, threads) && !(p.mode == SyncMode::sentinel && lean_cross_program(p, threads));
}

bool lean_row_program(const LoweredProgram& p, std::uint32_t threads) {
  return p.mode != SyncMode::sentinel && lean_tasks(p, threads) && !lean_cross_program(p, threads);
}

bool resident_lean_program(const LoweredProgram& p, std::uint32_t threads) {
  return lean_tasks(p, threads) && !lean_cross_program(p, threads);
}

namespace {

program::TileInstr instr_of(const LoweredProgram& p, std::uint32_t tile, const std::vector<void*>& bases) {
  program::TileInstr in;
  if (tile >= p.tiles.size()) {
    in.tile = program::kNoTile;
    return in;
  }
  const program::TileDesc& d = p.tiles[tile];
  const program::TaskDesc& t = p.tasks[d.task];
  const program::ItemRange rows = program::tile_items(t, d.index);
  in.opcode = t.opcode;
  in.flags = t.flags | (!p.forwarded.empty() && p.forwarded[tile] ? program::kForwardInput : 0u);
  in.fn = t.fn;
  in.dtype = t.dtype;
  in.task = d.task;
  in.tile = tile;
  in.rows = static_cast<std::uint32_t>(rows.size());
  in.cols = static_cast<std::uint32_t>(t.cols);
  in.level = t.level;
  in.dep_first = d.dep_first;
  in.dep_count = d.dep_count;
  in.out_stride = static_cast<std::uint32_t>(program::output_per_item(t));
  auto address = [&](std::uint32_t buffer, std::int64_t element) -> std::uint64_t {
    if (buffer >= bases.size())
      return 0; // a bad buffer index: the kernel reports it (tile's buffers null)
    return reinterpret_cast<std::uint64_t>(static_cast<unsigned char*>(bases[buffer]) + 4 * element);
  };
  if (t.opcode == static_cast<std::uint32_t>(program::Opcode::reduce_all)) {
    // A lean partial tile: one row of its elements; the output is the task's one value (its last arriver writes it).
    in.rows = 1;
    in.cols = static_cast<std::uint32_t>(rows.size());
    in.out_stride = 1;
    in.in = address(t.in_buffer, t.in_offset + rows.begin);
    in.out = address(t.out_buffer, t.out_offset);
    return in;
  }
  if (t.opcode == static_cast<std::uint32_t>(program::Opcode::scan_all)) {
    // A lean look-back tile: one row of its elements, written in place of them in the output.
    in.rows = 1;
    in.cols = static_cast<std::uint32_t>(rows.size());
    in.out_stride = in.cols;
    in.in = address(t.in_buffer, t.in_offset + rows.begin);
    in.out = address(t.out_buffer, t.out_offset + rows.begin);
    return in;
  }
  in.in = address(t.in_buffer, t.in_offset + rows.begin * t.cols);
  in.out = address(t.out_buffer, t.out_offset + rows.begin * program::output_per_item(t));
  return in;
}

} // namespace

std::vector<program::TileInstr> tile_instrs(const LoweredProgram& p, const std::vector<void*>& bases) {
  std::vector<program::TileInstr> out;
  out.reserve(p.tiles.size());
  for (std::uint32_t g = 0; g < p.tiles.size(); ++g) {
    out.push_back(instr_of(p, g, bases));
    out.back().flags |= program::kCloseBarrier; // the block's next tile is not known
  }
  return out;
}

bool needs_close_barrier(const program::TileInstr& tile, const program::TileInstr* next) {
  if (tile.flags & (program::kSignalTiles | program::kSignalCounter | program::kPollInputs) ||
      tile.opcode == static_cast<std::uint32_t>(program::Opcode::scan_all)) // its look-back may fail
    return true;
  return next != nullptr && !(next->flags & program::kForwardInput);
}

bool plain_tile(const LoweredProgram& p, const program::TileInstr& tile) {
  constexpr std::uint32_t kProtocol = program::kPollInputs | program::kSentinelOutput;
  if (tile.tile >= p.tiles.size() || tile.task >= p.tasks.size() || (tile.flags & kProtocol) || tile.dep_count != 0 ||
      tile.opcode == static_cast<std::uint32_t>(program::Opcode::reduce_all) || // a partial's protocol is not plain
      tile.opcode == static_cast<std::uint32_t>(program::Opcode::scan_all))     // nor a look-back
    return false;
  const bool whole_rows_out = tile.opcode != static_cast<std::uint32_t>(program::Opcode::reduce_rows);
  const bool aligned = tile.in % 16 == 0 && tile.in != 0 && tile.out != 0 &&
                       (!whole_rows_out || (tile.out % 16 == 0 && tile.out_stride % 4 == 0));
  return tile.rows == 1 && tile.cols == kernels::lean_max_cols(static_cast<int>(p.threads_per_block)) && aligned;
}

std::vector<program::TileInstr> block_instrs(const LoweredProgram& p, const std::vector<void*>& bases) {
  std::vector<program::TileInstr> out;
  out.reserve(p.block_tiles.size());
  for (const std::uint32_t tile : p.block_tiles)
    out.push_back(instr_of(p, tile, bases));
  for (std::uint32_t b = 0; b + 1 < p.block_begin.size(); ++b)
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i) {
      if (needs_close_barrier(out[i], i + 1 < p.block_begin[b + 1] ? &out[i + 1] : nullptr))
        out[i].flags |= program::kCloseBarrier;
      if (plain_tile(p, out[i]))
        out[i].flags |= program::kPlainTile;
    }
  return out;
}

} // namespace gridflow
