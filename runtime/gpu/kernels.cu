// Kernel entry points of the GPU backend (nvcc only: no host library headers beyond CUDA's own here).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/resident_entry.hpp"
#include "runtime/lowered_program.hpp"

namespace gridflow::gpu {

namespace {
// The entry of `threads` among the compiled block sizes (128, 256, 512, 1024), nullptr for any other.
template <const void* (*E128)(), const void* (*E256)(), const void* (*E512)(), const void* (*E1024)()>
const void* pick(std::uint32_t threads) {
  switch (threads) {
  case 128:
    return E128();
  case 256:
    return E256();
  case 512:
    return E512();
  case 1024:
    return E1024();
  default:
    return nullptr;
  }
}
} // namespace

__global__ void fill_sentinels_kernel(program::ProgramView view) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (std::uint32_t b = 0; b < view.num_buffers; ++b) {
    const long long n = view.sentinel_ranges[2 * b + 1];
    auto* words = static_cast<std::uint32_t*>(view.buffers[b]) + view.sentinel_ranges[2 * b];
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
      words[i] = program::kSentinelBits;
  }
}

const void* fill_sentinels_entry() {
  return reinterpret_cast<const void*>(&fill_sentinels_kernel);
}

const void* task_kernel_entry_for(std::uint32_t threads) {
  return pick<task_kernel_entry<128>, task_kernel_entry<256>, task_kernel_entry<512>, task_kernel_entry<1024>>(threads);
}

const void* lean_megakernel_entry_for(std::uint32_t threads, bool sentinel, bool cross_tiles) {
  switch (threads) {
  case 128:
    return lean_megakernel_entry<128>(sentinel, cross_tiles);
  case 256:
    return lean_megakernel_entry<256>(sentinel, cross_tiles);
  case 512:
    return lean_megakernel_entry<512>(sentinel, cross_tiles);
  case 1024:
    return lean_megakernel_entry<1024>(sentinel, cross_tiles);
  default:
    return nullptr;
  }
}

const void* resident_kernel_entry_for(std::uint32_t threads) {
  return threads == 256 ? resident_kernel_entry<256>() : nullptr;
}

const void* megakernel_entry_for(std::uint32_t threads) {
  return pick<megakernel_entry<128>, megakernel_entry<256>, megakernel_entry<512>, megakernel_entry<1024>>(threads);
}

} // namespace gridflow::gpu
