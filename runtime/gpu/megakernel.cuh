// The persistent megakernel: one cooperative launch, every block resident, each running the interpreter loop
// (runtime/interpreter.hpp) with GpuBlock as its Block policy. The __global__ is a thin shell: it declares the
// shared storage, builds the block object and calls interpret().
#pragma once

#include "runtime/gpu/tile.cuh"
#include "runtime/interpreter.hpp"

#include <cooperative_groups.h>

namespace gridflow::gpu {

template <int THREADS> class GpuBlock {
public:
  __device__ GpuBlock(const program::ProgramView& v, const program::RunParams& r, SharedStorage<THREADS>& s)
      : v_(v), r_(r), s_(s) {}

  __device__ const program::ProgramView& view() const { return v_; }
  __device__ const program::RunParams& params() const { return r_; }
  __device__ std::uint32_t index() const { return blockIdx.x; }
  __device__ bool is_leader() const { return threadIdx.x == 0; }
  __device__ void sync() const { __syncthreads(); }
  // stage_tile's descriptors in shared memory are published by a block barrier.
  __device__ void ready() const { __syncthreads(); }
  // From the task table, not from the staged copy: after execute's closing barrier, warp 1 of a block with a static
  // list may already be staging the next tile over it.
  __device__ std::uint32_t signal_flags(std::uint32_t task) const { return v_.tasks[task].flags; }

  // The leader's value to every thread. Slots alternate so a slot is never rewritten before every thread read
  // it (there is always at least one barrier between two uses of the same slot).
  __device__ std::uint32_t share(std::uint32_t value) {
    const std::uint32_t slot = turn_;
    turn_ ^= 1u;
    if (threadIdx.x == 0)
      s_.slots[slot] = value;
    __syncthreads();
    return s_.slots[slot];
  }

  __device__ std::uint32_t smid() const {
    std::uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
  }

  __device__ void stage(std::uint32_t tile, const program::TileDesc& t, std::uint32_t next_task) {
    stage_tile<THREADS>(v_, s_, tile, t, next_task, ahead_);
  }
  __device__ bool execute(std::uint32_t tile) { return execute_tile<THREADS>(v_, r_, s_, tile); }

  __device__ void fill_sentinels() const {
    const long long stride = static_cast<long long>(gridDim.x) * THREADS;
    for (std::uint32_t b = 0; b < v_.num_buffers; ++b) {
      const long long n = v_.sentinel_ranges[2 * b + 1];
      auto* words = static_cast<std::uint32_t*>(v_.buffers[b]) + v_.sentinel_ranges[2 * b];
      for (long long i = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x; i < n; i += stride)
        words[i] = program::kSentinelBits;
    }
  }

  __device__ bool level_barrier(std::uint64_t generation) {
    if (static_cast<SyncMode>(v_.mode) == SyncMode::grid_sync) {
      cooperative_groups::this_grid().sync();
      return true;
    }
    // gridflow's barrier: block barrier, one release arrival, one acquire observation, block barrier.
    __syncthreads();
    std::uint32_t ok = 1;
    if (threadIdx.x == 0) {
      const program::Arena arena{v_.state, v_.layout};
      protocol::barrier_arrive(arena.barrier_counter());
      const protocol::WaitSite site{arena.control(), r_.timeout_ns, blockIdx.x, program::kNoTile, 0, r_.pacing};
      ok = protocol::barrier_wait(site, arena.barrier_counter(), generation, gridDim.x) ? 1u : 0u;
    }
    return share(ok) != 0;
  }

private:
  const program::ProgramView& v_;
  const program::RunParams& r_;
  SharedStorage<THREADS>& s_;
  std::uint32_t turn_ = 0;
  TaskLookahead ahead_; // warp 1 only
};

// The parameters are __grid_constant__: the blocks keep references to them (GpuBlock, execute_tile), and without it
// taking their address copies them to every thread's local memory, putting a local load in front of every
// descriptor access.
template <int THREADS>
__global__ void __launch_bounds__(THREADS, min_blocks_per_sm(THREADS))
    megakernel(const __grid_constant__ program::ProgramView view, const __grid_constant__ program::RunParams params) {
  SharedStorage<THREADS>& shared = block_shared<THREADS>();
  init_shared(view, params, shared);
  GpuBlock<THREADS> block(view, params, shared);
  program::interpret(block);
  drain_lookahead();
}

// Baseline: one ordinary launch per task, one block per tile, the same bodies; stream order replaces every
// dependency. (Tiles of one task never wait on each other here except scan_all's look-back, which needs every
// tile of the task co-resident: the baseline refuses larger scan_all tasks.)
template <int THREADS>
__global__ void __launch_bounds__(THREADS, min_blocks_per_sm(THREADS))
    task_kernel(const __grid_constant__ program::ProgramView view, const __grid_constant__ program::RunParams params,
                std::uint32_t task) {
  SharedStorage<THREADS>& shared = block_shared<THREADS>();
  init_shared(view, params, shared);
  const std::uint32_t tile = view.tasks[task].first_tile + blockIdx.x;
  TaskLookahead none;
  stage_tile<THREADS>(view, shared, tile, view.tiles[tile], program::kNoTile, none);
  __syncthreads();
  execute_tile<THREADS>(view, params, shared, tile);
}

} // namespace gridflow::gpu
