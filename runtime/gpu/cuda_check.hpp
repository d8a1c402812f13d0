// One error path for CUDA calls: GRIDFLOW_CUDA_CHECK throws RuntimeError naming the call, file and line;
// GRIDFLOW_CUDA_CHECK_NOEXCEPT (destructors) prints instead of throwing.
#pragma once

#include "runtime/errors.hpp"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

namespace gridflow::detail {

inline void cuda_check(cudaError_t err, const char* expr, const char* file, int line) {
  if (err == cudaSuccess)
    return;
  throw RuntimeError(std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") in " +
                     expr + " at " + file + ":" + std::to_string(line));
}

inline void cuda_check_noexcept(cudaError_t err, const char* expr, const char* file, int line) noexcept {
  if (err != cudaSuccess)
    std::fprintf(stderr, "gridflow: CUDA error %s in %s at %s:%d (ignored in a destructor)\n", cudaGetErrorName(err),
                 expr, file, line);
}

} // namespace gridflow::detail

#define GRIDFLOW_CUDA_CHECK(expr) ::gridflow::detail::cuda_check((expr), #expr, __FILE__, __LINE__)
#define GRIDFLOW_CUDA_CHECK_NOEXCEPT(expr) ::gridflow::detail::cuda_check_noexcept((expr), #expr, __FILE__, __LINE__)
// After every kernel launch: the launch itself can fail (configuration, co-residency).
#define GRIDFLOW_CUDA_CHECK_LAUNCH() GRIDFLOW_CUDA_CHECK(cudaGetLastError())
