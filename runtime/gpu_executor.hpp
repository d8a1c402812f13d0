// The GPU executor's host API (plain C++; the implementation is CUDA in runtime/gpu/).
#pragma once

#include "runtime/executor.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace gridflow {

// The megakernel's launch shape on the current device.
struct GpuShape {
  std::uint32_t threads_per_block = 256;
  std::uint32_t blocks_per_sm = 1;
  std::uint32_t grid_blocks = 0; // blocks_per_sm * sm_count: every block co-resident
  std::uint32_t sm_count = 0;
  std::uint32_t max_blocks_per_sm = 0; // occupancy limit of the general megakernel at this block size
  // Occupancy limit of the lean row kernel (runtime/gpu/lean_kernel.cuh: flags, barrier and grid-sync modes, no cross
  // tiles), which programs of lean row tiles may run on at more blocks per SM; 0: unknown, as max_blocks_per_sm.
  std::uint32_t max_lean_blocks_per_sm = 0;
};

// The most blocks per SM a program may be lowered for on `device`: the general megakernel's limit, or the lean row
// kernel's where that is higher (such a shape runs lean row programs only: lower_for_gpu checks).
std::uint32_t most_blocks_per_sm(const GpuShape& device);

// Blocks per SM for a wide program of lean row tiles (more tiles in a level than the default grid has blocks): the
// lean row kernel's occupancy up to the blocks per SM it is built for (lean_row_min_blocks_per_sm, runtime/config.hpp),
// and never fewer than the default's.
std::uint32_t lean_row_blocks_per_sm(const GpuShape& device);

// Threads per block the megakernel is compiled for.
inline constexpr std::uint32_t kGpuThreadChoices[] = {128, 256, 512, 1024};

// Checks the requested shape against the occupancy of the megakernels (most_blocks_per_sm): blocks_per_sm == 0 picks
// min(2, the general megakernel's limit). Throws RuntimeError, naming the numbers, when the grid could not be
// co-resident (the cooperative launch would be refused or hang) or the device cannot launch cooperatively.
GpuShape plan_gpu_shape(std::uint32_t threads_per_block, std::uint32_t blocks_per_sm);

// The same choice and checks for a GPU described by `device` (its sm_count and the megakernel's occupancy limit,
// max_blocks_per_sm, at device.threads_per_block, as plan_gpu_shape found them there), without asking a GPU: how a
// program is lowered for a GPU this machine does not have (gridflow predict from a calibration file).
GpuShape fit_gpu_shape(const GpuShape& device, std::uint32_t blocks_per_sm, const std::string& device_name);

// Binds `program` (lowered for shape.grid_blocks blocks) to device memory.
std::unique_ptr<Executor> make_gpu_executor(LoweredProgram program, const GpuShape& shape);

} // namespace gridflow
