// A Session runs one graph end to end: analyze, pick the target shape, lower, bind an executor, upload the
// initial data, run, download, check against the references, save outputs. The CLI, the examples, the tests
// and the benchmarks all go through it, so they all run the same path.
#pragma once

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
  bool forward = true; // static schedule: on-chip forwarding of rows (LoweringOptions::forward)
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

  // Initial contents of every buffer (generators, files, host data; outputs poisoned).
  const std::vector<HostTensor>& initial() const { return initial_; }

  // Uploads the initial data (every output poisoned), runs once, and makes every buffer's contents the results().
  // The CPU backend hands its buffers over without a copy; the GPU backend downloads them.
  RunResult run() { return run(options_.exec); }
  // Fills the executor's buffers as a run starts from: the initial data, every task output poisoned.
  void reset_buffers();
  // The same with other execution options for this run only (same executor and state arena).
  RunResult run(const ExecOptions& exec);
  // Runs `warmup + repeat` more times over whatever the last run left in the buffers (timing only; results() is
  // not refreshed; on the CPU backend the buffers are first copied back from results()) and returns the `repeat`
  // timed runs.
  std::vector<RunResult> time(int warmup, int repeat, bool trace = false);

  const std::vector<HostTensor>& results() const { return results_; }
  CheckReport check() const; // results() against the float64 references
  // Writes every buffer with a `save` path under options().files (checked when the session was made; every write
  // checked to the end). Returns the paths written.
  std::vector<std::filesystem::path> save_outputs() const;

private:
  Graph graph_;
  SessionOptions options_;
  Analysis analysis_;
  MemoryNeed memory_;
  std::unique_ptr<Executor> executor_;
  std::vector<HostTensor> initial_;
  std::vector<HostTensor> results_;
  bool buffers_taken_ = false; // the CPU executor's buffers became results_ and must be uploaded before a run
};

} // namespace gridflow
