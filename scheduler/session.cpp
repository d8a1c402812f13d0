#include "scheduler/session.hpp"

#include "kernels/tile_shapes.hpp"
#include "runtime/cpu_executor.hpp"
#include "runtime/device.hpp"
#include "runtime/errors.hpp"
#include "runtime/gpu_executor.hpp"
#include "scheduler/buffer_data.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace gridflow {

std::string_view to_string(Backend b) { return b == Backend::cpu ? "cpu" : "gpu"; }

std::optional<Backend> parse_backend(std::string_view s) {
  if (s == "cpu") return Backend::cpu;
  if (s == "gpu") return Backend::gpu;
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
  if (o.mode == SyncMode::sentinel) s += fmt::format(" sentinel_fill={}", to_string(o.exec.sentinel_fill));
  if (o.schedule == Schedule::dynamic && o.exec.claim_ahead) s += " claim_ahead=on";
  const auto same = [](program::PollPacing a, program::PollPacing b) {
    return a.spin_polls == b.spin_polls && a.max_sleep_ns == b.max_sleep_ns;
  };
  if (!same(o.exec.pacing, program::PollPacing{}))
    s += fmt::format(" gpu_poll(spins={} max_sleep_ns={})", o.exec.pacing.spin_polls, o.exec.pacing.max_sleep_ns);
  if (!same(o.exec.wait_pacing, program::kSpinPacing))
    s += fmt::format(" gpu_wait(spins={} max_sleep_ns={})", o.exec.wait_pacing.spin_polls,
                     o.exec.wait_pacing.max_sleep_ns);
  s += fmt::format(" tiles(reduce_min={} row_elems={} short_softmax_elems={} waves={} scan_items={} scan_chunks={})",
                   o.tiles.reduce_min_tile, o.tiles.row_tile_elements, o.tiles.short_softmax_tile_elements,
                   o.tiles.waves, o.tiles.scan_items_per_thread, o.tiles.scan_chunks_per_tile);
  return s;
}

Session::Session(Graph graph, SessionOptions options)
    : graph_(std::move(graph)), options_(std::move(options)), analysis_(analyze(graph_)) {
  initial_ = initial_data(graph_, options_.base_dir);
  LoweringOptions lo;
  lo.mode = options_.mode;
  lo.schedule = options_.schedule;
  lo.per_tile_deps = options_.per_tile_deps;
  lo.tiles = options_.tiles;
  if (options_.backend == Backend::cpu) {
    const std::uint32_t hw = std::max(2u, std::thread::hardware_concurrency());
    lo.grid_blocks = options_.cpu_workers ? options_.cpu_workers : hw;
    lo.threads_per_block = options_.threads_per_block;
    executor_ = std::make_unique<CpuExecutor>(lower(graph_, analysis_, lo));
  } else {
    const GpuShape shape = plan_gpu_shape(options_.threads_per_block, options_.blocks_per_sm);
    lo.grid_blocks = shape.grid_blocks;
    lo.threads_per_block = shape.threads_per_block;
    lo.tiles.scan_items_per_thread = static_cast<std::uint32_t>(kernels::scan_items_for(static_cast<int>(shape.threads_per_block)));
    executor_ = make_gpu_executor(lower(graph_, analysis_, lo), shape);
  }
  spdlog::debug("session: {} tasks -> {} tiles on {}", graph_.tasks().size(), program().tiles.size(),
                executor_->describe());
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const LoweredProgram& Session::program() const { return executor_->program(); }

std::string Session::describe() const {
  return fmt::format("{} | {}", executor_->describe(), gridflow::describe(options_));
}

RunResult Session::run(const ExecOptions& exec) {
  for (std::uint32_t b = 0; b < initial_.size(); ++b) executor_->upload(b, initial_[b]);
  // Poison every task output, so an element the run never wrote cannot pass the check.
  for (std::size_t i = 0; i < graph_.tasks().size(); ++i) {
    const std::uint32_t b = analysis_.out[i].buffer;
    if (std::holds_alternative<std::monostate>(graph_.buffers()[b].init))
      executor_->fill_bits(b, poison_bits(graph_.buffers()[b].dtype));
  }
  RunResult r = executor_->run(exec);
  results_.resize(initial_.size());
  for (std::uint32_t b = 0; b < initial_.size(); ++b) executor_->download(b, results_[b]);
  return r;
}

std::vector<RunResult> Session::time(int warmup, int repeat, bool trace) {
  ExecOptions o = options_.exec;
  o.trace = false;
  for (int i = 0; i < warmup; ++i) executor_->run(o);
  o.trace = trace;
  std::vector<RunResult> out;
  out.reserve(static_cast<std::size_t>(repeat));
  for (int i = 0; i < repeat; ++i) out.push_back(executor_->run(o));
  return out;
}

CheckReport Session::check() const {
  if (results_.empty()) throw RuntimeError("check: the session has not run yet");
  return check_outputs(graph_, analysis_, initial_, results_);
}

std::vector<std::filesystem::path> Session::save_outputs(const std::filesystem::path& dir) const {
  std::vector<std::filesystem::path> written;
  for (std::size_t b = 0; b < graph_.buffers().size(); ++b) {
    const Buffer& buf = graph_.buffers()[b];
    if (buf.save.empty() || b >= results_.size()) continue;
    const std::filesystem::path given(buf.save);
    // Outputs land where gridflow runs (inputs are read next to the graph file): a run never writes into the
    // folder of the graph it reads unless asked to.
    const std::filesystem::path path = !dir.empty() ? dir / given.filename() : given;
    save_tensor(results_[b], path);
    written.push_back(path);
  }
  return written;
}

} // namespace gridflow
