// The megakernel and the per-task baseline kernel compiled for 1024 threads per block (one file per block size, so they build in parallel).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/megakernel.cuh"

namespace gridflow::gpu {

template <> const void* megakernel_entry<1024>() { return reinterpret_cast<const void*>(&megakernel<1024>); }
template <> const void* task_kernel_entry<1024>() { return reinterpret_cast<const void*>(&task_kernel<1024>); }

} // namespace gridflow::gpu
