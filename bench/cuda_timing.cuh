// Timing and scratch helpers shared by the CUDA sources of bench/ (CUB baselines, synchronization kernels).
#pragma once

#include "runtime/gpu/cuda_check.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

namespace gridflow::bench {

// Milliseconds of each of `reps` calls of `call()` (CUDA events around it, default stream) after `warmup` untimed.
template <class Call> std::vector<double> time_calls(int warmup, int reps, Call call) {
  cudaEvent_t a, b;
  GRIDFLOW_CUDA_CHECK(cudaEventCreate(&a));
  GRIDFLOW_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> ms;
  for (int r = 0; r < warmup + reps; ++r) {
    GRIDFLOW_CUDA_CHECK(cudaEventRecord(a));
    call();
    GRIDFLOW_CUDA_CHECK(cudaEventRecord(b));
    GRIDFLOW_CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    GRIDFLOW_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    if (r >= warmup)
      ms.push_back(t);
  }
  GRIDFLOW_CUDA_CHECK(cudaEventDestroy(a));
  GRIDFLOW_CUDA_CHECK(cudaEventDestroy(b));
  return ms;
}

// Milliseconds of `enqueue()` on `stream`: CUDA events around it, the launch checked.
template <class Enqueue> double time_ms(cudaStream_t stream, Enqueue enqueue) {
  cudaEvent_t a, b;
  GRIDFLOW_CUDA_CHECK(cudaEventCreate(&a));
  GRIDFLOW_CUDA_CHECK(cudaEventCreate(&b));
  GRIDFLOW_CUDA_CHECK(cudaEventRecord(a, stream));
  enqueue();
  GRIDFLOW_CUDA_CHECK(cudaEventRecord(b, stream));
  GRIDFLOW_CUDA_CHECK(cudaEventSynchronize(b));
  GRIDFLOW_CUDA_CHECK_LAUNCH();
  float t = 0;
  GRIDFLOW_CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
  GRIDFLOW_CUDA_CHECK(cudaEventDestroy(a));
  GRIDFLOW_CUDA_CHECK(cudaEventDestroy(b));
  return t;
}

// Temporary storage sized by a first call, as CUB's two-phase API wants.
struct Temp {
  void* p = nullptr;
  std::size_t bytes = 0;
  Temp() = default;
  Temp(const Temp&) = delete;
  Temp& operator=(const Temp&) = delete;
  ~Temp() { GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaFree(p)); }
  void reserve() { GRIDFLOW_CUDA_CHECK(cudaMalloc(&p, bytes > 0 ? bytes : 1)); }
};

} // namespace gridflow::bench
