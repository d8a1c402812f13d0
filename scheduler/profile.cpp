#include "scheduler/profile.hpp"

#include "runtime/errors.hpp"
#include "runtime/gpu_baselines.hpp"
#include "scheduler/buffer_data.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gridflow {

namespace {

void set_times(ProfileEntry& e, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  e.runs = static_cast<int>(ms.size());
  if (ms.empty())
    return;
  e.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  e.min_ms = ms.front();
  e.max_ms = ms.back();
}

} // namespace

ProfileResult profile(const Graph& graph, const ProfileOptions& o) {
  ProfileResult result;
  std::vector<HostTensor> first;
  for (SyncMode mode : kAllSyncModes)
    for (Schedule schedule : {Schedule::dynamic, Schedule::static_list}) {
      SessionOptions so = o.base;
      so.mode = mode;
      so.schedule = schedule;
      so.exec.trace = false;
      Session s(graph, so);
      if (result.device.empty())
        result.device = s.executor().describe();
      ProfileEntry e;
      e.executor = fmt::format("gridflow {} {}", to_string(mode), to_string(schedule));
      e.config = describe(so);
      s.run();
      const CheckReport check = s.check();
      e.check = check.summary();
      result.all_checked = result.all_checked && check.passed;
      if (first.empty())
        first = s.results();
      e.matches_first = bit_identical(first, s.results());
      result.all_match = result.all_match && e.matches_first;
      std::vector<double> ms;
      for (const RunResult& r : s.time(o.warmup, o.repeat))
        ms.push_back(r.elapsed_ms);
      set_times(e, ms);
      RunResult traced = s.time(0, 1, true).front();
      e.analysis = analyze_trace(s.program(), traced);
      result.traces.push_back({e.executor, s.program(), std::move(traced)});
      result.entries.push_back(std::move(e));
      if (o.baselines && o.base.backend == Backend::gpu && mode == SyncMode::flags && schedule == Schedule::dynamic) {
        BaselineTimes b;
        try {
          b = time_per_task_launches(s.executor(), o.warmup, o.repeat);
        } catch (const RuntimeError& err) {
          // A program the baseline cannot launch: report it, go on.
          result.not_run.push_back(std::string("per-task launch baselines: ") + err.what());
          continue;
        }
        ProfileEntry stream, cuda_graph;
        stream.executor = "stream: one launch per task";
        cuda_graph.executor = "CUDA graph of those launches";
        stream.config = cuda_graph.config = e.config;
        set_times(stream, b.stream_ms);
        set_times(cuda_graph, b.graph_ms);
        result.entries.push_back(std::move(stream));
        result.entries.push_back(std::move(cuda_graph));
      }
    }
  if (o.base.backend == Backend::gpu && !o.external.empty()) {
    const std::vector<HostTensor> initial = initial_data(graph, o.base.files);
    for (const ExternalBaseline& x : o.external) {
      ProfileEntry e;
      e.executor = x.name;
      try {
        set_times(e, x.time(initial, o.warmup, o.repeat));
      } catch (const RuntimeError& err) {
        result.not_run.push_back(x.name + ": " + err.what());
        continue;
      }
      result.entries.push_back(std::move(e));
    }
  }
  return result;
}

std::string profile_table(const ProfileResult& r) {
  double stream = 0, graph = 0;
  for (const ProfileEntry& e : r.entries) {
    if (e.executor.rfind("stream", 0) == 0)
      stream = e.median_ms;
    if (e.executor.rfind("CUDA graph", 0) == 0)
      graph = e.median_ms;
  }
  std::string s = fmt::format("{:<32} {:>11} {:>10} {:>10} {:>9} {:>9} {:>8}\n", "executor", "median ms", "vs stream",
                              "vs graph", "sync", "crit.path", "bits");
  for (const ProfileEntry& e : r.entries) {
    std::string sync = "", crit = "";
    if (e.analysis) {
      const Breakdown& b = e.analysis->breakdown;
      sync = fmt::format("{:.0f}%", 100.0 * (b.wait.share + b.barrier.share + b.dispatch.share));
      crit = fmt::format("{:.3f}", e.analysis->critical_path_ns * 1e-6);
    }
    s += fmt::format("{:<32} {:>11.4f} {:>10} {:>10} {:>9} {:>9} {:>8}\n", e.executor, e.median_ms,
                     stream > 0 ? fmt::format("{:.2f}x", stream / e.median_ms) : "-",
                     graph > 0 ? fmt::format("{:.2f}x", graph / e.median_ms) : "-", sync, crit,
                     e.analysis ? (e.matches_first ? "same" : "DIFFER") : "");
  }
  for (const std::string& n : r.not_run)
    s += "not run: " + n + "\n";
  // Per-tile phases of the traced run (medians over every tile; stage: over the tiles without dependencies, wait:
  // over the tiles with some; "-" where there are none).
  const auto median_or_dash = [](const EventStats& st) {
    return st.count ? fmt::format("{:.3f}", st.median_ns * 1e-3) : std::string("-");
  };
  s += fmt::format("\n{:<32} {:>9} {:>9} {:>9} {:>9} {:>9}   (per-tile medians of the traced run, us)\n", "executor",
                   "claim", "stage", "wait", "body", "signal");
  for (const ProfileEntry& e : r.entries)
    if (e.analysis)
      s +=
          fmt::format("{:<32} {:>9.3f} {:>9} {:>9} {:>9.3f} {:>9.3f}\n", e.executor, e.analysis->claim.median_ns * 1e-3,
                      median_or_dash(e.analysis->stage), median_or_dash(e.analysis->dependency_wait),
                      e.analysis->body.median_ns * 1e-3, e.analysis->signal.median_ns * 1e-3);
  const bool polled = std::any_of(r.traces.begin(), r.traces.end(),
                                  [](const ProfiledTrace& t) { return t.program.mode == SyncMode::sentinel; });
  if (polled)
    s += "sentinel: a tile polls its inputs inside the body, so its body includes the wait for them (no wait "
         "column)\n";
  return s;
}

} // namespace gridflow
