// The lean megakernel compiled for 128 threads per block (its own file: it builds beside the others).
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/lean_kernel.cuh"

namespace gridflow::gpu {

template <> const void* lean_megakernel_entry<128>(bool sentinel, bool cross_tiles) {
  if (sentinel)
    return cross_tiles ? nullptr : reinterpret_cast<const void*>(&lean_megakernel<128, true, false>);
  return cross_tiles ? reinterpret_cast<const void*>(&lean_megakernel<128, false, true>)
                     : reinterpret_cast<const void*>(&lean_megakernel<128, false, false>);
}

} // namespace gridflow::gpu
