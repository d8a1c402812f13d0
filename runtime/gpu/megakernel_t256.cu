// The megakernel compiled for 256 threads per block (one file per kernel and block size, so they build in parallel).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/megakernel.cuh"

namespace gridflow::gpu {

template <> const void* megakernel_entry<256>() {
  return reinterpret_cast<const void*>(&megakernel<256>);
}

} // namespace gridflow::gpu
