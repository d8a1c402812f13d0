// Shared pieces of the GPU suite: the skip-without-GPU fixture and session helpers.
#pragma once

#include "runtime/device.hpp"
#include "scheduler/session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

inline bool same_bits(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b,
                      std::string* which = nullptr) {
  std::size_t i = 0;
  const bool same = bit_identical(a, b, &i);
  if (!same && which)
    *which = std::to_string(i);
  return same;
}

} // namespace gridflow::testing
