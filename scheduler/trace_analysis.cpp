#include "scheduler/trace_analysis.hpp"

#include "runtime/errors.hpp"
#include "scheduler/build_info.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gridflow {

EventStats event_stats(std::vector<double> d) {
  EventStats s;
  s.count = d.size();
  if (d.empty())
    return s;
  std::sort(d.begin(), d.end());
  s.median_ns = d.size() % 2 ? d[d.size() / 2] : 0.5 * (d[d.size() / 2 - 1] + d[d.size() / 2]);
  const std::size_t p99 = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(d.size()))) - 1;
  s.p99_ns = d[std::min(p99, d.size() - 1)];
  s.max_ns = d.back();
  for (double x : d)
    s.total_ns += x;
  return s;
}

namespace {

double span(std::uint64_t a, std::uint64_t b) {
  return b >= a ? static_cast<double>(b - a) : 0.0;
}

void check_trace(const LoweredProgram& p, const RunResult& r) {
  if (r.tiles.size() != p.tiles.size())
    throw RuntimeError(fmt::format("trace holds {} tiles, the program {}", r.tiles.size(), p.tiles.size()));
  if (r.barriers.size() != std::size_t{r.blocks} * r.barriers_per_block)
    throw RuntimeError("trace: barrier records do not match blocks x barriers");
  for (std::size_t g = 0; g < r.tiles.size(); ++g)
    if (r.tiles[g].runs != 1)
      throw RuntimeError(fmt::format("trace: tile {} ran {} times", g, r.tiles[g].runs));
}

// [first, last] ns of a trace: the first claim or barrier arrival to the last signal or barrier departure (0, 0
// for a trace without records). Barrier records with no arrival time were not recorded.
struct Window {
  std::uint64_t first = 0, last = 0;
};
Window trace_window(const RunResult& r) {
  std::uint64_t first = std::numeric_limits<std::uint64_t>::max(), last = 0;
  for (const auto& t : r.tiles) {
    first = std::min(first, t.claim_begin);
    last = std::max(last, t.signalled);
  }
  for (const auto& b : r.barriers) {
    if (b.arrive == 0)
      continue;
    first = std::min(first, b.arrive);
    last = std::max(last, b.leave);
  }
  if (first == std::numeric_limits<std::uint64_t>::max())
    return {};
  return {first, last};
}

// What the tiles' records add up to: per-block sums, per-event samples, and per task its profile and when its
// first tile was ready and its last executed.
struct TileSums {
  std::vector<double> work, wait, dispatch;                                   // per block
  std::vector<double> dep_waits, stages, dispatches, claims, bodies, signals; // per tile
  std::vector<TaskProfile> tasks;
  std::vector<std::uint64_t> first_ready, last_exec; // per task
};
TileSums sum_tiles(const LoweredProgram& p, const RunResult& r) {
  TileSums s;
  s.work.assign(r.blocks, 0.0);
  s.wait.assign(r.blocks, 0.0);
  s.dispatch.assign(r.blocks, 0.0);
  s.tasks.resize(p.tasks.size());
  for (std::size_t t = 0; t < p.tasks.size(); ++t) {
    s.tasks[t].name = p.task_names[t];
    s.tasks[t].tiles = p.tasks[t].num_tiles;
  }
  s.first_ready.assign(p.tasks.size(), std::numeric_limits<std::uint64_t>::max());
  s.last_exec.assign(p.tasks.size(), 0);
  for (std::size_t g = 0; g < r.tiles.size(); ++g) {
    const program::TileTrace& t = r.tiles[g];
    const std::uint32_t task = p.tiles[g].task;
    const bool waits = tile_waits(p, g);
    const double w = span(t.ready, t.executed), q = span(t.claimed, t.ready), c = span(t.claim_begin, t.claimed),
                 sig = span(t.executed, t.signalled), d = c + (waits ? 0.0 : q) + sig;
    s.work[t.block] += w;
    if (waits)
      s.wait[t.block] += q;
    s.dispatch[t.block] += d;
    s.dispatches.push_back(d);
    s.claims.push_back(c);
    s.bodies.push_back(w);
    s.signals.push_back(sig);
    (waits ? s.dep_waits : s.stages).push_back(q);
    TaskProfile& tp = s.tasks[task];
    tp.work_ns += w;
    if (waits)
      tp.wait_ns += q;
    tp.longest_tile_ns = std::max(tp.longest_tile_ns, w);
    s.first_ready[task] = std::min(s.first_ready[task], t.ready);
    s.last_exec[task] = std::max(s.last_exec[task], t.executed);
  }
  for (std::size_t t = 0; t < p.tasks.size(); ++t)
    if (p.tasks[t].num_tiles)
      s.tasks[t].span_ns = span(s.first_ready[t], s.last_exec[t]);
  return s;
}

// Each category's sum over blocks and its share of blocks x makespan; idle is what the others leave.
Breakdown breakdown_of(const TileSums& s, const std::vector<double>& barrier, double total) {
  auto share = [total](const std::vector<double>& v) {
    Share sh;
    for (double x : v)
      sh.ns += x;
    sh.share = total > 0 ? sh.ns / total : 0.0;
    return sh;
  };
  Breakdown b;
  b.work = share(s.work);
  b.wait = share(s.wait);
  b.barrier = share(barrier);
  b.dispatch = share(s.dispatch);
  b.idle.ns = std::max(0.0, total - b.work.ns - b.wait.ns - b.barrier.ns - b.dispatch.ns);
  b.idle.share = total > 0 ? b.idle.ns / total : 0.0;
  return b;
}

// Critical path: tile by tile in global (topological) order, each tile starting when the tiles it waited for
// finished (its dependency entries; in level modes, and for sentinel-polled inputs, which have none, every tile of
// the producer tasks) and lasting its work: the makespan with unlimited blocks and free synchronization. A
// sentinel consumer polls inside its body, so its work counts only from when its producer tasks had executed.
// Every term is bounded by the recorded times, so the path never exceeds the makespan.
double critical_path(const LoweredProgram& p, const RunResult& r, const std::vector<std::uint64_t>& last_exec) {
  const bool edges = p.pred_begin.size() == p.tasks.size() + 1;
  std::vector<double> tile_finish(r.tiles.size(), 0.0), task_finish(p.tasks.size(), 0.0);
  double path = 0.0;
  for (std::size_t g = 0; g < r.tiles.size(); ++g) {
    const program::TileDesc& tile = p.tiles[g];
    const bool polled = p.tasks[tile.task].flags & program::kPollInputs;
    double start = 0.0;
    p.for_each_dependency(static_cast<std::uint32_t>(g), [&](const program::DepDesc& dep) {
      if (dep.kind == static_cast<std::uint32_t>(program::DepKind::task)) {
        start = std::max(start, task_finish[dep.task]);
      } else {
        for (std::uint32_t k = dep.tile_begin; k < dep.tile_end; ++k)
          start = std::max(start, tile_finish[p.tasks[dep.task].first_tile + k]);
      }
    });
    std::uint64_t inputs_done = r.tiles[g].ready;
    if (edges && (polled || is_level_mode(p.mode)))
      for (std::uint32_t e = p.pred_begin[tile.task]; e < p.pred_begin[tile.task + 1]; ++e) {
        start = std::max(start, task_finish[p.pred_tasks[e]]);
        if (polled)
          inputs_done = std::max(inputs_done, last_exec[p.pred_tasks[e]]);
      }
    tile_finish[g] = start + span(inputs_done, r.tiles[g].executed);
    task_finish[tile.task] = std::max(task_finish[tile.task], tile_finish[g]);
    path = std::max(path, tile_finish[g]);
  }
  return path;
}

} // namespace

TraceAnalysis analyze_trace(const LoweredProgram& p, const RunResult& r) {
  check_trace(p, r);
  TraceAnalysis a;
  a.blocks = r.blocks;
  const Window window = trace_window(r);
  a.makespan_ns = span(window.first, window.last);
  TileSums sums = sum_tiles(p, r);
  std::vector<double> barrier(r.blocks, 0.0), barrier_waits;
  for (std::uint32_t b = 0; b < r.blocks; ++b)
    for (std::uint32_t k = 0; k < r.barriers_per_block; ++k) {
      const program::BarrierTrace& bt = r.barriers[std::size_t{b} * r.barriers_per_block + k];
      barrier[b] += span(bt.arrive, bt.leave);
      barrier_waits.push_back(span(bt.arrive, bt.leave));
    }
  a.breakdown = breakdown_of(sums, barrier, a.makespan_ns * r.blocks);
  a.dependency_wait = event_stats(std::move(sums.dep_waits));
  a.barrier_wait = event_stats(std::move(barrier_waits));
  a.dispatch = event_stats(std::move(sums.dispatches));
  a.claim = event_stats(std::move(sums.claims));
  a.stage = event_stats(std::move(sums.stages));
  a.body = event_stats(std::move(sums.bodies));
  a.signal = event_stats(std::move(sums.signals));
  a.critical_path_ns = critical_path(p, r, sums.last_exec);
  a.tasks = std::move(sums.tasks);
  return a;
}

namespace {

using nlohmann::json;

// Flow arrows of a Chrome trace: from the producer tile that finished last to each waiting tile, one per
// dependency entry. `us` maps a record's ns to the trace's microseconds.
template <class Us> void add_dependency_flows(const LoweredProgram& p, const RunResult& r, Us us, json& events) {
  std::uint64_t flow = 0;
  for (std::size_t g = 0; g < p.tiles.size(); ++g) {
    const program::TileDesc& tile = p.tiles[g];
    for (std::uint32_t d = tile.dep_first; d < tile.dep_first + tile.dep_count; ++d) {
      const program::DepDesc& dep = p.deps[d];
      const program::TaskDesc& prod = p.tasks[dep.task];
      if (prod.num_tiles == 0)
        continue;
      const bool whole = dep.kind == static_cast<std::uint32_t>(program::DepKind::task);
      std::uint32_t last = prod.first_tile + (whole ? 0 : dep.tile_begin);
      for (std::uint32_t k = whole ? 0 : dep.tile_begin; k < (whole ? prod.num_tiles : dep.tile_end); ++k)
        if (r.tiles[prod.first_tile + k].executed >= r.tiles[last].executed)
          last = prod.first_tile + k;
      ++flow;
      events.push_back({{"ph", "s"},
                        {"cat", "dep"},
                        {"name", "dep"},
                        {"id", flow},
                        {"pid", 0},
                        {"tid", r.tiles[last].block},
                        {"ts", us(r.tiles[last].executed)}});
      events.push_back({{"ph", "f"},
                        {"bp", "e"},
                        {"cat", "dep"},
                        {"name", "dep"},
                        {"id", flow},
                        {"pid", 0},
                        {"tid", r.tiles[g].block},
                        {"ts", us(r.tiles[g].ready)}});
    }
  }
}

// The process name and one named thread per block ("block b (SM s)").
void add_track_names(const RunResult& r, const std::string& title, json& events) {
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", title}}}});
  std::vector<std::uint32_t> smid(r.blocks, 0);
  for (const auto& t : r.tiles)
    smid[t.block] = t.smid;
  for (std::uint32_t b = 0; b < r.blocks; ++b)
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", 0},
                      {"tid", b},
                      {"args", {{"name", fmt::format("block {} (SM {})", b, smid[b])}}}});
}

} // namespace

std::string chrome_trace_json(const LoweredProgram& p, const RunResult& r, const std::string& title) {
  check_trace(p, r);
  const std::uint64_t t0 = trace_window(r).first;
  auto us = [t0](std::uint64_t ns) { return static_cast<double>(ns - std::min(ns, t0)) * 1e-3; };
  json events = json::array();
  add_track_names(r, title, events);
  auto slice = [&](const char* cat, const std::string& name, std::uint32_t tid, std::uint64_t a, std::uint64_t z,
                   json args) {
    if (z <= a)
      return;
    events.push_back({{"ph", "X"},
                      {"cat", cat},
                      {"name", name},
                      {"pid", 0},
                      {"tid", tid},
                      {"ts", us(a)},
                      {"dur", us(z) - us(a)},
                      {"args", std::move(args)}});
  };
  for (std::size_t g = 0; g < r.tiles.size(); ++g) {
    const program::TileTrace& t = r.tiles[g];
    const std::string& task = p.task_names[t.task];
    slice("dispatch", "claim", t.block, t.claim_begin, t.claimed, json::object());
    if (tile_waits(p, g))
      slice("wait", "wait", t.block, t.claimed, t.ready, {{"tile", g}, {"task", task}});
    else
      slice("dispatch", "stage", t.block, t.claimed, t.ready, json::object());
    slice("work", task, t.block, t.ready, t.executed, {{"tile", g}, {"index", p.tiles[g].index}, {"sm", t.smid}});
    slice("dispatch", "signal", t.block, t.executed, t.signalled, json::object());
  }
  for (std::uint32_t b = 0; b < r.blocks; ++b)
    for (std::uint32_t k = 0; k < r.barriers_per_block; ++k) {
      const auto& bt = r.barriers[std::size_t{b} * r.barriers_per_block + k];
      slice("barrier", fmt::format("barrier {}", k), b, bt.arrive, bt.leave, json::object());
    }
  add_dependency_flows(p, r, us, events);
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"gridflow", build_info_json()}}}}
             .dump() +
         "\n";
}

} // namespace gridflow
