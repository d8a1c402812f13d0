// A lowered program as the host holds it (vectors of descriptors), and the plain-data views of it that an
// executor runs: ProgramView (uploaded arrays, arena layout) and RunParams (what changes from run to run).
#pragma once

#include "kernels/op_types.hpp"
#include "runtime/config.hpp"
#include "runtime/program.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gridflow {

struct BufferInfo {
  std::string name;
  DType dtype = DType::f32;
  std::int64_t elements = 0;
  bool sentinel = false;            // sentinel mode: [sentinel_offset, + sentinel_count) is pre-filled before each run
  std::int64_t sentinel_offset = 0; // the elements its single writer produces
  std::int64_t sentinel_count = 0;
};

struct LoweredProgram {
  SyncMode mode = SyncMode::flags;
  Schedule schedule = Schedule::dynamic;
  std::uint32_t grid_blocks = 1; // blocks (GPU) or workers (CPU) it was lowered for
  std::uint32_t threads_per_block = 256;
  std::uint32_t scan_chunk = 0; // elements of a scan register chunk (threads x scan items): scan_all tiles
                                // are whole chunks of it, select tiles exactly one
  std::vector<program::TaskDesc> tasks;
  std::vector<program::TileDesc> tiles; // global tile ids, level-major topological order
  std::vector<program::DepDesc> deps;
  std::vector<std::uint32_t> level_begin; // tiles of level L: [level_begin[L], level_begin[L + 1])
  std::vector<std::uint32_t> block_begin; // static schedule: block b runs block_tiles[block_begin[b] .. [b + 1])
  std::vector<std::uint32_t> block_tiles;
  std::vector<BufferInfo> buffers;     // index = buffer table slot = graph buffer index
  std::vector<std::string> task_names; // per device task
  // The graph's edges between device tasks in every mode (whatever enforces them): task t's direct producers
  // are pred_tasks[pred_begin[t] .. pred_begin[t + 1]). Host-side only (analysis, critical path).
  std::vector<std::uint32_t> pred_begin;
  std::vector<std::uint32_t> pred_tasks;
  // Static schedule: the tile-range dependencies dropped because the consumer's own block ran the producer tiles
  // earlier (program order enforces them; the device never sees them). Tile g's are
  // local_deps[local_begin[g] .. local_begin[g + 1]); both empty when nothing was dropped. Host-side only.
  std::vector<std::uint32_t> local_begin;
  std::vector<program::DepDesc> local_deps;
  // Static schedule, per global tile: 1 when the tile's input is exactly what the tile before it on its block's list
  // wrote (one row, its task's only producer), so the lean megakernel keeps it in registers (on-chip forwarding;
  // the CPU executor checks the claim). Empty: no tile is forwarded.
  std::vector<std::uint8_t> forwarded;
  program::StateLayout layout;
  std::uint32_t barriers_per_run = 0; // level barriers one run passes (level modes: levels - 1)
  bool uses_tile_flags = false;

  std::uint32_t num_levels() const { return static_cast<std::uint32_t>(level_begin.size()) - 1; }

  // f(dep) for every dependency of tile g: the ones the device waits for, then the local ones it need not.
  template <class F> void for_each_dependency(std::uint32_t g, F&& f) const {
    const program::TileDesc& t = tiles[g];
    for (std::uint32_t d = t.dep_first; d < t.dep_first + t.dep_count; ++d)
      f(deps[d]);
    if (!local_begin.empty())
      for (std::uint32_t d = local_begin[g]; d < local_begin[g + 1]; ++d)
        f(local_deps[d]);
  }
};

namespace program {

struct TileInstr; // runtime/lean_program.hpp

// Device (or CPU) view of an uploaded program. Plain data: passed by value as a kernel parameter.
struct ProgramView {
  const TaskDesc* tasks = nullptr;
  const TileDesc* tiles = nullptr;
  const DepDesc* deps = nullptr;
  const std::uint32_t* level_begin = nullptr;
  const std::uint32_t* block_begin = nullptr; // null: dynamic claim
  const std::uint32_t* block_tiles = nullptr;
  const TileDesc* block_descs = nullptr; // static: the descriptor of each block_tiles entry (block_descs())
  void* const* buffers = nullptr;
  const std::int64_t* sentinel_ranges = nullptr; // per buffer b: [2b] offset, [2b + 1] count to pre-fill (0: none)
  unsigned char* state = nullptr;
  const TileInstr* tile_instrs = nullptr;  // the lean megakernel: one instruction per global tile (else null)
  const TileInstr* block_instrs = nullptr; // and one per static list entry, in list order (null without lists)
  StateLayout layout;
  std::uint32_t num_tasks = 0;
  std::uint32_t num_tiles = 0;
  std::uint32_t num_deps = 0;
  std::uint32_t num_levels = 0;
  std::uint32_t num_buffers = 0;
  std::uint32_t grid_blocks = 0;
  std::uint32_t mode = 0;     // SyncMode
  std::uint32_t schedule = 0; // Schedule
  std::uint32_t barriers_per_run = 0;
  std::uint32_t uses_tile_flags = 0;
  std::uint32_t scan_chunk = 0; // LoweredProgram::scan_chunk
  std::uint32_t threads = 0;    // LoweredProgram::threads_per_block
};

// What changes between runs of the same uploaded program.
struct RunParams {
  std::uint32_t epoch = 1;               // run number on this state arena, from 1
  std::uint32_t sentinel_fill = 0;       // sentinel mode: 1 = the megakernel's prologue fills (SentinelFill::kernel)
  std::uint64_t barrier_base = 0;        // gridflow-barrier generations completed on this arena before this run
  std::uint64_t timeout_ns = 0;          // watchdog: bound on every wait (0: unbounded)
  PollPacing pacing{};                   // how body polls (sentinel elements, look-back words) and barriers poll (GPU)
  PollPacing wait_pacing = kSpinPacing;  // how the leader's dependency waits poll (GPU)
  TileTrace* tile_trace = nullptr;       // per global tile; null: tracing off
  BarrierTrace* barrier_trace = nullptr; // [block * barriers_in_run + k]; null: off
  std::uint32_t fault_skip_signal_tile = kNoTile; // test-only: this tile does not signal (forces a deadlock)
  std::uint32_t barriers_in_run = 0;              // number of grid barriers a block passes in this run (trace sizing)
  std::uint32_t claim_ahead = 0; // dynamic schedule: a block takes its next ticket when it claims a tile
  std::uint32_t plain_tiles = 1; // lean megakernel: plain tiles skip claim checks and wait (ExecOptions::plain_tiles)
  std::uint32_t ring_bytes = 0;  // GPU: the bulk-copy ring, the launch's dynamic shared memory per block
};

// Where an executor keeps the program's arrays (host memory for the CPU, device memory for the GPU).
struct ProgramArrays {
  const TaskDesc* tasks = nullptr;
  const TileDesc* tiles = nullptr;
  const DepDesc* deps = nullptr;
  const std::uint32_t* level_begin = nullptr;
  const std::uint32_t* block_begin = nullptr; // null when the program has no static schedule
  const std::uint32_t* block_tiles = nullptr;
  const TileDesc* block_descs = nullptr;
  void* const* buffers = nullptr;
  const std::int64_t* sentinel_ranges = nullptr;
  unsigned char* state = nullptr;
};

} // namespace program

// The ProgramView of `program` whose arrays live at `arrays`.
program::ProgramView make_view(const LoweredProgram& program, const program::ProgramArrays& arrays);

// Static schedule: tiles[block_tiles[i]] for each entry i, so a block reads its next tile's descriptor without first
// waiting for the tile id. An entry out of range gets task kNoTile (the executor reports it when it is claimed).
std::vector<program::TileDesc> block_descs(const LoweredProgram& program);

// Per buffer b: [2b] offset and [2b + 1] count of the elements sentinel mode pre-fills (count 0: none).
std::vector<std::int64_t> sentinel_ranges(const LoweredProgram& program);

} // namespace gridflow
