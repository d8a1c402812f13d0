// The lean megakernel compiled for 512 threads per block (its own file: it builds beside the others).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/lean_kernel.cuh"

namespace gridflow::gpu {

template <> const void* lean_megakernel_entry<512>(bool sentinel) {
  return sentinel ? reinterpret_cast<const void*>(&lean_megakernel<512, true>)
                  : reinterpret_cast<const void*>(&lean_megakernel<512, false>);
}

} // namespace gridflow::gpu
