// The CPU executor: runs a LoweredProgram with std::thread workers standing in for blocks, through the same
// interpreter loop and protocol code as the GPU megakernel. CI's executor; one worker per program block.
#pragma once

#include "runtime/executor.hpp"

#include <cstdint>
#include <future>
#include <memory>
#include <vector>

namespace gridflow {

class CpuExecutor final : public Executor {
public:
  explicit CpuExecutor(LoweredProgram program);
  ~CpuExecutor() override;
  CpuExecutor(const CpuExecutor&) = delete;
  CpuExecutor& operator=(const CpuExecutor&) = delete;

  const LoweredProgram& program() const override { return program_; }
  std::string describe() const override;
  void upload(std::uint32_t buffer, const HostTensor& data) override;
  void download(std::uint32_t buffer, HostTensor& data) override;
  void take(std::uint32_t buffer, HostTensor& data) override; // moves the buffer out (no copy)
  bool take_moves() const override { return true; }
  void* buffer_address(std::uint32_t buffer) override;
  void fill_bits(std::uint32_t buffer, std::uint32_t bits) override;
  int memory_device() const override { return kHostMemory; }
  void bind(std::uint32_t buffer, const BoundMemory& memory) override;
  RunResult run(const ExecOptions& options = {}) override;
  void enqueue(const ExecOptions& options, StreamHandle stream) override;
  RunResult finish() override;
  bool in_flight() const override { return pending_.valid(); }

  // Direct access to the executor's own buffers (tests).
  HostTensor& buffer(std::uint32_t index) { return buffers_.at(index); }

private:
  void reset_state();
  void refuse_in_flight(const char* what) const;
  RunResult run_now(const ExecOptions& options);
  // Each buffer's address for the run: bound memory directly, else the executor's own copy (staged bound memory
  // copied in first).
  std::vector<void*> buffer_table();
  // One worker thread per block through the interpreter; staged bound buffers the run wrote copied back; the first
  // exception a worker raised, raised here after every worker has joined (the state reset).
  void run_workers(const program::ProgramView& v, const program::RunParams& r);

  LoweredProgram program_;
  std::vector<program::TileDesc> block_descs_; // the static lists' descriptors (block_descs), built once
  std::vector<bool> written_;                  // written_buffers(program_)
  std::vector<HostTensor> buffers_;            // own memory (empty for a buffer bound directly)
  std::vector<BoundMemory> bound_;             // per buffer: its caller memory (data == nullptr: none)
  std::future<RunResult> pending_;             // the run enqueue() started
  struct Arena;
  std::unique_ptr<Arena> arena_;
  std::uint32_t epoch_ = 0;
  std::uint64_t barrier_generations_ = 0;
};

} // namespace gridflow
