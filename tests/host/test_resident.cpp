// The resident runtime's ring protocol on the CPU backend (the same serve() loop the GPU's resident megakernel runs):
// results against plain runs bit for bit in every sync mode, ticket order, backpressure, recovery after a failed run,
// stop() with work queued, several host threads submitting at once, and the errors of bad use.
#include "runtime/errors.hpp"
#include "runtime/resident_backend.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/resident_session.hpp"
#include "scheduler/session.hpp"
#include "tests/common/softmax_sums.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace gridflow {
namespace {

constexpr std::int64_t kRows = 24, kCols = 200;
constexpr std::uint32_t kWorkers = 3;

Graph softmax_sums(const std::vector<float>* x = nullptr) {
  return testing::softmax_sums(kRows, kCols, x);
}

ResidentOptions cpu_runtime(std::uint32_t depth = 8) {
  ResidentOptions o;
  o.backend = Backend::cpu;
  o.cpu_workers = kWorkers;
  o.depth = depth;
  o.idle.spin_ns = 200'000; // the CI machine has two cores: idle workers soon sleep
  return o;
}

ResidentProgramOptions program_options(SyncMode mode = SyncMode::flags, Schedule schedule = Schedule::automatic) {
  ResidentProgramOptions o;
  o.mode = mode;
  o.schedule = schedule;
  o.timeout_ns = 20'000'000'000ull;
  return o;
}

std::vector<float> fresh(std::size_t n, unsigned seed) {
  return testing::fresh_values(n, seed);
}
using testing::tensor_of;

ExternalTensor host(std::vector<float>& v) {
  return {.data = v.data(),
          .elements = static_cast<std::int64_t>(v.size()),
          .dtype = DType::f32,
          .device = kHostMemory,
          .row_stride = 0};
}

bool same_bits(const std::vector<float>& got, const HostTensor& want) {
  return want.bytes() == got.size() * sizeof(float) && std::memcmp(got.data(), want.data(), want.bytes()) == 0;
}

// y and s of a plain run with input x (the reference every resident result must match bit for bit).
struct Expected {
  HostTensor y, s;
};
Expected plain(const std::vector<float>& x, SyncMode mode) {
  SessionOptions o;
  o.backend = Backend::cpu;
  o.mode = mode;
  o.cpu_workers = kWorkers;
  Session s(softmax_sums(&x), o);
  s.run();
  EXPECT_TRUE(s.check().passed);
  return {s.results()[1], s.results()[2]};
}

// Memory a caller owns for one submission: fresh input, poisoned outputs.
struct CallerMemory {
  std::vector<float> x, y, s;
  CallerMemory(unsigned seed)
      : x(fresh(kRows * kCols, seed)), y(kRows * kCols, std::numeric_limits<float>::quiet_NaN()),
        s(kRows, std::numeric_limits<float>::quiet_NaN()) {}
  std::vector<Binding> bindings() { return {{"x", host(x)}, {"y", host(y)}, {"s", host(s)}}; }
};

std::vector<CallerMemory> memories(unsigned count, unsigned first_seed) {
  std::vector<CallerMemory> m;
  for (unsigned i = 0; i < count; ++i)
    m.emplace_back(first_seed + i);
  return m;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Resident, EverySyncModeMatchesPlainRunsBitForBit) {
  for (const SyncMode mode : kAllSyncModes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    ResidentSession rs(cpu_runtime());
    rs.start();
    const auto h = rs.add(softmax_sums(), program_options(mode));
    std::vector<CallerMemory> memory = memories(6, 100);
    std::vector<ResidentSession::Ticket> tickets;
    for (auto& m : memory)
      tickets.push_back(rs.submit(h, m.bindings()));
    for (std::size_t i = 0; i < memory.size(); ++i) {
      const ResidentResult r = rs.wait(tickets[i]);
      EXPECT_EQ(r.ticket, tickets[i]);
      EXPECT_LE(r.published_ns, r.first_ns);
      EXPECT_LE(r.first_ns, r.done_ns);
      EXPECT_LE(r.submitted_ns, r.seen_ns);
      const Expected want = plain(memory[i].x, mode);
      EXPECT_TRUE(same_bits(memory[i].y, want.y)) << "submission " << i;
      EXPECT_TRUE(same_bits(memory[i].s, want.s)) << "submission " << i;
    }
    rs.stop();
  }
}

// Programs that run on a few blocks (flags mode on static lists: only the blocks with tiles take part) interleaved
// with programs that run on every block (barrier mode, and one wide enough for every worker): the blocks that sit
// out a submission skip its ticket and still take part in the next one they have tiles in; every result bit for bit.
TEST(Resident, ProgramsOnSomeBlocksInterleaveWithProgramsOnAll) {
  constexpr std::uint32_t kMany = 6;
  constexpr std::int64_t kFewRows = 2, kFewCols = 64;
  ResidentOptions ro = cpu_runtime(4);
  ro.cpu_workers = kMany;
  ResidentSession rs(ro);
  rs.start();
  const Graph few = testing::softmax_sums(kFewRows, kFewCols);
  const auto small = rs.add(few, program_options(SyncMode::flags));
  const auto everywhere = rs.add(few, program_options(SyncMode::barrier));
  const auto wide = rs.add(softmax_sums(), program_options(SyncMode::flags));
  const std::uint64_t on_small = resident::participants(rs.program(small));
  EXPECT_GE(on_small, 1u);
  EXPECT_LT(on_small, kMany); // the feature under test: the others sit out
  EXPECT_EQ(resident::participants(rs.program(everywhere)), 0u);
  EXPECT_EQ(rs.program(small).schedule, Schedule::static_list);

  struct Run {
    ResidentSession::Handle h;
    std::vector<float> x, y, s;
    ResidentSession::Ticket t = 0;
  };
  std::mt19937 rng(3);
  std::vector<Run> runs;
  for (int i = 0; i < 60; ++i) {
    const ResidentSession::Handle h = std::array{small, everywhere, wide, small}[rng() % 4];
    const std::int64_t rows = h == wide ? kRows : kFewRows, cols = h == wide ? kCols : kFewCols;
    runs.push_back(
        {h, fresh(rows * cols, 500 + i), std::vector<float>(rows * cols, -7.0f), std::vector<float>(rows, -7.0f)});
  }
  for (Run& r : runs)
    r.t = rs.submit(r.h, {{"x", host(r.x)}, {"y", host(r.y)}, {"s", host(r.s)}});
  for (Run& r : runs)
    rs.wait(r.t);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    SessionOptions o;
    o.backend = Backend::cpu;
    o.mode = r.h == everywhere ? SyncMode::barrier : SyncMode::flags;
    o.cpu_workers = kMany;
    const std::int64_t rows = r.h == wide ? kRows : kFewRows, cols = r.h == wide ? kCols : kFewCols;
    Session s(testing::softmax_sums(rows, cols, &r.x), o);
    s.run();
    EXPECT_TRUE(same_bits(r.y, s.results()[1])) << "submission " << i;
    EXPECT_TRUE(same_bits(r.s, s.results()[2])) << "submission " << i;
  }
  rs.stop();
}

// A program of one tile runs on block 0 alone, which publishes it to the other blocks only after retiring it; such
// lone submissions interleaved with a program on every block (barrier mode): every result bit for bit, and each
// completion's times in order.
TEST(Resident, LoneSubmissionsInterleaveWithProgramsOnAll) {
  constexpr std::uint32_t kMany = 5;
  constexpr std::int64_t kLone = 256;
  ResidentOptions ro = cpu_runtime(4);
  ro.cpu_workers = kMany;
  ResidentSession rs(ro);
  rs.start();
  Graph one("one-tile");
  one.add_buffer("x", DType::f32, {kLone}, InitUniform{});
  one.add_buffer("s", DType::f32, {1});
  one.reduce("sum", "x", "s", ReduceFn::sum);
  const auto alone = rs.add(one, program_options(SyncMode::flags));
  const auto everywhere = rs.add(softmax_sums(), program_options(SyncMode::barrier));
  EXPECT_EQ(resident::participants(rs.program(alone)), 1u); // the feature under test
  EXPECT_EQ(resident::participants(rs.program(everywhere)), 0u);

  struct Run {
    bool lone;
    std::vector<float> x, y, s;
    ResidentSession::Ticket t = 0;
  };
  std::mt19937 rng(11);
  std::vector<Run> runs;
  for (int i = 0; i < 48; ++i) {
    const bool lone = rng() % 3 != 0;
    const std::int64_t n = lone ? kLone : kRows * kCols;
    runs.push_back({lone, fresh(n, 900 + i), std::vector<float>(lone ? 0 : n, -7.0f),
                    std::vector<float>(lone ? 1 : kRows, -7.0f)});
  }
  for (Run& r : runs)
    r.t = r.lone ? rs.submit(alone, {{"x", host(r.x)}, {"s", host(r.s)}})
                 : rs.submit(everywhere, {{"x", host(r.x)}, {"y", host(r.y)}, {"s", host(r.s)}});
  for (Run& r : runs) {
    const ResidentResult done = rs.wait(r.t);
    EXPECT_LE(done.published_ns, done.first_ns);
    EXPECT_LE(done.first_ns, done.done_ns);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    if (r.lone) {
      SessionOptions o;
      o.backend = Backend::cpu;
      o.cpu_workers = kMany;
      Session s(one, o);
      std::vector<float> x = r.x, want(1, -7.0f);
      s.bind("x", host(x));
      s.bind("s", host(want));
      s.run();
      double sum = 0, magnitude = 0; // the float64 reference, within float32 summation error
      for (const float v : r.x)
        sum += v, magnitude += std::abs(v);
      EXPECT_NEAR(r.s[0], sum, 1e-5 * magnitude) << "submission " << i;
      EXPECT_EQ(std::memcmp(r.s.data(), want.data(), sizeof(float)), 0) << "submission " << i;
    } else {
      const Expected want = plain(r.x, SyncMode::barrier);
      EXPECT_TRUE(same_bits(r.y, want.y)) << "submission " << i;
      EXPECT_TRUE(same_bits(r.s, want.s)) << "submission " << i;
    }
  }
  rs.stop();
}

TEST(Resident, PingsRoundTripInOrderBetweenRunsAndNeedARunningRuntime) {
  ResidentSession rs(cpu_runtime(4)); // fewer slots than pings: the ring wraps
  EXPECT_NE(error_of([&] { rs.ping(); }).find("not running"), std::string::npos);
  rs.start();
  const auto h = rs.add(softmax_sums(), program_options());
  std::vector<float> x = fresh(kRows * kCols, 21), y(kRows * kCols, -7.0f), s(kRows, -7.0f);
  const auto run = rs.submit(h, {{"x", host(x)}, {"y", host(y)}, {"s", host(s)}});
  std::vector<ResidentResult> pings;
  for (int i = 0; i < 10; ++i) {
    pings.push_back(rs.ping());
    const ResidentResult& r = pings.back();
    EXPECT_LE(r.submitted_ns, r.published_ns) << "ping " << i;
    EXPECT_LE(r.published_ns, r.done_ns) << "ping " << i;
    EXPECT_LE(r.done_ns, r.seen_ns) << "ping " << i;
    EXPECT_FALSE(r.lean_tiles);
  }
  // The run submitted before the pings completed before the first of them (ticket order), with a plain run's bits.
  const ResidentResult ran = rs.wait(run);
  EXPECT_LE(ran.done_ns, pings.front().published_ns);
  EXPECT_LT(ran.ticket, pings.front().ticket);
  const Expected want = plain(x, SyncMode::flags);
  EXPECT_TRUE(same_bits(y, want.y));
  EXPECT_TRUE(same_bits(s, want.s));
  rs.stop();
  EXPECT_NE(error_of([&] { rs.ping(); }).find("not running"), std::string::npos);
}

TEST(Resident, SubmissionsRunInTicketOrder) {
  // Submission i reads what submission i - 1 wrote (x of i is y of i - 1): any other order gives other bits.
  constexpr int kSteps = 12;
  std::vector<std::vector<float>> chain(kSteps + 1, std::vector<float>(kRows * kCols, -7.0f));
  chain[0] = fresh(kRows * kCols, 5);
  std::vector<std::vector<float>> sums(kSteps, std::vector<float>(kRows, -7.0f));
  ResidentSession rs(cpu_runtime(4)); // fewer slots than steps: the ring wraps
  rs.start();
  const auto h = rs.add(softmax_sums(), program_options());
  std::vector<ResidentSession::Ticket> tickets;
  for (int i = 0; i < kSteps; ++i)
    tickets.push_back(rs.submit(h, {{"x", host(chain[i])}, {"y", host(chain[i + 1])}, {"s", host(sums[i])}}));
  rs.wait_all();
  std::vector<float> x = chain[0];
  for (int i = 0; i < kSteps; ++i) {
    const Expected want = plain(x, SyncMode::flags);
    ASSERT_TRUE(same_bits(chain[i + 1], want.y)) << "step " << i;
    ASSERT_TRUE(same_bits(sums[i], want.s)) << "step " << i;
    std::memcpy(x.data(), want.y.data(), want.y.bytes());
  }
  for (const auto t : tickets)
    EXPECT_NE(error_of([&] { rs.wait(t); }).find("already waited"), std::string::npos); // wait_all took them
}

TEST(Resident, BackpressureThenRecoveryAfterAFailedRun) {
  ResidentSession rs(cpu_runtime(2));
  rs.start();
  ResidentProgramOptions po = program_options(SyncMode::flags, Schedule::dynamic);
  po.timeout_ns = 300'000'000; // the faulted run holds the runtime for 0.3 s
  const auto h = rs.add(softmax_sums(), po);
  std::uint32_t soft_tile = program::kNoTile; // a tile of the softmax, which the row sums wait for
  for (std::uint32_t g = 0; g < rs.program(h).tiles.size() && soft_tile == program::kNoTile; ++g)
    if (rs.program(h).task_names[rs.program(h).tiles[g].task] == "soft")
      soft_tile = g;
  ASSERT_NE(soft_tile, program::kNoTile);

  CallerMemory bad(1), a(2), b(3);
  const auto t_bad = rs.submit(h, bad.bindings(), soft_tile);
  const auto t_a = rs.submit(h, a.bindings());
  // Two slots, both taken while the faulted run waits: a third submission does not fit.
  EXPECT_FALSE(rs.try_submit(h, b.bindings()).has_value());
  const auto t_b = rs.submit(h, b.bindings()); // blocks until the faulted run completed
  const std::string failed = error_of([&] { rs.wait(t_bad); });
  EXPECT_NE(failed.find("watchdog"), std::string::npos) << failed;
  EXPECT_NE(failed.find("'sums'"), std::string::npos) << failed; // names the waiting task
  // The runs queued behind it ran on a reset arena and are right.
  rs.wait(t_a);
  rs.wait(t_b);
  for (CallerMemory* m : {&a, &b}) {
    const Expected want = plain(m->x, SyncMode::flags);
    EXPECT_TRUE(same_bits(m->y, want.y));
    EXPECT_TRUE(same_bits(m->s, want.s));
  }
  // And the program keeps running from run 1 of its fresh arena.
  CallerMemory c(4);
  rs.wait(rs.submit(h, c.bindings()));
  EXPECT_TRUE(same_bits(c.y, plain(c.x, SyncMode::flags).y));
}

TEST(Resident, StopDrainsQueuedWorkAndTheRuntimeStartsAgain) {
  ResidentSession rs(cpu_runtime(16));
  rs.start();
  const auto h = rs.add(softmax_sums(), program_options());
  std::vector<CallerMemory> memory = memories(10, 20);
  std::vector<ResidentSession::Ticket> tickets;
  for (auto& m : memory)
    tickets.push_back(rs.submit(h, m.bindings()));
  rs.stop(); // returns after every queued submission completed
  EXPECT_FALSE(rs.running());
  for (std::size_t i = 0; i < memory.size(); ++i) {
    EXPECT_NO_THROW(rs.wait(tickets[i]));
    EXPECT_TRUE(same_bits(memory[i].y, plain(memory[i].x, SyncMode::flags).y));
  }
  CallerMemory late(40);
  EXPECT_NE(error_of([&] { rs.submit(h, late.bindings()); }).find("not running"), std::string::npos);
  rs.start();
  const auto t = rs.submit(h, late.bindings());
  EXPECT_GT(t, tickets.back()); // tickets keep counting across launches
  rs.wait(t);
  EXPECT_TRUE(same_bits(late.y, plain(late.x, SyncMode::flags).y));
}

TEST(Resident, SeveralHostThreadsSubmitAtOnce) {
  ResidentSession rs(cpu_runtime(4));
  rs.start();
  const auto h = rs.add(softmax_sums(), program_options());
  constexpr int kThreads = 4, kEach = 8;
  std::vector<std::vector<CallerMemory>> memory(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kEach; ++i)
      memory[t].emplace_back(static_cast<unsigned>(1000 + 16 * t + i));
  std::vector<std::string> errors(kThreads);
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        try {
          std::vector<ResidentSession::Ticket> mine;
          for (auto& m : memory[t])
            mine.push_back(rs.submit(h, m.bindings()));
          for (const auto ticket : mine)
            rs.wait(ticket);
        } catch (const std::exception& e) {
          errors[t] = e.what();
        }
      });
  }
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "");
    for (auto& m : memory[t]) {
      const Expected want = plain(m.x, SyncMode::flags);
      EXPECT_TRUE(same_bits(m.y, want.y));
      EXPECT_TRUE(same_bits(m.s, want.s));
    }
  }
}

TEST(Resident, OwnMemoryUploadAndDownload) {
  ResidentSession rs(cpu_runtime());
  rs.start();
  const Graph g = softmax_sums();
  const auto h = rs.add(g, program_options());
  // Without bindings a run uses the program's own memory, holding the graph's initial data.
  rs.wait(rs.submit(h));
  SessionOptions o;
  o.backend = Backend::cpu;
  o.cpu_workers = kWorkers;
  Session plain_run(g, o);
  plain_run.run();
  EXPECT_TRUE(bit_identical(rs.download(h, "y"), plain_run.results()[1]));
  // New contents for the input, ordered after what was submitted before.
  const std::vector<float> x = fresh(kRows * kCols, 77);
  rs.upload(h, "x", tensor_of(x));
  rs.wait(rs.submit(h));
  EXPECT_TRUE(bit_identical(rs.download(h, "s"), plain(x, SyncMode::flags).s));
}

// A worker keeps the record of the program it ran last: a run over the program's own memory after one over the
// caller's, and a run without the test fault after a faulted one, must not inherit the earlier run's buffers or
// fault.
TEST(Resident, OwnMemoryAndCallerMemoryAlternateOnOneProgram) {
  ResidentSession rs(cpu_runtime(4));
  rs.start();
  ResidentProgramOptions po = program_options(SyncMode::flags, Schedule::dynamic);
  po.timeout_ns = 200'000'000;
  const auto h = rs.add(softmax_sums(), po);
  const std::vector<float> own = fresh(kRows * kCols, 90);
  rs.upload(h, "x", tensor_of(own));
  const Expected want_own = plain(own, SyncMode::flags);
  std::uint32_t soft_tile = program::kNoTile;
  for (std::uint32_t g = 0; g < rs.program(h).tiles.size() && soft_tile == program::kNoTile; ++g)
    if (rs.program(h).task_names[rs.program(h).tiles[g].task] == "soft")
      soft_tile = g;
  ASSERT_NE(soft_tile, program::kNoTile);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    CallerMemory m(200 + round);
    rs.wait(rs.submit(h, m.bindings()));
    const Expected want = plain(m.x, SyncMode::flags);
    EXPECT_TRUE(same_bits(m.y, want.y));
    EXPECT_TRUE(same_bits(m.s, want.s));
    EXPECT_FALSE(rs.wait(rs.submit(h)).lean_tiles); // own memory again, not the caller's; no lean path on the CPU
    EXPECT_TRUE(bit_identical(rs.download(h, "y"), want_own.y));
    EXPECT_TRUE(bit_identical(rs.download(h, "s"), want_own.s));
    CallerMemory bad(300 + round);
    EXPECT_NE(error_of([&] { rs.wait(rs.submit(h, bad.bindings(), soft_tile)); }).find("watchdog"), std::string::npos);
    rs.wait(rs.submit(h)); // no fault inherited: completes, right
    EXPECT_TRUE(bit_identical(rs.download(h, "s"), want_own.s));
  }
  rs.stop();
}

TEST(Resident, RefusesBadUseNamingWhatIsWrong) {
  ResidentSession rs(cpu_runtime());
  const auto h = rs.add(softmax_sums(), program_options());
  CallerMemory m(9);
  EXPECT_NE(error_of([&] { rs.submit(h, m.bindings()); }).find("not running"), std::string::npos);
  rs.start();
  EXPECT_NE(error_of([&] { rs.start(); }).find("already running"), std::string::npos);
  std::vector<std::int32_t> wrong(kRows * kCols);
  ExternalTensor i32{.data = wrong.data(), .elements = kRows * kCols, .dtype = DType::i32, .device = kHostMemory};
  EXPECT_NE(error_of([&] { rs.submit(h, {{"x", i32}}); }).find("buffer 'x': bind.dtype = i32"), std::string::npos);
  EXPECT_NE(error_of([&] { rs.submit(h, {{"nope", host(m.x)}}); }).find("buffer 'nope'"), std::string::npos);
  std::vector<float> strided(kRows * (kCols + 8));
  ExternalTensor rows{.data = strided.data(),
                      .elements = static_cast<std::int64_t>(strided.size()),
                      .dtype = DType::f32,
                      .device = kHostMemory,
                      .row_stride = kCols + 8};
  EXPECT_NE(error_of([&] { rs.submit(h, {{"x", rows}}); }).find("address directly"), std::string::npos);
  EXPECT_NE(error_of([&] { rs.submit(7); }).find("no program 7"), std::string::npos);
  EXPECT_NE(error_of([&] { rs.wait(12345); }).find("no ticket 12345"), std::string::npos);
  const auto t = rs.submit(h, m.bindings());
  rs.wait(t);
  EXPECT_NE(error_of([&] { rs.wait(t); }).find("already waited"), std::string::npos);
  EXPECT_NE(error_of([&] { rs.upload(h, "x", HostTensor(DType::f32, 3)); }).find("wrong dtype or size"),
            std::string::npos);
  ResidentProgramOptions unbounded = program_options();
  unbounded.timeout_ns = 0;
  EXPECT_NE(error_of([&] { rs.add(softmax_sums(), unbounded); }).find("watchdog"), std::string::npos);
  ResidentOptions no_ring = cpu_runtime();
  no_ring.depth = 0;
  EXPECT_NE(error_of([&] { ResidentSession bad(no_ring); }).find("depth = 0"), std::string::npos);
}

TEST(Resident, DestructionWithWorkQueuedNeitherHangsNorLosesIt) {
  std::vector<CallerMemory> memory = memories(5, 60);
  {
    ResidentSession rs(cpu_runtime());
    rs.start();
    const auto h = rs.add(softmax_sums(), program_options());
    for (auto& m : memory)
      rs.submit(h, m.bindings());
  } // the destructor stops: the queued submissions complete first
  for (auto& m : memory)
    EXPECT_TRUE(same_bits(m.y, plain(m.x, SyncMode::flags).y));
}

} // namespace
} // namespace gridflow
