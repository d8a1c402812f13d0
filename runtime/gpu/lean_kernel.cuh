// The lean megakernel: the interpreter loop (runtime/interpreter.hpp) over programs whose every task runs as lean row
// tiles (runtime/lean_program.hpp), with LeanBlock as its Block policy. A tile is one 64-byte instruction loaded by
// every thread into registers (the static list's next one prefetched while this tile runs), so nothing is staged in
// shared memory, no barrier opens a tile without dependencies, and the body starts from registers; a row whose tile
// is forwarded (kForwardInput) is taken from the registers the block's previous tile left it in. The same protocol,
// sync modes, watchdog, traces and errors as the general megakernel, and the same lean bodies for these tiles
// (runtime/gpu/lean_ops.cuh), so both kernels give the same bits.
#pragma once

#include "runtime/gpu/device_access.cuh"
#include "runtime/gpu/lean_ops.cuh"
#include "runtime/interpreter.hpp"
#include "runtime/lean_program.hpp"

#include <cooperative_groups.h>

namespace gridflow::gpu {

template <int THREADS> struct LeanShared {
  kernels::LeanStorage<THREADS> rows;
  TileSite site[THREADS / 32]; // per warp: where a failed poll of a sentinel-mode input is recorded
  std::uint32_t slots[2];      // leader -> block broadcast (ping-pong)
  int abort;                   // set by a thread whose poll failed inside a body
};

template <int THREADS> class LeanBlock {
public:
  __device__ LeanBlock(const program::ProgramView& v, const program::RunParams& r, LeanShared<THREADS>& s)
      : v_(v), r_(r), s_(s) {
    if (v_.block_begin != nullptr) {
      pos_ = v_.block_begin[blockIdx.x];
      end_ = v_.block_begin[blockIdx.x + 1];
      if (pos_ < end_)
        next_ = v_.block_instrs[pos_];
    }
  }

  __device__ const program::ProgramView& view() const { return v_; }
  __device__ const program::RunParams& params() const { return r_; }
  __device__ std::uint32_t index() const { return blockIdx.x; }
  __device__ bool is_leader() const { return threadIdx.x == 0; }
  __device__ void sync() const { __syncthreads(); }
  __device__ void ready() const {} // the instruction is in every thread's registers

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

  // The claimed tile's instruction: the static list's next entry (loaded a tile ahead; the next one is loaded now,
  // its latency hidden by this tile), or the dynamic claim's tile.
  __device__ void stage(std::uint32_t tile, const program::TileDesc&, std::uint32_t) {
    if (v_.block_begin != nullptr) {
      cur_ = next_;
      if (++pos_ < end_)
        next_ = v_.block_instrs[pos_];
    } else {
      cur_ = v_.tile_instrs[tile];
    }
  }

  __device__ std::uint32_t signal_flags(std::uint32_t) const { return cur_.flags; }

  // Every thread; ends with a block barrier after every store, so the leader may signal at once.
  __device__ bool execute(std::uint32_t tile) {
    const program::TileInstr& in = cur_;
    if (in.tile != tile || in.in == 0 || in.out == 0) { // a list entry out of step with its instruction, a bad buffer
      if (threadIdx.x == 0)
        program::raise_bad_descriptor(v_, blockIdx.x, tile,
                                      static_cast<std::uint32_t>(program::DescriptorField::buffer));
      return false;
    }
    const TileSite* site = nullptr;
    if (in.flags & program::kPollInputs) {
      const unsigned warp = threadIdx.x / 32;
      if ((threadIdx.x & 31) == 0)
        s_.site[warp] = TileSite{protocol::WaitSite{reinterpret_cast<program::ControlBlock*>(v_.state), r_.timeout_ns,
                                                    blockIdx.x, tile, in.task, r_.pacing},
                                 in.task, &s_.abort};
      __syncwarp();
      site = &s_.site[warp];
    }
    const LeanTile t{in.opcode,
                     in.fn,
                     in.dtype,
                     in.flags,
                     reinterpret_cast<const void*>(in.in),
                     reinterpret_cast<void*>(in.out),
                     static_cast<int>(in.rows),
                     static_cast<int>(in.cols),
                     static_cast<int>(in.out_stride)};
    lean_tile<THREADS>(t, site, s_.rows, &forward_);
    __syncthreads();
    return s_.abort == 0;
  }

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
  LeanShared<THREADS>& s_;
  std::uint32_t turn_ = 0;
  std::uint32_t pos_ = 0, end_ = 0; // static list: the next entry to stage, and the list's end
  program::TileInstr cur_{}, next_{};
  kernels::LeanRow forward_{}; // the last tile's output row (on-chip forwarding)
};

template <int THREADS>
__global__ void __launch_bounds__(THREADS, THREADS >= 512 ? 1 : 512 / THREADS)
    lean_megakernel(const __grid_constant__ program::ProgramView view,
                    const __grid_constant__ program::RunParams params) {
  __shared__ LeanShared<THREADS> shared;
  if (threadIdx.x == 0)
    shared.abort = 0;
  __syncthreads();
  LeanBlock<THREADS> block(view, params, shared);
  program::interpret(block);
}

} // namespace gridflow::gpu
