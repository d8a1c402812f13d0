// Grid barrier probe: cooperative launches, difference method (N vs M barriers), median of reps.
// Variants: cg (this_grid().sync()), ws (CG's protocol, our code, on CG's own workspace word), flat (CG's protocol
// on a cudaMalloc word at a chosen line), a2a-* (every block stores its own arrival flag, every block polls all
// flags: no atomics), check mode verifies ordering.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace cg = cooperative_groups;

#define CK(x)                                                                                                          \
  do {                                                                                                                 \
    cudaError_t e_ = (x);                                                                                              \
    if (e_ != cudaSuccess) {                                                                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));                          \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

__device__ __forceinline__ unsigned ld_acq(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.u32 %0,[%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_rlx(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.u32 %0,[%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_rel(unsigned* p, unsigned v) {
  asm volatile("st.release.gpu.u32 [%0],%1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void fence_acq_rel() {
  asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

// ordering check: before barrier g every block writes data[bid] = g; after it, reads data[(bid*7+g) % N] >= g.
__device__ __forceinline__ void pre(unsigned* data, unsigned g, bool check) {
  if (check && threadIdx.x == 0)
    data[blockIdx.x * 32] = g;
}
__device__ __forceinline__ void post(unsigned* data, unsigned g, bool check, unsigned* bad) {
  if (check && threadIdx.x == 0) {
    unsigned j = (blockIdx.x * 7 + g) % gridDim.x;
    unsigned v = *((volatile unsigned*)&data[j * 32]);
    if (v < g)
      atomicAdd(bad, 1);
  }
}

__global__ void k_cg(int iters, unsigned* data, bool check, unsigned* bad) {
  auto grid = cg::this_grid();
  for (int i = 1; i <= iters; ++i) {
    pre(data, i, check);
    grid.sync();
    post(data, i, check, bad);
  }
}

__device__ __forceinline__ void flip_barrier(unsigned* arrived) {
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned expected = gridDim.x;
    unsigned nb = blockIdx.x == 0 ? 0x80000000u - (expected - 1) : 1u;
    unsigned old;
    asm volatile("atom.add.release.gpu.u32 %0,[%1],%2;" : "=r"(old) : "l"(arrived), "r"(nb) : "memory");
    unsigned cur;
    do {
      cur = ld_acq(arrived);
    } while (((old ^ cur) & 0x80000000u) == 0);
  }
  __syncthreads();
}

__global__ void k_ws(int iters, unsigned* data, bool check, unsigned* bad) {
  unsigned* w = &cg::details::get_grid_workspace()->barrier;
  for (int i = 1; i <= iters; ++i) {
    pre(data, i, check);
    flip_barrier(w);
    post(data, i, check, bad);
  }
}

__global__ void k_flat(unsigned* arrived, int iters, unsigned* data, bool check, unsigned* bad) {
  for (int i = 1; i <= iters; ++i) {
    pre(data, i, check);
    flip_barrier(arrived);
    post(data, i, check, bad);
  }
}

// All-to-all flags. flag j at flags[j * stride]; generations only grow.
// kind 0: warp w covers chunks w, w+W, ...; each round it loads every one of its chunks (relaxed, all in flight),
//         __all_sync, then an acquire fence.  kind 1: the same with acquire loads.
// kind 2: warp 0 alone covers every chunk.   kind 3: the whole block: thread t loads flags t, t+T, ...;
//         __syncthreads_and per round.
// kind 4: gather-broadcast: block 0 polls every flag (as kind 0), then stores go = g; the others poll go.
constexpr unsigned kMaxPer = 12; // loads per lane per round (n <= kMaxPer * 32 * warps)

__device__ __forceinline__ bool warp_all_seen(const unsigned* flags, unsigned stride, unsigned n, unsigned first,
                                              unsigned step, unsigned g, bool acquire) {
  const unsigned lane = threadIdx.x & 31;
  bool ok = true;
#pragma unroll
  for (unsigned k = 0; k < kMaxPer; ++k) {
    const unsigned c = first + k * step;
    const unsigned j = c * 32 + lane;
    if (j < n) {
      const unsigned v = acquire ? ld_acq(&flags[j * stride]) : ld_rlx(&flags[j * stride]);
      ok = ok && (int)(v - g) >= 0;
    }
  }
  return __all_sync(0xffffffffu, ok);
}

template <int Kind> __device__ __forceinline__ void a2a_barrier(unsigned* flags, unsigned stride, unsigned g) {
  __syncthreads();
  const unsigned n = gridDim.x;
  const unsigned warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const unsigned chunks = (n + 31) / 32;
  if (threadIdx.x == 0)
    st_rel(&flags[blockIdx.x * stride], g);
  if (Kind == 0 || Kind == 1) {
    if (warp < chunks) {
      while (!warp_all_seen(flags, stride, n, warp, warps, g, Kind == 1)) {
      }
      if (Kind == 0)
        fence_acq_rel();
    }
  } else if (Kind == 2) {
    if (warp == 0) {
      while (!warp_all_seen(flags, stride, n, 0, 1, g, false)) {
      }
      fence_acq_rel();
    }
  } else if (Kind == 3) {
    for (;;) {
      bool ok = true;
#pragma unroll
      for (unsigned k = 0; k < kMaxPer; ++k) {
        const unsigned j = threadIdx.x + k * blockDim.x;
        if (j < n)
          ok = ok && (int)(ld_rlx(&flags[j * stride]) - g) >= 0;
      }
      if (__syncthreads_and(ok))
        break;
    }
    if (threadIdx.x < n)
      fence_acq_rel();
  } else {
    unsigned* go = flags + 8192 * 32;
    if (blockIdx.x == 0) {
      if (warp < chunks) {
        while (!warp_all_seen(flags, stride, n, warp, warps, g, false)) {
        }
        fence_acq_rel();
      }
      __syncthreads();
      if (threadIdx.x == 0)
        st_rel(go, g);
    } else if (threadIdx.x == 0) {
      while ((int)(ld_acq(go) - g) < 0) {
      }
    }
  }
  __syncthreads();
}

template <int Kind>
__global__ void k_a2a(unsigned* flags, unsigned stride, unsigned base, int iters, unsigned* data, bool check,
                      unsigned* bad) {
  for (int i = 1; i <= iters; ++i) {
    pre(data, base + i, check);
    a2a_barrier<Kind>(flags, stride, base + i);
    post(data, base + i, check, bad);
  }
}

struct Ctx {
  int sms;
  unsigned* buf;  // 64 MiB scratch, counters / flags
  unsigned* data; // check data
  unsigned* bad;
  unsigned gen = 0; // a2a generations used so far (flags never reset)
};

template <class F> float time_launch(F&& launch) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a));
  launch();
  CK(cudaGetLastError());
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms;
  CK(cudaEventElapsedTime(&ms, a, b));
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return ms;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// variant: "cg", "ws", "flat:LINEWORDS", "a2a0:STRIDE", "a2a1:STRIDE", "a2a2:STRIDE"
static void launch_variant(Ctx& c, const std::string& v, long arg, int blocks, int threads, int iters, bool check) {
  void* args[8];
  unsigned* d = c.data;
  unsigned* bad = c.bad;
  bool chk = check;
  if (v == "cg" || v == "ws") {
    args[0] = &iters;
    args[1] = &d;
    args[2] = &chk;
    args[3] = &bad;
    CK(cudaLaunchCooperativeKernel(v == "cg" ? (void*)k_cg : (void*)k_ws, blocks, threads, args, 0, 0));
  } else if (v == "flat") {
    unsigned* ctr = c.buf + arg;
    CK(cudaMemset(ctr, 0, 4));
    args[0] = &ctr;
    args[1] = &iters;
    args[2] = &d;
    args[3] = &chk;
    args[4] = &bad;
    CK(cudaLaunchCooperativeKernel((void*)k_flat, blocks, threads, args, 0, 0));
  } else {
    unsigned stride = (unsigned)arg;
    unsigned* flags = c.buf + (1u << 20); // 4 MiB in
    unsigned base = c.gen;
    c.gen += iters;
    args[0] = &flags;
    args[1] = &stride;
    args[2] = &base;
    args[3] = &iters;
    args[4] = &d;
    args[5] = &chk;
    args[6] = &bad;
    void* fn = v == "a2a0"   ? (void*)k_a2a<0>
               : v == "a2a1" ? (void*)k_a2a<1>
               : v == "a2a2" ? (void*)k_a2a<2>
               : v == "a2a3" ? (void*)k_a2a<3>
                             : (void*)k_a2a<4>;
    CK(cudaLaunchCooperativeKernel(fn, blocks, threads, args, 0, 0));
  }
}

static double measure(Ctx& c, const std::string& v, long arg, int blocks, int threads, int reps) {
  const int N = 1100, M = 100;
  launch_variant(c, v, arg, blocks, threads, M, false);
  CK(cudaDeviceSynchronize());
  std::vector<double> r;
  for (int k = 0; k < reps; ++k) {
    double tn = time_launch([&] { launch_variant(c, v, arg, blocks, threads, N, false); });
    double tm = time_launch([&] { launch_variant(c, v, arg, blocks, threads, M, false); });
    r.push_back((tn - tm) * 1000.0 / (N - M));
  }
  return median(r);
}

static unsigned check(Ctx& c, const std::string& v, long arg, int blocks, int threads) {
  CK(cudaMemset(c.bad, 0, 4));
  CK(cudaMemset(c.data, 0, 4 * 32 * 4096));
  // data holds generation numbers; a2a bases offset them, so reset gen to 0 for the check
  unsigned saved = c.gen;
  c.gen = 0;
  CK(cudaMemset(c.buf + (1u << 20), 0, 4u << 20));
  launch_variant(c, v, arg, blocks, threads, 2000, true);
  CK(cudaDeviceSynchronize());
  c.gen = std::max(saved, 2000u);
  // flags now hold up to 2000: keep gen monotonic from here
  unsigned h;
  CK(cudaMemcpy(&h, c.bad, 4, cudaMemcpyDeviceToHost));
  return h;
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 7;
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  Ctx c;
  c.sms = p.multiProcessorCount;
  CK(cudaMalloc(&c.buf, 64u << 20));
  CK(cudaMemset(c.buf, 0, 64u << 20));
  CK(cudaMalloc(&c.data, 4 * 32 * 4096));
  CK(cudaMalloc(&c.bad, 4));
  std::printf("GPU %s, %d SMs\n", p.name, c.sms);

  struct V {
    std::string name;
    long arg;
    void* fn;
  };
  std::vector<V> vs = {{"cg", 0, (void*)k_cg},        {"ws", 0, (void*)k_ws},       {"flat", 0, (void*)k_flat},
                       {"a2a0", 1, (void*)k_a2a<0>},  {"a2a1", 1, (void*)k_a2a<1>}, {"a2a2", 1, (void*)k_a2a<2>},
                       {"a2a0", 32, (void*)k_a2a<0>}, {"a2a3", 1, (void*)k_a2a<3>}, {"a2a4", 1, (void*)k_a2a<4>}};

  // correctness first
  for (auto& v : vs) {
    for (int bps : {1, 2, 8}) {
      int threads = bps == 8 ? 128 : 256;
      int occ;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v.fn, threads, 0));
      if (occ < bps || (v.name == "a2a2" && bps * c.sms > 384))
        continue;
      unsigned bad = check(c, v.name, v.arg, bps * c.sms, threads);
      std::printf("check %s:%ld bps %d threads %d violations %u\n", v.name.c_str(), v.arg, bps, threads, bad);
    }
  }

  std::printf("\nus per barrier (median of %d, (t1100 - t100) / 1000)\n", reps);
  std::printf("%7s %4s %6s", "threads", "bps", "blocks");
  for (auto& v : vs)
    std::printf(" %10s", (v.name + ":" + std::to_string(v.arg)).c_str());
  std::printf("\n");
  for (int threads : {128, 256, 1024}) {
    for (int bps : {1, 2, 4, 8}) {
      if (threads * bps > 2048)
        continue;
      std::printf("%7d %4d %6d", threads, bps, bps * c.sms);
      for (auto& v : vs) {
        int occ;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, v.fn, threads, 0));
        if (occ < bps || (v.name == "a2a2" && bps * c.sms > 384)) {
          std::printf(" %10s", "-");
          continue;
        }
        std::printf(" %10.3f", measure(c, v.name, v.arg, bps * c.sms, threads, reps));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }

  // where the flat counter lives: 64 adjacent lines, 64 lines 64 KiB apart
  for (int bps : {1, 2}) {
    std::vector<double> adj, far;
    for (int l = 0; l < 64; ++l)
      adj.push_back(measure(c, "flat", l * 32, bps * c.sms, 256, 3));
    for (int l = 0; l < 64; ++l)
      far.push_back(measure(c, "flat", (long)l * 16384 + (8u << 20) / 4, bps * c.sms, 256, 3));
    double cgt = measure(c, "cg", 0, bps * c.sms, 256, reps);
    auto mm = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return std::make_pair(v.front(), v.back());
    };
    auto a = mm(adj), f = mm(far);
    std::printf("flat lines bps %d: cg %.3f | adjacent min %.3f med %.3f max %.3f | 64KiB-apart min %.3f med %.3f "
                "max %.3f\n",
                bps, cgt, a.first, median(adj), a.second, f.first, median(far), f.second);
  }
  // and the all-to-all flags at other places
  for (int bps : {1, 2}) {
    std::printf("a2a0 stride 1 repeated bps %d:", bps);
    for (int k = 0; k < 5; ++k)
      std::printf(" %.3f", measure(c, "a2a0", 1, bps * c.sms, 256, reps));
    std::printf(" | cg");
    for (int k = 0; k < 5; ++k)
      std::printf(" %.3f", measure(c, "cg", 0, bps * c.sms, 256, reps));
    std::printf("\n");
  }
  return 0;
}
