// The state arena as typed pointers (control block, claim tickets, task counters, tile flags, the barrier) and the
// error helper every executor and body uses; plain data over protocol.hpp, shared by the interpreter, the bodies of
// both executors and the executors themselves.
#pragma once

#include "kernels/host_device.hpp"
#include "runtime/lowered_program.hpp"
#include "runtime/program.hpp"
#include "runtime/protocol.hpp"

#include <cstdint>

namespace gridflow::program {

// Typed pointers into the state arena.
struct Arena {
  unsigned char* base;
  const StateLayout& layout;

  GRIDFLOW_HOST_DEVICE ControlBlock* control() const { return reinterpret_cast<ControlBlock*>(base); }
  GRIDFLOW_HOST_DEVICE std::uint64_t* claim_head(std::uint32_t slot) const {
    return reinterpret_cast<std::uint64_t*>(base + layout.claim + kLine * slot);
  }
  GRIDFLOW_HOST_DEVICE std::uint64_t* task_done(std::uint32_t task) const {
    return reinterpret_cast<std::uint64_t*>(base + layout.task_done + kLine * task);
  }
  GRIDFLOW_HOST_DEVICE std::uint32_t* tile_flag(std::uint32_t tile) const {
    return reinterpret_cast<std::uint32_t*>(base + layout.tile_flags + kLine * tile);
  }
  GRIDFLOW_HOST_DEVICE std::uint64_t* barrier_counter() const {
    return reinterpret_cast<std::uint64_t*>(base + layout.barrier);
  }
  GRIDFLOW_HOST_DEVICE unsigned char* at(std::uint64_t offset) const { return base + offset; }
};

// Records a bad descriptor (ErrorCode::bad_descriptor, field: a DescriptorField) as the run's error.
GRIDFLOW_HOST_DEVICE void raise_bad_descriptor(const ProgramView& v, std::uint32_t block, std::uint32_t tile,
                                               std::uint32_t field) {
  ErrorRecord e;
  e.code = static_cast<std::uint32_t>(ErrorCode::bad_descriptor);
  e.block = block;
  e.tile = tile;
  e.detail = field;
  protocol::raise_error(reinterpret_cast<ControlBlock*>(v.state), e);
}

} // namespace gridflow::program
