// What a run needs in memory, computed before anything is allocated, and the budget it must fit: a graph that asks
// for more than the machine has (or than --max-memory allows) is refused by validation, naming its largest
// buffers, instead of being killed halfway by the kernel's OOM killer.
//
// Host bytes of a run (what Session keeps): the initial contents of every buffer (re-uploaded before each run),
// the run's buffers (CPU backend: host memory, handed over as the results without a copy; GPU: the downloaded
// results), the program and its state arena (CPU); with the reference check, its float64 state (about 13 bytes per
// element of every buffer plus 12 per element of the largest task input). Device bytes (GPU): the buffers, the
// program arrays and the state arena.
#pragma once

#include "runtime/lowered_program.hpp"
#include "scheduler/graph.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gridflow {

struct MemoryNeed {
  std::uint64_t host_bytes = 0;
  std::uint64_t device_bytes = 0;                             // 0 on the CPU backend
  std::vector<std::pair<std::string, std::uint64_t>> largest; // the largest buffers, largest first (at most 3)
};

struct MemoryUse {
  bool gpu = false;   // the GPU backend (device memory for the buffers) or the CPU backend
  bool check = false; // the float64 reference check will run
  bool trace = false; // traced runs (per-tile and per-barrier records)
};

MemoryNeed memory_needed(const Graph& graph, const LoweredProgram& program, const MemoryUse& use);

// Bytes of host memory this process can still take: the least of MemAvailable, the cgroup's limit minus its usage,
// and the address-space limit minus what is mapped. Where none can be read, the machine's physical memory.
std::uint64_t host_memory_available();

// Refuses (GraphError naming the graph, the need, the budget and the largest buffers) a need above a budget.
// `max_bytes` > 0 caps both budgets (--max-memory); device_free is the device's free memory (GPU backend).
void check_memory_budget(const Graph& graph, const MemoryNeed& need, std::uint64_t max_bytes, std::uint64_t host_free,
                         std::uint64_t device_free);

// "1.5 GiB"
std::string byte_text(std::uint64_t bytes);

} // namespace gridflow
