// Where a resident runtime's rings and programs live and who serves them (runtime/resident.hpp's protocol): the CPU
// backend's worker threads or the GPU's resident megakernel. ResidentSession (scheduler/resident_session.hpp) fills
// the rings and reads the completions; a backend owns the memory and the servers.
#pragma once

#include "runtime/executor.hpp"
#include "runtime/gpu_executor.hpp"
#include "runtime/host_tensor.hpp"
#include "runtime/lowered_program.hpp"
#include "runtime/resident.hpp"

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>

namespace gridflow {

class ResidentBackend {
public:
  virtual ~ResidentBackend() = default;
  virtual std::string describe() const = 0;
  virtual int memory_device() const = 0; // kHostMemory (CPU) or the GPU's ordinal
  virtual std::uint32_t grid() const = 0;

  // The rings, host-addressable, `depth()` slots each, valid while the backend lives.
  virtual resident::Submission* submissions() = 0;
  virtual resident::Completion* completions() = 0;
  virtual std::uint32_t depth() const = 0;

  // Zeroes the rings and the control words and starts the servers (GPU: one cooperative launch of the resident
  // megakernel). Tickets count from 0 again.
  virtual void launch() = 0;
  // Waits up to `timeout` for the servers to end (after they completed a kStop submission); false if they have not.
  virtual bool join(std::chrono::nanoseconds timeout) = 0;
  // Throws RuntimeError when the servers can no longer answer (GPU: a sticky CUDA error, or the kernel ended
  // without being stopped).
  virtual void check_alive() = 0;

  // Program `index` (the next free one, below max_programs) from `program`: its arrays, its own buffers holding
  // `initial` (one tensor per buffer), a zeroed state arena and its record, ready before the call returns, so a
  // submission of it may follow. May be called while the servers run.
  virtual void add(std::uint32_t index, const LoweredProgram& program, const ExecOptions& options,
                   const std::vector<HostTensor>& initial) = 0;
  // The address of buffer b of program p's own memory.
  virtual void* own_buffer(std::uint32_t p, std::uint32_t b) = 0;
  // Host copies of program p's own buffer b. No submission of p may be running (the session drains first).
  virtual void upload(std::uint32_t p, std::uint32_t b, const HostTensor& data) = 0;
  virtual void download(std::uint32_t p, std::uint32_t b, HostTensor& data) = 0;

  // CPU: what a worker threw while running submission `ticket` (taken once), else null.
  virtual std::exception_ptr take_failure(std::uint64_t ticket) {
    (void)ticket;
    return nullptr;
  }
};

namespace resident {

// The record of `program` whose arrays (its own buffer table among them) and state are at `arrays`; `ring_bytes`: the
// GPU's bulk-copy ring for its tiles (0 on the CPU). Every run fills its sentinels in the prologue (the resident
// runtime launches nothing else) and records no trace.
// The blocks that run `program` (ProgramRecord::participants): in flags mode on static lists whose non-empty lists are
// the first ones (nonempty_lists_first), how many those are; else 0, every block.
std::uint64_t participants(const LoweredProgram& program);

ProgramRecord make_record(const LoweredProgram& program, const ExecOptions& options,
                          const program::ProgramArrays& arrays, std::uint32_t ring_bytes);

} // namespace resident

std::unique_ptr<ResidentBackend> make_cpu_resident(std::uint32_t workers, std::uint32_t depth,
                                                   std::uint32_t max_programs, const resident::IdlePacing& idle);
// The GPU's: `shape` as plan_gpu_shape made it; RuntimeError when the resident megakernel cannot be co-resident at it.
std::unique_ptr<ResidentBackend> make_gpu_resident(const GpuShape& shape, std::uint32_t depth,
                                                   std::uint32_t max_programs, const resident::IdlePacing& idle);

} // namespace gridflow
