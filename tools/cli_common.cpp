#include "tools/cli_common.hpp"

#include "runtime/device.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gridflow::cli {

void add_session_flags(CLI::App* cmd, SessionFlags& f) {
  cmd->add_option("--backend", f.backend, "cpu, gpu, or auto (GPU when present)")
      ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
  cmd->add_option("--mode", f.mode, "synchronization: grid-sync, barrier, flags, sentinel")
      ->check(CLI::IsMember({"grid-sync", "barrier", "flags", "sentinel"}));
  cmd->add_option(
         "--schedule", f.schedule,
         "tile claiming: dynamic (atomic ticket), static (host lists), or auto (static for graphs of small row "
         "ops, else dynamic)")
      ->check(CLI::IsMember({"auto", "dynamic", "static"}));
  cmd->add_option("--sentinel-fill", f.sentinel_fill, "sentinel mode: pre-fill in the kernel or at submit")
      ->check(CLI::IsMember({"kernel", "submit"}));
  cmd->add_option("--workers", f.workers, "CPU worker threads (0: hardware threads)")->check(CLI::Range(0u, 1024u));
  cmd->add_option("--threads", f.threads, "GPU threads per block (128, 256, 512, 1024)")
      ->check(CLI::IsMember({128u, 256u, 512u, 1024u}));
  cmd->add_option("--blocks-per-sm", f.blocks_per_sm, "GPU blocks per SM (0: default)")->check(CLI::Range(0u, 64u));
  cmd->add_option("--timeout-ms", f.timeout_ms, "watchdog: bound on every wait, in milliseconds (at most a day)")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            const double v = std::strtod(text.c_str(), nullptr);
            return std::isfinite(v) && v > 0 && v <= kMaxTimeoutMs ? "" : "must be a number in (0, 86400000]";
          },
          "(0, 86400000]"));
  cmd->add_option("--poll-spins", f.poll_spins,
                  "GPU body polls (sentinel inputs, scan look-back) and barrier waits: polls back to back before the "
                  "first sleep");
  cmd->add_option("--poll-max-sleep-ns", f.poll_max_sleep_ns,
                  "GPU body polls and barrier waits: longest sleep between polls, in ns (sleeps start at 32 ns and "
                  "double)");
  cmd->add_option("--wait-spins", f.wait_spins,
                  "GPU dependency waits (a block's leader): polls back to back before the first sleep (default: "
                  "never sleep)");
  cmd->add_option("--wait-max-sleep-ns", f.wait_max_sleep_ns,
                  "GPU dependency waits: longest sleep between polls, in ns");
  cmd->add_option("--watchdog-every", f.watchdog_every,
                  "every wait: polls between two checks of the abort flag and the watchdog's clock (1: after every "
                  "poll; each check delays the next poll)")
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_flag("--no-tile-deps", f.no_tile_deps, "wait for whole producer tasks, never for single tiles");
  cmd->add_flag("--claim-ahead", f.claim_ahead,
                "dynamic schedule: a block takes its next ticket while its tile runs (off by default: it slowed "
                "levels with fewer tiles than twice the blocks on the H200, and a look-back scan of 2^26 floats "
                "2.9x: every later tile's look-back waits for a tile taken ahead and started a tile late)");
  cmd->add_option("--reduce-min-tile", f.reduce_min_tile, "smallest reduce tile, in elements")
      ->check(CLI::Range(std::int64_t{1}, kMaxBufferElements));
  cmd->add_option("--row-tile-elements", f.row_tile_elements,
                  "target elements per row-op tile, softmax rows of up to 1024 columns included (default: 1048576, "
                  "and 65536 for those softmax rows)")
      ->check(CLI::Range(std::int64_t{1}, kMaxBufferElements));
  cmd->add_option("--scan-chunks", f.scan_chunks, "most register tiles per scan tile (1: one look-back per chunk)")
      ->check(CLI::Range(1u, 64u));
  cmd->add_option("--waves", f.waves,
                  "tiles per block a large task aims for (default 1; more: a shorter tail, more tile boundaries)")
      ->check(CLI::Range(1u, 1024u));
}

void add_file_flags(CLI::App* cmd, SessionFlags& f) {
  cmd->add_option("--save-dir", f.save_dir,
                  "folder the graph's 'save' paths are relative to (default: the working directory; created if "
                  "missing)");
  cmd->add_flag("--overwrite", f.overwrite, "a save may replace an existing file (refused otherwise)");
  cmd->add_flag("--allow-outside-paths", f.allow_outside,
                "the graph's init.file and save paths may be absolute, contain '..' or follow links out of their "
                "folders (refused otherwise)");
  cmd->add_option("--max-memory", f.max_memory,
                  "refuse a graph whose run needs more host (or device) memory than this, e.g. 8GB, 512MB (default: "
                  "what the machine has)")
      ->transform(CLI::AsSizeValue(false));
}

TilePolicy tile_policy(const SessionFlags& f) {
  TilePolicy t;
  t.reduce_min_tile = f.reduce_min_tile;
  if (f.row_tile_elements != 0)
    t.set_row_tile_elements(f.row_tile_elements);
  t.scan_chunks_per_tile = f.scan_chunks;
  t.waves = f.waves;
  return t;
}

SessionOptions session_options(const SessionFlags& f, const std::filesystem::path& graph_file) {
  SessionOptions o;
  if (f.backend == "auto") {
    const DeviceInfo gpu = probe_gpu();
    if (gpu.available && gpu_backend_built()) {
      o.backend = Backend::gpu;
    } else {
      o.backend = Backend::cpu;
      std::fprintf(stderr, "gridflow: no GPU (%s): running on the CPU reference backend\n",
                   gpu.available ? "this build has no GPU backend" : gpu.reason.c_str());
    }
  } else {
    o.backend = *parse_backend(f.backend);
  }
  o.mode = *parse_sync_mode(f.mode);
  o.schedule = *parse_schedule(f.schedule);
  o.exec.sentinel_fill = *parse_sentinel_fill(f.sentinel_fill);
  o.exec.timeout_ns = static_cast<std::uint64_t>(f.timeout_ms * 1e6);
  o.exec.claim_ahead = f.claim_ahead;
  o.exec.pacing = {f.poll_spins, f.poll_max_sleep_ns, f.watchdog_every};
  o.exec.wait_pacing = {f.wait_spins, f.wait_max_sleep_ns, f.watchdog_every};
  o.cpu_workers = f.workers;
  o.threads_per_block = f.threads;
  o.blocks_per_sm = f.blocks_per_sm;
  o.per_tile_deps = !f.no_tile_deps;
  o.tiles = tile_policy(f);
  o.files.input_dir = graph_file.has_parent_path() ? graph_file.parent_path() : std::filesystem::path(".");
  o.files.output_dir = f.save_dir.empty() ? std::filesystem::path(".") : std::filesystem::path(f.save_dir);
  o.files.overwrite = f.overwrite;
  o.files.allow_outside = f.allow_outside;
  if (!f.save_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.files.output_dir, ec);
    if (ec)
      throw GraphError(fmt::format("--save-dir {}: cannot create it: {}", f.save_dir, ec.message()));
  }
  o.max_memory = f.max_memory;
  o.will_check = f.check;
  return o;
}

} // namespace gridflow::cli
