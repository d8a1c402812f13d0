// main() of the GPU suite: says loudly when there is no GPU, so skipped tests are never mistaken for passes.
#include "runtime/device.hpp"

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const gridflow::DeviceInfo gpu = gridflow::probe_gpu();
  if (!gpu.available) {
    std::printf("gridflow GPU tests: no CUDA device (%s): every GPU test is SKIPPED\n", gpu.reason.c_str());
  } else if (!gridflow::gpu_backend_built()) {
    std::printf("gridflow GPU tests: this build has no GPU backend: every GPU test is SKIPPED\n");
  } else {
    std::printf("gridflow GPU tests on %s\n", gpu.describe().c_str());
  }
  return RUN_ALL_TESTS();
}
