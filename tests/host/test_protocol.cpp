// The cross-block protocol under real threads: tickets, counters, the grid barrier, the look-back tree, the
// watchdog. The same code runs on the GPU.
#include "runtime/lookback.hpp"
#include "runtime/protocol.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

namespace gridflow {
namespace {

struct alignas(128) Control {
  program::ControlBlock block{};
};

TEST(Protocol, LookbackTreeShape) {
  EXPECT_EQ(protocol::lookback_levels(1), 1u);
  EXPECT_EQ(protocol::lookback_levels(32), 1u);
  EXPECT_EQ(protocol::lookback_levels(33), 2u);
  EXPECT_EQ(protocol::lookback_levels(1024), 2u);
  EXPECT_EQ(protocol::lookback_levels(1025), 3u);
  EXPECT_EQ(protocol::lookback_level_size(100, 0), 100u);
  EXPECT_EQ(protocol::lookback_level_size(100, 1), 4u);
  EXPECT_EQ(protocol::lookback_words(100), 104u);
  EXPECT_EQ(protocol::lookback_level_offset(2000, 2), 2000u + 63u);
}

TEST(Protocol, TicketsAreUniqueUnderContention) {
  std::uint64_t head = 0;
  constexpr int kThreads = 8, kEach = 20000;
  std::vector<std::vector<std::uint64_t>> got(kThreads);
  {
    std::vector<std::jthread> ts;
    for (int t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i)
          got[t].push_back(protocol::claim_ticket(&head));
      });
  }
  std::vector<bool> seen(kThreads * kEach, false);
  for (const auto& v : got)
    for (std::uint64_t x : v) {
      ASSERT_LT(x, seen.size());
      EXPECT_FALSE(seen[x]);
      seen[x] = true;
    }
}

TEST(Protocol, CounterReleaseAcquirePublishesData) {
  // A producer writes a payload then signals; the consumer waits and must see the payload.
  Control c;
  for (int round = 1; round <= 200; ++round) {
    std::uint64_t counter = 0;
    std::vector<int> payload(64, 0);
    std::jthread producer([&] {
      for (int& p : payload)
        p = round;
      protocol::signal_counter(&counter);
    });
    const protocol::WaitSite site{&c.block, 0, 0, 0, 0};
    ASSERT_TRUE(protocol::wait_counter(site, {program::WaitKind::task_counter, 0, 0, 1}, &counter));
    for (int p : payload)
      ASSERT_EQ(p, round);
  }
}

TEST(Protocol, BarrierSeparatesPhasesForManyGenerations) {
  Control c;
  std::uint64_t counter = 0;
  constexpr std::uint32_t kThreads = 6, kGenerations = 300;
  std::vector<std::uint32_t> phase(kThreads, 0);
  std::atomic<bool> violated{false};
  {
    std::vector<std::jthread> ts;
    for (std::uint32_t t = 0; t < kThreads; ++t)
      ts.emplace_back([&, t] {
        const protocol::WaitSite site{&c.block, 5'000'000'000ull, t, 0, 0};
        for (std::uint32_t g = 1; g <= kGenerations; ++g) {
          protocol::atomic_ref<std::uint32_t>(phase[t]).store(g, cuda::std::memory_order_relaxed);
          protocol::barrier_arrive(&counter);
          ASSERT_TRUE(protocol::barrier_wait(site, &counter, g, kThreads));
          for (std::uint32_t o = 0; o < kThreads; ++o)
            if (protocol::atomic_ref<std::uint32_t>(phase[o]).load(cuda::std::memory_order_relaxed) < g)
              violated = true;
        }
      });
  }
  EXPECT_FALSE(violated.load());
  EXPECT_EQ(counter, std::uint64_t{kThreads} * kGenerations); // nothing reset: the counter only grows
}

TEST(Protocol, WatchdogChecksEveryConfiguredNumberOfPolls) {
  // The abort flag is read after every check_every-th poll, never between: an aborted run's wait polls exactly that
  // many times after its first observation.
  for (std::uint32_t every : {1u, 4u, 16u}) {
    Control c;
    protocol::abort_run(&c.block);
    program::PollPacing pacing;
    pacing.check_every = every;
    const protocol::WaitSite site{&c.block, 0, 0, 0, 0, pacing};
    std::uint32_t polls = 0;
    EXPECT_FALSE(protocol::wait_until(
        site, {program::WaitKind::task_counter, 0, 0, 1},
        [&] {
          ++polls;
          return std::uint64_t{0};
        },
        [](std::uint64_t v) { return v == 1; }));
    EXPECT_EQ(polls, every + 1) << every;
  }
}

TEST(Protocol, WatchdogTurnsAHangIntoARecordedError) {
  Control c;
  std::uint64_t never = 0;
  const protocol::WaitSite site{&c.block, 20'000'000ull, 3, 7, 2};
  const auto t0 = protocol::now_ns();
  EXPECT_FALSE(protocol::wait_counter(site, {program::WaitKind::task_counter, 1, 0, 5}, &never));
  const auto waited = protocol::now_ns() - t0;
  EXPECT_GE(waited, 20'000'000ull);
  EXPECT_LT(waited, 2'000'000'000ull);
  EXPECT_EQ(c.block.error.code, static_cast<std::uint32_t>(program::ErrorCode::watchdog_timeout));
  EXPECT_EQ(c.block.error.block, 3u);
  EXPECT_EQ(c.block.error.tile, 7u);
  EXPECT_EQ(c.block.error.wait_task, 1u);
  EXPECT_EQ(c.block.error.expected, 5u);
  EXPECT_EQ(c.block.error.seen, 0u);
  EXPECT_NE(c.block.abort, 0u);
  // Every other waiter leaves as soon as the run is aborted, without its own timeout.
  std::uint64_t other = 0;
  const protocol::WaitSite forever{&c.block, 0, 4, 8, 2};
  EXPECT_FALSE(protocol::wait_counter(forever, {program::WaitKind::task_counter, 1, 0, 5}, &other));
}

TEST(Protocol, FirstErrorWins) {
  Control c;
  program::ErrorRecord a, b;
  a.code = 1;
  a.block = 10;
  b.code = 2;
  b.block = 20;
  protocol::raise_error(&c.block, a);
  protocol::raise_error(&c.block, b);
  EXPECT_EQ(c.block.error.code, 1u);
  EXPECT_EQ(c.block.error.block, 10u);
}

// Threads play the tiles of one scan task: every prefix must equal the deterministic fold, whatever the timing,
// and repeated runs with new epochs must need no reset.
TEST(Protocol, LookbackPrefixesAreExactAndEpochValued) {
  constexpr std::uint32_t kTiles = 2100; // three levels
  std::vector<std::uint64_t> words(protocol::lookback_words(kTiles), 0);
  Control c;
  auto add = [](std::uint32_t a, std::uint32_t b) { return a + b; }; // integer payloads: the fold is exact
  for (std::uint32_t epoch = 1; epoch <= 3; ++epoch) {
    std::vector<std::uint32_t> prefix(kTiles, 0xffffffff);
    std::atomic<std::uint32_t> next{0};
    {
      std::vector<std::jthread> ts;
      for (int t = 0; t < 8; ++t)
        ts.emplace_back([&, t] {
          for (;;) {
            const std::uint32_t tile = next.fetch_add(1); // claim order = tile order, like the megakernel
            if (tile >= kTiles)
              return;
            const protocol::WaitSite site{&c.block, 5'000'000'000ull, static_cast<std::uint32_t>(t), tile, 0};
            ASSERT_TRUE(protocol::lookback_prefix(site, 0, words.data(), kTiles, tile, epoch, tile + epoch, 0u, add,
                                                  prefix[tile]));
          }
        });
    }
    std::uint32_t expect = 0;
    for (std::uint32_t t = 0; t < kTiles; ++t) {
      ASSERT_EQ(prefix[t], expect) << "tile " << t << " epoch " << epoch;
      expect += t + epoch;
    }
  }
}

} // namespace
} // namespace gridflow
