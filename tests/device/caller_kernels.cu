#include "runtime/gpu/cuda_check.hpp"
#include "tests/device/caller_kernels.hpp"

namespace gridflow::testing {

namespace {

__host__ __device__ float value_of(std::uint32_t seed, std::int64_t i) {
  std::uint64_t h = (static_cast<std::uint64_t>(seed) << 32) ^ static_cast<std::uint64_t>(i);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  // A 24-bit integer in [-2^23, 2^23) times 2^-21: in [-4, 4), exact in f32 at every step, so the host and the
  // device (which may fuse a multiply and an add) agree bit for bit.
  const auto k = static_cast<std::int32_t>(h >> 40) - (1 << 23);
  return static_cast<float>(k) * (1.0f / 2097152.0f);
}

__device__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void slow_fill(float* x, std::int64_t n, std::uint32_t seed, std::uint64_t delay_ns) {
  const std::uint64_t start = now_ns();
  while (now_ns() - start < delay_ns)
    __nanosleep(1000);
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    x[i] = value_of(seed, i);
}

__global__ void affine(const float* y, float* z, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    z[i] = __fadd_rn(__fmul_rn(2.0f, y[i]), 1.0f);
}

} // namespace

void launch_slow_fill(float* x, std::int64_t n, std::uint32_t seed, std::uint64_t delay_ns, cudaStream_t stream) {
  slow_fill<<<64, 256, 0, stream>>>(x, n, seed, delay_ns);
  GRIDFLOW_CUDA_CHECK_LAUNCH();
}

float caller_value(std::uint32_t seed, std::int64_t i) {
  return value_of(seed, i);
}

void launch_affine(const float* y, float* z, std::int64_t n, cudaStream_t stream) {
  affine<<<64, 256, 0, stream>>>(y, z, n);
  GRIDFLOW_CUDA_CHECK_LAUNCH();
}

} // namespace gridflow::testing
