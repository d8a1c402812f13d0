// The per-task baseline kernel compiled for 128 threads per block (its own file: it builds beside the megakernel).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/megakernel.cuh"

namespace gridflow::gpu {

template <> const void* task_kernel_entry<128>() {
  return reinterpret_cast<const void*>(&task_kernel<128>);
}

} // namespace gridflow::gpu
