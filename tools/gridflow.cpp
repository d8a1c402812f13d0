// The gridflow command line.
//
//   gridflow validate GRAPH                     check a graph; run nothing
//   gridflow lower GRAPH [options]              print the lowered device program
//   gridflow run GRAPH [options] [--check]      run a graph (GPU when present, else the CPU backend)
//   gridflow profile GRAPH [options]            every sync mode and the baselines side by side
//   gridflow bench sync [options]               microbenchmarks of the synchronization primitives
//   gridflow serve-bench GRAPH [options]        submission round trips to the resident runtime vs relaunches
//   gridflow calibrate [--out FILE]             this machine's sync and body costs, for predict
//   gridflow predict GRAPH... --calibration F   each sync mode's and schedule's time before it runs (--measure)
//
// Exit codes: 0 success; 1 runtime failure (device error, watchdog, failed --check, I/O); 2 bad input (usage,
// malformed or invalid graph). Errors are one line on stderr.
#include "tools/cli_common.hpp"

#include "runtime/errors.hpp"
#include "runtime/version.hpp"
#include "scheduler/errors.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <exception>
#include <new>

int main(int argc, char** argv) {
  using namespace gridflow;
  CLI::App app{"gridflow: task graphs of reductions, scans and softmaxes on one persistent cooperative kernel"};
  app.set_version_flag("--version", fmt::format("gridflow {} (commit {})", version(), source_commit()));
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));

  cli::Commands commands;
  cli::add_validate(app, commands);
  cli::add_lower(app, commands);
  cli::add_run(app, commands);
  cli::add_profile(app, commands);
  cli::add_bench(app, commands);
  cli::add_serve_bench(app, commands);
  cli::add_calibrate(app, commands);
  cli::add_predict(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : cli::kExitBadInput;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("gridflow [%l] %v");
  // A write past a file-size limit fails with EFBIG (and is reported) instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return commands.run();
  } catch (const GraphError& e) {
    std::fprintf(stderr, "gridflow: error: %s\n", e.what());
    return cli::kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gridflow: error: out of host memory (--max-memory refuses such graphs before they run)\n");
    return cli::kExitRuntime;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gridflow: error: %s\n", e.what());
    return cli::kExitRuntime;
  } catch (...) {
    std::fprintf(stderr, "gridflow: error: an unknown failure\n");
    return cli::kExitRuntime;
  }
}
