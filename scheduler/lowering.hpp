// Lowering: an analyzed graph -> a LoweredProgram for one target shape (blocks, threads, sync mode, schedule).
//
// Tiling policy (TilePolicy): a task is cut into tiles sized to its op and its data so small tasks run on a few
// blocks and large ones on all of them: reduce_all and map tiles hold at least `reduce_min_tile` elements and grow
// so the task has about `waves` tiles per block; scan_all tiles are whole register tiles (chunks of threads x items):
// one chunk for small scans, up to `scan_chunks_per_tile` when the task has that many chunks per wave of blocks;
// row ops give each tile whole rows, about `row_tile_elements` elements (`short_softmax_tile_elements` for
// softmax rows a warp holds), and at least `waves` tiles per block
// when there are enough rows. Row ops over a single row lower to their whole-range form.
// Large reduce_all and scan_all tiles follow the grid size, and so do their float results' bits: runs are
// bit-identical across sync modes and schedules for one grid shape and policy, not across grid shapes.
#pragma once

#include "runtime/lowered_program.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/graph.hpp"

#include <cstdint>
#include <string>

namespace gridflow {

// Limits of a lowered program: tiles and dependency entries (16 bytes each, plus a flag line per tile) bound the
// program's memory before the memory budget sees it; grid blocks bound the per-block lists.
inline constexpr std::uint64_t kMaxTiles = std::uint64_t{1} << 26;
inline constexpr std::uint64_t kMaxDeps = std::uint64_t{1} << 27;
inline constexpr std::uint32_t kMaxGridBlocks = 1u << 16;

// Every field is checked by lower() (GraphError naming it): sizes in [1, kMaxBufferElements], waves in [1, 1024],
// scan items and chunks in [1, 64].
struct TilePolicy {
  std::int64_t reduce_min_tile = 4096; // elements
  // Target elements per row-op tile (fewer tiles: fewer claims, signals and end-of-tile barriers), and per tile of
  // short softmax rows (<= kernels::kShortRowMaxCols columns, a warp per row). On the H200, 1M-element tiles run
  // softmax 4096 / 32768 columns about 11% / 9% and the row reduce 20% faster than 64K-element ones; 1024-column
  // softmax rows are 1-3% slower with tiles over 65536 elements.
  std::int64_t row_tile_elements = std::int64_t{1} << 20;
  std::int64_t short_softmax_tile_elements = 65536;
  // Tiles per block a large task aims for. Every tile boundary drains the block's copy ring (the last stages are
  // folded, the block combines, signals, claims and stages the next tile before its first copies are issued), and
  // the tail that more, smaller tiles would even out costs less: on the H200 a sum of 2^28 floats takes 0.257 /
  // 0.261 / 0.271 / 0.286 ms at 1 / 2 / 4 / 16 waves (CUB 0.246).
  std::uint32_t waves = 1;
  std::uint32_t scan_items_per_thread = 16; // a scan chunk = threads_per_block * this (GPU register tile)
  // Most chunks per scan_all tile. Every block's tile must stay in L2 between its two reads: at 8, 264 blocks x
  // 256 threads x 16 items x 8 chunks x 4 B = 34 MB of the H200's 50 MB (the best of 1, 2, 4 and 8 measured).
  std::uint32_t scan_chunks_per_tile = 8;
  std::int64_t max_tile_elements = std::int64_t{1} << 22; // cap for reduce_all and map tiles
  // Whole-range reduces beside lean row tiles as lean partial tiles, so the lean megakernel runs the program
  // (runtime/tiles.hpp: lean_partials); off: they keep their streamed tiles, on the general megakernel.
  bool lean_partials = true;
  // Whole-range scans beside lean row tiles as lean look-back tiles, so the lean megakernel runs the program
  // (runtime/tiles.hpp: lean_scans); off: they keep their chunked tiles, on the general megakernel.
  bool lean_scans = true;

  // One target for every row-op tile, short softmax rows included (--row-tile-elements, tests, benchmarks).
  void set_row_tile_elements(std::int64_t elements) { row_tile_elements = short_softmax_tile_elements = elements; }
};

struct LoweringOptions {
  SyncMode mode = SyncMode::flags;
  Schedule schedule = Schedule::automatic; // resolved by lower(): LoweredProgram::schedule is never automatic
  std::uint32_t grid_blocks = 132;
  std::uint32_t threads_per_block = 256;
  bool per_tile_deps = true; // dataflow modes: wait only for the producer tiles that wrote a tile's inputs
  bool forward = true;       // static schedule: on-chip forwarding of rows between a block's consecutive tiles
  bool sinks_last = true;    // static schedule, dataflow modes: tiles nothing waits for after all others (lowering.cpp)
  bool graph_order = false;  // static schedule, dataflow modes: tiles placed in the graph's order, not level by level
  TilePolicy tiles;
};

// Lowers `graph` (already analyzed into `analysis`). Throws GraphError when the program would exceed the
// device program's limits (32-bit tile and dependency ids).
LoweredProgram lower(const Graph& graph, const Analysis& analysis, const LoweringOptions& options);

// Which tasks publish what, from program.deps: per-tile flags (kSignalTiles) for tasks some tile-range dependency
// names, the completion counter (kSignalCounter) for tasks some whole-task dependency names, nothing for the rest
// (their tiles skip the signal step). lower() calls it; a program built by hand must too, or its waits never end.
void assign_signal_flags(LoweredProgram& program);

// Lays out the state arena of `program` (tasks, tiles, levels and uses_tile_flags already set): fills
// program.layout and each task's scratch / counter offsets.
void assign_state_layout(LoweredProgram& program);

// Static schedule: moves the non-empty block lists to the first blocks, in their order, the empty ones after them.
// Which block holds a list means nothing to the program (its tiles, their order, waits and forwarding go with the
// list), so the result runs the same; the resident runtime then runs a flags-mode program on those first blocks
// alone (runtime/resident.hpp: participants). Nothing to do without lists.
void nonempty_lists_first(LoweredProgram& program);

// Human-readable listing of a program (the `gridflow lower` command): tasks, tiles, deps, arena layout.
std::string describe(const LoweredProgram& program, bool list_tiles = false);

} // namespace gridflow
