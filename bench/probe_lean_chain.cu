// What a lean megakernel tile costs beyond its body, outside the executor: the lean megakernel (runtime/gpu/
// lean_kernel.cuh) launched on hand-built chain programs (block b runs row b's chain of 512 row ops, each tile
// forwarded from the one before it, nothing to wait for or signal), once with every tile marked plain (kPlainTile,
// what the host marks such tiles) and once with the mark cleared (every tile through the interpreter's claim,
// descriptor, wait and signal steps), beside the one-block-per-row bound: the same lean bodies in a persistent loop
// with no interpreter (each block keeps its row in registers between ops, every output stored).
//
//   gridflow_probe_lean_chain     (built with the GPU backend; without a GPU it says so and exits 0)
//
// Chains as gridflow_bench_chain's: softmax, and softmax alternating with an inclusive row scan, over 16 x 1024 and
// 256 x 1024 floats, one buffer per op. us per op: median of 10 launches after 3 warm-up ones (CUDA events around
// the launch). Every run's last buffer is poisoned first and must come out bit-identical to the bound's; exit status
// 1 when any differs.
#include "bench/bench_common.hpp"
#include "runtime/gpu/cuda_check.hpp"
#include "runtime/gpu/lean_kernel.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using namespace gridflow;

constexpr int kCols = 1024;
constexpr int kThreads = 256;
constexpr int kOps = 512;

// Row `blockIdx.x`'s chain: op t reads bufs[t] (op 0 from memory, every later op from registers), writes bufs[t + 1].
__global__ void __launch_bounds__(kThreads) bound_chain(float* const* bufs, int ops, bool mixed) {
  __shared__ kernels::LeanStorage<kThreads> s;
  int half = 0;
  kernels::LeanRow x;
  const long long row = blockIdx.x;
  kernels::lean_load<kThreads, float>(x, bufs[0] + row * kCols, kCols, 0.f, kernels::PlainLoad{});
  for (int t = 0; t < ops; ++t) {
    const kernels::LeanRow y = (mixed && (t & 1))
                                   ? kernels::lean_scan<kThreads, float>(x, kCols, false, kernels::Sum{}, s, half)
                                   : kernels::lean_softmax<kThreads>(x, kCols, false, s, half);
    kernels::lean_store<kThreads, float>(y, bufs[t + 1] + row * kCols, kCols, kernels::PlainStore{});
    x = y;
  }
}

// The chain as lean instructions: block b's list is row b's tiles in op order.
std::vector<program::TileInstr> chain_instrs(const std::vector<float*>& bufs, int rows, bool mixed, bool plain) {
  std::vector<program::TileInstr> out;
  for (int b = 0; b < rows; ++b)
    for (int t = 0; t < kOps; ++t) {
      program::TileInstr in;
      in.opcode =
          static_cast<std::uint32_t>(mixed && (t & 1) ? program::Opcode::scan_rows : program::Opcode::softmax_rows);
      in.flags = (t > 0 ? program::kForwardInput : 0u) | (plain ? program::kPlainTile : 0u);
      in.task = static_cast<std::uint32_t>(t);
      in.tile = static_cast<std::uint32_t>(t * rows + b);
      in.rows = 1;
      in.cols = kCols;
      in.level = static_cast<std::uint32_t>(t);
      in.out_stride = kCols;
      in.in = reinterpret_cast<std::uint64_t>(bufs[t] + static_cast<long long>(b) * kCols);
      in.out = reinterpret_cast<std::uint64_t>(bufs[t + 1] + static_cast<long long>(b) * kCols);
      out.push_back(in);
    }
  return out;
}

template <class T> T* device_copy(const std::vector<T>& v) {
  T* d = nullptr;
  GRIDFLOW_CUDA_CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
  GRIDFLOW_CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

} // namespace

int main() try {
  if (!gridflow::bench::gpu_to_measure("gridflow_probe_lean_chain"))
    return 0;
  int failures = 0;
  std::printf("%-8s %5s %-34s %9s  %s\n", "chain", "rows", "kernel", "us/op", "bits vs bound");
  for (const bool mixed : {false, true})
    for (const int rows : {16, 256}) {
      const std::size_t n = static_cast<std::size_t>(rows) * kCols;
      std::vector<float*> bufs(kOps + 1);
      for (float*& b : bufs)
        GRIDFLOW_CUDA_CHECK(cudaMalloc(&b, n * sizeof(float)));
      std::vector<float> x0(n);
      for (std::size_t i = 0; i < n; ++i)
        x0[i] = static_cast<float>(3.0 * std::sin(0.37 * static_cast<double>(i)));
      GRIDFLOW_CUDA_CHECK(cudaMemcpy(bufs[0], x0.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      float* const* dbufs = device_copy(bufs);
      std::vector<std::uint32_t> begin;
      for (int b = 0; b <= rows; ++b)
        begin.push_back(static_cast<std::uint32_t>(b * kOps));
      std::uint32_t* dbegin = device_copy(begin);
      unsigned char* state = nullptr; // no run here touches it (nothing waits, signals or fails); zeroed all the same
      GRIDFLOW_CUDA_CHECK(cudaMalloc(&state, 1 << 20));
      GRIDFLOW_CUDA_CHECK(cudaMemset(state, 0, 1 << 20));
      std::vector<std::uint32_t> bound_bits;
      auto time = [&](const char* name, auto launch) {
        cudaEvent_t a, b;
        GRIDFLOW_CUDA_CHECK(cudaEventCreate(&a));
        GRIDFLOW_CUDA_CHECK(cudaEventCreate(&b));
        std::vector<float> ms;
        for (int i = 0; i < 13; ++i) {
          GRIDFLOW_CUDA_CHECK(cudaMemset(bufs[kOps], 0xff, n * sizeof(float)));
          GRIDFLOW_CUDA_CHECK(cudaEventRecord(a));
          launch();
          GRIDFLOW_CUDA_CHECK_LAUNCH();
          GRIDFLOW_CUDA_CHECK(cudaEventRecord(b));
          GRIDFLOW_CUDA_CHECK(cudaEventSynchronize(b));
          float m = 0;
          GRIDFLOW_CUDA_CHECK(cudaEventElapsedTime(&m, a, b));
          if (i >= 3)
            ms.push_back(m);
        }
        GRIDFLOW_CUDA_CHECK(cudaEventDestroy(a));
        GRIDFLOW_CUDA_CHECK(cudaEventDestroy(b));
        std::sort(ms.begin(), ms.end());
        std::vector<std::uint32_t> bits(n);
        GRIDFLOW_CUDA_CHECK(cudaMemcpy(bits.data(), bufs[kOps], n * 4, cudaMemcpyDeviceToHost));
        const char* same = "-";
        if (bound_bits.empty()) {
          bound_bits = bits;
        } else if (bits == bound_bits) {
          same = "same";
        } else {
          same = "DIFFER";
          ++failures;
        }
        std::printf("%-8s %5d %-34s %9.3f  %s\n", mixed ? "mixed" : "softmax", rows, name,
                    ms[ms.size() / 2] * 1e3 / kOps, same);
      };
      time("bound (bodies, no interpreter)", [&] { bound_chain<<<rows, kThreads>>>(dbufs, kOps, mixed); });
      for (const bool plain : {true, false}) {
        program::TileInstr* instrs = device_copy(chain_instrs(bufs, rows, mixed, plain));
        program::ProgramView v{};
        v.block_begin = dbegin;
        v.block_instrs = instrs;
        v.state = state;
        v.num_tasks = kOps;
        v.num_tiles = static_cast<std::uint32_t>(kOps * rows);
        v.grid_blocks = static_cast<std::uint32_t>(rows);
        v.mode = static_cast<std::uint32_t>(SyncMode::flags);
        v.schedule = static_cast<std::uint32_t>(Schedule::static_list);
        const program::RunParams r{};
        time(plain ? "lean megakernel, plain tiles" : "lean megakernel, protocol steps",
             [&] { gpu::lean_megakernel<kThreads, false, false><<<rows, kThreads>>>(v, r); });
        GRIDFLOW_CUDA_CHECK(cudaFree(instrs));
      }
      for (float* b : bufs)
        GRIDFLOW_CUDA_CHECK(cudaFree(b));
      GRIDFLOW_CUDA_CHECK(cudaFree(const_cast<float**>(dbufs)));
      GRIDFLOW_CUDA_CHECK(cudaFree(dbegin));
      GRIDFLOW_CUDA_CHECK(cudaFree(state));
    }
  return failures == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gridflow_probe_lean_chain: %s\n", e.what());
  return 1;
}
