#include "scheduler/resident_session.hpp"

#include "runtime/errors.hpp"
#include "scheduler/binding.hpp"
#include "scheduler/buffer_data.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/lowering.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace gridflow {

namespace {

std::uint64_t host_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::uint32_t cpu_workers(std::uint32_t requested) {
  return requested != 0 ? requested : std::max(2u, std::thread::hardware_concurrency());
}

// A host wait spins this many polls (about 100 us), then yields, then sleeps.
constexpr std::uint32_t kSpinPolls = 20'000;
constexpr std::uint32_t kYieldPolls = kSpinPolls + 2'000;
// How long pending tickets may see no completion before the servers count as gone, beyond the longest watchdog.
constexpr std::chrono::seconds kAnswerGrace{10};

} // namespace

ResidentOptions resident_options(const SessionOptions& o, std::uint32_t depth) {
  ResidentOptions r;
  r.backend = o.backend;
  r.cpu_workers = o.cpu_workers;
  r.threads_per_block = o.threads_per_block;
  r.blocks_per_sm = o.blocks_per_sm;
  r.depth = depth;
  r.files = o.files;
  r.max_memory = o.max_memory;
  return r;
}

ResidentProgramOptions program_options(const SessionOptions& o) {
  ResidentProgramOptions p;
  p.mode = o.mode;
  p.schedule = o.schedule;
  p.per_tile_deps = o.per_tile_deps;
  p.tiles = o.tiles;
  p.timeout_ns = o.exec.timeout_ns;
  p.pacing = o.exec.pacing;
  p.wait_pacing = o.exec.wait_pacing;
  return p;
}

struct ResidentSession::Program {
  Graph graph;
  Analysis analysis;
  LoweredProgram program;
  std::vector<void*> own; // the buffer table of a submission without bindings
};

ResidentSession::ResidentSession(ResidentOptions options) : options_(std::move(options)) {
  if (options_.depth == 0 || options_.depth > 65536)
    throw GraphError(fmt::format("resident depth = {}: the ring holds 1 to 65536 submissions", options_.depth));
  if (options_.max_programs == 0 || options_.max_programs > resident::kMaxPrograms)
    throw GraphError(fmt::format("resident max_programs = {}: 1 to {}", options_.max_programs, resident::kMaxPrograms));
  if (options_.backend == Backend::cpu) {
    backend_ =
        make_cpu_resident(cpu_workers(options_.cpu_workers), options_.depth, options_.max_programs, options_.idle);
  } else {
    shape_ = plan_gpu_shape(options_.threads_per_block, options_.blocks_per_sm);
    backend_ = make_gpu_resident(shape_, options_.depth, options_.max_programs, options_.idle);
  }
  slot_program_.assign(options_.depth, resident::kPing);
  slot_submitted_.assign(options_.depth, 0);
}

ResidentSession::~ResidentSession() {
  try {
    stop();
  } catch (const std::exception& e) {
    spdlog::error("resident session: stopping at destruction failed: {}", e.what());
  }
}

bool ResidentSession::running() const {
  const std::lock_guard lock(mutex_);
  return running_;
}

std::string ResidentSession::describe() const {
  return fmt::format("{}, ring of {} submissions", backend_->describe(), options_.depth);
}

void ResidentSession::start() {
  {
    const std::lock_guard lock(mutex_);
    if (running_)
      throw RuntimeError("resident session: already running");
    if (!closed_.empty())
      throw RuntimeError("resident session: closed after a fault: " + closed_);
    backend_->launch();
    running_ = true;
    base_ = next_;
    harvested_ = next_;
    progress_ = std::chrono::steady_clock::now();
  }
  calibrate();
}

void ResidentSession::calibrate() {
  if (options_.backend == Backend::cpu)
    return; // the workers read the host's own clock
  // The executor's clock against the host's: the ping with the shortest round trip brackets the moment block 0
  // published it most tightly.
  std::uint64_t best = ~std::uint64_t{0};
  std::int64_t offset = 0;
  clock_offset_ns_ = 0;
  for (int i = 0; i < 16; ++i) {
    const std::uint64_t h0 = host_ns();
    const ResidentResult r = ping();
    const std::uint64_t h1 = r.seen_ns;
    if (h1 - h0 < best) {
      best = h1 - h0;
      offset = static_cast<std::int64_t>(r.published_ns) - static_cast<std::int64_t>(h0 + (h1 - h0) / 2);
    }
  }
  const std::lock_guard lock(mutex_);
  clock_offset_ns_ = offset;
  uncertainty_ns_ = best / 2;
}

ResidentResult ResidentSession::ping() {
  std::unique_lock lock(mutex_);
  const Ticket t = *post(lock, 0, {}, program::kNoTile, true, resident::kPing);
  lock.unlock();
  return wait(t);
}

void ResidentSession::stop() {
  std::unique_lock lock(mutex_);
  if (!running_)
    return;
  const Ticket t = *post(lock, 0, {}, program::kNoTile, true, resident::kStop);
  std::uint32_t polls = 0;
  while (running_ && harvested_ <= t) {
    harvest();
    if (harvested_ <= t)
      pause(lock, polls);
  }
  outcomes_.erase(t);
  const bool stopped = running_;
  running_ = false;
  if (stopped && !backend_->join(std::chrono::nanoseconds(max_timeout_ns_) + kAnswerGrace))
    closed_ = "the resident kernel did not end after its stop submission";
}

ResidentSession::Handle ResidentSession::add(const Graph& graph, const ResidentProgramOptions& po) {
  SessionOptions so;
  so.backend = options_.backend;
  so.mode = po.mode;
  // Static lists unless asked otherwise where they let a run take only the blocks it has tiles on (flags mode): a
  // resident run then wakes only those (runtime/resident.hpp: participants).
  so.schedule = po.schedule == Schedule::automatic && po.mode == SyncMode::flags ? Schedule::static_list : po.schedule;
  so.per_tile_deps = po.per_tile_deps;
  so.tiles = po.tiles;
  so.cpu_workers = options_.backend == Backend::cpu ? backend_->grid() : 0;
  so.threads_per_block = options_.threads_per_block;
  so.blocks_per_sm = options_.backend == Backend::gpu ? shape_.blocks_per_sm : 0;
  so.exec.timeout_ns = po.timeout_ns;
  so.exec.pacing = po.pacing;
  so.exec.wait_pacing = po.wait_pacing;
  so.exec.lean_kernel = false; // planned on the runtime's grid (a lean launch may pick another); its lean row tiles
                               // still run lean in the resident kernel (runtime/resident.hpp: runs_lean)
  so.files = options_.files;
  so.max_memory = options_.max_memory;
  if (po.timeout_ns == 0)
    throw GraphError("resident timeout_ns = 0: a resident run needs a watchdog (it holds the runtime while it waits)");
  if (graph.buffers().size() > resident::kMaxBuffers)
    throw RuntimeError(fmt::format("graph '{}' has {} buffers; a resident program holds at most {}", graph.name(),
                                   graph.buffers().size(), resident::kMaxBuffers));
  RunPlan plan = plan_run(graph, so);
  if (plan.program.grid_blocks != backend_->grid())
    throw RuntimeError(fmt::format("resident session: the program was lowered for {} blocks, the runtime has {}",
                                   plan.program.grid_blocks, backend_->grid()));
  auto p = std::make_unique<Program>();
  p->graph = graph;
  p->analysis = std::move(plan.analysis);
  p->program = std::move(plan.program);
  nonempty_lists_first(p->program);
  const std::vector<HostTensor> initial = initial_data(p->graph, options_.files);

  const std::lock_guard lock(mutex_);
  if (programs_.size() >= options_.max_programs)
    throw RuntimeError(fmt::format("resident session: the program table is full ({} programs)", options_.max_programs));
  const auto h = static_cast<Handle>(programs_.size());
  backend_->add(h, p->program, so.exec, initial);
  for (std::uint32_t b = 0; b < p->program.buffers.size(); ++b)
    p->own.push_back(backend_->own_buffer(h, b));
  max_timeout_ns_ = std::max(max_timeout_ns_, po.timeout_ns);
  programs_.push_back(std::move(p));
  return h;
}

const LoweredProgram& ResidentSession::program(Handle h) const {
  const std::lock_guard lock(mutex_);
  if (h >= programs_.size())
    throw RuntimeError(fmt::format("resident session: no program {}", h));
  return programs_[h]->program;
}

const Graph& ResidentSession::graph(Handle h) const {
  const std::lock_guard lock(mutex_);
  if (h >= programs_.size())
    throw RuntimeError(fmt::format("resident session: no program {}", h));
  return programs_[h]->graph;
}

std::uint32_t ResidentSession::buffer_index(const Program& p, std::string_view name) const {
  const auto it = p.analysis.buffer_index.find(std::string(name));
  if (it == p.analysis.buffer_index.end())
    throw_buffer_error(name, "name", std::string(name), "the graph has no such buffer");
  return it->second;
}

ResidentSession::Ticket ResidentSession::submit(Handle h, const std::vector<Binding>& bindings,
                                                std::uint32_t fault_tile) {
  std::unique_lock lock(mutex_);
  return *post(lock, h, bindings, fault_tile, true, h);
}

std::optional<ResidentSession::Ticket> ResidentSession::try_submit(Handle h, const std::vector<Binding>& bindings,
                                                                   std::uint32_t fault_tile) {
  std::unique_lock lock(mutex_);
  return post(lock, h, bindings, fault_tile, false, h);
}

std::optional<ResidentSession::Ticket> ResidentSession::post(std::unique_lock<std::mutex>& lock, Handle h,
                                                             const std::vector<Binding>& bindings,
                                                             std::uint32_t fault_tile, bool block,
                                                             std::uint32_t program_id) {
  void* table[resident::kMaxBuffers] = {};
  bool payload = fault_tile != program::kNoTile; // else only for bindings: the record has the program's own table
  if (program_id < resident::kPing) {
    if (h >= programs_.size())
      throw RuntimeError(fmt::format("resident session: no program {}", h));
    const Program& p = *programs_[h];
    std::copy(p.own.begin(), p.own.end(), table);
    for (const Binding& bind : bindings) {
      const std::uint32_t b = buffer_index(p, bind.buffer);
      const BoundMemory m = plan_binding(p.graph.buffers()[b], bind.memory, backend_->memory_device());
      if (m.staged)
        throw_buffer_error(bind.buffer, "bind.data", fmt::format("{}", bind.memory.data),
                           "a resident submission needs memory its tiles address directly (contiguous rows, "
                           "16-byte aligned)");
      if (m.data != nullptr)
        table[b] = m.data;
      payload = true;
    }
  }
  std::uint32_t polls = 0;
  for (;;) {
    if (!running_)
      throw RuntimeError(closed_.empty() ? std::string("resident session: not running (start() it)")
                                         : "resident session: closed after a fault: " + closed_);
    if (next_ - harvested_ < options_.depth)
      break;
    harvest();
    if (next_ - harvested_ < options_.depth)
      break;
    if (!block)
      return std::nullopt;
    pause(lock, polls);
  }
  const Ticket t = next_++;
  const std::uint64_t k = t - base_;
  const std::uint32_t slot_index = static_cast<std::uint32_t>(k % options_.depth);
  resident::Submission& slot = backend_->submissions()[slot_index];
  if (payload) {
    slot.program = program_id;
    slot.fault_skip_signal_tile = fault_tile;
    std::copy(std::begin(table), std::end(table), slot.buffers);
  }
  slot_program_[slot_index] = program_id;
  slot_submitted_[slot_index] = host_ns();
  std::atomic_ref<std::uint64_t>(slot.seq).store(resident::doorbell(k, program_id, payload), std::memory_order_release);
  return t;
}

void ResidentSession::harvest() {
  while (harvested_ < next_) {
    const std::uint64_t k = harvested_ - base_;
    const auto slot_index = static_cast<std::uint32_t>(k % options_.depth);
    resident::Completion& c = backend_->completions()[slot_index];
    if (std::atomic_ref<std::uint64_t>(c.seq).load(std::memory_order_acquire) != k + 1)
      return;
    Outcome o;
    const auto host = [&](std::uint64_t device) {
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(device) - clock_offset_ns_);
    };
    o.result.ticket = harvested_;
    o.result.submitted_ns = slot_submitted_[slot_index];
    o.result.published_ns = host(c.published_ns);
    o.result.first_ns = host(c.first_ns);
    o.result.done_ns = host(c.done_ns);
    o.result.seen_ns = host_ns();
    o.result.lean_tiles = c.lean_tiles != 0;
    o.error = c.error;
    o.program = slot_program_[slot_index];
    o.failure = backend_->take_failure(k);
    outcomes_.emplace(harvested_, std::move(o));
    ++harvested_;
    progress_ = std::chrono::steady_clock::now();
  }
}

void ResidentSession::pause(std::unique_lock<std::mutex>& lock, std::uint32_t& polls) {
  ++polls;
  if (polls > kSpinPolls) {
    lock.unlock();
    if (polls < kYieldPolls)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    lock.lock();
  } else {
    lock.unlock();
    lock.lock(); // lets other host threads in between polls
  }
  if (polls % 1024 != 0 || !running_)
    return;
  try {
    backend_->check_alive();
  } catch (const RuntimeError& e) {
    fail_pending(e.what());
    return;
  }
  const auto quiet = std::chrono::steady_clock::now() - progress_;
  if (harvested_ < next_ && quiet > std::chrono::nanoseconds(max_timeout_ns_) * 2 + kAnswerGrace)
    fail_pending(fmt::format("the resident runtime answered nothing for {:.1f} s with {} submissions pending",
                             std::chrono::duration<double>(quiet).count(), next_ - harvested_));
}

void ResidentSession::fail_pending(const std::string& why) {
  spdlog::error("resident session: {}", why);
  closed_ = why;
  running_ = false;
  for (; harvested_ < next_; ++harvested_) {
    Outcome o;
    o.result.ticket = harvested_;
    o.program = slot_program_[(harvested_ - base_) % options_.depth];
    o.failure = std::make_exception_ptr(RuntimeError("resident session closed: " + why));
    outcomes_.emplace(harvested_, std::move(o));
  }
}

ResidentResult ResidentSession::settle(Outcome o) {
  if (o.failure)
    std::rethrow_exception(o.failure);
  if (o.error.code != 0) {
    const std::lock_guard lock(mutex_);
    throw DeviceError(o.error, programs_.at(o.program)->program);
  }
  return o.result;
}

std::optional<ResidentResult> ResidentSession::try_wait(Ticket t) {
  std::unique_lock lock(mutex_);
  harvest();
  const auto it = outcomes_.find(t);
  if (it == outcomes_.end()) {
    if (t >= next_)
      throw RuntimeError(fmt::format("resident session: no ticket {} was issued", t));
    if (t < harvested_)
      throw RuntimeError(fmt::format("resident session: ticket {} was already waited for", t));
    return std::nullopt;
  }
  Outcome o = std::move(it->second);
  outcomes_.erase(it);
  lock.unlock();
  return settle(std::move(o));
}

ResidentResult ResidentSession::wait(Ticket t) {
  std::unique_lock lock(mutex_);
  std::uint32_t polls = 0;
  for (;;) {
    harvest();
    const auto it = outcomes_.find(t);
    if (it != outcomes_.end()) {
      Outcome o = std::move(it->second);
      outcomes_.erase(it);
      lock.unlock();
      return settle(std::move(o));
    }
    if (t >= next_)
      throw RuntimeError(fmt::format("resident session: no ticket {} was issued", t));
    if (t < harvested_)
      throw RuntimeError(fmt::format("resident session: ticket {} was already waited for", t));
    pause(lock, polls);
  }
}

void ResidentSession::drain(std::unique_lock<std::mutex>& lock) {
  std::uint32_t polls = 0;
  for (;;) {
    harvest();
    if (harvested_ == next_)
      return;
    pause(lock, polls);
  }
}

void ResidentSession::wait_all() {
  std::unique_lock lock(mutex_);
  drain(lock);
  std::map<Ticket, Outcome> done = std::move(outcomes_);
  outcomes_.clear();
  lock.unlock();
  for (auto& [t, o] : done)
    settle(std::move(o));
}

void ResidentSession::upload(Handle h, std::string_view name, const HostTensor& data) {
  std::unique_lock lock(mutex_);
  if (h >= programs_.size())
    throw RuntimeError(fmt::format("resident session: no program {}", h));
  const Program& p = *programs_[h];
  const std::uint32_t b = buffer_index(p, name);
  const BufferInfo& info = p.program.buffers[b];
  if (data.dtype() != info.dtype || data.size() != info.elements)
    throw RuntimeError(fmt::format("upload: buffer '{}' has the wrong dtype or size", info.name));
  drain(lock);
  backend_->upload(h, b, data);
}

HostTensor ResidentSession::download(Handle h, std::string_view name) {
  std::unique_lock lock(mutex_);
  if (h >= programs_.size())
    throw RuntimeError(fmt::format("resident session: no program {}", h));
  const Program& p = *programs_[h];
  const std::uint32_t b = buffer_index(p, name);
  drain(lock);
  HostTensor t(p.program.buffers[b].dtype, p.program.buffers[b].elements);
  backend_->download(h, b, t);
  return t;
}

} // namespace gridflow
