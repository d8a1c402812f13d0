// Numerically stable row softmax / log-softmax. Rows are held in registers wherever they fit, for one read and one
// write per element:
//   * short rows (cols <= kShortRowMaxCols): a warp or a group of warps per row (the seeds' warp-per-row softmax,
//     fused, spread over more warps when a tile has fewer rows than the block has warps);
//   * medium rows (up to register_row_max_cols<THREADS>()): the whole block per row, several rows per pass.
// Longer rows: the whole block per row, an online pass (running max and rescaled sum per thread, merged by a block
// reduce) then a write pass that reads the row again.
#pragma once

#include "kernels/device/access.cuh"
#include "kernels/device/bulk_stream.cuh"
#include "kernels/device/functors.cuh"
#include "kernels/tile_shapes.hpp"

#include <cub/block/block_reduce.cuh>
#include <cuda/std/type_traits>

namespace gridflow::kernels {

inline constexpr int kRegisterQuads = 8; // float4 quads per thread of the block paths that hold rows in registers

// Longest row the whole block holds in registers (kRegisterQuads quads per thread); 0: that path is not compiled
// (1024-thread blocks have 64 registers per thread, too few for 32 values and their addresses).
template <int THREADS> constexpr long long register_row_max_cols() {
  return THREADS <= 512 ? 4LL * kRegisterQuads * THREADS : 0;
}

// Quads per thread per row of block_softmax_rows_in_registers for rows of n columns (kShortRowMaxCols < n <=
// register_row_max_cols): Q, the smallest power of two with 4 * Q * THREADS >= n.
template <int THREADS> constexpr int register_row_quads(long long n) {
  int q = 1;
  while (4LL * q * THREADS < n)
    q *= 2;
  return q;
}

// Rows per pass of block_softmax_rows_in_registers for rows of n columns.
template <int THREADS> constexpr int register_rows_per_pass(long long n) {
  return kRegisterQuads / register_row_quads<THREADS>(n);
}

// e^x as every softmax body computes it: 2^(x log2 e) on the SFU with denormal results flushed to zero
// (ex2.approx.ftz: one multiply and one MUFU; __expf without -ftz adds three instructions to rescale denormal results,
// which a softmax rounds away next to a row sum >= 1). e^-inf = 0 and NaN stays NaN, as with __expf.
__device__ __forceinline__ float fast_exp(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
  return y;
}

// Online softmax state: the running max and the sum of exp(x - max).
struct MaxSum {
  float m;
  float s;
};

struct MergeMaxSum {
  __device__ __forceinline__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY)
      return {m, 0.0f};
    return {m, a.s * fast_exp(a.m - m) + b.s * fast_exp(b.m - m)};
  }
};

template <int THREADS> struct SoftmaxStorage {
  typename cub::BlockReduce<MaxSum, THREADS>::TempStorage reduce;
  MaxSum row; // the merged state, broadcast to the block
  // Rows held in registers (group and block paths): each warp's max and sum of exp(x - max) per row of a pass,
  // merged by every warp of the row. Two sets, alternating by pass, so one barrier per pass suffices: a warp
  // writes set p + 2 only after the barrier of pass p + 1, which every reader of set p has passed.
  float part_max[2][kRegisterQuads][THREADS / 32];
  float part_sum[2][kRegisterQuads][THREADS / 32];
};

// What a row's outputs need: its max, and log(sum) (log-softmax) or 1/sum (softmax); the other one is left 0.
struct RowNorm {
  float m;
  float log_s;
  float inv_s;
  __device__ __forceinline__ static RowNorm of(MaxSum r, bool log) {
    return log ? RowNorm{r.m, logf(r.s), 0.0f} : RowNorm{r.m, 0.0f, __frcp_rn(r.s)};
  }
};

// A warp's share of one row: its max `m` over the values it holds (-inf when it holds none), and the sum of
// exp(v - m) over them, which replaces each of `v` that softmax will store (log-softmax keeps v).
template <int N> __device__ __forceinline__ MaxSum warp_row_state(float (&v)[N], const bool (&valid)[N], bool log) {
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < N; ++j)
    m = valid[j] ? fmaxf(m, v[j]) : m;
  m = warp_allreduce(m, Max{});
  const float base = m == -INFINITY ? 0.0f : m; // all -inf: exp(-inf) = 0, not exp(NaN)
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const float e = valid[j] ? fast_exp(v[j] - base) : 0.0f; // adding +0 leaves the sum's bits unchanged
    sum += e;
    if (!log)
      v[j] = e; // softmax stores e * exp(m - row max) / sum: keep e instead of recomputing it
  }
  return {m, warp_allreduce(sum, Sum{})};
}

// The row's state from the states of warps [first, first + count), count <= 32, and (softmax) what this warp's kept
// values are multiplied by: exp(own.m - row max) / row sum. The calling warp folds them across its lanes, lane w
// taking warp first + w's state and the others the identity, with two butterflies (every lane ends with the same
// bits: each step adds or takes the max of the same two values). IEEE semantics as the references have them: a warp
// whose max is -inf adds its sum times exp(-inf) = 0 (0, or NaN when it held a NaN); a row whose max is -inf has
// exp(-inf - -inf) = NaN for its sum and scale, so its outputs are NaN like the references'. Every lane of the warp
// calls it.
struct RowScale {
  RowNorm norm;
  float scale;
};
__device__ __forceinline__ RowScale merge_warp_states(const float* part_max, const float* part_sum, int first,
                                                      int count, MaxSum own, bool log) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const bool held = lane < count;
  const float pm = held ? part_max[first + lane] : -INFINITY;
  const float m = warp_allreduce(pm, Max{});
  const float term = held ? part_sum[first + lane] * fast_exp(pm - m) : 0.0f;
  const RowNorm norm = RowNorm::of({m, warp_allreduce(term, Sum{})}, log);
  return {norm, log ? 0.0f : fast_exp(own.m - m) * norm.inv_s};
}

template <class Store>
__device__ __forceinline__ void store_softmax(Store store, float* y, float x, RowNorm r, bool log) {
  store(y, log ? (x - r.m) - r.log_s : fast_exp(x - r.m) * r.inv_s);
}

// Short rows (n <= kShortRowMaxCols) are held in registers, one read and one write per element, a warp or a group
// of warps per row (kernels/tile_shapes.hpp: short_row_group_warps says which).

// One row (n <= kShortRowMaxCols) held by one warp: lane l owns elements l + 32k, k < 32, scalar accesses (the seeds'
// warp-per-row softmax). Kept apart from the group path below: a quad layout of 32 values per lane makes ptxas spill
// them through local memory inside the megakernel's op dispatch (measured 11% slower: docs/results/HISTORY.md).
// warp_row_values reads the lane's values (get(i) for element i, -inf past n); warp_softmax_values stores the row's
// softmax from them.
template <class Get> __device__ __forceinline__ void warp_row_values(float (&v)[kWarpRowValues], long long n, Get get) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int k = 0; k < kWarpRowValues; ++k) {
    const long long i = lane + 32LL * k;
    v[k] = i < n ? get(i) : -INFINITY;
  }
}
template <class Store>
__device__ __forceinline__ void warp_softmax_values(float (&v)[kWarpRowValues], float* y, long long n, bool log,
                                                    Store store) {
  const int lane = threadIdx.x & 31;
  const int left = static_cast<int>(n) - lane; // value k is element lane + 32k, held when 32k < left (n <= 1024)
  // Four independent chains each for the max (exact: any order gives the same bits) and the sum (a fixed order,
  // the same in every caller), so the fold is not one 32-long chain of dependent instructions.
  float mk[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
  for (int k = 0; k < kWarpRowValues; ++k)
    mk[k & 3] = fmaxf(mk[k & 3], v[k]);
  const float m = warp_allreduce(fmaxf(fmaxf(mk[0], mk[1]), fmaxf(mk[2], mk[3])), Max{});
  float sk[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int k = 0; k < kWarpRowValues; ++k)
    if (32 * k < left) {
      const float e = fast_exp(v[k] - m);
      sk[k & 3] += e;
      if (!log)
        v[k] = e; // softmax stores e / sum: kept instead of computed again
    }
  const RowNorm r = RowNorm::of({m, warp_allreduce((sk[0] + sk[1]) + (sk[2] + sk[3]), Sum{})}, log);
#pragma unroll
  for (int k = 0; k < kWarpRowValues; ++k)
    if (32 * k < left)
      store(y + lane + 32 * k, log ? (v[k] - r.m) - r.log_s : v[k] * r.inv_s);
}
template <class Load, class Store>
__device__ void warp_softmax_row(const float* x, float* y, long long n, bool log, Load load, Store store) {
  float v[kWarpRowValues];
  warp_row_values(v, n, [&](long long i) { return load(x + i); });
  warp_softmax_values(v, y, n, log, store);
}

// Rows [row_begin, row_end) of n <= 128 * 2^lg_g columns by groups of g = 2^lg_g warps, g > 1: thread r of a group
// (r in [0, 32g)) owns the quad of elements 4r .. 4r + 3. kVec: every row is exactly 128 g elements and both views
// are 16-byte aligned, so each quad is one 16-byte load and store; otherwise four predicated scalar accesses of the
// same elements (the choice is made once per call, so each body is straight-line). Each warp folds its own max and
// sum, and one block barrier per pass lets the warps of a group merge them. Every thread of the block calls it (the
// pass loop and its barriers are uniform).
template <bool kVec, int THREADS, class Load, class Store>
__device__ void group_softmax_rows(const float* x, float* y, long long row_begin, long long row_end, int n, bool log,
                                   Load load, Store store, int lg_g, SoftmaxStorage<THREADS>& s) {
  const int g = 1 << lg_g;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  const int slots = (THREADS / 32) >> lg_g;   // rows in flight
  const int slot = warp >> lg_g;              // this warp's row within a pass
  const int r = (warp & (g - 1)) * 32 + lane; // rank within the group
  int set = 0;
  for (long long first = row_begin; first < row_end; first += slots, set ^= 1) {
    const long long row = first + slot;
    const bool active = row < row_end; // uniform within a group
    const float* xt = x + row * n + 4 * r;
    float* yt = y + row * n + 4 * r;
    float v[4];
    bool valid[4];
#pragma unroll
    for (int j = 0; j < 4; ++j)
      valid[j] = active && (kVec || 4 * r + j < n);
    if (active && kVec) {
      const float4 f = *reinterpret_cast<const float4*>(xt);
      v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        v[j] = valid[j] ? load(xt + j) : -INFINITY;
    }
    const MaxSum own = warp_row_state(v, valid, log);
    if (lane == 0)
      s.part_max[set][0][warp] = own.m, s.part_sum[set][0][warp] = own.s;
    __syncthreads();
    if (!active)
      continue;
    const RowScale rs = merge_warp_states(s.part_max[set][0], s.part_sum[set][0], slot * g, g, own, log);
    const auto out = [&](float v_or_e) { return log ? (v_or_e - rs.norm.m) - rs.norm.log_s : v_or_e * rs.scale; };
    if constexpr (kVec) {
      *reinterpret_cast<float4*>(yt) = make_float4(out(v[0]), out(v[1]), out(v[2]), out(v[3]));
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (valid[j])
          store(yt + j, out(v[j]));
    }
  }
}

// Leader only: the pass of up to `rows_per_pass` rows from `first` (rows of n floats, n % 4 == 0, contiguous) into
// the ring's `slot`.
template <int THREADS>
__device__ __forceinline__ void issue_row_pass(const ChunkRing<THREADS>& ring, int slot, const float* x, long long n,
                                               long long first, long long row_end, int rows_per_pass) {
  const long long rows = row_end - first < rows_per_pass ? row_end - first : rows_per_pass;
  ring.issue(slot, x + first * n, static_cast<cuda::std::uint32_t>(rows * n * 4));
}

// Rows [row_begin, row_end) of kShortRowMaxCols < n <= 4 * Q * THREADS columns held in registers by the whole
// block, kRegisterQuads / Q rows per pass: thread t owns quads t, t + THREADS, ..., Q of each row (quad q: elements
// 4 (t + q THREADS) .. + 3). One read and one write per element, every load of a pass in flight at once, one block
// barrier per pass (each warp folds its share of each row; every thread merges the warps' states of its rows).
// kVec: n % 4 == 0 and both views 16-byte aligned, so each quad is one 16-byte access; otherwise the same elements
// one by one. kStaged (with kVec): each pass's rows are read from the ring instead, bulk-copied there while the
// block works on the pass before (`ring`: two slots or more of a pass's rows, begun; the leader issued the first
// passes); same ownership, so bit-identical to direct loads. Every thread of the block calls it.
template <int Q, bool kVec, bool kStaged, int THREADS, class Load, class Store>
__device__ void block_softmax_register_rows(const float* x, float* y, long long row_begin, long long row_end, int n,
                                            bool log, Load load, Store store, SoftmaxStorage<THREADS>& s,
                                            ChunkRing<THREADS>* ring = nullptr) {
  constexpr int R = kRegisterQuads / Q; // rows per pass
  constexpr int kWarps = THREADS / 32;
  static_assert(R >= 1 && R * Q == kRegisterQuads);
  static_assert(kVec || !kStaged);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) & 31;
  int set = 0, slot = 0;
  for (long long first = row_begin; first < row_end; first += R, set ^= 1) {
    float v[R][4 * Q];
    bool valid[R][4 * Q];
    const float* rows = x + first * n; // this pass's first row
    if constexpr (kStaged)
      rows = ring->template wait<float>(slot);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const bool active = first + r < row_end;
      const float* xr = rows + r * n;
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        const int i = 4 * (static_cast<int>(threadIdx.x) + q * THREADS);
#pragma unroll
        for (int j = 0; j < 4; ++j)
          valid[r][4 * q + j] = active && i + j < n;
        if (kVec && valid[r][4 * q]) {
          const float4 f = *reinterpret_cast<const float4*>(xr + i);
          v[r][4 * q] = f.x, v[r][4 * q + 1] = f.y, v[r][4 * q + 2] = f.z, v[r][4 * q + 3] = f.w;
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            v[r][4 * q + j] = valid[r][4 * q + j] ? load(xr + i + j) : -INFINITY;
        }
      }
    }
    MaxSum own[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      own[r] = warp_row_state(v[r], valid[r], log);
      if (lane == 0)
        s.part_max[set][r][warp] = own[r].m, s.part_sum[set][r][warp] = own[r].s;
    }
    if constexpr (kStaged)
      release_ring_reads();
    __syncthreads(); // also: every thread has read the pass's rows (the slot may be refilled)
    if constexpr (kStaged) {
      const long long next = first + static_cast<long long>(ring->slots) * R;
      if (threadIdx.x == 0 && next < row_end)
        issue_row_pass<THREADS>(*ring, slot, x, n, next, row_end, R);
      slot = ring->next_slot(slot);
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (first + r >= row_end)
        continue;
      const RowScale rs = merge_warp_states(s.part_max[set][r], s.part_sum[set][r], 0, kWarps, own[r], log);
      const auto out = [&](float v_or_e) { return log ? (v_or_e - rs.norm.m) - rs.norm.log_s : v_or_e * rs.scale; };
      float* yr = y + (first + r) * n;
#pragma unroll
      for (int q = 0; q < Q; ++q) {
        const int i = 4 * (static_cast<int>(threadIdx.x) + q * THREADS);
        const float* e = &v[r][4 * q];
        if (kVec && valid[r][4 * q]) {
          *reinterpret_cast<float4*>(yr + i) = make_float4(out(e[0]), out(e[1]), out(e[2]), out(e[3]));
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (valid[r][4 * q + j])
              store(yr + i + j, out(e[j]));
        }
      }
    }
  }
}

// Picks block_softmax_register_rows' Q for n (register_row_quads) and its access width.
// With `stream`, vector access and at least two passes, the passes are staged through the ring (kStaged).
template <int THREADS, class Load, class Store>
__device__ void block_softmax_rows_in_registers(const float* x, float* y, long long row_begin, long long row_end,
                                                long long n, bool log, Load load, Store store,
                                                SoftmaxStorage<THREADS>& s,
                                                const BlockStream<THREADS>* stream = nullptr) {
  const int cols = static_cast<int>(n);
  const bool vec = Load::kVectorizable && Store::kVectorizable && n % 4 == 0 &&
                   ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y)) & 15u) == 0;
  using cuda::std::integral_constant;
  const auto run = [&](auto q, auto v) {
    constexpr int kQ = decltype(q)::value, kRows = kRegisterQuads / kQ;
    if constexpr (decltype(v)::value) {
      ChunkRing<THREADS> ring{};
      if (stream != nullptr && row_end - row_begin > kRows &&
          ChunkRing<THREADS>::plan(*stream, static_cast<cuda::std::uint32_t>(kRows * n * 4), ring)) {
        release_ring_reads();
        __syncthreads(); // the ring's previous user is done with it and its phases
        ring.begin();
        if (threadIdx.x == 0) {
          cuda::ptx::fence_proxy_async(cuda::ptx::space_global); // the inputs the leader acquired before the bulk reads
          for (int k = 0; k < ring.slots && row_begin + static_cast<long long>(k) * kRows < row_end; ++k)
            issue_row_pass<THREADS>(ring, k, x, n, row_begin + static_cast<long long>(k) * kRows, row_end, kRows);
        }
        block_softmax_register_rows<kQ, true, true, THREADS>(x, y, row_begin, row_end, cols, log, load, store, s,
                                                             &ring);
        ring.finish();
        return;
      }
    }
    block_softmax_register_rows<kQ, decltype(v)::value, false, THREADS>(x, y, row_begin, row_end, cols, log, load,
                                                                        store, s);
  };
  const auto with_q = [&](auto q) {
    if constexpr (Load::kVectorizable && Store::kVectorizable)
      if (vec)
        return run(q, integral_constant<bool, true>{});
    run(q, integral_constant<bool, false>{});
  };
  // Only the Q that some row longer than kShortRowMaxCols needs are compiled.
  const int q = register_row_quads<THREADS>(n);
  if constexpr (4LL * THREADS > kShortRowMaxCols)
    if (q == 1)
      return with_q(integral_constant<int, 1>{});
  if constexpr (8LL * THREADS > kShortRowMaxCols)
    if (q == 2)
      return with_q(integral_constant<int, 2>{});
  if constexpr (16LL * THREADS > kShortRowMaxCols)
    if (q == 4)
      return with_q(integral_constant<int, 4>{});
  with_q(integral_constant<int, 8>{});
}

// Rows [row_begin, row_end) of n <= kShortRowMaxCols columns by the whole block (see short_row_group_warps). With
// `stream`, a warp with several rows reads each from the ring, staged by the copy engine while it works on the
// previous one (for_each_warp_row_staged); same ownership and order of the values, so the results are bit-identical
// to the direct loads'.
template <int THREADS, class Load, class Store>
__device__ void block_softmax_short_rows(const float* x, float* y, long long row_begin, long long row_end, long long n,
                                         bool log, Load load, Store store, SoftmaxStorage<THREADS>& s,
                                         const BlockStream<THREADS>* stream = nullptr) {
  const int g = short_row_group_warps(row_end - row_begin, n, THREADS / 32);
  if (g == 1) {
    if constexpr (Load::kVectorizable) {
      if (stream != nullptr && can_stage_warp_rows<THREADS>(x, n, row_begin, row_end, *stream)) {
        for_each_warp_row_staged<THREADS>(x, n, row_begin, row_end, *stream,
                                          [&](long long row, const float* slot, auto release) {
                                            float v[kWarpRowValues];
                                            warp_row_values(v, n, [&](long long i) { return slot[i]; });
                                            release();
                                            warp_softmax_values(v, y + row * n, n, log, store);
                                          });
        return;
      }
    }
    const long long warp = threadIdx.x / 32, warps = THREADS / 32;
    for (long long row = row_begin + warp; row < row_end; row += warps)
      warp_softmax_row(x + row * n, y + row * n, n, log, load, store);
    return;
  }
  const int lg_g = cuda::std::countr_zero(static_cast<unsigned>(g));
  const bool whole =
      n == 128LL * g && ((reinterpret_cast<std::uintptr_t>(x) | reinterpret_cast<std::uintptr_t>(y)) & 15u) == 0;
  const int cols = static_cast<int>(n);
  if constexpr (Load::kVectorizable && Store::kVectorizable)
    if (whole)
      return group_softmax_rows<true, THREADS>(x, y, row_begin, row_end, cols, log, load, store, lg_g, s);
  group_softmax_rows<false, THREADS>(x, y, row_begin, row_end, cols, log, load, store, lg_g, s);
}

// One row of any length by the whole block: an online pass (each thread's running max and rescaled sum, merged by a
// block reduce), then a write pass over the row again. With `stream`, both passes read through the bulk copy engine,
// and the write pass starts on the stages the first pass left in the ring, so a row that fits the ring is read from
// global memory once (for_each_owned_streamed_twice).
template <int THREADS, class Load, class Store>
__device__ void block_softmax_row(const float* x, float* y, long long n, bool log, Load load, Store store,
                                  SoftmaxStorage<THREADS>& s, const BlockStream<THREADS>* stream = nullptr) {
  MaxSum st{-INFINITY, 0.0f};
  RowNorm row{};
  for_each_owned_streamed_twice<THREADS>(
      x, n, load, stream,
      [&](long long, float v) {
        if (v > st.m) {
          st.s = st.s * fast_exp(st.m - v) + 1.0f;
          st.m = v;
        } else if (st.m != -INFINITY) { // (-inf) - (-inf) would be NaN: a -inf input adds nothing
          st.s += fast_exp(v - st.m);
        }
      },
      [&] {
        const MaxSum r = cub::BlockReduce<MaxSum, THREADS>(s.reduce).Reduce(st, MergeMaxSum{});
        if (threadIdx.x == 0)
          s.row = r;
        __syncthreads();
        row = RowNorm::of(s.row, log);
      },
      [&](long long i, float v) { store_softmax(store, y + i, v, row, log); });
  __syncthreads(); // s.row and the reduce storage are reused by the next row
}

} // namespace gridflow::kernels
