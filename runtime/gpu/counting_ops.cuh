// The GPU bodies of the counting ops (contracts in kernels/counting.hpp), composing kernels/device/counting.cuh
// with the cross-tile protocol: histogram rows folded by the last arriver, scatter rows of earlier tiles behind
// per-tile ready words, select positions from the deterministic look-back. Plain loads and stores only: the
// lowering never gives a counting op polled inputs or sentinel outputs. Called by every thread of the block.
#pragma once

#include "kernels/device/counting.cuh"
#include "runtime/gpu/ops.cuh"

namespace gridflow::gpu {

// Rows other blocks wrote during this run: read at L2 (relaxed, device scope), never from a stale L1 line.
__device__ __forceinline__ int load_row_entry(const int* rows, std::size_t i) {
  return protocol::atomic_ref<int>(*const_cast<int*>(rows + i)).load(cuda::std::memory_order_relaxed);
}

template <int THREADS> __device__ void histogram_tile(TileContext<THREADS> c) {
  const program::ItemRange items = program::tile_items(c.task(), c.index);
  const int bins = static_cast<int>(c.task().param);
  int* counts = c.s().counting.counts;
  kernels::block_count<THREADS>(c.template in<std::int32_t>() + items.begin, items.size(), bins, counts);
  std::int32_t* out = c.template out<std::int32_t>();
  if (c.task().num_tiles == 1) {
    for (int b = threadIdx.x; b < bins; b += THREADS)
      out[b] = counts[b];
    return;
  }
  auto* rows = reinterpret_cast<int*>(c.scratch());
  for (int b = threadIdx.x; b < bins; b += THREADS)
    rows[std::size_t{c.index} * bins + b] = counts[b];
  __syncthreads(); // every thread's row entries before the leader's release (arrive_is_last is acq_rel)
  if (threadIdx.x == 0) {
    auto* counter = reinterpret_cast<std::uint64_t*>(c.state + c.task().counter);
    c.s().flag = protocol::arrive_is_last(counter, std::uint64_t{c.task().num_tiles} * c.epoch) ? 1 : 0;
  }
  __syncthreads();
  if (!c.s().flag)
    return;
  for (int b = threadIdx.x; b < bins; b += THREADS) {
    unsigned total = 0; // wraps like the reference's i32 adds
    for (std::uint32_t j = 0; j < c.task().num_tiles; ++j)
      total += static_cast<unsigned>(load_row_entry(rows, std::size_t{j} * bins + b));
    out[b] = static_cast<std::int32_t>(total);
  }
}

template <int THREADS> __device__ void scatter_tile(TileContext<THREADS> c) {
  constexpr int kSegments = THREADS / 32 < kernels::kScatterSegments ? THREADS / 32 : kernels::kScatterSegments;
  const program::ItemRange items = program::tile_items(c.task(), c.index);
  const int bins = static_cast<int>(c.task().param);
  const std::int32_t* keys = c.template in<std::int32_t>() + items.begin;
  int* counts = c.s().counting.counts; // [segment][bin]
  const int warp = threadIdx.x / 32;
  for (int i = threadIdx.x; i < kSegments * bins; i += THREADS)
    counts[i] = 0;
  __syncthreads();
  long long seg_begin = 0, seg_end = 0;
  if (warp < kSegments) {
    kernels::segment_range(items.size(), warp, kSegments, seg_begin, seg_end);
    kernels::warp_count_segment(keys, seg_begin, seg_end, bins, counts + warp * bins);
  }
  __syncthreads();
  // This tile's row, published behind its ready word; then the rows of every earlier tile.
  unsigned char* scratch = c.scratch();
  auto* rows = reinterpret_cast<int*>(scratch);
  auto* ready = reinterpret_cast<std::uint64_t*>(scratch + program::scatter_ready_words_offset(c.task()));
  const bool several = c.task().num_tiles > 1;
  if (several) {
    for (int b = threadIdx.x; b < bins; b += THREADS) {
      int total = 0;
      for (int s = 0; s < kSegments; ++s)
        total += counts[s * bins + b];
      rows[std::size_t{c.index} * bins + b] = total;
    }
    __syncthreads();
    if (threadIdx.x == 0)
      protocol::publish_word(ready + c.index, c.epoch, 0);
    for (std::uint32_t j = threadIdx.x; j < c.index; j += THREADS) {
      std::uint32_t unused = 0;
      if (!protocol::wait_word(c.site().site, {program::WaitKind::lookback, c.site().task, j, c.epoch}, ready + j,
                               c.epoch, unused))
        *c.site().abort = 1;
    }
    __syncthreads(); // each thread's acquire, then the whole block's loads of the rows
    if (*c.site().abort)
      return;
  }
  // Each segment's first position per bin: offsets + earlier tiles' rows + earlier segments of this tile.
  const std::int32_t* offsets = c.template aux<const std::int32_t>();
  for (int b = threadIdx.x; b < bins; b += THREADS) {
    int next = offsets[b];
    if (several)
      for (std::uint32_t j = 0; j < c.index; ++j)
        next += load_row_entry(rows, std::size_t{j} * bins + b);
    for (int s = 0; s < kSegments; ++s) {
      const int n = counts[s * bins + b];
      counts[s * bins + b] = next;
      next += n;
    }
  }
  __syncthreads();
  if (warp < kSegments) {
    std::int32_t* out = c.template out<std::int32_t>();
    const auto out_size = static_cast<long long>(program::const_u64(c.task(), 0));
    const long long first = items.begin;
    kernels::warp_place_segment(keys, seg_begin, seg_end, bins, counts + warp * bins, [&](long long pos, long long i) {
      if (pos >= 0 && pos < out_size)
        out[pos] = static_cast<std::int32_t>(first + i);
    });
  }
}

// A select tile is whole chunks of THREADS * scan_items elements, each compacted warp-striped
// (kernels::striped_select_chunk). One chunk: a single pass, read as 16-byte groups straight from global memory (or
// staged through shared memory when misaligned), its start from the look-back. Several: the tile's kept count first
// (streamed through the ring, which keeps the whole tile when it fits: the lowering sizes select tiles to fit), then
// the look-back, then the chunks in order with a running start, read from the ring (else again from global memory,
// meant to hit the L2). The last tile writes the count.
template <int THREADS, class T> __device__ void select_tile(TileContext<THREADS> c) {
  constexpr int kItems = scan_items(THREADS);
  constexpr long long kChunk = static_cast<long long>(THREADS) * kItems;
  using Types = kernels::ScanTypes<THREADS, kItems, T>;
  const program::ItemRange items = program::tile_items(c.task(), c.index);
  const auto cmp = static_cast<CmpFn>(c.task().param);
  const T threshold = from_bits<T>(c.task().consts[0]);
  const auto keep = [cmp, threshold](T v) { return kernels::select_keep(cmp, v, threshold); };
  const kernels::PlainLoad load{};
  const T* in = c.template in<T>() + items.begin;
  T* out = c.template out<T>();
  auto& s = Types::select(c.s().scan);
  const auto source = [&](const T* chunk_in, const T* vec, int vec_end, int m) {
    const auto tail = [chunk_in, load](int e) { return load(chunk_in + e); };
    return kernels::ChunkSource<T, decltype(tail)>{vec, vec_end, m, tail};
  };
  const auto global_source = [&](const T* chunk_in, int m) {
    if (aligned16(chunk_in))
      return source(chunk_in, chunk_in, m & ~3, m);
    kernels::stage_chunk<THREADS, kItems>(chunk_in, m, load, Types::striped(c.s().scan)); // into s.staged
    return source(chunk_in, s.staged, m, m);
  };
  auto* words = reinterpret_cast<std::uint64_t*>(c.scratch());
  int end = 0;
  if (c.task().tile_size == kChunk) {
    BlockLookback<int, kernels::Sum> prefix{{&c.site(), words, c.task().num_tiles, c.index, c.epoch, kernels::Sum{}},
                                            &c.s().carry};
    end = kernels::striped_select_chunk<THREADS, kItems>(global_source(in, static_cast<int>(items.size())), keep, out,
                                                         prefix, s);
  } else {
    const kernels::BlockStream<THREADS> stream = c.stream();
    kernels::RingSpan<T> span{};
    const bool resident =
        kernels::streamed_range_stays_in_ring<THREADS, T, kernels::PlainLoad>(in, items.size(), stream, span) &&
        span.head == 0;
    int kept = 0;
    kernels::for_each_owned_streamed<THREADS>(in, items.size(), load, &stream,
                                              [&](long long, T v) { kept += keep(v) ? 1 : 0; });
    kept = kernels::block_reduce<THREADS>(kept, kernels::Sum{}, c.s().reduce); // in thread 0
    __syncthreads(); // the count's reads of the ring and its phases are done
    if (threadIdx.x < 32) {
      LookbackPrefix<int, kernels::Sum> lookback{&c.site(), words,   c.task().num_tiles,
                                                 c.index,   c.epoch, kernels::Sum{}};
      const int prefix = lookback(__shfl_sync(0xffffffffu, kept, 0));
      if (threadIdx.x == 0)
        c.s().carry = to_bits(prefix);
    }
    __syncthreads();
    kernels::RunningCarry<int, kernels::Sum> start{from_bits<int>(c.s().carry), kernels::Sum{}};
    for (long long base = 0; base < items.size(); base += kChunk) {
      const int m = static_cast<int>(items.size() - base < kChunk ? items.size() - base : kChunk);
      const T* chunk_in = in + base;
      if (resident) {
        const long long in_ring = span.end - base < 0 ? 0 : span.end - base;
        end = kernels::striped_select_chunk<THREADS, kItems>(
            source(chunk_in, span.ring + base, static_cast<int>(in_ring < m ? in_ring : m), m), keep, out, start, s);
      } else {
        end = kernels::striped_select_chunk<THREADS, kItems>(global_source(chunk_in, m), keep, out, start, s);
      }
      __syncthreads(); // the chunk's reads of its storage are done
    }
  }
  if (c.index + 1 == c.task().num_tiles && threadIdx.x == 0) {
    auto* count = c.template aux<std::int32_t>();
    *count = end;
  }
}

// The counting ops' dispatch; false for any other opcode.
// Not inlined: the counting bodies keep their registers out of the megakernel's main path.
template <int THREADS> __device__ __noinline__ bool dispatch_counting(TileContext<THREADS> c) {
  switch (static_cast<program::Opcode>(c.task().opcode)) {
  case program::Opcode::histogram:
    histogram_tile<THREADS>(c);
    return true;
  case program::Opcode::scatter:
    scatter_tile<THREADS>(c);
    return true;
  case program::Opcode::select:
    c.task().dtype == static_cast<std::uint32_t>(DType::i32) ? select_tile<THREADS, std::int32_t>(c)
                                                             : select_tile<THREADS, float>(c);
    return true;
  default:
    return false;
  }
}

} // namespace gridflow::gpu
