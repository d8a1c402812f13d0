// The CPU backend of the resident runtime: one std::thread per program block serving the rings with
// resident::serve(), each running its submissions through the CPU executor's Block (runtime/cpu_block.hpp).
#include "runtime/cpu_block.hpp"
#include "runtime/errors.hpp"
#include "runtime/interpreter.hpp"
#include "runtime/resident_backend.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace gridflow {
namespace {

// 128-byte aligned, zeroed host memory for `count` objects of T (the rings, the control words, a state arena).
template <class T> class Aligned {
public:
  Aligned() = default;
  explicit Aligned(std::size_t count)
      : count_(count),
        p_(static_cast<T*>(::operator new (std::max<std::size_t>(1, count * sizeof(T)), std::align_val_t{128}))) {
    zero();
  }
  ~Aligned() {
    if (p_)
      ::operator delete (p_, std::align_val_t{128});
  }
  Aligned(Aligned&& o) noexcept : count_(std::exchange(o.count_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  Aligned& operator=(Aligned&& o) noexcept {
    std::swap(count_, o.count_);
    std::swap(p_, o.p_);
    return *this;
  }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  void zero() { std::memset(static_cast<void*>(p_), 0, count_ * sizeof(T)); }
  T* get() const { return p_; }

private:
  std::size_t count_ = 0;
  T* p_ = nullptr;
};

// A program as the CPU keeps it: the host program (its arrays are the record's), its own buffers and state arena.
struct CpuProgram {
  LoweredProgram program;
  std::vector<program::TileDesc> block_descs;
  std::vector<std::int64_t> sentinels;
  std::vector<HostTensor> buffers;
  std::vector<void*> table; // the buffers' addresses: the record's own buffer table
  Aligned<unsigned char> state;
  cpu::ForwardPlan forward;
};

class CpuResident;

// One worker thread of serve(): the Block basics of a single thread, plus the run's view and parameters.
class CpuWorker {
public:
  CpuWorker(CpuResident& owner, std::uint32_t index) : owner_(owner), index_(index) {}
  std::uint32_t index() const { return index_; }
  bool is_leader() const { return true; }
  void sync() {}
  std::uint32_t share(std::uint32_t v) { return v; }
  std::uint32_t thread() const { return 0; }
  std::uint32_t threads() const { return 1; }
  resident::ProgramRecord& record() { return record_; }
  std::uint32_t& held_program() { return held_; }
  bool run(std::uint32_t program, std::uint64_t ticket);

private:
  CpuResident& owner_;
  std::uint32_t index_;
  resident::ProgramRecord record_;
  std::uint32_t held_ = resident::kNoProgram;
};

class CpuResident final : public ResidentBackend {
public:
  CpuResident(std::uint32_t workers, std::uint32_t depth, std::uint32_t max_programs, const resident::IdlePacing& idle)
      : submissions_(depth), completions_(depth), control_(1), records_(max_programs), programs_(max_programs),
        quit_(1), failures_(depth) {
    rings_.submissions = submissions_.get();
    rings_.completions = completions_.get();
    rings_.depth = depth;
    rings_.grid = workers;
    rings_.control = control_.get();
    rings_.programs = records_.get();
    rings_.max_programs = max_programs;
    rings_.idle = idle;
    rings_.quit = quit_.get();
  }
  ~CpuResident() override {
    // The session stopped the workers; this only guards against one that could not.
    std::atomic_ref<std::uint32_t>(*quit_.get()).store(1, std::memory_order_relaxed);
    workers_.clear();
  }

  std::string describe() const override {
    return fmt::format("cpu, {} resident worker thread{}", rings_.grid, rings_.grid == 1 ? "" : "s");
  }
  int memory_device() const override { return kHostMemory; }
  std::uint32_t grid() const override { return rings_.grid; }
  resident::Submission* submissions() override { return submissions_.get(); }
  resident::Completion* completions() override { return completions_.get(); }
  std::uint32_t depth() const override { return rings_.depth; }

  void launch() override {
    if (!workers_.empty())
      throw RuntimeError("resident runtime: already running");
    submissions_.zero();
    completions_.zero();
    control_.zero();
    quit_.zero();
    workers_.reserve(rings_.grid);
    for (std::uint32_t w = 0; w < rings_.grid; ++w)
      workers_.emplace_back([this, w] {
        CpuWorker worker(*this, w);
        resident::serve(worker, rings_);
      });
  }

  bool join(std::chrono::nanoseconds) override {
    // After kStop every worker returns from serve() at once; a worker still running a submission is bounded by its
    // watchdog.
    workers_.clear();
    return true;
  }
  void check_alive() override {}

  void add(std::uint32_t index, const LoweredProgram& p, const ExecOptions& options,
           const std::vector<HostTensor>& initial) override {
    auto prog = std::make_unique<CpuProgram>();
    prog->program = p;
    prog->block_descs = block_descs(p);
    prog->sentinels = sentinel_ranges(p);
    prog->buffers = initial;
    for (HostTensor& t : prog->buffers)
      prog->table.push_back(t.data());
    prog->state = Aligned<unsigned char>(p.layout.total);
    prog->forward = cpu::forward_plan(p);
    const LoweredProgram& q = prog->program;
    records_.get()[index] = resident::make_record(q, options,
                                                  {q.tasks.data(), q.tiles.data(), q.deps.data(), q.level_begin.data(),
                                                   q.block_begin.empty() ? nullptr : q.block_begin.data(),
                                                   q.block_tiles.empty() ? nullptr : q.block_tiles.data(),
                                                   q.block_tiles.empty() ? nullptr : prog->block_descs.data(),
                                                   prog->table.data(), prog->sentinels.data(), prog->state.get()},
                                                  0);
    programs_[index] = std::move(prog); // published to the workers by the doorbell of its first submission
  }

  void* own_buffer(std::uint32_t p, std::uint32_t b) override { return programs_.at(p)->buffers.at(b).data(); }
  void upload(std::uint32_t p, std::uint32_t b, const HostTensor& data) override {
    HostTensor& own = programs_.at(p)->buffers.at(b);
    std::memcpy(own.data(), data.data(), own.bytes());
  }
  void download(std::uint32_t p, std::uint32_t b, HostTensor& data) override { data = programs_.at(p)->buffers.at(b); }

  std::exception_ptr take_failure(std::uint64_t ticket) override {
    const std::lock_guard lock(failure_mutex_);
    return std::exchange(failures_[ticket % rings_.depth], nullptr);
  }

  const CpuProgram& program(std::uint32_t p) const { return *programs_[p]; }
  void fail(std::uint64_t ticket, std::exception_ptr e) {
    const std::lock_guard lock(failure_mutex_);
    if (!failures_[ticket % rings_.depth])
      failures_[ticket % rings_.depth] = std::move(e);
  }

private:
  Aligned<resident::Submission> submissions_;
  Aligned<resident::Completion> completions_;
  Aligned<resident::Control> control_;
  Aligned<resident::ProgramRecord> records_;
  std::vector<std::unique_ptr<CpuProgram>> programs_; // [max_programs], each written once before its first use
  Aligned<std::uint32_t> quit_;                       // Rings::quit
  resident::Rings rings_;
  std::mutex failure_mutex_;
  std::vector<std::exception_ptr> failures_; // per completion slot: what a worker threw in that ticket's run
  std::vector<std::jthread> workers_;
};

// A worker that throws (out of memory, say) aborts the run, so the other workers leave at their next check and the
// last one resets the program's arena; the exception is kept for the ticket's wait(). Nothing escapes the thread.
bool CpuWorker::run(std::uint32_t program, std::uint64_t ticket) {
  try {
    cpu::CpuBlock blk(record_.view, record_.params, index_, owner_.program(program).forward);
    return program::interpret(blk);
  } catch (...) {
    owner_.fail(ticket, std::current_exception());
    protocol::abort_run(reinterpret_cast<program::ControlBlock*>(record_.view.state));
    return false;
  }
}

} // namespace

std::unique_ptr<ResidentBackend> make_cpu_resident(std::uint32_t workers, std::uint32_t depth,
                                                   std::uint32_t max_programs, const resident::IdlePacing& idle) {
  return std::make_unique<CpuResident>(workers, depth, max_programs, idle);
}

} // namespace gridflow
