// CUB baselines on device buffers the benchmark owns (bench/cub_baselines.cu).
#pragma once

#include <cstdint>
#include <span>
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
// cub::DeviceSelect::If keeping x > threshold; `kept` returns the count of the last run.
std::vector<double> time_cub_select_gt(const float* in, float* out, long long n, float threshold, int warmup, int reps,
                                       long long* kept);
// cub::DeviceHistogram::HistogramEven of n i32 keys into `bins` unit-wide bins [0, bins); keys are made from a
// uniform float buffer scaled to [0, bins).
std::vector<double> time_cub_histogram(const int* keys, int* counts, long long n, int bins, int warmup, int reps);
// n i32 keys uniform in [0, bins) (device buffer; free with free_device).
int* device_keys(long long n, int bins, std::uint64_t seed);

// The same CUB calls on host data (uploaded once, not timed), for the examples' side-by-side tables.
std::vector<double> time_cub_select_gt(std::span<const float> x, float threshold, int warmup, int reps);
// cub::DeviceRadixSort::SortPairs of (key, index) over the low `key_bits` bits: the stable grouping of indices by
// key that histogram -> exclusive scan -> scatter computes. `grouped`, when given, receives the sorted indices.
std::vector<double> time_cub_sort_pairs(std::span<const std::int32_t> keys, int key_bits, int warmup, int reps,
                                        std::vector<std::int32_t>* grouped = nullptr);

} // namespace gridflow::bench
