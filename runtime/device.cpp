#include "runtime/device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace gridflow {

std::string DeviceInfo::describe() const {
  if (!available)
    return "no GPU (" + reason + ")";
  return fmt::format("{} (sm_{}{}, {} SMs, {:.0f} GiB)", name, cc_major, cc_minor, sm_count,
                     static_cast<double>(global_memory) / (1u << 30));
}

DeviceInfo probe_gpu(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    info.reason = err == cudaErrorNoDevice             ? "no CUDA device present"
                  : err == cudaErrorInsufficientDriver ? "no usable CUDA driver"
                                                       : cudaGetErrorString(err);
    cudaGetLastError(); // clear the sticky-free error state
    return info;
  }
  if (count <= ordinal) {
    info.reason =
        count == 0 ? "no CUDA device present" : fmt::format("device {} requested, {} present", ordinal, count);
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    info.reason = "cudaGetDeviceProperties failed";
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.sm_count = prop.multiProcessorCount;
  info.cc_major = prop.major;
  info.cc_minor = prop.minor;
  info.global_memory = prop.totalGlobalMem;
  info.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  int coop = 0;
  cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, ordinal);
  info.cooperative_launch = coop != 0;
  std::size_t free = 0, total = 0;
  if (cudaSetDevice(ordinal) == cudaSuccess && cudaMemGetInfo(&free, &total) == cudaSuccess)
    info.free_memory = free;
  else
    cudaGetLastError();
  return info;
}

bool gpu_backend_built() {
#if defined(GRIDFLOW_HAS_CUDA)
  return true;
#else
  return false;
#endif
}

} // namespace gridflow
