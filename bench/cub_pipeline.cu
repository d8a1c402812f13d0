#include "bench/cub_pipeline.hpp"
#include "bench/cuda_timing.cuh"
#include "kernels/counting.hpp"
#include "runtime/gpu/cuda_check.hpp"

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_select.cuh>

#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

namespace gridflow::bench {
namespace {

template <class T> struct Keep {
  CmpFn cmp;
  T threshold;
  __device__ bool operator()(T x) const { return kernels::select_keep(cmp, x, threshold); }
};

struct MaxOp {
  template <class T> __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};

struct RowOffset { // begin of row r of a block view: offset + r * cols
  long long cols;
  __host__ __device__ long long operator()(long long r) const { return r * cols; }
};

// Device copies of every buffer, freed on scope exit.
struct DeviceBuffers {
  std::vector<void*> ptr;
  explicit DeviceBuffers(const std::vector<HostTensor>& initial) {
    for (const HostTensor& t : initial) {
      void* p = nullptr;
      const std::size_t bytes = std::max<std::size_t>(4, static_cast<std::size_t>(t.size()) * 4);
      GRIDFLOW_CUDA_CHECK(cudaMalloc(&p, bytes));
      if (t.size() > 0)
        GRIDFLOW_CUDA_CHECK(cudaMemcpy(p, t.data(), static_cast<std::size_t>(t.size()) * 4, cudaMemcpyHostToDevice));
      ptr.push_back(p);
    }
  }
  ~DeviceBuffers() {
    for (void* p : ptr)
      GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaFree(p));
  }
  template <class T> T* at(std::uint32_t b, std::int64_t offset) const { return static_cast<T*>(ptr[b]) + offset; }
};

// One step's CUB call; with temp == nullptr it only sizes the temporary storage (CUB's two-phase API).
template <class T>
void call(const CubStep& s, const DeviceBuffers& d, void* temp, std::size_t& bytes, cudaStream_t stream) {
  const T* in = d.at<const T>(s.in, s.in_offset);
  switch (s.kind) {
  case CubStep::Kind::reduce_sum:
    GRIDFLOW_CUDA_CHECK(cub::DeviceReduce::Sum(temp, bytes, in, d.at<T>(s.out, s.out_offset), s.n, stream));
    break;
  case CubStep::Kind::reduce_max:
    GRIDFLOW_CUDA_CHECK(cub::DeviceReduce::Max(temp, bytes, in, d.at<T>(s.out, s.out_offset), s.n, stream));
    break;
  case CubStep::Kind::reduce_min:
    GRIDFLOW_CUDA_CHECK(cub::DeviceReduce::Min(temp, bytes, in, d.at<T>(s.out, s.out_offset), s.n, stream));
    break;
  case CubStep::Kind::scan_sum:
    if (s.exclusive)
      GRIDFLOW_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, bytes, in, d.at<T>(s.out, s.out_offset), s.n, stream));
    else
      GRIDFLOW_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, bytes, in, d.at<T>(s.out, s.out_offset), s.n, stream));
    break;
  case CubStep::Kind::scan_max:
    GRIDFLOW_CUDA_CHECK(
        cub::DeviceScan::InclusiveScan(temp, bytes, in, d.at<T>(s.out, s.out_offset), MaxOp{}, s.n, stream));
    break;
  case CubStep::Kind::row_sum: {
    const auto offsets = thrust::make_transform_iterator(thrust::counting_iterator<long long>(0), RowOffset{s.cols});
    GRIDFLOW_CUDA_CHECK(cub::DeviceSegmentedReduce::Sum(temp, bytes, in, d.at<T>(s.out, s.out_offset), s.rows, offsets,
                                                        offsets + 1, stream));
    break;
  }
  case CubStep::Kind::histogram:
    if constexpr (std::is_same_v<T, std::int32_t>)
      GRIDFLOW_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(temp, bytes, in, d.at<int>(s.out, s.out_offset),
                                                              s.bins + 1, 0, s.bins, s.n, stream));
    break;
  case CubStep::Kind::select: {
    const Keep<T> keep{s.cmp, static_cast<T>(s.threshold)};
    GRIDFLOW_CUDA_CHECK(cub::DeviceSelect::If(temp, bytes, in, d.at<T>(s.out, s.out_offset),
                                              d.at<int>(s.aux, s.aux_offset), s.n, keep, stream));
    break;
  }
  }
}

void call_step(const CubStep& s, const DeviceBuffers& d, void* temp, std::size_t& bytes, cudaStream_t stream) {
  if (s.dtype == DType::i32)
    call<std::int32_t>(s, d, temp, bytes, stream);
  else
    call<float>(s, d, temp, bytes, stream);
}

} // namespace

std::vector<double> time_cub_steps(const std::vector<CubStep>& steps, const std::vector<HostTensor>& initial,
                                   int warmup, int reps) {
  const DeviceBuffers d(initial);
  std::vector<Temp> temp(steps.size());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    call_step(steps[i], d, nullptr, temp[i].bytes, nullptr);
    temp[i].reserve();
  }
  return time_calls(warmup, reps, [&] {
    for (std::size_t i = 0; i < steps.size(); ++i)
      call_step(steps[i], d, temp[i].p, temp[i].bytes, nullptr);
  });
}

} // namespace gridflow::bench
