// The megakernel compiled for 512 threads per block (one file per kernel and block size, so they build in parallel).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/megakernel.cuh"

namespace gridflow::gpu {

template <> const void* megakernel_entry<512>() {
  return reinterpret_cast<const void*>(&megakernel<512>);
}

} // namespace gridflow::gpu
