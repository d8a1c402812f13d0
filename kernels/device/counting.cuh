// Tile-level pieces of the counting ops (contracts in kernels/counting.hpp): a block histogram in shared memory
// with warp-aggregated updates (the seeds' __match_any_sync / __popc pattern: one shared atomic per distinct key
// in a warp, not one per element), and the stable per-segment placement scatter and select build on.
#pragma once

#include "kernels/counting.hpp"

#include <cuda/std/cstdint>

namespace gridflow::kernels {

// Shared memory of the counting ops: one count row per scatter segment (a histogram uses row 0 only).
struct CountingStorage {
  int counts[kScatterSegments * kScatterMaxBins];
};
static_assert(kScatterSegments * kScatterMaxBins >= kHistogramMaxBins, "a histogram row fits");

__device__ __forceinline__ unsigned lanemask_lt() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

// Adds the keys of x[0, n) in [0, bins) into counts[0, bins) (shared, already zeroed), the whole block reading
// coalesced 32-element chunks. Integer adds: the result is independent of their order.
template <int THREADS> __device__ void block_count(const std::int32_t* x, long long n, int bins, int* counts) {
  const long long rounded = (n + 31) / 32 * 32; // every lane of a warp takes part in each match
#pragma unroll 4
  for (long long i = threadIdx.x; i < rounded; i += THREADS) {
    const std::int32_t key = i < n ? x[i] : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    const bool leader = (peers & lanemask_lt()) == 0;
    if (leader && key >= 0 && key < bins)
      atomicAdd(&counts[key], __popc(peers));
  }
}

// Segment s of `segments` equal contiguous parts of [0, n).
__device__ __forceinline__ void segment_range(long long n, int s, int segments, long long& begin, long long& end) {
  const long long per = (n + segments - 1) / segments;
  begin = per * s < n ? per * s : n;
  end = begin + per < n ? begin + per : n;
}

// One warp counts its segment x[begin, end) into row[0, bins) (shared; only this warp writes the row, so no
// atomics: within a chunk each key's lowest lane adds the number of its peers).
__device__ __forceinline__ void warp_count_segment(const std::int32_t* x, long long begin, long long end, int bins,
                                                   int* row) {
  const int lane = threadIdx.x & 31;
  for (long long base = begin; base < end; base += 32) {
    const long long i = base + lane;
    const std::int32_t key = i < end ? x[i] : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    if ((peers & lanemask_lt()) == 0 && key >= 0 && key < bins)
      row[key] += __popc(peers);
    __syncwarp();
  }
}

// One warp places its segment in index order: the element at i with key k goes to next[k] + (its rank among
// the chunk's earlier lanes with key k), and next[k] advances by the chunk's count of k. `place(pos, i)` is
// called for every key in [0, bins).
template <class Place>
__device__ __forceinline__ void warp_place_segment(const std::int32_t* x, long long begin, long long end, int bins,
                                                   int* next, Place place) {
  const int lane = threadIdx.x & 31;
  for (long long base = begin; base < end; base += 32) {
    const long long i = base + lane;
    const std::int32_t key = i < end ? x[i] : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, key);
    const bool valid = key >= 0 && key < bins;
    if (valid)
      place(static_cast<long long>(next[key]) + __popc(peers & lanemask_lt()), i);
    __syncwarp();
    if (valid && (peers & lanemask_lt()) == 0)
      next[key] += __popc(peers);
    __syncwarp();
  }
}

} // namespace gridflow::kernels
