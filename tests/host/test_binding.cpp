// Sessions over caller memory (Session::bind, run_async, wait) on the CPU backend, where host memory binds the way
// device memory does on the GPU: the binding checks, direct and staged bindings against plain runs bit for bit,
// what a run may and may not touch, one run in flight, errors surfacing at wait().
#include "runtime/errors.hpp"
#include "scheduler/binding.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/session.hpp"
#include "tests/common/softmax_sums.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gridflow {
namespace {

constexpr std::int64_t kRows = 24, kCols = 200;

// x, y and s: the buffers a caller would own. x holds `x` when given.
Graph softmax_sums(const std::vector<float>* x = nullptr) {
  return testing::softmax_sums(kRows, kCols, x);
}

SessionOptions cpu(SyncMode mode = SyncMode::flags) {
  SessionOptions o;
  o.backend = Backend::cpu;
  o.mode = mode;
  o.cpu_workers = 3;
  o.exec.timeout_ns = 20'000'000'000ull;
  return o;
}

std::vector<float> fresh(std::size_t n, unsigned seed) {
  return testing::fresh_values(n, seed);
}
using testing::tensor_of;

std::vector<std::uint32_t> bits_of(const float* p, std::size_t n) {
  std::vector<std::uint32_t> w(n);
  std::memcpy(w.data(), p, n * sizeof(float));
  return w;
}

ExternalTensor host_tensor(void* data, std::int64_t elements, std::int64_t row_stride = 0) {
  return {.data = data, .elements = elements, .dtype = DType::f32, .device = kHostMemory, .row_stride = row_stride};
}

// What a plain run() of the graph gives with `x` uploaded as its input.
std::vector<HostTensor> plain_results(const std::vector<float>& x, SyncMode mode) {
  Session with_x(softmax_sums(&x), cpu(mode));
  with_x.run();
  EXPECT_TRUE(with_x.check().passed);
  return with_x.results();
}

std::string refusal(const Buffer& b, const ExternalTensor& t, int device = kHostMemory) {
  try {
    plan_binding(b, t, device);
  } catch (const GraphError& e) {
    return e.what();
  }
  return "";
}

TEST(Binding, RefusesMemoryThatDoesNotFitTheBufferNamingTheField) {
  Buffer m;
  m.name = "m";
  m.dtype = DType::f32;
  m.shape = {4, 10};
  Buffer v = m;
  v.name = "v";
  v.shape = {40};
  alignas(16) static float mem[64];
  const auto expect = [](const std::string& msg, const char* field, const char* value) {
    EXPECT_NE(msg.find(field), std::string::npos) << msg;
    EXPECT_NE(msg.find(value), std::string::npos) << msg;
  };
  ExternalTensor t = host_tensor(mem, 40);
  t.dtype = DType::i32;
  expect(refusal(m, t), "buffer 'm': bind.dtype", "i32");
  t = host_tensor(mem, 40);
  t.device = 0;
  expect(refusal(m, t), "bind.device", "cuda:0");
  expect(refusal(m, host_tensor(mem, 40), 0), "bind.device", "host");
  expect(refusal(m, host_tensor(mem, 39)), "bind.elements", "39");
  expect(refusal(m, host_tensor(mem, 41)), "bind.elements", "41");
  expect(refusal(m, host_tensor(mem, -1)), "bind.elements", "-1");
  expect(refusal(m, host_tensor(nullptr, 40)), "bind.data", "null");
  expect(refusal(m, host_tensor(mem, 64, 9)), "bind.row_stride", "9"); // rows would overlap
  expect(refusal(m, host_tensor(mem, 64, -12)), "bind.row_stride", "-12");
  expect(refusal(v, host_tensor(mem, 64, 12)), "buffer 'v': bind.row_stride", "12"); // a 1-D buffer has no rows
  expect(refusal(m, host_tensor(mem, 45, 12)), "bind.elements", "45");               // needs 3 x 12 + 10 = 46
  Buffer huge = m;
  huge.shape = {std::int64_t{1} << 40, 10};
  expect(refusal(huge, host_tensor(mem, 64, std::int64_t{1} << 30)), "bind.row_stride", "overflow");
  // Rows that fit an element count but not a byte count.
  Buffer two_rows = m;
  two_rows.shape = {2, 10};
  expect(refusal(two_rows, host_tensor(mem, std::numeric_limits<std::int64_t>::max(), std::int64_t{1} << 62)),
         "bind.row_stride", "byte count");
}

TEST(Binding, AlignedContiguousMemoryBindsDirectlyTheRestIsStaged) {
  Buffer m;
  m.name = "m";
  m.shape = {4, 10};
  alignas(16) static float mem[64];
  const BoundMemory direct = plan_binding(m, host_tensor(mem, 40), kHostMemory);
  EXPECT_FALSE(direct.staged);
  EXPECT_EQ(direct.data, mem);
  EXPECT_FALSE(plan_binding(m, host_tensor(mem, 40, 10), kHostMemory).staged); // the stride of contiguous rows
  const BoundMemory strided = plan_binding(m, host_tensor(mem, 46, 12), kHostMemory);
  EXPECT_TRUE(strided.staged);
  EXPECT_EQ(strided.rows, 4);
  EXPECT_EQ(strided.row_bytes, 40u);
  EXPECT_EQ(strided.pitch_bytes, 48u);
  Buffer one_row = m;
  one_row.shape = {1, 10};
  EXPECT_FALSE(plan_binding(one_row, host_tensor(mem, 10, 1000), kHostMemory).staged); // one row has no stride
  const BoundMemory unaligned = plan_binding(m, host_tensor(mem + 1, 40), kHostMemory);
  EXPECT_TRUE(unaligned.staged);
  EXPECT_EQ(unaligned.rows, 1);
  EXPECT_EQ(unaligned.row_bytes, 160u);
}

TEST(Binding, BoundBuffersRunInPlaceBitForBitWithAPlainRunInEveryMode) {
  const std::vector<float> x = fresh(kRows * kCols, 1);
  for (SyncMode mode : kAllSyncModes) {
    const std::vector<HostTensor> expect = plain_results(x, mode);
    std::vector<float> bx = x, by(kRows * kCols, 1.5f), bs(kRows, -2.0f);
    Session s(softmax_sums(), cpu(mode));
    s.bind("x", host_tensor(bx.data(), kRows * kCols));
    s.bind("y", host_tensor(by.data(), kRows * kCols));
    s.bind("s", host_tensor(bs.data(), kRows));
    EXPECT_TRUE(s.is_bound("x"));
    for (int run = 0; run < 3; ++run) {
      s.run_async(nullptr);
      s.wait();
      EXPECT_EQ(bits_of(bx.data(), bx.size()), bits_of(x.data(), x.size())) << "the input was written";
      EXPECT_EQ(bits_of(by.data(), by.size()),
                std::vector<std::uint32_t>(expect[1].bits().begin(), expect[1].bits().end()))
          << to_string(mode) << " run " << run;
      EXPECT_EQ(bits_of(bs.data(), bs.size()),
                std::vector<std::uint32_t>(expect[2].bits().begin(), expect[2].bits().end()))
          << to_string(mode) << " run " << run;
    }
    // The session's own view of the bound memory is the caller's.
    EXPECT_TRUE(bit_identical(s.download("s"), expect[2]));
  }
}

TEST(Binding, StagedBindingsReadAndWriteOnlyTheCallersRows) {
  const std::vector<float> x = fresh(kRows * kCols, 2);
  const std::vector<HostTensor> expect = plain_results(x, SyncMode::flags);
  constexpr std::int64_t kStride = kCols + 7;
  constexpr float kPad = 12345.0f;
  // x and y strided (padding between rows that nothing may touch); s one element past an aligned address.
  std::vector<float> bx(kRows * kStride, kPad), by(kRows * kStride, kPad), bs_mem(kRows + 1, kPad);
  for (std::int64_t r = 0; r < kRows; ++r)
    std::memcpy(&bx[static_cast<std::size_t>(r * kStride)], &x[static_cast<std::size_t>(r * kCols)], kCols * 4);
  const std::vector<float> bx_before = bx;
  float* bs = bs_mem.data() + (reinterpret_cast<std::uintptr_t>(bs_mem.data()) % 16 == 0 ? 1 : 0);
  Session s(softmax_sums(), cpu());
  s.bind("x", host_tensor(bx.data(), kRows * kStride, kStride));
  s.bind("y", host_tensor(by.data(), (kRows - 1) * kStride + kCols, kStride));
  s.bind("s", host_tensor(bs, kRows));
  s.run_async(nullptr);
  s.wait();
  EXPECT_EQ(bits_of(bx.data(), bx.size()), bits_of(bx_before.data(), bx_before.size()));
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kStride; ++c) {
      const float got = by[static_cast<std::size_t>(r * kStride + c)];
      if (c >= kCols) {
        ASSERT_EQ(got, kPad) << "row " << r << " padding " << c << " was written";
      } else {
        std::uint32_t want = expect[1].bits()[static_cast<std::size_t>(r * kCols + c)], have = 0;
        std::memcpy(&have, &got, 4);
        ASSERT_EQ(have, want) << "row " << r << " col " << c;
      }
    }
  EXPECT_EQ(bits_of(bs, kRows), std::vector<std::uint32_t>(expect[2].bits().begin(), expect[2].bits().end()));
  EXPECT_TRUE(bit_identical(s.download("y"), expect[1])); // download reads the caller's rows
}

TEST(Binding, UnboundBuffersStartFromTheirInitialContentsAndBoundOnesAreNeverPoisoned) {
  // Only s bound: x keeps its init, y is the session's scratch.
  Session s(softmax_sums(), cpu());
  std::vector<float> bs(kRows, 0.25f);
  s.bind("s", host_tensor(bs.data(), kRows));
  EXPECT_FALSE(s.is_bound("x"));
  s.run_async(nullptr);
  s.wait();
  Session plain(softmax_sums(), cpu());
  plain.run();
  ASSERT_TRUE(plain.check().passed);
  EXPECT_EQ(bits_of(bs.data(), bs.size()),
            std::vector<std::uint32_t>(plain.results()[2].bits().begin(), plain.results()[2].bits().end()));
  // run() with a bound buffer: the unbound ones come back in results(), the bound one stays in the caller's memory.
  std::fill(bs.begin(), bs.end(), 0.25f);
  s.run();
  EXPECT_TRUE(bit_identical(s.results()[1], plain.results()[1]));
  EXPECT_EQ(s.results()[2].size(), 0);
  EXPECT_EQ(bits_of(bs.data(), bs.size()),
            std::vector<std::uint32_t>(plain.results()[2].bits().begin(), plain.results()[2].bits().end()));
  EXPECT_THROW(s.check(), RuntimeError); // the check needs every buffer on the host
  // A bound input is the caller's: the run never poisons or re-initializes it.
  Session in(softmax_sums(), cpu());
  std::vector<float> bx = fresh(kRows * kCols, 3);
  const std::vector<float> before = bx;
  in.bind("x", host_tensor(bx.data(), kRows * kCols));
  in.run();
  EXPECT_EQ(bits_of(bx.data(), bx.size()), bits_of(before.data(), before.size()));
  // unbind: the graph's own init again.
  in.unbind("x");
  in.run();
  EXPECT_TRUE(in.check().passed);
  EXPECT_TRUE(bit_identical(in.results()[2], plain.results()[2]));
}

TEST(Binding, UploadAndDownloadReachTheCallersMemory) {
  Session s(softmax_sums(), cpu());
  std::vector<float> bx(kRows * kCols, 0.0f);
  s.bind("x", host_tensor(bx.data(), kRows * kCols));
  const std::vector<float> x = fresh(kRows * kCols, 4);
  s.upload("x", tensor_of(x));
  EXPECT_EQ(bits_of(bx.data(), bx.size()), bits_of(x.data(), x.size()));
  EXPECT_TRUE(bit_identical(s.download("x"), tensor_of(x)));
  s.run_async(nullptr);
  s.wait();
  EXPECT_TRUE(bit_identical(s.download("s"), plain_results(x, SyncMode::flags)[2]));
  EXPECT_THROW(s.upload("x", HostTensor(DType::f32, 3)), RuntimeError);
  EXPECT_THROW(s.download("nope"), GraphError);
  EXPECT_THROW(s.bind("nope", host_tensor(bx.data(), 1)), GraphError);
}

TEST(Binding, OneRunInFlightAtATime) {
  Session s(softmax_sums(), cpu());
  EXPECT_THROW(s.wait(), RuntimeError); // nothing to wait for
  s.run_async(nullptr);
  EXPECT_THROW(s.run_async(nullptr), RuntimeError);
  std::vector<float> bx(kRows * kCols, 1.0f);
  EXPECT_THROW(s.bind("x", host_tensor(bx.data(), kRows * kCols)), RuntimeError);
  EXPECT_THROW(s.download("s"), RuntimeError);
  s.wait();
  s.run_async(nullptr); // and the next one is fine
  s.wait();
}

TEST(Binding, AnErrorOfTheRunSurfacesAtWaitAndTheSessionRunsAgain) {
  SessionOptions o = cpu();
  o.exec.timeout_ns = 200'000'000ull;
  o.exec.fault_skip_signal_tile = 0; // the producer's first tile never signals
  Session s(softmax_sums(), o);
  std::vector<float> bs(kRows, 0.0f);
  s.bind("s", host_tensor(bs.data(), kRows));
  s.run_async(nullptr); // returns before the run ends
  try {
    s.wait();
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("watchdog"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'sums'"), std::string::npos) << e.what();
  }
  ExecOptions clean = o.exec;
  clean.fault_skip_signal_tile = program::kNoTile;
  s.run(clean);
  Session plain(softmax_sums(), cpu());
  plain.run();
  EXPECT_EQ(bits_of(bs.data(), bs.size()),
            std::vector<std::uint32_t>(plain.results()[2].bits().begin(), plain.results()[2].bits().end()));
}

} // namespace
} // namespace gridflow
