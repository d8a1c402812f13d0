// Tile-level pieces of the counting ops (contracts in kernels/counting.hpp): a block histogram in shared memory
// (16-byte loads, shared atomics into a few copies of the row, a warp of one key adding at once), and the stable
// per-segment counts and placement scatter builds on, with warp-aggregated updates (the seeds' __match_any_sync /
// __popc pattern: one update per distinct key in a warp).
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

// Copies of the count row block_count keeps in its storage: warps w and w + copies share one, so fewer updates meet on
// one shared address (four rows of up to kScatterMaxBins fit CountingStorage).
__device__ __forceinline__ int count_copies(int bins) {
  return bins <= kScatterMaxBins ? kScatterSegments : 1;
}

// Every thread of the block: counts the keys of x[0, n) in [0, bins) (others are ignored) into s[0, bins), with s
// holding count_copies(bins) rows of bins (shared; zeroed here). Ends with a block barrier after which s[0, bins) holds
// the totals. 16-byte groups of four keys, each added with a shared atomic into the warp's copy of the row; a warp
// whose 128 keys of one step are all one key adds them at once (a hot bin would serialize 32 updates of one address),
// and the elements before the first 16-byte boundary and after the last whole group one by one. Integer adds: the
// result is independent of their order.
template <int THREADS> __device__ void block_count(const std::int32_t* x, long long n, int bins, int* s) {
  const int copies = count_copies(bins);
  for (int i = threadIdx.x; i < copies * bins; i += THREADS)
    s[i] = 0;
  __syncthreads();
  int* row = s + static_cast<int>(threadIdx.x / 32) % copies * bins;
  const auto in_range = [bins](std::int32_t key) { return static_cast<unsigned>(key) < static_cast<unsigned>(bins); };
  const long long misaligned = static_cast<long long>((16 - (reinterpret_cast<std::uintptr_t>(x) & 15)) & 15) / 4;
  const long long head = misaligned < n ? misaligned : n;
  const long long groups = (n - head) / 4;
  const long long tail = head + 4 * groups;
  for (long long i = threadIdx.x; i < head; i += THREADS)
    if (in_range(x[i]))
      atomicAdd(&row[x[i]], 1);
  for (long long i = tail + threadIdx.x; i < n; i += THREADS)
    if (in_range(x[i]))
      atomicAdd(&row[x[i]], 1);
  const int4* v = reinterpret_cast<const int4*>(x + head);
  const long long rounded = (groups + 31) / 32 * 32; // whole warps take part in every vote
  constexpr int kAhead = 4;                          // groups each thread loads before it counts them
  for (long long base = threadIdx.x; base < rounded; base += kAhead * THREADS) {
    int4 q[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const long long g = base + static_cast<long long>(u) * THREADS;
      q[u] = g < groups ? v[g] : make_int4(-1, -1, -1, -1);
    }
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      if (base + static_cast<long long>(u) * THREADS >= rounded)
        break; // uniform across the warp: rounded and THREADS are multiples of 32
      const std::int32_t first = __shfl_sync(0xffffffffu, q[u].x, 0);
      if (__all_sync(0xffffffffu, q[u].x == first && q[u].y == first && q[u].z == first && q[u].w == first)) {
        if ((threadIdx.x & 31) == 0 && in_range(first))
          atomicAdd(&row[first], 128);
      } else {
        for (const std::int32_t key : {q[u].x, q[u].y, q[u].z, q[u].w})
          if (in_range(key))
            atomicAdd(&row[key], 1);
      }
    }
  }
  __syncthreads();
  if (copies == 1)
    return;
  for (int b = threadIdx.x; b < bins; b += THREADS) {
    int total = s[b];
    for (int c = 1; c < copies; ++c)
      total += s[c * bins + b];
    s[b] = total;
  }
  __syncthreads();
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
