// GRIDFLOW_HOST_DEVICE: marks code that compiles for both the host (g++ or nvcc's host pass) and the device.
// Under a plain C++ compiler it collapses to `inline`, so protocol and index math can be unit-tested on the CPU.
#pragma once

#if defined(__CUDACC__)
#define GRIDFLOW_HOST_DEVICE __host__ __device__ __forceinline__
#define GRIDFLOW_DEVICE __device__ __forceinline__
#else
#define GRIDFLOW_HOST_DEVICE inline
#define GRIDFLOW_DEVICE inline
#endif

// True while compiling device code (nvcc's device pass).
#if defined(__CUDA_ARCH__)
#define GRIDFLOW_DEVICE_PASS 1
#else
#define GRIDFLOW_DEVICE_PASS 0
#endif
