// Streaming a long global range through shared memory with the bulk copy engine (Hopper's cp.async.bulk,
// completion counted in bytes on an mbarrier), for bodies that read every element once.
//
// Why: the megakernel runs at 16 warps per SM (128 registers per thread), too few for register loads to keep
// enough bytes in flight to cover HBM latency (ncu: 68% long-scoreboard stalls in the reduce). The copy engine
// keeps a whole ring of stages in flight per block, refilled the moment a stage is consumed, with no registers.
//
// The contract of for_each_owned (access.cuh) is kept exactly: thread t visits the elements before x's first
// 16-byte boundary, then 4-element groups t, t + THREADS, t + 2 * THREADS, ... in increasing order, then the
// tail; a stage of G * THREADS groups gives thread t its groups t, t + THREADS, ... within it. So a streamed fold
// is bit-identical to a register-loaded or a polled one (sentinel mode) of the same range.
//
// Memory order: the bulk copies read global memory through the async proxy. Inputs written by other blocks are
// acquired by the block leader (generic proxy) before the body starts; the issuing thread's
// fence.proxy.async.global orders that acquire before its bulk reads. The copies also write the ring through the async
// proxy, which a block barrier alone does not order after the threads' ordinary reads of the slot being refilled:
// every thread that read ring slots calls release_ring_reads() after its last read and before the barrier that hands
// them to the leader (without it a read still in flight can return bytes of the refill).
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/tile_shapes.hpp"

#include <cuda/ptx>

namespace gridflow::kernels {

inline constexpr int kMaxStreamStages = 16;

// Ring shape per block size: stages of stream_stage_bytes(THREADS), at most stream_ring_bytes(THREADS) of them, in
// the launch's dynamic shared memory; how many a launch has is StreamState::ring_bytes / kStageBytes.
template <int THREADS> struct StreamShape {
  // 16-byte groups per thread per stage: 16 KB stages from 256 threads up (8 KB at 128), so each stage's fixed step
  // (the mbarrier wait, the block barrier before the refill) is paid per 4 groups per thread at 256 threads.
  static constexpr int kGroupsPerThread = THREADS <= 256 ? 4 : 16384 / 16 / THREADS;
  static constexpr int kStageGroups = THREADS * kGroupsPerThread;
  static constexpr int kStageBytes = kStageGroups * 16;
  static constexpr int kMaxStages = stream_ring_bytes(THREADS) / kStageBytes;
  static_assert(kStageBytes == stream_stage_bytes(THREADS));
  static_assert(kMaxStages >= 2 && kMaxStages <= kMaxStreamStages);
};

// One barrier per ring stage, or per warp when the warps stage rows (for_each_warp_row_staged): up to 32 warps.
inline constexpr int kStreamBarriers = 32;

// The block's ring: the launch's dynamic shared memory, RunParams::ring_bytes of it (at most
// stream_ring_bytes(THREADS)). Used only inside one streamed call at a time.
__device__ __forceinline__ unsigned char* stream_ring() {
  extern __shared__ __align__(128) unsigned char gridflow_stream_ring[];
  return gridflow_stream_ring;
}

// Barriers and their phases, and the ring's size this launch: outside any union, initialised once per kernel launch
// (init_stream_state), then carried from call to call.
struct StreamState {
  alignas(8) cuda::std::uint64_t full[kStreamBarriers];
  cuda::std::uint32_t phase;      // bit s: the parity the next wait on barrier s expects
  cuda::std::uint32_t ring_bytes; // the ring (0: none; every streamed call then reads directly)
};

// One thread, between streamed calls (published by a block barrier): the ring's size from now on (at most
// stream_ring_bytes(THREADS): larger is clamped; 0 on a GPU without the copy engine).
template <int THREADS> __device__ inline void set_stream_ring_bytes(StreamState& s, cuda::std::uint32_t ring_bytes) {
#if __CUDA_ARCH__ >= 900
  const auto most = static_cast<cuda::std::uint32_t>(stream_ring_bytes(THREADS));
  s.ring_bytes = ring_bytes < most ? ring_bytes : most;
#else
  (void)ring_bytes;
  s.ring_bytes = 0;
#endif
}

// Once per block at kernel start, before any streamed call, with the launch's ring size (set_stream_ring_bytes);
// followed by a block barrier (done here).
template <int THREADS> __device__ inline void init_stream_state(StreamState& s, cuda::std::uint32_t ring_bytes) {
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    for (int k = 0; k < kStreamBarriers; ++k)
      cuda::ptx::mbarrier_init(&s.full[k], 1);
    s.phase = 0;
    set_stream_ring_bytes<THREADS>(s, ring_bytes);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
#else
  if (threadIdx.x == 0)
    s.phase = 0, s.ring_bytes = 0;
#endif
  __syncthreads();
}

// Where one body streams from: the block's ring (stream_ring()) and its barrier state.
template <int THREADS> struct BlockStream {
  unsigned char* ring;
  StreamState* state;
};

// The copy engine's one step, shared by every ring user: `bytes` (a multiple of 16; both addresses 16-byte aligned)
// from global memory into shared memory, completing on `bar` (one arrival that expects the bytes).
__device__ __forceinline__ void bulk_load(void* dst, const void* src, cuda::std::uint32_t bytes,
                                          cuda::std::uint64_t* bar) {
  cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared, bar,
                                       bytes);
  cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, dst, src, bytes, bar);
}

// Every thread that read ring slots with ordinary loads, after its last read of them and before the block (or warp)
// barrier after which the leader refills them with the copy engine: orders those reads before the copy engine's
// writes (async proxy).
__device__ __forceinline__ void release_ring_reads() {
#if __CUDA_ARCH__ >= 900
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
#endif
}

// Spins until `bar` completes its phase of parity `parity` (acquire: the landed bytes are then visible).
__device__ __forceinline__ void wait_phase(cuda::std::uint64_t* bar, cuda::std::uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

// Ranges shorter than this many stages are not worth the barrier round trips: they use register loads.
inline constexpr int kStreamMinStages = 2;

// Whole chunks of up to `chunk_bytes` (a multiple of 16) through the ring, one per slot: slot j is ring bytes
// [j * chunk_bytes, (j + 1) * chunk_bytes) and completes on barrier j. The leader issues a chunk into a free slot;
// every thread waits for it, reads it, and a block barrier frees the slot again. Phases as RingPass: every thread
// keeps an identical copy from begin() (after a block barrier that follows the previous streamed call) to finish().
// RingPass is a ChunkRing of stage-sized slots.
template <int THREADS> struct ChunkRing {
  unsigned char* ring;
  StreamState* st;
  cuda::std::uint32_t chunk_bytes;
  int slots;
  cuda::std::uint32_t phase;

  // The ring cut into chunks, or false when it holds fewer than two (nothing to overlap) or the GPU lacks the copy
  // engine.
  __device__ __forceinline__ static bool plan(const BlockStream<THREADS>& stream, cuda::std::uint32_t chunk_bytes,
                                              ChunkRing& r) {
#if __CUDA_ARCH__ >= 900
    const int slots = static_cast<int>(stream.state->ring_bytes / chunk_bytes);
    r = ChunkRing{stream.ring, stream.state, chunk_bytes, slots < kStreamBarriers ? slots : kStreamBarriers, 0};
    return r.slots >= 2;
#else
    (void)stream, (void)chunk_bytes, (void)r;
    return false;
#endif
  }
  __device__ __forceinline__ void begin() {
    phase = st->phase;
  }
  // Leader only: `bytes` (a multiple of 16, at most chunk_bytes; 16-byte aligned source) into `slot`; 0 bytes
  // completes the slot's phase with nothing copied.
  __device__ __forceinline__ void issue(int slot, const void* src, cuda::std::uint32_t bytes) const {
    if (bytes > 0)
      bulk_load(ring + slot * chunk_bytes, src, bytes, &st->full[slot]);
    else
      (void)cuda::ptx::mbarrier_arrive(&st->full[slot]);
  }
  template <class T> __device__ __forceinline__ const T* data(int slot) const {
    return reinterpret_cast<const T*>(ring + slot * chunk_bytes);
  }
  // Waits for the slot's chunk to land (acquire); returns it.
  template <class T> __device__ __forceinline__ const T* wait(int slot) {
    wait_phase(&st->full[slot], (phase >> slot) & 1u);
    phase ^= 1u << slot;
    return data<T>(slot);
  }
  __device__ __forceinline__ int next_slot(int slot) const {
    return slot + 1 == slots ? 0 : slot + 1;
  }
  __device__ __forceinline__ void finish() const {
    if (threadIdx.x == 0)
      st->phase = phase;
  }
};

// One range x[0, n) streamed through the block's ring: elements before x's first 16-byte boundary (head), then
// `stages` stages of up to kStageGroups 16-byte groups (stage c in slot c % slots, slots the ring's stages this
// launch), then the tail. Holds the phases of the ring's barriers as this thread expects them from stream_all on;
// every thread of the block keeps an identical copy.
template <int THREADS, class T> struct RingPass {
  using Shape = StreamShape<THREADS>;
  const T* x;
  long long n, head, groups, stages;
  ChunkRing<THREADS> ring; // one stage per slot

  __device__ __forceinline__ int slots() const { return ring.slots; }
  __device__ __forceinline__ int slot_of(long long c) const { return static_cast<int>(c) % ring.slots; } // c < 2^31
  __device__ __forceinline__ int next_slot(int slot) const { return ring.next_slot(slot); }

  // The pass over x[0, n) (its geometry alone), or false when the range is too short to stream or the GPU lacks the
  // copy engine.
  __device__ __forceinline__ static bool plan(const T* x, long long n, const BlockStream<THREADS>& stream,
                                              RingPass& p) {
    const auto addr = reinterpret_cast<std::uintptr_t>(x);
    long long head = static_cast<long long>(((16u - (addr & 15u)) & 15u) / sizeof(T));
    if (head > n)
      head = n;
    const long long groups = (n - head) / 4;
    const long long stages = (groups + Shape::kStageGroups - 1) / Shape::kStageGroups;
    p = RingPass{x, n, head, groups, stages, {}};
    return ChunkRing<THREADS>::plan(stream, Shape::kStageBytes, p.ring) && stages >= kStreamMinStages;
  }
  // Leader only: stage c into `slot`.
  __device__ __forceinline__ void issue(long long c, int slot) const {
    const long long g0 = c * Shape::kStageGroups;
    const long long count = groups - g0 < Shape::kStageGroups ? groups - g0 : Shape::kStageGroups;
    ring.issue(slot, x + head + 4 * g0, static_cast<cuda::std::uint32_t>(count * 16));
  }
  __device__ __forceinline__ void wait(int slot) { ring.template wait<T>(slot); }
  // This thread's groups of stage c, which is in `slot`: groups t, t + THREADS, ... of it, in increasing order.
  template <class F> __device__ __forceinline__ void visit(long long c, int slot, F& f) const {
    const long long g0 = c * Shape::kStageGroups;
    const auto* v = reinterpret_cast<const typename Vec4<T>::type*>(ring.template data<T>(slot));
#pragma unroll
    for (int j = 0; j < Shape::kGroupsPerThread; ++j) {
      const long long local = threadIdx.x + static_cast<long long>(j) * THREADS;
      if (g0 + local < groups) {
        const auto r = v[local];
        const long long base = head + 4 * (g0 + local);
        f(base, r.x), f(base + 1, r.y), f(base + 2, r.z), f(base + 3, r.w);
      }
    }
  }
  template <class Load, class F> __device__ __forceinline__ void visit_head(Load load, F& f) const {
    for (long long i = threadIdx.x; i < head; i += THREADS)
      f(i, load(x + i));
  }
  template <class Load, class F> __device__ __forceinline__ void visit_tail(Load load, F& f) const {
    for (long long j = head + 4 * groups + threadIdx.x; j < n; j += THREADS)
      f(j, load(x + j));
  }
  // The first pass: every stage in order through the ring, the last min(stages, slots) left resident. Begins
  // with a block barrier (every thread has read the phases before the leader may write them back, and released its
  // reads of the ring by earlier calls).
  template <class F> __device__ __forceinline__ void stream_all(F& f) {
    ring.begin();
    release_ring_reads();
    __syncthreads();
    if (threadIdx.x == 0) {
      cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
      for (long long c = 0; c < stages && c < ring.slots; ++c)
        issue(c, static_cast<int>(c));
    }
    int slot = 0;
    for (long long c = 0; c < stages; ++c, slot = next_slot(slot)) {
      wait(slot);
      visit(c, slot, f);
      release_ring_reads();
      __syncthreads(); // the stage is consumed: it may be refilled
      if (threadIdx.x == 0 && c + ring.slots < stages)
        issue(c + ring.slots, slot);
    }
  }
  __device__ __forceinline__ void finish() const {
    ring.finish();
  }
};

// Where a streamed pass that fit the ring left its range x[0, n): elements [head, end) at ring[i - head].
template <class T> struct RingSpan {
  const T* ring;
  long long head, end;
};

// True, with the span, when for_each_owned_streamed<THREADS>(x, n, load, &stream, ...) streams the range and all of
// its stages fit the ring at once: after that call the range's aligned body is still in the ring, in order, until
// the next streamed call. Reads only the ring's size, constant for the launch (callable by every thread at any time).
template <int THREADS, class T, class Load>
__device__ __forceinline__ bool streamed_range_stays_in_ring(const T* x, long long n,
                                                             const BlockStream<THREADS>& stream, RingSpan<T>& span) {
#if __CUDA_ARCH__ >= 900
  if constexpr (Load::kVectorizable) {
    RingPass<THREADS, T> p;
    if (RingPass<THREADS, T>::plan(x, n, stream, p) && p.stages <= p.slots()) {
      span = {reinterpret_cast<const T*>(stream.ring), p.head, p.head + 4 * p.groups};
      return true;
    }
  }
#endif
  (void)x, (void)n, (void)stream, (void)span;
  return false;
}

// Like for_each_owned (same ownership and order), reading the 16-byte groups through the ring when `stream` is
// given, the Load is vectorizable, the GPU has the copy engine, and the range spans kStreamMinStages stages.
// Every thread of the block must call it (uniform); it contains block barriers, and the ring must not be in use
// by anything else during the call. Consecutive calls need a block barrier between them (bodies have them).
template <int THREADS, class T, class Load, class F>
__device__ __forceinline__ void for_each_owned_streamed(const T* x, long long n, Load load,
                                                        const BlockStream<THREADS>* stream, F&& f) {
  static_assert(sizeof(T) == 4, "4-byte elements");
#if __CUDA_ARCH__ >= 900
  if constexpr (Load::kVectorizable) {
    RingPass<THREADS, T> p;
    if (stream != nullptr && RingPass<THREADS, T>::plan(x, n, *stream, p)) {
      p.visit_head(load, f);
      p.stream_all(f);
      p.visit_tail(load, f);
      p.finish();
      return;
    }
  }
#endif
  (void)stream;
  for_each_owned<THREADS>(x, n, load, static_cast<F&&>(f));
}

// Two passes over x[0, n) by the whole block: first(i, v) over every element exactly as for_each_owned_streamed
// (same ownership and order), then between() (every thread; it may hold block barriers but must not touch the
// ring), then second(i, v) over every element again by the same thread in an unspecified order. Streamed, the
// second pass starts on the stages the first one left in the ring (as many of the range's last stages as it holds)
// and reads only the rest again: a range that fits the ring is read from global memory once. Same calling rules as
// for_each_owned_streamed.
template <int THREADS, class T, class Load, class F1, class B, class F2>
__device__ __forceinline__ void for_each_owned_streamed_twice(const T* x, long long n, Load load,
                                                              const BlockStream<THREADS>* stream, F1&& first,
                                                              B&& between, F2&& second) {
  static_assert(sizeof(T) == 4, "4-byte elements");
#if __CUDA_ARCH__ >= 900
  if constexpr (Load::kVectorizable) {
    using Pass = RingPass<THREADS, T>;
    Pass p;
    if (stream != nullptr && Pass::plan(x, n, *stream, p)) {
      p.visit_head(load, first);
      p.stream_all(first);
      p.visit_tail(load, first);
      between();
      p.visit_head(load, second);
      // Stages [resident, stages) are still in the ring. Each is visited and its slot refilled with the next early
      // stage (e = 0, 1, ...), so early stage e lands in slot (resident + e) % slots, and keeps that slot's turn
      // when the ring cycles through the early stages.
      const long long resident = p.stages > p.slots() ? p.stages - p.slots() : 0;
      int slot = p.slot_of(resident);
      for (long long c = resident; c < p.stages; ++c, slot = p.next_slot(slot)) {
        p.visit(c, slot, second);
        release_ring_reads();
        __syncthreads();
        if (threadIdx.x == 0 && c - resident < resident)
          p.issue(c - resident, slot);
      }
      slot = p.slot_of(resident); // early stage e is in slot (resident + e) % slots
      for (long long e = 0; e < resident; ++e, slot = p.next_slot(slot)) {
        p.wait(slot);
        p.visit(e, slot, second);
        release_ring_reads();
        __syncthreads();
        if (threadIdx.x == 0 && e + p.slots() < resident)
          p.issue(e + p.slots(), slot);
      }
      p.visit_tail(load, second);
      p.finish();
      return;
    }
  }
#endif
  (void)stream;
  for_each_owned<THREADS>(x, n, load, first);
  between();
  for_each_owned<THREADS>(x, n, load, second);
}

// Rows a warp holds whole (one row per warp at a time), each read from shared memory instead of global: the ring is
// cut into one slot per warp, each slot into D row buffers, and the copy engine fills a warp's buffers with its next D
// rows while the warp computes and stores the current one, so the rows' load latency is off the warp's critical
// path; the row after those is prefetched into L2. (A warp of the megakernel otherwise has one row's loads in flight,
// then a dependent reduction: 16 warps per SM cannot cover HBM latency that way.) Buffer b of warp w completes on
// barrier w * D + b.
inline constexpr int kMaxStagedRowsPerWarp = 4;

// Bytes of each warp's slot this launch (a multiple of 16).
template <int THREADS> __device__ __forceinline__ long long warp_slot_bytes(const StreamState& st) {
  return static_cast<long long>(st.ring_bytes / (THREADS / 32)) & ~15LL;
}

// Row buffers per warp for rows of `bytes`: as many as its slot holds, up to kMaxStagedRowsPerWarp and the barriers.
template <int THREADS> __device__ __forceinline__ int staged_rows_per_warp(const StreamState& st, long long bytes) {
  constexpr int kWarps = THREADS / 32;
  constexpr int kMax =
      kMaxStagedRowsPerWarp < kStreamBarriers / kWarps ? kMaxStagedRowsPerWarp : kStreamBarriers / kWarps;
  const long long fit = warp_slot_bytes<THREADS>(st) / bytes;
  return static_cast<int>(fit < kMax ? fit : kMax);
}

// True when for_each_warp_row_staged can take rows [row_begin, row_end) of n 4-byte elements from x: a 16-byte
// aligned view of rows a whole number of 16-byte groups long that fit a slot, the GPU has the copy engine, and
// every warp gets at least two rows (with one there is nothing to overlap).
template <int THREADS>
__device__ __forceinline__ bool can_stage_warp_rows(const void* x, long long n, long long row_begin, long long row_end,
                                                    const BlockStream<THREADS>& stream) {
#if __CUDA_ARCH__ >= 900
  static_assert(THREADS / 32 <= kStreamBarriers);
  return n > 0 && n % 4 == 0 && 4 * n <= warp_slot_bytes<THREADS>(*stream.state) &&
         (reinterpret_cast<std::uintptr_t>(x) & 15u) == 0 && row_end - row_begin >= 2LL * (THREADS / 32);
#else
  (void)x, (void)n, (void)row_begin, (void)row_end, (void)stream;
  return false;
#endif
}

// Calls f(row, buffer, release) for rows row_begin + w, row_begin + w + warps, ... by warp w (buffer: the row's n
// elements in shared memory). f must read what it needs of the buffer, then call release() (every lane, once), which
// hands the buffer to the copy engine for a later row; then it may compute and store. Preconditions:
// can_stage_warp_rows; every thread of the block calls it; the ring is not in use by anything else during the call;
// a block barrier separates it from the previous and the next streamed call (it begins with one itself).
template <int THREADS, class F>
__device__ __forceinline__ void for_each_warp_row_staged(const float* x, long long n, long long row_begin,
                                                         long long row_end, const BlockStream<THREADS>& stream, F&& f) {
#if __CUDA_ARCH__ >= 900
  constexpr int kWarps = THREADS / 32;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  StreamState& st = *stream.state;
  const auto bytes = static_cast<cuda::std::uint32_t>(4 * n);
  const int depth = staged_rows_per_warp<THREADS>(st, 4 * n);
  unsigned char* slot = stream.ring + warp * warp_slot_bytes<THREADS>(st);
  const int first_bar = warp * depth;
  const cuda::std::uint32_t phase = st.phase;
  cuda::std::uint32_t flips = 0; // barriers whose phase this call completed an odd number of times
  // This thread's reads of the ring by earlier streamed calls.
  release_ring_reads();
  __syncthreads(); // every thread read the phases and fenced before any warp refills a slot or flips a phase
  // Row k of this warp (row_begin + warp + k * kWarps) goes to buffer k % depth.
  const auto issue = [&](long long k) {
    const long long row = row_begin + warp + k * kWarps;
    const int b = static_cast<int>(k % depth);
    bulk_load(slot + b * 4 * n, x + row * n, bytes, &st.full[first_bar + b]);
    if (row + kWarps < row_end)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(x + (row + kWarps) * n), "r"(bytes) : "memory");
  };
  const long long rows = row_begin + warp < row_end ? (row_end - row_begin - warp + kWarps - 1) / kWarps : 0;
  if (lane == 0) {
    cuda::ptx::fence_proxy_async(cuda::ptx::space_global); // the inputs the leader acquired before the bulk reads
    for (long long k = 0; k < rows && k < depth; ++k)
      issue(k);
  }
  for (long long k = 0; k < rows; ++k) {
    const int b = static_cast<int>(k % depth);
    const cuda::std::uint32_t bit = 1u << (first_bar + b);
    wait_phase(&st.full[first_bar + b], ((phase ^ flips) & bit) ? 1u : 0u);
    flips ^= bit;
    f(row_begin + warp + k * kWarps, reinterpret_cast<const float*>(slot + b * 4 * n), [&] {
      release_ring_reads(); // every lane's reads of the buffer before the copy engine overwrites it
      __syncwarp();
      if (lane == 0 && k + depth < rows)
        issue(k + depth);
    });
  }
  if (lane == 0 && flips != 0)
    atomicXor(&st.phase, flips);
#else
  (void)x, (void)n, (void)row_begin, (void)row_end, (void)stream, (void)f;
#endif
}

} // namespace gridflow::kernels
