// The size of the bulk-copy ring (kernels/device/bulk_stream.cuh) a program's launches get: RunParams::ring_bytes,
// passed as the launch's dynamic shared memory per block.
#pragma once

#include "runtime/lowered_program.hpp"

#include <cstdint>

namespace gridflow::gpu {

// Enough whole stages for the longest range one tile of the program streams through the ring (at least two), at
// most the block size's maximum (kernels::stream_ring_bytes); 0 when no tile streams. A ring nobody uses costs L1:
// the SM splits one store between shared memory and the L1 that holds the megakernel's spilled state (a 64 KB ring
// in every block makes chains of one-row tiles 20-25% slower and the register-held softmax rows 4-8% slower).
std::uint32_t copy_ring_bytes(const LoweredProgram& program, std::uint32_t threads);

} // namespace gridflow::gpu
