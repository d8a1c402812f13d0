// Kernels of the synchronization microbenchmarks. They use the same protocol code (runtime/protocol.hpp) as the
// megakernel, so the figures are those of what gridflow ships.
#include "bench/cuda_timing.cuh"
#include "bench/sync_kernels.hpp"
#include "runtime/gpu/cuda_check.hpp"
#include "runtime/protocol.hpp"

#include <cooperative_groups.h>

#include <algorithm>

namespace gridflow::bench {
namespace {

constexpr int kLineWords = 16; // uint64 words per 128-byte line
constexpr std::uint64_t kTimeoutNs = 2'000'000'000ull;
constexpr int kSplitLine = 1024;
constexpr std::size_t kScratchBytes = (kSplitLine + 32) * 128;

// Layout of `words`: [0] control block (2 lines), line 2: global counter, line 3: SMs used, line 4 + s: SM s,
// line kSplitLine + k: the split barrier's counter k.
__device__ std::uint64_t* line(std::uint64_t* words, int i) {
  return words + kLineWords * i;
}

__device__ std::uint32_t smid() {
  std::uint32_t id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

__device__ program::PollPacing pacing_checking_every(int check_every) {
  program::PollPacing p;
  p.check_every = static_cast<std::uint32_t>(check_every);
  return p;
}

__global__ void barrier_loop_kernel(int kind, std::uint64_t* words, int iters, int ways, int check_every) {
  namespace cg = cooperative_groups;
  auto* control = reinterpret_cast<program::ControlBlock*>(words);
  const protocol::WaitSite site{control, kTimeoutNs, blockIdx.x, 0, 0, pacing_checking_every(check_every)};
  std::uint64_t* global = line(words, 2);
  std::uint64_t blocks_on_sm = 0, sms_used = 0;
  std::uint64_t* mine = nullptr;
  if (kind == static_cast<int>(BarrierKind::sm_aggregated)) {
    // Prologue: count blocks per SM and SMs in use (cg.sync separates counting from reading).
    mine = line(words, 4 + static_cast<int>(smid()));
    if (threadIdx.x == 0 && protocol::atomic_ref<std::uint64_t>(mine[1]).fetch_add(1) == 0)
      protocol::atomic_ref<std::uint64_t>(*line(words, 3)).fetch_add(1);
    cg::this_grid().sync();
    blocks_on_sm = protocol::atomic_ref<std::uint64_t>(mine[1]).load(cuda::std::memory_order_relaxed);
    sms_used = protocol::atomic_ref<std::uint64_t>(*line(words, 3)).load(cuda::std::memory_order_relaxed);
  }
  for (int i = 1; i <= iters; ++i) {
    if (kind == static_cast<int>(BarrierKind::cg)) {
      cg::this_grid().sync();
      continue;
    }
    __syncthreads();
    if (kind == static_cast<int>(BarrierKind::split)) {
      // Counter k gets the blocks b with b % ways == k: ceil((blocks - k) / ways) of them.
      if (threadIdx.x == 0)
        protocol::barrier_arrive(line(words, kSplitLine + static_cast<int>(blockIdx.x) % ways));
      if (static_cast<int>(threadIdx.x) < ways) {
        const auto k = static_cast<std::uint32_t>(threadIdx.x);
        const std::uint32_t members = (gridDim.x - k + ways - 1) / ways;
        protocol::barrier_wait(site, line(words, kSplitLine + static_cast<int>(k)), static_cast<std::uint64_t>(i),
                               members);
      }
      __syncthreads();
      continue;
    }
    if (threadIdx.x == 0) {
      if (kind == static_cast<int>(BarrierKind::flat)) {
        protocol::barrier_arrive(global);
        protocol::barrier_wait(site, global, static_cast<std::uint64_t>(i), gridDim.x);
      } else {
        if (protocol::arrive_is_last(mine, blocks_on_sm * static_cast<std::uint64_t>(i)))
          protocol::barrier_arrive(global);
        protocol::barrier_wait(site, global, static_cast<std::uint64_t>(i), static_cast<std::uint32_t>(sms_used));
      }
    }
    __syncthreads();
  }
}

__global__ void pingpong_kernel(std::uint64_t* words, int rounds, int sentinel, int* smids, int check_every) {
  if (blockIdx.x > 1)
    return;
  if (threadIdx.x != 0)
    return;
  smids[blockIdx.x] = static_cast<int>(smid());
  auto* control = reinterpret_cast<program::ControlBlock*>(words);
  const protocol::WaitSite site{control, kTimeoutNs, blockIdx.x, 0, 0, pacing_checking_every(check_every)};
  std::uint64_t* a = line(words, 2);
  std::uint64_t* b = line(words, 3);
  auto* fa = reinterpret_cast<float*>(line(words, 4));
  auto* fb = reinterpret_cast<float*>(line(words, 5));
  const bool first = blockIdx.x == 0;
  for (int k = 0; k < rounds; ++k) {
    if (sentinel) {
      // Data as the flag: the value is the round number; relaxed stores and polls.
      float* in = first ? fb : fa;
      float* out = first ? fa : fb;
      const float want = first ? static_cast<float>(k) : static_cast<float>(k + 1);
      if (!(first && k == 0))
        while (protocol::atomic_ref<float>(*in).load(cuda::std::memory_order_relaxed) < want) {
        }
      protocol::atomic_ref<float>(*out).store(static_cast<float>(k + 1), cuda::std::memory_order_relaxed);
    } else {
      std::uint64_t* in = first ? b : a;
      std::uint64_t* out = first ? a : b;
      const std::uint64_t want = first ? k : k + 1;
      if (want > 0 && !protocol::wait_counter(site, {program::WaitKind::task_counter, 0, 0, want}, in))
        return;
      protocol::signal_counter(out);
    }
  }
}

__global__ void empty_kernel() {}

std::uint64_t* scratch_words() {
  static std::uint64_t* words = nullptr;
  if (!words)
    GRIDFLOW_CUDA_CHECK(cudaMalloc(&words, kScratchBytes));
  return words;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median milliseconds of `reps` launches after one warm-up, the scratch words zeroed before each.
template <class Launch> double time_median(int reps, Launch launch) {
  std::vector<double> ms;
  for (int r = 0; r < reps + 1; ++r) {
    GRIDFLOW_CUDA_CHECK(cudaMemset(scratch_words(), 0, kScratchBytes));
    const double t = time_ms(nullptr, launch);
    if (r > 0)
      ms.push_back(t);
  }
  return median_of(ms);
}

} // namespace

int barrier_max_blocks_per_sm(int threads) {
  int n = 0;
  GRIDFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, barrier_loop_kernel, threads, 0));
  return n;
}

double time_barrier_loop(BarrierKind kind, int blocks, int threads, int iters, int reps, int ways, int check_every) {
  return time_median(reps, [&] {
    int k = static_cast<int>(kind);
    std::uint64_t* w = scratch_words();
    void* args[] = {&k, &w, &iters, &ways, &check_every};
    GRIDFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&barrier_loop_kernel), dim3(blocks),
                                                    dim3(threads), args, 0, nullptr));
  });
}

double time_pingpong(int rounds, bool sentinel, int reps, int smids[2], int check_every) {
  int* d_smids = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&d_smids, 2 * sizeof(int)));
  const double ms = time_median(reps, [&] {
    std::uint64_t* w = scratch_words();
    int s = sentinel ? 1 : 0;
    void* args[] = {&w, &rounds, &s, &d_smids, &check_every};
    GRIDFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&pingpong_kernel), dim3(2), dim3(32),
                                                    args, 0, nullptr));
  });
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(smids, d_smids, 2 * sizeof(int), cudaMemcpyDeviceToHost));
  GRIDFLOW_CUDA_CHECK(cudaFree(d_smids));
  return ms;
}

double time_empty_launch(int blocks, bool cooperative, int reps) {
  return time_median(reps, [&] {
    if (cooperative)
      GRIDFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&empty_kernel), dim3(blocks),
                                                      dim3(128), nullptr, 0, nullptr));
    else
      empty_kernel<<<blocks, 128>>>();
  });
}

} // namespace gridflow::bench
