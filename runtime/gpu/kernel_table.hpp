// Host-side handles of the compiled megakernel variants.
#pragma once

#include <cstdint>

namespace gridflow::gpu {

// The megakernel's entry point for a block size (defined in megakernel_t<THREADS>.cu).
template <int THREADS> const void* megakernel_entry();

// The entry point for a runtime block size; nullptr for a size gridflow was not compiled for.
const void* megakernel_entry_for(std::uint32_t threads);

// fill_sentinels_kernel(ProgramView): sentinel mode's submit-time pre-fill.
const void* fill_sentinels_entry();

// task_kernel<THREADS>(ProgramView, RunParams, task): one task, one block per tile (baselines).
const void* task_kernel_entry_for(std::uint32_t threads);

} // namespace gridflow::gpu
