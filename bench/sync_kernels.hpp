// Microbenchmark kernels of the synchronization primitives (bench/sync_kernels.cu): host entry points only.
#pragma once

#include "runtime/program.hpp"

#include <cstdint>
#include <vector>

namespace gridflow::bench {

enum class BarrierKind : int {
  cg = 0,            // cooperative_groups::this_grid().sync()
  flat = 1,          // gridflow's barrier (protocol.hpp): one release add per block, acquire poll of one counter
  sm_aggregated = 2, // per-SM arrival counters; the last block of each SM adds to the global counter
  split = 3,         // `ways` counters on lines of their own: block b arrives on counter b % ways (fewer atomics
                     // per line); lanes 0 .. ways-1 of warp 0 each poll one counter
};

// Blocks per SM the barrier kernel can keep resident at `threads` threads.
int barrier_max_blocks_per_sm(int threads);

// Milliseconds (median of `reps`, CUDA events) of one cooperative launch running `iters` barriers.
// `ways`: the split barrier's counters (2 to 32; ignored by the other kinds). `check_every`: the waits' polls between
// two watchdog checks (program::PollPacing::check_every; 1: after every poll).
double time_barrier_loop(BarrierKind kind, int blocks, int threads, int iters, int reps, int ways = 1,
                         int check_every = static_cast<int>(program::PollPacing{}.check_every));

// Milliseconds of one cooperative launch of 2 blocks passing a value back and forth `rounds` times
// (2 * rounds one-way hops). `sentinel`: the value itself is polled (relaxed), else release/acquire flags, whose
// waits check the watchdog every `check_every` polls. `smids` receives the SMs of the two blocks.
double time_pingpong(int rounds, bool sentinel, int reps, int smids[2],
                     int check_every = static_cast<int>(program::PollPacing{}.check_every));

// Launch-to-completion milliseconds of an empty kernel of `blocks` x 128 (median of `reps`).
double time_empty_launch(int blocks, bool cooperative, int reps);

} // namespace gridflow::bench
