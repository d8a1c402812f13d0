// The cross-block protocol, written once for the GPU and the CPU executor.
//
// Every signal and wait between blocks (or CPU workers) goes through cuda::atomic_ref at device scope with an
// explicit order: release to signal, acquire to observe. On the GPU the caller wraps these in a block
// barrier: `__syncthreads(); leader: signal(...)` so the whole block's stores are ordered before the release,
// and `leader: wait(...); __syncthreads();` so the whole block's loads are ordered after the acquire
// (causality order is transitive through bar.sync). Under g++ the same code runs with std::thread workers.
//
// Nothing here is ever reset between runs: counters grow by a known amount per run and every wait compares
// against `amount * epoch`; flags and look-back words carry the epoch (run number, starting at 1).
#pragma once

#include "kernels/host_device.hpp"
#include "runtime/program.hpp"

#include <cuda/atomic>

#include <cstdint>

#if !GRIDFLOW_DEVICE_PASS
#include <chrono>
#include <thread>
#endif

namespace gridflow::protocol {

template <class T> using atomic_ref = cuda::atomic_ref<T, cuda::thread_scope_device>;

// Monotonic nanoseconds: %globaltimer on the GPU (no intrinsic exists; it ticks in ~32 ns steps on Hopper),
// steady_clock on the CPU.
GRIDFLOW_HOST_DEVICE std::uint64_t now_ns() {
#if GRIDFLOW_DEVICE_PASS
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
#endif
}

// ---- tickets, counters, flags -----------------------------------------------------------------------------

// Claim the next ticket. Relaxed: a ticket names read-only descriptors, it publishes no data.
GRIDFLOW_HOST_DEVICE std::uint64_t claim_ticket(std::uint64_t* head) {
  return atomic_ref<std::uint64_t>(*head).fetch_add(1, cuda::std::memory_order_relaxed);
}

// Signal completion: everything this block wrote before (ordered by the caller's block barrier) becomes
// visible to whoever acquires a value that includes this increment.
GRIDFLOW_HOST_DEVICE void signal_counter(std::uint64_t* counter, std::uint64_t n = 1) {
  atomic_ref<std::uint64_t>(*counter).fetch_add(n, cuda::std::memory_order_release);
}

GRIDFLOW_HOST_DEVICE std::uint64_t load_counter(std::uint64_t* counter) {
  return atomic_ref<std::uint64_t>(*counter).load(cuda::std::memory_order_acquire);
}

GRIDFLOW_HOST_DEVICE void publish_flag(std::uint32_t* flag, std::uint32_t epoch) {
  atomic_ref<std::uint32_t>(*flag).store(epoch, cuda::std::memory_order_release);
}

GRIDFLOW_HOST_DEVICE std::uint32_t load_flag(std::uint32_t* flag) {
  return atomic_ref<std::uint32_t>(*flag).load(cuda::std::memory_order_acquire);
}

// Arrive at a per-task counter; returns true for the last of `total` arrivals. acq_rel: the last arriver
// observes every earlier arriver's writes (the increments form one release sequence).
GRIDFLOW_HOST_DEVICE bool arrive_is_last(std::uint64_t* counter, std::uint64_t total) {
  return atomic_ref<std::uint64_t>(*counter).fetch_add(1, cuda::std::memory_order_acq_rel) + 1 == total;
}

// Look-back words pack the run's epoch (high 32 bits) with a 32-bit payload, so one release store publishes
// value and validity together (no fence between flag and payload, as in CUB's decoupled look-back).
GRIDFLOW_HOST_DEVICE void publish_word(std::uint64_t* word, std::uint32_t epoch, std::uint32_t payload) {
  atomic_ref<std::uint64_t>(*word).store((std::uint64_t{epoch} << 32) | payload, cuda::std::memory_order_release);
}

GRIDFLOW_HOST_DEVICE std::uint64_t load_word(std::uint64_t* word) {
  return atomic_ref<std::uint64_t>(*word).load(cuda::std::memory_order_acquire);
}

GRIDFLOW_HOST_DEVICE std::uint32_t word_epoch(std::uint64_t w) {
  return static_cast<std::uint32_t>(w >> 32);
}
GRIDFLOW_HOST_DEVICE std::uint32_t word_payload(std::uint64_t w) {
  return static_cast<std::uint32_t>(w);
}

// ---- errors and the watchdog ------------------------------------------------------------------------------

GRIDFLOW_HOST_DEVICE bool is_aborted(program::ControlBlock* control) {
  return atomic_ref<std::uint32_t>(control->abort).load(cuda::std::memory_order_relaxed) != 0;
}

// Tell every block to leave at its next check (release: what the caller wrote before is visible to who sees it).
GRIDFLOW_HOST_DEVICE void abort_run(program::ControlBlock* control) {
  atomic_ref<std::uint32_t>(control->abort).store(1, cuda::std::memory_order_release);
}

// Record `record` as the run's error if it is the first, then tell every block to leave.
GRIDFLOW_HOST_DEVICE void raise_error(program::ControlBlock* control, const program::ErrorRecord& record) {
  std::uint32_t expected = 0;
  if (atomic_ref<std::uint32_t>(control->error.code)
          .compare_exchange_strong(expected, record.code, cuda::std::memory_order_relaxed)) {
    program::ErrorRecord& e = control->error;
    e.block = record.block;
    e.tile = record.tile;
    e.task = record.task;
    e.wait_kind = record.wait_kind;
    e.wait_task = record.wait_task;
    e.wait_index = record.wait_index;
    e.detail = record.detail;
    e.expected = record.expected;
    e.seen = record.seen;
    e.waited_ns = record.waited_ns;
  }
  abort_run(control);
}

// Who is waiting, for the error record.
struct WaitSite {
  program::ControlBlock* control;
  std::uint64_t timeout_ns; // 0: wait forever (never used by the runtime; tests of the watchdog set it)
  std::uint32_t block;
  std::uint32_t tile;
  std::uint32_t task;
  program::PollPacing pacing{}; // how the wait polls (GPU)
};

// What is awaited, for the error record.
struct WaitTarget {
  program::WaitKind kind;
  std::uint32_t task;
  std::uint32_t index;
  std::uint64_t expected;
};

// Pause between polls, paced by program::PollPacing. GPU: spin for the first polls (a hand-off is ~0.5 us), then
// __nanosleep doubling to a cap so thousands of waiting blocks do not saturate the L2 with polls. CPU: yield, since
// workers may outnumber cores.
struct Backoff {
  static constexpr std::uint32_t kFirstSleepNs = 32;
  program::PollPacing pacing;
  std::uint32_t polls = 0;
  std::uint32_t sleep_ns = pacing.max_sleep_ns < kFirstSleepNs ? pacing.max_sleep_ns : kFirstSleepNs;

  GRIDFLOW_HOST_DEVICE void pause() {
    ++polls;
#if GRIDFLOW_DEVICE_PASS
    if (polls > pacing.spin_polls) {
      __nanosleep(sleep_ns);
      sleep_ns = sleep_ns < pacing.max_sleep_ns / 2 ? 2 * sleep_ns : pacing.max_sleep_ns;
    }
#else
    std::this_thread::yield();
#endif
  }
};

// Poll `observe()` (returns the current value) until `done(value)`; bounded by the watchdog, whose checks (the abort
// flag, the clock) run every `site.pacing.check_every` polls.
// Returns true when satisfied, false when the run was aborted (by this wait timing out or by another block);
// on timeout it records the error before returning. The caller leaves its loop on false.
template <class Observe, class Done>
GRIDFLOW_HOST_DEVICE bool wait_until(const WaitSite& site, const WaitTarget& target, Observe observe, Done done) {
  std::uint64_t seen = observe();
  if (done(seen))
    return true;
  const std::uint64_t start = now_ns();
  Backoff backoff{site.pacing};
  const std::uint32_t check_every = site.pacing.check_every == 0 ? 1 : site.pacing.check_every;
  for (std::uint32_t until_check = check_every;;) {
    backoff.pause();
    seen = observe();
    if (done(seen))
      return true;
    if (--until_check != 0)
      continue;
    until_check = check_every;
    if (is_aborted(site.control))
      return false;
    const std::uint64_t waited = now_ns() - start;
    if (site.timeout_ns != 0 && waited > site.timeout_ns) {
      program::ErrorRecord r;
      r.code = static_cast<std::uint32_t>(program::ErrorCode::watchdog_timeout);
      r.block = site.block;
      r.tile = site.tile;
      r.task = site.task;
      r.wait_kind = static_cast<std::uint32_t>(target.kind);
      r.wait_task = target.task;
      r.wait_index = target.index;
      r.expected = target.expected;
      r.seen = seen;
      r.waited_ns = waited;
      raise_error(site.control, r);
      return false;
    }
  }
}

// Wait until `*counter >= target` (acquire).
GRIDFLOW_HOST_DEVICE bool wait_counter(const WaitSite& site, const WaitTarget& target, std::uint64_t* counter) {
  return wait_until(
      site, target, [counter] { return load_counter(counter); }, [&](std::uint64_t v) { return v >= target.expected; });
}

// Wait until `*flag == epoch` (acquire). Flags only ever move to the current epoch.
GRIDFLOW_HOST_DEVICE bool wait_flag(const WaitSite& site, const WaitTarget& target, std::uint32_t* flag) {
  return wait_until(
      site, target, [flag] { return std::uint64_t{load_flag(flag)}; },
      [&](std::uint64_t v) { return v >= target.expected; });
}

// Wait for a look-back word of this epoch; returns its payload through `payload`.
GRIDFLOW_HOST_DEVICE bool wait_word(const WaitSite& site, const WaitTarget& target, std::uint64_t* word,
                                    std::uint32_t epoch, std::uint32_t& payload) {
  std::uint64_t last = 0;
  const bool ok = wait_until(
      site, target,
      [&] {
        last = load_word(word);
        return last;
      },
      [epoch](std::uint64_t v) { return word_epoch(v) == epoch; });
  payload = word_payload(last);
  return ok;
}

// ---- gridflow's grid barrier ------------------------------------------------------------------------------
//
// Flat, epoch-valued: one counter that only grows. Barrier number g (counted since the state arena was
// created, starting at 1) is complete when the counter reaches g * participants. Arrive and wait are split
// so a block can do independent work in between. One release RMW per block, one acquire observation.

GRIDFLOW_HOST_DEVICE void barrier_arrive(std::uint64_t* counter) {
  signal_counter(counter, 1);
}

GRIDFLOW_HOST_DEVICE bool barrier_wait(const WaitSite& site, std::uint64_t* counter, std::uint64_t generation,
                                       std::uint32_t participants) {
  const WaitTarget target{program::WaitKind::barrier, 0, static_cast<std::uint32_t>(generation),
                          generation * participants};
  return wait_counter(site, target, counter);
}

// ---- deterministic look-back (scan carries) ---------------------------------------------------------------
//
// Tile t's exclusive prefix is a fold over every earlier tile's aggregate with an association that depends on
// t alone, so results are bit-identical whatever the timing. Aggregates form a radix-32 tree: level 0 holds
// one word per tile; entry j of level k+1 folds entries [32j, 32j+32) of level k and is published by the tile
// that completes that group (tile (j+1) * 32^(k+1) - 1). The prefix of t folds, from the top level down, the
// entries that precede t's index within its group at each level (at most 31 per level, one warp's worth).

inline constexpr std::uint32_t kLookbackRadixBits = 5;
inline constexpr std::uint32_t kLookbackRadix = 1u << kLookbackRadixBits;
inline constexpr std::uint32_t kMaxLookbackLevels = 7; // 32^7 > 2^32 tiles

// Number of tree levels for `num_tiles` tiles: the smallest L >= 1 with 32^L >= num_tiles.
GRIDFLOW_HOST_DEVICE std::uint32_t lookback_levels(std::uint32_t num_tiles) {
  std::uint32_t levels = 1;
  std::uint64_t span = kLookbackRadix;
  while (span < num_tiles) {
    span <<= kLookbackRadixBits;
    ++levels;
  }
  return levels;
}

// Number of entries at `level`: ceil(num_tiles / 32^level).
GRIDFLOW_HOST_DEVICE std::uint64_t lookback_level_size(std::uint32_t num_tiles, std::uint32_t level) {
  const std::uint64_t span = std::uint64_t{1} << (kLookbackRadixBits * level);
  return (num_tiles + span - 1) / span;
}

// Word offset of `level`'s first entry.
GRIDFLOW_HOST_DEVICE std::uint64_t lookback_level_offset(std::uint32_t num_tiles, std::uint32_t level) {
  std::uint64_t offset = 0;
  for (std::uint32_t k = 0; k < level; ++k)
    offset += lookback_level_size(num_tiles, k);
  return offset;
}

// Total words for `num_tiles` tiles.
GRIDFLOW_HOST_DEVICE std::uint64_t lookback_words(std::uint32_t num_tiles) {
  return lookback_level_offset(num_tiles, lookback_levels(num_tiles));
}

} // namespace gridflow::protocol
