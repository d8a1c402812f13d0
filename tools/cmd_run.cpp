// gridflow validate | lower | run
#include "tools/cli_common.hpp"

#include "scheduler/analysis.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/lowering.hpp"
#include "scheduler/report.hpp"
#include "scheduler/session.hpp"
#include "scheduler/trace_analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace gridflow::cli {
namespace {

double median(std::vector<double> v) {
  if (v.empty())
    return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::size_t edge_count(const Analysis& a) {
  std::size_t n = 0;
  for (const auto& d : a.deps)
    n += d.size();
  return n;
}

} // namespace

void add_validate(CLI::App& app, Commands& commands) {
  auto graph = std::make_shared<std::string>();
  auto flags = std::make_shared<SessionFlags>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a graph file and everything `run` checks short of running it with the same options: init "
                  "files, save targets, the device program's limits, memory (exit 0 valid, 2 invalid)");
  cmd->add_option("GRAPH", *graph, "graph JSON file")->required();
  cmd->add_flag("--check", flags->check, "count the reference check of `run --check` in the memory budget");
  add_session_flags(cmd, *flags);
  add_file_flags(cmd, *flags);
  cmd->callback([&commands, graph, flags] {
    commands.selected = [graph, flags] {
      const Graph g = load_graph(*graph);
      const SessionOptions o = session_options(*flags, *graph);
      const RunPlan plan = plan_run(g, o);
      fmt::print("{}: valid: graph '{}', {} buffers, {} tasks, {} dependencies, {} levels; {} tiles on the {} "
                 "backend, {} of host memory{}\n",
                 *graph, g.name(), g.buffers().size(), g.tasks().size(), edge_count(plan.analysis),
                 plan.analysis.num_levels, plan.program.tiles.size(), to_string(o.backend),
                 byte_text(plan.memory.host_bytes),
                 plan.memory.device_bytes ? fmt::format(" and {} of device memory", byte_text(plan.memory.device_bytes))
                                          : std::string());
      return kExitOk;
    };
  });
}

void add_lower(CLI::App& app, Commands& commands) {
  auto graph = std::make_shared<std::string>();
  auto flags = std::make_shared<SessionFlags>();
  auto blocks = std::make_shared<std::uint32_t>(132);
  auto list = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("lower", "Print the device program a graph lowers to");
  cmd->add_option("GRAPH", *graph, "graph JSON file")->required();
  cmd->add_option("--blocks", *blocks, "grid blocks to lower for")->check(CLI::PositiveNumber);
  cmd->add_flag("--list-blocks", *list, "with --schedule static: tiles per block");
  add_session_flags(cmd, *flags);
  cmd->callback([&commands, graph, flags, blocks, list] {
    commands.selected = [graph, flags, blocks, list] {
      const Graph g = load_graph(*graph);
      const Analysis a = analyze(g);
      LoweringOptions lo;
      lo.mode = *parse_sync_mode(flags->mode);
      lo.schedule = *parse_schedule(flags->schedule);
      lo.grid_blocks = *blocks;
      lo.threads_per_block = flags->threads;
      lo.per_tile_deps = !flags->no_tile_deps;
      lo.tiles = tile_policy(*flags);
      fmt::print("{}", describe(lower(g, a, lo), *list));
      return kExitOk;
    };
  });
}

void add_run(CLI::App& app, Commands& commands) {
  struct Args {
    std::string graph;
    SessionFlags flags;
    bool check = false;
    int repeat = 0;
    int warmup = 3;
    std::string trace;
    std::string report;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("run", "Run a graph; --check compares every output with the CPU reference");
  cmd->add_option("GRAPH", args->graph, "graph JSON file")->required();
  cmd->add_flag("--check", args->check, "compare outputs with the float64 references (exit 1 on mismatch)");
  cmd->add_option("--repeat", args->repeat, "timed runs after the checked one (median reported)")
      ->check(CLI::Range(0, kMaxRepeat));
  cmd->add_option("--warmup", args->warmup, "untimed runs before the timed ones")->check(CLI::Range(0, kMaxRepeat));
  cmd->add_option("--trace", args->trace, "write a Chrome trace (Perfetto) of one traced run");
  cmd->add_option("--report", args->report, "write the breakdown of one traced run as JSON (and .csv beside it)");
  add_session_flags(cmd, args->flags);
  add_file_flags(cmd, args->flags);
  cmd->callback([&commands, args] {
    commands.selected = [args] {
      args->flags.check = args->check;
      Graph g = load_graph(args->graph);
      Session s(std::move(g), session_options(args->flags, args->graph));
      fmt::print("graph '{}': {} tasks, {} levels -> {} tiles\n", s.graph().name(), s.graph().tasks().size(),
                 s.analysis().num_levels, s.program().tiles.size());
      fmt::print("on {}\n", s.describe());
      const RunResult first = s.run();
      fmt::print("run: {:.3f} ms (first run, submit to completion)\n", first.elapsed_ms);
      int code = kExitOk;
      if (args->check) {
        const CheckReport report = s.check();
        fmt::print("{}\n{}", report.summary(), report.details());
        if (!report.passed)
          code = kExitRuntime;
      }
      for (const auto& path : s.save_outputs())
        fmt::print("saved {}\n", path.string());
      if (args->repeat > 0) {
        std::vector<double> ms;
        for (const RunResult& r : s.time(args->warmup, args->repeat))
          ms.push_back(r.elapsed_ms);
        fmt::print("timed: {:.4f} ms median of {} runs after {} warm-up (min {:.4f}, max {:.4f})\n", median(ms),
                   ms.size(), args->warmup, *std::min_element(ms.begin(), ms.end()),
                   *std::max_element(ms.begin(), ms.end()));
      }
      if (!args->trace.empty() || !args->report.empty()) {
        const RunResult traced = s.time(0, 1, true).front();
        const TraceAnalysis a = analyze_trace(s.program(), traced);
        const Breakdown& b = a.breakdown;
        fmt::print("traced run: makespan {:.3f} us, critical path {:.3f} us; work {:.1f}%, wait {:.1f}%, barrier "
                   "{:.1f}%, dispatch {:.1f}%, idle {:.1f}%\n",
                   a.makespan_ns * 1e-3, a.critical_path_ns * 1e-3, 100 * b.work.share, 100 * b.wait.share,
                   100 * b.barrier.share, 100 * b.dispatch.share, 100 * b.idle.share);
        if (!args->trace.empty())
          write_text(args->trace, chrome_trace_json(s.program(), traced, s.graph().name()));
        if (!args->report.empty()) {
          ProfileEntry e;
          e.executor = fmt::format("gridflow {} {}", to_string(s.options().mode), to_string(s.options().schedule));
          e.config = s.describe();
          e.median_ms = e.min_ms = e.max_ms = traced.elapsed_ms;
          e.runs = 1;
          e.analysis = a;
          write_text(args->report, profile_json(s.graph().name(), s.executor().describe(), {e}).dump(1) + "\n");
          std::string csv = args->report;
          csv =
              (csv.size() > 5 && csv.substr(csv.size() - 5) == ".json" ? csv.substr(0, csv.size() - 5) : csv) + ".csv";
          write_text(csv, profile_csv({e}));
        }
      }
      return code;
    };
  });
}

} // namespace gridflow::cli
