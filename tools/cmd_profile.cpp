// gridflow profile | bench sync
#include "tools/cli_common.hpp"

#include "scheduler/build_info.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/profile.hpp"
#include "scheduler/report.hpp"

#if defined(GRIDFLOW_HAS_CUDA)
#include "bench/cub_pipeline.hpp"
#include "bench/sync_bench.hpp"
#endif

#include <fmt/format.h>

#include "runtime/device.hpp"
#include "runtime/errors.hpp"
#include "scheduler/errors.hpp"

#include <cctype>
#include <ctime>
#include <fstream>

namespace gridflow::cli {
namespace {

// "gridflow flags dynamic" -> "gridflow-flags-dynamic"
std::string slug(const std::string& s) {
  std::string o;
  for (char c : s)
    o += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return o;
}

} // namespace

void add_profile(CLI::App& app, Commands& commands) {
  struct Args {
    std::string graph;
    SessionFlags flags;
    std::string out = "profile-out";
    int repeat = 10;
    int warmup = 3;
    bool no_baselines = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Run a graph in every sync mode and schedule (and, on the GPU, one launch per task on a stream, "
                 "as a CUDA Graph, and as one CUB call per task where CUB has every op) on identical data; check, "
                 "compare, time, trace; write report, traces and plots");
  cmd->add_option("GRAPH", args->graph, "graph JSON file")->required();
  cmd->add_option("--out", args->out, "folder for report.json, report.csv, trace-*.json, *.svg");
  cmd->add_option("--repeat", args->repeat, "timed runs per configuration")->check(CLI::Range(1, kMaxRepeat));
  cmd->add_option("--warmup", args->warmup, "untimed runs first")->check(CLI::Range(0, kMaxRepeat));
  cmd->add_flag("--no-baselines", args->no_baselines, "skip the per-task launch and CUB baselines");
  add_session_flags(cmd, args->flags);
  add_file_flags(cmd, args->flags);
  cmd->callback([&commands, args] {
    commands.selected = [args] {
      args->flags.check = true; // every configuration is checked
      const Graph g = load_graph(args->graph);
      ProfileOptions po;
      po.base = session_options(args->flags, args->graph);
      po.repeat = args->repeat;
      po.warmup = args->warmup;
      po.baselines = !args->no_baselines;
#if defined(GRIDFLOW_HAS_CUDA)
      if (po.baselines && po.base.backend == Backend::gpu) {
        std::string why;
        if (auto cub = bench::cub_pipeline_baseline(g, &why))
          po.external.push_back(std::move(*cub));
        else
          fmt::print("no CUB baseline: {}\n", why);
      }
#endif
      const ProfileResult r = profile(g, po);
      fmt::print("graph '{}' on {}\n{}", g.name(), r.device, profile_table(r));
      const std::string dir = args->out + "/";
      write_text(dir + "report.json", profile_json(g.name(), r.device, r.entries).dump(1) + "\n");
      write_text(dir + "report.csv", profile_csv(r.entries));
      write_text(dir + "breakdown.svg", breakdown_svg(r.entries, g.name()));
      for (const ProfiledTrace& t : r.traces) {
        write_text(dir + "trace-" + slug(t.executor) + ".json",
                   chrome_trace_json(t.program, t.run, g.name() + ": " + t.executor));
        write_text(dir + "timeline-" + slug(t.executor) + ".svg",
                   timeline_svg(t.program, t.run, g.name() + ": " + t.executor));
      }
      fmt::print("outputs {} across configurations; reference check {}; wrote {}\n",
                 r.all_match ? "bit-identical" : "DIFFER", r.all_checked ? "passed" : "FAILED", args->out);
      return r.all_match && r.all_checked ? kExitOk : kExitRuntime;
    };
  });
}

namespace {

// What the barrier plot shows and where it was measured (never a local path).
std::string barrier_title(const std::string& gpu, const std::string& date) {
  std::string where = gpu.empty() ? std::string() : gpu;
  if (!date.empty())
    where += (where.empty() ? "" : ", ") + date;
  return "grid barrier: us per barrier vs blocks per SM" + (where.empty() ? std::string() : " (" + where + ")") +
         ", gridflow bench sync";
}

[[maybe_unused]] std::string today() {
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  return date;
}

} // namespace

void add_bench(CLI::App& app, Commands& commands) {
  struct Args {
    std::string json;
    std::string svg;
    std::string from;
    bool quick = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* bench = app.add_subcommand("bench", "Microbenchmarks");
  bench->require_subcommand(1);
  CLI::App* sync = bench->add_subcommand("sync", "grid barriers (cg vs gridflow), flag and sentinel hand-off, "
                                                 "empty-task dispatch, launch cost; difference method");
  sync->add_option("--json", args->json, "write the rows as JSON");
  sync->add_option("--svg", args->svg, "plot barrier cost against grid shape");
  sync->add_flag("--quick", args->quick, "fewer repetitions and tasks");
  sync->add_option("--from", args->from,
                   "re-plot saved results (JSON from --json or gridflow_bench_sync) instead of measuring");
  sync->callback([&commands, args] {
    commands.selected = [args]() -> int {
      if (!args->from.empty()) {
        std::ifstream in(args->from);
        if (!in)
          throw GraphError("cannot open " + args->from);
        nlohmann::json doc;
        try {
          doc = nlohmann::json::parse(in);
        } catch (const nlohmann::json::exception& e) {
          throw GraphError(args->from + ": " + e.what());
        }
        const nlohmann::json rows = doc.is_object() && doc.contains("rows") ? doc["rows"] : doc;
        if (args->svg.empty())
          throw GraphError("--from needs --svg (where to draw the plot)");
        write_text(args->svg, barrier_svg(rows, barrier_title(doc.value("gpu", std::string()),
                                                              doc.value("date", std::string()).substr(0, 10))));
        return kExitOk;
      }
#if defined(GRIDFLOW_HAS_CUDA)
      const nlohmann::json rows = bench::run_sync_bench(args->quick);
      const std::string gpu = probe_gpu().describe(), date = today();
      if (!args->json.empty())
        write_text(
            args->json,
            nlohmann::json{
                {"gridflow", build_info_json()}, {"benchmark", "sync"}, {"gpu", gpu}, {"date", date}, {"rows", rows}}
                    .dump(1) +
                "\n");
      if (!args->svg.empty())
        write_text(args->svg, barrier_svg(rows, barrier_title(gpu, date)));
      return rows.empty() ? kExitRuntime : kExitOk;
#else
      throw gridflow::RuntimeError("gridflow bench sync needs the GPU backend, and this build has none");
#endif
    };
  });
}

} // namespace gridflow::cli
