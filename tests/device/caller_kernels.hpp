// Kernels of the caller's own, for the tests that run gridflow between them on one stream (test_gpu_binding.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gridflow::testing {

// x[i] = caller_value(seed, i), written only after every thread has waited `delay_ns` on the device clock: work a
// run enqueued after it must not start before, or it reads what x held before.
void launch_slow_fill(float* x, std::int64_t n, std::uint32_t seed, std::uint64_t delay_ns, cudaStream_t stream);
// The value slow_fill writes: uniform-looking in [-4, 4), from a hash of (seed, i), the same bits on host and device.
float caller_value(std::uint32_t seed, std::int64_t i);
// z[i] = 2 y[i] + 1 (exact in f32 up to the rounding of one add, the same on the host).
void launch_affine(const float* y, float* z, std::int64_t n, cudaStream_t stream);

} // namespace gridflow::testing
