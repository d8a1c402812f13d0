// Pieces shared by the gridflow subcommands: exit codes, the flags that configure a Session, backend choice.
#pragma once

#include "scheduler/session.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

namespace gridflow::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;  // device error, watchdog, failed check, I/O
inline constexpr int kExitBadInput = 2; // usage, malformed or invalid graph

// The subcommand picked on the command line.
struct Commands {
  std::function<int()> selected;
  int run() const { return selected ? selected() : kExitBadInput; }
};

// Flags that configure a Session (run, lower, profile).
struct SessionFlags {
  std::string backend = "auto";
  std::string mode = "flags";
  std::string schedule = "auto";
  std::string sentinel_fill = "submit";
  std::uint32_t workers = 0;
  std::uint32_t threads = 256;
  std::uint32_t blocks_per_sm = 0;
  double timeout_ms = 10000.0;
  std::uint32_t poll_spins = program::PollPacing{}.spin_polls;
  std::uint32_t poll_max_sleep_ns = program::PollPacing{}.max_sleep_ns;
  std::uint32_t wait_spins = program::kSpinPacing.spin_polls;
  std::uint32_t wait_max_sleep_ns = program::kSpinPacing.max_sleep_ns;
  std::uint32_t watchdog_every = program::PollPacing{}.check_every;
  bool no_tile_deps = false;
  bool claim_ahead = false;
  std::int64_t reduce_min_tile = TilePolicy{}.reduce_min_tile;
  std::int64_t row_tile_elements = 0; // 0: TilePolicy's defaults
  std::uint32_t scan_chunks = TilePolicy{}.scan_chunks_per_tile;
  std::uint32_t waves = TilePolicy{}.waves;
  // Files and memory (file_access.hpp, memory_budget.hpp).
  std::string save_dir;         // saves land here instead of the working directory
  bool overwrite = false;       // saves may replace existing files
  bool allow_outside = false;   // graph paths may be absolute, use `..` or follow links out of their folders
  std::uint64_t max_memory = 0; // bytes; 0: what the machine has
  bool check = false;           // run --check: the budget counts the reference check
};

inline constexpr double kMaxTimeoutMs = 86'400'000.0; // a day
inline constexpr int kMaxRepeat = 1'000'000;          // --repeat, --warmup

void add_session_flags(CLI::App* cmd, SessionFlags& flags);
// --save-dir, --overwrite, --allow-outside-paths, --max-memory (validate, run, profile).
void add_file_flags(CLI::App* cmd, SessionFlags& flags);

// The tiling flags as a policy (sessions and `gridflow lower`).
TilePolicy tile_policy(const SessionFlags& flags);

// Resolves the flags for `graph_file`. backend "auto" picks the GPU when one is usable and built in, else the
// CPU backend with a one-line notice on stderr.
SessionOptions session_options(const SessionFlags& flags, const std::filesystem::path& graph_file);

void add_validate(CLI::App& app, Commands& commands);
void add_lower(CLI::App& app, Commands& commands);
void add_run(CLI::App& app, Commands& commands);
void add_profile(CLI::App& app, Commands& commands);
void add_bench(CLI::App& app, Commands& commands);
void add_serve_bench(CLI::App& app, Commands& commands);
void add_calibrate(CLI::App& app, Commands& commands);
void add_predict(CLI::App& app, Commands& commands);

} // namespace gridflow::cli
