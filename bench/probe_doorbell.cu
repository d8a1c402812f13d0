// What the resident runtime's submission round trip is made of, on this GPU, outside gridflow: a host doorbell word
// and an acknowledgement in pinned mapped host memory, one block polling, and the acknowledgement written the ways
// retire (runtime/resident.hpp) could write it. Also the latency of one system-scope load of host memory and the
// cost of a system-scope fence with and without host-memory stores before it (device clock).
//
//   gridflow_probe_doorbell [rounds]     (built with the GPU backend; without a GPU it says so and exits 0)
//
// Every figure: the median and the 99th percentile of `rounds` round trips (host steady clock) after 1000 warm-up
// rounds, each rung 3 us after the last was acknowledged; one line of JSON per variant on stdout.
#include "bench/bench_common.hpp"
#include "runtime/gpu/cuda_check.hpp"

#include <cuda/atomic>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

template <class T> using sys_ref = cuda::atomic_ref<T, cuda::thread_scope_system>;
template <class T> using gpu_ref = cuda::atomic_ref<T, cuda::thread_scope_device>;

struct alignas(128) Ack {
  std::uint64_t seq;
  std::uint64_t fields[7];
};

enum Variant : int {
  kRelaxedAck = 0,      // st.relaxed.sys of the ticket alone
  kReleaseAck = 1,      // release store (fence.acq_rel.sys + store) of the ticket alone
  kFieldsRelease = 2,   // three field stores to host memory, then the release store (retire's completion)
  kRetireLike = 3,      // an output store to device memory, the fields, the release store, then a device release
  kStaggered = 4,       // eight warps poll, staggered; the one that sees the doorbell acknowledges (release)
  kStaggeredJoin = 5,   // the same, but the block joins (a barrier) before the acknowledgement
  kBlockBarrierAck = 6, // one thread polls, the block passes a barrier, then the release acknowledgement
};
constexpr int kVariants = 7;
constexpr int kPollWarps = 8;

__device__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void serve(const std::uint64_t* bell, Ack* ack, float* out, std::uint64_t* device_word, int variant,
                      std::uint64_t rounds, std::uint32_t stagger_ns) {
  __shared__ std::uint64_t seen;
  for (std::uint64_t k = 1; k <= rounds; ++k) {
    if (threadIdx.x == 0)
      seen = 0;
    __syncthreads();
    const bool staggered = variant == kStaggered || variant == kStaggeredJoin;
    const unsigned warp = threadIdx.x / 32;
    if (staggered ? (threadIdx.x % 32 == 0 && warp < kPollWarps) : threadIdx.x == 0) {
      if (staggered) { // warp w starts polling w * stagger_ns later than warp 0
        const std::uint64_t start = now_ns() + warp * stagger_ns;
        while (now_ns() < start) {
        }
      }
      for (;;) {
        if (gpu_ref<std::uint64_t>(seen).load(cuda::memory_order_relaxed) >= k)
          break;
        if (sys_ref<const std::uint64_t>(*bell).load(cuda::memory_order_acquire) >= k) {
          const bool first =
              atomicCAS(reinterpret_cast<unsigned long long*>(&seen), 0ull, static_cast<unsigned long long>(k)) == 0;
          if (first && variant == kStaggered)
            sys_ref<std::uint64_t>(ack->seq).store(k, cuda::memory_order_release);
          break;
        }
      }
    }
    if (variant == kStaggered) {
      __syncthreads();
      continue;
    }
    if (variant == kStaggeredJoin || variant == kBlockBarrierAck)
      __syncthreads();
    if (threadIdx.x != 0)
      continue;
    switch (variant) {
    case kRelaxedAck:
      sys_ref<std::uint64_t>(ack->seq).store(k, cuda::memory_order_relaxed);
      break;
    case kRetireLike:
      out[0] = static_cast<float>(k);
      [[fallthrough]];
    case kFieldsRelease:
      ack->fields[0] = k;
      ack->fields[1] = now_ns();
      ack->fields[2] = k + 1;
      [[fallthrough]];
    default:
      sys_ref<std::uint64_t>(ack->seq).store(k, cuda::memory_order_release);
    }
    if (variant == kRetireLike)
      gpu_ref<std::uint64_t>(*device_word).store(k, cuda::memory_order_release);
  }
}

// One thread: `n` dependent system-scope loads of host memory, and `n` system fences with and without a host store
// before each; device nanoseconds per operation into result[0..2].
__global__ void latencies(const std::uint64_t* host_word, std::uint64_t* host_sink, std::uint64_t* result, int n) {
  std::uint64_t v = 0;
  const std::uint64_t* p = host_word;
  std::uint64_t t0 = now_ns();
  for (int i = 0; i < n; ++i) {
    v += sys_ref<const std::uint64_t>(p[v & 1]).load(cuda::memory_order_relaxed);
  }
  std::uint64_t t1 = now_ns();
  result[0] = (t1 - t0) / n;
  t0 = now_ns();
  for (int i = 0; i < n; ++i)
    cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_system);
  t1 = now_ns();
  result[1] = (t1 - t0) / n;
  t0 = now_ns();
  for (int i = 0; i < n; ++i) {
    sys_ref<std::uint64_t>(host_sink[i % 8]).store(v + i, cuda::memory_order_relaxed);
    cuda::atomic_thread_fence(cuda::memory_order_acq_rel, cuda::thread_scope_system);
  }
  t1 = now_ns();
  result[2] = (t1 - t0) / n;
  host_sink[9] = v; // keeps the loads
}

int main(int argc, char** argv) try {
  char* end = nullptr;
  const std::uint64_t rounds = argc > 1 ? std::strtoull(argv[1], &end, 10) : 20000;
  if (argc > 2 || (argc > 1 && (*end != '\0' || rounds < 1 || rounds > 10'000'000))) {
    std::fprintf(stderr, "usage: gridflow_probe_doorbell [rounds: 1 to 10000000]\n");
    return 2;
  }
  if (!gridflow::bench::gpu_to_measure("gridflow_probe_doorbell"))
    return 0;
  const std::uint64_t warm = 1000;
  std::uint64_t* bell = nullptr;
  Ack* ack = nullptr;
  std::uint64_t* sink = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaHostAlloc(&bell, 4096, cudaHostAllocMapped));
  GRIDFLOW_CUDA_CHECK(cudaHostAlloc(&ack, sizeof(Ack), cudaHostAllocMapped));
  GRIDFLOW_CUDA_CHECK(cudaHostAlloc(&sink, 4096, cudaHostAllocMapped));
  float* out = nullptr;
  std::uint64_t* word = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&out, 4096));
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&word, 4096));
  std::uint64_t *dbell, *dsink;
  Ack* dack;
  GRIDFLOW_CUDA_CHECK(cudaHostGetDevicePointer(&dbell, bell, 0));
  GRIDFLOW_CUDA_CHECK(cudaHostGetDevicePointer(&dack, ack, 0));
  GRIDFLOW_CUDA_CHECK(cudaHostGetDevicePointer(&dsink, sink, 0));
  cudaStream_t stream;
  GRIDFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::uint64_t* dres;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&dres, 64));
  bell[0] = 0;
  bell[1] = 0;
  latencies<<<1, 1, 0, stream>>>(dbell, dsink, dres, 2000);
  GRIDFLOW_CUDA_CHECK_LAUNCH();
  std::uint64_t res[3];
  GRIDFLOW_CUDA_CHECK(cudaMemcpyAsync(res, dres, sizeof(res), cudaMemcpyDeviceToHost, stream));
  GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::printf(
      "{\"what\": \"device\", \"sys_load_ns\": %llu, \"sys_fence_ns\": %llu, \"host_store_sys_fence_ns\": %llu}\n",
      (unsigned long long)res[0], (unsigned long long)res[1], (unsigned long long)res[2]);

  const char* names[kVariants] = {"relaxed_ack",       "release_ack",    "fields_release",   "retire_like",
                                  "staggered_8x150ns", "staggered_join", "block_barrier_ack"};
  for (int variant = 0; variant < kVariants; ++variant) {
    const std::uint64_t total = warm + rounds;
    sys_ref<std::uint64_t>(bell[0]).store(0, cuda::memory_order_release);
    sys_ref<std::uint64_t>(ack->seq).store(0, cuda::memory_order_release);
    serve<<<1, 256, 0, stream>>>(dbell, dack, out, word, variant, total, 150);
    GRIDFLOW_CUDA_CHECK_LAUNCH();
    std::vector<double> us;
    us.reserve(rounds);
    for (std::uint64_t k = 1; k <= total; ++k) {
      const auto idle = std::chrono::steady_clock::now() + std::chrono::microseconds(3);
      while (std::chrono::steady_clock::now() < idle) { // the block is back to polling, whatever the variant
      }
      const auto t0 = std::chrono::steady_clock::now();
      sys_ref<std::uint64_t>(bell[0]).store(k, cuda::memory_order_release);
      while (sys_ref<std::uint64_t>(ack->seq).load(cuda::memory_order_acquire) < k) {
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (k > warm)
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::sort(us.begin(), us.end());
    std::printf("{\"what\": \"%s\", \"rounds\": %llu, \"p50_us\": %.3f, \"p90_us\": %.3f, \"p99_us\": %.3f}\n",
                names[variant], (unsigned long long)rounds, us[us.size() / 2], us[us.size() * 9 / 10],
                us[us.size() * 99 / 100]);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gridflow_probe_doorbell: %s\n", e.what());
  return 1;
}
