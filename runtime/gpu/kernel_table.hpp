// Host-side handles of the compiled megakernel variants.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gridflow::gpu {

// Entry points for a block size (defined in megakernel_t<THREADS>.cu and task_kernel_t<THREADS>.cu, one file per
// kernel and size so they compile in parallel).
template <int THREADS> const void* megakernel_entry();
template <int THREADS> const void* task_kernel_entry();
template <int THREADS> const void* lean_megakernel_entry(bool sentinel, bool cross_tiles); // lean_kernel_t<THREADS>.cu

// The entry point for a runtime block size; nullptr for a size gridflow was not compiled for.
const void* megakernel_entry_for(std::uint32_t threads);

// The lean megakernel (runtime/gpu/lean_kernel.cuh) for a runtime block size, for a program in sentinel mode or not,
// with lean partial or look-back tiles or without; nullptr for a size not compiled, and for sentinel mode with such
// tiles (not built: runtime/lean_program.hpp, lean_program).
const void* lean_megakernel_entry_for(std::uint32_t threads, bool sentinel, bool cross_tiles);

// fill_sentinels_kernel(ProgramView): sentinel mode's submit-time pre-fill.
const void* fill_sentinels_entry();

// task_kernel<THREADS>(ProgramView, RunParams, task): one task, one block per tile (baselines).
const void* task_kernel_entry_for(std::uint32_t threads);

// The most dynamic shared memory a launch of a megakernel or task kernel of `threads` per block passes: the largest
// bulk-copy ring (kernels::stream_ring_bytes). allow_dynamic_shared raises the kernel's opt-in limit to it (above the
// 48 KB default; idempotent) and returns it: call it before an occupancy query or a launch of `entry`.
std::size_t allow_dynamic_shared(const void* entry, std::uint32_t threads);

} // namespace gridflow::gpu
