// The CPU executor: runs a LoweredProgram with std::thread workers standing in for blocks, through the same
// interpreter loop and protocol code as the GPU megakernel. CI's executor; one worker per program block.
#pragma once

#include "runtime/executor.hpp"

#include <cstdint>
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
  void* buffer_address(std::uint32_t buffer) override { return buffers_.at(buffer).data(); }
  void fill_bits(std::uint32_t buffer, std::uint32_t bits) override;
  RunResult run(const ExecOptions& options = {}) override;

  // Direct access to the executor's buffers (tests).
  HostTensor& buffer(std::uint32_t index) { return buffers_.at(index); }

private:
  void reset_state();

  LoweredProgram program_;
  std::vector<program::TileDesc> block_descs_; // the static lists' descriptors (block_descs), built once
  std::vector<HostTensor> buffers_;
  struct Arena;
  std::unique_ptr<Arena> arena_;
  std::uint32_t epoch_ = 0;
  std::uint64_t barrier_generations_ = 0;
};

} // namespace gridflow
