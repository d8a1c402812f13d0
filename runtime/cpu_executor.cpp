#include "runtime/cpu_executor.hpp"

#include "runtime/cpu_block.hpp"
#include "runtime/cpu_ops.hpp"
#include "runtime/errors.hpp"
#include "runtime/interpreter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <thread>

namespace gridflow {

// The state arena, 128-byte aligned like the device's.
struct CpuExecutor::Arena {
  explicit Arena(std::size_t n)
      : size(n), bytes(static_cast<unsigned char*>(::operator new (n, std::align_val_t{128}))) {
    std::memset(bytes, 0, n);
  }
  ~Arena() { ::operator delete (bytes, std::align_val_t{128}); }
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  std::size_t size;
  unsigned char* bytes;
};

namespace {

// Copies `rows` rows of `row_bytes` from `src` (rows `src_pitch` bytes apart) to `dst` (rows `dst_pitch` apart).
void copy_rows(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
               std::int64_t rows) {
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(static_cast<unsigned char*>(dst) + static_cast<std::size_t>(r) * dst_pitch,
                static_cast<const unsigned char*>(src) + static_cast<std::size_t>(r) * src_pitch, row_bytes);
}

// The caller's rows of a bound buffer to and from a contiguous host array of the buffer's elements.
void from_bound(const BoundMemory& m, void* dst, std::size_t bytes) {
  if (!m.staged)
    std::memcpy(dst, m.data, bytes);
  else
    copy_rows(dst, m.row_bytes, m.data, m.pitch_bytes, m.row_bytes, m.rows);
}
void to_bound(const BoundMemory& m, const void* src, std::size_t bytes) {
  if (!m.staged)
    std::memcpy(m.data, src, bytes);
  else
    copy_rows(m.data, m.pitch_bytes, src, m.row_bytes, m.row_bytes, m.rows);
}

} // namespace

CpuExecutor::CpuExecutor(LoweredProgram program)
    : program_(std::move(program)), block_descs_(block_descs(program_)), written_(written_buffers(program_)),
      bound_(program_.buffers.size()) {
  for (const BufferInfo& b : program_.buffers)
    buffers_.emplace_back(b.dtype, b.elements);
  reset_state();
}
CpuExecutor::~CpuExecutor() {
  if (pending_.valid())
    pending_.wait(); // a run in flight reads this executor's state
}

void CpuExecutor::refuse_in_flight(const char* what) const {
  if (pending_.valid())
    throw RuntimeError(fmt::format("cpu executor: {} while a run is in flight (finish it first)", what));
}

std::string CpuExecutor::describe() const {
  return fmt::format("cpu, {} worker thread{}", program_.grid_blocks, program_.grid_blocks == 1 ? "" : "s");
}

void CpuExecutor::upload(std::uint32_t buffer, const HostTensor& data) {
  refuse_in_flight("upload");
  const BufferInfo& info = program_.buffers.at(buffer);
  if (data.dtype() != info.dtype || data.size() != info.elements)
    throw RuntimeError(fmt::format("upload: buffer '{}' has the wrong dtype or size", info.name));
  if (bound_[buffer].data != nullptr)
    to_bound(bound_[buffer], data.data(), data.bytes());
  else
    buffers_[buffer] = data;
}

void CpuExecutor::download(std::uint32_t buffer, HostTensor& data) {
  refuse_in_flight("download");
  const BufferInfo& info = program_.buffers.at(buffer);
  if (bound_[buffer].data == nullptr) {
    data = buffers_[buffer];
    return;
  }
  data = HostTensor(info.dtype, info.elements);
  from_bound(bound_[buffer], data.data(), data.bytes());
}

void CpuExecutor::take(std::uint32_t buffer, HostTensor& data) {
  if (bound_.at(buffer).data != nullptr)
    return download(buffer, data); // the caller's memory stays where it is
  refuse_in_flight("take");
  data = std::move(buffers_.at(buffer));
  buffers_[buffer] = HostTensor(program_.buffers[buffer].dtype, 0);
}

void* CpuExecutor::buffer_address(std::uint32_t buffer) {
  const BoundMemory& m = bound_.at(buffer);
  return m.data != nullptr && !m.staged ? m.data : buffers_[buffer].data();
}

void CpuExecutor::fill_bits(std::uint32_t buffer, std::uint32_t bits) {
  refuse_in_flight("fill");
  if (bound_.at(buffer).data == nullptr)
    return buffers_[buffer].fill_bits(bits);
  HostTensor t(program_.buffers[buffer].dtype, program_.buffers[buffer].elements);
  t.fill_bits(bits);
  to_bound(bound_[buffer], t.data(), t.bytes());
}

void CpuExecutor::bind(std::uint32_t buffer, const BoundMemory& memory) {
  refuse_in_flight("bind");
  const BufferInfo& info = program_.buffers.at(buffer);
  bound_[buffer] = memory;
  // Own memory only where the run works on it: unbound or staged buffers.
  if (memory.data != nullptr && !memory.staged)
    buffers_[buffer] = HostTensor(info.dtype, 0);
  else if (buffers_[buffer].size() != info.elements)
    buffers_[buffer] = HostTensor(info.dtype, info.elements);
}

void CpuExecutor::enqueue(const ExecOptions& options, StreamHandle) {
  refuse_in_flight("enqueue");
  pending_ = std::async(std::launch::async, [this, options] { return run_now(options); });
}

RunResult CpuExecutor::finish() {
  if (!pending_.valid())
    throw RuntimeError("cpu executor: finish() with no run in flight");
  return pending_.get(); // the future is invalid afterwards, whether it returns or throws
}

void CpuExecutor::reset_state() {
  arena_ = std::make_unique<Arena>(program_.layout.total);
  epoch_ = 0;
  barrier_generations_ = 0;
}

RunResult CpuExecutor::run(const ExecOptions& options) {
  refuse_in_flight("run");
  return run_now(options);
}

std::vector<void*> CpuExecutor::buffer_table() {
  const LoweredProgram& p = program_;
  std::vector<void*> table(buffers_.size());
  for (std::size_t b = 0; b < buffers_.size(); ++b) {
    const BoundMemory& m = bound_[b];
    if (m.data != nullptr && !m.staged) {
      table[b] = m.data;
      continue;
    }
    if (buffers_[b].size() != p.buffers[b].elements)
      throw RuntimeError(fmt::format("cpu executor: buffer '{}' was taken and not uploaded again", p.buffers[b].name));
    if (m.data != nullptr)
      from_bound(m, buffers_[b].data(), buffers_[b].bytes());
    table[b] = buffers_[b].data();
  }
  return table;
}

void CpuExecutor::run_workers(const program::ProgramView& v, const program::RunParams& r) {
  // A worker that throws (out of memory, say) aborts the run: the others leave at their next check, and the first
  // exception is raised here once every worker has joined. Nothing escapes a worker thread.
  auto* control = reinterpret_cast<program::ControlBlock*>(arena_->bytes);
  const cpu::ForwardPlan forward = cpu::forward_plan(program_);
  std::mutex failure_mutex;
  std::exception_ptr failure;
  {
    std::vector<std::jthread> workers;
    workers.reserve(program_.grid_blocks);
    for (std::uint32_t w = 0; w < program_.grid_blocks; ++w)
      workers.emplace_back([&, w] {
        try {
          cpu::CpuBlock blk(v, r, w, forward);
          program::interpret(blk);
        } catch (...) {
          {
            const std::lock_guard lock(failure_mutex);
            if (!failure)
              failure = std::current_exception();
          }
          protocol::abort_run(control);
        }
      });
  }
  for (std::size_t b = 0; b < buffers_.size(); ++b)
    if (bound_[b].staged && bound_[b].data != nullptr && written_[b])
      to_bound(bound_[b], buffers_[b].data(), buffers_[b].bytes());
  if (failure) {
    reset_state();
    try {
      std::rethrow_exception(failure);
    } catch (const std::bad_alloc&) {
      throw RuntimeError("cpu executor: out of host memory while running the graph");
    }
  }
}

RunResult CpuExecutor::run_now(const ExecOptions& options) {
  const LoweredProgram& p = program_;
  const std::vector<void*> table = buffer_table();
  const std::vector<std::int64_t> sentinels = sentinel_ranges(p);
  if (epoch_ == 0xfffffff0u)
    reset_state(); // epochs are 32-bit in flags and look-back words

  const program::ProgramView v = make_view(p, {p.tasks.data(), p.tiles.data(), p.deps.data(), p.level_begin.data(),
                                               p.block_begin.empty() ? nullptr : p.block_begin.data(),
                                               p.block_tiles.empty() ? nullptr : p.block_tiles.data(),
                                               p.block_tiles.empty() ? nullptr : block_descs_.data(), table.data(),
                                               sentinels.data(), arena_->bytes});

  const bool kernel_fill = kernel_fills_sentinels(p, options);
  program::RunParams r = run_params(p, options, ++epoch_, barrier_generations_);
  RunResult result;
  result.blocks = p.grid_blocks;
  result.barriers_per_block = r.barriers_in_run;
  if (options.trace) {
    result.tiles.assign(p.tiles.size(), program::TileTrace{});
    for (auto& t : result.tiles)
      t.tile = program::kNoTile;
    result.barriers.assign(std::size_t{p.grid_blocks} * result.barriers_per_block, program::BarrierTrace{});
  }
  r.tile_trace = options.trace ? result.tiles.data() : nullptr;
  r.barrier_trace = options.trace ? result.barriers.data() : nullptr;

  const auto start = std::chrono::steady_clock::now();
  if (p.mode == SyncMode::sentinel && !kernel_fill)
    cpu::fill_sentinels(v, 0, 1);
  run_workers(v, r);
  result.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  barrier_generations_ += result.barriers_per_block;

  const program::ErrorRecord error = reinterpret_cast<program::ControlBlock*>(arena_->bytes)->error;
  if (error.code != 0) {
    reset_state();
    throw DeviceError(error, p);
  }
  return result;
}

} // namespace gridflow
