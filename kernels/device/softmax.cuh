// Numerically stable row softmax / log-softmax. Short rows (cols <= 32 * kWarpRowValues): one warp per row, the
// row held in registers, one read and one write per element (the seeds' warp-per-row softmax, fused). Long rows:
// the whole block per row, an online pass (running max and rescaled sum per thread, merged by a block reduce)
// then a write pass.
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/device/bulk_stream.cuh"
#include "kernels/device/functors.cuh"

#include <cub/block/block_reduce.cuh>

namespace gridflow::kernels {

inline constexpr int kWarpRowValues = 32; // values per lane held in registers by the warp-per-row path
inline constexpr long long kWarpRowMaxCols = 32LL * kWarpRowValues;

// Online softmax state: the running max and the sum of exp(x - max).
struct MaxSum {
  float m;
  float s;
};

struct MergeMaxSum {
  __device__ __forceinline__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.0f};
    return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
  }
};

template <int THREADS> struct SoftmaxStorage {
  union {
    typename cub::BlockReduce<MaxSum, THREADS>::TempStorage reduce;
    StreamRing<THREADS> ring; // the two passes' streamed loads (never live together with the block reduce)
  };
  MaxSum row; // the merged state, broadcast to the block
};

// What a row's outputs need: its max, and log(sum) or 1/sum.
struct RowNorm {
  float m;
  float log_s;
  float inv_s;
  __device__ __forceinline__ static RowNorm of(MaxSum r) { return {r.m, logf(r.s), __frcp_rn(r.s)}; }
};

template <class Store> __device__ __forceinline__ void store_softmax(Store store, float* y, float x, RowNorm r, bool log) {
  store(y, log ? (x - r.m) - r.log_s : __expf(x - r.m) * r.inv_s);
}

// One row (n <= kWarpRowMaxCols) by one warp.
template <class Load, class Store>
__device__ void warp_softmax_row(const float* x, float* y, long long n, bool log, Load load, Store store) {
  const int lane = threadIdx.x & 31;
  float v[kWarpRowValues];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < kWarpRowValues; ++k) {
    const long long i = lane + 32LL * k;
    v[k] = i < n ? load(x + i) : -INFINITY;
    m = fmaxf(m, v[k]);
  }
  m = warp_allreduce(m, Max{});
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kWarpRowValues; ++k)
    if (lane + 32LL * k < n) s += __expf(v[k] - m);
  s = warp_allreduce(s, Sum{});
  const RowNorm r = RowNorm::of({m, s});
#pragma unroll
  for (int k = 0; k < kWarpRowValues; ++k) {
    const long long i = lane + 32LL * k;
    if (i < n) store_softmax(store, y + i, v[k], r, log);
  }
}

// One row of any length by the whole block.
// With `stream` (its ring must be s.ring), both passes read long rows through the bulk copy engine.
template <int THREADS, class Load, class Store>
__device__ void block_softmax_row(const float* x, float* y, long long n, bool log, Load load, Store store,
                                  SoftmaxStorage<THREADS>& s, const BlockStream<THREADS>* stream = nullptr) {
  MaxSum st{-INFINITY, 0.0f};
  for_each_owned_streamed<THREADS>(x, n, load, stream, [&](long long, float v) {
    if (v > st.m) {
      st.s = st.s * __expf(st.m - v) + 1.0f;
      st.m = v;
    } else if (st.m != -INFINITY) { // (-inf) - (-inf) would be NaN: a -inf input adds nothing
      st.s += __expf(v - st.m);
    }
  });
  const MaxSum r = cub::BlockReduce<MaxSum, THREADS>(s.reduce).Reduce(st, MergeMaxSum{});
  if (threadIdx.x == 0) s.row = r;
  __syncthreads();
  const RowNorm row = RowNorm::of(s.row);
  // The write pass re-reads the row with the same vector loads (several in flight) as the first pass.
  for_each_owned_streamed<THREADS>(x, n, load, stream, [&](long long i, float v) { store_softmax(store, y + i, v, row, log); });
  __syncthreads(); // s.row and the reduce storage are reused by the next row
}

} // namespace gridflow::kernels
