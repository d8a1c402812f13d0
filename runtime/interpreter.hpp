// The interpreter loop every block (GPU) or worker (CPU) runs: claim, wait, execute, signal.
//
// Written once over a `Block` policy so the GPU megakernel and the CPU executor share the protocol. A Block
// provides:
//   const program::ProgramView& view(); const program::RunParams& params();
//   std::uint32_t index();            // block id in [0, grid_blocks)
//   bool is_leader();                 // the one thread that performs protocol atomics
//   void sync();                      // block-wide barrier (CPU: no-op)
//   std::uint32_t share(std::uint32_t v);  // the leader's v, to every thread (includes a sync)
//   std::uint32_t smid();
//   void prefetch(const void* p);     // a hint: bring the line of p closer (GPU: into L1); may do nothing
//   void stage(std::uint32_t tile);   // start loading the tile's descriptors for execute (no barrier; the next
//                                     // sync/share publishes them)
//   bool execute(std::uint32_t tile); // run the staged tile's body with every thread; false: the run was aborted.
//                                     // Returns true after a block barrier that follows every thread's stores.
//   void fill_sentinels();            // sentinel mode, kernel fill: this block's share of the pre-fill
//   bool level_barrier(std::uint64_t generation); // grid-wide barrier (cg grid.sync or gridflow's); false: aborted
// Every thread of a block calls every function in the same order (uniform control flow), so block barriers
// match; only the leader touches claim counters, dependency counters and flags.
#pragma once

#include "kernels/host_device.hpp"
#include "runtime/config.hpp"
#include "runtime/lowered_program.hpp"
#include "runtime/protocol.hpp"

#include <cstdint>

namespace gridflow::program {

// Typed pointers into the state arena.
struct Arena {
  unsigned char* base;
  const StateLayout& layout;

  GRIDFLOW_HOST_DEVICE ControlBlock* control() const { return reinterpret_cast<ControlBlock*>(base); }
  GRIDFLOW_HOST_DEVICE std::uint64_t* claim_head(std::uint32_t slot) const {
    return reinterpret_cast<std::uint64_t*>(base + layout.claim + kLine * slot);
  }
  GRIDFLOW_HOST_DEVICE std::uint64_t* task_done(std::uint32_t task) const {
    return reinterpret_cast<std::uint64_t*>(base + layout.task_done + kLine * task);
  }
  GRIDFLOW_HOST_DEVICE std::uint32_t* tile_flag(std::uint32_t tile) const {
    return reinterpret_cast<std::uint32_t*>(base + layout.tile_flags + kLine * tile);
  }
  GRIDFLOW_HOST_DEVICE std::uint64_t* barrier_counter() const {
    return reinterpret_cast<std::uint64_t*>(base + layout.barrier);
  }
  GRIDFLOW_HOST_DEVICE unsigned char* at(std::uint64_t offset) const { return base + offset; }
};

namespace detail {

GRIDFLOW_HOST_DEVICE protocol::WaitSite wait_site(const ProgramView& v, const RunParams& r, std::uint32_t block,
                                                  std::uint32_t tile) {
  const std::uint32_t task = tile < v.num_tiles ? v.tiles[tile].task : 0;
  return {reinterpret_cast<ControlBlock*>(v.state), r.timeout_ns, block, tile, task};
}

GRIDFLOW_HOST_DEVICE void raise_bad_descriptor(const ProgramView& v, std::uint32_t block, std::uint32_t tile,
                                               std::uint32_t field) {
  ErrorRecord e;
  e.code = static_cast<std::uint32_t>(ErrorCode::bad_descriptor);
  e.block = block;
  e.tile = tile;
  e.detail = field;
  protocol::raise_error(reinterpret_cast<ControlBlock*>(v.state), e);
}

// Claim cursor. Static: position in the block's list (every thread keeps its own copy). Dynamic: the ticket taken
// ahead (leader only).
struct Cursor {
  std::uint32_t next = 0; // static: position in the block's list
  std::uint32_t end = 0;
  std::uint64_t ahead = 0; // dynamic: a ticket already taken for the next claim
  bool has_ahead = false;
};

// Every thread. Next entry of the block's static list below `last`, or kNoTile: every thread reads the same entry
// (no broadcast barrier). A static list is known ahead, so the leader also asks L1 for what the next claims read: the
// tile descriptor two entries ahead, and the task descriptor one ahead (whose tile descriptor the previous claim
// asked for). A hint only: on the H200, descriptor_ok's load still waited (docs/PERFORMANCE.md, run 22).
// Bounds-checked: a bad entry is reported when claimed.
template <class Block> GRIDFLOW_HOST_DEVICE std::uint32_t claim_static(Block& blk, Cursor& cursor, std::uint32_t last) {
  const ProgramView& v = blk.view();
  if (cursor.next >= cursor.end || v.block_tiles[cursor.next] >= last) return kNoTile;
  const std::uint32_t tile = v.block_tiles[cursor.next++];
  if (blk.is_leader()) {
    if (cursor.next + 1 < cursor.end && v.block_tiles[cursor.next + 1] < v.num_tiles)
      blk.prefetch(&v.tiles[v.block_tiles[cursor.next + 1]]);
    if (cursor.next < cursor.end && v.block_tiles[cursor.next] < v.num_tiles) {
      const std::uint32_t task = v.tiles[v.block_tiles[cursor.next]].task;
      if (task < v.num_tasks) blk.prefetch(&v.tasks[task]);
    }
  }
  return tile;
}

// Leader only. Next tile in [first, last) of the global order from ticket counter `slot`, or kNoTile. A block stops
// at its first failed claim, so one run hands out exactly (last - first) + grid_blocks tickets on a slot and this
// run's tickets start at (epoch - 1) * that. With claim_ahead a successful claim also takes the block's next ticket,
// whose round trip then overlaps this tile; the count is unchanged (the taken-ahead ticket is the next claim's, a
// tile or the block's one failure). Deadlock-free still: a block holds a ticket ahead only while it runs a smaller
// one, so the smallest unfinished claimed tile is always the one its block is running, and its inputs are done.
template <class Block>
GRIDFLOW_HOST_DEVICE std::uint32_t claim_dynamic(Block& blk, Cursor& cursor, std::uint32_t slot, std::uint32_t first,
                                                 std::uint32_t last) {
  const ProgramView& v = blk.view();
  const Arena arena{v.state, v.layout};
  const std::uint64_t taken = cursor.has_ahead ? cursor.ahead : protocol::claim_ticket(arena.claim_head(slot));
  cursor.has_ahead = false;
  const std::uint64_t per_run = std::uint64_t{last - first} + v.grid_blocks;
  const std::uint64_t ticket = taken - (blk.params().epoch - 1) * per_run;
  if (ticket >= last - first) return kNoTile;
  if (blk.params().claim_ahead) {
    cursor.ahead = protocol::claim_ticket(arena.claim_head(slot));
    cursor.has_ahead = true;
  }
  return first + static_cast<std::uint32_t>(ticket);
}

// Every thread: the block's next tile in [first, last) (slot: the dynamic ticket counter), or kNoTile.
template <class Block>
GRIDFLOW_HOST_DEVICE std::uint32_t claim(Block& blk, Cursor& cursor, std::uint32_t slot, std::uint32_t first,
                                         std::uint32_t last) {
  if (blk.view().block_begin != nullptr) return claim_static(blk, cursor, last);
  return blk.share(blk.is_leader() ? claim_dynamic(blk, cursor, slot, first, last) : 0u);
}

// Leader only. Wait for every dependency of `tile`; false when the run was aborted.
template <class Block> GRIDFLOW_HOST_DEVICE bool wait_dependencies(Block& blk, std::uint32_t tile) {
  const ProgramView& v = blk.view();
  const RunParams& r = blk.params();
  const Arena arena{v.state, v.layout};
  const TileDesc& t = v.tiles[tile];
  const protocol::WaitSite site = wait_site(v, r, blk.index(), tile);
  for (std::uint32_t d = t.dep_first; d < t.dep_first + t.dep_count; ++d) {
    const DepDesc dep = v.deps[d];
    if (dep.task >= v.num_tasks) {
      raise_bad_descriptor(v, blk.index(), tile, 1);
      return false;
    }
    if (dep.kind == static_cast<std::uint32_t>(DepKind::task)) {
      const std::uint64_t target = std::uint64_t{v.tasks[dep.task].num_tiles} * r.epoch;
      if (!protocol::wait_counter(site, {WaitKind::task_counter, dep.task, dep.tile_end, target},
                                  arena.task_done(dep.task)))
        return false;
    } else {
      const std::uint32_t first = v.tasks[dep.task].first_tile;
      for (std::uint32_t k = dep.tile_begin; k < dep.tile_end; ++k)
        if (!protocol::wait_flag(site, {WaitKind::tile_flag, dep.task, k, r.epoch}, arena.tile_flag(first + k)))
          return false;
    }
  }
  return true;
}

// Leader only, after the block barrier that follows the body: publish completion of `tile`.
template <class Block> GRIDFLOW_HOST_DEVICE void signal_tile(Block& blk, std::uint32_t tile) {
  const ProgramView& v = blk.view();
  const RunParams& r = blk.params();
  if (tile == r.fault_skip_signal_tile) return; // test-only fault: a lost signal
  const Arena arena{v.state, v.layout};
  const TaskDesc& task = v.tasks[v.tiles[tile].task];
  if (task.flags & kSignalTiles) protocol::publish_flag(arena.tile_flag(tile), r.epoch);
  if (task.flags & kSignalCounter) protocol::signal_counter(arena.task_done(v.tiles[tile].task));
}

// Uniform across the block (every thread evaluates the same descriptor); the leader records the error.
template <class Block> GRIDFLOW_HOST_DEVICE bool descriptor_ok(Block& blk, std::uint32_t tile) {
  const ProgramView& v = blk.view();
  if (tile >= v.num_tiles || v.tiles[tile].task >= v.num_tasks) {
    if (blk.is_leader()) raise_bad_descriptor(v, blk.index(), tile, 0);
    return false;
  }
  return true;
}

// One tile: (claimed) -> wait -> execute -> signal, with trace timestamps. Returns false when aborted.
template <class Block>
GRIDFLOW_HOST_DEVICE bool run_tile(Block& blk, std::uint32_t tile, std::uint64_t claim_begin, bool wait, bool signal) {
  const RunParams& r = blk.params();
  TileTrace* trace = r.tile_trace != nullptr && blk.is_leader() ? &r.tile_trace[tile] : nullptr;
  if (trace) {
    trace->claim_begin = claim_begin;
    trace->claimed = protocol::now_ns();
  }
  // Stage the descriptors before waiting, so their loads overlap the wait instead of following it.
  blk.stage(tile);
  // Step 2: wait for the tile's inputs (leader polls, then the block barrier inside share() releases all and
  // publishes the staged descriptors).
  if (wait && blk.view().tiles[tile].dep_count > 0) {
    const std::uint32_t ok = blk.share(blk.is_leader() ? (wait_dependencies(blk, tile) ? 1u : 0u) : 0u);
    if (!ok) return false;
  } else {
    blk.sync();
  }
  if (trace) trace->ready = protocol::now_ns();
  // Step 3: execute the body with every thread.
  if (!blk.execute(tile)) return false;
  if (trace) trace->executed = protocol::now_ns();
  // Step 4: signal: execute's closing block barrier ordered every thread's stores before the leader's release.
  // (signal_tile publishes only what some consumer waits for: the tile's flag, its task's counter.)
  if (signal && blk.is_leader()) signal_tile(blk, tile);
  if (trace) {
    trace->signalled = protocol::now_ns();
    protocol::atomic_ref<std::uint64_t>(trace->runs).fetch_add(1, cuda::std::memory_order_relaxed);
    trace->block = blk.index();
    trace->smid = blk.smid();
    trace->task = blk.view().tiles[tile].task;
    trace->tile = tile;
  }
  return true;
}

} // namespace detail

// Barrier k (0-based within this run) of this block, traced.
template <class Block> GRIDFLOW_HOST_DEVICE bool traced_barrier(Block& blk, std::uint32_t k) {
  const RunParams& r = blk.params();
  BarrierTrace* trace =
      r.barrier_trace != nullptr && blk.is_leader() ? &r.barrier_trace[blk.index() * r.barriers_in_run + k] : nullptr;
  if (trace) trace->arrive = protocol::now_ns();
  const bool ok = blk.level_barrier(r.barrier_base + k + 1);
  if (trace) trace->leave = protocol::now_ns();
  return ok;
}

// The whole run of one block.
template <class Block> GRIDFLOW_HOST_DEVICE void interpret(Block& blk) {
  const ProgramView& v = blk.view();
  const RunParams& r = blk.params();
  const SyncMode mode = static_cast<SyncMode>(v.mode);
  detail::Cursor cursor;
  if (v.block_begin != nullptr) {
    cursor.next = v.block_begin[blk.index()];
    cursor.end = v.block_begin[blk.index() + 1];
  }
  std::uint32_t barrier_k = 0;

  // Step 0 (sentinel mode, kernel fill): pre-fill producer outputs, then one grid barrier so no fill can
  // overwrite a value a producer already stored.
  if (mode == SyncMode::sentinel && r.sentinel_fill) {
    blk.fill_sentinels();
    blk.sync();
    if (!traced_barrier(blk, barrier_k++)) return;
  }

  if (is_level_mode(mode)) {
    // Levels in order; tiles within a level need no waits. After an abort a block keeps passing the barriers
    // (cg grid.sync must be called by every block the same number of times) but runs nothing.
    bool alive = true;
    for (std::uint32_t level = 0; level < v.num_levels; ++level) {
      while (alive) {
        const std::uint64_t t0 = protocol::now_ns();
        // Step 1: claim within the level.
        const std::uint32_t tile =
            detail::claim(blk, cursor, 1 + level, v.level_begin[level], v.level_begin[level + 1]);
        if (tile == kNoTile) break;
        alive = detail::descriptor_ok(blk, tile) && detail::run_tile(blk, tile, t0, false, false);
      }
      if (level + 1 < v.num_levels) {
        if (!traced_barrier(blk, barrier_k++) && mode != SyncMode::grid_sync) return;
        // One reading of the abort flag for the whole block, so control flow stays uniform.
        const bool aborted = protocol::is_aborted(reinterpret_cast<ControlBlock*>(v.state));
        alive = blk.share(blk.is_leader() ? (alive && !aborted ? 1u : 0u) : 0u) != 0;
      }
    }
    return;
  }

  // Dataflow modes: one pass over the global order; waits replace barriers.
  for (;;) {
    const std::uint64_t t0 = protocol::now_ns();
    // Step 1: claim the next tile (topological order).
    const std::uint32_t tile = detail::claim(blk, cursor, 0, 0, v.num_tiles);
    if (tile == kNoTile) return;
    if (!detail::descriptor_ok(blk, tile) || !detail::run_tile(blk, tile, t0, true, true)) return;
  }
}

} // namespace gridflow::program
