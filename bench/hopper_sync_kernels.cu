// Kernels of the Hopper synchronization microbenchmarks (contracts in hopper_sync_kernels.hpp). The grid barrier on
// clusters arrives and waits with gridflow's own protocol code (runtime/protocol.hpp), as the megakernel would.
#include "bench/cuda_timing.cuh"
#include "bench/hopper_sync_kernels.hpp"
#include "runtime/gpu/cuda_check.hpp"
#include "runtime/protocol.hpp"

#include <cooperative_groups.h>
#include <cuda/barrier>

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace gridflow::bench {
namespace {

namespace cg = cooperative_groups;

constexpr std::uint64_t kTimeoutNs = 2'000'000'000ull;
constexpr std::size_t kScratchBytes = 4 * program::kLine;

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void cluster_sync_kernel(int iters) {
  const cg::cluster_group cluster = cg::this_cluster();
  for (int i = 0; i < iters; ++i)
    cluster.sync();
}

// words: the control block (2 lines), then the global arrival counter (line 2).
__global__ void cluster_grid_barrier_kernel(std::uint64_t* words, int iters, int every_block_polls) {
  const cg::cluster_group cluster = cg::this_cluster();
  auto* control = reinterpret_cast<program::ControlBlock*>(words);
  const protocol::WaitSite site{control, kTimeoutNs, blockIdx.x, 0, 0};
  std::uint64_t* global = words + 2 * program::kLine / sizeof(std::uint64_t);
  const auto clusters = static_cast<std::uint32_t>(gridDim.x / cluster.num_blocks());
  const bool first = cluster.block_rank() == 0;
  for (int i = 1; i <= iters; ++i) {
    cluster.sync(); // every block of the cluster arrived (release / acquire at cluster scope)
    if (threadIdx.x == 0) {
      if (first)
        protocol::barrier_arrive(global);
      if (first || every_block_polls)
        protocol::barrier_wait(site, global, static_cast<std::uint64_t>(i), clusters);
    }
    if (every_block_polls)
      __syncthreads();
    else
      cluster.sync();
  }
}

template <bool kMbarrier> __global__ void block_barrier_kernel(int iters) {
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if constexpr (kMbarrier) {
    if (threadIdx.x == 0)
      init(&bar, blockDim.x);
    __syncthreads();
  }
  for (int i = 0; i < iters; ++i) {
    if constexpr (kMbarrier)
      bar.arrive_and_wait();
    else
      __syncthreads();
  }
}

__device__ unsigned load_acquire_cluster(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.cluster.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ void store_release_cluster(unsigned* p, unsigned v) {
  asm volatile("st.release.cluster.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Waits until *own >= want or a second passes (then *failed is set): the hand-off never hangs.
__device__ bool wait_at_least(const unsigned* own, unsigned want, int* failed) {
  const std::uint64_t start = global_ns();
  while (load_acquire_cluster(own) < want)
    if (global_ns() - start > kTimeoutNs) {
      *failed = 1;
      return false;
    }
  return true;
}

// Two blocks of one cluster pass a counter back and forth through each other's shared memory.
__global__ void dsmem_pingpong_kernel(int rounds, int* failed) {
  __shared__ unsigned flag;
  const cg::cluster_group cluster = cg::this_cluster();
  if (threadIdx.x == 0)
    flag = 0;
  cluster.sync(); // both flags initialised before either is written
  const unsigned rank = cluster.block_rank();
  unsigned* peer = cluster.map_shared_rank(&flag, rank ^ 1u);
  if (threadIdx.x == 0)
    for (int k = 1; k <= rounds; ++k) {
      if (rank == 0) {
        store_release_cluster(peer, static_cast<unsigned>(k));
        if (!wait_at_least(&flag, static_cast<unsigned>(k), failed))
          break;
      } else {
        if (!wait_at_least(&flag, static_cast<unsigned>(k), failed))
          break;
        store_release_cluster(peer, static_cast<unsigned>(k));
      }
    }
  cluster.sync(); // neither block leaves while the other may still write its shared memory
}

__global__ void chain_kernel(unsigned long long* counter) {
#if __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
#endif
  if (blockIdx.x == 0 && threadIdx.x == 0)
    *counter += 1;
}

int sm_count() {
  int device = 0, sms = 0;
  GRIDFLOW_CUDA_CHECK(cudaGetDevice(&device));
  GRIDFLOW_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

struct Config {
  cudaLaunchConfig_t config{};
  cudaLaunchAttribute attrs[2]{};
  Config(int blocks, int threads, int cluster, bool cooperative, cudaStream_t stream = nullptr) {
    config.gridDim = dim3(static_cast<unsigned>(blocks));
    config.blockDim = dim3(static_cast<unsigned>(threads));
    config.stream = stream;
    unsigned n = 0;
    if (cluster > 1) {
      attrs[n].id = cudaLaunchAttributeClusterDimension;
      attrs[n].val.clusterDim.x = static_cast<unsigned>(cluster);
      attrs[n].val.clusterDim.y = 1;
      attrs[n].val.clusterDim.z = 1;
      ++n;
    }
    if (cooperative) {
      attrs[n].id = cudaLaunchAttributeCooperative;
      attrs[n].val.cooperative = 1;
      ++n;
    }
    config.attrs = attrs;
    config.numAttrs = n;
  }
};

// Clusters of `cluster` blocks of `kernel` that can be resident at once (0: none, or the shape is refused).
template <class Kernel> int max_active_clusters(Kernel kernel, int cluster, int threads) {
  Config c(cluster, threads, cluster, false);
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, kernel, &c.config) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The difference method: us per iteration from runs of `lo` and `hi` iterations, median of `reps` after one warm-up.
template <class Run> double difference_us(int lo, int hi, int reps, Run run) {
  std::vector<double> us;
  for (int r = 0; r <= reps; ++r) {
    const double t_lo = run(lo), t_hi = run(hi);
    if (r > 0)
      us.push_back((t_hi - t_lo) * 1e3 / (hi - lo));
  }
  return median(us);
}

} // namespace

std::optional<double> cluster_sync_us(int cluster, int blocks_per_sm, int threads, int reps) {
  const int resident = max_active_clusters(cluster_sync_kernel, cluster, threads) * cluster;
  const int blocks = blocks_per_sm * sm_count() / cluster * cluster;
  if (blocks == 0 || blocks > resident)
    return std::nullopt;
  return difference_us(100, 1100, reps, [&](int iters) {
    Config c(blocks, threads, cluster, false);
    return time_ms(nullptr, [&] { GRIDFLOW_CUDA_CHECK(cudaLaunchKernelEx(&c.config, cluster_sync_kernel, iters)); });
  });
}

int cluster_grid_barrier_max_blocks(int cluster, int threads) {
  return max_active_clusters(cluster_grid_barrier_kernel, cluster, threads) * cluster;
}

std::optional<double> cluster_grid_barrier_us(int cluster, int blocks, int threads, bool every_block_polls, int reps) {
  if (blocks % cluster != 0 || blocks > cluster_grid_barrier_max_blocks(cluster, threads))
    return std::nullopt;
  std::uint64_t* words = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&words, kScratchBytes));
  const int every = every_block_polls ? 1 : 0;
  std::optional<double> us;
  {
    Config probe(blocks, threads, cluster, true);
    GRIDFLOW_CUDA_CHECK(cudaMemset(words, 0, kScratchBytes));
    if (cudaLaunchKernelEx(&probe.config, cluster_grid_barrier_kernel, words, 1, every) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
      (void)cudaGetLastError(); // a cooperative launch of clusters this shape is refused
    } else {
      us = difference_us(100, 1100, reps, [&](int iters) {
        Config c(blocks, threads, cluster, true);
        return time_ms(nullptr, [&] {
          GRIDFLOW_CUDA_CHECK(cudaMemsetAsync(words, 0, kScratchBytes));
          GRIDFLOW_CUDA_CHECK(cudaLaunchKernelEx(&c.config, cluster_grid_barrier_kernel, words, iters, every));
        });
      });
      program::ControlBlock control{};
      GRIDFLOW_CUDA_CHECK(cudaMemcpy(&control, words, sizeof control, cudaMemcpyDeviceToHost));
      if (control.error.code != 0)
        us.reset(); // a watchdog fired: no figure
    }
  }
  GRIDFLOW_CUDA_CHECK(cudaFree(words));
  return us;
}

double block_barrier_us(bool mbarrier, int threads, int reps) {
  const int sms = sm_count();
  return difference_us(1000, 11000, reps, [&](int iters) {
    return time_ms(nullptr, [&] {
      if (mbarrier)
        block_barrier_kernel<true><<<sms, threads>>>(iters);
      else
        block_barrier_kernel<false><<<sms, threads>>>(iters);
    });
  });
}

std::optional<double> dsmem_handoff_us(int reps) {
  if (max_active_clusters(dsmem_pingpong_kernel, 2, 32) < 1)
    return std::nullopt;
  int* failed = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&failed, sizeof(int)));
  GRIDFLOW_CUDA_CHECK(cudaMemset(failed, 0, sizeof(int)));
  const double round_trip = difference_us(1000, 5000, reps, [&](int rounds) {
    Config c(2, 32, 2, false);
    return time_ms(nullptr,
                   [&] { GRIDFLOW_CUDA_CHECK(cudaLaunchKernelEx(&c.config, dsmem_pingpong_kernel, rounds, failed)); });
  });
  int f = 0;
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(&f, failed, sizeof f, cudaMemcpyDeviceToHost));
  GRIDFLOW_CUDA_CHECK(cudaFree(failed));
  if (f)
    return std::nullopt;
  return round_trip / 2.0;
}

double kernel_chain_us(bool graph, bool pdl, int blocks, int reps) {
  cudaStream_t stream = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long* counter = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&counter, sizeof *counter));
  GRIDFLOW_CUDA_CHECK(cudaMemset(counter, 0, sizeof *counter));
  unsigned long long launched = 0;
  const auto enqueue = [&](int n) {
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    for (int k = 0; k < n; ++k) {
      Config c(blocks, 128, 1, false, stream);
      c.config.attrs = &attr;
      c.config.numAttrs = pdl ? 1 : 0;
      GRIDFLOW_CUDA_CHECK(cudaLaunchKernelEx(&c.config, chain_kernel, counter));
    }
  };
  std::vector<cudaGraphExec_t> graphs;
  const auto instantiate = [&](int n) {
    GRIDFLOW_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enqueue(n);
    cudaGraph_t g = nullptr;
    GRIDFLOW_CUDA_CHECK(cudaStreamEndCapture(stream, &g));
    cudaGraphExec_t exec = nullptr;
    GRIDFLOW_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
    GRIDFLOW_CUDA_CHECK(cudaGraphDestroy(g));
    graphs.push_back(exec);
    return exec;
  };
  constexpr int kShort = 100, kLong = 1100;
  cudaGraphExec_t short_graph = graph ? instantiate(kShort) : nullptr;
  cudaGraphExec_t long_graph = graph ? instantiate(kLong) : nullptr;
  const double us = difference_us(kShort, kLong, reps, [&](int n) {
    launched += static_cast<unsigned long long>(n);
    return time_ms(stream, [&] {
      if (graph)
        GRIDFLOW_CUDA_CHECK(cudaGraphLaunch(n == kShort ? short_graph : long_graph, stream));
      else
        enqueue(n);
    });
  });
  unsigned long long got = 0;
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(&got, counter, sizeof got, cudaMemcpyDeviceToHost));
  for (cudaGraphExec_t g : graphs)
    GRIDFLOW_CUDA_CHECK(cudaGraphExecDestroy(g));
  GRIDFLOW_CUDA_CHECK(cudaFree(counter));
  GRIDFLOW_CUDA_CHECK(cudaStreamDestroy(stream));
  if (got != launched)
    throw std::runtime_error("kernel chain: the counter ran " + std::to_string(got) + " of " +
                             std::to_string(launched) + " kernels: a dependency did not hold");
  return us;
}

} // namespace gridflow::bench
