// The lean megakernel compiled for 128 threads per block (its own file: it builds beside the others).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/lean_kernel.cuh"

namespace gridflow::gpu {

template <> const void* lean_megakernel_entry<128>(bool sentinel) {
  return sentinel ? reinterpret_cast<const void*>(&lean_megakernel<128, true>)
                  : reinterpret_cast<const void*>(&lean_megakernel<128, false>);
}

} // namespace gridflow::gpu
