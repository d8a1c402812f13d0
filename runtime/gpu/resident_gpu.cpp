// The GPU backend of the resident runtime: the rings in pinned host memory mapped into the device, the programs in
// device memory, and one cooperative launch of the resident megakernel serving them (runtime/resident.hpp).
//
// While the kernel runs, nothing here may wait for the device as a whole (a device-wide synchronization would wait for
// a kernel that only ends when told to), nor need an SM (the kernel holds them all: a memset, say, may be a kernel).
// So every allocation and copy is stream-ordered on the backend's own copy stream (cudaMallocAsync, cudaMemcpyAsync,
// cudaFreeAsync), never cudaMalloc, cudaFree, cudaMemset or the legacy stream.
#include "runtime/device.hpp"
#include "runtime/errors.hpp"
#include "runtime/gpu/copy_ring.hpp"
#include "runtime/gpu/device_memory.hpp"
#include "runtime/gpu/kernel_table.hpp"
#include "runtime/gpu/resident_entry.hpp"
#include "runtime/lean_program.hpp"
#include "runtime/resident_backend.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

namespace gridflow {
namespace gpu {
namespace {

// Device memory from the stream-ordered allocator, allocated and freed on `stream` (which outlives it).
class AsyncBuffer {
public:
  AsyncBuffer() = default;
  AsyncBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream), bytes_(bytes) {
    GRIDFLOW_CUDA_CHECK(cudaMallocAsync(&ptr_, std::max<std::size_t>(16, bytes), stream_));
  }
  ~AsyncBuffer() {
    if (ptr_)
      GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaFreeAsync(ptr_, stream_));
  }
  AsyncBuffer(AsyncBuffer&& o) noexcept
      : stream_(o.stream_), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  AsyncBuffer& operator=(AsyncBuffer&& o) noexcept {
    std::swap(stream_, o.stream_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  AsyncBuffer(const AsyncBuffer&) = delete;
  AsyncBuffer& operator=(const AsyncBuffer&) = delete;

  // A buffer holding a copy of `v` (copied on the stream; the caller synchronizes it before the first use).
  template <class T> static AsyncBuffer of(const std::vector<T>& v, cudaStream_t stream) {
    AsyncBuffer b(v.size() * sizeof(T), stream);
    if (!v.empty())
      GRIDFLOW_CUDA_CHECK(cudaMemcpyAsync(b.ptr_, v.data(), b.bytes_, cudaMemcpyHostToDevice, stream));
    return b;
  }
  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

private:
  cudaStream_t stream_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Pinned host memory mapped into the device's address space, zeroed.
template <class T> class Mapped {
public:
  explicit Mapped(std::size_t count) : bytes_(count * sizeof(T)) {
    GRIDFLOW_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host_), bytes_, cudaHostAllocMapped));
    GRIDFLOW_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_), host_, 0));
    zero();
  }
  ~Mapped() { GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaFreeHost(host_)); }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  void zero() { std::memset(static_cast<void*>(host_), 0, bytes_); }
  T* host() const { return host_; }
  T* device() const { return device_; }

private:
  std::size_t bytes_;
  T* host_ = nullptr;
  T* device_ = nullptr;
};

struct GpuProgram {
  AsyncBuffer tasks, tiles, deps, levels, block_begin, block_tiles, block_descs, sentinels, state, table;
  AsyncBuffer tile_instrs, block_instrs; // a program of lean row tiles: its instructions over its own buffers
  std::vector<AsyncBuffer> buffers;
};

// Everything the running kernel reads or writes.
struct Resources {
  Resources(std::uint32_t depth, std::uint32_t max_programs, cudaStream_t s)
      : submissions(depth), completions(depth), quit(1), control(sizeof(resident::Control), s),
        records(std::size_t{max_programs} * sizeof(resident::ProgramRecord), s), programs(max_programs) {}
  Mapped<resident::Submission> submissions;
  Mapped<resident::Completion> completions;
  Mapped<std::uint32_t> quit; // Rings::quit
  AsyncBuffer control, records;
  std::vector<std::unique_ptr<GpuProgram>> programs; // [max_programs]
};

class GpuResident final : public ResidentBackend {
public:
  GpuResident(const GpuShape& shape, std::uint32_t depth, std::uint32_t max_programs, const resident::IdlePacing& idle)
      : shape_(shape), device_(probe_gpu()) {
    entry_ = resident_kernel_entry_for(shape_.threads_per_block);
    if (entry_ == nullptr)
      throw RuntimeError(
          fmt::format("threads per block = {}: the resident megakernel is compiled for 256", shape_.threads_per_block));
    ring_bytes_ = static_cast<std::uint32_t>(allow_dynamic_shared(entry_, shape_.threads_per_block));
    int per_sm = 0;
    GRIDFLOW_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, entry_, static_cast<int>(shape_.threads_per_block), ring_bytes_));
    if (static_cast<std::uint32_t>(per_sm) < shape_.blocks_per_sm)
      throw RuntimeError(fmt::format("the resident megakernel fits {} blocks of {} threads per SM, the launch needs {}",
                                     per_sm, shape_.threads_per_block, shape_.blocks_per_sm));
    res_ = std::make_unique<Resources>(depth, max_programs, copies_.get());
    GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(copies_.get()));
    rings_.submissions = res_->submissions.device();
    rings_.completions = res_->completions.device();
    rings_.depth = depth;
    rings_.grid = shape_.grid_blocks;
    rings_.control = res_->control.as<resident::Control>();
    rings_.programs = res_->records.as<resident::ProgramRecord>();
    rings_.max_programs = max_programs;
    rings_.idle = idle;
    rings_.quit = res_->quit.device();
  }

  ~GpuResident() override {
    live().erase(this);
    if (running_)
      quit(std::chrono::seconds(1)); // the session stopped it; this only guards against one that could not
    if (running_) {
      // The kernel still reads this memory: leave it allocated rather than free it under a running kernel.
      spdlog::error("resident runtime: the kernel is still running at destruction; its memory is left allocated");
      (void)res_.release();
      return;
    }
    res_.reset();
    GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaStreamSynchronize(copies_.get()));
  }

  std::string describe() const override {
    return fmt::format("gpu {}, resident megakernel, {} blocks ({} per SM) x {} threads", device_.name,
                       shape_.grid_blocks, shape_.blocks_per_sm, shape_.threads_per_block);
  }
  int memory_device() const override { return device_.ordinal; }
  std::uint32_t grid() const override { return rings_.grid; }
  resident::Submission* submissions() override { return res_->submissions.host(); }
  resident::Completion* completions() override { return res_->completions.host(); }
  std::uint32_t depth() const override { return rings_.depth; }

  void launch() override {
    if (running_)
      throw RuntimeError("resident runtime: already running");
    res_->submissions.zero();
    res_->completions.zero();
    res_->quit.zero();
    zero(res_->control.get(), sizeof(resident::Control));
    void* args[] = {&rings_};
    GRIDFLOW_CUDA_CHECK(cudaLaunchCooperativeKernel(entry_, dim3(shape_.grid_blocks), dim3(shape_.threads_per_block),
                                                    args, ring_bytes_, kernel_.get()));
    GRIDFLOW_CUDA_CHECK_LAUNCH();
    running_ = true;
    // A process that exits with the kernel resident tells it to quit before the CUDA runtime tears the context down
    // (registered after the runtime initialized, so run before its own exit handler).
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit(quit_all); });
    live().insert(this);
  }

  // Tells the kernel to leave at its next idle poll and waits up to `timeout` for it.
  void quit(std::chrono::nanoseconds timeout) {
    std::atomic_ref<std::uint32_t>(*res_->quit.host()).store(1, std::memory_order_release);
    join(timeout);
  }

  bool join(std::chrono::nanoseconds timeout) override {
    if (!running_)
      return true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const cudaError_t e = cudaStreamQuery(kernel_.get());
      if (e == cudaSuccess) {
        running_ = false;
        return true;
      }
      if (e != cudaErrorNotReady) {
        running_ = false; // the context is lost: nothing runs any more
        spdlog::error("resident runtime: the kernel ended with {}", cudaGetErrorString(e));
        return true;
      }
      if (std::chrono::steady_clock::now() >= deadline)
        return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void check_alive() override {
    const cudaError_t e = cudaStreamQuery(kernel_.get());
    if (e == cudaErrorNotReady)
      return;
    running_ = false;
    if (e == cudaSuccess)
      throw RuntimeError("resident runtime: the kernel ended without being stopped");
    (void)cudaGetLastError();
    throw RuntimeError(fmt::format("resident runtime: CUDA error {} ({}): the context is lost", cudaGetErrorName(e),
                                   cudaGetErrorString(e)));
  }

  void add(std::uint32_t index, const LoweredProgram& p, const ExecOptions& options,
           const std::vector<HostTensor>& initial) override {
    const cudaStream_t s = copies_.get();
    auto prog = std::make_unique<GpuProgram>();
    prog->tasks = AsyncBuffer::of(p.tasks, s);
    prog->tiles = AsyncBuffer::of(p.tiles, s);
    prog->deps = AsyncBuffer::of(p.deps, s);
    prog->levels = AsyncBuffer::of(p.level_begin, s);
    prog->block_begin = AsyncBuffer::of(p.block_begin, s);
    prog->block_tiles = AsyncBuffer::of(p.block_tiles, s);
    const std::vector<program::TileDesc> descs = block_descs(p);
    prog->block_descs = AsyncBuffer::of(descs, s);
    const std::vector<std::int64_t> sentinels = sentinel_ranges(p);
    prog->sentinels = AsyncBuffer::of(sentinels, s);
    prog->state = AsyncBuffer(p.layout.total, s);
    zero(prog->state.get(), p.layout.total);
    for (std::uint32_t b = 0; b < p.buffers.size(); ++b) {
      prog->buffers.emplace_back(initial[b].bytes(), s);
      if (initial[b].bytes() > 0)
        GRIDFLOW_CUDA_CHECK(cudaMemcpyAsync(prog->buffers.back().get(), initial[b].data(), initial[b].bytes(),
                                            cudaMemcpyHostToDevice, s));
    }
    std::vector<void*> table;
    for (const AsyncBuffer& b : prog->buffers)
      table.push_back(b.get());
    prog->table = AsyncBuffer::of(table, s);
    resident::ProgramRecord record = resident::make_record(
        p, options,
        {prog->tasks.as<program::TaskDesc>(), prog->tiles.as<program::TileDesc>(), prog->deps.as<program::DepDesc>(),
         prog->levels.as<std::uint32_t>(), p.block_begin.empty() ? nullptr : prog->block_begin.as<std::uint32_t>(),
         p.block_tiles.empty() ? nullptr : prog->block_tiles.as<std::uint32_t>(),
         p.block_tiles.empty() ? nullptr : prog->block_descs.as<program::TileDesc>(), prog->table.as<void* const>(),
         prog->sentinels.as<std::int64_t>(), prog->state.as<unsigned char>()},
        copy_ring_bytes(p, shape_.threads_per_block));
    // Runs over the program's own buffers go through the lean tile path (resident::runs_lean) when every task is a
    // lean row tile (resident_lean_program): the instructions hold those buffers' addresses.
    if (resident_lean_program(p, shape_.threads_per_block)) {
      prog->tile_instrs = AsyncBuffer::of(tile_instrs(p, table), s);
      prog->block_instrs = AsyncBuffer::of(block_instrs(p, table), s);
      record.view.tile_instrs = prog->tile_instrs.as<program::TileInstr>();
      record.view.block_instrs = p.block_tiles.empty() ? nullptr : prog->block_instrs.as<program::TileInstr>();
    }
    GRIDFLOW_CUDA_CHECK(cudaMemcpyAsync(res_->records.as<resident::ProgramRecord>() + index, &record, sizeof record,
                                        cudaMemcpyHostToDevice, s));
    GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(s)); // all of it in device memory before a doorbell can name it
    res_->programs.at(index) = std::move(prog);
  }

  void* own_buffer(std::uint32_t p, std::uint32_t b) override { return res_->programs.at(p)->buffers.at(b).get(); }

  void upload(std::uint32_t p, std::uint32_t b, const HostTensor& data) override {
    const AsyncBuffer& own = res_->programs.at(p)->buffers.at(b);
    copy(own.get(), data.data(), std::min(own.bytes(), data.bytes()), cudaMemcpyHostToDevice);
  }
  void download(std::uint32_t p, std::uint32_t b, HostTensor& data) override {
    const AsyncBuffer& own = res_->programs.at(p)->buffers.at(b);
    copy(data.data(), own.get(), std::min(own.bytes(), data.bytes()), cudaMemcpyDeviceToHost);
  }

private:
  // Zeroes device memory with a copy from the host: a memset may need a kernel, and the resident kernel holds the SMs.
  void zero(void* device, std::size_t bytes) {
    const std::vector<unsigned char> zeros(bytes, 0);
    copy(device, zeros.data(), bytes, cudaMemcpyHostToDevice);
  }

  // Every backend whose kernel may be running (the exit handler's list; the session API is not thread-safe across
  // backends, so neither is this: one mutex).
  struct Registry {
    std::mutex mutex;
    std::set<GpuResident*> backends;
    void insert(GpuResident* b) {
      const std::lock_guard lock(mutex);
      backends.insert(b);
    }
    void erase(GpuResident* b) {
      const std::lock_guard lock(mutex);
      backends.erase(b);
    }
  };
  static Registry& live() {
    static Registry* r = new Registry; // never destroyed: the exit handler may run after static destructors
    return *r;
  }
  static void quit_all() {
    Registry& r = live();
    const std::lock_guard lock(r.mutex);
    for (GpuResident* b : r.backends)
      if (b->running_)
        b->quit(std::chrono::seconds(2));
  }

  void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    if (bytes == 0)
      return;
    GRIDFLOW_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, copies_.get()));
    GRIDFLOW_CUDA_CHECK(cudaStreamSynchronize(copies_.get()));
  }

  GpuShape shape_;
  DeviceInfo device_;
  const void* entry_ = nullptr;
  std::uint32_t ring_bytes_ = 0;   // every block's dynamic shared memory: the largest bulk-copy ring of this size
  Stream kernel_, copies_;         // the resident kernel's stream; every allocation and copy
  std::unique_ptr<Resources> res_; // after the streams: freed on copies_ before it is destroyed
  resident::Rings rings_;
  bool running_ = false;
};

} // namespace
} // namespace gpu

std::unique_ptr<ResidentBackend> make_gpu_resident(const GpuShape& shape, std::uint32_t depth,
                                                   std::uint32_t max_programs, const resident::IdlePacing& idle) {
  return std::make_unique<gpu::GpuResident>(shape, depth, max_programs, idle);
}

} // namespace gridflow
