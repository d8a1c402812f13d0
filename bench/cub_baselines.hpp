// CUB baselines on device buffers the benchmark owns (bench/cub_baselines.cu).
#pragma once

#include <cstdint>
#include <vector>

namespace gridflow::bench {

// Device buffer of n floats, seeded uniform in [-1, 1) / uninitialised. Free with free_device.
float* device_uniform(long long n, std::uint64_t seed);
float* device_floats(long long n);
void free_device(void* p);

// Milliseconds of each timed repetition (CUDA events), after `warmup` untimed ones.
std::vector<double> time_cub_reduce_sum(const float* in, float* out, long long n, int warmup, int reps);
std::vector<double> time_cub_inclusive_sum(const float* in, float* out, long long n, int warmup, int reps);
std::vector<double> time_cub_segmented_sum(const float* in, float* out, long long rows, long long cols, int warmup,
                                           int reps);

} // namespace gridflow::bench
