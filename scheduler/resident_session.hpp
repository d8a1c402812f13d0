// A resident runtime: the megakernel (or the CPU backend's workers) launched once by start() and fed graphs through a
// submission ring until stop() (runtime/resident.hpp has the protocol). Graphs are validated, lowered and uploaded
// once by add(); each submit() then costs a doorbell, not a launch, and may point any buffer at other memory.
//
//   ResidentSession rs(options);           // rings and shape (GPU: the co-residency check)
//   rs.start();                             // one cooperative launch
//   auto h = rs.add(graph);                 // validate, lower, upload (also while running)
//   auto t = rs.submit(h, {{"x", tensor}}); // a ticket; blocks while the ring is full (try_submit does not)
//   rs.wait(t);                             // its result, or DeviceError naming its tasks
//   rs.download(h, "y");                    // the program's own memory, after what was submitted before
//   rs.stop();                              // drains, then the kernel ends (also by the destructor)
//
// Submissions run one at a time in ticket order, from any number of host threads. A submission that fails (watchdog,
// bad descriptor) completes with its error; the runtime zeroes that program's synchronization state and runs the
// submissions queued behind it. A lost CUDA context fails every pending ticket and closes the session.
//
// While a GPU runtime runs, other CUDA work in the process must not wait for the whole device (cudaFree,
// cudaDeviceSynchronize, the legacy default stream, the first launch of a lazily loaded kernel: set
// CUDA_MODULE_LOADING=EAGER): it would wait for a kernel that ends only when stopped.
#pragma once

#include "runtime/binding.hpp"
#include "runtime/resident_backend.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/graph.hpp"
#include "scheduler/session.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridflow {

struct ResidentOptions {
  Backend backend = Backend::cpu;
  std::uint32_t cpu_workers = 0;         // CPU: 0 = hardware threads, at least 2
  std::uint32_t threads_per_block = 256; // GPU
  std::uint32_t blocks_per_sm = 0;       // GPU: 0 = min(2, what the occupancy allows)
  std::uint32_t depth = 64;              // slots of the submission (and completion) ring
  std::uint32_t max_programs = 64;       // programs add() may upload
  resident::IdlePacing idle{};           // how idle blocks poll
  FilePolicy files;                      // where init files are read
  std::uint64_t max_memory = 0;          // bytes one program may take (memory_budget.hpp); 0: what the machine has
};

// How add() lowers a graph and how its runs wait.
struct ResidentProgramOptions {
  SyncMode mode = SyncMode::flags;
  Schedule schedule = Schedule::automatic; // automatic: static lists in flags mode (a run wakes only their blocks)
  bool per_tile_deps = true;
  TilePolicy tiles;
  std::uint64_t timeout_ns = 10'000'000'000ull; // watchdog: bound on every wait
  program::PollPacing pacing{};
  program::PollPacing wait_pacing = program::kSpinPacing;
};

// The resident equivalents of a Session's options (the CLI's flags): the runtime's backend, grid, files and memory
// budget, and a program's mode, schedule, tiles and watchdog.
ResidentOptions resident_options(const SessionOptions& o, std::uint32_t depth);
ResidentProgramOptions program_options(const SessionOptions& o);

// Buffer `buffer` runs on `memory` for one submission (contiguous, 16-byte aligned, of the backend's device: checked
// as Session::bind checks it; memory that would need staging is refused).
struct Binding {
  std::string buffer;
  ExternalTensor memory;
};

// One completed submission. Times are the host's steady clock in nanoseconds; the executor's own (device) clock is
// mapped onto it by start()'s calibration, to within clock_uncertainty_ns().
struct ResidentResult {
  std::uint64_t ticket = 0;
  std::uint64_t submitted_ns = 0; // the doorbell was written
  std::uint64_t published_ns = 0; // block 0 took it (and told every block of it, unless it ran it alone)
  std::uint64_t first_ns = 0;     // the first block began it
  std::uint64_t done_ns = 0;      // the last block finished it
  std::uint64_t seen_ns = 0;      // the host read its completion
  bool lean_tiles = false;        // the run went through the lean tile path (a GPU program of lean row tiles over its
                                  // own buffers: runtime/resident.hpp, runs_lean)
};

class ResidentSession {
public:
  using Handle = std::uint32_t;
  using Ticket = std::uint64_t;

  explicit ResidentSession(ResidentOptions options = {});
  ~ResidentSession(); // stop(), bounded by the submissions still queued (each bounded by its watchdog)
  ResidentSession(const ResidentSession&) = delete;
  ResidentSession& operator=(const ResidentSession&) = delete;

  void start(); // RuntimeError when already running or closed
  void stop();  // every submission before it completes, then the servers end; idempotent
  bool running() const;
  std::string describe() const;
  const ResidentOptions& options() const { return options_; }

  // Validates, lowers (for the runtime's grid) and uploads `graph` with its initial data. GraphError for bad input;
  // RuntimeError when the program table is full or a graph has more than resident::kMaxBuffers buffers.
  Handle add(const Graph& graph, const ResidentProgramOptions& options = {});
  const LoweredProgram& program(Handle h) const;
  const Graph& graph(Handle h) const;

  // Enqueues a run of `h` with `bindings` (every other buffer on the program's own memory) and returns its ticket;
  // blocks while the ring is full. GraphError for a bad binding (nothing is submitted); RuntimeError when not
  // running. `fault_skip_signal_tile` is a test hook: that tile never signals, so a wait on it times out.
  Ticket submit(Handle h, const std::vector<Binding>& bindings = {},
                std::uint32_t fault_skip_signal_tile = program::kNoTile);
  // The same, or nullopt at once when the ring is full.
  std::optional<Ticket> try_submit(Handle h, const std::vector<Binding>& bindings = {},
                                   std::uint32_t fault_skip_signal_tile = program::kNoTile);

  // Waits for ticket t and returns its result once (a second wait for it is a RuntimeError); DeviceError when its run
  // recorded an error (the runtime has recovered by then), RuntimeError when the session was closed by a fault.
  ResidentResult wait(Ticket t);
  // The result when t has completed, else nullopt; throws as wait() does.
  std::optional<ResidentResult> try_wait(Ticket t);
  // Waits for every submission so far and forgets their results; throws the first error among those not waited.
  void wait_all();
  // A submission of no program, waited for: block 0 takes it from the ring and completes it, nothing runs. Its
  // result's seen_ns - submitted_ns is the doorbell's host round trip alone. Blocks while the ring is full;
  // RuntimeError when not running.
  ResidentResult ping();

  // Program h's own buffer, after every submission so far completed (waits for them; their results stay for wait()).
  void upload(Handle h, std::string_view buffer, const HostTensor& data);
  HostTensor download(Handle h, std::string_view buffer);

  // Half the best calibration round trip: how far a device time may sit from the host time it is mapped to.
  std::uint64_t clock_uncertainty_ns() const { return uncertainty_ns_; }

private:
  struct Program;
  struct Outcome {
    ResidentResult result;
    program::ErrorRecord error{};
    std::uint32_t program = 0;
    std::exception_ptr failure;
  };

  // Posts a submission of `program_id` (h's index, kPing or kStop) with the mutex held; nullopt when the ring is full
  // and not `block`.
  std::optional<Ticket> post(std::unique_lock<std::mutex>& lock, Handle h, const std::vector<Binding>& bindings,
                             std::uint32_t fault_tile, bool block, std::uint32_t program_id);
  void harvest();                                 // completions seen in ticket order -> outcomes_ (mutex held)
  void drain(std::unique_lock<std::mutex>& lock); // until every ticket so far completed
  // One pause of a host wait with the lock released; checks the servers now and then (mutex held on entry and exit).
  void pause(std::unique_lock<std::mutex>& lock, std::uint32_t& polls);
  void fail_pending(const std::string& why); // the servers are gone: every pending ticket fails (mutex held)
  ResidentResult settle(Outcome o);          // returns the result or throws its error
  std::uint32_t buffer_index(const Program& p, std::string_view name) const;
  void calibrate();

  ResidentOptions options_;
  GpuShape shape_;
  std::unique_ptr<ResidentBackend> backend_;
  std::vector<std::unique_ptr<Program>> programs_;
  mutable std::mutex mutex_;
  bool running_ = false;
  std::string closed_;                        // why the session closed (a lost context), else empty
  Ticket base_ = 0;                           // the first ticket of this launch (the device counts from 0 per launch)
  Ticket next_ = 0;                           // tickets issued
  Ticket harvested_ = 0;                      // tickets whose completion was read
  std::vector<std::uint32_t> slot_program_;   // per ring slot: the program of the ticket posted there
  std::vector<std::uint64_t> slot_submitted_; // per ring slot: when its doorbell was written
  std::map<Ticket, Outcome> outcomes_;        // completed, not yet waited
  std::chrono::steady_clock::time_point progress_; // when a completion was last read
  std::int64_t clock_offset_ns_ = 0;               // host = executor - offset
  std::uint64_t uncertainty_ns_ = 0;
  std::uint64_t max_timeout_ns_ = 0; // the longest watchdog of any program: bounds how long the servers may be silent
};

} // namespace gridflow
