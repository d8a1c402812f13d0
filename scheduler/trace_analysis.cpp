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

} // namespace

TraceAnalysis analyze_trace(const LoweredProgram& p, const RunResult& r) {
  check_trace(p, r);
  TraceAnalysis a;
  a.blocks = r.blocks;
  std::uint64_t t0 = std::numeric_limits<std::uint64_t>::max(), t_end = 0;
  for (const auto& t : r.tiles) {
    t0 = std::min(t0, t.claim_begin);
    t_end = std::max(t_end, t.signalled);
  }
  for (const auto& b : r.barriers) {
    if (b.arrive == 0 && b.leave == 0)
      continue;
    t0 = std::min(t0, b.arrive);
    t_end = std::max(t_end, b.leave);
  }
  if (t0 == std::numeric_limits<std::uint64_t>::max())
    t0 = t_end = 0;
  a.makespan_ns = span(t0, t_end);

  // Per-block sums.
  std::vector<double> work(r.blocks), wait(r.blocks), disp(r.blocks), bar(r.blocks);
  std::vector<double> dep_waits, stages, dispatches, barrier_waits, claims, bodies, signals;
  a.tasks.resize(p.tasks.size());
  for (std::size_t t = 0; t < p.tasks.size(); ++t) {
    a.tasks[t].name = p.task_names[t];
    a.tasks[t].tiles = p.tasks[t].num_tiles;
  }
  std::vector<std::uint64_t> first_ready(p.tasks.size(), std::numeric_limits<std::uint64_t>::max()),
      last_exec(p.tasks.size(), 0);
  for (std::size_t g = 0; g < r.tiles.size(); ++g) {
    const program::TileTrace& t = r.tiles[g];
    const bool waits = tile_waits(p, g);
    const double w = span(t.ready, t.executed), q = span(t.claimed, t.ready), c = span(t.claim_begin, t.claimed),
                 sig = span(t.executed, t.signalled), d = c + (waits ? 0.0 : q) + sig;
    work[t.block] += w;
    if (waits)
      wait[t.block] += q;
    disp[t.block] += d;
    dispatches.push_back(d);
    claims.push_back(c);
    bodies.push_back(w);
    signals.push_back(sig);
    (waits ? dep_waits : stages).push_back(q);
    TaskProfile& tp = a.tasks[p.tiles[g].task];
    tp.work_ns += w;
    if (waits)
      tp.wait_ns += q;
    tp.longest_tile_ns = std::max(tp.longest_tile_ns, w);
    first_ready[p.tiles[g].task] = std::min(first_ready[p.tiles[g].task], t.ready);
    last_exec[p.tiles[g].task] = std::max(last_exec[p.tiles[g].task], t.executed);
  }
  for (std::size_t t = 0; t < p.tasks.size(); ++t)
    if (p.tasks[t].num_tiles)
      a.tasks[t].span_ns = span(first_ready[t], last_exec[t]);
  for (std::uint32_t b = 0; b < r.blocks; ++b)
    for (std::uint32_t k = 0; k < r.barriers_per_block; ++k) {
      const program::BarrierTrace& bt = r.barriers[std::size_t{b} * r.barriers_per_block + k];
      bar[b] += span(bt.arrive, bt.leave);
      barrier_waits.push_back(span(bt.arrive, bt.leave));
    }
  const double total = a.makespan_ns * r.blocks;
  auto share = [&](const std::vector<double>& v) {
    Share s;
    for (double x : v)
      s.ns += x;
    s.share = total > 0 ? s.ns / total : 0.0;
    return s;
  };
  a.breakdown.work = share(work);
  a.breakdown.wait = share(wait);
  a.breakdown.barrier = share(bar);
  a.breakdown.dispatch = share(disp);
  a.breakdown.idle.ns = std::max(0.0, total - a.breakdown.work.ns - a.breakdown.wait.ns - a.breakdown.barrier.ns -
                                          a.breakdown.dispatch.ns);
  a.breakdown.idle.share = total > 0 ? a.breakdown.idle.ns / total : 0.0;
  a.dependency_wait = event_stats(std::move(dep_waits));
  a.barrier_wait = event_stats(std::move(barrier_waits));
  a.dispatch = event_stats(std::move(dispatches));
  a.claim = event_stats(std::move(claims));
  a.stage = event_stats(std::move(stages));
  a.body = event_stats(std::move(bodies));
  a.signal = event_stats(std::move(signals));

  // Critical path: tile by tile in global (topological) order, each tile starting when the tiles it waited for
  // finished (its dependency entries; in level modes, and for sentinel-polled inputs, which have none, every tile of
  // the producer tasks) and lasting its work: the makespan with unlimited blocks and free synchronization. A
  // sentinel consumer polls inside its body, so its work counts only from when its producer tasks had executed.
  // Every term is bounded by the recorded times, so the path never exceeds the makespan.
  const bool edges = p.pred_begin.size() == p.tasks.size() + 1;
  std::vector<double> tile_finish(r.tiles.size(), 0.0), task_finish(p.tasks.size(), 0.0);
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
    a.critical_path_ns = std::max(a.critical_path_ns, tile_finish[g]);
  }
  return a;
}

std::string chrome_trace_json(const LoweredProgram& p, const RunResult& r, const std::string& title) {
  check_trace(p, r);
  using nlohmann::json;
  std::uint64_t t0 = std::numeric_limits<std::uint64_t>::max();
  for (const auto& t : r.tiles)
    t0 = std::min(t0, t.claim_begin);
  for (const auto& b : r.barriers)
    if (b.arrive)
      t0 = std::min(t0, b.arrive);
  if (t0 == std::numeric_limits<std::uint64_t>::max())
    t0 = 0;
  auto us = [t0](std::uint64_t ns) { return static_cast<double>(ns - std::min(ns, t0)) * 1e-3; };
  json events = json::array();
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
  // Flow arrows: from the producer tile that finished last to each waiting tile (one arrow per dependency).
  std::uint64_t flow = 0;
  for (std::size_t g = 0; g < p.tiles.size(); ++g) {
    const program::TileDesc& tile = p.tiles[g];
    for (std::uint32_t d = tile.dep_first; d < tile.dep_first + tile.dep_count; ++d) {
      const program::DepDesc& dep = p.deps[d];
      const program::TaskDesc& prod = p.tasks[dep.task];
      const bool whole = dep.kind == static_cast<std::uint32_t>(program::DepKind::task);
      std::uint32_t last = prod.first_tile + (whole ? 0 : dep.tile_begin);
      for (std::uint32_t k = whole ? 0 : dep.tile_begin; k < (whole ? prod.num_tiles : dep.tile_end); ++k)
        if (r.tiles[prod.first_tile + k].executed >= r.tiles[last].executed)
          last = prod.first_tile + k;
      if (prod.num_tiles == 0)
        continue;
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
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData", {{"gridflow", build_info_json()}}}}
             .dump() +
         "\n";
}

} // namespace gridflow
