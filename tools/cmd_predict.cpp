// gridflow calibrate | predict
#include "tools/cli_common.hpp"

#include "runtime/errors.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/predict.hpp"
#include "scheduler/report.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

namespace gridflow::cli {
namespace {

Calibration read_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw GraphError("cannot open calibration " + path);
  try {
    return calibration_from_json(nlohmann::json::parse(in));
  } catch (const nlohmann::json::exception& e) {
    throw GraphError(path + ": " + e.what());
  }
}

} // namespace

void add_calibrate(CLI::App& app, Commands& commands) {
  struct Args {
    std::string out = "calibration.json";
    SessionFlags flags;
    int repeat = 5;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Measure this machine's synchronization and body costs for "
                                                  "`gridflow predict` (traced runs of calibration graphs, every sync "
                                                  "mode and schedule)");
  cmd->add_option("--out", args->out, "where to write the calibration JSON");
  cmd->add_option("--repeat", args->repeat, "timed runs per configuration")->check(CLI::Range(1, kMaxRepeat));
  add_session_flags(cmd, args->flags);
  cmd->callback([&commands, args] {
    commands.selected = [args] {
      const Calibration c = calibrate(session_options(args->flags, "."), args->repeat,
                                      [](const std::string& name) { fmt::print("calibrated on {}\n", name); });
      write_text(args->out, calibration_json(c).dump(1) + "\n");
      fmt::print("{} body costs and {} configurations from {}; wrote {}\n", c.bodies.size(), c.configs.size(), c.device,
                 args->out);
      return kExitOk;
    };
  });
}

void add_predict(CLI::App& app, Commands& commands) {
  struct Args {
    std::vector<std::string> graphs;
    std::string calibration;
    std::string json;
    SessionFlags flags;
    bool measure = false;
    int repeat = 10;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("predict", "Predict a graph's time in every sync mode and schedule, and the "
                                                "share synchronization takes, from a calibration (gridflow "
                                                "calibrate); --measure runs it and prints both");
  cmd->add_option("GRAPH", args->graphs, "graph JSON files")->required();
  cmd->add_option("--calibration", args->calibration, "calibration JSON (gridflow calibrate)")->required();
  cmd->add_option("--json", args->json, "write predictions (and measurements) as JSON");
  cmd->add_flag("--measure", args->measure, "also run every configuration and show the error");
  cmd->add_option("--repeat", args->repeat, "timed runs per configuration (--measure)")
      ->check(CLI::Range(1, kMaxRepeat));
  add_session_flags(cmd, args->flags);
  add_file_flags(cmd, args->flags);
  cmd->callback([&commands, args] {
    commands.selected = [args] {
      const Calibration c = read_calibration(args->calibration);
      // A calibration that names its GPU is predicted for that GPU, whichever machine this is (no GPU needed).
      SessionFlags flags = args->flags;
      if (flags.backend == "auto" && !args->measure && c.gpu.sm_count > 0) {
        flags.backend = "gpu";
        fmt::print("predicting for the calibration's GPU: {} ({} SMs)\n", c.device, c.gpu.sm_count);
      }
      nlohmann::json rows = nlohmann::json::array();
      std::vector<double> errors;
      fmt::print("{:<26} {:<28} {:>12} {:>9} {:>12} {:>8}\n", "graph", "configuration", "predicted ms", "sync %",
                 args->measure ? "measured ms" : "", args->measure ? "error" : "");
      for (const std::string& file : args->graphs) {
        const Graph g = load_graph(file);
        for (const PredictionRow& r : predict_graph(g, session_options(flags, file), c, args->measure, args->repeat)) {
          const Prediction& pr = r.predicted;
          nlohmann::json row = {{"graph", r.graph},
                                {"configuration", r.configuration},
                                {"predicted_ms", pr.elapsed_ms},
                                {"sync_ms", pr.sync_ms},
                                {"uncalibrated", pr.uncalibrated}};
          std::string got, err;
          if (r.measured_ms > 0) {
            const double error = (pr.elapsed_ms - r.measured_ms) / r.measured_ms;
            errors.push_back(std::fabs(error));
            row["measured_ms"] = r.measured_ms;
            row["error"] = error;
            got = fmt::format("{:.4f}", r.measured_ms);
            err = fmt::format("{:+.0f}%", 100 * error);
          }
          fmt::print("{:<26} {:<28} {:>12.4f} {:>8.0f}% {:>12} {:>8}{}\n", r.graph, r.configuration, pr.elapsed_ms,
                     pr.elapsed_ms > 0 ? 100 * pr.sync_ms / pr.elapsed_ms : 0.0, got, err,
                     pr.uncalibrated.empty() ? "" : "  (uncalibrated: " + pr.uncalibrated.front() + ")");
          rows.push_back(std::move(row));
        }
      }
      nlohmann::json summary;
      if (!errors.empty()) {
        std::sort(errors.begin(), errors.end());
        const double med = errors[errors.size() / 2];
        const double p90 = errors[std::min(errors.size() - 1, errors.size() * 9 / 10)];
        fmt::print("absolute error over {} configurations: median {:.1f}%, 90th percentile {:.1f}%\n", errors.size(),
                   100 * med, 100 * p90);
        summary = {{"configurations", errors.size()}, {"median_abs_error", med}, {"p90_abs_error", p90}};
      }
      if (!args->json.empty())
        write_text(args->json,
                   nlohmann::json{{"calibration_device", c.device}, {"rows", rows}, {"summary", summary}}.dump(1) +
                       "\n");
      return kExitOk;
    };
  });
}

} // namespace gridflow::cli
