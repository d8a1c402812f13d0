// One tile of any op: descriptor checks, the tile context, then the op table with the task's access policies.
#pragma once

#include "runtime/gpu/counting_ops.cuh"
#include "runtime/gpu/ops.cuh"

namespace gridflow::gpu {

// Thread 0, before a block's run of a program, published by a block barrier after it: the abort flag (set only by a
// body whose wait failed, after which the block leaves the run, so not cleared within it: the interpreter has no
// barrier between one tile's last read of it and the next tile's staging), the wait site's per-run fields and the
// bulk-copy ring's size for the run.
template <int THREADS>
__device__ void init_run_shared(const program::ProgramView& v, const program::RunParams& r, SharedStorage<THREADS>& s) {
  s.abort = 0;
  s.site = TileSite{protocol::WaitSite{reinterpret_cast<program::ControlBlock*>(v.state), r.timeout_ns, blockIdx.x,
                                       program::kNoTile, 0, r.pacing},
                    0, &s.abort};
  kernels::set_stream_ring_bytes<THREADS>(s.stream, r.ring_bytes);
}

// Once per block at kernel start, ending with a block barrier: the bulk-copy ring's barriers and the run's fields
// (init_run_shared).
template <int THREADS>
__device__ void init_shared(const program::ProgramView& v, const program::RunParams& r, SharedStorage<THREADS>& s) {
  if (threadIdx.x == 0)
    init_run_shared(v, r, s);
  kernels::init_stream_state<THREADS>(s.stream, r.ring_bytes); // ends with __syncthreads
}

// Warp 1's copy-ahead of the next task descriptor (stage_tile): which task's words are in flight to s.ahead.
struct TaskLookahead {
  std::uint32_t task = program::kNoTile;
};

// Copies the descriptor `t` of `tile` and its task's descriptor to shared memory, names them in the wait site, and
// resolves the task's views (buffer base plus offset) there, with warp 1 alone and no barrier: the caller's next
// block barrier publishes them. Warp 1, not warp 0, so the leader (thread 0) can poll for the tile's inputs while
// these loads are in flight (the interpreter stages before it waits), and the body then starts from shared memory
// alone.
// When the schedule names the block's next task (next_task), warp 1 also starts copying that descriptor into
// s.ahead with asynchronous copies (cp.async), which land while this tile runs: the next stage_tile then reads
// shared memory instead of waiting for global loads. Each lane copies, waits for and reads back only its own word.
// The previous tile's readers of s.task, s.tile, s.site and s.views are past the barrier that ends execute_tile.
// `t` passed descriptor_ok; a buffer index out of range resolves to null here and is reported by execute_tile.
template <int THREADS>
__device__ void stage_tile(const program::ProgramView& v, SharedStorage<THREADS>& s, std::uint32_t tile,
                           const program::TileDesc& t, std::uint32_t next_task, TaskLookahead& ahead) {
  static_assert(THREADS >= 64 && sizeof(program::TaskDesc) == 32 * sizeof(std::uint32_t));
  if (threadIdx.x / 32 != 1)
    return;
  const unsigned lane = threadIdx.x % 32;
  auto* task_words = reinterpret_cast<std::uint32_t*>(&s.task);
#if __CUDA_ARCH__ >= 800
  if (ahead.task == t.task) {
    asm volatile("cp.async.wait_all;" ::: "memory");
    task_words[lane] = s.ahead[lane];
  } else
#endif
  {
    task_words[lane] = reinterpret_cast<const std::uint32_t*>(&v.tasks[t.task])[lane];
  }
  if (lane == 0) {
    s.tile = t;
    s.site.site.tile = tile;
    s.site.site.task = t.task;
    s.site.task = t.task;
  }
#if __CUDA_ARCH__ >= 800
  ahead.task = program::kNoTile;
  if (next_task < v.num_tasks && next_task != t.task) {
    const auto dst = static_cast<std::uint32_t>(__cvta_generic_to_shared(&s.ahead[lane]));
    const auto* src = reinterpret_cast<const std::uint32_t*>(&v.tasks[next_task]) + lane;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\ncp.async.commit_group;" ::"r"(dst), "l"(src) : "memory");
    ahead.task = next_task;
  }
#else
  (void)next_task, (void)ahead;
#endif
  __syncwarp();
  if (lane < 3) { // lanes 0, 1, 2: the input, output and aux views (elements are 4 bytes)
    const std::uint32_t b = lane == kInView    ? s.task.in_buffer
                            : lane == kOutView ? s.task.out_buffer
                                               : s.task.aux_buffer;
    const std::uint64_t offset = lane == kInView    ? s.task.in_offset
                                 : lane == kOutView ? s.task.out_offset
                                                    : s.task.aux_offset;
    s.views[lane] = b < v.num_buffers ? static_cast<unsigned char*>(v.buffers[b]) + 4 * offset : nullptr;
  }
}

// Warp 1 at the block's exit: no copy-ahead may still be writing shared memory.
__device__ inline void drain_lookahead() {
#if __CUDA_ARCH__ >= 800
  if (threadIdx.x / 32 == 1)
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

// Runs one tile with every thread of the block; false when the run was aborted or the descriptor is bad.
// Requires stage_tile of this tile and a block barrier since. On true it returns after a block barrier that follows
// every thread's body stores, so the leader may signal the tile at once.
template <int THREADS>
__device__ bool execute_tile(const program::ProgramView& v, const program::RunParams& r, SharedStorage<THREADS>& s,
                             std::uint32_t tile) {
  const program::TileDesc t = s.tile;
  const program::TaskDesc& task = s.task;
  const program::DescriptorCheck check =
      program::check_descriptor(task, v.num_buffers, static_cast<long long>(THREADS) * scan_items(THREADS),
                                kernels::lean_max_cols(THREADS), kernels::kHistogramMaxBins, kernels::kScatterMaxBins);
  if (!check.ok) {
    if (threadIdx.x == 0)
      program::raise_bad_descriptor(v, blockIdx.x, tile, static_cast<std::uint32_t>(check.field));
    return false;
  }
  const TileContext<THREADS> c{v.state, r.epoch, t.index};
  const bool poll = task.flags & program::kPollInputs;
  const bool canonical = task.flags & program::kSentinelOutput;
  const bool lean = program::lean_tiles(task, THREADS);
  bool known;
  if (program::is_counting_op(task.opcode))
    known = dispatch_counting(c);
  else if (poll)
    known = canonical ? dispatch_tile(c, lean, PollLoad{&c.site()}, CanonicalStore{})
                      : dispatch_tile(c, lean, PollLoad{&c.site()}, kernels::PlainStore{});
  else
    known = canonical ? dispatch_tile(c, lean, kernels::PlainLoad{}, CanonicalStore{})
                      : dispatch_tile(c, lean, kernels::PlainLoad{}, kernels::PlainStore{});
  if (!known) {
    if (threadIdx.x == 0) {
      program::ErrorRecord e;
      e.code = static_cast<std::uint32_t>(program::ErrorCode::bad_opcode);
      e.block = blockIdx.x;
      e.tile = tile;
      e.task = t.task;
      e.detail = task.opcode;
      protocol::raise_error(reinterpret_cast<program::ControlBlock*>(v.state), e);
    }
    return false;
  }
  __syncthreads();
  return s.abort == 0;
}

} // namespace gridflow::gpu
