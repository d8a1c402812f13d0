// The counting ops' shared definitions (host and device): size limits and the select predicate.
//
// histogram: counts[b] = number of i32 keys equal to b, for b in [0, bins); keys outside [0, bins) are not
//            counted. Every bin is written (0 for an empty one).
// scatter:   a stable counting-sort placement: for each i32 key k = keys[i] in [0, bins), in index order,
//            out[offsets[k] + (number of earlier i with keys[i] == k)] = i. Keys outside [0, bins) and positions
//            outside the output view are skipped. Elements of `out` no key lands on keep their contents. Offsets
//            from an exclusive scan of the same keys' histogram make placements distinct; where other offsets make
//            two placements collide, which index the slot ends up holding is unspecified.
// select:    stream compaction: the elements x with `x CMP threshold`, in order, go to out[0, count); `count`
//            (one i32) is written; out[count, n) keeps its contents.
#pragma once

#include "kernels/host_device.hpp"
#include "kernels/op_types.hpp"

#include <cstdint>

namespace gridflow::kernels {

inline constexpr std::int64_t kHistogramMaxBins = 4096; // a tile counts into shared memory: bins x 4 bytes
inline constexpr std::int64_t kScatterMaxBins = 1024;   // a tile keeps one count row per segment: segments x bins
inline constexpr int kScatterSegments = 4;              // contiguous segments of a scatter tile (one per warp)
inline constexpr std::int64_t kCountingMinTile = 4096;  // smallest histogram / scatter tile, in elements

template <class T> GRIDFLOW_HOST_DEVICE bool select_keep(CmpFn cmp, T x, T threshold) {
  switch (cmp) {
  case CmpFn::gt:
    return x > threshold;
  case CmpFn::ge:
    return x >= threshold;
  case CmpFn::lt:
    return x < threshold;
  case CmpFn::le:
    return x <= threshold;
  case CmpFn::eq:
    return x == threshold;
  case CmpFn::ne:
    return x != threshold;
  }
  return false;
}

} // namespace gridflow::kernels
