// Shared pieces of the GPU suite: the skip-without-GPU fixture and session helpers.
#pragma once

#include "runtime/device.hpp"
#include "scheduler/session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace gridflow::testing {

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    const DeviceInfo gpu = probe_gpu();
    if (!gpu.available)
      GTEST_SKIP() << "no CUDA device (" << gpu.reason << ")";
    if (!gpu_backend_built())
      GTEST_SKIP() << "built without the GPU backend";
  }
};

inline SessionOptions gpu_options(SyncMode mode, std::uint32_t threads = 256, std::uint32_t blocks_per_sm = 0) {
  SessionOptions o;
  o.backend = Backend::gpu;
  o.mode = mode;
  o.threads_per_block = threads;
  o.blocks_per_sm = blocks_per_sm;
  o.exec.timeout_ns = 5'000'000'000ull;
  return o;
}

// Runs per stress loop: GRIDFLOW_STRESS_RUNS, else `fallback` (scripts/gpu-check.sh sets 250).
inline int stress_runs(int fallback) {
  const char* env = std::getenv("GRIDFLOW_STRESS_RUNS");
  return env ? std::max(1, std::atoi(env)) : fallback;
}

// Where two tensors of one buffer differ: how many elements, the first and last index, the bits at the first. So a
// rare mismatch says whether it is one element (a lost store), a run of them (a tile), or everything after a point
// (a carry).
inline std::string describe_difference(const HostTensor& a, const HostTensor& b) {
  if (a.dtype() != b.dtype() || a.size() != b.size())
    return fmt::format("dtype or size differs ({} vs {} elements)", a.size(), b.size());
  const auto x = a.bits(), y = b.bits();
  std::size_t count = 0, first = 0, last = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i] != y[i]) {
      if (count++ == 0)
        first = i;
      last = i;
    }
  if (count == 0)
    return "no element differs";
  return fmt::format("{} of {} elements differ, first at {} (bits {:#010x} vs {:#010x}), last at {}", count, x.size(),
                     first, x[first], y[first], last);
}

// True when every buffer is bit-identical; else `which` gets the first differing buffer's index, then where it
// differs (describe_difference).
inline bool same_bits(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b,
                      std::string* which = nullptr) {
  std::size_t i = 0;
  const bool same = bit_identical(a, b, &i);
  if (!same && which)
    *which = i < a.size() && i < b.size() ? fmt::format("{}: {}", i, describe_difference(a[i], b[i]))
                                          : fmt::format("{}: {} vs {} buffers", i, a.size(), b.size());
  return same;
}

} // namespace gridflow::testing
