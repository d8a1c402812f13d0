#include "runtime/cpu_block.hpp"

#include "runtime/arena.hpp"
#include "runtime/cpu_ops.hpp"
#include "runtime/forwarding.hpp"
#include "runtime/protocol.hpp"
#include "runtime/tiles.hpp"

#include <algorithm>
#include <span>

namespace gridflow::cpu {

namespace {

// The words a forwarded tile takes from registers: its input row (forwarded_input).
std::span<const std::uint32_t> input_words(const program::ProgramView& v, std::uint32_t tile) {
  const program::TaskDesc& t = v.tasks[v.tiles[tile].task];
  const ForwardedRow in = forwarded_input(t, v.tiles[tile].index);
  const auto* base = static_cast<const std::uint32_t*>(v.buffers[t.in_buffer]);
  return {base + in.first, static_cast<std::size_t>(in.count)};
}

// The words of the row a forwarding source tile (a one-row tile writing whole rows, a lean look-back tile) wrote
// (forwarded_output).
std::span<const std::uint32_t> output_words(const program::ProgramView& v, std::uint32_t tile) {
  const program::TaskDesc& t = v.tasks[v.tiles[tile].task];
  const ForwardedRow out = forwarded_output(t, v.tiles[tile].index);
  const auto* base = static_cast<const std::uint32_t*>(v.buffers[t.out_buffer]);
  return {base + out.first, static_cast<std::size_t>(out.count)};
}

} // namespace

ForwardPlan forward_plan(const LoweredProgram& p) {
  ForwardPlan f;
  if (p.forwarded.empty())
    return f;
  f.source.assign(p.tiles.size(), program::kNoTile);
  f.feeds.assign(p.tiles.size(), 0);
  for_each_forward_source(p, [&](std::uint32_t i, std::uint32_t source) {
    const std::uint32_t g = p.block_tiles[i];
    if (p.forwarded[g]) {
      f.source[g] = p.block_tiles[source];
      f.feeds[p.block_tiles[source]] = 1;
    }
  });
  return f;
}

bool CpuBlock::execute(std::uint32_t tile) {
  if (!forward_.empty() && forward_.source[tile] != program::kNoTile) {
    const std::span<const std::uint32_t> now = input_words(v_, tile);
    if (last_row_tile_ != forward_.source[tile] || !std::equal(now.begin(), now.end(), kept_.begin(), kept_.end())) {
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
    const std::span<const std::uint32_t> out = output_words(v_, tile);
    kept_.assign(out.begin(), out.end());
  }
  if (!keeps_forwarded_row(v_.tasks[v_.tiles[tile].task]))
    last_row_tile_ = tile;
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
