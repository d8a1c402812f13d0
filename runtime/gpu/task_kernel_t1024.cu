// The per-task baseline kernel compiled for 1024 threads per block (its own file: it builds beside the megakernel).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/megakernel.cuh"

namespace gridflow::gpu {

template <> const void* task_kernel_entry<1024>() {
  return reinterpret_cast<const void*>(&task_kernel<1024>);
}

} // namespace gridflow::gpu
