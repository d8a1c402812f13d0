// Typed run configuration shared by every backend: how dependencies are enforced and how tiles are claimed.
// Every report prints these, so a number always says how it was made.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gridflow {

// How the executor enforces dependencies between tasks.
enum class SyncMode : std::uint32_t {
  grid_sync = 0, // levels separated by cooperative_groups::this_grid().sync() (CPU: the gridflow barrier)
  barrier = 1,   // levels separated by the grid barrier measured fastest for the launch shape: gridflow's own at one
                 // block per SM, cooperative_groups' grid.sync() at more (barrier_uses_grid_sync; CPU: gridflow's)
  flags = 2,     // per-task / per-tile completion counters: release on signal, acquire on wait
  sentinel = 3,  // data as the flag: consumers poll the values they read (f32 outputs); counters elsewhere
};
inline constexpr SyncMode kAllSyncModes[] = {SyncMode::grid_sync, SyncMode::barrier, SyncMode::flags,
                                             SyncMode::sentinel};

// True for the modes that run the graph level by level with a grid barrier in between.
constexpr bool is_level_mode(SyncMode m) {
  return m == SyncMode::grid_sync || m == SyncMode::barrier;
}

// Which barrier barrier mode passes on the GPU at `blocks_per_sm`: gridflow's flat barrier where it is faster (one
// block per SM: 0.95-0.97 us against grid.sync()'s 1.00-1.05 on the H200), grid.sync() from two blocks per SM on,
// where no gridflow barrier measured matches it (flat 1.11-1.24 us against 1.00 at two blocks per SM; split
// counters, per-SM aggregation, clusters and a copy of cooperative groups' own protocol all slower; gridflow bench
// sync, docs/SYNC-COST.md).
constexpr bool barrier_uses_grid_sync(std::uint32_t blocks_per_sm) {
  return blocks_per_sm >= 2;
}

// Blocks of `threads` per SM the GPU megakernels are built to fit (their __launch_bounds__), which sets their register
// budget: 128 per thread up to 512 threads (512 / threads blocks; 1024-thread blocks get 64). A tighter budget spills
// the register tiles of the scan and softmax bodies.
constexpr std::uint32_t min_blocks_per_sm(std::uint32_t threads) {
  return threads >= 512 ? 1 : 512 / threads;
}

// The same for the lean row kernel of the flags, barrier and grid-sync modes (runtime/gpu/lean_kernel.cuh): 1024
// threads per SM up to 256 threads (64 registers), so a wide program has four rows of 256 threads in flight per SM
// and a block that waits leaves its SM to three others (lean_row_blocks_per_sm); the general budget above that.
constexpr std::uint32_t lean_row_min_blocks_per_sm(std::uint32_t threads) {
  return threads <= 256 ? 1024 / threads : min_blocks_per_sm(threads);
}

// How a block finds its next tile.
enum class Schedule : std::uint32_t {
  dynamic = 0,     // atomic ticket over the tiles in topological order
  static_list = 1, // per-block lists computed by the host (list scheduling by estimated cost, locality first)
  automatic = 2,   // chosen by the lowering for the program: static_list when every task runs as lean row tiles
                   // (latency-bound chains, where a row's chain on one block needs no cross-SM hop), else dynamic
};

// Where sentinel mode pre-fills producer outputs with the sentinel payload.
enum class SentinelFill : std::uint32_t {
  kernel = 0, // the megakernel's prologue (one grid barrier), no extra launch
  submit = 1, // a fill kernel on the stream before the megakernel
};

std::string_view to_string(SyncMode);
std::string_view to_string(Schedule);
std::string_view to_string(SentinelFill);
std::optional<SyncMode> parse_sync_mode(std::string_view);
std::optional<Schedule> parse_schedule(std::string_view);
std::optional<SentinelFill> parse_sentinel_fill(std::string_view);

} // namespace gridflow
