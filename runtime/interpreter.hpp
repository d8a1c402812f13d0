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
//   void stage(std::uint32_t tile, const TileDesc& t, std::uint32_t next_task);
//                                     // start loading the claimed tile's descriptors for execute (no barrier; the
//                                     // next sync/share publishes them); next_task: the task of the block's next
//                                     // tile when the schedule knows it (else kNoTile), whose descriptor may be
//                                     // loaded early
//   void ready();                     // a tile without dependencies is about to execute: publish what stage()
//                                     // put in shared memory (a block barrier where it did, else nothing)
//   std::uint32_t signal_flags(std::uint32_t task); // the task's TaskFlag bits, read after execute (who is awaited)
//   bool execute(std::uint32_t tile); // run the staged tile's body with every thread; false: the run was aborted.
//                                     // Returns after a block barrier that follows every thread's stores, except
//                                     // where the Block knows that nothing needs one (the tile signals nothing,
//                                     // polled nothing, and the block's next tile reads no memory before a barrier
//                                     // of its own: the lean megakernel's kCloseBarrier).
//   (optional) Claim claim_listed(std::uint32_t last); // static lists: the block's next entry below `last` from
//                                     // where the Block keeps its list (else claim_static reads the program's)
//   void fill_sentinels();            // sentinel mode, kernel fill: this block's share of the pre-fill
//   bool level_barrier(std::uint64_t generation); // grid-wide barrier (cg grid.sync or gridflow's); false: aborted
//   (optional) void run_plain();      // dataflow modes, untraced runs: run the block's next tiles that the host
//                                     // marked as needing no claim, descriptor check or wait as their bodies,
//                                     // closing barriers and signals alone, up to the first that is not (which
//                                     // claim then returns)
// Every thread of a block calls every function in the same order (uniform control flow), so block barriers
// match; only the leader touches claim counters, dependency counters and flags.
#pragma once

#include "kernels/host_device.hpp"
#include "runtime/arena.hpp"
#include "runtime/config.hpp"
#include "runtime/lowered_program.hpp"
#include "runtime/op_traits.hpp"
#include "runtime/protocol.hpp"

#include <cstdint>

namespace gridflow::program {

namespace detail {

// Claim cursor. Static: position in the block's list (every thread keeps its own copy). Dynamic: the ticket taken
// ahead (leader only).
struct Cursor {
  std::uint32_t next = 0; // static: position in the block's list
  std::uint32_t end = 0;
  std::uint64_t ahead = 0; // dynamic: a ticket already taken for the next claim
  bool has_ahead = false;
};

// A claimed tile (tile == kNoTile: none left), with its descriptor, and the task of the block's next tile where the
// schedule already knows it (static lists; kNoTile otherwise), so the block can start loading that one early.
struct Claim {
  std::uint32_t tile = kNoTile;
  TileDesc desc{};
  std::uint32_t next_task = kNoTile;
};

// Every thread. Next entry of the block's static list below `last`, or none: every thread reads the same entry
// (no broadcast barrier), and its descriptor from the list's own copy of the descriptors (block_descs), so no load
// waits for another. An entry that is no tile id is claimed all the same, so descriptor_ok reports it.
template <class Block> GRIDFLOW_HOST_DEVICE Claim claim_static(Block& blk, Cursor& cursor, std::uint32_t last) {
  const ProgramView& v = blk.view();
  Claim c;
  if (cursor.next >= cursor.end)
    return c;
  const std::uint32_t tile = v.block_tiles[cursor.next];
  if (tile >= last && tile < v.num_tiles)
    return c; // a later level's
  c.tile = tile;
  c.desc = v.block_descs[cursor.next];
  if (++cursor.next < cursor.end)
    c.next_task = v.block_descs[cursor.next].task;
  return c;
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
  if (ticket >= last - first)
    return kNoTile;
  if (blk.params().claim_ahead) {
    cursor.ahead = protocol::claim_ticket(arena.claim_head(slot));
    cursor.has_ahead = true;
  }
  return first + static_cast<std::uint32_t>(ticket);
}

// Every thread: the block's next tile in [first, last) (slot: the dynamic ticket counter), or none.
template <class Block>
GRIDFLOW_HOST_DEVICE Claim claim(Block& blk, Cursor& cursor, std::uint32_t slot, std::uint32_t first,
                                 std::uint32_t last) {
  const ProgramView& v = blk.view();
  if (v.block_begin != nullptr) {
    // A Block may read its list from where it keeps it (the lean megakernel: instructions prefetched into shared
    // memory), with claim_static's contract: the next entry below `last`, or none, the cursor unmoved.
    if constexpr (requires { blk.claim_listed(last); })
      return blk.claim_listed(last);
    else
      return claim_static(blk, cursor, last);
  }
  Claim c;
  c.tile = blk.share(blk.is_leader() ? claim_dynamic(blk, cursor, slot, first, last) : 0u);
  if (c.tile < v.num_tiles)
    c.desc = v.tiles[c.tile];
  return c;
}

// Leader only. Wait for every dependency of `tile` (descriptor t); false when the run was aborted.
template <class Block> GRIDFLOW_HOST_DEVICE bool wait_dependencies(Block& blk, std::uint32_t tile, const TileDesc& t) {
  const ProgramView& v = blk.view();
  const RunParams& r = blk.params();
  const Arena arena{v.state, v.layout};
  const protocol::WaitSite site{
      reinterpret_cast<ControlBlock*>(v.state), r.timeout_ns, blk.index(), tile, t.task, r.wait_pacing};
  for (std::uint32_t d = t.dep_first; d < t.dep_first + t.dep_count; ++d) {
    const DepDesc dep = v.deps[d];
    if (dep.task >= v.num_tasks) {
      program::raise_bad_descriptor(v, blk.index(), tile, static_cast<std::uint32_t>(DescriptorField::dep_task));
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

// Leader only, after the block barrier that follows the body: publish completion of `tile` of `task`, as its task's
// flags ask: only what some consumer waits for (the tile's flag, the task's counter).
template <class Block>
GRIDFLOW_HOST_DEVICE void signal_tile(Block& blk, std::uint32_t tile, std::uint32_t task, std::uint32_t flags) {
  const ProgramView& v = blk.view();
  const RunParams& r = blk.params();
  if (!(flags & (kSignalTiles | kSignalCounter)) || tile == r.fault_skip_signal_tile)
    return; // nothing awaited, or the test-only fault of a lost signal
  const Arena arena{v.state, v.layout};
  if (flags & kSignalTiles)
    protocol::publish_flag(arena.tile_flag(tile), r.epoch);
  if (flags & kSignalCounter)
    protocol::signal_counter(arena.task_done(task));
}

// Uniform across the block (every thread evaluates the same claim); the leader records the error.
template <class Block> GRIDFLOW_HOST_DEVICE bool descriptor_ok(Block& blk, const Claim& c) {
  const ProgramView& v = blk.view();
  if (c.tile >= v.num_tiles || c.desc.task >= v.num_tasks) {
    if (blk.is_leader())
      program::raise_bad_descriptor(v, blk.index(), c.tile, static_cast<std::uint32_t>(DescriptorField::tile_id));
    return false;
  }
  return true;
}

// One tile: (claimed) -> wait -> execute -> signal, with trace timestamps when TRACED (the run has a tile trace;
// untraced runs carry no trace code at all). Returns false when aborted.
template <bool TRACED, class Block>
GRIDFLOW_HOST_DEVICE bool run_tile(Block& blk, const Claim& c, std::uint64_t claim_begin, bool wait, bool signal) {
  const RunParams& r = blk.params();
  const std::uint32_t tile = c.tile;
  TileTrace* trace = nullptr;
  if constexpr (TRACED)
    trace = blk.is_leader() ? &r.tile_trace[tile] : nullptr;
  if (TRACED && trace) {
    trace->claim_begin = claim_begin;
    trace->claimed = protocol::now_ns();
  }
  // Stage the descriptors before waiting, so their loads overlap the wait instead of following it.
  blk.stage(c.tile, c.desc, c.next_task);
  // Step 2: wait for the tile's inputs (leader polls, then the block barrier inside share() releases all and
  // publishes the staged descriptors).
  if (wait && c.desc.dep_count > 0) {
    const std::uint32_t ok = blk.share(blk.is_leader() ? (wait_dependencies(blk, tile, c.desc) ? 1u : 0u) : 0u);
    if (!ok)
      return false;
  } else {
    blk.ready();
  }
  if (TRACED && trace)
    trace->ready = protocol::now_ns();
  // Step 3: execute the body with every thread.
  if (!blk.execute(tile))
    return false;
  if (TRACED && trace)
    trace->executed = protocol::now_ns();
  // Step 4: signal: execute's closing block barrier ordered every thread's stores before the leader's release.
  // The task's flags come from the Block (signal_flags), which knows where they are safe to read after execute.
  if (signal && blk.is_leader())
    signal_tile(blk, tile, c.desc.task, blk.signal_flags(c.desc.task));
  if (TRACED && trace) {
    trace->signalled = protocol::now_ns();
    protocol::atomic_ref<std::uint64_t>(trace->runs).fetch_add(1, cuda::std::memory_order_relaxed);
    trace->block = blk.index();
    trace->smid = blk.smid();
    trace->task = c.desc.task;
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
  if (trace)
    trace->arrive = protocol::now_ns();
  const bool ok = blk.level_barrier(r.barrier_base + k + 1);
  if (trace)
    trace->leave = protocol::now_ns();
  return ok;
}

namespace detail {

// The tile loops of one block after the prologue (levels, or one dataflow pass), traced or not; interpret()'s result.
template <bool TRACED, class Block>
GRIDFLOW_HOST_DEVICE bool run_tiles(Block& blk, Cursor& cursor, std::uint32_t& barrier_k) {
  const ProgramView& v = blk.view();
  const SyncMode mode = static_cast<SyncMode>(v.mode);
  if (is_level_mode(mode)) {
    // Levels in order; tiles within a level need no waits. After an abort a block keeps passing the barriers
    // (cg grid.sync must be called by every block the same number of times) but runs nothing.
    bool alive = true;
    for (std::uint32_t level = 0; level < v.num_levels; ++level) {
      while (alive) {
        const std::uint64_t t0 = TRACED ? protocol::now_ns() : 0; // the trace's claim_begin
        // Step 1: claim within the level.
        const Claim c = claim(blk, cursor, 1 + level, v.level_begin[level], v.level_begin[level + 1]);
        if (c.tile == kNoTile)
          break;
        alive = descriptor_ok(blk, c) && run_tile<TRACED>(blk, c, t0, false, false);
      }
      if (level + 1 < v.num_levels) {
        if (!traced_barrier(blk, barrier_k++) && mode != SyncMode::grid_sync)
          return false;
        // One reading of the abort flag for the whole block, so control flow stays uniform.
        const bool aborted = protocol::is_aborted(reinterpret_cast<ControlBlock*>(v.state));
        alive = blk.share(blk.is_leader() ? (alive && !aborted ? 1u : 0u) : 0u) != 0;
      }
    }
    return alive;
  }

  // Dataflow modes: one pass over the global order; waits replace barriers.
  for (;;) {
    if constexpr (!TRACED && requires { blk.run_plain(); })
      blk.run_plain();
    const std::uint64_t t0 = TRACED ? protocol::now_ns() : 0; // the trace's claim_begin
    // Step 1: claim the next tile (topological order).
    const Claim c = claim(blk, cursor, 0, 0, v.num_tiles);
    if (c.tile == kNoTile)
      return true;
    if (!descriptor_ok(blk, c) || !run_tile<TRACED>(blk, c, t0, true, true))
      return false;
  }
}

} // namespace detail

// The whole run of one block. Every thread gets the same answer: true when the block saw no failure (none of its waits,
// descriptors, bodies or barriers failed, and in the level modes no other block's abort reached it), so no error was
// raised by it (every raise is followed by such a failure); false otherwise.
template <class Block> GRIDFLOW_HOST_DEVICE bool interpret(Block& blk) {
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
    if (!traced_barrier(blk, barrier_k++))
      return false;
  }
  if (r.tile_trace != nullptr)
    return detail::run_tiles<true>(blk, cursor, barrier_k);
  return detail::run_tiles<false>(blk, cursor, barrier_k);
}

} // namespace gridflow::program
