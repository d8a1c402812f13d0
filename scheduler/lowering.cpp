#include "scheduler/lowering.hpp"

#include "kernels/counting.hpp"
#include "kernels/tile_shapes.hpp"
#include "runtime/checked_math.hpp"
#include "runtime/forwarding.hpp"
#include "runtime/lean_program.hpp"
#include "runtime/op_traits.hpp"
#include "runtime/protocol.hpp"
#include "runtime/tiles.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/op_kinds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <queue>

namespace gridflow {
namespace {

using program::DepDesc;
using program::DepKind;
using program::Opcode;
using program::TaskDesc;
using program::TileDesc;

constexpr std::uint64_t kLine = program::kLine;
static_assert(kMaxTiles < program::kNoTile && kMaxDeps < program::kNoTile, "ids stay clear of kNoTile");

using checked::ceil_div;
std::uint64_t align_line(std::uint64_t x) {
  return ceil_div(x, kLine) * kLine;
}

// Every TilePolicy field in a range where the tile arithmetic cannot overflow (items <= kMaxBufferElements,
// grid blocks < 2^32): an out-of-range policy (from the API or the command line) is refused by name.
void validate_policy(const TilePolicy& p) {
  auto need = [](const char* field, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      throw GraphError(fmt::format("tile policy: {} = {}: must be in [{}, {}]", field, v, lo, hi));
  };
  need("reduce_min_tile", p.reduce_min_tile, 1, kMaxBufferElements);
  need("row_tile_elements", p.row_tile_elements, 1, kMaxBufferElements);
  need("short_softmax_tile_elements", p.short_softmax_tile_elements, 1, kMaxBufferElements);
  need("max_tile_elements", p.max_tile_elements, 1, kMaxBufferElements);
  need("waves", p.waves, 1, 1024);
  need("scan_items_per_thread", p.scan_items_per_thread, 1, 64);
  need("scan_chunks_per_tile", p.scan_chunks_per_tile, 1, 64);
}

// Tile size in items (elements for whole-range ops, rows for row ops) by the TilePolicy.
std::int64_t tile_size_for(const TaskDesc& d, const LoweringOptions& o) {
  const TilePolicy& p = o.tiles;
  const std::int64_t items = program::task_items(d);
  const std::int64_t spread = std::int64_t{o.grid_blocks} * p.waves;
  switch (static_cast<Opcode>(d.opcode)) {
  case Opcode::reduce_all:
  case Opcode::map: {
    const std::int64_t want = std::max(p.reduce_min_tile, ceil_div(std::max<std::int64_t>(items, 1), spread));
    return std::min(ceil_div(want, 1024) * 1024, std::max(p.max_tile_elements, p.reduce_min_tile));
  }
  case Opcode::scan_all:
  case Opcode::select: {
    // Several chunks per tile once the task has them to spare: one look-back per tile instead of per chunk. A
    // select tile also fits the copy ring, so its second pass reads the tile from shared memory.
    const std::int64_t chunk = std::int64_t{o.threads_per_block} * p.scan_items_per_thread;
    const std::int64_t chunks = ceil_div(std::max<std::int64_t>(items, 1), chunk * spread);
    std::int64_t most = std::max<std::uint32_t>(p.scan_chunks_per_tile, 1);
    if (d.opcode == static_cast<std::uint32_t>(Opcode::select))
      most = std::clamp<std::int64_t>(kernels::stream_ring_bytes(static_cast<int>(o.threads_per_block)) / (chunk * 4),
                                      1, most);
    return chunk * std::clamp<std::int64_t>(chunks, 1, most);
  }
  case Opcode::histogram:
  case Opcode::scatter: {
    // At most about one tile per block: the histogram's last tile folds one count row per tile, and each scatter
    // tile folds the rows of every earlier tile.
    const std::int64_t want =
        std::max(kernels::kCountingMinTile, ceil_div(std::max<std::int64_t>(items, 1), std::int64_t{o.grid_blocks}));
    return ceil_div(want, 1024) * 1024;
  }
  default: {
    const bool short_softmax =
        d.opcode == static_cast<std::uint32_t>(Opcode::softmax_rows) && d.cols <= kernels::kShortRowMaxCols;
    const std::int64_t target = short_softmax ? p.short_softmax_tile_elements : p.row_tile_elements;
    const std::int64_t by_size = std::max<std::int64_t>(1, target / std::max<std::int64_t>(d.cols, 1));
    const std::int64_t by_spread = std::max<std::int64_t>(1, ceil_div(items, spread));
    return std::min(by_size, by_spread);
  }
  }
}

// Absolute element range [first, last) of the buffer that tile k reads / writes.
struct Footprint {
  std::int64_t first;
  std::int64_t last;
};
Footprint tile_input(const TaskDesc& t, std::uint32_t k) {
  const program::ItemRange r = program::tile_items(t, k);
  const std::int64_t w = program::input_per_item(t);
  return {t.in_offset + r.begin * w, t.in_offset + r.end * w};
}

// Producer tiles [lo, hi) whose outputs overlap [first, last) of the producer's output buffer.
std::pair<std::uint32_t, std::uint32_t> producer_tiles(const TaskDesc& p, Footprint f) {
  const std::int64_t w = p.tile_size * program::output_per_item(p);
  const std::int64_t out_end = p.out_offset + program::task_items(p) * program::output_per_item(p);
  const std::int64_t first = std::max(f.first, p.out_offset);
  const std::int64_t last = std::min(f.last, out_end);
  if (first >= last || w <= 0)
    return {0, 0};
  return {static_cast<std::uint32_t>((first - p.out_offset) / w),
          static_cast<std::uint32_t>((last - 1 - p.out_offset) / w + 1)};
}

bool sentinel_eligible(const Graph& g, const Analysis& a, std::uint32_t task) {
  const ResolvedView& out = a.out[task];
  const Buffer& b = g.buffers()[out.buffer];
  return !kind_traits(g.tasks()[task].op).counting && b.dtype == DType::f32 &&
         std::holds_alternative<std::monostate>(b.init) && a.writers[out.buffer] == 1 &&
         a.in[task].buffer != out.buffer;
}

// Per device task, 1 when no other task depends on it in the graph (a sink: nobody reads or overwrites what it
// writes after it), whatever the mode records of that dependency in the program (sentinel mode polls inputs instead).
std::vector<char> sink_tasks(const LoweredProgram& p, const Analysis& a) {
  std::vector<char> graph_sink(a.deps.size(), 1);
  for (const std::vector<Dependency>& deps : a.deps)
    for (const Dependency& d : deps)
      graph_sink[d.producer] = 0;
  std::vector<char> sink(p.tasks.size(), 0);
  for (std::size_t t = 0; t < p.tasks.size(); ++t)
    sink[t] = graph_sink.at(p.tasks[t].graph_task);
  return sink;
}

// The device tasks in a topological order of the program's edges (pred_tasks) that takes the lowest graph
// declaration index among the tasks ready at each step (Kahn's algorithm): the graph's own order wherever its edges
// allow it. Placed in this order, a DAG's step follows, on its rows' blocks, the step it reads (so its row is
// forwarded on chip where that step wrote it last), not the other tasks of its level.
std::vector<std::uint32_t> graph_task_order(const LoweredProgram& p) {
  const std::uint32_t n = static_cast<std::uint32_t>(p.tasks.size());
  std::vector<std::uint32_t> missing(n, 0), order;
  std::vector<std::vector<std::uint32_t>> succ(n);
  for (std::uint32_t t = 0; t < n; ++t)
    for (std::uint32_t k = p.pred_begin[t]; k < p.pred_begin[t + 1]; ++k) {
      succ[p.pred_tasks[k]].push_back(t);
      ++missing[t];
    }
  using Ready = std::pair<std::uint32_t, std::uint32_t>; // (graph index, device task)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (std::uint32_t t = 0; t < n; ++t)
    if (missing[t] == 0)
      ready.push({p.tasks[t].graph_task, t});
  order.reserve(n);
  while (!ready.empty()) {
    const std::uint32_t t = ready.top().second;
    ready.pop();
    order.push_back(t);
    for (const std::uint32_t s : succ[t])
      if (--missing[s] == 0)
        ready.push({p.tasks[s].graph_task, s});
  }
  if (order.size() != n) // analysis refuses cyclic graphs, so the program's edges form a DAG
    throw GraphError(fmt::format("graph-order lists: only {} of {} tasks could be ordered (a cycle)", order.size(), n));
  return order;
}

// Static schedule: list scheduling by estimated finish time, the tiles taken task by task in `order` (a topological
// order of the device tasks; level modes: device order, which is level-major), each task's in tile order. A block that
// ran a producer tile saves the cross-SM hop; a block that ran every producer tile saves the wait and signal steps as
// well (the tile needs no wait there, elide_local_dependencies), so a tile leaves its producers' block only where
// another block finishes it earlier by more than those steps cost. That keeps chains of row tiles, and the row-wise
// DAGs of independent rows, on one block each: a spare block with a near-equal estimate does not take a row's tile.
//
// With `sink` (dataflow modes; sink_tasks), the tiles of sink tasks (nothing waits for them, such as a sum beside a
// chain) are placed after every other tile, at the end of the lists, so they take spare blocks instead of stalling a
// chain between two of its steps (lower() keeps graph order where they would mostly end busy blocks:
// sinks_mostly_spare). Every tile still waits only for tiles placed before it (a sink's producers in other graph
// tasks are no sinks; among the sinks, tiles keep the placement order, in which every wait points back), and every list
// is in placement order, so the tile placed first among those not finished can always run: no deadlock.
void schedule_static(LoweredProgram& p, const std::vector<char>& sink, const std::vector<std::uint32_t>& order) {
  constexpr double kTileOverheadNs = 300.0, kNsPerByte = 0.04, kHopNs = 700.0, kBarrierNs = 1000.0,
                   kWaitStepsNs = 300.0;
  const std::uint32_t blocks = p.grid_blocks;
  std::vector<double> free_at(blocks, 0.0), finish(p.tiles.size(), 0.0), task_finish(p.tasks.size(), 0.0);
  std::vector<std::uint32_t> block_of(p.tiles.size(), 0);
  std::vector<std::vector<std::uint32_t>> lists(blocks);
  const bool levels = is_level_mode(p.mode);
  double level_start = 0.0, level_end = 0.0;
  std::uint32_t level = 0;
  const auto place = [&](std::uint32_t g) {
    const TileDesc& tile = p.tiles[g];
    const TaskDesc& task = p.tasks[tile.task];
    while (levels && g >= p.level_begin[level + 1]) {
      ++level;
      level_start = level_end + kBarrierNs;
    }
    const program::ItemRange r = program::tile_items(task, tile.index);
    const double bytes =
        4.0 * static_cast<double>(r.size()) * (program::input_per_item(task) + program::output_per_item(task));
    const double cost = kTileOverheadNs + kNsPerByte * bytes;
    // Earliest start on any block, and on each block that ran a producer tile.
    double ready_any = level_start;
    std::vector<std::uint32_t> local; // blocks that ran a producer tile
    for (std::uint32_t d = tile.dep_first; d < tile.dep_first + tile.dep_count; ++d) {
      const DepDesc& dep = p.deps[d];
      if (dep.kind == static_cast<std::uint32_t>(DepKind::task)) {
        ready_any = std::max(ready_any, task_finish[dep.task] + kHopNs);
      } else {
        for (std::uint32_t k = dep.tile_begin; k < dep.tile_end; ++k) {
          const std::uint32_t pg = p.tasks[dep.task].first_tile + k;
          ready_any = std::max(ready_any, finish[pg] + kHopNs);
          local.push_back(block_of[pg]);
        }
      }
    }
    // Candidates: the block free first (every producer a hop away) and each block that ran a producer tile; each
    // scored by its start plus the wait steps where the tile still waits for producer tiles there (a whole-task
    // dependency waits on every block alike).
    std::uint32_t best = static_cast<std::uint32_t>(std::min_element(free_at.begin(), free_at.end()) - free_at.begin());
    double best_start = std::max(free_at[best], ready_any);
    double best_score = best_start + (local.empty() ? 0.0 : kWaitStepsNs);
    for (const std::uint32_t b : local) {
      // On block b the hop from its own producer tiles disappears; other producers still cost the hop.
      double ready_b = level_start;
      bool waits = false;
      for (std::uint32_t d = tile.dep_first; d < tile.dep_first + tile.dep_count; ++d) {
        const DepDesc& dep = p.deps[d];
        if (dep.kind == static_cast<std::uint32_t>(DepKind::task))
          ready_b = std::max(ready_b, task_finish[dep.task] + kHopNs);
        else
          for (std::uint32_t k = dep.tile_begin; k < dep.tile_end; ++k) {
            const std::uint32_t pg = p.tasks[dep.task].first_tile + k;
            waits = waits || block_of[pg] != b;
            ready_b = std::max(ready_b, finish[pg] + (block_of[pg] == b ? 0.0 : kHopNs));
          }
      }
      const double start = std::max(free_at[b], ready_b);
      const double score = start + (waits ? kWaitStepsNs : 0.0);
      if (score < best_score) {
        best_score = score;
        best_start = start;
        best = b;
      }
    }
    block_of[g] = best;
    finish[g] = best_start + cost;
    free_at[best] = finish[g];
    task_finish[tile.task] = std::max(task_finish[tile.task], finish[g]);
    level_end = std::max(level_end, finish[g]);
    lists[best].push_back(g);
  };
  for (const bool sinks : {false, true})
    for (const std::uint32_t t : order)
      if ((sink[t] != 0) == sinks)
        for (std::uint32_t g = p.tasks[t].first_tile; g < p.tasks[t].first_tile + p.tasks[t].num_tiles; ++g)
          place(g);
  p.block_begin.assign(1, 0);
  p.block_tiles.clear();
  for (const auto& l : lists) {
    p.block_tiles.insert(p.block_tiles.end(), l.begin(), l.end());
    p.block_begin.push_back(static_cast<std::uint32_t>(p.block_tiles.size()));
  }
}

// Whether at least half of the sink tiles (`sink`: sink_tasks) sit on blocks that run no other tile. Placed last, a
// sink tile pays off on a spare block; at the end of a busy block it loses its forwarded input, and a sum's partial
// tiles then arrive on its counter all at once, so a program whose sinks mostly land there keeps graph order.
bool sinks_mostly_spare(const LoweredProgram& p, const std::vector<char>& sink) {
  std::size_t spare = 0, total = 0;
  for (std::uint32_t b = 0; b + 1 < p.block_begin.size(); ++b) {
    bool busy = false;
    std::size_t sinks = 0;
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i) {
      const bool s = sink[p.tiles[p.block_tiles[i]].task] != 0;
      sinks += s ? 1 : 0;
      busy = busy || !s;
    }
    total += sinks;
    spare += busy ? 0 : sinks;
  }
  return 2 * spare >= total;
}

// Static schedule: a tile-range dependency whose producer tiles all run on the consumer's own block needs no
// wait: every producer is placed before its consumer and the block runs its list in order, so they ran earlier, and the
// block barrier between two tiles orders their stores before the consumer's loads. Dropped here; ranges with nothing to
// drop stay shared between tiles.
void elide_local_dependencies(LoweredProgram& p) {
  std::vector<std::uint32_t> block_of(p.tiles.size(), 0);
  for (std::uint32_t b = 0; b < p.grid_blocks; ++b)
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i)
      block_of[p.block_tiles[i]] = b;
  auto local = [&](const DepDesc& dep, std::uint32_t consumer) {
    if (dep.kind != static_cast<std::uint32_t>(DepKind::tiles))
      return false;
    const std::uint32_t first = p.tasks[dep.task].first_tile;
    for (std::uint32_t k = dep.tile_begin; k < dep.tile_end; ++k)
      if (block_of[first + k] != block_of[consumer])
        return false;
    return true;
  };
  std::vector<DepDesc> kept;
  kept.reserve(p.deps.size());
  p.local_begin.assign(1, 0);
  p.local_deps.clear();
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> moved; // untouched ranges: old -> new first
  for (std::uint32_t g = 0; g < p.tiles.size(); ++g) {
    TileDesc& t = p.tiles[g];
    bool any_local = false;
    for (std::uint32_t d = t.dep_first; d < t.dep_first + t.dep_count; ++d)
      any_local = any_local || local(p.deps[d], g);
    if (!any_local) {
      const auto [it, fresh] = moved.try_emplace({t.dep_first, t.dep_count}, static_cast<std::uint32_t>(kept.size()));
      if (fresh)
        kept.insert(kept.end(), p.deps.begin() + t.dep_first, p.deps.begin() + t.dep_first + t.dep_count);
      t.dep_first = it->second;
    } else {
      const std::uint32_t first = static_cast<std::uint32_t>(kept.size());
      for (std::uint32_t d = t.dep_first; d < t.dep_first + t.dep_count; ++d)
        (local(p.deps[d], g) ? p.local_deps : kept).push_back(p.deps[d]);
      t.dep_first = first;
      t.dep_count = static_cast<std::uint32_t>(kept.size()) - first;
    }
    p.local_begin.push_back(static_cast<std::uint32_t>(p.local_deps.size()));
  }
  p.deps = std::move(kept);
  if (p.local_deps.empty())
    p.local_begin.clear();
}

// On-chip forwarding (static schedule): tile g reads exactly the row that the latest tile before it on its block's
// list to write whole rows wrote (runtime/forwarding.hpp: entries between that write none leave it in registers), and
// that tile's task is g's task's only producer (its only RAW dependency), so nothing else wrote the row between them:
// the lean megakernel keeps the row in registers instead of reading it back. The producer is a lean row tile of one
// row writing whole rows or a lean look-back tile; the consumer a lean row tile of one row, or a lean partial or
// look-back tile, whose input elements are exactly the producer's row (runtime/forwarding.hpp).
void assign_forwarding(LoweredProgram& p, const Analysis& a) {
  p.forwarded.clear();
  if (p.block_begin.empty())
    return;
  p.forwarded.assign(p.tiles.size(), 0);
  const int threads = static_cast<int>(p.threads_per_block);
  auto one_raw_producer = [&](const TaskDesc& consumer, std::uint32_t producer_graph_task) {
    std::uint32_t raw = 0;
    bool found = false;
    for (const Dependency& d : a.deps[consumer.graph_task])
      if (d.hazards & kHazardRaw) {
        ++raw;
        found = found || d.producer == producer_graph_task;
      }
    return raw == 1 && found;
  };
  for_each_forward_source(p, [&](std::uint32_t i, std::uint32_t source) {
    const std::uint32_t g = p.block_tiles[i], prev = p.block_tiles[source];
    const TileDesc& ct = p.tiles[g];
    const TileDesc& pt = p.tiles[prev];
    const TaskDesc& c = p.tasks[ct.task];
    const TaskDesc& pr = p.tasks[pt.task];
    const bool row = program::lean_rows(c, threads) && program::tile_items(c, ct.index).size() == 1;
    const bool row_source = program::lean_rows(pr, threads) && !program::op_has(program::kOnePerItemOps, pr.opcode) &&
                            program::tile_items(pr, pt.index).size() == 1;
    if (!(row || program::lean_cross_tiles(c, threads)) || !(row_source || program::lean_scans(pr, threads)) ||
        c.in_buffer != pr.out_buffer)
      return;
    const ForwardedRow in = forwarded_input(c, ct.index), out = forwarded_output(pr, pt.index);
    if (in.count != out.count || in.first != out.first)
      return;
    if (!one_raw_producer(c, pr.graph_task))
      return;
    p.forwarded[g] = 1;
  });
}

} // namespace

void nonempty_lists_first(LoweredProgram& p) {
  if (p.block_begin.size() < 2)
    return;
  const std::uint32_t blocks = static_cast<std::uint32_t>(p.block_begin.size() - 1);
  std::vector<std::uint32_t> order;
  order.reserve(blocks);
  for (const bool nonempty : {true, false})
    for (std::uint32_t b = 0; b < blocks; ++b)
      if ((p.block_begin[b] < p.block_begin[b + 1]) == nonempty)
        order.push_back(b);
  std::vector<std::uint32_t> begin{0}, tiles;
  tiles.reserve(p.block_tiles.size());
  for (const std::uint32_t b : order) {
    tiles.insert(tiles.end(), p.block_tiles.begin() + p.block_begin[b], p.block_tiles.begin() + p.block_begin[b + 1]);
    begin.push_back(static_cast<std::uint32_t>(tiles.size()));
  }
  p.block_begin = std::move(begin);
  p.block_tiles = std::move(tiles);
}

void assign_signal_flags(LoweredProgram& p) {
  for (TaskDesc& t : p.tasks)
    t.flags &= ~(program::kSignalTiles | program::kSignalCounter);
  for (const DepDesc& dep : p.deps)
    p.tasks[dep.task].flags |=
        dep.kind == static_cast<std::uint32_t>(DepKind::task) ? program::kSignalCounter : program::kSignalTiles;
}

void assign_state_layout(LoweredProgram& p) {
  // Control block, claim tickets (dataflow + one per level), task counters, tile flags, barrier, then per-task
  // scratch: reduce_all partials and arrival counter, scan_all look-back words.
  program::StateLayout& L = p.layout;
  const std::uint64_t levels = p.level_begin.empty() ? 1 : p.level_begin.size() - 1;
  std::uint64_t at = sizeof(program::ControlBlock);
  L.claim = at;
  at += kLine * (1 + levels);
  L.task_done = at;
  at += kLine * p.tasks.size();
  L.tile_flags = p.uses_tile_flags ? at : 0;
  if (p.uses_tile_flags)
    at += kLine * p.tiles.size();
  L.barrier = at;
  at += kLine;
  L.scratch = at;
  for (TaskDesc& d : p.tasks) {
    if (d.num_tiles <= 1)
      continue;
    switch (program::op_traits(d.opcode).scratch) {
    case program::Scratch::none:
      break;
    case program::Scratch::partials:
      d.counter = at;
      at += kLine;
      d.scratch = at;
      at = align_line(at + sizeof(program::Partial) * d.num_tiles);
      break;
    case program::Scratch::lookback:
      d.scratch = at;
      at = align_line(at + 8ull * protocol::lookback_words(d.num_tiles));
      break;
    case program::Scratch::count_rows:
      d.counter = at;
      at += kLine;
      d.scratch = at;
      at = align_line(at + 4ull * d.param * d.num_tiles);
      break;
    case program::Scratch::count_rows_ready: // count rows, then one ready word per tile
      d.scratch = at;
      at = align_line(at + program::scatter_ready_words_offset(d) + 8ull * d.num_tiles);
      break;
    }
  }
  L.total = at;
}

namespace {

void validate_options(const LoweringOptions& o) {
  if (o.grid_blocks == 0)
    throw GraphError("lowering: grid_blocks must be >= 1");
  if (o.threads_per_block == 0 || o.threads_per_block % 32 != 0 || o.threads_per_block > 1024)
    throw GraphError(
        fmt::format("lowering: threads_per_block = {}: must be a multiple of 32 in [32, 1024]", o.threads_per_block));
  if (o.grid_blocks > kMaxGridBlocks)
    throw GraphError(fmt::format("lowering: grid_blocks = {}: must be at most {}", o.grid_blocks, kMaxGridBlocks));
  validate_policy(o.tiles);
}

// The descriptor of graph task gi (its tile count not yet set): opcode, the op's own fields, views, shape, tiling.
TaskDesc describe_task(const Graph& graph, const Analysis& a, std::uint32_t gi, const LoweringOptions& o) {
  const Task& t = graph.tasks()[gi];
  const ResolvedView& in = a.in[gi];
  const ResolvedView& out = a.out[gi];
  const OpKindTraits& kind = kind_traits(t.op);
  TaskDesc d;
  d.opcode = static_cast<std::uint32_t>(kind.lower(t, in));
  d.dtype = static_cast<std::uint32_t>(graph.buffers()[in.buffer].dtype);
  kind.encode({graph, t, in, out, a.aux[gi] ? &*a.aux[gi] : nullptr}, d);
  d.in_buffer = in.buffer;
  d.out_buffer = out.buffer;
  d.in_offset = in.offset;
  d.out_offset = out.offset;
  if (a.aux[gi]) {
    d.aux_buffer = a.aux[gi]->buffer;
    d.aux_offset = static_cast<std::uint64_t>(a.aux[gi]->offset);
  }
  const bool row_op = program::is_row_op(d.opcode);
  d.rows = row_op ? in.rows : 1;
  d.cols = row_op ? in.cols : in.elements();
  // A whole-range reduce or scan that fits one lean row tile runs as that one row (runtime/tiles.hpp: lean_rows): one
  // load per element into registers, no bulk copy, no partials to fold. Its elements are contiguous like a row's.
  if (d.cols >= 1 && d.cols <= kernels::lean_max_cols(static_cast<int>(o.threads_per_block))) {
    if (d.opcode == static_cast<std::uint32_t>(Opcode::reduce_all))
      d.opcode = static_cast<std::uint32_t>(Opcode::reduce_rows);
    else if (d.opcode == static_cast<std::uint32_t>(Opcode::scan_all))
      d.opcode = static_cast<std::uint32_t>(Opcode::scan_rows);
  }
  d.level = a.level[gi];
  d.graph_task = gi;
  d.tile_size = tile_size_for(d, o);
  return d;
}

// Whether whole-range reduce or scan `d` can be cut into lean tiles that share state across tiles (lean partials,
// lean look-back scans) under `o`'s tile policy: more elements than one lean row (fewer run as that row already), at
// most one lean row of tiles (a scan's look-back then has two levels; longer scans keep their chunked tiles, each
// many lean rows long), and lean_partials or lean_scans (runtime/tiles.hpp) holds once it is cut.
bool lean_cross_tiles_fit(const TaskDesc& d, const LoweringOptions& o) {
  const int threads = static_cast<int>(o.threads_per_block);
  const std::int64_t lean_cols = kernels::lean_max_cols(threads);
  const bool reduce = d.opcode == static_cast<std::uint32_t>(Opcode::reduce_all) && o.tiles.lean_partials;
  const bool scan = d.opcode == static_cast<std::uint32_t>(Opcode::scan_all) && o.tiles.lean_scans;
  if (!(reduce || scan) || d.cols <= lean_cols || d.cols > lean_cols * lean_cols)
    return false;
  TaskDesc cut = d;
  cut.tile_size = lean_cols;
  cut.num_tiles = static_cast<std::uint32_t>(std::min<std::int64_t>(ceil_div(d.cols, lean_cols), kMaxTiles));
  return program::lean_cross_tiles(cut, threads);
}

// A program of lean row tiles beside its whole-range reduces and scans gets those as lean partial or look-back tiles,
// so the lean megakernel runs all of it (one such task beside them would otherwise send every tile through the
// general megakernel). In any other program, and in one of such reduces and scans alone, they keep their streamed
// tiles (tile_size_for), which move more bytes per tile.
void cut_lean_cross_tiles(std::vector<TaskDesc>& tasks, const LoweringOptions& o) {
  const int threads = static_cast<int>(o.threads_per_block);
  bool cross = false, rows = false;
  for (const TaskDesc& d : tasks) {
    if (lean_cross_tiles_fit(d, o))
      cross = true;
    else if (program::lean_rows(d, threads))
      rows = true;
    else
      return;
  }
  if (cross && rows)
    for (TaskDesc& d : tasks)
      if (lean_cross_tiles_fit(d, o))
        d.tile_size = kernels::lean_max_cols(threads);
}

// Step 1: the tasks in topological order, each cut into tiles (at most kMaxTiles in all); returns each graph
// task's device task.
std::vector<std::uint32_t> lower_tasks(const Graph& graph, const Analysis& a, const LoweringOptions& o,
                                       LoweredProgram& p) {
  const std::size_t n = graph.tasks().size();
  std::vector<std::uint32_t> device_of(n);
  std::vector<TaskDesc> described;
  described.reserve(n);
  for (std::uint32_t pos = 0; pos < n; ++pos)
    described.push_back(describe_task(graph, a, a.order[pos], o));
  cut_lean_cross_tiles(described, o);
  std::uint64_t tiles_total = 0;
  for (std::uint32_t pos = 0; pos < n; ++pos) {
    const std::uint32_t gi = a.order[pos];
    TaskDesc& d = described[pos];
    std::int64_t tiles = ceil_div(program::task_items(d), std::max<std::int64_t>(d.tile_size, 1));
    // Ops that write something even for an empty input (a value, zero counts, a zero count) need a tile.
    if (program::op_has(program::kEmptyWriterOps, d.opcode))
      tiles = std::max<std::int64_t>(tiles, 1);
    d.first_tile = static_cast<std::uint32_t>(tiles_total);
    d.num_tiles = static_cast<std::uint32_t>(tiles);
    tiles_total += static_cast<std::uint64_t>(tiles);
    if (tiles_total > kMaxTiles)
      throw_task_error(
          graph.tasks()[gi].name, "in", fmt::format("{} elements", a.in[gi].elements()),
          fmt::format("the program would hold {} tiles, more than the limit of {}", tiles_total, kMaxTiles));
    device_of[gi] = pos;
    p.tasks.push_back(d);
    p.task_names.push_back(graph.tasks()[gi].name);
  }
  p.tiles.reserve(tiles_total);
  // The graph's edges in device-task numbering (every mode), for analysis.
  p.pred_begin.push_back(0);
  for (std::uint32_t pos = 0; pos < n; ++pos) {
    for (const Dependency& dep : a.deps[a.order[pos]])
      p.pred_tasks.push_back(device_of[dep.producer]);
    p.pred_begin.push_back(static_cast<std::uint32_t>(p.pred_tasks.size()));
  }
  return device_of;
}

// Step 2 (sentinel mode): sentinel outputs are f32, not initialised, of a single writer that does not read its own
// buffer; returns which graph tasks write one.
std::vector<bool> mark_sentinel_outputs(const Graph& graph, const Analysis& a,
                                        const std::vector<std::uint32_t>& device_of, LoweredProgram& p) {
  std::vector<bool> sentinel_task(graph.tasks().size(), false);
  if (p.mode != SyncMode::sentinel)
    return sentinel_task;
  for (std::uint32_t gi = 0; gi < graph.tasks().size(); ++gi)
    if (sentinel_eligible(graph, a, gi)) {
      sentinel_task[gi] = true;
      BufferInfo& b = p.buffers[a.out[gi].buffer];
      b.sentinel = true;
      b.sentinel_offset = a.out[gi].offset;    // only what the writer produces: elements nobody writes keep
      b.sentinel_count = a.out[gi].elements(); // their contents
      p.tasks[device_of[gi]].flags |= program::kSentinelOutput;
    }
  return sentinel_task;
}

// Step 3: every tile and its dependency list (level modes need none: the barrier between levels orders them).
// A dependency waits on the producer's task counter, or on the producer tiles under the tile's input where the
// producer's outputs are tile-local; a sentinel consumer polls its inputs instead.
void build_tiles_and_deps(const Graph& graph, const Analysis& a, const LoweringOptions& o,
                          const std::vector<std::uint32_t>& device_of, const std::vector<bool>& sentinel_task,
                          LoweredProgram& p) {
  const bool dataflow = !is_level_mode(o.mode);
  for (std::uint32_t pos = 0; pos < graph.tasks().size(); ++pos) {
    const std::uint32_t gi = a.order[pos];
    TaskDesc& c = p.tasks[pos];
    // Dependencies that need a counter or flags, and whether each can be per tile.
    struct Need {
      std::uint32_t producer;
      bool per_tile;
    };
    std::vector<Need> needs;
    if (dataflow)
      for (const Dependency& dep : a.deps[gi]) {
        const TaskDesc& prod = p.tasks[device_of[dep.producer]];
        // Counting ops read with plain loads only (and scatter reads a second view): they wait on counters.
        const bool counting = program::is_counting_op(c.opcode);
        if (o.mode == SyncMode::sentinel && dep.hazards == kHazardRaw && sentinel_task[dep.producer] && !counting) {
          c.flags |= program::kPollInputs; // the data is the flag
          continue;
        }
        const bool per_tile =
            o.per_tile_deps && dep.hazards == kHazardRaw && program::output_is_tile_local(prod) && !counting;
        needs.push_back({device_of[dep.producer], per_tile});
      }
    // Task-level deps are shared by every tile of the task.
    const std::uint32_t shared_first = static_cast<std::uint32_t>(p.deps.size());
    for (const Need& need : needs)
      if (!need.per_tile)
        p.deps.push_back(
            {need.producer, 0, p.tasks[need.producer].num_tiles, static_cast<std::uint32_t>(DepKind::task)});
    const std::uint32_t shared_count = static_cast<std::uint32_t>(p.deps.size()) - shared_first;
    const bool any_per_tile = std::any_of(needs.begin(), needs.end(), [](const Need& x) { return x.per_tile; });
    for (std::uint32_t k = 0; k < c.num_tiles; ++k) {
      TileDesc tile{pos, k, shared_first, shared_count};
      if (any_per_tile) {
        // Copy the shared deps next to this tile's own, so each tile's list is one contiguous range.
        tile.dep_first = static_cast<std::uint32_t>(p.deps.size());
        for (std::uint32_t s = 0; s < shared_count; ++s)
          p.deps.push_back(p.deps[shared_first + s]);
        for (const Need& need : needs) {
          if (!need.per_tile)
            continue;
          TaskDesc& prod = p.tasks[need.producer];
          const auto [lo, hi] = producer_tiles(prod, tile_input(c, k));
          if (lo >= hi)
            continue;
          if (lo == 0 && hi == prod.num_tiles) {
            p.deps.push_back({need.producer, 0, hi, static_cast<std::uint32_t>(DepKind::task)});
          } else {
            p.deps.push_back({need.producer, lo, hi, static_cast<std::uint32_t>(DepKind::tiles)});
            prod.flags |= program::kSignalTiles;
            p.uses_tile_flags = true;
          }
        }
        tile.dep_count = static_cast<std::uint32_t>(p.deps.size()) - tile.dep_first;
      }
      p.tiles.push_back(tile);
      if (p.deps.size() > kMaxDeps)
        throw_task_error(graph.tasks()[gi].name, "deps", fmt::format("{} entries", p.deps.size()),
                         fmt::format("the program would hold more than {} dependency entries", kMaxDeps));
    }
  }
}

// Step 4: where each level's tiles begin (tiles are level-major because tasks are).
void assign_levels(const Analysis& a, LoweredProgram& p) {
  p.level_begin.assign(a.num_levels + 1, 0);
  for (const TaskDesc& d : p.tasks)
    p.level_begin[d.level + 1] += d.num_tiles;
  for (std::uint32_t l = 0; l < a.num_levels; ++l)
    p.level_begin[l + 1] += p.level_begin[l];
}

} // namespace

LoweredProgram lower(const Graph& graph, const Analysis& a, const LoweringOptions& o) {
  validate_options(o);
  LoweredProgram p;
  p.mode = o.mode;
  p.schedule = o.schedule;
  p.grid_blocks = o.grid_blocks;
  p.threads_per_block = o.threads_per_block;
  p.scan_chunk = o.threads_per_block * o.tiles.scan_items_per_thread;
  for (const Buffer& b : graph.buffers())
    p.buffers.push_back({b.name, b.dtype, b.elements(), false});
  const std::vector<std::uint32_t> device_of = lower_tasks(graph, a, o, p);
  if (p.schedule == Schedule::automatic) // the rule Schedule::automatic states (runtime/config.hpp)
    p.schedule = lean_tasks(p, o.threads_per_block) ? Schedule::static_list : Schedule::dynamic;
  const std::vector<bool> sentinel_task = mark_sentinel_outputs(graph, a, device_of, p);
  build_tiles_and_deps(graph, a, o, device_of, sentinel_task, p);
  assign_levels(a, p);
  assign_state_layout(p); // step 5: the state arena
  // Level barriers one run passes (executors add their own prologue barrier where they use one).
  p.barriers_per_run = is_level_mode(o.mode) ? a.num_levels - 1 : 0;
  if (p.schedule == Schedule::static_list) {
    const std::vector<char> in_order(p.tasks.size(), 0);
    const std::vector<char> sink = o.sinks_last && !is_level_mode(o.mode) ? sink_tasks(p, a) : in_order;
    std::vector<std::uint32_t> order(p.tasks.size());
    std::iota(order.begin(), order.end(), 0u);
    if (o.graph_order && !is_level_mode(o.mode))
      order = graph_task_order(p);
    schedule_static(p, sink, order);
    if (sink != in_order && !sinks_mostly_spare(p, sink))
      schedule_static(p, in_order, order);
    elide_local_dependencies(p);
    if (o.forward)
      assign_forwarding(p, a);
  }
  assign_signal_flags(p);
  return p;
}

std::string describe(const LoweredProgram& p, bool list_tiles) {
  std::string s = fmt::format("program: {} tasks, {} tiles, {} deps, {} levels; mode {}, schedule {}, {} blocks x {} "
                              "threads; state arena {} bytes\n",
                              p.tasks.size(), p.tiles.size(), p.deps.size(), p.num_levels(), to_string(p.mode),
                              to_string(p.schedule), p.grid_blocks, p.threads_per_block, p.layout.total);
  if (!p.block_begin.empty()) {
    // Where the static placement left the protocol's work: tiles that still wait, dependencies their own block's
    // order enforces, rows forwarded on chip.
    std::size_t waiting = 0, forwarded = 0;
    for (const TileDesc& t : p.tiles)
      waiting += t.dep_count > 0;
    for (const std::uint8_t f : p.forwarded)
      forwarded += f != 0;
    s += fmt::format("static lists: {} of {} tiles wait (for other blocks' tiles or whole tasks), {} dependencies kept "
                     "by their block's order, {} rows forwarded on chip\n",
                     waiting, p.tiles.size(), p.local_deps.size(), forwarded);
  }
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const TaskDesc& d = p.tasks[i];
    s += fmt::format("  task {:>4} '{}': {} level {} tiles [{}, +{}) tile_size {} view {}x{} flags {:#x}\n", i,
                     p.task_names[i], program::op_traits(d.opcode).name, d.level, d.first_tile, d.num_tiles,
                     d.tile_size, d.rows, d.cols, d.flags);
    if (d.num_tiles > 0) {
      const TileDesc& t0 = p.tiles[d.first_tile];
      for (std::uint32_t k = t0.dep_first; k < t0.dep_first + t0.dep_count; ++k) {
        const DepDesc& dep = p.deps[k];
        s += dep.kind == static_cast<std::uint32_t>(DepKind::task)
                 ? fmt::format("         tile 0 waits for task {} ('{}')\n", dep.task, p.task_names[dep.task])
                 : fmt::format("         tile 0 waits for tiles [{}, {}) of task {} ('{}')\n", dep.tile_begin,
                               dep.tile_end, dep.task, p.task_names[dep.task]);
      }
    }
  }
  if (list_tiles && !p.block_begin.empty())
    for (std::uint32_t b = 0; b < p.grid_blocks; ++b)
      s += fmt::format("  block {:>4}: {} tiles\n", b, p.block_begin[b + 1] - p.block_begin[b]);
  return s;
}

} // namespace gridflow
