// The lean megakernel's program: one 64-byte instruction per tile with everything its run needs resolved on the host
// (the task's opcode, flags and shape, the tile's first input and output addresses, its dependency list, its level),
// so a block's loop reads one record per tile, prefetched a tile ahead, and nothing else of the program. Built by the
// executors from a LoweredProgram whose every task runs as lean tiles (lean_tiles, runtime/tiles.hpp): lean row tiles,
// lean partial tiles of a whole-range reduce (one row of its elements, `out` the task's value) and lean look-back
// tiles of a whole-range scan (one row of its elements, `out` where their scan goes).
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/program.hpp"

#include <cstdint>
#include <vector>

namespace gridflow::program {

struct alignas(16) TileInstr {
  std::uint32_t opcode = 0;    // Opcode (a row op, reduce_all as lean partials, scan_all as lean look-back tiles)
  std::uint32_t flags = 0;     // the task's TaskFlag bits and, for this tile, kForwardInput
  std::uint32_t fn = 0;        // ReduceFn or ScanFn
  std::uint32_t dtype = 0;     // DType of the input
  std::uint32_t task = 0;      // device task
  std::uint32_t tile = 0;      // global tile id (kNoTile: a list entry that is no tile; reported when claimed)
  std::uint32_t rows = 0;      // rows of this tile
  std::uint32_t cols = 0;      // columns of every row
  std::uint32_t level = 0;     // the task's level
  std::uint32_t dep_first = 0; // deps[dep_first, dep_first + dep_count)
  std::uint32_t dep_count = 0;
  std::uint32_t out_stride = 0; // output elements per row (cols; 1 for a row reduction)
  std::uint64_t in = 0;         // address of the tile's first input element
  std::uint64_t out = 0;        // address of its first output element
};
static_assert(sizeof(TileInstr) == 64 && alignof(TileInstr) == 16);

} // namespace gridflow::program

namespace gridflow {

// Whether every task of `program` runs as lean tiles at `threads` per block (runtime/tiles.hpp: lean_tiles).
bool lean_tasks(const LoweredProgram& program, std::uint32_t threads);

// Whether some task of `program` runs as lean tiles that share state across tiles (lean partials, lean look-back
// scans: runtime/tiles.hpp, lean_cross_tiles). The lean megakernel comes built with them and without them (the row
// kernel, runtime/gpu/lean_kernel.cuh: CROSS_TILE), and a program without them runs on the row kernel.
bool lean_cross_program(const LoweredProgram& program, std::uint32_t threads);

// Whether the lean megakernel can run `program` at `threads` per block: lean_tasks, and in sentinel mode no cross
// tiles (that kernel is built as a row kernel only: their protocol under the polling access policy, out of line, puts
// a stack frame of hundreds of bytes on every tile's path and costs ptxas more than the rest; such a program runs on
// the general megakernel, with the same bodies and bits).
bool lean_program(const LoweredProgram& program, std::uint32_t threads);

// Whether the lean row kernel of the flags, barrier and grid-sync modes runs `program` at `threads` per block:
// lean_tasks, no cross tiles, not sentinel mode. Only that kernel is built for more blocks per SM than the general
// megakernel (GpuShape::max_lean_blocks_per_sm), so only such a program may be lowered for them.
bool lean_row_program(const LoweredProgram& program, std::uint32_t threads);

// Whether the resident kernel's lean path can run `program` at `threads` per block: lean_tasks, and no cross tiles
// (lean_cross_program).
// That path is compiled without them (runtime/gpu/resident_kernel.cuh: the lean Block inlined beside the interpreter
// with their protocol under every access policy is more than ptxas compiles in bounded memory), so such a program
// runs the resident interpreter, which runs those tiles out of line.
bool resident_lean_program(const LoweredProgram& program, std::uint32_t threads);

// One instruction per global tile (dynamic claims), and one per static list entry in list order (static claims:
// empty without lists). `bases[b]` is buffer b's address in the executor's memory.
//
// The closing barrier (kCloseBarrier): a lean tile's body has a block barrier between its loads and its stores (every
// row op reduces across the block first), so the only reasons for another one at its end are a signal (the leader
// publishes after every thread's stores), a poll that may have failed (the abort flag is read by all after a
// barrier), a look-back tile's wait that may have failed likewise, and a next tile on the block that reads memory
// before its first barrier (one that is not forwarded, or one claimed dynamically, which the block cannot know).
// Every other tile ends without one.
//
// A plain tile (kPlainTile, static lists only): one whose run is its body and, where the instruction has them, its
// closing barrier and signal, so the lean megakernel runs it without the claim's descriptor checks and the wait: it
// waits for nothing (no dependency left after elision), polls nothing, writes no sentinel-mode output, and is one
// full row (lean_max_cols(threads) columns) of 16-byte groups, so its body takes the path without row loop, column
// or alignment tests; never a lean partial or look-back tile (their arrival, fold and look-back are protocol).
// Everything it reads and writes is the instruction's own (`in`, `out`), as for every lean tile; what it publishes
// (kSignalTiles, kSignalCounter) it publishes after its closing barrier, as every tile does.
std::vector<program::TileInstr> tile_instrs(const LoweredProgram& program, const std::vector<void*>& bases);
std::vector<program::TileInstr> block_instrs(const LoweredProgram& program, const std::vector<void*>& bases);

// Whether instruction `tile`, followed on its block's list by `next` (null: the list's last), needs the closing
// barrier (above).
bool needs_close_barrier(const program::TileInstr& tile, const program::TileInstr* next);

// Whether instruction `tile` (kCloseBarrier already decided) of `program` is plain (above).
bool plain_tile(const LoweredProgram& program, const program::TileInstr& tile);

} // namespace gridflow
