// The executor interface the scheduler drives: a lowered program bound to one backend's buffers and state.
// Implementations: CpuExecutor (std::thread workers) and GpuExecutor (the cooperative megakernel).
#pragma once

#include "runtime/binding.hpp"
#include "runtime/config.hpp"
#include "runtime/host_tensor.hpp"
#include "runtime/lowered_program.hpp"
#include "runtime/run_result.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gridflow {

struct ExecOptions {
  std::uint64_t timeout_ns = 10'000'000'000ull; // watchdog: bound on every wait
  program::PollPacing pacing{};                 // GPU: how body polls and barrier waits poll (spins, then sleeps)
  program::PollPacing wait_pacing = program::kSpinPacing; // GPU: how the leader's dependency waits poll
  bool trace = false;                                     // record per-tile and per-barrier timestamps
  SentinelFill sentinel_fill = SentinelFill::submit;
  std::uint32_t fault_skip_signal_tile = program::kNoTile; // test-only: this tile never signals
  // Dynamic schedule: a block takes its next ticket while its current tile runs. Off by default: it gains nothing
  // measurable and slows levels with fewer tiles than 2 x blocks (a block holds a tile an idle block could run;
  // docs/results/HISTORY.md).
  bool claim_ahead = false;
  // GPU: run a program whose every task is a lean row tile on the lean megakernel (same bits, less per tile);
  // false: always the general megakernel (measurements, tests of the two against each other).
  bool lean_kernel = true;
  // GPU, lean megakernel: run the tiles the host marked plain (kPlainTile: no wait, no poll) as their bodies, closing
  // barriers and signals alone; false: every tile through the protocol's steps (same bits; measurements, tests of the
  // two against each other).
  bool plain_tiles = true;
};

// Per buffer: whether a run of `program` writes it (a task's output, or the aux view of an op that writes its aux):
// what a staged binding copies back after a run.
std::vector<bool> written_buffers(const LoweredProgram& program);

// Whether a run with `options` fills the sentinels in the megakernel's prologue (sentinel mode, SentinelFill::kernel):
// one more grid barrier per block.
bool kernel_fills_sentinels(const LoweredProgram& program, const ExecOptions& options);

// The parameters of one run of `program` with `options`, as both executors pass them: run number `epoch` on the
// state arena, `barrier_base` barrier generations completed on it before. Trace buffers and the GPU's ring size are
// the executor's to add.
program::RunParams run_params(const LoweredProgram& program, const ExecOptions& options, std::uint32_t epoch,
                              std::uint64_t barrier_base);

class Executor {
public:
  virtual ~Executor() = default;
  virtual const LoweredProgram& program() const = 0;
  virtual std::string describe() const = 0; // "cpu, 8 workers" / "gpu NVIDIA H200, 132 blocks x 256 threads"

  // Buffer contents (index = program buffer slot): of the caller's memory for a bound buffer, else the executor's.
  virtual void upload(std::uint32_t buffer, const HostTensor& data) = 0;
  virtual void download(std::uint32_t buffer, HostTensor& data) = 0;
  virtual void fill_bits(std::uint32_t buffer, std::uint32_t bits) = 0;
  // Buffer b's contents into `data`. Where the executor's buffers are host memory (the CPU executor) they are moved,
  // not copied, and every buffer must be uploaded again before the next run (take_moves()); else a download.
  virtual void take(std::uint32_t buffer, HostTensor& data) { download(buffer, data); }
  // The address of buffer b in the executor's memory (GPU: device memory; CPU: host memory), for code that runs on
  // the same buffers (the baselines). Valid while the executor lives.
  virtual void* buffer_address(std::uint32_t buffer) = 0;
  virtual bool take_moves() const { return false; }

  // The memory buffers bind to: kHostMemory (CPU) or the GPU's ordinal.
  virtual int memory_device() const = 0;
  // Runs buffer b on caller memory from now on (`memory.data == nullptr`: on the executor's own again, holding what it
  // held before the binding). Throws RuntimeError naming the buffer when the memory is not the executor's kind (GPU:
  // device or managed memory of its device) or a run is in flight.
  virtual void bind(std::uint32_t buffer, const BoundMemory& memory) = 0;

  // Runs the program once. Throws DeviceError when the run recorded an error (watchdog, corrupt program);
  // the executor resets its synchronization state and can run again. Throws RuntimeError when a buffer was taken
  // and not uploaded again.
  virtual RunResult run(const ExecOptions& options = {}) = 0;

  // Starts one run on `stream`, after the work enqueued there before it and before the work enqueued after it, with
  // no device-wide synchronization (GPU: returns once enqueued; CPU: runs on a thread of its own, the stream
  // ignored). One run at a time: throws RuntimeError while one is in flight.
  virtual void enqueue(const ExecOptions& options, StreamHandle stream) = 0;
  // Waits for the run enqueue() started and returns it, or throws what run() would (device errors and watchdog
  // reports of that run included); either way the run is over. RuntimeError when none is in flight.
  virtual RunResult finish() = 0;
  virtual bool in_flight() const = 0;
};

} // namespace gridflow
