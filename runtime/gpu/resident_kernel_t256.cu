// The resident megakernel compiled for 256 threads per block (one file per kernel and block size, so they build in
// parallel).
#include "runtime/gpu/resident_entry.hpp"
#include "runtime/gpu/resident_kernel.cuh"

namespace gridflow::gpu {

template <> const void* resident_kernel_entry<256>() {
  return reinterpret_cast<const void*>(&resident_kernel<256>);
}

} // namespace gridflow::gpu
