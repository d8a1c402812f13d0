// Numerically stable row softmax / log-softmax. Short rows (cols <= kShortRowMaxCols): a group of warps per row,
// the row held in registers, one read and one write per element (the seeds' warp-per-row softmax, fused, spread
// over more warps when a tile has fewer rows than the block has warps). Long rows:
// the whole block per row, an online pass (running max and rescaled sum per thread, merged by a block reduce)
// then a write pass.
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/device/bulk_stream.cuh"
#include "kernels/device/functors.cuh"

#include <cub/block/block_reduce.cuh>

namespace gridflow::kernels {

inline constexpr long long kShortRowMaxCols = 1024; // longest row held in registers (8 quads per lane of one warp)

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
  float part_max[THREADS / 32]; // short rows: each warp's partial max and sum, merged by the warps of its group
  float part_sum[THREADS / 32];
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

// Short rows (n <= kShortRowMaxCols), held in registers, Q float4 quads per thread. Two shapes:
//   * a warp per row, Q = 8 (Q = 1 when n <= 128): when the tile has a row for every warp (or rows are that short);
//   * a group of G warps per row, Q = 1, G the smallest power of two with 128 G >= n: when the tile has fewer rows
//     than the block has warps, so a one-row tile spreads its row over the block instead of leaving 7 of 8 warps
//     idle behind one warp's 32 serial values.
// Thread r of a group (r in [0, 32G)) owns quads r + 32G*k, k < Q: elements 4(r + 32Gk) + j. Each quad is one
// 16-byte load (store) when the Load (Store) is vectorizable, the row 16-byte aligned and every quad whole, else four
// scalar accesses of the same elements, so ownership and fold order depend only on (rows in the tile, n, THREADS):
// a polled (sentinel) run folds bit-identically to a plain one. One read and one write per element.
// Known cost (H200 run 17): inside the megakernel's op dispatch ptxas moves the Q = 8 body's 32 values through local
// memory, so many-row 1024-column tiles run at 2.30 TB/s against 2.59 for the previous scalar warp-per-row body;
// commit 86d6117 holds the unmeasured fix (docs/PERFORMANCE.md).
struct ShortRowShape {
  int group_warps; // G
  int quads;       // Q: 1 or 8; Q = 8 only with G = 1
};

__host__ __device__ constexpr ShortRowShape short_row_shape(long long rows, long long n, int warps) {
  const long long need = (n + 127) / 128; // warps that hold the row at one quad per thread
  if (rows < warps && need > 1 && need <= warps) {
    int g = 2;
    while (g < need) g *= 2;
    return {g, 1};
  }
  return {1, n <= 128 ? 1 : 8};
}
static_assert(short_row_shape(1, kShortRowMaxCols, 8).group_warps == 8 && short_row_shape(1, kShortRowMaxCols, 8).quads == 1);
static_assert(short_row_shape(8, kShortRowMaxCols, 8).group_warps == 1 && short_row_shape(8, kShortRowMaxCols, 8).quads == 8);
static_assert(short_row_shape(3, 129, 8).group_warps == 2 && short_row_shape(1, 1000, 4).quads == 8);

// Rows [row_begin, row_end) of n <= kShortRowMaxCols columns, groups of g warps (g = 1 when Q > 1: a thread's quads
// are then 32 quads apart, a constant offset from one row pointer). Every thread of the block calls it (the pass
// loop and its barriers are uniform).
template <int Q, int THREADS, class Load, class Store>
__device__ void short_rows_softmax(const float* x, float* y, long long row_begin, long long row_end, int n, bool log,
                                   Load load, Store store, int g, SoftmaxStorage<THREADS>& s) {
  constexpr int kWarps = THREADS / 32, stride = 32; // stride: quads between a thread's quads (Q > 1, g = 1)
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  const int slots = kWarps / g;               // rows in flight
  const int slot = warp / g;                  // this warp's row within a pass
  const int r = (warp % g) * 32 + lane;       // rank within the group
  for (long long first = row_begin; first < row_end; first += slots) {
    const long long row = first + slot;
    const bool active = row < row_end;        // uniform within a group
    const float* xr = x + row * n;
    float* yr = y + row * n;
    const float* xt = xr + 4 * r; // this thread's first quad
    float* yt = yr + 4 * r;
    float v[4 * Q];
    float m = -INFINITY;
    if (active) {
      // 16-byte loads when every quad of the row is whole and the row is aligned (uniform per row), else scalar.
      if (Load::kVectorizable && n >= 4 * 32 * g * Q && (reinterpret_cast<std::uintptr_t>(xr) & 15u) == 0) {
#pragma unroll
        for (int k = 0; k < Q; ++k) {
          const float4 f = *reinterpret_cast<const float4*>(xt + 4 * stride * k);
          v[4 * k] = f.x, v[4 * k + 1] = f.y, v[4 * k + 2] = f.z, v[4 * k + 3] = f.w;
        }
      } else {
#pragma unroll
        for (int k = 0; k < Q; ++k)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            v[4 * k + j] = 4 * (r + stride * k) + j < n ? load(xt + 4 * stride * k + j) : -INFINITY;
      }
#pragma unroll
      for (int k = 0; k < 4 * Q; ++k) m = fmaxf(m, v[k]);
    }
    m = warp_allreduce(m, Max{});
    if (g > 1) {
      if (lane == 0) s.part_max[warp] = m;
      __syncthreads();
      m = -INFINITY;
      for (int w = 0; w < g; ++w) m = fmaxf(m, s.part_max[slot * g + w]);
    }
    float sum = 0.0f;
    if (active) {
#pragma unroll
      for (int k = 0; k < Q; ++k)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (4 * (r + stride * k) + j < n) {
            const float e = __expf(v[4 * k + j] - m);
            sum += e;
            if (!log) v[4 * k + j] = e; // softmax stores e / sum: keep e instead of recomputing it
          }
    }
    sum = warp_allreduce(sum, Sum{});
    if (g > 1) {
      if (lane == 0) s.part_sum[warp] = sum;
      __syncthreads();
      sum = 0.0f;
      for (int w = 0; w < g; ++w) sum += s.part_sum[slot * g + w];
    }
    if (active) {
      const RowNorm norm = RowNorm::of({m, sum});
      const auto out = [&](float v_or_e) { return log ? (v_or_e - norm.m) - norm.log_s : v_or_e * norm.inv_s; };
      if (Store::kVectorizable && n >= 4 * 32 * g * Q && (reinterpret_cast<std::uintptr_t>(yr) & 15u) == 0) {
#pragma unroll
        for (int k = 0; k < Q; ++k)
          *reinterpret_cast<float4*>(yt + 4 * stride * k) =
              make_float4(out(v[4 * k]), out(v[4 * k + 1]), out(v[4 * k + 2]), out(v[4 * k + 3]));
      } else {
#pragma unroll
        for (int k = 0; k < Q; ++k)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (4 * (r + stride * k) + j < n) store(yt + 4 * stride * k + j, out(v[4 * k + j]));
      }
    }
  }
}

// Rows [row_begin, row_end) of n <= kShortRowMaxCols columns by the whole block (see short_row_shape).
template <int THREADS, class Load, class Store>
__device__ void block_softmax_short_rows(const float* x, float* y, long long row_begin, long long row_end, long long n,
                                         bool log, Load load, Store store, SoftmaxStorage<THREADS>& s) {
  static_assert(kShortRowMaxCols == 32 * 4 * 8); // a warp's 8 quads per lane hold the longest row
  const ShortRowShape shape = short_row_shape(row_end - row_begin, n, THREADS / 32);
  const int cols = static_cast<int>(n);
  if (shape.quads == 1)
    short_rows_softmax<1, THREADS>(x, y, row_begin, row_end, cols, log, load, store, shape.group_warps, s);
  else
    short_rows_softmax<8, THREADS>(x, y, row_begin, row_end, cols, log, load, store, 1, s);
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
