// Host-side handles of the resident megakernel variants (runtime/gpu/resident_kernel.cuh).
#pragma once

#include <cstdint>

namespace gridflow::gpu {

// Defined in resident_kernel_t<THREADS>.cu.
template <int THREADS> const void* resident_kernel_entry();

// The resident megakernel for a runtime block size, compiled for 256 threads only (each variant costs more compile time
// than a megakernel); nullptr for any other.
const void* resident_kernel_entry_for(std::uint32_t threads);

} // namespace gridflow::gpu
