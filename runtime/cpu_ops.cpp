// CPU task bodies: each tile's work for the CPU executor, from the float64 references in kernels/ plus the
// cross-tile protocol (last-arriver combine for reduce_all, deterministic look-back for scan_all).
#include "runtime/cpu_ops.hpp"

#include "kernels/counting.hpp"
#include "kernels/map.hpp"
#include "kernels/reference.hpp"
#include "runtime/arena.hpp"
#include "runtime/lookback.hpp"
#include "runtime/op_traits.hpp"
#include "runtime/tiles.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

namespace gridflow::cpu {
namespace {

using program::Opcode;
using program::TaskDesc;

struct TileCtx {
  const program::ProgramView& view;
  const program::RunParams& params;
  std::uint32_t worker;
  std::uint32_t tile;
  const TaskDesc& task;

  protocol::WaitSite site() const {
    return {reinterpret_cast<program::ControlBlock*>(view.state),
            params.timeout_ns,
            worker,
            tile,
            view.tiles[tile].task,
            params.pacing};
  }
  std::uint32_t* in_words() const { return static_cast<std::uint32_t*>(view.buffers[task.in_buffer]) + task.in_offset; }
  std::uint32_t* out_words() const {
    return static_cast<std::uint32_t*>(view.buffers[task.out_buffer]) + task.out_offset;
  }
};

// Copies input elements [first, last) of the task's view; in sentinel mode polls each until it is written.
template <class T> bool gather(const TileCtx& c, std::int64_t first, std::int64_t last, std::vector<T>& out) {
  out.resize(static_cast<std::size_t>(last - first));
  const std::uint32_t* src = c.in_words() + first;
  if (!(c.task.flags & program::kPollInputs)) {
    if (!out.empty())
      std::memcpy(out.data(), src, out.size() * sizeof(T));
    return true;
  }
  for (std::int64_t i = 0; i < last - first; ++i) {
    auto* word = const_cast<std::uint32_t*>(src + i);
    auto observe = [word] {
      return std::uint64_t{protocol::atomic_ref<std::uint32_t>(*word).load(cuda::std::memory_order_relaxed)};
    };
    const bool ok = protocol::wait_until(c.site(),
                                         {program::WaitKind::sentinel, c.view.tiles[c.tile].task,
                                          static_cast<std::uint32_t>(first + i), program::kCanonicalNanBits},
                                         observe, [](std::uint64_t v) { return v != program::kSentinelBits; });
    if (!ok)
      return false;
    const std::uint32_t bits = static_cast<std::uint32_t>(observe());
    std::memcpy(&out[static_cast<std::size_t>(i)], &bits, sizeof(T));
  }
  return true;
}

// Stores output element i (relative to the output view). Sentinel outputs are stored atomically (consumers
// poll them) and never with the sentinel's bit pattern.
void store_bits(const TileCtx& c, std::int64_t i, std::uint32_t bits) {
  std::uint32_t* dst = c.out_words() + i;
  if (c.task.flags & program::kSentinelOutput) {
    if (bits == program::kSentinelBits)
      bits = program::kCanonicalNanBits;
    protocol::atomic_ref<std::uint32_t>(*dst).store(bits, cuda::std::memory_order_relaxed);
  } else {
    *dst = bits;
  }
}

std::uint32_t f32_bits(double v) {
  return std::bit_cast<std::uint32_t>(static_cast<float>(v));
}
std::uint32_t i32_bits(double v) {
  return static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
}
float bits_f32(std::uint32_t b) {
  return std::bit_cast<float>(b);
}

// ---- reduce ------------------------------------------------------------------------------------------------

// The CPU's partial of a reduce_all tile: f32 values as doubles (argmax: the element itself), i32 as int64;
// argmax carries the global index of the tile's first maximum.
program::Partial make_partial(ReduceFn fn, DType dtype, const ref::Expected& e, std::int64_t first_index,
                              double best_value) {
  if (fn == ReduceFn::argmax)
    return {std::bit_cast<std::uint64_t>(best_value),
            e.value < 0 ? -1 : first_index + static_cast<std::int64_t>(e.value)};
  if (dtype == DType::f32)
    return {std::bit_cast<std::uint64_t>(e.value), 0};
  return {static_cast<std::uint64_t>(static_cast<std::int64_t>(e.value)), 0};
}

// Folds partials in index order into the final result (as a double holding the output value).
double combine_partials(ReduceFn fn, DType dtype, const program::Partial* parts, std::uint32_t n) {
  if (fn == ReduceFn::argmax) {
    std::int64_t best = -1;
    double best_v = 0;
    for (std::uint32_t k = 0; k < n; ++k) {
      if (parts[k].index < 0)
        continue;
      const double v = std::bit_cast<double>(parts[k].value);
      if (best < 0 || v > best_v) {
        best = parts[k].index;
        best_v = v;
      }
    }
    return static_cast<double>(best);
  }
  if (dtype == DType::f32) {
    double acc = ref::identity_f32(fn);
    for (std::uint32_t k = 0; k < n; ++k) {
      const double v = std::bit_cast<double>(parts[k].value);
      acc = fn == ReduceFn::sum ? acc + v : fn == ReduceFn::max ? std::max(acc, v) : std::min(acc, v);
    }
    return acc;
  }
  std::int64_t acc = ref::identity_i32(fn);
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::int64_t v = static_cast<std::int64_t>(parts[k].value);
    acc = fn == ReduceFn::sum   ? static_cast<std::int32_t>(static_cast<std::uint32_t>(acc + v))
          : fn == ReduceFn::max ? std::max(acc, v)
                                : std::min(acc, v);
  }
  return static_cast<double>(acc);
}

template <class T> bool reduce_all(const TileCtx& c) {
  const program::ItemRange r = program::tile_items(c.task, program::TileDesc(c.view.tiles[c.tile]).index);
  std::vector<T> x;
  if (!gather(c, r.begin, r.end, x))
    return false;
  const auto fn = static_cast<ReduceFn>(c.task.fn);
  const auto dtype = static_cast<DType>(c.task.dtype);
  const ref::Expected e = ref::reduce(fn, std::span<const T>(x));
  const bool out_i32 = fn == ReduceFn::argmax || dtype == DType::i32;
  auto result_bits = [&](double v) { return out_i32 ? i32_bits(v) : f32_bits(v); };
  if (c.task.num_tiles == 1) {
    store_bits(c, 0, result_bits(fn == ReduceFn::argmax ? (e.value < 0 ? -1.0 : e.value) : e.value));
    return true;
  }
  const program::Arena arena{c.view.state, c.view.layout};
  auto* parts = reinterpret_cast<program::Partial*>(arena.at(c.task.scratch));
  const std::uint32_t k = c.view.tiles[c.tile].index;
  const double best =
      fn == ReduceFn::argmax && e.value >= 0 ? static_cast<double>(x[static_cast<std::size_t>(e.value)]) : 0.0;
  parts[k] = make_partial(fn, dtype, e, r.begin, best);
  auto* counter = reinterpret_cast<std::uint64_t*>(arena.at(c.task.counter));
  if (protocol::arrive_is_last(counter, std::uint64_t{c.task.num_tiles} * c.params.epoch))
    store_bits(c, 0, result_bits(combine_partials(fn, dtype, parts, c.task.num_tiles)));
  return true;
}

template <class T> bool reduce_rows(const TileCtx& c) {
  const program::ItemRange r = program::tile_items(c.task, c.view.tiles[c.tile].index);
  const auto fn = static_cast<ReduceFn>(c.task.fn);
  const bool out_i32 = fn == ReduceFn::argmax || c.task.dtype == static_cast<std::uint32_t>(DType::i32);
  std::vector<T> row;
  for (std::int64_t i = r.begin; i < r.end; ++i) {
    if (!gather(c, i * c.task.cols, (i + 1) * c.task.cols, row))
      return false;
    const ref::Expected e = ref::reduce(fn, std::span<const T>(row));
    store_bits(c, i, out_i32 ? i32_bits(e.value) : f32_bits(e.value));
  }
  return true;
}

// ---- scan --------------------------------------------------------------------------------------------------

struct ScanCombine {
  ScanFn fn;
  DType dtype;
  std::uint32_t operator()(std::uint32_t a, std::uint32_t b) const {
    if (dtype == DType::f32) {
      const float x = bits_f32(a), y = bits_f32(b);
      return std::bit_cast<std::uint32_t>(fn == ScanFn::sum ? x + y : std::fmax(x, y));
    }
    const std::int32_t x = static_cast<std::int32_t>(a), y = static_cast<std::int32_t>(b);
    return fn == ScanFn::sum ? a + b : static_cast<std::uint32_t>(std::max(x, y));
  }
  std::uint32_t identity() const {
    return dtype == DType::f32 ? f32_bits(ref::identity_f32(fn)) : static_cast<std::uint32_t>(ref::identity_i32(fn));
  }
};

template <class T> bool scan_all(const TileCtx& c) {
  const program::TileDesc tile = c.view.tiles[c.tile];
  const program::ItemRange r = program::tile_items(c.task, tile.index);
  std::vector<T> x;
  if (!gather(c, r.begin, r.end, x))
    return false;
  const auto fn = static_cast<ScanFn>(c.task.fn);
  const auto dtype = static_cast<DType>(c.task.dtype);
  const bool exclusive = c.task.flags & program::kExclusive;
  std::vector<ref::Expected> local(x.size());
  ref::scan(fn, false, std::span<const T>(x), std::span<ref::Expected>(local));
  const ScanCombine combine{fn, dtype};
  std::uint32_t prefix = combine.identity();
  if (c.task.num_tiles > 1) {
    const std::uint32_t own = dtype == DType::f32 ? f32_bits(local.back().value) : i32_bits(local.back().value);
    auto* words = reinterpret_cast<std::uint64_t*>(program::Arena{c.view.state, c.view.layout}.at(c.task.scratch));
    if (!protocol::lookback_prefix(c.site(), tile.task, words, c.task.num_tiles, tile.index, c.params.epoch, own,
                                   combine.identity(), combine, prefix))
      return false;
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    // Inclusive: prefix (+) local[i]; exclusive: prefix (+) local[i - 1], the prefix itself for i == 0.
    const bool first = exclusive && i == 0;
    const double loc = first ? 0.0 : local[exclusive ? i - 1 : i].value;
    std::uint32_t bits;
    if (dtype == DType::f32) {
      const double p = bits_f32(prefix);
      bits = first ? prefix : f32_bits(fn == ScanFn::sum ? p + loc : std::max(p, loc));
    } else {
      bits = first ? prefix : combine(prefix, i32_bits(loc));
    }
    store_bits(c, r.begin + static_cast<std::int64_t>(i), bits);
  }
  return true;
}

template <class T> bool scan_rows(const TileCtx& c) {
  const program::ItemRange r = program::tile_items(c.task, c.view.tiles[c.tile].index);
  const auto fn = static_cast<ScanFn>(c.task.fn);
  const bool exclusive = c.task.flags & program::kExclusive;
  const bool is_f32 = c.task.dtype == static_cast<std::uint32_t>(DType::f32);
  std::vector<T> row;
  std::vector<ref::Expected> out(static_cast<std::size_t>(c.task.cols));
  for (std::int64_t i = r.begin; i < r.end; ++i) {
    if (!gather(c, i * c.task.cols, (i + 1) * c.task.cols, row))
      return false;
    ref::scan(fn, exclusive, std::span<const T>(row), std::span<ref::Expected>(out));
    for (std::int64_t j = 0; j < c.task.cols; ++j)
      store_bits(c, i * c.task.cols + j, is_f32 ? f32_bits(out[j].value) : i32_bits(out[j].value));
  }
  return true;
}

// ---- softmax -----------------------------------------------------------------------------------------------

bool softmax_rows(const TileCtx& c) {
  const program::ItemRange r = program::tile_items(c.task, c.view.tiles[c.tile].index);
  const bool log = c.task.flags & program::kLogSoftmax;
  std::vector<float> row;
  std::vector<ref::Expected> out(static_cast<std::size_t>(c.task.cols));
  for (std::int64_t i = r.begin; i < r.end; ++i) {
    if (!gather(c, i * c.task.cols, (i + 1) * c.task.cols, row))
      return false;
    ref::softmax(row, log, out);
    for (std::int64_t j = 0; j < c.task.cols; ++j)
      store_bits(c, i * c.task.cols + j, f32_bits(out[j].value));
  }
  return true;
}

// ---- map (kernels/map.hpp): the device's single-precision arithmetic, so both executors round alike ----------

bool map(const TileCtx& c) {
  const program::ItemRange r = program::tile_items(c.task, c.view.tiles[c.tile].index);
  const kernels::MapParams p{bits_f32(c.task.consts[0]), bits_f32(c.task.consts[1]), bits_f32(c.task.consts[2]),
                             bits_f32(c.task.consts[3])};
  std::vector<float> x;
  if (!gather(c, r.begin, r.end, x))
    return false;
  kernels::with_map_fn(static_cast<MapFn>(c.task.fn), [&]<MapFn F>() {
    for (std::int64_t i = 0; i < r.size(); ++i)
      store_bits(c, r.begin + i,
                 std::bit_cast<std::uint32_t>(kernels::map_apply<F>(x[static_cast<std::size_t>(i)], p)));
  });
  return true;
}

// ---- counting ops (kernels/counting.hpp) -------------------------------------------------------------------

std::int32_t* aux_i32(const TileCtx& c) {
  return static_cast<std::int32_t*>(c.view.buffers[c.task.aux_buffer]) + c.task.aux_offset;
}

// The keys of this tile of a histogram / scatter task and their count per bin (c.task.param bins).
struct TileKeys {
  std::uint32_t index; // tile index within the task
  program::ItemRange range;
  std::vector<std::int32_t> keys;
  std::vector<std::int32_t> counts;
};

bool count_tile_keys(const TileCtx& c, TileKeys& t) {
  t.index = c.view.tiles[c.tile].index;
  t.range = program::tile_items(c.task, t.index);
  if (!gather(c, t.range.begin, t.range.end, t.keys))
    return false;
  t.counts.assign(c.task.param, 0);
  ref::histogram(t.keys, t.counts);
  return true;
}

// histogram: this tile's counts; one tile stores them, several publish a row each and the last to arrive sums
// the rows (integer sums: the order cannot change the result).
bool histogram(const TileCtx& c) {
  TileKeys t;
  if (!count_tile_keys(c, t))
    return false;
  const std::uint32_t k = t.index, bins = c.task.param;
  std::vector<std::int32_t>& counts = t.counts;
  if (c.task.num_tiles > 1) {
    const program::Arena arena{c.view.state, c.view.layout};
    auto* rows = reinterpret_cast<std::int32_t*>(arena.at(c.task.scratch));
    std::copy(counts.begin(), counts.end(), rows + std::size_t{k} * bins);
    auto* counter = reinterpret_cast<std::uint64_t*>(arena.at(c.task.counter));
    if (!protocol::arrive_is_last(counter, std::uint64_t{c.task.num_tiles} * c.params.epoch))
      return true;
    std::fill(counts.begin(), counts.end(), 0);
    for (std::uint32_t j = 0; j < c.task.num_tiles; ++j)
      for (std::uint32_t b = 0; b < bins; ++b)
        counts[b] = static_cast<std::int32_t>(static_cast<std::uint32_t>(counts[b]) +
                                              static_cast<std::uint32_t>(rows[std::size_t{j} * bins + b]));
  }
  for (std::uint32_t b = 0; b < bins; ++b)
    store_bits(c, b, static_cast<std::uint32_t>(counts[b]));
  return true;
}

// scatter: this tile's counts become row k (then its ready word); the rows of tiles < k plus the offsets give
// each bin's first position for this tile; keys are then placed in index order.
bool scatter(const TileCtx& c) {
  TileKeys t;
  if (!count_tile_keys(c, t))
    return false;
  const std::uint32_t k = t.index, bins = c.task.param;
  const std::vector<std::int32_t>& keys = t.keys;
  const program::ItemRange r = t.range;
  const std::int32_t* offsets = aux_i32(c);
  std::vector<std::int64_t> next(offsets, offsets + bins);
  if (c.task.num_tiles > 1) {
    unsigned char* scratch = program::Arena{c.view.state, c.view.layout}.at(c.task.scratch);
    auto* rows = reinterpret_cast<std::int32_t*>(scratch);
    auto* ready = reinterpret_cast<std::uint64_t*>(scratch + program::scatter_ready_words_offset(c.task));
    std::copy(t.counts.begin(), t.counts.end(), rows + std::size_t{k} * bins);
    protocol::publish_word(ready + k, c.params.epoch, 0);
    for (std::uint32_t j = 0; j < k; ++j) {
      std::uint32_t unused = 0;
      if (!protocol::wait_word(c.site(), {program::WaitKind::lookback, c.view.tiles[c.tile].task, j, c.params.epoch},
                               ready + j, c.params.epoch, unused))
        return false;
      for (std::uint32_t b = 0; b < bins; ++b)
        next[b] += rows[std::size_t{j} * bins + b];
    }
  }
  const auto out_size = static_cast<std::int64_t>(program::const_u64(c.task, 0));
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::int32_t key = keys[i];
    if (key < 0 || key >= static_cast<std::int64_t>(bins))
      continue;
    const std::int64_t pos = next[static_cast<std::size_t>(key)]++;
    if (pos >= 0 && pos < out_size)
      store_bits(c, pos, static_cast<std::uint32_t>(r.begin + static_cast<std::int64_t>(i)));
  }
  return true;
}

// select: this tile's kept elements go after every earlier tile's (the count's exclusive prefix, by the
// deterministic look-back); the last tile writes the total.
template <class T> bool select(const TileCtx& c) {
  const program::TileDesc tile = c.view.tiles[c.tile];
  const program::ItemRange r = program::tile_items(c.task, tile.index);
  std::vector<T> x;
  if (!gather(c, r.begin, r.end, x))
    return false;
  const auto cmp = static_cast<CmpFn>(c.task.param);
  const T threshold = std::bit_cast<T>(c.task.consts[0]);
  std::vector<T> kept(x.size());
  const auto own = static_cast<std::uint32_t>(ref::select(cmp, std::span<const T>(x), threshold, std::span<T>(kept)));
  std::uint32_t prefix = 0;
  if (c.task.num_tiles > 1) {
    auto* words = reinterpret_cast<std::uint64_t*>(program::Arena{c.view.state, c.view.layout}.at(c.task.scratch));
    if (!protocol::lookback_prefix(
            c.site(), tile.task, words, c.task.num_tiles, tile.index, c.params.epoch, own, 0u,
            [](std::uint32_t a, std::uint32_t b) { return a + b; }, prefix))
      return false;
  }
  for (std::uint32_t j = 0; j < own; ++j)
    store_bits(c, std::int64_t{prefix} + j, std::bit_cast<std::uint32_t>(kept[j]));
  if (tile.index + 1 == c.task.num_tiles)
    aux_i32(c)[0] = static_cast<std::int32_t>(prefix + own);
  return true;
}

template <template <class> class Op> bool by_dtype(const TileCtx& c) {
  return c.task.dtype == static_cast<std::uint32_t>(DType::i32) ? Op<std::int32_t>{}(c) : Op<float>{}(c);
}
template <class T> struct ReduceAllOp {
  bool operator()(const TileCtx& c) const { return reduce_all<T>(c); }
};
template <class T> struct ReduceRowsOp {
  bool operator()(const TileCtx& c) const { return reduce_rows<T>(c); }
};
template <class T> struct ScanAllOp {
  bool operator()(const TileCtx& c) const { return scan_all<T>(c); }
};
template <class T> struct ScanRowsOp {
  bool operator()(const TileCtx& c) const { return scan_rows<T>(c); }
};
template <class T> struct SelectOp {
  bool operator()(const TileCtx& c) const { return select<T>(c); }
};

} // namespace

bool execute_tile(const program::ProgramView& view, const program::RunParams& params, std::uint32_t worker,
                  std::uint32_t tile) {
  const TaskDesc& task = view.tasks[view.tiles[tile].task];
  const TileCtx c{view, params, worker, tile, task};
  const program::DescriptorCheck check = program::check_descriptor(
      task, view.num_buffers, view.scan_chunk, kernels::lean_max_cols(static_cast<int>(view.threads)),
      kernels::kHistogramMaxBins, kernels::kScatterMaxBins);
  if (!check.ok) {
    program::raise_bad_descriptor(view, worker, tile, static_cast<std::uint32_t>(check.field));
    return false;
  }
  switch (static_cast<Opcode>(task.opcode)) {
  case Opcode::reduce_all:
    return by_dtype<ReduceAllOp>(c);
  case Opcode::reduce_rows:
    return by_dtype<ReduceRowsOp>(c);
  case Opcode::scan_all:
    return by_dtype<ScanAllOp>(c);
  case Opcode::scan_rows:
    return by_dtype<ScanRowsOp>(c);
  case Opcode::softmax_rows:
    return softmax_rows(c);
  case Opcode::histogram:
    return histogram(c);
  case Opcode::scatter:
    return scatter(c);
  case Opcode::select:
    return by_dtype<SelectOp>(c);
  case Opcode::map:
    return map(c);
  case Opcode::noop:
    return true;
  default: {
    program::ErrorRecord e;
    e.code = static_cast<std::uint32_t>(program::ErrorCode::bad_opcode);
    e.block = worker;
    e.tile = tile;
    e.task = view.tiles[tile].task;
    e.detail = task.opcode;
    protocol::raise_error(reinterpret_cast<program::ControlBlock*>(view.state), e);
    return false;
  }
  }
}

void fill_sentinels(const program::ProgramView& view, std::uint32_t part, std::uint32_t parts) {
  for (std::uint32_t b = 0; b < view.num_buffers; ++b) {
    const std::int64_t n = view.sentinel_ranges[2 * b + 1];
    if (n <= 0)
      continue; // not a sentinel buffer
    auto* words = static_cast<std::uint32_t*>(view.buffers[b]) + view.sentinel_ranges[2 * b];
    const std::int64_t lo = n * part / parts, hi = n * (part + 1) / parts;
    for (std::int64_t i = lo; i < hi; ++i)
      protocol::atomic_ref<std::uint32_t>(words[i]).store(program::kSentinelBits, cuda::std::memory_order_relaxed);
  }
}

} // namespace gridflow::cpu
