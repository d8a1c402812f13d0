// The GPU op table: one entry per opcode, each composing a kernels/ body with the cross-tile protocol
// (last-arriver combine for reduce_all, deterministic look-back for scan_all) and the access policies of the
// task's sync mode. Every function is called by all threads of the block and returns the same value in all.
#pragma once

#include "kernels/device/counting.cuh"
#include "kernels/device/map.cuh"
#include "kernels/device/reduce.cuh"
#include "kernels/device/scan.cuh"
#include "kernels/device/softmax.cuh"
#include "runtime/arena.hpp"
#include "runtime/gpu/device_access.cuh"
#include "runtime/gpu/lean_ops.cuh"
#include "runtime/tiles.hpp"

namespace gridflow::gpu {

constexpr int scan_items(int threads) {
  return kernels::scan_items_for(threads);
}

// The views stage_tile resolves (SharedStorage::views).
inline constexpr int kInView = 0, kOutView = 1, kAuxView = 2;

template <int THREADS> struct SharedStorage {
  union {
    kernels::ReduceStorage<THREADS> reduce;
    kernels::ScanStorage<THREADS> scan;
    kernels::SoftmaxStorage<THREADS> softmax;
    kernels::CountingStorage counting;
    kernels::LeanStorage<THREADS> lean;
  };
  program::TaskDesc task;      // the running tile's task descriptor (stage_tile copies it in with one load)
  program::TileDesc tile;      // the running tile's descriptor (stage_tile)
  void* views[3];              // base of the input, output and aux views (stage_tile): buffer + 4-byte offset
  TileSite site;               // the running tile's wait site (tile and task: stage_tile; the rest: init_shared)
  std::uint32_t ahead[32];     // the descriptor of the block's next task, copied early (stage_tile, warp 1 only)
  kernels::StreamState stream; // the bulk-copy ring's barriers (the ring is dynamic shared memory), set at launch
  std::uint32_t slots[2];      // leader -> block broadcast (ping-pong)
  std::uint32_t turn;
  int abort;           // set by a thread whose wait failed inside a body
  int flag;            // body-internal broadcast
  std::uint32_t carry; // body-internal broadcast of a scan tile's carry (bits)
};

// The block's shared storage: one static __shared__ object per block size. Every function names it here rather
// than receiving a reference, so a body compiled as a separate (non-inlined) function still addresses it as shared
// memory (LDS/STS); through a reference it would be a generic pointer read back from the caller's stack.
template <int THREADS> __device__ __forceinline__ SharedStorage<THREADS>& block_shared() {
  __shared__ SharedStorage<THREADS> storage;
  return storage;
}

// What a body needs beyond the staged descriptors, passed by value (registers) into the op table. The task
// descriptor, the views' base pointers and the wait site are the ones stage_tile put in the block's shared storage.
template <int THREADS> struct TileContext {
  unsigned char* state; // the state arena
  std::uint32_t epoch;  // this run's epoch
  std::uint32_t index;  // tile index within the task

  __device__ static SharedStorage<THREADS>& s() { return block_shared<THREADS>(); }
  __device__ static const TileSite& site() { return s().site; } // where a failed wait inside the body is recorded
  __device__ static const program::TaskDesc& task() { return s().task; }
  template <class T> __device__ static T* in() { return static_cast<T*>(s().views[kInView]); }
  template <class T> __device__ static T* out() { return static_cast<T*>(s().views[kOutView]); }
  template <class T> __device__ static T* aux() { return static_cast<T*>(s().views[kAuxView]); }
  __device__ unsigned char* scratch() const { return state + task().scratch; }
  __device__ static kernels::BlockStream<THREADS> stream() { return {kernels::stream_ring(), &s().stream}; }
};

// Writes a reduction result: argmax stores the index (i32 output), the others the value.
template <class T, class Store>
__device__ __forceinline__ void write_result(ReduceFn fn, void* out, kernels::ArgBest<T> r, Store store) {
  if (fn == ReduceFn::argmax)
    store(static_cast<std::int32_t*>(out), static_cast<std::int32_t>(r.index));
  else
    store(static_cast<T*>(out), r.value);
}

template <int THREADS, class T, class Load, class Store>
__device__ void reduce_all(TileContext<THREADS> c, Load load, Store store) {
  const auto fn = static_cast<ReduceFn>(c.task().fn);
  const program::ItemRange items = program::tile_items(c.task(), c.index);
  const kernels::BlockStream<THREADS> stream = c.stream();
  const kernels::ArgBest<T> r = kernels::block_reduce_range<THREADS>(fn, c.template in<T>() + items.begin, items.size(),
                                                                     items.begin, load, c.s().reduce, &stream);
  void* out = c.template out<char>();
  if (c.task().num_tiles == 1) {
    if (threadIdx.x == 0)
      write_result(fn, out, r, store);
    return;
  }
  // Partial, then arrival; the last arriver combines every partial in index order (deterministic).
  auto* parts = reinterpret_cast<program::Partial*>(c.scratch());
  if (threadIdx.x == 0) {
    parts[c.index] = program::Partial{std::uint64_t{to_bits(r.value)}, r.index};
    auto* counter = reinterpret_cast<std::uint64_t*>(c.state + c.task().counter);
    c.s().flag = protocol::arrive_is_last(counter, std::uint64_t{c.task().num_tiles} * c.epoch) ? 1 : 0;
  }
  __syncthreads();
  if (!c.s().flag)
    return;
  const auto get = [parts](unsigned k) {
    // Relaxed (L2) loads: the partials were written by other SMs during this run.
    auto* p = reinterpret_cast<std::uint64_t*>(&parts[k]);
    const std::uint64_t value = protocol::atomic_ref<std::uint64_t>(p[0]).load(cuda::std::memory_order_relaxed);
    const std::uint64_t index = protocol::atomic_ref<std::uint64_t>(p[1]).load(cuda::std::memory_order_relaxed);
    return kernels::ArgBest<T>{from_bits<T>(static_cast<std::uint32_t>(value)), static_cast<long long>(index)};
  };
  const kernels::ArgBest<T> total = kernels::block_combine<THREADS, T>(fn, c.task().num_tiles, get, c.s().reduce);
  if (threadIdx.x == 0)
    write_result(fn, out, total, store);
}

// A lean row tile (runtime/tiles.hpp: lean_rows) runs with the lean body of its op, as in the lean megakernel.
// A call of its own, not inlined into the op table: inlined, the lean bodies of every op, element type and policy pair
// make ptxas's time and memory for the whole megakernel several times larger. It addresses the shared storage
// through block_shared(), so its reductions stay shared-memory accesses. Its bodies need few registers, so a call of
// it saves few callee-saved ones, if any (dispatch_lean calls it from the kernel's own tile loop).
template <int THREADS, program::Opcode OP, class T, class ScanOp, class Load, class Store>
__device__ __noinline__ void lean_rows_tile(TileContext<THREADS> c, Load load, Store store) {
  const program::TaskDesc& t = c.task();
  const program::ItemRange rows = program::tile_items(t, c.index);
  const long long out_stride = program::output_per_item(t);
  const LeanTile lt{t.opcode,
                    t.fn,
                    t.dtype,
                    t.flags,
                    c.template in<std::uint32_t>() + rows.begin * t.cols,
                    c.template out<std::uint32_t>() + rows.begin * out_stride,
                    static_cast<int>(rows.size()),
                    static_cast<int>(t.cols),
                    static_cast<int>(out_stride)};
  int half = 0; // the tile ends with the interpreter's barrier
  lean_rows_as<THREADS, false, OP, T, ScanOp>(lt, load, store, c.s().lean, half, nullptr);
}

// A lean partial tile (runtime/tiles.hpp: lean_partials) with the lean megakernel's body: one row of the tile's
// elements, then the partial, the arrival and the last arriver's fold (lean_ops.cuh: lean_partial).
template <int THREADS, class T, class Load, class Store>
__device__ __noinline__ void lean_partial_tile(TileContext<THREADS> c, Load load, Store store) {
  const program::TaskDesc& t = c.task();
  const program::ItemRange items = program::tile_items(t, c.index);
  const LeanTile lt{t.opcode,
                    t.fn,
                    t.dtype,
                    t.flags,
                    c.template in<std::uint32_t>() + items.begin,
                    c.template out<std::uint32_t>(),
                    1,
                    static_cast<int>(items.size()),
                    1,
                    lean_partials_of(c.state, t, c.index, c.epoch)};
  int half = 0; // the tile ends with the interpreter's barrier
  lean_rows_as<THREADS, false, program::Opcode::reduce_all, T, kernels::Sum>(lt, load, store, c.s().lean, half,
                                                                             nullptr);
}

// A lean look-back tile (runtime/tiles.hpp: lean_scans) with the lean megakernel's body: one row of the tile's
// elements scanned, the prefix of the tiles before it from the look-back, the row stored (lean_ops.cuh).
template <int THREADS, class T, class ScanOp, class Load, class Store>
__device__ __noinline__ void lean_scan_tile(TileContext<THREADS> c, Load load, Store store) {
  const program::TaskDesc& t = c.task();
  const program::ItemRange items = program::tile_items(t, c.index);
  const int n = static_cast<int>(items.size());
  const LeanTile lt{t.opcode,
                    t.fn,
                    t.dtype,
                    t.flags,
                    c.template in<std::uint32_t>() + items.begin,
                    c.template out<std::uint32_t>() + items.begin,
                    1,
                    n,
                    n,
                    LeanPartials{},
                    lean_lookback_of(c.state, t, c.index, c.epoch, &c.site())};
  int half = 0; // the tile ends with the interpreter's barrier
  lean_rows_as<THREADS, false, program::Opcode::scan_all, T, ScanOp>(lt, load, store, c.s().lean, half, nullptr);
}

template <int THREADS, class T, class Load, class Store>
__device__ void reduce_rows(TileContext<THREADS> c, Load load, Store store) {
  const auto fn = static_cast<ReduceFn>(c.task().fn);
  const program::ItemRange rows = program::tile_items(c.task(), c.index);
  const long long cols = c.task().cols;
  const T* in = c.template in<T>();
  char* out = c.template out<char>();
  if (cols <= kernels::kWarpReduceRowMaxCols) {
    const long long warp = threadIdx.x / 32, warps = THREADS / 32;
    for (long long row = rows.begin + warp; row < rows.end; row += warps) {
      const kernels::ArgBest<T> r = kernels::warp_reduce_row(fn, in + row * cols, cols, load);
      if ((threadIdx.x & 31) == 0)
        write_result(fn, out + 4 * row, r, store);
    }
  } else {
    const kernels::BlockStream<THREADS> stream = c.stream();
    for (long long row = rows.begin; row < rows.end; ++row) {
      const kernels::ArgBest<T> r =
          kernels::block_reduce_range<THREADS>(fn, in + row * cols, cols, 0, load, c.s().reduce, &stream);
      if (threadIdx.x == 0)
        write_result(fn, out + 4 * row, r, store);
      __syncthreads();
    }
  }
}

// The reduce function whose fold is a scan's tile aggregate.
template <class Op> constexpr ReduceFn aggregate_fn() {
  return cuda::std::is_same_v<Op, kernels::Max> ? ReduceFn::max : ReduceFn::sum;
}

// A look-back as a chunk's prefix functor: warp 0 looks back with the chunk's total, the block gets the carry.
template <class T, class Op> struct BlockLookback {
  LookbackPrefix<T, Op> lookback;
  std::uint32_t* broadcast; // shared
  __device__ T operator()(T total) {
    if (threadIdx.x < 32) {
      const T prefix = lookback(total);
      if (threadIdx.x == 0)
        *broadcast = to_bits(prefix);
    }
    __syncthreads();
    return from_bits<T>(*broadcast);
  }
};

__device__ __forceinline__ bool aligned16(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
}

// A scan_all tile is `chunks` chunks of THREADS * scan_items elements, each scanned warp-striped
// (kernels::striped_scan_chunk). One chunk: single pass, read as 16-byte groups straight from global memory (or
// staged through shared memory when polled or misaligned), the carry from the look-back. Several: the tile's
// aggregate first (a streamed block reduce), then the look-back, then the chunks in order with a running carry,
// read again: from the ring where the reduce left the tile when it fits (kernels::stream_ring_bytes: 4 chunks at
// 256 threads); else, plain and 16-byte aligned, whole chunks bulk-copied into the ring again (the first ones in
// flight during the look-back; meant to hit the L2); else staged element by element.
template <int THREADS, class T, class Op, class Load, class Store>
__device__ void scan_all(TileContext<THREADS> c, Op op, Load load, Store store) {
  constexpr int kItems = scan_items(THREADS);
  constexpr long long kChunk = static_cast<long long>(THREADS) * kItems;
  const program::ItemRange items = program::tile_items(c.task(), c.index);
  const bool exclusive = c.task().flags & program::kExclusive;
  const T* in = c.template in<T>() + items.begin;
  T* out = c.template out<T>() + items.begin;
  const int n = static_cast<int>(items.size() < kChunk ? items.size() : kChunk); // the first chunk's elements
  auto& s = kernels::ScanTypes<THREADS, kItems, T>::striped(c.s().scan);
  const auto source = [&](const T* chunk_in, const T* vec, int vec_end, int m) {
    const auto tail = [chunk_in, load](int e) { return load(chunk_in + e); };
    return kernels::ChunkSource<T, decltype(tail)>{vec, vec_end, m, tail};
  };
  if (c.task().tile_size == kChunk) {
    BlockLookback<T, Op> prefix{
        {&c.site(), reinterpret_cast<std::uint64_t*>(c.scratch()), c.task().num_tiles, c.index, c.epoch, op},
        &c.s().carry};
    bool direct = false;
    if constexpr (Load::kVectorizable)
      direct = aligned16(in);
    if (!direct)
      kernels::stage_chunk<THREADS, kItems>(in, n, load, s);
    kernels::striped_scan_chunk<THREADS, kItems>(
        op, exclusive, direct ? source(in, in, n & ~3, n) : source(in, s.staging, n, n), out, store, prefix, s);
    return;
  }
  const kernels::BlockStream<THREADS> stream = c.stream();
  kernels::RingSpan<T> span{};
  const bool resident =
      kernels::streamed_range_stays_in_ring<THREADS, T, Load>(in, items.size(), stream, span) && span.head == 0;
  const T aggregate =
      kernels::block_reduce_range<THREADS>(aggregate_fn<Op>(), in, items.size(), 0, load, c.s().reduce, &stream).value;
  const long long chunks = (items.size() + kChunk - 1) / kChunk;
  const auto chunk_bytes = [&](long long k) { // the whole 16-byte groups of chunk k
    const long long m = items.size() - k * kChunk < kChunk ? items.size() - k * kChunk : kChunk;
    return static_cast<std::uint32_t>(m / 4 * 16);
  };
  kernels::ChunkRing<THREADS> ring{};
  bool streamed = false;
  if constexpr (Load::kVectorizable)
    streamed = !resident && aligned16(in) && kernels::ChunkRing<THREADS>::plan(stream, kChunk * sizeof(T), ring);
  kernels::release_ring_reads();
  __syncthreads(); // the reduce's reads of the ring and its phases are done
  if (streamed) {
    ring.begin();
    if (threadIdx.x == 0)
      for (long long k = 0; k < chunks && k < ring.slots; ++k)
        ring.issue(static_cast<int>(k), in + k * kChunk, chunk_bytes(k));
  }
  if (threadIdx.x < 32) { // warp 0: thread 0 holds the aggregate
    LookbackPrefix<T, Op> lookback{
        &c.site(), reinterpret_cast<std::uint64_t*>(c.scratch()), c.task().num_tiles, c.index, c.epoch, op};
    const T prefix = lookback(__shfl_sync(0xffffffffu, aggregate, 0));
    if (threadIdx.x == 0)
      c.s().carry = to_bits(prefix);
  }
  __syncthreads();
  kernels::RunningCarry<T, Op> carry{from_bits<T>(c.s().carry), op};
  int slot = 0;
  for (long long k = 0; k < chunks; ++k) {
    const long long base = k * kChunk;
    const int m = static_cast<int>(items.size() - base < kChunk ? items.size() - base : kChunk);
    const T* chunk_in = in + base;
    const T* vec = s.staging;
    int vec_end = m;
    if (resident) {
      vec = span.ring + base;
      vec_end = static_cast<int>(span.end - base < m ? span.end - base : m);
    } else if (streamed) {
      vec = ring.template wait<T>(slot);
      vec_end = m & ~3;
    } else {
      kernels::stage_chunk<THREADS, kItems>(chunk_in, m, load, s);
    }
    kernels::striped_scan_chunk<THREADS, kItems>(op, exclusive, source(chunk_in, vec, vec_end, m), out + base, store,
                                                 carry, s);
    if (streamed)
      kernels::release_ring_reads();
    __syncthreads(); // the chunk's reads (ring slot, staging, warp totals) are done
    if (streamed) {
      if (threadIdx.x == 0 && k + ring.slots < chunks)
        ring.issue(slot, in + (k + ring.slots) * kChunk, chunk_bytes(k + ring.slots));
      slot = ring.next_slot(slot);
    }
  }
  if (streamed)
    ring.finish();
}

template <int THREADS, class T, class Op, class Load, class Store>
__device__ void scan_rows(TileContext<THREADS> c, Op op, Load load, Store store) {
  const program::ItemRange rows = program::tile_items(c.task(), c.index);
  const long long cols = c.task().cols;
  const bool exclusive = c.task().flags & program::kExclusive;
  const T* in = c.template in<T>();
  T* out = c.template out<T>();
  if (cols <= 1024) {
    const long long warp = threadIdx.x / 32, warps = THREADS / 32;
    for (long long row = rows.begin + warp; row < rows.end; row += warps)
      kernels::warp_scan_row(op, exclusive, in + row * cols, out + row * cols, cols, load, store);
  } else {
    for (long long row = rows.begin; row < rows.end; ++row)
      kernels::block_scan_row<THREADS, scan_items(THREADS), T>(op, exclusive, in + row * cols, out + row * cols, cols,
                                                               load, store, c.s().scan);
  }
}

template <int THREADS, class Load, class Store>
__device__ void softmax_rows(TileContext<THREADS> c, Load load, Store store) {
  const program::ItemRange rows = program::tile_items(c.task(), c.index);
  const long long cols = c.task().cols;
  const bool log = c.task().flags & program::kLogSoftmax;
  const float* in = c.template in<float>();
  float* out = c.template out<float>();
  if (cols <= kernels::kShortRowMaxCols) {
    const kernels::BlockStream<THREADS> stream = c.stream();
    kernels::block_softmax_short_rows<THREADS>(in, out, rows.begin, rows.end, cols, log, load, store, c.s().softmax,
                                               &stream);
  } else if (cols <= kernels::register_row_max_cols<THREADS>()) {
    if constexpr (kernels::register_row_max_cols<THREADS>() > 0) {
      const kernels::BlockStream<THREADS> stream = c.stream();
      kernels::block_softmax_rows_in_registers<THREADS>(in, out, rows.begin, rows.end, cols, log, load, store,
                                                        c.s().softmax, &stream);
    }
  } else {
    const kernels::BlockStream<THREADS> stream = c.stream();
    for (long long row = rows.begin; row < rows.end; ++row)
      kernels::block_softmax_row<THREADS>(in + row * cols, out + row * cols, cols, log, load, store, c.s().softmax,
                                          &stream);
  }
}

// A map tile: its element chunk through the task's function. A call of its own (five functions times the policy
// pairs would otherwise all be inlined into the op table).
template <int THREADS, class Load, class Store>
__device__ __noinline__ void map_tile(TileContext<THREADS> c, Load load, Store store) {
  const program::TaskDesc& t = c.task();
  const program::ItemRange items = program::tile_items(t, c.index);
  const kernels::MapParams p{from_bits<float>(t.consts[0]), from_bits<float>(t.consts[1]),
                             from_bits<float>(t.consts[2]), from_bits<float>(t.consts[3])};
  const float* in = c.template in<float>() + items.begin;
  float* out = c.template out<float>() + items.begin;
  kernels::with_map_fn(static_cast<MapFn>(t.fn),
                       [&]<MapFn F>() { kernels::block_map<THREADS, F>(in, out, items.size(), p, load, store); });
}

// A lean row tile to the lean body of its opcode, element type and scan operator, for one pair of access policies.
// Inlined into execute_tile, so a lean tile's only call is lean_rows_tile: the device code is relocatable
// (runtime/CMakeLists.txt), and a call that stays a call saves and restores the callee-saved registers its callee
// uses on every tile (dispatch and the row ops' bodies use many of them for their other paths).
template <int THREADS, class Load, class Store>
__device__ __forceinline__ bool dispatch_lean(TileContext<THREADS> c, Load load, Store store) {
  using program::Opcode;
  const bool is_i32 = c.task().dtype == static_cast<std::uint32_t>(DType::i32);
  const bool is_max = c.task().fn == static_cast<std::uint32_t>(ScanFn::max);
  switch (static_cast<Opcode>(c.task().opcode)) {
  case Opcode::reduce_rows:
    is_i32 ? lean_rows_tile<THREADS, Opcode::reduce_rows, std::int32_t, kernels::Sum>(c, load, store)
           : lean_rows_tile<THREADS, Opcode::reduce_rows, float, kernels::Sum>(c, load, store);
    return true;
  case Opcode::scan_rows:
    if (is_i32)
      is_max ? lean_rows_tile<THREADS, Opcode::scan_rows, std::int32_t, kernels::Max>(c, load, store)
             : lean_rows_tile<THREADS, Opcode::scan_rows, std::int32_t, kernels::Sum>(c, load, store);
    else
      is_max ? lean_rows_tile<THREADS, Opcode::scan_rows, float, kernels::Max>(c, load, store)
             : lean_rows_tile<THREADS, Opcode::scan_rows, float, kernels::Sum>(c, load, store);
    return true;
  case Opcode::softmax_rows:
    lean_rows_tile<THREADS, Opcode::softmax_rows, float, kernels::Sum>(c, load, store);
    return true;
  case Opcode::reduce_all: // lean partials
    is_i32 ? lean_partial_tile<THREADS, std::int32_t>(c, load, store)
           : lean_partial_tile<THREADS, float>(c, load, store);
    return true;
  case Opcode::scan_all: // lean look-back tiles
    if (is_i32)
      is_max ? lean_scan_tile<THREADS, std::int32_t, kernels::Max>(c, load, store)
             : lean_scan_tile<THREADS, std::int32_t, kernels::Sum>(c, load, store);
    else
      is_max ? lean_scan_tile<THREADS, float, kernels::Max>(c, load, store)
             : lean_scan_tile<THREADS, float, kernels::Sum>(c, load, store);
    return true;
  default: // lean_tiles holds only for the ops above
    return false;
  }
}

// Dispatch on opcode and element type for one pair of access policies; lean row tiles go to dispatch_lean instead.
// A call of its own, so the op bodies it inlines keep their registers out of the kernel's tile loop.
template <int THREADS, class Load, class Store>
__device__ __noinline__ bool dispatch(TileContext<THREADS> c, Load load, Store store) {
  const bool is_i32 = c.task().dtype == static_cast<std::uint32_t>(DType::i32);
  const bool is_max = c.task().fn == static_cast<std::uint32_t>(ScanFn::max);
  switch (static_cast<program::Opcode>(c.task().opcode)) {
  case program::Opcode::reduce_all:
    is_i32 ? reduce_all<THREADS, std::int32_t>(c, load, store) : reduce_all<THREADS, float>(c, load, store);
    return true;
  case program::Opcode::reduce_rows:
    is_i32 ? reduce_rows<THREADS, std::int32_t>(c, load, store) : reduce_rows<THREADS, float>(c, load, store);
    return true;
  case program::Opcode::scan_all:
    if (is_i32)
      is_max ? scan_all<THREADS, std::int32_t>(c, kernels::Max{}, load, store)
             : scan_all<THREADS, std::int32_t>(c, kernels::Sum{}, load, store);
    else
      is_max ? scan_all<THREADS, float>(c, kernels::Max{}, load, store)
             : scan_all<THREADS, float>(c, kernels::Sum{}, load, store);
    return true;
  case program::Opcode::scan_rows:
    if (is_i32)
      is_max ? scan_rows<THREADS, std::int32_t>(c, kernels::Max{}, load, store)
             : scan_rows<THREADS, std::int32_t>(c, kernels::Sum{}, load, store);
    else
      is_max ? scan_rows<THREADS, float>(c, kernels::Max{}, load, store)
             : scan_rows<THREADS, float>(c, kernels::Sum{}, load, store);
    return true;
  case program::Opcode::softmax_rows:
    softmax_rows<THREADS>(c, load, store);
    return true;
  case program::Opcode::map:
    map_tile<THREADS>(c, load, store);
    return true;
  case program::Opcode::noop:
    return true;
  default:
    return false;
  }
}

// One tile of a row op or a whole-view op (not a counting op) under one pair of access policies: lean row tiles
// straight to their lean body, the others through the op table.
template <int THREADS, class Load, class Store>
__device__ __forceinline__ bool dispatch_tile(TileContext<THREADS> c, bool lean, Load load, Store store) {
  return lean ? dispatch_lean(c, load, store) : dispatch(c, load, store);
}

} // namespace gridflow::gpu
