// The device op table: one row per opcode with everything the layers above the bodies need to know about it (its
// name, how its tiles cut the view, where its outputs land, what cross-tile state it keeps in the state arena, and
// which descriptor fields it needs in range). The lowering, the arena layout, both executors' descriptor checks, the
// errors and the printers read it; only the dispatch switches (which body runs) and the tiling policy (how large a
// tile is) name opcodes themselves. A new opcode is a new row here, a body per executor and a case in each dispatch.
//
// Host and device: the table is a constexpr array; device code reads it through bit masks computed from it at
// compile time (no memory access), the host through op_traits().
#pragma once

#include "kernels/host_device.hpp"
#include "kernels/op_types.hpp"
#include "runtime/program.hpp"

#include <cstdint>
#include <iterator>

namespace gridflow::program {

// The cross-tile state a task's tiles share in the state arena when it has more than one tile (assign_state_layout).
enum class Scratch : std::uint8_t {
  none,             // tiles are independent
  partials,         // an arrival counter line, then one Partial per tile (the last arriver folds them)
  lookback,         // the deterministic look-back tree's words (protocol::lookback_words)
  count_rows,       // an arrival counter line, then one row of `param` i32 counts per tile (the last arriver sums)
  count_rows_ready, // one row of `param` i32 counts per tile, then one 64-bit ready word per tile
};

// What a descriptor's tile size must be: anything (row counts, element chunks) or whole register chunks of
// threads x scan items (one or several per tile).
enum class TileRule : std::uint8_t { any, whole_chunks };

// The `param` a descriptor carries as a bin count, and its bound.
enum class BinsRule : std::uint8_t { none, histogram, scatter };

// The aux view: none, read (scatter's offsets) or written (select's count).
enum class AuxUse : std::uint8_t { none, read, write };

struct OpTraits {
  const char* name;
  bool row_op;              // tiles are row ranges (items are rows); else element chunks
  bool counting;            // plain loads and stores only, awaited through counters (never polled, never sentinel)
  bool tile_local_output;   // tile k's outputs are final when it signals and lie over its own input rows/elements
  bool waits_on_own_tiles;  // a tile waits for earlier tiles of its own task (look-back, scatter rows)
  bool writes_when_empty;   // writes something for an empty input (a value, zero counts, a zero count): one tile
  bool one_output_per_item; // one output per item (a row's reduction); else one per input element
  bool needs_buffers;       // reads and writes the in and out views (noop: none)
  AuxUse aux;
  Scratch scratch;
  TileRule tile_rule;
  BinsRule bins;
  std::uint8_t fns; // how many values TaskDesc::fn takes (ReduceFn, ScanFn, MapFn); 0: the op has no fn
};

// clang-format off
inline constexpr OpTraits kOpTable[] = {
    // name           row    count  local  own    empty  1/item buffers aux            scratch                    tile rule               bins                fns
    {"invalid",       false, false, false, false, false, false, false, AuxUse::none,  Scratch::none,             TileRule::any,          BinsRule::none,       0},
    {"reduce_all",    false, false, false, false, true,  false, true,  AuxUse::none,  Scratch::partials,         TileRule::any,          BinsRule::none,       4},
    {"reduce_rows",   true,  false, true,  false, false, true,  true,  AuxUse::none,  Scratch::none,             TileRule::any,          BinsRule::none,       4},
    {"scan_all",      false, false, true,  true,  false, false, true,  AuxUse::none,  Scratch::lookback,         TileRule::whole_chunks, BinsRule::none,       2},
    {"scan_rows",     true,  false, true,  false, false, false, true,  AuxUse::none,  Scratch::none,             TileRule::any,          BinsRule::none,       2},
    {"softmax_rows",  true,  false, true,  false, false, false, true,  AuxUse::none,  Scratch::none,             TileRule::any,          BinsRule::none,       0},
    {"noop",          false, false, false, false, false, false, false, AuxUse::none,  Scratch::none,             TileRule::any,          BinsRule::none,       0},
    {"histogram",     false, true,  false, false, true,  false, true,  AuxUse::none,  Scratch::count_rows,       TileRule::any,          BinsRule::histogram,  0},
    {"scatter",       false, true,  false, true,  false, false, true,  AuxUse::read,  Scratch::count_rows_ready, TileRule::any,          BinsRule::scatter,    0},
    {"select",        false, true,  false, true,  true,  false, true,  AuxUse::write, Scratch::lookback,         TileRule::whole_chunks, BinsRule::none,       0},
    {"map",           false, false, true,  false, false, false, true,  AuxUse::none,  Scratch::none,             TileRule::any,          BinsRule::none,       5},
};
// clang-format on
static_assert(std::size(kOpTable) == kOpcodeCount, "one row per opcode");

// The row of `opcode` (the invalid row for an opcode out of range). Host code.
inline const OpTraits& op_traits(std::uint32_t opcode) {
  return kOpTable[opcode < kOpcodeCount ? opcode : 0];
}

namespace detail {
template <class Pred> constexpr std::uint32_t op_mask(Pred pred) {
  std::uint32_t m = 0;
  for (std::uint32_t op = 0; op < kOpcodeCount; ++op)
    if (pred(kOpTable[op]))
      m |= 1u << op;
  return m;
}
} // namespace detail

// Opcodes with each property, as bit masks (device code tests a bit; no table load).
inline constexpr std::uint32_t kRowOps = detail::op_mask([](const OpTraits& t) { return t.row_op; });
inline constexpr std::uint32_t kCountingOps = detail::op_mask([](const OpTraits& t) { return t.counting; });
inline constexpr std::uint32_t kTileLocalOps = detail::op_mask([](const OpTraits& t) { return t.tile_local_output; });
inline constexpr std::uint32_t kOwnTileOps = detail::op_mask([](const OpTraits& t) { return t.waits_on_own_tiles; });
inline constexpr std::uint32_t kEmptyWriterOps = detail::op_mask([](const OpTraits& t) { return t.writes_when_empty; });
inline constexpr std::uint32_t kOnePerItemOps =
    detail::op_mask([](const OpTraits& t) { return t.one_output_per_item; });
inline constexpr std::uint32_t kBufferOps = detail::op_mask([](const OpTraits& t) { return t.needs_buffers; });
inline constexpr std::uint32_t kAuxOps = detail::op_mask([](const OpTraits& t) { return t.aux != AuxUse::none; });
inline constexpr std::uint32_t kSharedStateOps =
    detail::op_mask([](const OpTraits& t) { return t.scratch != Scratch::none; });
inline constexpr std::uint32_t kWholeChunkOps =
    detail::op_mask([](const OpTraits& t) { return t.tile_rule == TileRule::whole_chunks; });
inline constexpr std::uint32_t kHistogramBinOps =
    detail::op_mask([](const OpTraits& t) { return t.bins == BinsRule::histogram; });
// TaskDesc::fn's bound per opcode, four bits each (device code shifts; no table load).
inline constexpr std::uint64_t kFnCounts = [] {
  std::uint64_t m = 0;
  for (std::uint32_t op = 0; op < kOpcodeCount; ++op)
    m |= std::uint64_t{kOpTable[op].fns} << (4 * op);
  return m;
}();
static_assert(kOpcodeCount * 4 <= 64, "four bits per opcode");
inline constexpr std::uint32_t kScatterBinOps =
    detail::op_mask([](const OpTraits& t) { return t.bins == BinsRule::scatter; });

GRIDFLOW_HOST_DEVICE constexpr bool op_has(std::uint32_t mask, std::uint32_t opcode) {
  return opcode < kOpcodeCount && ((mask >> opcode) & 1u) != 0;
}

// The descriptor fields a bad descriptor names (ErrorRecord::detail for ErrorCode::bad_descriptor).
enum class DescriptorField : std::uint32_t {
  tile_id = 0,   // a claimed tile id or its task id out of range
  dep_task = 1,  // a dependency names a task out of range
  buffer = 2,    // a view's buffer index out of range
  tile_size = 3, // a tile size the op's tile rule refuses
  bins = 4,      // a bin count out of the op's bounds
  fn = 5,        // a function (ReduceFn, ScanFn, MapFn) the op does not have
};
inline constexpr std::uint32_t kDescriptorFieldCount = 6;
inline constexpr const char* kDescriptorFieldNames[] = {
    "tile id", "dependency task", "buffer index", "tile size", "bins", "fn"};
static_assert(std::size(kDescriptorFieldNames) == kDescriptorFieldCount);

// What is wrong with task descriptor `t` for a program of `num_buffers` buffers whose scan chunk is `chunk`
// elements (threads x scan items) and whose lean rows hold `lean_cols` elements (a scan_all tile of that size is a
// lean look-back tile: runtime/tiles.hpp, lean_scans), or nullopt-like `ok` when nothing is: the same checks in both
// executors.
struct DescriptorCheck {
  bool ok = true;
  DescriptorField field = DescriptorField::buffer;
};
GRIDFLOW_HOST_DEVICE constexpr DescriptorCheck check_descriptor(const TaskDesc& t, std::uint32_t num_buffers,
                                                                long long chunk, long long lean_cols,
                                                                std::uint32_t histogram_max_bins,
                                                                std::uint32_t scatter_max_bins) {
  const std::uint32_t op = t.opcode;
  if (op_has(kBufferOps, op) && (t.in_buffer >= num_buffers || t.out_buffer >= num_buffers))
    return {false, DescriptorField::buffer};
  if (op_has(kAuxOps, op) && t.aux_buffer >= num_buffers)
    return {false, DescriptorField::buffer};
  const bool lean_scan = op == static_cast<std::uint32_t>(Opcode::scan_all) && t.tile_size == lean_cols;
  if (op_has(kWholeChunkOps, op) && (t.tile_size <= 0 || (t.tile_size % chunk != 0 && !lean_scan)))
    return {false, DescriptorField::tile_size};
  if (op_has(kHistogramBinOps, op) && (t.param == 0 || t.param > histogram_max_bins))
    return {false, DescriptorField::bins};
  if (op_has(kScatterBinOps, op) && (t.param == 0 || t.param > scatter_max_bins))
    return {false, DescriptorField::bins};
  const std::uint32_t fns = op < kOpcodeCount ? static_cast<std::uint32_t>((kFnCounts >> (4 * op)) & 15u) : 0u;
  if (fns != 0 && t.fn >= fns)
    return {false, DescriptorField::fn};
  return {};
}

} // namespace gridflow::program
