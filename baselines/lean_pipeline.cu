#include "baselines/lean_kernels.cuh"
#include "baselines/lean_pipeline.hpp"

#include "runtime/gpu/cuda_check.hpp"
#include "runtime/op_traits.hpp"
#include "runtime/tiles.hpp"

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>

#include <algorithm>
#include <bit>
#include <chrono>
#include <functional>

namespace gridflow::baselines {
namespace {

using program::Opcode;
using program::TaskDesc;

// select's predicate, as the task states it.
template <class T> struct Keep {
  CmpFn cmp;
  T threshold;
  __device__ __forceinline__ bool operator()(const T& x) const {
    switch (cmp) {
    case CmpFn::gt:
      return x > threshold;
    case CmpFn::ge:
      return x >= threshold;
    case CmpFn::lt:
      return x < threshold;
    case CmpFn::le:
      return x <= threshold;
    case CmpFn::eq:
      return x == threshold;
    default:
      return x != threshold;
    }
  }
};

// One step: enqueues itself on a stream, with the PDL attribute when asked and it is a lean kernel.
struct Step {
  std::function<void(cudaStream_t, bool pdl)> enqueue;
  std::vector<std::uint32_t> producers;
};

// Device temporary storage of one CUB call.
struct Scratch {
  void* p = nullptr;
  std::size_t bytes = 0;
  explicit Scratch(std::size_t n) : bytes(n) {
    if (n)
      GRIDFLOW_CUDA_CHECK(cudaMalloc(&p, n));
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (p)
      cudaFree(p);
  }
};

template <class Kernel, class... Args>
void launch_lean(cudaStream_t stream, bool pdl, Kernel kernel, unsigned blocks, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(kLeanThreads);
  config.stream = stream;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = pdl ? 1 : 0;
  GRIDFLOW_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

unsigned char* at(const std::vector<void*>& buffers, std::uint32_t b, std::int64_t element) {
  return static_cast<unsigned char*>(buffers.at(b)) + 4 * element;
}

template <int V>
std::function<void(cudaStream_t, bool)> row_step_v(const TaskDesc& t, const void* in, void* out, bool vec) {
  const int cols = static_cast<int>(t.cols);
  const long long stride = t.cols;
  const unsigned rows = static_cast<unsigned>(t.rows);
  const bool i32 = t.dtype == static_cast<std::uint32_t>(DType::i32);
  switch (static_cast<Opcode>(t.opcode)) {
  case Opcode::softmax_rows: {
    const int log = (t.flags & program::kLogSoftmax) ? 1 : 0;
    return [=](cudaStream_t s, bool pdl) {
      launch_lean(s, pdl, softmax_rows_kernel<V>, rows, static_cast<const float*>(in), static_cast<float*>(out), cols,
                  stride, log, vec ? 1 : 0);
    };
  }
  case Opcode::scan_rows: {
    const int exclusive = (t.flags & program::kExclusive) ? 1 : 0;
    const bool max = t.fn == static_cast<std::uint32_t>(ScanFn::max);
    if (i32)
      return [=](cudaStream_t s, bool pdl) {
        if (max)
          launch_lean(s, pdl, scan_rows_kernel<V, int, MaxOp>, rows, static_cast<const int*>(in),
                      static_cast<int*>(out), cols, stride, exclusive, vec ? 1 : 0,
                      cuda::std::numeric_limits<int>::min());
        else
          launch_lean(s, pdl, scan_rows_kernel<V, int, SumOp>, rows, static_cast<const int*>(in),
                      static_cast<int*>(out), cols, stride, exclusive, vec ? 1 : 0, 0);
      };
    return [=](cudaStream_t s, bool pdl) {
      if (max)
        launch_lean(s, pdl, scan_rows_kernel<V, float, MaxOp>, rows, static_cast<const float*>(in),
                    static_cast<float*>(out), cols, stride, exclusive, vec ? 1 : 0,
                    -cuda::std::numeric_limits<float>::infinity());
      else
        launch_lean(s, pdl, scan_rows_kernel<V, float, SumOp>, rows, static_cast<const float*>(in),
                    static_cast<float*>(out), cols, stride, exclusive, vec ? 1 : 0, 0.0f);
    };
  }
  default: { // reduce_rows: sum, max, min
    const auto fn = static_cast<ReduceFn>(t.fn);
    return [=](cudaStream_t s, bool pdl) {
      auto go = [&](auto zero, auto lowest, auto highest) {
        using T = decltype(zero);
        const T* x = static_cast<const T*>(in);
        T* y = static_cast<T*>(out);
        if (fn == ReduceFn::sum)
          launch_lean(s, pdl, reduce_rows_kernel<V, T, SumOp>, rows, x, y, cols, stride, vec ? 1 : 0, zero);
        else if (fn == ReduceFn::max)
          launch_lean(s, pdl, reduce_rows_kernel<V, T, MaxOp>, rows, x, y, cols, stride, vec ? 1 : 0, lowest);
        else
          launch_lean(s, pdl, reduce_rows_kernel<V, T, MinOp>, rows, x, y, cols, stride, vec ? 1 : 0, highest);
      };
      if (i32)
        go(0, cuda::std::numeric_limits<int>::min(), cuda::std::numeric_limits<int>::max());
      else
        go(0.0f, -cuda::std::numeric_limits<float>::infinity(), cuda::std::numeric_limits<float>::infinity());
    };
  }
  }
}

// A row op as a lean kernel over rows of up to 4096 columns.
std::function<void(cudaStream_t, bool)> row_step(const TaskDesc& t, const std::vector<void*>& buffers) {
  const void* in = at(buffers, t.in_buffer, t.in_offset);
  void* out = at(buffers, t.out_buffer, t.out_offset);
  const bool vec = t.cols % 4 == 0 && (reinterpret_cast<std::uintptr_t>(in) & 15) == 0 &&
                   (reinterpret_cast<std::uintptr_t>(out) & 15) == 0;
  if (t.cols <= 4 * kLeanThreads)
    return row_step_v<1>(t, in, out, vec);
  if (t.cols <= 8 * kLeanThreads)
    return row_step_v<2>(t, in, out, vec);
  return row_step_v<4>(t, in, out, vec);
}

// A map as one grid-stride lean kernel: enough blocks for one 16-byte group per thread, at most 8 per SM's worth.
std::function<void(cudaStream_t, bool)> map_step(const TaskDesc& t, const std::vector<void*>& buffers) {
  const auto* in = reinterpret_cast<const float*>(at(buffers, t.in_buffer, t.in_offset));
  auto* out = reinterpret_cast<float*>(at(buffers, t.out_buffer, t.out_offset));
  const long long n = t.rows * t.cols;
  const int vec = ((reinterpret_cast<std::uintptr_t>(in) | reinterpret_cast<std::uintptr_t>(out)) & 15) == 0 ? 1 : 0;
  int device = 0, sms = 0;
  GRIDFLOW_CUDA_CHECK(cudaGetDevice(&device));
  GRIDFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const long long want = std::max(1LL, (n / 4 + kLeanThreads - 1) / kLeanThreads);
  const auto blocks = static_cast<unsigned>(std::min<long long>(want, 8LL * sms));
  const kernels::MapParams p{std::bit_cast<float>(t.consts[0]), std::bit_cast<float>(t.consts[1]),
                             std::bit_cast<float>(t.consts[2]), std::bit_cast<float>(t.consts[3])};
  const auto fn = static_cast<MapFn>(t.fn);
  return [=](cudaStream_t s, bool pdl) {
    kernels::with_map_fn(fn, [&]<MapFn F>() { launch_lean(s, pdl, map_kernel<F>, blocks, in, out, n, p, vec); });
  };
}

// A whole-view op as one CUB call; its temporary storage is sized and allocated here, once.
template <class T>
std::function<void(cudaStream_t, bool)> cub_step(const TaskDesc& t, const std::vector<void*>& buffers,
                                                 std::vector<std::unique_ptr<Scratch>>& scratch) {
  const T* in = reinterpret_cast<const T*>(at(buffers, t.in_buffer, t.in_offset));
  const long long n = t.rows * t.cols;
  const int items = static_cast<int>(n);
  std::size_t bytes = 0;
  std::function<cudaError_t(void*, std::size_t&, cudaStream_t)> call;
  switch (static_cast<Opcode>(t.opcode)) {
  case Opcode::reduce_all: {
    T* out = reinterpret_cast<T*>(at(buffers, t.out_buffer, t.out_offset));
    const auto fn = static_cast<ReduceFn>(t.fn);
    call = [=](void* tmp, std::size_t& b, cudaStream_t s) {
      return fn == ReduceFn::sum   ? cub::DeviceReduce::Sum(tmp, b, in, out, items, s)
             : fn == ReduceFn::max ? cub::DeviceReduce::Max(tmp, b, in, out, items, s)
                                   : cub::DeviceReduce::Min(tmp, b, in, out, items, s);
    };
    break;
  }
  case Opcode::scan_all: {
    T* out = reinterpret_cast<T*>(at(buffers, t.out_buffer, t.out_offset));
    const bool exclusive = t.flags & program::kExclusive;
    const bool max = t.fn == static_cast<std::uint32_t>(ScanFn::max);
    const T lowest = cuda::std::is_same_v<T, float> ? static_cast<T>(-cuda::std::numeric_limits<float>::infinity())
                                                    : cuda::std::numeric_limits<T>::min();
    call = [=](void* tmp, std::size_t& b, cudaStream_t s) {
      if (max)
        return exclusive ? cub::DeviceScan::ExclusiveScan(tmp, b, in, out, MaxOp{}, lowest, items, s)
                         : cub::DeviceScan::InclusiveScan(tmp, b, in, out, MaxOp{}, items, s);
      return exclusive ? cub::DeviceScan::ExclusiveSum(tmp, b, in, out, items, s)
                       : cub::DeviceScan::InclusiveSum(tmp, b, in, out, items, s);
    };
    break;
  }
  case Opcode::histogram: {
    int* out = reinterpret_cast<int*>(at(buffers, t.out_buffer, t.out_offset));
    const int bins = static_cast<int>(t.param);
    const int* keys = reinterpret_cast<const int*>(in);
    call = [=](void* tmp, std::size_t& b, cudaStream_t s) {
      return cub::DeviceHistogram::HistogramEven(tmp, b, keys, out, bins + 1, 0, bins, items, s);
    };
    break;
  }
  default: { // select
    T* out = reinterpret_cast<T*>(at(buffers, t.out_buffer, t.out_offset));
    int* count = reinterpret_cast<int*>(at(buffers, t.aux_buffer, static_cast<std::int64_t>(t.aux_offset)));
    const Keep<T> keep{static_cast<CmpFn>(t.param), std::bit_cast<T>(t.consts[0])};
    call = [=](void* tmp, std::size_t& b, cudaStream_t s) {
      return cub::DeviceSelect::If(tmp, b, in, out, count, items, keep, s);
    };
    break;
  }
  }
  GRIDFLOW_CUDA_CHECK(call(nullptr, bytes, nullptr));
  scratch.push_back(std::make_unique<Scratch>(bytes));
  Scratch* mine = scratch.back().get();
  return [call, mine](cudaStream_t s, bool) {
    std::size_t b = mine->bytes;
    GRIDFLOW_CUDA_CHECK(call(mine->p, b, s));
  };
}

} // namespace

struct LeanPipeline::Impl {
  std::vector<Step> steps;
  std::vector<std::unique_ptr<Scratch>> scratch;
  cudaStream_t main = nullptr;
  std::vector<cudaStream_t> side;  // capture streams beyond `main`
  std::vector<cudaEvent_t> events; // one per step (capture only)
  cudaEvent_t fork = nullptr, start = nullptr, stop = nullptr;
  cudaGraphExec_t graph = nullptr, graph_pdl = nullptr;

  ~Impl() {
    if (graph)
      cudaGraphExecDestroy(graph);
    if (graph_pdl)
      cudaGraphExecDestroy(graph_pdl);
    for (cudaEvent_t e : events)
      cudaEventDestroy(e);
    for (cudaStream_t s : side)
      cudaStreamDestroy(s);
    for (cudaEvent_t e : {fork, start, stop})
      if (e)
        cudaEventDestroy(e);
    if (main)
      cudaStreamDestroy(main);
  }

  void enqueue_in_order(bool pdl) {
    for (const Step& s : steps)
      s.enqueue(main, pdl);
  }

  // A graph that keeps the program's edges and adds none: a step extends a stream whose last step is one of its
  // producers, else one whose last step is one of its ancestors (the stream order then only restates an implied
  // edge), else takes a new stream; producers on other streams join by events.
  cudaGraphExec_t capture(bool pdl) {
    if (events.empty()) {
      events.resize(steps.size());
      for (cudaEvent_t& e : events)
        GRIDFLOW_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    std::vector<int> stream_of(steps.size(), -1);
    std::vector<std::int64_t> last; // per stream (0 = main): its last step, -1 none
    std::vector<cudaStream_t> all{main};
    GRIDFLOW_CUDA_CHECK(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
    GRIDFLOW_CUDA_CHECK(cudaEventRecord(fork, main));
    last.push_back(-1);
    std::size_t side_used = 0;
    std::vector<std::vector<bool>> ancestor(steps.size(), std::vector<bool>(steps.size(), false));
    for (std::uint32_t i = 0; i < steps.size(); ++i) {
      for (std::uint32_t p : steps[i].producers) {
        ancestor[i][p] = true;
        for (std::uint32_t q = 0; q < p; ++q)
          if (ancestor[p][q])
            ancestor[i][q] = true;
      }
      int s = -1;
      for (std::uint32_t p : steps[i].producers)
        if (last[static_cast<std::size_t>(stream_of[p])] == p) {
          s = stream_of[p];
          break;
        }
      for (std::size_t k = 0; k < all.size() && s < 0; ++k)
        if (last[k] < 0 || ancestor[i][static_cast<std::size_t>(last[k])])
          s = static_cast<int>(k);
      if (s < 0) {
        if (side_used == side.size()) {
          cudaStream_t n = nullptr;
          GRIDFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&n, cudaStreamNonBlocking));
          side.push_back(n);
        }
        all.push_back(side[side_used++]);
        last.push_back(-1);
        s = static_cast<int>(all.size()) - 1;
        GRIDFLOW_CUDA_CHECK(cudaStreamWaitEvent(all[s], fork));
      }
      for (std::uint32_t p : steps[i].producers)
        if (stream_of[p] != s)
          GRIDFLOW_CUDA_CHECK(cudaStreamWaitEvent(all[s], events[p]));
      steps[i].enqueue(all[s], pdl);
      GRIDFLOW_CUDA_CHECK(cudaEventRecord(events[i], all[s]));
      stream_of[i] = s;
      last[s] = i;
    }
    for (std::size_t s = 1; s < all.size(); ++s)
      if (last[s] >= 0)
        GRIDFLOW_CUDA_CHECK(cudaStreamWaitEvent(main, events[static_cast<std::size_t>(last[s])]));
    cudaGraph_t g = nullptr;
    GRIDFLOW_CUDA_CHECK(cudaStreamEndCapture(main, &g));
    cudaGraphExec_t exec = nullptr;
    GRIDFLOW_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    GRIDFLOW_CUDA_CHECK(cudaGraphDestroy(g));
    return exec;
  }

  // Device milliseconds (events) and host milliseconds (enqueue to synchronized) of each timed repetition.
  template <class Enqueue>
  void time_form(int warmup, int reps, Enqueue enqueue, std::vector<double>& ms, std::vector<double>& host_ms) {
    for (int r = 0; r < warmup + reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      GRIDFLOW_CUDA_CHECK(cudaEventRecord(start, main));
      enqueue();
      GRIDFLOW_CUDA_CHECK(cudaEventRecord(stop, main));
      GRIDFLOW_CUDA_CHECK(cudaEventSynchronize(stop));
      const auto t1 = std::chrono::steady_clock::now();
      GRIDFLOW_CUDA_CHECK_LAUNCH();
      float t = 0;
      GRIDFLOW_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      if (r >= warmup) {
        ms.push_back(t);
        host_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    }
  }
};

LeanPipeline::LeanPipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LeanPipeline::~LeanPipeline() = default;

std::unique_ptr<LeanPipeline> LeanPipeline::build(const LoweredProgram& p, const std::vector<void*>& buffers,
                                                  std::string* why_not) {
  auto impl = std::make_unique<Impl>();
  auto refuse = [&](std::uint32_t task, const char* why) {
    if (why_not)
      *why_not = "task '" + p.task_names[task] + "' has no lean kernel or CUB call: " + why;
    return nullptr;
  };
  for (std::uint32_t i = 0; i < p.tasks.size(); ++i) {
    const TaskDesc& t = p.tasks[i];
    const bool i32 = t.dtype == static_cast<std::uint32_t>(DType::i32);
    Step step;
    for (std::uint32_t k = p.pred_begin[i]; k < p.pred_begin[i + 1]; ++k)
      step.producers.push_back(p.pred_tasks[k]);
    switch (static_cast<Opcode>(t.opcode)) {
    case Opcode::softmax_rows:
    case Opcode::scan_rows:
    case Opcode::reduce_rows:
      if (t.cols > 16 * kLeanThreads)
        return refuse(i, "rows longer than 4096 columns");
      if (t.cols < 1)
        return refuse(i, "rows of no columns");
      if (static_cast<Opcode>(t.opcode) == Opcode::reduce_rows && t.fn == static_cast<std::uint32_t>(ReduceFn::argmax))
        return refuse(i, "argmax");
      step.enqueue = row_step(t, buffers);
      break;
    case Opcode::map:
      step.enqueue = map_step(t, buffers);
      break;
    case Opcode::reduce_all:
      if (t.fn == static_cast<std::uint32_t>(ReduceFn::argmax))
        return refuse(i, "argmax");
      [[fallthrough]];
    case Opcode::scan_all:
    case Opcode::histogram:
    case Opcode::select:
      step.enqueue = i32 ? cub_step<int>(t, buffers, impl->scratch) : cub_step<float>(t, buffers, impl->scratch);
      break;
    default:
      return refuse(i, "no equivalent (scatter)");
    }
    impl->steps.push_back(std::move(step));
  }
  GRIDFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&impl->main, cudaStreamNonBlocking));
  GRIDFLOW_CUDA_CHECK(cudaEventCreateWithFlags(&impl->fork, cudaEventDisableTiming));
  GRIDFLOW_CUDA_CHECK(cudaEventCreate(&impl->start));
  GRIDFLOW_CUDA_CHECK(cudaEventCreate(&impl->stop));
  return std::unique_ptr<LeanPipeline>(new LeanPipeline(std::move(impl)));
}

std::size_t LeanPipeline::steps() const {
  return impl_->steps.size();
}

void LeanPipeline::run_once() {
  impl_->enqueue_in_order(false);
  GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(impl_->main));
  GRIDFLOW_CUDA_CHECK_LAUNCH();
}

LeanTimes LeanPipeline::time(int warmup, int reps) {
  Impl& m = *impl_;
  if (!m.graph)
    m.graph = m.capture(false);
  if (!m.graph_pdl)
    m.graph_pdl = m.capture(true);
  LeanTimes t;
  m.time_form(
      warmup, reps, [&] { m.enqueue_in_order(false); }, t.stream_ms, t.stream_host_ms);
  m.time_form(
      warmup, reps, [&] { m.enqueue_in_order(true); }, t.stream_pdl_ms, t.stream_pdl_host_ms);
  m.time_form(
      warmup, reps, [&] { GRIDFLOW_CUDA_CHECK(cudaGraphLaunch(m.graph, m.main)); }, t.graph_ms, t.graph_host_ms);
  m.time_form(
      warmup, reps, [&] { GRIDFLOW_CUDA_CHECK(cudaGraphLaunch(m.graph_pdl, m.main)); }, t.graph_pdl_ms,
      t.graph_pdl_host_ms);
  return t;
}

} // namespace gridflow::baselines
