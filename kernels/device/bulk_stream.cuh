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
// fence.proxy.async.global orders that acquire before its bulk reads.
#pragma once

#include "kernels/device/access.cuh"

#include <cuda/ptx>

namespace gridflow::kernels {

// Ring shape per block size: 32 KB of stages (it shares a union with the bodies' other shared storage).
template <int THREADS> struct StreamShape {
  static constexpr int kGroupsPerThread = THREADS <= 256 ? 2 : 1; // 16-byte groups per thread per stage
  static constexpr int kStageGroups = THREADS * kGroupsPerThread;
  static constexpr int kStageBytes = kStageGroups * 16;
  static constexpr int kRingBytes = 32 * 1024;
  static constexpr int kStages = kRingBytes / kStageBytes;
  static_assert(kStages >= 2, "at least double buffering");
};

inline constexpr int kMaxStreamStages = 8;

// The ring's data: lives in a union with other storage, used only inside one streamed call.
template <int THREADS> struct StreamRing {
  alignas(128) unsigned char data[StreamShape<THREADS>::kRingBytes];
};

// Barriers and their phases: outside any union, initialised once per kernel launch (init_stream_state), then
// carried from call to call.
struct StreamState {
  alignas(8) cuda::std::uint64_t full[kMaxStreamStages];
  cuda::std::uint32_t phase; // bit s: the parity the next wait on stage s expects
};

// Once per block at kernel start, before any streamed call; followed by a block barrier (done here).
__device__ inline void init_stream_state(StreamState& s) {
#if __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    for (int k = 0; k < kMaxStreamStages; ++k) cuda::ptx::mbarrier_init(&s.full[k], 1);
    s.phase = 0;
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
#endif
  __syncthreads();
}

// Where one body streams from: its ring (union member) and the block's barrier state.
template <int THREADS> struct BlockStream {
  StreamRing<THREADS>* ring;
  StreamState* state;
};

// Ranges shorter than this many stages are not worth the barrier round trips: they use register loads.
inline constexpr int kStreamMinStages = 2;

// Like for_each_owned (same ownership and order), reading the 16-byte groups through the ring when `stream` is
// given, the Load is vectorizable, the GPU has the copy engine, and the range spans kStreamMinStages stages.
// Every thread of the block must call it (uniform); it contains block barriers, and the ring must not be in use
// by anything else during the call. Consecutive calls need a block barrier between them (bodies have them).
template <int THREADS, class T, class Load, class F>
__device__ __forceinline__ void for_each_owned_streamed(const T* x, long long n, Load load, const BlockStream<THREADS>* stream,
                                                        F&& f) {
  static_assert(sizeof(T) == 4, "4-byte elements");
  using Shape = StreamShape<THREADS>;
#if __CUDA_ARCH__ >= 900
  if constexpr (Load::kVectorizable) {
    const auto addr = reinterpret_cast<std::uintptr_t>(x);
    long long head = static_cast<long long>(((16u - (addr & 15u)) & 15u) / sizeof(T));
    if (head > n) head = n;
    const long long groups = (n - head) / 4;
    const long long stages = (groups + Shape::kStageGroups - 1) / Shape::kStageGroups;
    if (stream != nullptr && stages >= kStreamMinStages) {
      const int tid = static_cast<int>(threadIdx.x);
      for (long long i = tid; i < head; i += THREADS) f(i, load(x + i));
      const T* body = x + head; // 16-byte aligned
      unsigned char* ring = stream->ring->data;
      StreamState& st = *stream->state;
      cuda::std::uint32_t phase = st.phase;
      __syncthreads(); // every thread has read the phases before the leader may write them back below
      auto issue = [&](long long c) {
        const int slot = static_cast<int>(c % Shape::kStages);
        const long long g0 = c * Shape::kStageGroups;
        const long long count = groups - g0 < Shape::kStageGroups ? groups - g0 : Shape::kStageGroups;
        const auto bytes = static_cast<cuda::std::uint32_t>(count * 16);
        cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta, cuda::ptx::space_shared,
                                             &st.full[slot], bytes);
        cuda::ptx::cp_async_bulk(cuda::ptx::space_cluster, cuda::ptx::space_global, ring + slot * Shape::kStageBytes,
                                 body + 4 * g0, bytes, &st.full[slot]);
      };
      if (tid == 0) {
        cuda::ptx::fence_proxy_async(cuda::ptx::space_global);
        for (long long c = 0; c < stages && c < Shape::kStages; ++c) issue(c);
      }
      for (long long c = 0; c < stages; ++c) {
        const int slot = static_cast<int>(c % Shape::kStages);
        while (!cuda::ptx::mbarrier_try_wait_parity(&st.full[slot], (phase >> slot) & 1u)) {
        }
        phase ^= 1u << slot;
        const long long g0 = c * Shape::kStageGroups;
        const auto* v = reinterpret_cast<const typename Vec4<T>::type*>(ring + slot * Shape::kStageBytes);
#pragma unroll
        for (int j = 0; j < Shape::kGroupsPerThread; ++j) {
          const long long local = tid + static_cast<long long>(j) * THREADS;
          if (g0 + local < groups) {
            const auto r = v[local];
            const long long base = head + 4 * (g0 + local);
            f(base, r.x), f(base + 1, r.y), f(base + 2, r.z), f(base + 3, r.w);
          }
        }
        __syncthreads(); // the stage is consumed: it may be refilled
        if (tid == 0 && c + Shape::kStages < stages) issue(c + Shape::kStages);
      }
      if (tid == 0) st.phase = phase;
      for (long long j = head + 4 * groups + tid; j < n; j += THREADS) f(j, load(x + j));
      return;
    }
  }
#endif
  (void)stream;
  for_each_owned<THREADS>(x, n, load, static_cast<F&&>(f));
}

} // namespace gridflow::kernels
