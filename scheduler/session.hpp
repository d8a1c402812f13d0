// A Session runs one graph end to end: analyze, pick the target shape, lower, bind an executor, upload the
// initial data, run, download, check against the references, save outputs. The CLI, the examples, the tests
// and the benchmarks all go through it, so they all run the same path.
//
// Between a caller's own kernels, a session runs over the caller's memory and stream instead: bind() a buffer to
// memory the caller owns (a DLPack tensor's description; the session neither copies nor poisons it), then
// run_async(stream) and wait(). Host copies happen only where asked (upload, download, run, check).
#pragma once

#include "runtime/binding.hpp"
#include "runtime/executor.hpp"
#include "runtime/gpu_executor.hpp"
#include "runtime/host_tensor.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/file_access.hpp"
#include "scheduler/graph.hpp"
#include "scheduler/lowering.hpp"
#include "scheduler/memory_budget.hpp"
#include "scheduler/reference_check.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridflow {

enum class Backend { cpu, gpu };
std::string_view to_string(Backend);
std::optional<Backend> parse_backend(std::string_view); // "cpu", "gpu"

struct SessionOptions {
  Backend backend = Backend::cpu;
  SyncMode mode = SyncMode::flags;
  Schedule schedule = Schedule::automatic;
  std::uint32_t cpu_workers = 0;         // CPU: 0 = hardware threads, at least 2
  std::uint32_t threads_per_block = 256; // GPU
  std::uint32_t blocks_per_sm = 0;       // GPU: 0 = default (gpu_executor.hpp; 1 where it suffices: session.cpp)
  bool per_tile_deps = true;
  bool forward = true;      // static schedule: on-chip forwarding of rows (LoweringOptions::forward)
  bool sinks_last = true;   // static schedule: sink tasks' tiles placed last (LoweringOptions::sinks_last)
  bool graph_order = false; // static schedule: tiles placed in graph order (LoweringOptions::graph_order)
  TilePolicy tiles;
  ExecOptions exec;
  FilePolicy files;             // where init files are read and saves are written (file_access.hpp)
  std::uint64_t max_memory = 0; // bytes a run may take in host (and device) memory; 0: what the machine has
  bool will_check = false;      // the memory budget counts the float64 reference check (the CLI's --check)
};

// Everything a run checks before it allocates or runs anything: the graph (analyze), its init files (opened, kind
// and size) and save targets, the device program's limits (lower) and the memory budget. `gridflow validate`
// stops here; a Session starts here. Throws GraphError for bad input, RuntimeError when the backend cannot run it.
struct RunPlan {
  Analysis analysis;
  LoweredProgram program;
  GpuShape shape;    // GPU backend: the launch shape the program was lowered for
  MemoryNeed memory; // what a run takes (memory_budget.hpp)
};
RunPlan plan_run(const Graph& graph, const SessionOptions& options);

// The GPU half of plan_run's lowering, for a GPU described by `device` (its SM count and the megakernel's occupancy
// limit at device.threads_per_block, as plan_gpu_shape found them there; runtime/gpu_executor.hpp) without asking a
// GPU: the program plan_run lowers on such a GPU and the launch shape it picks. Throws RuntimeError when the options'
// threads per block are not the device description's or the shape cannot be co-resident.
struct GpuPlan {
  LoweredProgram program;
  GpuShape shape;
};
GpuPlan lower_for_gpu(const Graph& graph, const Analysis& analysis, const SessionOptions& options,
                      const GpuShape& device, const std::string& device_name);

// One line naming everything a measurement depends on.
std::string describe(const SessionOptions& options);

class Session {
public:
  // Validates and lowers; throws GraphError for bad input, RuntimeError when the backend cannot run it.
  Session(Graph graph, SessionOptions options);
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const Graph& graph() const { return graph_; }
  const Analysis& analysis() const { return analysis_; }
  const SessionOptions& options() const { return options_; }
  const LoweredProgram& program() const;
  Executor& executor() { return *executor_; }
  std::string describe() const; // backend, device and configuration

  const MemoryNeed& memory() const { return memory_; }

  // Initial contents of every buffer (generators, files, host data; outputs poisoned), made when first asked for;
  // a bound buffer's is empty (its contents are the caller's).
  const std::vector<HostTensor>& initial() const;

  // Buffer `name` holds caller memory from now on: checked as scheduler/binding.hpp says (a mismatch throws
  // GraphError naming the buffer, the field and the value, and binds nothing), then run on directly or, for strided
  // or unaligned memory, staged through the session's own copy on the run's stream. Bound buffers are never
  // copied to or from the host, nor poisoned, by a run. The memory must stay valid while bound.
  void bind(std::string_view name, const ExternalTensor& memory);
  // The buffer on the session's own memory again, set to its initial contents at the next run.
  void unbind(std::string_view name);
  bool is_bound(std::string_view name) const;
  // A buffer's contents, from the host or to it (of the caller's memory when bound): synchronous copies on the
  // session's own stream, not ordered with work on the caller's streams. GraphError for an unknown name;
  // RuntimeError for a tensor of the wrong dtype or size, or while a run is in flight.
  void upload(std::string_view name, const HostTensor& data);
  HostTensor download(std::string_view name);

  // Enqueues one run on `stream` (a cudaStream_t; the CPU backend runs it on a thread of its own) after the work
  // before it and before the work after it, with no device-wide synchronization and no host copy: bound buffers
  // as the caller left them; unbound ones with their initial contents (outputs poisoned) at the first run_async
  // and after a run() or unbind(), else as the last run or upload() left them. Throws RuntimeError while a
  // run is in flight (one at a time: wait() first).
  void run_async(StreamHandle stream);
  // Waits for the run run_async enqueued and returns it, or throws what run() throws for it (DeviceError for a
  // device-side error or a watchdog report of that run, RuntimeError for a CUDA fault). results() is not changed.
  RunResult wait();

  // Uploads the initial data (every output poisoned), runs once, and makes every unbound buffer's contents the
  // results() (a bound buffer's entry is empty). The CPU backend hands its buffers over without a copy; the GPU
  // backend downloads them.
  RunResult run() { return run(options_.exec); }
  // Fills the executor's unbound buffers as a run starts from: the initial data, every task output poisoned.
  void reset_buffers();
  // The same with other execution options for this run only (same executor and state arena).
  RunResult run(const ExecOptions& exec);
  // Runs `warmup + repeat` more times over whatever the last run left in the buffers (timing only; results() is
  // not refreshed; on the CPU backend the buffers are first copied back from results()) and returns the `repeat`
  // timed runs.
  std::vector<RunResult> time(int warmup, int repeat, bool trace = false);

  const std::vector<HostTensor>& results() const { return results_; }
  // results() against the float64 references. RuntimeError before a run() or with a buffer bound (the check needs
  // every buffer's contents before and after the run).
  CheckReport check() const;
  // Writes every buffer with a `save` path under options().files (checked when the session was made; every write
  // checked to the end). Returns the paths written. RuntimeError for a bound buffer with a save path.
  std::vector<std::filesystem::path> save_outputs() const;

private:
  std::uint32_t buffer_index(std::string_view name) const; // GraphError for an unknown name
  // Sets unbound buffers to their initial contents (outputs poisoned): every one, or (`only_stale`) those whose
  // contents a run() or unbind() left unspecified.
  void fill_unbound(bool only_stale);

  Graph graph_;
  SessionOptions options_;
  Analysis analysis_;
  MemoryNeed memory_;
  std::unique_ptr<Executor> executor_;
  mutable std::vector<HostTensor> initial_; // made by initial() when first needed
  std::vector<HostTensor> results_;
  std::vector<bool> bound_;    // per buffer: on caller memory
  std::vector<bool> stale_;    // per buffer: needs its initial contents before a run_async
  bool buffers_taken_ = false; // the CPU executor's buffers became results_ and must be uploaded before a run
};

} // namespace gridflow
