// GPU discovery: whether a usable CUDA device exists, and what it is. Safe to call on machines without a driver.
#pragma once

#include <cstddef>
#include <string>

namespace gridflow {

struct DeviceInfo {
  bool available = false;
  std::string reason; // why not, when unavailable
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0;
  int cc_minor = 0;
  bool cooperative_launch = false;
  std::size_t global_memory = 0;
  std::size_t free_memory = 0; // free device memory when probed
  std::size_t l2_bytes = 0;
  std::string describe() const; // "NVIDIA H200 (sm_90, 132 SMs, 140 GiB)"
};

// Probes device `ordinal`. Never throws.
DeviceInfo probe_gpu(int ordinal = 0);

// True when gridflow was built with its GPU backend (nvcc present at build time).
bool gpu_backend_built();

} // namespace gridflow
