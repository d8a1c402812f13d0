#include "runtime/cpu_block.hpp"

#include "runtime/arena.hpp"
#include "runtime/cpu_ops.hpp"
#include "runtime/protocol.hpp"
#include "runtime/tiles.hpp"

#include <algorithm>
#include <span>

namespace gridflow::cpu {

namespace {

// The words of one row of a tile's input (`input`) or output view, for the forwarding check.
std::span<const std::uint32_t> row_words(const program::ProgramView& v, std::uint32_t tile, bool input) {
  const program::TaskDesc& t = v.tasks[v.tiles[tile].task];
  const program::ItemRange rows = program::tile_items(t, v.tiles[tile].index);
  const auto* base = static_cast<const std::uint32_t*>(v.buffers[input ? t.in_buffer : t.out_buffer]);
  const std::int64_t first = (input ? t.in_offset : t.out_offset) + rows.begin * t.cols;
  return {base + first, static_cast<std::size_t>(t.cols)};
}

} // namespace

ForwardPlan forward_plan(const LoweredProgram& p) {
  ForwardPlan f;
  if (p.forwarded.empty())
    return f;
  f.source.assign(p.tiles.size(), program::kNoTile);
  f.feeds.assign(p.tiles.size(), 0);
  for (std::uint32_t b = 0; b + 1 < p.block_begin.size(); ++b)
    for (std::uint32_t i = p.block_begin[b] + 1; i < p.block_begin[b + 1]; ++i) {
      const std::uint32_t g = p.block_tiles[i], prev = p.block_tiles[i - 1];
      if (g < p.tiles.size() && prev < p.tiles.size() && p.forwarded[g]) {
        f.source[g] = prev;
        f.feeds[prev] = 1;
      }
    }
  return f;
}

bool CpuBlock::execute(std::uint32_t tile) {
  if (!forward_.empty() && forward_.source[tile] != program::kNoTile) {
    const std::span<const std::uint32_t> now = row_words(v_, tile, true);
    if (last_tile_ != forward_.source[tile] || !std::equal(now.begin(), now.end(), kept_.begin(), kept_.end())) {
      program::ErrorRecord e;
      e.code = static_cast<std::uint32_t>(program::ErrorCode::forward_mismatch);
      e.block = index_;
      e.tile = tile;
      e.task = v_.tiles[tile].task;
      protocol::raise_error(reinterpret_cast<program::ControlBlock*>(v_.state), e);
      return false;
    }
  }
  const bool ok = execute_tile(v_, r_, index_, tile);
  if (ok && !forward_.empty() && forward_.feeds[tile]) {
    const std::span<const std::uint32_t> out = row_words(v_, tile, false);
    kept_.assign(out.begin(), out.end());
  }
  last_tile_ = tile;
  return ok;
}

void CpuBlock::fill_sentinels() {
  cpu::fill_sentinels(v_, index_, v_.grid_blocks);
}

bool CpuBlock::level_barrier(std::uint64_t generation) {
  const program::Arena arena{v_.state, v_.layout};
  protocol::barrier_arrive(arena.barrier_counter());
  const protocol::WaitSite site{arena.control(), r_.timeout_ns, index_, program::kNoTile, 0, r_.pacing};
  return protocol::barrier_wait(site, arena.barrier_counter(), generation, v_.grid_blocks);
}

} // namespace gridflow::cpu
