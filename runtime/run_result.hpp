// What one run of a program returns, from any executor.
#pragma once

#include "runtime/program.hpp"

#include <cstdint>
#include <vector>

namespace gridflow {

struct RunResult {
  double elapsed_ms = 0.0;                     // submit to completion (GPU: CUDA events around the launch)
  std::uint32_t blocks = 0;                    // blocks (workers) that ran
  std::uint32_t barriers_per_block = 0;        // grid barriers each block passed (trace sizing)
  bool lean_kernel = false;                    // GPU: the lean megakernel ran (runtime/gpu/lean_kernel.cuh)
  std::vector<program::TileTrace> tiles;       // per global tile, when traced
  std::vector<program::BarrierTrace> barriers; // [block * barriers_per_block + k], when traced
};

} // namespace gridflow
