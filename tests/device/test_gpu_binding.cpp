// Sessions over the caller's device memory and stream: a gridflow run between two kernels of the caller's own on one
// stream, in order and bit for bit with a plain run, in every sync mode and on both megakernels; staged bindings
// (strided rows, unaligned addresses) touching only the caller's rows; memory the GPU backend cannot run on refused;
// a watchdog error of a run on the caller's stream surfacing at wait().
#include "runtime/errors.hpp"
#include "scheduler/errors.hpp"
#include "tests/common/softmax_sums.hpp"
#include "tests/device/caller_kernels.hpp"
#include "tests/device/gpu_fixture.hpp"

#include "runtime/gpu/device_memory.hpp"

#include <cstdlib>
#include <cstring>

namespace gridflow {
namespace {

using testing::gpu_options;

constexpr std::int64_t kRows = 64, kCols = 1024, kN = kRows * kCols;
constexpr std::uint32_t kSeed = 77;

Graph softmax_sums(const std::vector<float>* x) {
  return testing::softmax_sums(kRows, kCols, x);
}

std::vector<float> caller_values() {
  std::vector<float> x(kN);
  for (std::int64_t i = 0; i < kN; ++i)
    x[static_cast<std::size_t>(i)] = testing::caller_value(kSeed, i);
  return x;
}

ExternalTensor device_tensor(void* data, std::int64_t elements, std::int64_t row_stride = 0) {
  return {
      .data = data, .elements = elements, .dtype = DType::f32, .device = probe_gpu().ordinal, .row_stride = row_stride};
}

std::vector<std::uint32_t> device_words(const void* p, std::size_t words) {
  std::vector<std::uint32_t> w(words);
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(w.data(), p, words * 4, cudaMemcpyDeviceToHost));
  return w;
}

std::vector<std::uint32_t> words_of(const HostTensor& t) {
  return {t.bits().begin(), t.bits().end()};
}

class GpuBinding : public testing::GpuTest {};

TEST_F(GpuBinding, RunsBetweenTheCallersKernelsOnOneStreamInOrder) {
  const std::vector<float> x = caller_values();
  for (bool lean : {true, false})
    for (SyncMode mode : kAllSyncModes) {
      SessionOptions o = gpu_options(mode);
      o.exec.lean_kernel = lean;
      Session plain(softmax_sums(&x), o);
      plain.run();
      ASSERT_TRUE(plain.check().passed) << plain.check().summary();

      gpu::DeviceBuffer dx(kN * 4), dy(kN * 4), ds(kRows * 4), dz(kRows * 4);
      for (const gpu::DeviceBuffer* b : {&dx, &dy, &ds, &dz}) // what a run that came too early would read
        GRIDFLOW_CUDA_CHECK(cudaMemset(b->get(), 0xff, b->bytes()));
      Session s(softmax_sums(nullptr), o);
      s.bind("x", device_tensor(dx.get(), kN));
      s.bind("y", device_tensor(dy.get(), kN));
      s.bind("s", device_tensor(ds.get(), kRows));
      cudaStream_t stream = nullptr;
      GRIDFLOW_CUDA_CHECK(cudaStreamCreate(&stream)); // a blocking stream, as most callers' are
      // The caller's kernel writes x late; gridflow must wait for it, and the caller's next kernel for gridflow.
      testing::launch_slow_fill(dx.as<float>(), kN, kSeed, 20'000'000ull, stream);
      s.run_async(stream);
      testing::launch_affine(ds.as<float>(), dz.as<float>(), kRows, stream);
      const RunResult r = s.wait();
      EXPECT_EQ(r.lean_kernel, lean);
      GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
      GRIDFLOW_CUDA_CHECK(cudaStreamDestroy(stream));

      const char* where = lean ? "lean megakernel" : "general megakernel";
      EXPECT_EQ(device_words(dy.get(), kN), words_of(plain.results()[1])) << to_string(mode) << ", " << where;
      EXPECT_EQ(device_words(ds.get(), kRows), words_of(plain.results()[2])) << to_string(mode) << ", " << where;
      // The caller's kernel after the run saw the run's sums, not the poison they replaced.
      std::vector<float> z(kRows), sums(kRows);
      GRIDFLOW_CUDA_CHECK(cudaMemcpy(z.data(), dz.get(), kRows * 4, cudaMemcpyDeviceToHost));
      GRIDFLOW_CUDA_CHECK(cudaMemcpy(sums.data(), ds.get(), kRows * 4, cudaMemcpyDeviceToHost));
      for (std::size_t i = 0; i < sums.size(); ++i)
        ASSERT_EQ(z[i], 2.0f * sums[i] + 1.0f) << "the caller's kernel after the run read s[" << i << "] early ("
                                               << to_string(mode) << ", " << where << ")";
    }
}

TEST_F(GpuBinding, StagedBindingsTouchOnlyTheCallersRows) {
  const std::vector<float> x = caller_values();
  Session plain(softmax_sums(&x), gpu_options(SyncMode::flags));
  plain.run();
  ASSERT_TRUE(plain.check().passed);
  constexpr std::int64_t kStride = kCols + 5; // rows not contiguous, and every other row unaligned
  gpu::DeviceBuffer dx(kRows * kStride * 4), dy(kRows * kStride * 4), ds((kRows + 4) * 4);
  for (const gpu::DeviceBuffer* b : {&dx, &dy, &ds})
    GRIDFLOW_CUDA_CHECK(cudaMemset(b->get(), 0x5a, b->bytes()));
  GRIDFLOW_CUDA_CHECK(
      cudaMemcpy2D(dx.get(), kStride * 4, x.data(), kCols * 4, kCols * 4, kRows, cudaMemcpyHostToDevice));
  const std::vector<std::uint32_t> x_before = device_words(dx.get(), kRows * kStride);
  Session s(softmax_sums(nullptr), gpu_options(SyncMode::flags));
  s.bind("x", device_tensor(dx.get(), kRows * kStride, kStride));
  s.bind("y", device_tensor(dy.get(), (kRows - 1) * kStride + kCols, kStride));
  s.bind("s", device_tensor(ds.as<float>() + 1, kRows)); // 4 bytes past an aligned address
  for (int run = 0; run < 2; ++run) {
    s.run_async(nullptr);
    s.wait();
  }
  EXPECT_EQ(device_words(dx.get(), kRows * kStride), x_before) << "an input was written";
  const std::vector<std::uint32_t> y = device_words(dy.get(), kRows * kStride);
  const std::span<const std::uint32_t> want = plain.results()[1].bits();
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kStride; ++c) {
      const std::uint32_t got = y[static_cast<std::size_t>(r * kStride + c)];
      if (c < kCols)
        ASSERT_EQ(got, want[static_cast<std::size_t>(r * kCols + c)]) << "row " << r << " col " << c;
      else
        ASSERT_EQ(got, 0x5a5a5a5au) << "row " << r << " padding " << c << " was written";
    }
  const std::vector<std::uint32_t> sw = device_words(ds.get(), kRows + 4);
  EXPECT_EQ(sw.front(), 0x5a5a5a5au);
  EXPECT_EQ(std::vector<std::uint32_t>(sw.begin() + 1, sw.begin() + 1 + kRows), words_of(plain.results()[2]));
  EXPECT_EQ(sw[kRows + 1], 0x5a5a5a5au);
  EXPECT_TRUE(bit_identical(s.download("y"), plain.results()[1]));
}

TEST_F(GpuBinding, RefusesMemoryTheGpuBackendCannotRunOn) {
  Session s(softmax_sums(nullptr), gpu_options(SyncMode::flags));
  std::vector<float> host(kRows);
  const auto message = [&](const ExternalTensor& t) -> std::string {
    try {
      s.bind("s", t);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  ExternalTensor t = device_tensor(host.data(), kRows);
  std::string msg = message(t);
  EXPECT_NE(msg.find("buffer 's'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not CUDA memory"), std::string::npos) << msg;
  void* pinned = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMallocHost(&pinned, kRows * 4));
  msg = message(device_tensor(pinned, kRows));
  GRIDFLOW_CUDA_CHECK(cudaFreeHost(pinned));
  EXPECT_NE(msg.find("pinned host memory"), std::string::npos) << msg;
  t.device = kHostMemory;
  msg = message(t);
  EXPECT_NE(msg.find("bind.device"), std::string::npos) << msg;
  EXPECT_FALSE(s.is_bound("s"));
  s.run(); // nothing was bound: the session runs as before
  EXPECT_TRUE(s.check().passed);
}

TEST_F(GpuBinding, AWatchdogErrorOnTheCallersStreamSurfacesAtWait) {
  SessionOptions o = gpu_options(SyncMode::flags);
  o.schedule = Schedule::dynamic;
  o.per_tile_deps = false;
  o.exec.timeout_ns = 100'000'000ull;
  o.exec.fault_skip_signal_tile = 0; // the producer's first tile never signals
  Session s(softmax_sums(nullptr), o);
  gpu::DeviceBuffer ds(kRows * 4), dz(kRows * 4);
  s.bind("s", device_tensor(ds.get(), kRows));
  cudaStream_t stream = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaStreamCreate(&stream));
  s.run_async(stream);
  try {
    s.wait();
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.record().code, static_cast<std::uint32_t>(program::ErrorCode::watchdog_timeout)) << e.what();
    EXPECT_NE(std::string(e.what()).find("'sums'"), std::string::npos) << e.what();
  }
  // The session and the caller's stream both carry on.
  ExecOptions clean = o.exec;
  clean.fault_skip_signal_tile = program::kNoTile;
  s.run(clean);
  testing::launch_affine(ds.as<float>(), dz.as<float>(), kRows, stream);
  GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  GRIDFLOW_CUDA_CHECK(cudaStreamDestroy(stream));
  Session plain(softmax_sums(nullptr), gpu_options(SyncMode::flags));
  plain.run();
  const std::span<const float> sums = plain.results()[2].f32();
  std::vector<float> z(kRows), got(kRows);
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(got.data(), ds.get(), kRows * 4, cudaMemcpyDeviceToHost));
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(z.data(), dz.get(), kRows * 4, cudaMemcpyDeviceToHost));
  for (std::int64_t i = 0; i < kRows; ++i) {
    // Row sums of a softmax: within a few f32 ulps of 1 whatever the reduction order.
    EXPECT_NEAR(got[static_cast<std::size_t>(i)], sums[static_cast<std::size_t>(i)], 1e-5) << i;
    EXPECT_EQ(z[static_cast<std::size_t>(i)], 2.0f * got[static_cast<std::size_t>(i)] + 1.0f) << i;
  }
}

} // namespace
} // namespace gridflow
