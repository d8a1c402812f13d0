#include "runtime/lowered_program.hpp"

namespace gridflow {

program::ProgramView make_view(const LoweredProgram& p, const program::ProgramArrays& a) {
  program::ProgramView v;
  v.tasks = a.tasks;
  v.tiles = a.tiles;
  v.deps = a.deps;
  v.level_begin = a.level_begin;
  v.block_begin = a.block_begin;
  v.block_tiles = a.block_tiles;
  v.block_descs = a.block_descs;
  v.buffers = a.buffers;
  v.sentinel_ranges = a.sentinel_ranges;
  v.state = a.state;
  v.layout = p.layout;
  v.num_tasks = static_cast<std::uint32_t>(p.tasks.size());
  v.num_tiles = static_cast<std::uint32_t>(p.tiles.size());
  v.num_deps = static_cast<std::uint32_t>(p.deps.size());
  v.num_levels = p.num_levels();
  v.num_buffers = static_cast<std::uint32_t>(p.buffers.size());
  v.grid_blocks = p.grid_blocks;
  v.mode = static_cast<std::uint32_t>(p.mode);
  v.schedule = static_cast<std::uint32_t>(p.schedule);
  v.barriers_per_run = p.barriers_per_run;
  v.uses_tile_flags = p.uses_tile_flags ? 1u : 0u;
  v.scan_chunk = p.scan_chunk;
  v.threads = p.threads_per_block;
  return v;
}

std::vector<program::TileDesc> block_descs(const LoweredProgram& p) {
  std::vector<program::TileDesc> out;
  out.reserve(p.block_tiles.size());
  for (const std::uint32_t tile : p.block_tiles) {
    program::TileDesc d;
    d.task = program::kNoTile;
    out.push_back(tile < p.tiles.size() ? p.tiles[tile] : d);
  }
  return out;
}

std::vector<std::int64_t> sentinel_ranges(const LoweredProgram& p) {
  std::vector<std::int64_t> out;
  for (const BufferInfo& b : p.buffers) {
    out.push_back(b.sentinel ? b.sentinel_offset : 0);
    out.push_back(b.sentinel ? b.sentinel_count : 0);
  }
  return out;
}

} // namespace gridflow
