// gridflow serve-bench GRAPH: what a submission to the resident runtime costs, against what a user runs instead.
//
// In one process, in this order (nothing else runs on the device while the resident kernel does):
//   relaunch          today's path: Session::run_async(stream) + wait(), the buffers already on the device;
//   lean graph (+PDL) the graph's lean pipeline (baselines/) as a CUDA Graph launched and synchronized from the host,
//                     with and without programmatic dependent launch, over the same buffers (checked first);
//   resident          ResidentSession: submit() + wait() one at a time (depth 1), then D in flight.
// Per path: p50 / p90 / p99 of the host round trip (the call until the host has seen the run end); for the resident
// runtime also submit-to-first-block (device timestamps on the host clock), and throughput at depth 1 and D.
#include "tools/cli_common.hpp"

#include "runtime/errors.hpp"
#include "scheduler/build_info.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/percentiles.hpp"
#include "scheduler/reference_check.hpp"
#include "scheduler/report.hpp"
#include "scheduler/resident_session.hpp"

#if defined(GRIDFLOW_HAS_CUDA)
#include "baselines/lean_pipeline.hpp"
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <deque>

namespace gridflow::cli {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Row {
  std::string path;
  Percentiles round_trip;
  std::string note;
};

// baseline / resident in JSON, null where the baseline has no figure (no lean pipeline, say).
nlohmann::json ratio_or_null(double baseline, double resident) {
  return baseline > 0 && resident > 0 ? nlohmann::json(baseline / resident) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const Row& r) {
  return {{"path", r.path},
          {"round_trip_p50_us", r.round_trip.p50},
          {"round_trip_p90_us", r.round_trip.p90},
          {"round_trip_p99_us", r.round_trip.p99},
          {"samples", r.round_trip.n},
          {"note", r.note}};
}

struct Args {
  std::string graph;
  std::string json;
  int submissions = 20000;
  std::uint32_t depth = 64;
  SessionFlags flags;
};

// Today's path and the lean pipelines, before the resident kernel starts.
std::vector<Row> baselines(const Graph& g, const SessionOptions& o, int reps) {
  std::vector<Row> rows;
  Session s(g, o);
  s.run();
  const CheckReport checked = s.check();
  if (!checked.passed)
    throw gridflow::RuntimeError("the graph failed its check: " + checked.summary());
  std::vector<double> us;
  s.reset_buffers();
  for (int i = 0; i < reps + 20; ++i) {
    const auto t0 = Clock::now();
    s.run_async(nullptr);
    s.wait();
    if (i >= 20)
      us.push_back(us_since(t0));
  }
  rows.push_back({"relaunch (run_async + wait, buffers on the device)", percentiles(us), s.describe()});
#if defined(GRIDFLOW_HAS_CUDA)
  if (o.backend == Backend::gpu) {
    std::vector<void*> buffers;
    for (std::uint32_t b = 0; b < s.program().buffers.size(); ++b)
      buffers.push_back(s.executor().buffer_address(b));
    std::string why;
    auto lean = baselines::LeanPipeline::build(s.program(), buffers, &why);
    if (!lean) {
      rows.push_back({"lean graph", {}, "no lean pipeline: " + why});
      return rows;
    }
    s.reset_buffers(); // the initial data, outputs poisoned, then one lean run checked against the references
    lean->run_once();
    std::vector<HostTensor> results(g.buffers().size());
    for (std::uint32_t b = 0; b < results.size(); ++b)
      s.executor().download(b, results[b]);
    const CheckReport lean_check = check_outputs(g, s.analysis(), s.initial(), results);
    if (!lean_check.passed) {
      rows.push_back({"lean graph", {}, "the lean pipeline failed its check: " + lean_check.summary()});
      return rows;
    }
    const baselines::LeanTimes t = lean->time(20, reps);
    const auto to_us = [](const std::vector<double>& ms) {
      std::vector<double> v;
      for (const double x : ms)
        v.push_back(x * 1e3);
      return v;
    };
    rows.push_back({"lean CUDA graph, launch + synchronize", percentiles(to_us(t.graph_host_ms)),
                    fmt::format("{} steps", lean->steps())});
    rows.push_back({"lean CUDA graph + PDL, launch + synchronize", percentiles(to_us(t.graph_pdl_host_ms)),
                    fmt::format("{} steps", lean->steps())});
  }
#endif
  return rows;
}

// What the resident session measured: per submission at depth 1 the host round trip, submit to first block and the
// run (us), the throughput at depth 1 and at the asked depth (submissions/s). Checks the resident runs' results
// against a plain run's.
struct ResidentFigures {
  std::vector<double> round_trip, to_first, run;
  double rate1 = 0, rate_depth = 0;
  std::size_t lean_runs = 0; // depth-1 runs that went through the lean tile path
  std::string describe;
  double uncertainty_us = 0;
};

ResidentFigures measure_resident(const Graph& g, const SessionOptions& o, const Args& a) {
  ResidentFigures f;
  ResidentSession rs(resident_options(o, a.depth));
  rs.start();
  const auto h = rs.add(g, program_options(o));
  for (int i = 0; i < 200; ++i)
    rs.wait(rs.submit(h));
  const auto t_depth1 = Clock::now();
  for (int i = 0; i < a.submissions; ++i) {
    const auto t0 = Clock::now();
    const ResidentResult r = rs.wait(rs.submit(h));
    f.round_trip.push_back(us_since(t0));
    f.to_first.push_back(static_cast<double>(static_cast<std::int64_t>(r.first_ns - r.submitted_ns)) * 1e-3);
    f.run.push_back(static_cast<double>(r.done_ns - r.first_ns) * 1e-3);
    f.lean_runs += r.lean_tiles ? 1 : 0;
  }
  f.rate1 = a.submissions / (us_since(t_depth1) * 1e-6);
  std::deque<ResidentSession::Ticket> in_flight;
  const auto t_depth = Clock::now();
  for (int i = 0; i < a.submissions; ++i) {
    if (in_flight.size() >= a.depth) {
      rs.wait(in_flight.front());
      in_flight.pop_front();
    }
    in_flight.push_back(rs.submit(h));
  }
  for (const auto t : in_flight)
    rs.wait(t);
  f.rate_depth = a.submissions / (us_since(t_depth) * 1e-6);
  f.describe = rs.describe();
  f.uncertainty_us = static_cast<double>(rs.clock_uncertainty_ns()) * 1e-3;
  rs.stop();
  // The program's own buffers after the last resident run against a plain run's.
  Session check_session(g, o);
  check_session.run();
  for (std::size_t b = 0; b < g.buffers().size(); ++b)
    if (!bit_identical(rs.download(h, g.buffers()[b].name), check_session.results()[b]))
      throw gridflow::RuntimeError(
          fmt::format("the resident runs left buffer '{}' different from a plain run's", g.buffers()[b].name));
  return f;
}

// The p50 round trips the resident one is compared with: today's relaunch and the best lean pipeline (0: absent).
struct BaselineP50 {
  double relaunch = 0, best_lean = 0;
};
BaselineP50 baseline_p50(const std::vector<Row>& rows) {
  BaselineP50 b;
  for (const Row& r : rows) {
    if (r.round_trip.n == 0)
      continue;
    if (r.path.starts_with("relaunch"))
      b.relaunch = r.round_trip.p50;
    else if (r.path.starts_with("lean") && (b.best_lean == 0 || r.round_trip.p50 < b.best_lean))
      b.best_lean = r.round_trip.p50;
  }
  return b;
}

int serve_bench(const Args& a) {
  const Graph g = load_graph(a.graph);
  const SessionOptions o = session_options(a.flags, a.graph);
  std::vector<Row> rows = baselines(g, o, std::min(a.submissions, 5000));
  const ResidentFigures f = measure_resident(g, o, a);
  rows.insert(rows.begin(), Row{"resident submit + wait", percentiles(f.round_trip), f.describe});
  const Percentiles first = percentiles(f.to_first), body = percentiles(f.run);
  fmt::print("gridflow serve-bench {}: {} submissions, {}\n", a.graph, a.submissions, f.describe);
  fmt::print("{:<52} {:>10} {:>10} {:>10}\n", "host round trip, us", "p50", "p90", "p99");
  for (const Row& r : rows)
    if (r.round_trip.n == 0)
      fmt::print("{:<52} {:>10} {:>10} {:>10}  {}\n", r.path, "-", "-", "-", r.note);
    else
      fmt::print("{:<52} {:>10.2f} {:>10.2f} {:>10.2f}  {}\n", r.path, r.round_trip.p50, r.round_trip.p90,
                 r.round_trip.p99, r.note);
  fmt::print("{:<52} {:>10.2f} {:>10.2f} {:>10.2f}  (device clock on the host's, +-{:.2f} us)\n",
             "resident submit to first block, us", first.p50, first.p90, first.p99, f.uncertainty_us);
  fmt::print("{:<52} {:>10.2f} {:>10.2f} {:>10.2f}\n", "resident run, first block to last, us", body.p50, body.p90,
             body.p99);
  fmt::print("resident throughput: {:.0f} submissions/s at depth 1, {:.0f} at depth {}\n", f.rate1, f.rate_depth,
             a.depth);
  fmt::print("resident runs on the lean tile path: {} of {}\n", f.lean_runs, f.round_trip.size());
  const double resident_p50 = rows[0].round_trip.p50;
  const BaselineP50 base = baseline_p50(rows);
  if (base.relaunch > 0 && resident_p50 > 0)
    fmt::print("resident vs relaunch (p50): {:.2f}x\n", base.relaunch / resident_p50);
  if (base.best_lean > 0 && resident_p50 > 0)
    fmt::print("resident vs the best lean CUDA Graph (p50): {:.2f}x\n", base.best_lean / resident_p50);

  if (!a.json.empty()) {
    nlohmann::json doc = {{"gridflow", build_info_json()},
                          {"graph", a.graph},
                          {"submissions", a.submissions},
                          {"depth", a.depth},
                          {"config", f.describe},
                          {"submit_to_first_block_p50_us", first.p50},
                          {"submit_to_first_block_p90_us", first.p90},
                          {"submit_to_first_block_p99_us", first.p99},
                          {"clock_uncertainty_us", f.uncertainty_us},
                          {"run_p50_us", body.p50},
                          {"throughput_depth1_per_s", f.rate1},
                          {"throughput_depth_per_s", f.rate_depth},
                          {"lean_tile_runs", f.lean_runs},
                          {"resident_vs_relaunch_p50", ratio_or_null(base.relaunch, resident_p50)},
                          {"resident_vs_best_lean_p50", ratio_or_null(base.best_lean, resident_p50)},
                          {"rows", nlohmann::json::array()}};
    for (const Row& r : rows)
      doc["rows"].push_back(to_json(r));
    write_text(a.json, doc.dump(1) + "\n");
  }
  return kExitOk;
}

} // namespace

void add_serve_bench(CLI::App& app, Commands& commands) {
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "serve-bench", "Round trips of submissions to the resident runtime against relaunching and lean CUDA Graphs");
  cmd->add_option("GRAPH", args->graph, "graph JSON file")->required();
  cmd->add_option("--submissions", args->submissions, "submissions per measurement (default 20000)")
      ->check(CLI::Range(1, kMaxRepeat));
  cmd->add_option("--depth", args->depth, "submissions in flight for the throughput figure (default 64)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--json", args->json, "write the figures as JSON");
  add_session_flags(cmd, args->flags);
  cmd->callback([&commands, args] { commands.selected = [args] { return serve_bench(*args); }; });
}

} // namespace gridflow::cli
