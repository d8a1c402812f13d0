// The megakernel and the per-task baseline kernel compiled for 256 threads per block (one file per block size, so they build in parallel).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/megakernel.cuh"

namespace gridflow::gpu {

template <> const void* megakernel_entry<256>() { return reinterpret_cast<const void*>(&megakernel<256>); }
template <> const void* task_kernel_entry<256>() { return reinterpret_cast<const void*>(&task_kernel<256>); }

} // namespace gridflow::gpu
