#include "bench/cub_baselines.hpp"
#include "bench/cuda_timing.cuh"
#include "runtime/gpu/cuda_check.hpp"

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>

namespace gridflow::bench {
namespace {

// 64 random bits for element i (splitmix64 of the seeded index).
__device__ std::uint64_t element_bits(std::uint64_t seed, long long i) {
  std::uint64_t x = seed ^ (static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

__global__ void uniform_kernel(float* out, long long n, std::uint64_t seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(element_bits(seed, i) >> 40) * 0x1.0p-24f * 2.0f - 1.0f;
}

__global__ void keys_kernel(int* out, long long n, int bins, std::uint64_t seed) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    out[i] = static_cast<int>(element_bits(seed, i) % static_cast<std::uint64_t>(bins));
}

struct GreaterThan {
  float threshold;
  __device__ bool operator()(float x) const { return x > threshold; }
};

} // namespace

float* device_uniform(long long n, std::uint64_t seed) {
  float* p = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(float)));
  uniform_kernel<<<1024, 256>>>(p, n, seed);
  GRIDFLOW_CUDA_CHECK_LAUNCH();
  GRIDFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  return p;
}

float* device_floats(long long n) {
  float* p = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(float)));
  return p;
}

void free_device(void* p) {
  GRIDFLOW_CUDA_CHECK(cudaFree(p));
}

std::vector<double> time_cub_reduce_sum(const float* in, float* out, long long n, int warmup, int reps) {
  Temp t;
  GRIDFLOW_CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, t.bytes, in, out, n));
  t.reserve();
  return time_calls(warmup, reps, [&] { GRIDFLOW_CUDA_CHECK(cub::DeviceReduce::Sum(t.p, t.bytes, in, out, n)); });
}

std::vector<double> time_cub_inclusive_sum(const float* in, float* out, long long n, int warmup, int reps) {
  Temp t;
  GRIDFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, t.bytes, in, out, n));
  t.reserve();
  return time_calls(warmup, reps,
                    [&] { GRIDFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(t.p, t.bytes, in, out, n)); });
}

std::vector<double> time_cub_segmented_sum(const float* in, float* out, long long rows, long long cols, int warmup,
                                           int reps) {
  std::vector<int> h(static_cast<std::size_t>(rows + 1));
  for (long long r = 0; r <= rows; ++r)
    h[static_cast<std::size_t>(r)] = static_cast<int>(r * cols);
  int* offsets = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&offsets, h.size() * sizeof(int)));
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(offsets, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
  Temp t;
  GRIDFLOW_CUDA_CHECK(
      cub::DeviceSegmentedReduce::Sum(nullptr, t.bytes, in, out, static_cast<int>(rows), offsets, offsets + 1));
  t.reserve();
  auto ms = time_calls(warmup, reps, [&] {
    GRIDFLOW_CUDA_CHECK(
        cub::DeviceSegmentedReduce::Sum(t.p, t.bytes, in, out, static_cast<int>(rows), offsets, offsets + 1));
  });
  GRIDFLOW_CUDA_CHECK(cudaFree(offsets));
  return ms;
}

std::vector<double> time_cub_select_gt(const float* in, float* out, long long n, float threshold, int warmup, int reps,
                                       long long* kept) {
  long long* count = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&count, sizeof(long long)));
  Temp t;
  GRIDFLOW_CUDA_CHECK(cub::DeviceSelect::If(nullptr, t.bytes, in, out, count, n, GreaterThan{threshold}));
  t.reserve();
  std::vector<double> ms = time_calls(warmup, reps, [&] {
    GRIDFLOW_CUDA_CHECK(cub::DeviceSelect::If(t.p, t.bytes, in, out, count, n, GreaterThan{threshold}));
  });
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(kept, count, sizeof(long long), cudaMemcpyDeviceToHost));
  GRIDFLOW_CUDA_CHECK(cudaFree(count));
  return ms;
}

std::vector<double> time_cub_histogram(const int* keys, int* counts, long long n, int bins, int warmup, int reps) {
  Temp t;
  GRIDFLOW_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, t.bytes, keys, counts, bins + 1, 0, bins, n));
  t.reserve();
  return time_calls(warmup, reps, [&] {
    GRIDFLOW_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(t.p, t.bytes, keys, counts, bins + 1, 0, bins, n));
  });
}

int* device_keys(long long n, int bins, std::uint64_t seed) {
  int* p = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(int)));
  keys_kernel<<<1024, 256>>>(p, n, bins, seed);
  GRIDFLOW_CUDA_CHECK_LAUNCH();
  GRIDFLOW_CUDA_CHECK(cudaDeviceSynchronize());
  return p;
}

std::vector<double> time_cub_select_gt(std::span<const float> x, float threshold, int warmup, int reps) {
  const auto n = static_cast<long long>(x.size());
  float* in = device_floats(n);
  float* out = device_floats(n);
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(in, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  long long kept = 0;
  std::vector<double> ms = time_cub_select_gt(in, out, n, threshold, warmup, reps, &kept);
  free_device(in);
  free_device(out);
  return ms;
}

std::vector<double> time_cub_sort_pairs(std::span<const std::int32_t> keys, int key_bits, int warmup, int reps,
                                        std::vector<std::int32_t>* grouped) {
  const auto n = static_cast<long long>(keys.size());
  std::vector<std::int32_t> index(keys.size());
  for (std::size_t i = 0; i < index.size(); ++i)
    index[i] = static_cast<std::int32_t>(i);
  int *k_in = nullptr, *k_out = nullptr, *v_in = nullptr, *v_out = nullptr;
  for (int** p : {&k_in, &k_out, &v_in, &v_out})
    GRIDFLOW_CUDA_CHECK(cudaMalloc(p, keys.size() * sizeof(int) + 4));
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(k_in, keys.data(), keys.size() * sizeof(int), cudaMemcpyHostToDevice));
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(v_in, index.data(), index.size() * sizeof(int), cudaMemcpyHostToDevice));
  Temp t;
  GRIDFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, t.bytes, k_in, k_out, v_in, v_out, n, 0, key_bits));
  t.reserve();
  std::vector<double> ms = time_calls(warmup, reps, [&] {
    GRIDFLOW_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(t.p, t.bytes, k_in, k_out, v_in, v_out, n, 0, key_bits));
  });
  if (grouped != nullptr) {
    grouped->resize(keys.size());
    GRIDFLOW_CUDA_CHECK(cudaMemcpy(grouped->data(), v_out, keys.size() * sizeof(int), cudaMemcpyDeviceToHost));
  }
  for (int* p : {k_in, k_out, v_in, v_out})
    free_device(p);
  return ms;
}

} // namespace gridflow::bench
