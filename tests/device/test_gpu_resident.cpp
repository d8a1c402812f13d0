// The resident megakernel: submissions over the caller's device memory bit for bit with plain runs in every sync mode,
// lean row tiles over a program's own buffers alternating with bound runs, the smallest graph many times over,
// several programs side by side, recovery after a watchdog error with the queued submissions run, stop() with work
// queued, and a process that exits with the kernel resident.
//
// Device memory is allocated and results are compared while no resident kernel runs (cudaMalloc and cudaFree may wait
// for the whole device), and plain reference runs happen before start() (a second cooperative kernel would not fit).
// The tests the sanitizers run (scripts/gpu-check.sh) add their programs before start(): compute-sanitizer memcheck
// reports the resident kernel's reads of memory allocated after its launch as out of bounds, in bounds as they are.
// SmallestGraphManyTimesAndExamplesSideBySide adds while the kernel runs.
#include "runtime/errors.hpp"
#include "runtime/gpu/device_memory.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/resident_session.hpp"
#include "tests/common/softmax_sums.hpp"
#include "tests/device/caller_kernels.hpp"
#include "tests/device/gpu_fixture.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

extern char** environ;

namespace gridflow {
namespace {

using testing::gpu_options;

constexpr std::int64_t kRows = 64, kCols = 1024, kN = kRows * kCols;

std::vector<float> values(std::uint32_t seed) {
  std::vector<float> x(kN);
  for (std::int64_t i = 0; i < kN; ++i)
    x[static_cast<std::size_t>(i)] = testing::caller_value(seed, i);
  return x;
}

ExternalTensor device_tensor(const gpu::DeviceBuffer& b, std::int64_t elements) {
  return {.data = b.get(), .elements = elements, .dtype = DType::f32, .device = probe_gpu().ordinal, .row_stride = 0};
}

HostTensor download(const gpu::DeviceBuffer& b, std::int64_t elements) {
  HostTensor t(DType::f32, elements);
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(t.data(), b.get(), t.bytes(), cudaMemcpyDeviceToHost));
  return t;
}

ResidentOptions gpu_runtime(std::uint32_t depth = 16) {
  ResidentOptions o;
  o.backend = Backend::gpu;
  o.depth = depth;
  return o;
}

ResidentProgramOptions program_options(SyncMode mode, Schedule schedule = Schedule::automatic) {
  ResidentProgramOptions o;
  o.mode = mode;
  o.schedule = schedule;
  o.timeout_ns = 5'000'000'000ull;
  return o;
}

// One submission's memory on the device: x holding `x`, y and s poisoned.
struct Memory {
  gpu::DeviceBuffer x{kN * 4}, y{kN * 4}, s{kRows * 4};
  explicit Memory(const std::vector<float>& values) {
    GRIDFLOW_CUDA_CHECK(cudaMemcpy(x.get(), values.data(), kN * 4, cudaMemcpyHostToDevice));
    GRIDFLOW_CUDA_CHECK(cudaMemset(y.get(), 0xff, kN * 4));
    GRIDFLOW_CUDA_CHECK(cudaMemset(s.get(), 0xff, kRows * 4));
  }
  std::vector<Binding> bindings() const {
    return {{"x", device_tensor(x, kN)}, {"y", device_tensor(y, kN)}, {"s", device_tensor(s, kRows)}};
  }
};

// y and s of a plain GPU run with input x.
std::vector<HostTensor> plain(const std::vector<float>& x, SyncMode mode) {
  Session s(testing::softmax_sums(kRows, kCols, &x), gpu_options(mode));
  s.run();
  EXPECT_TRUE(s.check().passed) << s.check().summary();
  return {s.results()[1], s.results()[2]};
}

class GpuResident : public testing::GpuTest {};

TEST_F(GpuResident, EverySyncModeMatchesPlainRunsBitForBit) {
  for (const SyncMode mode : kAllSyncModes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    std::vector<std::vector<float>> inputs;
    std::vector<std::vector<HostTensor>> expected;
    std::vector<std::unique_ptr<Memory>> memory;
    for (std::uint32_t i = 0; i < 4; ++i) {
      inputs.push_back(values(300 + i));
      expected.push_back(plain(inputs.back(), mode));
      memory.push_back(std::make_unique<Memory>(inputs.back()));
    }
    {
      ResidentSession rs(gpu_runtime());
      const auto h = rs.add(testing::softmax_sums(kRows, kCols), program_options(mode));
      rs.start();
      std::vector<ResidentSession::Ticket> tickets;
      for (int round = 0; round < 3; ++round) // the same memory again: later runs overwrite with the same bits
        for (const auto& m : memory)
          tickets.push_back(rs.submit(h, m->bindings()));
      for (const auto t : tickets) {
        const ResidentResult r = rs.wait(t);
        EXPECT_LE(r.published_ns, r.first_ns);
        EXPECT_LE(r.first_ns, r.done_ns);
      }
      rs.stop();
    }
    for (std::size_t i = 0; i < memory.size(); ++i) {
      EXPECT_TRUE(bit_identical(download(memory[i]->y, kN), expected[i][0])) << "submission " << i;
      EXPECT_TRUE(bit_identical(download(memory[i]->s, kRows), expected[i][1])) << "submission " << i;
    }
  }
}

// A program of lean row tiles runs through the lean tile path over its own buffers and through the general
// interpreter over bound memory: both, alternating on one program in every sync mode and schedule, bit for bit with
// plain runs, with new inputs uploaded into its own buffers between runs; and the one-tile graph that block 0 runs
// alone.
TEST_F(GpuResident, LeanTilesOverOwnBuffersAlternateWithBoundRuns) {
  for (const SyncMode mode : kAllSyncModes)
    for (const Schedule schedule : {Schedule::static_list, Schedule::dynamic}) {
      SCOPED_TRACE(fmt::format("{} {}", to_string(mode), to_string(schedule)));
      const std::vector<float> xa = values(400), xb = values(401), xc = values(402);
      const std::vector<HostTensor> ea = plain(xa, mode), eb = plain(xb, mode), ec = plain(xc, mode);
      Memory bound(xc);
      {
        ResidentSession rs(gpu_runtime());
        const auto h = rs.add(testing::softmax_sums(kRows, kCols, &xa), program_options(mode, schedule));
        rs.start();
        for (int round = 0; round < 3; ++round) {
          EXPECT_TRUE(rs.wait(rs.submit(h)).lean_tiles);
          EXPECT_TRUE(bit_identical(rs.download(h, "y"), ea[0])) << "round " << round;
          EXPECT_TRUE(bit_identical(rs.download(h, "s"), ea[1])) << "round " << round;
          EXPECT_FALSE(rs.wait(rs.submit(h, bound.bindings())).lean_tiles);
        }
        rs.upload(h, "x", testing::tensor_of(xb));
        for (int i = 0; i < 3; ++i)
          EXPECT_TRUE(rs.wait(rs.submit(h)).lean_tiles);
        EXPECT_TRUE(bit_identical(rs.download(h, "y"), eb[0]));
        EXPECT_TRUE(bit_identical(rs.download(h, "s"), eb[1]));
        rs.stop();
      }
      EXPECT_TRUE(bit_identical(download(bound.y, kN), ec[0]));
      EXPECT_TRUE(bit_identical(download(bound.s, kRows), ec[1]));
    }

  Graph tiny("tiny");
  tiny.add_buffer("x", DType::f32, {1000}, InitUniform{-1, 1, 5});
  tiny.add_buffer("s", DType::f32, {1});
  tiny.reduce("sum", "x", "s", ReduceFn::sum);
  Session plain_tiny(tiny, gpu_options(SyncMode::flags));
  plain_tiny.run();
  ASSERT_TRUE(plain_tiny.check().passed) << plain_tiny.check().summary();
  ResidentSession rs(gpu_runtime());
  const auto h = rs.add(tiny, program_options(SyncMode::flags));
  rs.start();
  for (int i = 0; i < 100; ++i)
    EXPECT_TRUE(rs.wait(rs.submit(h)).lean_tiles);
  EXPECT_TRUE(bit_identical(rs.download(h, "s"), plain_tiny.results()[1]));
  rs.stop();
}

// A program with lean partial tiles (a whole-range reduce beside lean rows) runs lean when launched, but through the
// resident interpreter (its lean path has no partial tiles: runtime/lean_program.hpp, resident_lean_program), whose
// lean partial tiles give the launch's bits in every sync mode.
TEST_F(GpuResident, LeanPartialProgramsRunTheInterpreterWithTheLaunchBits) {
  const std::vector<float> x = values(403);
  Graph g = testing::softmax_sums(kRows, kCols, &x);
  g.add_buffer("total", DType::f32, {1});
  g.reduce("total", "y", "total", ReduceFn::sum);
  for (const SyncMode mode : kAllSyncModes) {
    SCOPED_TRACE(std::string(to_string(mode)));
    Session launch(g, gpu_options(mode));
    const RunResult r = launch.run();
    ASSERT_TRUE(launch.check().passed) << launch.check().summary();
    EXPECT_TRUE(r.lean_kernel);
    ResidentSession rs(gpu_runtime());
    const auto h = rs.add(g, program_options(mode, Schedule::static_list));
    rs.start();
    for (int round = 0; round < 3; ++round) {
      EXPECT_FALSE(rs.wait(rs.submit(h)).lean_tiles);
      EXPECT_TRUE(bit_identical(rs.download(h, "y"), launch.results()[1])) << "round " << round;
      EXPECT_TRUE(bit_identical(rs.download(h, "total"), launch.results()[3])) << "round " << round;
    }
    rs.stop();
  }
}

TEST_F(GpuResident, RecoversAfterAWatchdogErrorAndRunsWhatWasQueued) {
  const std::vector<float> xa = values(11), xb = values(12);
  const std::vector<HostTensor> ea = plain(xa, SyncMode::flags), eb = plain(xb, SyncMode::flags);
  Memory bad(xa), a(xa), b(xb);
  {
    ResidentSession rs(gpu_runtime(4));
    ResidentProgramOptions po = program_options(SyncMode::flags, Schedule::dynamic);
    po.timeout_ns = 200'000'000;
    const auto h = rs.add(testing::softmax_sums(kRows, kCols), po);
    rs.start();
    const LoweredProgram& p = rs.program(h);
    std::uint32_t soft_tile = program::kNoTile;
    for (std::uint32_t g = 0; g < p.tiles.size() && soft_tile == program::kNoTile; ++g)
      if (p.task_names[p.tiles[g].task] == "soft")
        soft_tile = g;
    const auto t_bad = rs.submit(h, bad.bindings(), soft_tile);
    const auto t_a = rs.submit(h, a.bindings());
    const auto t_b = rs.submit(h, b.bindings());
    try {
      rs.wait(t_bad);
      ADD_FAILURE() << "the faulted submission reported success";
    } catch (const DeviceError& e) {
      EXPECT_NE(std::string(e.what()).find("watchdog"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("'sums'"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(rs.wait(t_a));
    EXPECT_NO_THROW(rs.wait(t_b));
    for (int i = 0; i < 20; ++i) // the program's arena restarted from run 1
      rs.wait(rs.submit(h, a.bindings()));
  }
  EXPECT_TRUE(bit_identical(download(a.y, kN), ea[0]));
  EXPECT_TRUE(bit_identical(download(b.y, kN), eb[0]));
  EXPECT_TRUE(bit_identical(download(b.s, kRows), eb[1]));
}

TEST_F(GpuResident, SmallestGraphManyTimesAndExamplesSideBySide) {
  Graph tiny("tiny");
  tiny.add_buffer("x", DType::f32, {256}, InitUniform{-1, 1, 3});
  tiny.add_buffer("s", DType::f32, {1});
  tiny.reduce("sum", "x", "s", ReduceFn::sum);
  const Graph attention = load_graph(std::string(GRIDFLOW_SOURCE_DIR) + "/examples/graphs/attention_rows.json");
  const Graph moe = load_graph(std::string(GRIDFLOW_SOURCE_DIR) + "/examples/graphs/moe_routing.json");
  std::vector<std::vector<HostTensor>> expected;
  for (const Graph* g : {static_cast<const Graph*>(&tiny), &attention, &moe}) {
    Session s(*g, gpu_options(SyncMode::flags));
    s.run();
    ASSERT_TRUE(s.check().passed) << g->name() << ": " << s.check().summary();
    expected.push_back(s.results());
  }
  ResidentSession rs(gpu_runtime(64));
  rs.start();
  const auto h_tiny = rs.add(tiny, program_options(SyncMode::flags));
  const auto h_att = rs.add(attention, program_options(SyncMode::flags));
  const auto h_moe = rs.add(moe, program_options(SyncMode::flags));
  for (int i = 0; i < 2000; ++i)
    rs.submit(h_tiny);
  rs.wait_all();
  for (int i = 0; i < 50; ++i) {
    rs.submit(h_att);
    rs.submit(h_moe);
  }
  rs.wait_all();
  const std::vector<std::pair<ResidentSession::Handle, std::size_t>> programs = {{h_tiny, 0}, {h_att, 1}, {h_moe, 2}};
  for (const auto& [h, k] : programs) {
    const Graph& g = rs.graph(h);
    for (std::size_t b = 0; b < g.buffers().size(); ++b)
      EXPECT_TRUE(bit_identical(rs.download(h, g.buffers()[b].name), expected[k][b]))
          << g.name() << " buffer " << g.buffers()[b].name;
  }
  rs.stop();
}

TEST_F(GpuResident, StopDrainsQueuedWorkAndTheDestructorStopsTheKernel) {
  const std::vector<float> x = values(21);
  const std::vector<HostTensor> e = plain(x, SyncMode::barrier);
  std::vector<std::unique_ptr<Memory>> memory;
  for (int i = 0; i < 8; ++i)
    memory.push_back(std::make_unique<Memory>(x));
  {
    ResidentSession rs(gpu_runtime(4));
    const auto h = rs.add(testing::softmax_sums(kRows, kCols), program_options(SyncMode::barrier));
    rs.start();
    for (int i = 0; i < 4; ++i)
      rs.submit(h, memory[static_cast<std::size_t>(i)]->bindings());
    rs.stop();
    EXPECT_FALSE(rs.running());
    rs.start();
    for (int i = 4; i < 8; ++i)
      rs.submit(h, memory[static_cast<std::size_t>(i)]->bindings());
  } // no stop(): the destructor drains and ends the kernel
  for (const auto& m : memory)
    EXPECT_TRUE(bit_identical(download(m->y, kN), e[0]));
}

TEST_F(GpuResident, AProcessThatExitsWithTheKernelResidentExitsCleanly) {
  // The test binary again, told by the environment to leave a running resident session behind and exit.
  char self[] = "/proc/self/exe";
  char filter[] = "--gtest_filter=GpuResident.AProcessThatExitsWithTheKernelResidentExitsCleanly";
  char* argv[] = {self, filter, nullptr};
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e)
    env_strings.emplace_back(*e);
  env_strings.emplace_back("GRIDFLOW_TEST_RESIDENT_EXIT_CHILD=1");
  if (std::getenv("GRIDFLOW_TEST_RESIDENT_EXIT_CHILD") != nullptr) {
    auto* leaked = new ResidentSession(gpu_runtime()); // never stopped, never destroyed
    leaked->start();
    leaked->wait(leaked->submit(leaked->add(testing::softmax_sums(kRows, kCols), program_options(SyncMode::flags))));
    std::exit(0);
  }
  std::vector<char*> envp;
  for (std::string& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  pid_t child = 0;
  ASSERT_EQ(posix_spawn(&child, self, nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      FAIL() << "the process hung at exit with its resident kernel running";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

} // namespace
} // namespace gridflow
