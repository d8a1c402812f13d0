// The GPU executor: owns the device copy of a lowered program, its buffers and its state arena, and launches
// the megakernel cooperatively. Plain C++ over the CUDA runtime API; the kernels live in kernels.cu.
#include "runtime/gpu_executor.hpp"
#include "kernels/tile_shapes.hpp"
#include "runtime/device.hpp"
#include "runtime/errors.hpp"
#include "runtime/gpu/copy_ring.hpp"
#include "runtime/gpu/device_memory.hpp"
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu_baselines.hpp"
#include "runtime/lean_program.hpp"
#include "runtime/tiles.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace gridflow {
namespace gpu {

namespace {

class GpuExecutor final : public Executor {
public:
  GpuExecutor(LoweredProgram program, const GpuShape& shape) : p_(std::move(program)), shape_(shape) {
    if (p_.grid_blocks != shape_.grid_blocks)
      throw RuntimeError(fmt::format("gpu executor: program lowered for {} blocks, launch shape has {}", p_.grid_blocks,
                                     shape_.grid_blocks));
    entry_ = megakernel_entry_for(shape_.threads_per_block);
    allow_dynamic_shared(entry_, shape_.threads_per_block);
    ring_bytes_ = copy_ring_bytes(p_, shape_.threads_per_block);
    device_ = probe_gpu();
    d_tasks_ = DeviceBuffer::of(p_.tasks);
    d_tiles_ = DeviceBuffer::of(p_.tiles);
    d_deps_ = DeviceBuffer::of(p_.deps);
    d_levels_ = DeviceBuffer::of(p_.level_begin);
    d_block_begin_ = DeviceBuffer::of(p_.block_begin);
    d_block_tiles_ = DeviceBuffer::of(p_.block_tiles);
    d_block_descs_ = DeviceBuffer::of(block_descs(p_));
    d_sentinels_ = DeviceBuffer::of(sentinel_ranges(p_));
    written_ = written_buffers(p_);
    bound_.resize(p_.buffers.size());
    for (std::uint32_t b = 0; b < p_.buffers.size(); ++b) {
      buffers_.push_back(own_memory(b));
      table_.push_back(buffers_.back().get());
    }
    d_table_ = DeviceBuffer::of(table_);
    // A program of lean row tiles also gets the lean megakernel's instructions (addresses resolved here).
    if (lean_program(p_, shape_.threads_per_block)) {
      lean_entry_ = lean_megakernel_entry_for(shape_.threads_per_block, p_.mode == SyncMode::sentinel,
                                              lean_cross_program(p_, shape_.threads_per_block));
      int per_sm = 0; // co-resident at this shape (it is: fewer registers and shared memory than the general one)
      GRIDFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, lean_entry_,
                                                                        static_cast<int>(shape_.threads_per_block), 0));
      if (static_cast<std::uint32_t>(per_sm) < shape_.blocks_per_sm)
        throw RuntimeError(fmt::format("the lean megakernel fits {} blocks of {} threads per SM, the launch needs {}",
                                       per_sm, shape_.threads_per_block, shape_.blocks_per_sm));
      d_tile_instrs_ = DeviceBuffer::of(tile_instrs(p_, table_));
      d_block_instrs_ = DeviceBuffer::of(block_instrs(p_, table_));
    }
    // A shape beyond the general megakernel's occupancy (lean row programs: lower_for_gpu) launches the lean kernel
    // only.
    int general_per_sm = 0;
    GRIDFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &general_per_sm, entry_, static_cast<int>(shape_.threads_per_block), static_cast<int>(ring_bytes_)));
    general_per_sm_ = static_cast<std::uint32_t>(general_per_sm);
    if (lean_entry_ == nullptr && general_per_sm_ < shape_.blocks_per_sm)
      throw RuntimeError(fmt::format("the megakernel fits {} blocks of {} threads per SM, the launch needs {}",
                                     general_per_sm_, shape_.threads_per_block, shape_.blocks_per_sm));
    state_ = DeviceBuffer(p_.layout.total);
    reset_state();
    view_ = make_view(p_, {d_tasks_.as<program::TaskDesc>(), d_tiles_.as<program::TileDesc>(),
                           d_deps_.as<program::DepDesc>(), d_levels_.as<std::uint32_t>(),
                           p_.block_begin.empty() ? nullptr : d_block_begin_.as<std::uint32_t>(),
                           p_.block_tiles.empty() ? nullptr : d_block_tiles_.as<std::uint32_t>(),
                           p_.block_tiles.empty() ? nullptr : d_block_descs_.as<program::TileDesc>(),
                           d_table_.as<void* const>(), d_sentinels_.as<std::int64_t>(), state_.as<unsigned char>()});
    if (p_.mode == SyncMode::barrier && barrier_uses_grid_sync(shape_.blocks_per_sm))
      view_.mode = static_cast<std::uint32_t>(SyncMode::grid_sync); // the same levels, the faster barrier
    if (lean_entry_ != nullptr) {
      view_.tile_instrs = d_tile_instrs_.as<program::TileInstr>();
      view_.block_instrs = p_.block_tiles.empty() ? nullptr : d_block_instrs_.as<program::TileInstr>();
    }
  }

  // A run still in flight is waited for: its kernel reads the buffers and bound memory this releases.
  ~GpuExecutor() override {
    if (in_flight_)
      GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaEventSynchronize(done_.get()));
  }
  GpuExecutor(const GpuExecutor&) = delete;
  GpuExecutor& operator=(const GpuExecutor&) = delete;

  const LoweredProgram& program() const override { return p_; }

  std::string describe() const override {
    return fmt::format("gpu {}, {} blocks ({} per SM) x {} threads, {} KB copy ring{}{}", device_.name,
                       shape_.grid_blocks, shape_.blocks_per_sm, shape_.threads_per_block, ring_bytes_ / 1024,
                       lean_entry_ == nullptr                             ? ""
                       : lean_cross_program(p_, shape_.threads_per_block) ? ", lean megakernel with cross tiles"
                                                                          : ", lean megakernel (row kernel)",
                       p_.mode == SyncMode::barrier
                           ? (barrier_uses_grid_sync(shape_.blocks_per_sm) ? ", barrier grid.sync()" : ", barrier flat")
                           : "");
  }

  void upload(std::uint32_t buffer, const HostTensor& data) override {
    refuse_in_flight("upload");
    check_buffer(buffer, data);
    copy_home(buffer, const_cast<void*>(data.data()), true); // only read: to_device
  }

  void download(std::uint32_t buffer, HostTensor& data) override {
    refuse_in_flight("download");
    const BufferInfo& b = p_.buffers.at(buffer);
    data = HostTensor(b.dtype, b.elements);
    copy_home(buffer, data.data(), false);
  }

  void* buffer_address(std::uint32_t buffer) override { return table_.at(buffer); }

  void fill_bits(std::uint32_t buffer, std::uint32_t bits) override {
    refuse_in_flight("fill");
    const BufferInfo& b = p_.buffers.at(buffer);
    std::vector<std::uint32_t> words(static_cast<std::size_t>(b.elements), bits);
    copy_home(buffer, words.data(), true);
  }

  int memory_device() const override { return device_.ordinal; }

  void bind(std::uint32_t buffer, const BoundMemory& memory) override {
    refuse_in_flight("bind");
    const BufferInfo& b = p_.buffers.at(buffer);
    if (memory.data != nullptr)
      check_device_memory(b.name, memory.data);
    bound_[buffer] = memory;
    // Own memory only where the run works on it: unbound or staged buffers.
    if (memory.data != nullptr && !memory.staged)
      buffers_[buffer] = DeviceBuffer();
    else if (buffers_[buffer].get() == nullptr)
      buffers_[buffer] = own_memory(buffer);
    void* const address = memory.data != nullptr && !memory.staged ? memory.data : buffers_[buffer].get();
    if (address == table_[buffer])
      return;
    table_[buffer] = address;
    copy(d_table_.get(), table_.data(), table_.size() * sizeof(void*), cudaMemcpyHostToDevice);
    if (lean_entry_ != nullptr) { // the lean instructions hold resolved addresses
      const std::vector<program::TileInstr> tiles = tile_instrs(p_, table_), blocks = block_instrs(p_, table_);
      copy(d_tile_instrs_.get(), tiles.data(), tiles.size() * sizeof(program::TileInstr), cudaMemcpyHostToDevice);
      copy(d_block_instrs_.get(), blocks.data(), blocks.size() * sizeof(program::TileInstr), cudaMemcpyHostToDevice);
    }
  }

  RunResult run(const ExecOptions& options) override {
    enqueue(options, stream_.get());
    return finish();
  }

  void enqueue(const ExecOptions& options, StreamHandle stream) override {
    refuse_in_flight("enqueue");
    if (epoch_ >= 0xfffffff0u)
      reset_state();
    const bool sentinel = p_.mode == SyncMode::sentinel;
    const bool kernel_fill = kernel_fills_sentinels(p_, options);
    program::RunParams r = run_params(p_, options, ++epoch_, barrier_generations_);
    r.ring_bytes = ring_bytes_;
    RunResult& result = pending_;
    result = RunResult{};
    result.blocks = shape_.grid_blocks;
    result.barriers_per_block = r.barriers_in_run;
    pending_trace_ = options.trace;
    pending_barriers_ = p_.mode == SyncMode::barrier || kernel_fill; // grid barriers move the generation base

    if (options.trace) {
      ensure_trace(result.barriers_per_block);
      GRIDFLOW_CUDA_CHECK(cudaMemsetAsync(tile_trace_.get(), 0, tile_trace_.bytes(), stream));
      GRIDFLOW_CUDA_CHECK(cudaMemsetAsync(barrier_trace_.get(), 0, barrier_trace_.bytes(), stream));
      r.tile_trace = tile_trace_.as<program::TileTrace>();
      r.barrier_trace = barrier_trace_.as<program::BarrierTrace>();
    }

    copy_staged(stream, true);
    GRIDFLOW_CUDA_CHECK(cudaEventRecord(start_.get(), stream));
    if (sentinel && !kernel_fill) {
      void* fill_args[] = {&view_};
      GRIDFLOW_CUDA_CHECK(
          cudaLaunchKernel(fill_sentinels_entry(), dim3(shape_.sm_count * 4), dim3(256), fill_args, 0, stream));
      GRIDFLOW_CUDA_CHECK_LAUNCH();
    }
    void* args[] = {&view_, &r};
    const bool lean = options.lean_kernel && lean_entry_ != nullptr;
    if (!lean && general_per_sm_ < shape_.blocks_per_sm)
      throw RuntimeError(
          fmt::format("a run on the general megakernel (lean_kernel off): it fits {} blocks of {} threads "
                      "per SM, the program was lowered for {}; lower it with blocks_per_sm {} or fewer",
                      general_per_sm_, shape_.threads_per_block, shape_.blocks_per_sm, general_per_sm_));
    result.lean_kernel = lean;
    GRIDFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(lean ? lean_entry_ : entry_, dim3(shape_.grid_blocks),
                                                    dim3(shape_.threads_per_block), args, lean ? 0 : ring_bytes_,
                                                    stream));
    GRIDFLOW_CUDA_CHECK_LAUNCH();
    GRIDFLOW_CUDA_CHECK(cudaEventRecord(stop_.get(), stream));
    // The run's error record comes back on the same stream, so finish() needs nothing but the last event.
    GRIDFLOW_CUDA_CHECK(
        cudaMemcpyAsync(error_.get(), state_.get(), sizeof(program::ErrorRecord), cudaMemcpyDeviceToHost, stream));
    copy_staged(stream, false);
    GRIDFLOW_CUDA_CHECK(cudaEventRecord(done_.get(), stream));
    in_flight_ = true;
  }

  RunResult finish() override {
    if (!in_flight_)
      throw RuntimeError("gpu executor: finish() with no run in flight");
    in_flight_ = false;
    // Device faults (the context is lost) surface here, naming the call.
    GRIDFLOW_CUDA_CHECK(cudaEventSynchronize(done_.get()));
    RunResult result = std::move(pending_);
    result.elapsed_ms = stop_.since(start_);
    if (pending_barriers_)
      barrier_generations_ += result.barriers_per_block;
    const program::ErrorRecord error = *error_.get();
    if (error.code != 0) {
      reset_state();
      throw DeviceError(error, p_);
    }
    if (pending_trace_) {
      // (Constructed, not resized: nvcc 13 rejects the relocation path of vector<TileTrace>::resize.)
      result.tiles = std::vector<program::TileTrace>(p_.tiles.size());
      result.barriers = std::vector<program::BarrierTrace>(std::size_t{shape_.grid_blocks} * result.barriers_per_block);
      copy(result.tiles.data(), tile_trace_.get(), result.tiles.size() * sizeof(program::TileTrace),
           cudaMemcpyDeviceToHost);
      copy(result.barriers.data(), barrier_trace_.get(), result.barriers.size() * sizeof(program::BarrierTrace),
           cudaMemcpyDeviceToHost);
    }
    return result;
  }

  bool in_flight() const override { return in_flight_; }

  // One run as per-task launches: stream order replaces dependencies. With `graph`, the launches are captured
  // once into a CUDA Graph and replayed. Returns the milliseconds of each timed repetition.
  std::vector<double> time_launches(bool graph, int warmup, int repeat) {
    refuse_in_flight("time launches");
    const void* task_entry = task_kernel_entry_for(shape_.threads_per_block);
    allow_dynamic_shared(task_entry, shape_.threads_per_block);
    for (const program::TaskDesc& t : p_.tasks)
      if (program::waits_on_own_tiles(t.opcode) && t.num_tiles > shape_.grid_blocks)
        throw RuntimeError(
            "per-task launch baseline: a task whose tiles wait on each other (scan, scatter, select) has "
            "more tiles than can be co-resident");
    program::RunParams r;
    r.timeout_ns = 10'000'000'000ull;
    r.ring_bytes = ring_bytes_;
    auto enqueue = [&](program::RunParams& params) {
      for (std::uint32_t t = 0; t < p_.tasks.size(); ++t) {
        if (p_.tasks[t].num_tiles == 0)
          continue;
        std::uint32_t task = t;
        void* args[] = {&view_, &params, &task};
        GRIDFLOW_CUDA_CHECK(cudaLaunchKernel(task_entry, dim3(p_.tasks[t].num_tiles), dim3(shape_.threads_per_block),
                                             args, ring_bytes_, stream_.get()));
      }
    };
    std::vector<double> times;
    cudaGraphExec_t exec = nullptr;
    if (graph) {
      // A graph replays fixed parameters, so every replay runs as epoch 1; cross-tile state (reduce partial
      // counters, scan look-back words) is then zeroed by a memset node first, only where a program has any.
      r.epoch = 1;
      bool cross_tile = false;
      for (const program::TaskDesc& t : p_.tasks)
        cross_tile = cross_tile || program::has_cross_tile_state(t);
      cudaGraph_t g = nullptr;
      GRIDFLOW_CUDA_CHECK(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal));
      if (cross_tile)
        GRIDFLOW_CUDA_CHECK(cudaMemsetAsync(state_.get(), 0, state_.bytes(), stream_.get()));
      enqueue(r);
      GRIDFLOW_CUDA_CHECK(cudaStreamEndCapture(stream_.get(), &g));
      GRIDFLOW_CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
      GRIDFLOW_CUDA_CHECK(cudaGraphDestroy(g));
    }
    for (int i = 0; i < warmup + repeat; ++i) {
      if (!graph)
        r.epoch = ++epoch_;
      GRIDFLOW_CUDA_CHECK(cudaEventRecord(start_.get(), stream_.get()));
      if (graph)
        GRIDFLOW_CUDA_CHECK(cudaGraphLaunch(exec, stream_.get()));
      else
        enqueue(r);
      GRIDFLOW_CUDA_CHECK(cudaEventRecord(stop_.get(), stream_.get()));
      GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      GRIDFLOW_CUDA_CHECK_LAUNCH();
      if (i >= warmup)
        times.push_back(stop_.since(start_));
    }
    if (exec)
      GRIDFLOW_CUDA_CHECK(cudaGraphExecDestroy(exec));
    program::ErrorRecord error;
    GRIDFLOW_CUDA_CHECK(cudaMemcpy(&error, state_.get(), sizeof error, cudaMemcpyDeviceToHost));
    reset_state(); // the baselines used the arena with their own epochs
    if (error.code != 0)
      throw DeviceError(error, p_);
    return times;
  }

private:
  void check_buffer(std::uint32_t buffer, const HostTensor& data) const {
    const BufferInfo& b = p_.buffers.at(buffer);
    if (data.dtype() != b.dtype || data.size() != b.elements)
      throw RuntimeError(fmt::format("upload: buffer '{}' has the wrong dtype or size", b.name));
  }

  void refuse_in_flight(const char* what) const {
    if (in_flight_)
      throw RuntimeError(fmt::format("gpu executor: {} while a run is in flight (finish it first)", what));
  }

  // Buffer b's own device memory: at least 16 bytes, so zero-length buffers still have a distinct, aligned address.
  DeviceBuffer own_memory(std::uint32_t b) const {
    const BufferInfo& info = p_.buffers[b];
    return DeviceBuffer(std::max<std::size_t>(16, static_cast<std::size_t>(info.elements) * dtype_size(info.dtype)));
  }

  // Device or managed memory of this executor's device, else RuntimeError naming the buffer.
  void check_device_memory(const std::string& buffer, const void* data) const {
    cudaPointerAttributes a{};
    GRIDFLOW_CUDA_CHECK(cudaPointerGetAttributes(&a, data));
    const bool device_memory = a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
    if (!device_memory || a.device != device_.ordinal)
      throw RuntimeError(fmt::format(
          "bind: buffer '{}': the memory at {} is {}, the gpu backend runs on device memory "
          "of device {}",
          buffer, data,
          device_memory ? fmt::format("on device {}", a.device)
                        : std::string(a.type == cudaMemoryTypeHost ? "pinned host memory" : "not CUDA memory"),
          device_.ordinal));
  }

  // Copies on the executor's own stream, waited for: a host copy never synchronizes with the caller's streams (the
  // legacy default stream, which cudaMemcpy uses, would wait for every blocking one).
  void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) const {
    if (bytes == 0)
      return;
    GRIDFLOW_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream_.get()));
    GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  // Between host memory `host` (the buffer's elements, contiguous) and where buffer b lives: the caller's memory
  // (rows at its pitch when staged) or the executor's own.
  void copy_home(std::uint32_t b, void* host, bool to_device) const {
    const BufferInfo& info = p_.buffers[b];
    const std::size_t bytes = static_cast<std::size_t>(info.elements) * dtype_size(info.dtype);
    const BoundMemory& m = bound_[b];
    if (m.data == nullptr || !m.staged) {
      void* home = m.data != nullptr ? m.data : buffers_[b].get();
      copy(to_device ? home : host, to_device ? host : home, bytes,
           to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
      return;
    }
    if (m.rows == 0 || m.row_bytes == 0)
      return;
    const auto rows = static_cast<std::size_t>(m.rows);
    if (to_device)
      GRIDFLOW_CUDA_CHECK(cudaMemcpy2DAsync(m.data, m.pitch_bytes, host, m.row_bytes, m.row_bytes, rows,
                                            cudaMemcpyHostToDevice, stream_.get()));
    else
      GRIDFLOW_CUDA_CHECK(cudaMemcpy2DAsync(host, m.row_bytes, m.data, m.pitch_bytes, m.row_bytes, rows,
                                            cudaMemcpyDeviceToHost, stream_.get()));
    GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  // Staged buffers on `stream`: the caller's rows into the executor's copy (`in`), or the written ones back.
  void copy_staged(cudaStream_t stream, bool in) const {
    for (std::uint32_t b = 0; b < bound_.size(); ++b) {
      const BoundMemory& m = bound_[b];
      if (m.data == nullptr || !m.staged || m.rows == 0 || m.row_bytes == 0 || (!in && !written_[b]))
        continue;
      void* own = buffers_[b].get();
      const auto rows = static_cast<std::size_t>(m.rows);
      if (in)
        GRIDFLOW_CUDA_CHECK(cudaMemcpy2DAsync(own, m.row_bytes, m.data, m.pitch_bytes, m.row_bytes, rows,
                                              cudaMemcpyDeviceToDevice, stream));
      else
        GRIDFLOW_CUDA_CHECK(cudaMemcpy2DAsync(m.data, m.pitch_bytes, own, m.row_bytes, m.row_bytes, rows,
                                              cudaMemcpyDeviceToDevice, stream));
    }
  }

  // Zeroes the arena: epoch-valued counters and flags restart from run 1. On the executor's own stream, after the
  // last run finished.
  void reset_state() {
    GRIDFLOW_CUDA_CHECK(cudaMemsetAsync(state_.get(), 0, state_.bytes(), stream_.get()));
    GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    epoch_ = 0;
    barrier_generations_ = 0;
  }

  void ensure_trace(std::uint32_t barriers_per_block) {
    const std::size_t tiles = std::max<std::size_t>(1, p_.tiles.size()) * sizeof(program::TileTrace);
    const std::size_t bars =
        std::max<std::size_t>(1, std::size_t{shape_.grid_blocks} * barriers_per_block) * sizeof(program::BarrierTrace);
    if (tile_trace_.bytes() < tiles)
      tile_trace_ = DeviceBuffer(tiles);
    if (barrier_trace_.bytes() < bars)
      barrier_trace_ = DeviceBuffer(bars);
  }

  LoweredProgram p_;
  GpuShape shape_;
  DeviceInfo device_;
  const void* entry_ = nullptr;
  const void* lean_entry_ = nullptr; // the lean megakernel, when it runs the program (lean_program)
  std::uint32_t general_per_sm_ = 0; // the general megakernel's occupancy at this block size and ring
  std::uint32_t ring_bytes_ = 0; // the bulk-copy ring: each launch's dynamic shared memory per block (copy_ring_bytes)
  DeviceBuffer d_tasks_, d_tiles_, d_deps_, d_levels_, d_block_begin_, d_block_tiles_, d_block_descs_, d_sentinels_,
      d_table_, d_tile_instrs_, d_block_instrs_, state_;
  std::vector<DeviceBuffer> buffers_; // own memory (none for a buffer bound directly)
  std::vector<BoundMemory> bound_;    // per buffer: its caller memory (data == nullptr: none)
  std::vector<void*> table_;          // per buffer: the address tiles use (d_table_ on the device)
  std::vector<bool> written_;         // written_buffers(p_)
  DeviceBuffer tile_trace_, barrier_trace_;
  program::ProgramView view_;
  Stream stream_; // run() and every host copy
  Event start_, stop_, done_;
  Pinned<program::ErrorRecord> error_; // the run's error record, copied back on its stream
  RunResult pending_;                  // the run in flight: all but what finish() measures and reads
  bool pending_trace_ = false;
  bool pending_barriers_ = false;
  bool in_flight_ = false;
  std::uint32_t epoch_ = 0;
  std::uint64_t barrier_generations_ = 0;
};

} // namespace

std::size_t allow_dynamic_shared(const void* entry, std::uint32_t threads) {
  if (!entry)
    throw RuntimeError(fmt::format("no kernel compiled for {} threads per block", threads));
  const int bytes = kernels::stream_ring_bytes(static_cast<int>(threads));
  GRIDFLOW_CUDA_CHECK(cudaFuncSetAttribute(entry, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return static_cast<std::size_t>(bytes);
}

} // namespace gpu

BaselineTimes time_per_task_launches(Executor& executor, int warmup, int repeat) {
  auto* gpu = dynamic_cast<gpu::GpuExecutor*>(&executor);
  if (!gpu)
    throw RuntimeError("per-task launch baselines need the GPU executor");
  BaselineTimes t;
  t.stream_ms = gpu->time_launches(false, warmup, repeat);
  t.graph_ms = gpu->time_launches(true, warmup, repeat);
  return t;
}

GpuShape plan_gpu_shape(std::uint32_t threads, std::uint32_t blocks_per_sm) {
  const DeviceInfo dev = probe_gpu();
  if (!dev.available)
    throw RuntimeError("no GPU: " + dev.reason);
  if (!dev.cooperative_launch)
    throw RuntimeError(dev.name + " cannot launch cooperative kernels");
  const void* entry = gpu::megakernel_entry_for(threads);
  if (!entry)
    throw RuntimeError(
        fmt::format("threads per block = {}: the megakernel is compiled for 128, 256, 512 and 1024", threads));
  int max_per_sm = 0;
  GRIDFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&max_per_sm, entry, static_cast<int>(threads),
                                                                    gpu::allow_dynamic_shared(entry, threads)));
  int max_lean_per_sm = 0; // the lean row kernel: no dynamic shared memory
  GRIDFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &max_lean_per_sm, gpu::lean_megakernel_entry_for(threads, false, false), static_cast<int>(threads), 0));
  GpuShape device;
  device.threads_per_block = threads;
  device.sm_count = static_cast<std::uint32_t>(dev.sm_count);
  device.max_blocks_per_sm = static_cast<std::uint32_t>(max_per_sm);
  device.max_lean_blocks_per_sm = static_cast<std::uint32_t>(max_lean_per_sm);
  return fit_gpu_shape(device, blocks_per_sm, dev.name);
}

std::unique_ptr<Executor> make_gpu_executor(LoweredProgram program, const GpuShape& shape) {
  return std::make_unique<gpu::GpuExecutor>(std::move(program), shape);
}

} // namespace gridflow
