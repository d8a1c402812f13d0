// The megakernel and the per-task baseline kernel compiled for 512 threads per block (one file per block size, so they build in parallel).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/megakernel.cuh"

namespace gridflow::gpu {

template <> const void* megakernel_entry<512>() { return reinterpret_cast<const void*>(&megakernel<512>); }
template <> const void* task_kernel_entry<512>() { return reinterpret_cast<const void*>(&task_kernel<512>); }

} // namespace gridflow::gpu
