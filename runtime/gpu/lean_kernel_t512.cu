// The lean megakernel compiled for 512 threads per block (its own file: it builds beside the others).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/lean_kernel.cuh"

namespace gridflow::gpu {

template <> const void* lean_megakernel_entry<512>(bool sentinel, bool cross_tiles) {
  if (sentinel)
    return cross_tiles ? nullptr : reinterpret_cast<const void*>(&lean_megakernel<512, true, false>);
  return cross_tiles ? reinterpret_cast<const void*>(&lean_megakernel<512, false, true>)
                     : reinterpret_cast<const void*>(&lean_megakernel<512, false, false>);
}

} // namespace gridflow::gpu
