#include "scheduler/session.hpp"

#include "kernels/tile_shapes.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/device.hpp"
#include "runtime/errors.hpp"
#include "runtime/gpu_executor.hpp"
#include "runtime/lean_program.hpp"
#include "scheduler/binding.hpp"
#include "scheduler/buffer_data.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace gridflow {

std::string_view to_string(Backend b) {
  return b == Backend::cpu ? "cpu" : "gpu";
}

std::optional<Backend> parse_backend(std::string_view s) {
  if (s == "cpu")
    return Backend::cpu;
  if (s == "gpu")
    return Backend::gpu;
  return std::nullopt;
}

std::string describe(const SessionOptions& o) {
  std::string s = fmt::format("backend={} mode={} schedule={} per_tile_deps={}", to_string(o.backend),
                              to_string(o.mode), to_string(o.schedule), o.per_tile_deps ? "on" : "off");
  if (o.backend == Backend::gpu)
    s += fmt::format(" threads={} blocks_per_sm={}", o.threads_per_block,
                     o.blocks_per_sm == 0 ? std::string("auto") : std::to_string(o.blocks_per_sm));
  else
    s += fmt::format(" workers={}", o.cpu_workers == 0 ? std::string("auto") : std::to_string(o.cpu_workers));
  if (o.mode == SyncMode::sentinel)
    s += fmt::format(" sentinel_fill={}", to_string(o.exec.sentinel_fill));
  if (!o.forward)
    s += " forward=off";
  if (!o.sinks_last)
    s += " sinks_last=off";
  if (o.graph_order)
    s += " graph_order=on";
  if (o.backend == Backend::gpu && !o.exec.lean_kernel)
    s += " lean_kernel=off";
  if (o.backend == Backend::gpu && !o.exec.plain_tiles)
    s += " plain_tiles=off";
  if (o.schedule != Schedule::static_list && o.exec.claim_ahead)
    s += " claim_ahead=on";
  const auto same = [](program::PollPacing a, program::PollPacing b) {
    return a.spin_polls == b.spin_polls && a.max_sleep_ns == b.max_sleep_ns && a.check_every == b.check_every;
  };
  if (!same(o.exec.pacing, program::PollPacing{}))
    s += fmt::format(" gpu_poll(spins={} max_sleep_ns={} check_every={})", o.exec.pacing.spin_polls,
                     o.exec.pacing.max_sleep_ns, o.exec.pacing.check_every);
  if (!same(o.exec.wait_pacing, program::kSpinPacing))
    s += fmt::format(" gpu_wait(spins={} max_sleep_ns={} check_every={})", o.exec.wait_pacing.spin_polls,
                     o.exec.wait_pacing.max_sleep_ns, o.exec.wait_pacing.check_every);
  s += fmt::format(" tiles(reduce_min={} row_elems={} short_softmax_elems={} waves={} scan_items={} scan_chunks={})",
                   o.tiles.reduce_min_tile, o.tiles.row_tile_elements, o.tiles.short_softmax_tile_elements,
                   o.tiles.waves, o.tiles.scan_items_per_thread, o.tiles.scan_chunks_per_tile);
  if (!o.tiles.lean_partials)
    s += " lean_partials=off";
  if (!o.tiles.lean_scans)
    s += " lean_scans=off";
  return s;
}

namespace {

LoweringOptions lowering_options(const SessionOptions& o) {
  LoweringOptions lo;
  lo.mode = o.mode;
  lo.schedule = o.schedule;
  lo.per_tile_deps = o.per_tile_deps;
  lo.forward = o.forward;
  lo.sinks_last = o.sinks_last;
  lo.graph_order = o.graph_order;
  lo.tiles = o.tiles;
  lo.threads_per_block = o.threads_per_block;
  return lo;
}

// The most tiles any level of `p` has: how many blocks it can keep busy at once.
std::uint32_t widest_level(const LoweredProgram& p) {
  std::uint32_t widest = 0;
  for (std::size_t l = 0; l + 1 < p.level_begin.size(); ++l)
    widest = std::max(widest, p.level_begin[l + 1] - p.level_begin[l]);
  return widest;
}

// With blocks_per_sm left to gridflow: a program for the lean megakernel on static lists whose every level fits one
// block per SM runs on one block per SM, so no two of its busy blocks share an SM's schedulers.
bool one_block_per_sm_suffices(const SessionOptions& o, const GpuShape& shape, const LoweredProgram& p) {
  return o.blocks_per_sm == 0 && shape.blocks_per_sm > 1 && o.exec.lean_kernel && p.schedule == Schedule::static_list &&
         lean_program(p, shape.threads_per_block) && widest_level(p) <= shape.sm_count;
}

// With blocks_per_sm left to gridflow: a program for the lean row kernel with more tiles in some level than the
// default grid has blocks runs on as many blocks per SM as that kernel is built for (lean_row_blocks_per_sm), so each
// SM has that many rows in flight; a block that waits leaves its SM to the others.
bool more_blocks_per_sm_help(const SessionOptions& o, const GpuShape& device, const GpuShape& shape,
                             const LoweredProgram& p) {
  return o.blocks_per_sm == 0 && o.exec.lean_kernel && lean_row_blocks_per_sm(device) > shape.blocks_per_sm &&
         lean_row_program(p, shape.threads_per_block) && widest_level(p) > shape.grid_blocks;
}

} // namespace

GpuPlan lower_for_gpu(const Graph& graph, const Analysis& analysis, const SessionOptions& o, const GpuShape& device,
                      const std::string& device_name) {
  if (o.threads_per_block != device.threads_per_block)
    throw RuntimeError(fmt::format("{}: described at {} threads per block, not at the {} asked for", device_name,
                                   device.threads_per_block, o.threads_per_block));
  LoweringOptions lo = lowering_options(o);
  GpuPlan plan;
  plan.shape = fit_gpu_shape(device, o.blocks_per_sm, device_name);
  lo.grid_blocks = plan.shape.grid_blocks;
  lo.tiles.scan_items_per_thread =
      static_cast<std::uint32_t>(kernels::scan_items_for(static_cast<int>(plan.shape.threads_per_block)));
  plan.program = lower(graph, analysis, lo);
  const auto relower = [&](std::uint32_t blocks_per_sm) {
    plan.shape = fit_gpu_shape(device, blocks_per_sm, device_name);
    lo.grid_blocks = plan.shape.grid_blocks;
    plan.program = lower(graph, analysis, lo);
  };
  if (one_block_per_sm_suffices(o, plan.shape, plan.program))
    relower(1);
  else if (more_blocks_per_sm_help(o, device, plan.shape, plan.program))
    relower(lean_row_blocks_per_sm(device));
  if (plan.shape.blocks_per_sm > device.max_blocks_per_sm &&
      !(o.exec.lean_kernel && lean_row_program(plan.program, plan.shape.threads_per_block)))
    throw RuntimeError(fmt::format(
        "{} blocks per SM of {} threads: only the lean row kernel (lean row tiles only, no whole-range reduce or scan, "
        "not sentinel mode) fits that many on {}; this program runs on the general megakernel, which fits {}",
        plan.shape.blocks_per_sm, plan.shape.threads_per_block, device_name, device.max_blocks_per_sm));
  return plan;
}

RunPlan plan_run(const Graph& graph, const SessionOptions& o) {
  RunPlan plan;
  plan.analysis = analyze(graph);
  for (const Buffer& b : graph.buffers()) {
    check_init_file(b, o.files);
    if (!b.save.empty())
      check_save_target(o.files, b.name, b.save);
  }
  std::uint64_t device_free = 0;
  if (o.backend == Backend::cpu) {
    LoweringOptions lo = lowering_options(o);
    const std::uint32_t hw = std::max(2u, std::thread::hardware_concurrency());
    lo.grid_blocks = o.cpu_workers ? o.cpu_workers : hw;
    plan.program = lower(graph, plan.analysis, lo);
  } else {
    const DeviceInfo dev = probe_gpu();
    GpuPlan gpu =
        lower_for_gpu(graph, plan.analysis, o, plan_gpu_shape(o.threads_per_block, o.blocks_per_sm), dev.name);
    plan.program = std::move(gpu.program);
    plan.shape = gpu.shape;
    device_free = dev.free_memory;
  }
  plan.memory = memory_needed(graph, plan.program, {o.backend == Backend::gpu, o.will_check, o.exec.trace});
  check_memory_budget(graph, plan.memory, o.max_memory, host_memory_available(), device_free);
  return plan;
}

Session::Session(Graph graph, SessionOptions options) : graph_(std::move(graph)), options_(std::move(options)) {
  RunPlan plan = plan_run(graph_, options_);
  analysis_ = std::move(plan.analysis);
  memory_ = std::move(plan.memory);
  bound_.assign(graph_.buffers().size(), false);
  stale_.assign(graph_.buffers().size(), true);
  if (options_.backend == Backend::cpu)
    executor_ = std::make_unique<CpuExecutor>(std::move(plan.program));
  else
    executor_ = make_gpu_executor(std::move(plan.program), plan.shape);
  spdlog::debug("session: {} tasks -> {} tiles on {}", graph_.tasks().size(), program().tiles.size(),
                executor_->describe());
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const LoweredProgram& Session::program() const {
  return executor_->program();
}

std::string Session::describe() const {
  std::string options = gridflow::describe(options_);
  if (options_.schedule == Schedule::automatic) // say what the lowering chose
    options.replace(options.find("schedule=auto"), 13, fmt::format("schedule=auto({})", to_string(program().schedule)));
  return fmt::format("{} | {}", executor_->describe(), options);
}

const std::vector<HostTensor>& Session::initial() const {
  if (initial_.empty()) {
    initial_.reserve(graph_.buffers().size());
    for (std::size_t b = 0; b < graph_.buffers().size(); ++b)
      initial_.push_back(bound_[b] ? HostTensor(graph_.buffers()[b].dtype, 0)
                                   : initial_data(graph_.buffers()[b], options_.files));
  }
  return initial_;
}

std::uint32_t Session::buffer_index(std::string_view name) const {
  const auto it = analysis_.buffer_index.find(std::string(name));
  if (it == analysis_.buffer_index.end())
    throw_buffer_error(name, "name", std::string(name), "the graph has no such buffer");
  return it->second;
}

void Session::bind(std::string_view name, const ExternalTensor& memory) {
  const std::uint32_t b = buffer_index(name);
  executor_->bind(b, plan_binding(graph_.buffers()[b], memory, executor_->memory_device()));
  bound_[b] = true;
  stale_[b] = false;
  if (!initial_.empty())
    initial_[b] = HostTensor(graph_.buffers()[b].dtype, 0); // the caller's memory is the buffer's contents now
}

void Session::unbind(std::string_view name) {
  const std::uint32_t b = buffer_index(name);
  executor_->bind(b, BoundMemory{});
  bound_[b] = false;
  stale_[b] = true;
  initial_.clear(); // made again, with this buffer's initial contents, when next needed
}

bool Session::is_bound(std::string_view name) const {
  return bound_[buffer_index(name)];
}

void Session::upload(std::string_view name, const HostTensor& data) {
  const std::uint32_t b = buffer_index(name);
  executor_->upload(b, data);
  stale_[b] = false;
}

HostTensor Session::download(std::string_view name) {
  HostTensor t;
  executor_->download(buffer_index(name), t);
  return t;
}

void Session::fill_unbound(bool only_stale) {
  const std::vector<HostTensor>& init = initial();
  std::vector<bool> output(init.size(), false);
  for (std::size_t i = 0; i < graph_.tasks().size(); ++i)
    output[analysis_.out[i].buffer] = true;
  for (std::uint32_t b = 0; b < init.size(); ++b) {
    if (bound_[b] || (only_stale && !stale_[b]))
      continue;
    executor_->upload(b, init[b]);
    // Poison every task output, so an element the run never wrote cannot pass the check.
    if (output[b] && std::holds_alternative<std::monostate>(graph_.buffers()[b].init))
      executor_->fill_bits(b, poison_bits(graph_.buffers()[b].dtype));
    stale_[b] = false;
  }
  buffers_taken_ = false;
}

void Session::reset_buffers() {
  fill_unbound(false);
}

RunResult Session::run(const ExecOptions& exec) {
  results_.clear(); // the last results go before the buffers are filled again: one host copy beyond the run's
  results_.shrink_to_fit();
  reset_buffers();
  RunResult r = executor_->run(exec);
  results_.resize(graph_.buffers().size());
  for (std::uint32_t b = 0; b < results_.size(); ++b) {
    if (bound_[b])
      continue;
    executor_->take(b, results_[b]);
    stale_[b] = true; // a run_async after this run starts from the initial contents again
  }
  buffers_taken_ = executor_->take_moves();
  return r;
}

void Session::run_async(StreamHandle stream) {
  if (executor_->in_flight())
    throw RuntimeError("run_async: a run of this session is in flight; wait() for it first");
  // A run() leaves every unbound buffer stale (the CPU executor's were handed over as the results).
  if (std::find(stale_.begin(), stale_.end(), true) != stale_.end()) {
    fill_unbound(true);
    // The host copies are made again when asked for (run, check, initial): nothing is kept for the runs.
    initial_.clear();
    initial_.shrink_to_fit();
  }
  executor_->enqueue(options_.exec, stream);
}

RunResult Session::wait() {
  return executor_->finish();
}

std::vector<RunResult> Session::time(int warmup, int repeat, bool trace) {
  if (buffers_taken_) {
    for (std::uint32_t b = 0; b < results_.size(); ++b)
      if (!bound_[b])
        executor_->upload(b, results_[b]);
    buffers_taken_ = false;
  }
  ExecOptions o = options_.exec;
  o.trace = false;
  for (int i = 0; i < warmup; ++i)
    executor_->run(o);
  o.trace = trace;
  std::vector<RunResult> out;
  out.reserve(static_cast<std::size_t>(repeat));
  for (int i = 0; i < repeat; ++i)
    out.push_back(executor_->run(o));
  return out;
}

CheckReport Session::check() const {
  if (results_.empty())
    throw RuntimeError("check: the session has not run yet");
  for (std::size_t b = 0; b < bound_.size(); ++b)
    if (bound_[b])
      throw RuntimeError(fmt::format("check: buffer '{}' is bound to caller memory: the check needs every buffer's "
                                     "contents before and after the run on the host",
                                     printable(graph_.buffers()[b].name)));
  return check_outputs(graph_, analysis_, initial(), results_);
}

std::vector<std::filesystem::path> Session::save_outputs() const {
  std::vector<std::filesystem::path> written;
  for (std::size_t b = 0; b < graph_.buffers().size(); ++b) {
    const Buffer& buf = graph_.buffers()[b];
    if (buf.save.empty() || b >= results_.size())
      continue;
    if (bound_[b])
      throw RuntimeError(
          fmt::format("save: buffer '{}' is bound to caller memory; download() it to save it", printable(buf.name)));
    written.push_back(save_tensor(results_[b], options_.files, buf.name, buf.save));
  }
  return written;
}

} // namespace gridflow
