// The resident megakernel: one cooperative launch that serves the submission ring (runtime/resident.hpp) until a
// kStop submission, each run going through the same interpreter and Block as a launch of the general megakernel
// (runtime/gpu/megakernel.cuh), in every sync mode.
//
// A block keeps what it read of the program it ran last in shared memory (ProgramCache): its record, its static list
// (entries and descriptors), the task table and the program's own buffer table, each where it fits. A program's
// descriptors never change once it is added, so a run of the same program reads none of them from global memory:
// its tiles' claims, stagings and dependency lookups are shared-memory loads.
//
// A run over the program's own buffers of a program of lean row tiles (resident::runs_lean) goes through the lean
// megakernel's Block (runtime/gpu/lean_kernel.cuh) instead: one 64-byte instruction per tile, the same bodies and bits
// as a lean launch, with the block's instructions held in the cache where its list is short enough. That Block is
// compiled without lean partial tiles (runtime/lean_program.hpp: resident_lean_program).
#pragma once

#include "runtime/gpu/lean_kernel.cuh"
#include "runtime/gpu/megakernel.cuh"
#include "runtime/resident.hpp"

namespace gridflow::gpu {

// What a block holds of the program named by `program`, built by hold() on the first run of it after another.
struct ProgramCache {
  static constexpr std::uint32_t kEntries = 32;          // list entries held (a longer list is read from global memory)
  static constexpr std::uint32_t kTasks = 16;            // tasks held (a larger table is read from global memory)
  static constexpr std::uint32_t kInstrs = 8;            // lean instructions held (a longer list is copied ahead)
  static constexpr std::uint32_t kNotHeld = 0xffffffffu; // `entries` of a list not held (none, or too long)
  std::uint32_t program;                                 // whose (resident::kNoProgram: none)
  std::uint32_t entries;                                 // this block's list length, or kNotHeld
  std::uint32_t first;                                   // the list's first entry in the program's block_tiles
  std::uint32_t tasks_held;                              // nonzero: `tasks` is the task table
  std::uint32_t buffers_held;                            // nonzero: `buffers` is the program's own buffer table
  std::uint32_t instrs_held;                             // this block's lean instructions in `instrs`, or kNotHeld
  program::TileInstr instrs[kInstrs];                    // the lean instructions of this block's list, in order
  std::uint32_t tiles[kEntries];                         // this block's list entries, in order
  program::TileDesc descs[kEntries];                     // and their descriptors
  program::TaskDesc tasks[kTasks];
  void* buffers[resident::kMaxBuffers];
  program::ProgramView view; // the current run's: the record's, with the held tables in place of the global ones
};

// The block's copy of the current run's program record and what it holds of the program, in shared memory (raw
// storage: __shared__ variables take no initializers).
struct ResidentShared {
  alignas(16) unsigned char record[sizeof(resident::ProgramRecord)];
  alignas(16) unsigned char cache[sizeof(ProgramCache)];
};

// GpuBlock over a held program: claims from the held list (interpreter.hpp: claim_listed, claim_static's contract),
// or from the global one with a cursor of its own where the list is not held. With the task table held, no claim
// names the next task: stage_tile's copy-ahead reads global memory only.
template <int THREADS> class ResidentBlock : public GpuBlock<THREADS> {
public:
  __device__ ResidentBlock(const program::ProgramView& v, const program::RunParams& r, SharedStorage<THREADS>& s,
                           const ProgramCache& cache)
      : GpuBlock<THREADS>(v, r, s), cache_(cache) {
    if (v.block_begin != nullptr && cache_.entries == ProgramCache::kNotHeld) {
      cursor_.next = v.block_begin[blockIdx.x];
      cursor_.end = v.block_begin[blockIdx.x + 1];
    }
  }

  __device__ program::detail::Claim claim_listed(std::uint32_t last) {
    if (cache_.entries == ProgramCache::kNotHeld) {
      program::detail::Claim c = program::detail::claim_static(*this, cursor_, last);
      if (cache_.tasks_held)
        c.next_task = program::kNoTile;
      return c;
    }
    program::detail::Claim c;
    if (pos_ >= cache_.entries)
      return c;
    const std::uint32_t tile = cache_.tiles[pos_];
    if (tile >= last && tile < this->view().num_tiles)
      return c; // a later level's
    c.tile = tile;
    c.desc = cache_.descs[pos_];
    if (++pos_ < cache_.entries && !cache_.tasks_held)
      c.next_task = cache_.descs[pos_].task;
    return c;
  }

private:
  const ProgramCache& cache_;
  std::uint32_t pos_ = 0;            // held list: the next entry
  program::detail::Cursor cursor_{}; // list not held: the global list's cursor
};

// A block of the resident kernel as serve()'s Worker. Its leader's broadcasts go through a GpuBlock of its own over
// the block's shared storage, alternating the same two slots as each run's GpuBlock: serve() puts a block barrier
// between its last broadcast and a run's first and between a run's last and its next, so no slot is rewritten before
// every thread read it.
template <int THREADS> class GpuWorker {
public:
  __device__ explicit GpuWorker(ResidentShared& s)
      : s_(s), broadcast_(record().view, record().params, block_shared<THREADS>()) {
    if (threadIdx.x == 0)
      cache().program = resident::kNoProgram;
    // The bulk-copy ring's barriers, once per launch (their phases carry from run to run as from tile to tile).
    kernels::init_stream_state<THREADS>(block_shared<THREADS>().stream, kernels::stream_ring_bytes(THREADS));
  }
  __device__ std::uint32_t index() const { return blockIdx.x; }
  __device__ bool is_leader() const { return threadIdx.x == 0; }
  __device__ void sync() const { __syncthreads(); }
  __device__ std::uint32_t share(std::uint32_t value) { return broadcast_.share(value); }
  __device__ std::uint32_t thread() const { return threadIdx.x; }
  __device__ std::uint32_t threads() const { return THREADS; }
  __device__ resident::ProgramRecord& record() { return *reinterpret_cast<resident::ProgramRecord*>(s_.record); }
  __device__ std::uint32_t& held_program() { return held_; }

  // A fresh ResidentBlock (or LeanBlock) per run: its look-ahead must not carry over from another program. Returns
  // interpret()'s answer. Until its first block barrier only the leader reads what load_run's leader wrote (the
  // view's buffers, the parameters); hold() reads none of it.
  __device__ bool run(std::uint32_t program, std::uint64_t) {
    ProgramCache& h = cache();
    if (h.program != program)
      hold(program);
    SharedStorage<THREADS>& shared = block_shared<THREADS>();
    const resident::ProgramRecord& rec = record();
    const program::RunParams& params = rec.params;
    if (threadIdx.x == 0) {
      h.view = rec.view;
      if (h.tasks_held)
        h.view.tasks = h.tasks;
      if (h.buffers_held && rec.view.buffers == rec.table)
        h.view.buffers = h.buffers;
      if (resident::runs_lean(rec))
        lean_shared<THREADS>().abort = 0;
      else
        init_run_shared(h.view, params, shared);
    }
    __syncthreads(); // publishes h.view, load_run's writes and the run's fields
    if (resident::runs_lean(rec)) {
      if (static_cast<SyncMode>(h.view.mode) == SyncMode::sentinel)
        return run_lean<true>(h, params);
      return run_lean<false>(h, params);
    }
    ResidentBlock<THREADS> block(h.view, params, shared, h);
    const bool clean = program::interpret(block);
    drain_lookahead();
    return clean;
  }

private:
  __device__ ProgramCache& cache() { return *reinterpret_cast<ProgramCache*>(s_.cache); }

  // Every thread: the run through the lean megakernel's Block, its instructions from the cache where held (read
  // there, nothing to publish), else copied ahead from the program's as in a lean launch, the first one published by
  // a block barrier.
  template <bool SENTINEL> __device__ bool run_lean(const ProgramCache& h, const program::RunParams& params) {
    if (h.instrs_held != ProgramCache::kNotHeld) {
      LeanBlock<THREADS, SENTINEL, false> block(h.view, params, h.instrs, h.instrs_held);
      return program::interpret(block);
    }
    LeanBlock<THREADS, SENTINEL, false> block(h.view, params);
    __syncthreads();
    const bool clean = program::interpret(block);
    copy_instr_wait<0>(); // no copy may still be writing shared memory when the next run begins
    return clean;
  }

  // Every thread: copies what fits of the record's program (record() holds it) into the cache. Two rounds of loads:
  // the list's bounds with the task and buffer tables, then the list's entries (and lean instructions).
  __device__ void hold(std::uint32_t program) {
    ProgramCache& h = cache();
    const resident::ProgramRecord& rec = record();
    const program::ProgramView& v = rec.view;
    const bool tasks = v.num_tasks <= ProgramCache::kTasks;
    const bool buffers = v.num_buffers <= resident::kMaxBuffers;
    if (threadIdx.x == 0) {
      std::uint32_t entries = ProgramCache::kNotHeld, instrs = ProgramCache::kNotHeld, first = 0;
      if (v.block_begin != nullptr) {
        first = v.block_begin[blockIdx.x];
        const std::uint32_t end = v.block_begin[blockIdx.x + 1];
        if (end >= first && end - first <= ProgramCache::kEntries)
          entries = end - first;
        if (v.block_instrs != nullptr && end >= first && end - first <= ProgramCache::kInstrs)
          instrs = end - first;
      }
      h.entries = entries;
      h.instrs_held = instrs;
      h.first = first;
      h.tasks_held = tasks ? 1u : 0u;
      h.buffers_held = buffers ? 1u : 0u;
    }
    if (tasks) {
      auto* dst = reinterpret_cast<std::uint32_t*>(h.tasks);
      const auto* src = reinterpret_cast<const std::uint32_t*>(v.tasks);
      for (std::uint32_t i = threadIdx.x; i < v.num_tasks * (sizeof(program::TaskDesc) / 4); i += THREADS)
        dst[i] = src[i];
    }
    if (buffers)
      for (std::uint32_t i = threadIdx.x; i < v.num_buffers; i += THREADS)
        h.buffers[i] = rec.table[i];
    __syncthreads();
    if (h.entries != ProgramCache::kNotHeld && threadIdx.x < h.entries) {
      h.tiles[threadIdx.x] = v.block_tiles[h.first + threadIdx.x];
      h.descs[threadIdx.x] = v.block_descs[h.first + threadIdx.x];
    }
    if (h.instrs_held != ProgramCache::kNotHeld && threadIdx.x < 4 * h.instrs_held) // 16 bytes per thread
      reinterpret_cast<uint4*>(h.instrs)[threadIdx.x] =
          reinterpret_cast<const uint4*>(v.block_instrs + h.first)[threadIdx.x];
    if (threadIdx.x == 0)
      h.program = program;
    __syncthreads();
  }

  ResidentShared& s_;
  GpuBlock<THREADS> broadcast_;
  std::uint32_t held_ = resident::kNoProgram; // every thread's own copy (serve() keeps them equal)
};

template <int THREADS>
__global__ void __launch_bounds__(THREADS, min_blocks_per_sm(THREADS))
    resident_kernel(const __grid_constant__ resident::Rings rings) {
  __shared__ ResidentShared shared;
  GpuWorker<THREADS> worker(shared);
  resident::serve(worker, rings);
}

} // namespace gridflow::gpu
