// The lean megakernel: the interpreter loop (runtime/interpreter.hpp) over programs whose every task runs as lean row
// tiles (runtime/lean_program.hpp), with LeanBlock as its Block policy. A tile is one 64-byte instruction. With static
// lists the copy engine brings the block's instructions into a ring of four shared-memory slots two tiles ahead
// (cp.async), each one waited for a tile before it is needed and published by a barrier the block passes anyway, so
// claiming a tile reads shared memory and waits for nothing; with dynamic claims the claimed tile's instruction is
// loaded into registers after the claim. Nothing is staged by warps, no barrier opens a tile
// without dependencies, the task's flags come with the instruction, a row whose tile is forwarded (kForwardInput) is
// taken from the registers the block's previous tile left it in, a tile ends with a block barrier only where its
// instruction says one is needed (kCloseBarrier), and a plain tile (kPlainTile: no wait, no poll, one full row) runs
// as its body alone, then its closing barrier and signal where it has them (run_plain). The same protocol, sync modes,
// watchdog, traces and errors as the general megakernel, and the same lean bodies for these tiles
// (runtime/gpu/lean_ops.cuh): the same bits.
#pragma once

#include "runtime/gpu/device_access.cuh"
#include "runtime/gpu/lean_ops.cuh"
#include "runtime/interpreter.hpp"
#include "runtime/lean_program.hpp"

#include <cooperative_groups.h>
#include <cuda/std/bit>

namespace gridflow::gpu {

template <int THREADS> struct LeanShared {
  program::TileInstr instr[4]; // static lists: the block's entry i in instr[i % 4] (LeanBlock::claim_listed)
  kernels::LeanStorage<THREADS> rows;
  TileSite site[THREADS / 32]; // per warp: where a failed poll of a sentinel-mode input is recorded
  std::uint32_t slots[2];      // leader -> block broadcast (ping-pong)
  int abort;                   // set by a thread whose poll failed inside a body
};

// The block's shared storage: one static __shared__ object per block size, named here rather than held by reference,
// so every access is a shared-memory access (LDS/STS), not a generic one through a pointer.
template <int THREADS> __device__ __forceinline__ LeanShared<THREADS>& lean_shared() {
  __shared__ LeanShared<THREADS> storage;
  return storage;
}

// Threads 0-3: one copy group that brings instruction `src` (64 bytes, 16 each) into `dst` with the copy engine, or an
// empty group when `src` is null, so the groups count list entries.
__device__ __forceinline__ void copy_instr_async(program::TileInstr* dst, const program::TileInstr* src) {
  if (threadIdx.x < 4) {
    if (src != nullptr) {
      const auto d =
          static_cast<std::uint32_t>(__cvta_generic_to_shared(reinterpret_cast<char*>(dst) + 16 * threadIdx.x));
      const char* g = reinterpret_cast<const char*>(src) + 16 * threadIdx.x;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(g) : "memory");
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
}

// Threads 0-3: wait until at most N of their copy groups are still in flight (the latest N).
template <int N> __device__ __forceinline__ void copy_instr_wait() {
  if (threadIdx.x < 4)
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Instruction `p`, read-only for the whole run, into registers: four 16-byte loads through the read-only path.
__device__ __forceinline__ program::TileInstr load_instr(const program::TileInstr* p) {
  struct Words {
    uint4 w[4];
  };
  const uint4* q = reinterpret_cast<const uint4*>(p);
  const Words words{{__ldg(q), __ldg(q + 1), __ldg(q + 2), __ldg(q + 3)}};
  return cuda::std::bit_cast<program::TileInstr>(words);
}

// Every member is force-inlined: interpret() and the body then compile into one function whose state stays in
// registers (a call would put the block object and its forwarded row in local memory). CROSS_TILE: whether the block
// runs lean partial and look-back tiles (runtime/tiles.hpp: lean_cross_tiles); a block built without them (the
// resident kernel, whose interpreter beside it runs them out of line) raises a bad descriptor for one, and its host
// never gives it one (runtime/lean_program.hpp).
template <int THREADS, bool SENTINEL, bool CROSS_TILE = true> class LeanBlock {
public:
  // Static lists: starts copying the block's first two instructions and waits for the first (the kernel's opening
  // barrier publishes it).
  __device__ __forceinline__ LeanBlock(const program::ProgramView& v, const program::RunParams& r) : v_(v), r_(r) {
    if (v_.block_begin != nullptr) {
      pos_ = v_.block_begin[blockIdx.x];
      end_ = v_.block_begin[blockIdx.x + 1];
      copy_entry(pos_);
      copy_entry(pos_ + 1);
      copy_instr_wait<1>();
    }
  }

  // Static lists whose every instruction the caller holds in shared memory (the resident kernel: `held`, this block's
  // `count` entries in list order, kept from an earlier run of the same program): claims read them there and nothing
  // is copied.
  __device__ __forceinline__ LeanBlock(const program::ProgramView& v, const program::RunParams& r,
                                       const program::TileInstr* held, std::uint32_t count)
      : v_(v), r_(r), held_(held), end_(count) {}

  __device__ __forceinline__ const program::ProgramView& view() const { return v_; }
  __device__ __forceinline__ const program::RunParams& params() const { return r_; }
  __device__ __forceinline__ std::uint32_t index() const { return blockIdx.x; }
  __device__ __forceinline__ bool is_leader() const { return threadIdx.x == 0; }
  __device__ __forceinline__ void sync() const { __syncthreads(); }
  __device__ __forceinline__ void ready() const {} // nothing was staged

  __device__ __forceinline__ std::uint32_t share(std::uint32_t value) {
    LeanShared<THREADS>& s = lean_shared<THREADS>();
    const std::uint32_t slot = turn_;
    turn_ ^= 1u;
    if (threadIdx.x == 0)
      s.slots[slot] = value;
    __syncthreads();
    return s.slots[slot];
  }

  __device__ __forceinline__ std::uint32_t smid() const {
    std::uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
  }

  // Static lists (interpreter.hpp: claim): the block's next entry, from its slot (or the held list), when it is below
  // `last`. Then, unless the list is held, the entry two ahead starts copying into the slot the entry two behind left
  // (every thread read that one before the barriers of two tiles), and the entry one ahead, copied a tile ago, is
  // waited for: this tile's body has a block barrier (every lean body has one), which publishes it before the next
  // claim.
  __device__ __forceinline__ program::detail::Claim claim_listed(std::uint32_t last) {
    program::detail::Claim c;
    if (pos_ >= end_)
      return c;
    const program::TileInstr& in = held_ != nullptr ? held_[pos_] : lean_shared<THREADS>().instr[pos_ % 4];
    const std::uint32_t tile = in.tile;
    if (tile >= last && tile < v_.num_tiles)
      return c; // a later level's
    c.tile = tile;
    c.desc = program::TileDesc{in.task, 0, in.dep_first, in.dep_count};
    cur_ = in;
    if (held_ == nullptr) {
      copy_entry(pos_ + 2);
      copy_instr_wait<1>();
    }
    ++pos_;
    return c;
  }

  // Static lists, untraced runs (interpreter.hpp: run_plain): runs the block's next entries while they are plain tiles
  // (program::kPlainTile), each as its body alone, then, where the instruction has them, the closing barrier and the
  // leader's signal (as execute and run_tile's signal step end a tile), the ring advanced as claim_listed advances it;
  // returns at the list's end or at the first entry that is not plain, which claim_listed then claims.
  __device__ __forceinline__ void run_plain() {
    if (r_.plain_tiles == 0)
      return; // every tile through the protocol's steps
    LeanShared<THREADS>& s = lean_shared<THREADS>();
    while (pos_ < end_) {
      const program::TileInstr& in = held_ != nullptr ? held_[pos_] : s.instr[pos_ % 4];
      if (!(in.flags & program::kPlainTile))
        return;
      const std::uint32_t flags = in.flags, tile = in.tile, task = in.task;
      const LeanTile t{in.opcode,
                       in.fn,
                       in.dtype,
                       in.flags,
                       reinterpret_cast<const void*>(in.in),
                       reinterpret_cast<void*>(in.out),
                       1,
                       static_cast<int>(in.cols),
                       static_cast<int>(in.out_stride)};
      if (held_ == nullptr) {
        copy_entry(pos_ + 2);
        copy_instr_wait<1>();
      }
      ++pos_;
      lean_plain_tile<THREADS>(t, s.rows, half_, &forward_);
      if (flags & program::kCloseBarrier) {
        __syncthreads(); // every thread's stores before the leader's release, or before the next tile's loads
        if (threadIdx.x == 0)
          program::detail::signal_tile(*this, tile, task, flags);
      }
    }
  }

  // Dynamic claims: the claimed tile's instruction, into registers.
  __device__ __forceinline__ void stage(std::uint32_t tile, const program::TileDesc&, std::uint32_t) {
    if (v_.block_begin == nullptr)
      cur_ = load_instr(&v_.tile_instrs[tile]);
  }

  __device__ __forceinline__ std::uint32_t signal_flags(std::uint32_t) const { return cur_.flags; }

  // Every thread. Ends with a block barrier after every store where the instruction asks for one (kCloseBarrier: set
  // by the host wherever the tile signals, polls or looks back, or the block's next tile reads memory), so the leader
  // may signal at once.
  __device__ __forceinline__ bool execute(std::uint32_t tile) {
    LeanShared<THREADS>& s = lean_shared<THREADS>();
    const program::TileInstr& in = cur_;
    const bool partial = in.opcode == static_cast<std::uint32_t>(program::Opcode::reduce_all);
    const bool scan = in.opcode == static_cast<std::uint32_t>(program::Opcode::scan_all);
    if (in.tile != tile || in.in == 0 || in.out == 0 ||
        ((partial || scan) && (!CROSS_TILE || in.task >= v_.num_tasks))) {
      // an entry out of step with its instruction, a bad buffer, a cross-tile op of no task or in a block without them
      if (threadIdx.x == 0)
        program::raise_bad_descriptor(v_, blockIdx.x, tile,
                                      static_cast<std::uint32_t>(program::DescriptorField::buffer));
      return false;
    }
    const TileSite* site = nullptr;
    if ((SENTINEL && (in.flags & program::kPollInputs)) || (CROSS_TILE && scan)) {
      const unsigned warp = threadIdx.x / 32;
      if ((threadIdx.x & 31) == 0)
        s.site[warp] = TileSite{protocol::WaitSite{reinterpret_cast<program::ControlBlock*>(v_.state), r_.timeout_ns,
                                                   blockIdx.x, tile, in.task, r_.pacing},
                                in.task, &s.abort};
      __syncwarp();
      site = &s.site[warp];
    }
    const LeanTile t{
        in.opcode,
        in.fn,
        in.dtype,
        in.flags,
        reinterpret_cast<const void*>(in.in),
        reinterpret_cast<void*>(in.out),
        static_cast<int>(in.rows),
        static_cast<int>(in.cols),
        static_cast<int>(in.out_stride),
        partial ? lean_partials_of(v_.state, v_.tasks[in.task], in.tile - v_.tasks[in.task].first_tile, r_.epoch)
                : LeanPartials{},
        scan ? lean_lookback_of(v_.state, v_.tasks[in.task], in.tile - v_.tasks[in.task].first_tile, r_.epoch, site)
             : LeanLookback{}};
    lean_tile<THREADS, SENTINEL, CROSS_TILE>(t, site, s.rows, half_, &forward_);
    if (!(in.flags & program::kCloseBarrier))
      return true; // no poll and no look-back (else the barrier is asked for), so no abort from this body
    __syncthreads();
    return !(SENTINEL || CROSS_TILE) || s.abort == 0;
  }

  // The copy of list entry i (a list position) into its slot; an empty group past the list's end.
  __device__ __forceinline__ void copy_entry(std::uint32_t i) {
    copy_instr_async(&lean_shared<THREADS>().instr[i % 4], i < end_ ? &v_.block_instrs[i] : nullptr);
  }

  __device__ __forceinline__ void fill_sentinels() const {
    const long long stride = static_cast<long long>(gridDim.x) * THREADS;
    for (std::uint32_t b = 0; b < v_.num_buffers; ++b) {
      const long long n = v_.sentinel_ranges[2 * b + 1];
      auto* words = static_cast<std::uint32_t*>(v_.buffers[b]) + v_.sentinel_ranges[2 * b];
      for (long long i = static_cast<long long>(blockIdx.x) * THREADS + threadIdx.x; i < n; i += stride)
        words[i] = program::kSentinelBits;
    }
  }

  __device__ __forceinline__ bool level_barrier(std::uint64_t generation) {
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
  std::uint32_t turn_ = 0;
  const program::TileInstr* held_ = nullptr; // static list held by the caller (else the ring of slots)
  std::uint32_t pos_ = 0, end_ = 0;          // static list: the next entry, and the list's end
  int half_ = 0;                             // the half of the reduction storage the next block reduction uses
  program::TileInstr cur_{};                 // the running tile's instruction
  kernels::LeanRow forward_{};               // the last tile's output row (on-chip forwarding)
};

// SENTINEL: the kernel for programs in sentinel mode (polled inputs, canonical outputs); the other modes' kernels have
// plain accesses only. CROSS_TILE: the kernel that also runs lean partial and look-back tiles; the one without them
// (the row kernel) carries none of their protocol, whose out-of-line calls would bring the calling convention (more
// registers and a stack frame) onto every row tile's path. The host picks the row kernel for a program without such
// tiles, and runs a sentinel-mode program with them on the general megakernel (runtime/lean_program.hpp): that
// combination is not built. The row kernel of the flags, barrier and grid-sync modes fits lean_row_min_blocks_per_sm
// blocks per SM (64 registers up to 256 threads); the other builds keep the general budget, which their bodies need
// (runtime/config.hpp).
template <int THREADS, bool SENTINEL, bool CROSS_TILE>
__global__ void __launch_bounds__(THREADS, (!SENTINEL && !CROSS_TILE) ? lean_row_min_blocks_per_sm(THREADS)
                                                                      : min_blocks_per_sm(THREADS))
    lean_megakernel(const __grid_constant__ program::ProgramView view,
                    const __grid_constant__ program::RunParams params) {
  static_assert(!(SENTINEL && CROSS_TILE), "sentinel-mode programs with cross tiles run on the general megakernel");
  if (threadIdx.x == 0)
    lean_shared<THREADS>().abort = 0;
  LeanBlock<THREADS, SENTINEL, CROSS_TILE> block(view, params);
  __syncthreads(); // the abort flag and the first instruction
  program::interpret(block);
  copy_instr_wait<0>(); // no copy may still be writing shared memory when the block exits
}

} // namespace gridflow::gpu
