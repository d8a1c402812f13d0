// One lean row tile (runtime/tiles.hpp: lean_rows) with the lean bodies (kernels/device/lean_rows.cuh): the GPU
// dispatch both megakernels share for such tiles, so a tile's bits never depend on which kernel ran it. Each body is
// instantiated per opcode, element type and access policies only where it is called: the general megakernel calls
// the one of its own op (lean_rows_as), the lean megakernel dispatches to all of them (lean_tile).
#pragma once

#include "kernels/device/lean_rows.cuh"
#include "runtime/gpu/device_access.cuh"
#include "runtime/program.hpp"

namespace gridflow::gpu {

// A lean partial tile's part of its task's state in the arena (runtime/tiles.hpp: lean_partials): the task's
// partials (one per tile), its arrival counter, the count that makes an arrival the last (tiles x the run's epoch),
// the tile's index in its task and the task's number of tiles.
struct LeanPartials {
  program::Partial* parts = nullptr;
  std::uint64_t* counter = nullptr;
  std::uint64_t last = 0;
  std::uint32_t index = 0;
  std::uint32_t tiles = 0;
};

// Tile `index` of task `t`'s partials in the arena at `state`, in run `epoch`.
__device__ __forceinline__ LeanPartials lean_partials_of(unsigned char* state, const program::TaskDesc& t,
                                                         std::uint32_t index, std::uint32_t epoch) {
  return {reinterpret_cast<program::Partial*>(state + t.scratch), reinterpret_cast<std::uint64_t*>(state + t.counter),
          std::uint64_t{t.num_tiles} * epoch, index, t.num_tiles};
}

// A lean look-back tile's part of its task's state (runtime/tiles.hpp: lean_scans): the task's look-back words, the
// tile's index in its task, the task's number of tiles, the run's epoch, and where a failed wait is recorded.
struct LeanLookback {
  std::uint64_t* words = nullptr;
  std::uint32_t index = 0;
  std::uint32_t tiles = 0;
  std::uint32_t epoch = 0;
  const TileSite* site = nullptr;
};

// Tile `index` of task `t`'s look-back in the arena at `state`, in run `epoch`, its failed waits recorded at `site`.
__device__ __forceinline__ LeanLookback lean_lookback_of(unsigned char* state, const program::TaskDesc& t,
                                                         std::uint32_t index, std::uint32_t epoch,
                                                         const TileSite* site) {
  return {reinterpret_cast<std::uint64_t*>(state + t.scratch), index, t.num_tiles, epoch, site};
}

// What one lean tile is: the task's opcode, fn, dtype and flags, its rows (rows of cols columns from `in`; output
// rows of out_stride elements from `out`), for a lean partial tile (reduce_all: one row, `out` the task's value) its
// partials, and for a lean look-back tile (scan_all: one row, `out` where its scan goes) its look-back.
struct LeanTile {
  std::uint32_t opcode;
  std::uint32_t fn;
  std::uint32_t dtype;
  std::uint32_t flags;
  const void* in;
  void* out;
  int rows;
  int cols;
  int out_stride;
  LeanPartials partials{};
  LeanLookback lookback{};
};

// Every thread of the last arriving tile's block: task `p`'s partials (relaxed loads: the arrivals' release sequence
// ordered them before the arrival's acquire, a block barrier after it) as one lean row, folded with the row's
// reduction (fn: sum, max or min) through s.word[half]; every thread returns the total's bits, and the caller's next
// reduction uses the other half. Out of line: it runs once per task, and one copy per block size and element type
// serves every access policy's tile body instead of one inlined into each.
template <int THREADS, class T>
__device__ __noinline__ std::uint32_t lean_fold_partials(const LeanPartials p, const ReduceFn fn,
                                                         kernels::LeanStorage<THREADS>& s, int half) {
  kernels::LeanRow x;
#pragma unroll
  for (int v = 0; v < kernels::kLeanVecs; ++v)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const int c = kernels::lean_col<THREADS>(v, k);
      x.w[v][k] = c < static_cast<int>(p.tiles)
                      ? static_cast<std::uint32_t>(
                            protocol::atomic_ref<std::uint64_t>(p.parts[c].value).load(cuda::std::memory_order_relaxed))
                      : 0u;
    }
  return kernels::lean_reduce_value<THREADS, T>(x, static_cast<int>(p.tiles), fn, s, half);
}

// Every thread, each holding the tile's value `bits`: the end of a lean partial tile. A task of one tile stores the
// value; else the leader stores the tile's partial and arrives at the task's counter (acq_rel), a block barrier
// tells every thread whether it was the last, and the last arriver's block folds every partial
// (lean_fold_partials): the same pairwise order whichever tile arrives last, so the same bits in every run.
template <int THREADS, class T, class Store>
__device__ __forceinline__ void lean_partial(const LeanTile& t, std::uint32_t bits, std::uint32_t* out, Store store,
                                             kernels::LeanStorage<THREADS>& s, int& half) {
  const LeanPartials& p = t.partials;
  if (p.tiles <= 1) {
    if (threadIdx.x == 0)
      store(out, bits);
    return;
  }
  // s.word[half]: the reduction before the last one used it, and every thread's reads of it precede that last
  // reduction's barrier.
  if (threadIdx.x == 0) {
    p.parts[p.index] = program::Partial{std::uint64_t{bits}, 0};
    s.word[half][0] = protocol::arrive_is_last(p.counter, p.last) ? 1u : 0u;
  }
  __syncthreads();
  const bool last = s.word[half][0] != 0;
  half ^= 1;
  if (!last)
    return;
  const std::uint32_t total = lean_fold_partials<THREADS, T>(p, static_cast<ReduceFn>(t.fn), s, half);
  half ^= 1;
  if (threadIdx.x == 0)
    store(out, total);
}

// Every thread of a lean look-back tile's block: the fold under Op of every earlier tile's aggregate (the identity for
// tile 0), from warp 0's deterministic look-back (LookbackPrefix) with this tile's aggregate `total`, through
// s.word[half][0]; the caller's next reduction uses the other half. A failed wait sets the site's abort flag (the
// tile's closing barrier publishes it). Out of line, one copy per block size, element type and operator, as
// lean_fold_partials.
template <int THREADS, class T, class Op>
__device__ __noinline__ T lean_lookback_prefix(const LeanLookback b, const T total, kernels::LeanStorage<THREADS>& s,
                                               int half) {
  if (threadIdx.x < 32) {
    LookbackPrefix<T, Op> lookback{b.site, b.words, b.tiles, b.index, b.epoch, Op{}};
    const T prefix = lookback(total);
    if (threadIdx.x == 0)
      s.word[half][0] = to_bits(prefix);
  }
  __syncthreads();
  return from_bits<T>(s.word[half][0]);
}

// The row as a sentinel-mode store leaves it in memory: the sentinel's bit pattern becomes the canonical NaN.
__device__ __forceinline__ void canonicalize(kernels::LeanRow& r) {
#pragma unroll
  for (int v = 0; v < kernels::kLeanVecs; ++v)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (r.w[v][k] == program::kSentinelBits)
        r.w[v][k] = program::kCanonicalNanBits;
}

// Every thread. Runs lean tile `t` of opcode OP (element type T, scans by ScanOp) under one pair of access policies.
// `forward` (may be null): on entry, when t.flags has kForwardInput, row 0's input as the block's previous tile left
// it; on return, the tile's last output row as memory holds it (ops that write whole rows). `half`: the half of `s`
// the next block reduction uses (kernels/device/lean_rows.cuh), kept by the caller across tiles. Every row's stores
// follow a block barrier after its loads; the tile ends without one (the caller adds it where needed). PLAIN: the
// tile is one full row of 16-byte groups (program::kPlainTile), so nothing about its shape is tested.
template <int THREADS, bool PLAIN, program::Opcode OP, class T, class ScanOp, class Load, class Store>
__device__ __forceinline__ void lean_rows_as(const LeanTile& t, Load load, Store store,
                                             kernels::LeanStorage<THREADS>& s, int& half, kernels::LeanRow* forward) {
  constexpr bool kWholeRowOut = OP != program::Opcode::reduce_rows && OP != program::Opcode::reduce_all;
  // One row of n columns from src to dst; `first`: the tile's row 0 (the forwarded one, where the flag says so).
  // Called with n a constant and `vector` true for full rows of 16-byte groups (every input row, and every output row
  // of an op that writes whole rows, aligned), so the bodies' column and alignment tests fold away.
  auto row_of = [&](const T* src, T* dst, const int n, const bool vector, const bool first) {
    kernels::LeanRow x;
    if (first && forward != nullptr && (t.flags & program::kForwardInput))
      x = *forward;
    else
      kernels::lean_load<THREADS, T>(x, src, n, T(0), load, vector);
    if constexpr (OP == program::Opcode::reduce_all) { // never argmax (runtime/tiles.hpp: lean_partials)
      const std::uint32_t bits = kernels::lean_reduce_value<THREADS, T>(x, n, static_cast<ReduceFn>(t.fn), s, half);
      lean_partial<THREADS, T>(t, bits, reinterpret_cast<std::uint32_t*>(dst), store, s, half);
    } else if constexpr (!kWholeRowOut) {
      const std::uint32_t bits = kernels::lean_reduce<THREADS, T>(x, n, static_cast<ReduceFn>(t.fn), s, half);
      if (threadIdx.x == 0)
        store(reinterpret_cast<std::uint32_t*>(dst), bits);
    } else {
      kernels::LeanRow y;
      if constexpr (OP == program::Opcode::softmax_rows) {
        y = kernels::lean_softmax<THREADS>(x, n, t.flags & program::kLogSoftmax, s, half);
      } else if constexpr (OP == program::Opcode::scan_all) {
        // The row's scan, then every element folded after the prefix of the tiles before it.
        T total;
        y = kernels::lean_scan<THREADS, T>(x, n, t.flags & program::kExclusive, ScanOp{}, s, half, total);
        const T prefix = lean_lookback_prefix<THREADS, T, ScanOp>(t.lookback, total, s, half);
        half ^= 1;
#pragma unroll
        for (int v = 0; v < kernels::kLeanVecs; ++v)
#pragma unroll
          for (int k = 0; k < 4; ++k)
            kernels::lean_set(y, v, k, ScanOp{}(prefix, kernels::lean_get<T>(y, v, k)));
      } else {
        y = kernels::lean_scan<THREADS, T>(x, n, t.flags & program::kExclusive, ScanOp{}, s, half);
      }
      kernels::lean_store<THREADS, T>(y, dst, n, store, vector);
      if (forward != nullptr) {
        if constexpr (cuda::std::is_same_v<Store, CanonicalStore>) // the policy of tiles with kSentinelOutput
          canonicalize(y);
        *forward = y;
      }
    }
  };
  // The rows, each n columns on from the last (pointers stepped, not recomputed).
  auto rows_of = [&](const int n, const bool vector) {
    const T* src = static_cast<const T*>(t.in);
    T* dst = static_cast<T*>(t.out);
    for (int row = 0; row < t.rows; ++row, src += n, dst += t.out_stride)
      row_of(src, dst, n, vector, row == 0);
  };
  constexpr int kFullRow = static_cast<int>(kernels::lean_max_cols(THREADS));
  if constexpr (PLAIN) {
    row_of(static_cast<const T*>(t.in), static_cast<T*>(t.out), kFullRow, true, true);
  } else {
    const std::uintptr_t bases =
        reinterpret_cast<std::uintptr_t>(t.in) | (kWholeRowOut ? reinterpret_cast<std::uintptr_t>(t.out) : 0u);
    if (t.cols == kFullRow && (bases & 15u) == 0 && (!kWholeRowOut || (t.out_stride & 3) == 0))
      rows_of(kFullRow, true);
    else
      rows_of(t.cols, false);
  }
}

// CROSS_TILE: whether lean partial and look-back tiles are compiled in (never in a plain tile: lean_program.cpp,
// plain_tile).
template <int THREADS, bool PLAIN, bool CROSS_TILE, class Load, class Store>
__device__ __forceinline__ void lean_tile_with(const LeanTile& t, Load load, Store store,
                                               kernels::LeanStorage<THREADS>& s, int& half, kernels::LeanRow* forward) {
  using program::Opcode;
  const bool i32 = t.dtype == static_cast<std::uint32_t>(DType::i32);
  const bool max = t.fn == static_cast<std::uint32_t>(ScanFn::max);
  switch (static_cast<Opcode>(t.opcode)) {
  case Opcode::softmax_rows:
    lean_rows_as<THREADS, PLAIN, Opcode::softmax_rows, float, kernels::Sum>(t, load, store, s, half, forward);
    break;
  case Opcode::scan_rows:
    if (i32)
      max ? lean_rows_as<THREADS, PLAIN, Opcode::scan_rows, std::int32_t, kernels::Max>(t, load, store, s, half,
                                                                                        forward)
          : lean_rows_as<THREADS, PLAIN, Opcode::scan_rows, std::int32_t, kernels::Sum>(t, load, store, s, half,
                                                                                        forward);
    else
      max ? lean_rows_as<THREADS, PLAIN, Opcode::scan_rows, float, kernels::Max>(t, load, store, s, half, forward)
          : lean_rows_as<THREADS, PLAIN, Opcode::scan_rows, float, kernels::Sum>(t, load, store, s, half, forward);
    break;
  case Opcode::scan_all: // lean look-back tiles
    if constexpr (!PLAIN && CROSS_TILE) {
      if (i32)
        max ? lean_rows_as<THREADS, false, Opcode::scan_all, std::int32_t, kernels::Max>(t, load, store, s, half,
                                                                                         forward)
            : lean_rows_as<THREADS, false, Opcode::scan_all, std::int32_t, kernels::Sum>(t, load, store, s, half,
                                                                                         forward);
      else
        max ? lean_rows_as<THREADS, false, Opcode::scan_all, float, kernels::Max>(t, load, store, s, half, forward)
            : lean_rows_as<THREADS, false, Opcode::scan_all, float, kernels::Sum>(t, load, store, s, half, forward);
    }
    break;
  case Opcode::reduce_all: // lean partials
    if constexpr (!PLAIN && CROSS_TILE)
      i32 ? lean_rows_as<THREADS, false, Opcode::reduce_all, std::int32_t, kernels::Sum>(t, load, store, s, half,
                                                                                         forward)
          : lean_rows_as<THREADS, false, Opcode::reduce_all, float, kernels::Sum>(t, load, store, s, half, forward);
    break;
  default: // reduce_rows
    i32 ? lean_rows_as<THREADS, PLAIN, Opcode::reduce_rows, std::int32_t, kernels::Sum>(t, load, store, s, half,
                                                                                        forward)
        : lean_rows_as<THREADS, PLAIN, Opcode::reduce_rows, float, kernels::Sum>(t, load, store, s, half, forward);
  }
}

// The lean megakernel's dispatch: tile `t` under its sync mode's access policies; `site` is where a failed poll is
// recorded. SENTINEL (a program in sentinel mode): polled inputs and canonical outputs as the tile's flags say; else
// plain loads and stores only, so the other mode's kernel carries no policy code it never runs. CROSS_TILE: as in
// lean_tile_with.
template <int THREADS, bool SENTINEL, bool CROSS_TILE>
__device__ __forceinline__ void lean_tile(const LeanTile& t, const TileSite* site, kernels::LeanStorage<THREADS>& s,
                                          int& half, kernels::LeanRow* forward) {
  if constexpr (SENTINEL) {
    const bool poll = t.flags & program::kPollInputs, canonical = t.flags & program::kSentinelOutput;
    if (poll)
      canonical
          ? lean_tile_with<THREADS, false, CROSS_TILE>(t, PollLoad{site}, CanonicalStore{}, s, half, forward)
          : lean_tile_with<THREADS, false, CROSS_TILE>(t, PollLoad{site}, kernels::PlainStore{}, s, half, forward);
    else
      canonical
          ? lean_tile_with<THREADS, false, CROSS_TILE>(t, kernels::PlainLoad{}, CanonicalStore{}, s, half, forward)
          : lean_tile_with<THREADS, false, CROSS_TILE>(t, kernels::PlainLoad{}, kernels::PlainStore{}, s, half,
                                                       forward);
  } else {
    (void)site;
    lean_tile_with<THREADS, false, CROSS_TILE>(t, kernels::PlainLoad{}, kernels::PlainStore{}, s, half, forward);
  }
}

// A plain tile (program::kPlainTile: one full row of 16-byte groups, no polls, no sentinel outputs), in either
// kernel.
template <int THREADS>
__device__ __forceinline__ void lean_plain_tile(const LeanTile& t, kernels::LeanStorage<THREADS>& s, int& half,
                                                kernels::LeanRow* forward) {
  lean_tile_with<THREADS, true, false>(t, kernels::PlainLoad{}, kernels::PlainStore{}, s, half, forward);
}

} // namespace gridflow::gpu
