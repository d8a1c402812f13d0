// The device program: plain-data descriptors the scheduler lowers a graph into and every executor runs.
//
// Layout contract (checked by static_asserts below): descriptors are trivially copyable, fixed-size and
// 16-byte aligned so the same bytes are valid on the host and on the device. Global tile ids are assigned in
// a topological order of the tasks (level-major), which is what makes both claim policies deadlock-free:
// every wait targets a tile that precedes the waiter in that order and runs on a co-resident block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gridflow::program {

// Device-level operations. A graph task lowers to exactly one device task.
enum class Opcode : std::uint32_t {
  invalid = 0,
  reduce_all = 1,   // 1-D range -> one value; tiles are element chunks; last arriving tile combines partials
  reduce_rows = 2,  // rows x cols -> rows values; tiles are row ranges
  scan_all = 3,     // 1-D range -> same size; tiles are element chunks; carries by deterministic look-back
  scan_rows = 4,    // per-row scan; tiles are row ranges
  softmax_rows = 5, // per-row (log-)softmax; tiles are row ranges
  noop = 6,         // does nothing: dispatch and synchronization benchmarks, tests
  histogram = 7,    // i32 keys -> counts[param bins]; tiles are element chunks; last arriving tile sums the rows
  scatter = 8,      // i32 keys + offsets (aux) -> stable placement of indices; tile k folds rows of tiles < k
  select = 9,       // compaction: tiles are element chunks (scan tile size); positions by deterministic look-back;
                    // the count goes to aux
  map = 10,         // elementwise y = f(scale * x + shift) (kernels/map.hpp); tiles are element chunks
};
inline constexpr std::uint32_t kOpcodeCount = 11;

// TaskDesc::flags bits.
enum TaskFlag : std::uint32_t {
  kExclusive = 1u << 0,      // scan: exclusive (first output is the identity)
  kLogSoftmax = 1u << 1,     // softmax: log-softmax
  kSignalTiles = 1u << 2,    // some consumer waits on individual tiles: publish per-tile flags
  kPollInputs = 1u << 3,     // sentinel mode: poll every input element until it is not the sentinel
  kSentinelOutput = 1u << 4, // sentinel mode: the output was pre-filled with the sentinel; never store it
  kSignalCounter = 1u << 5,  // some consumer waits for the whole task: count completed tiles
  kForwardInput = 1u << 8,   // lean instructions only (TileInstr::flags): the tile's input is what the block's
                             // previous tile wrote, still in registers (on-chip forwarding)
  kCloseBarrier = 1u << 9,   // lean instructions only: the tile ends with a block barrier (runtime/lean_program.hpp)
  kPlainTile = 1u << 10,     // lean list instructions only: the tile needs no wait or claim checks (lean_program.hpp)
};

inline constexpr std::uint32_t kNoBuffer = 0xffffffffu;

// One device task. 128 bytes: one cache line pair, so a block reads it with a few coalesced loads.
struct alignas(16) TaskDesc {
  std::uint32_t opcode = 0; // Opcode
  std::uint32_t fn = 0;     // ReduceFn or ScanFn
  std::uint32_t dtype = 0;  // DType of the input elements (output: same, argmax -> i32)
  std::uint32_t flags = 0;  // TaskFlag bits
  std::uint32_t in_buffer = kNoBuffer;
  std::uint32_t out_buffer = kNoBuffer;
  std::uint32_t level = 0;      // topological depth
  std::uint32_t first_tile = 0; // global id of this task's tile 0
  std::uint32_t num_tiles = 0;
  std::uint32_t graph_task = 0; // index of the graph task this lowers (for errors and traces)
  std::int64_t in_offset = 0;   // element offset of the input view in its buffer
  std::int64_t out_offset = 0;  // element offset of the output view in its buffer
  std::int64_t rows = 0;        // input view is rows x cols, row-major, contiguous; 1-D views: rows == 1
  std::int64_t cols = 0;
  std::int64_t tile_size = 0;   // elements per tile (reduce_all, scan_all) or rows per tile (row ops)
  std::uint64_t scratch = 0;    // byte offset in the state arena: partials (reduce_all), look-back words (scan_all,
                                // select), count rows (histogram, scatter; scatter: then one ready word per tile)
  std::uint64_t counter = 0;    // byte offset in the state arena of the arrival counter line (reduce_all, histogram)
  std::uint64_t aux_offset = 0; // element offset of the second operand: scatter's offsets (read), select's count
  std::uint32_t aux_buffer = kNoBuffer; // (written)
  std::uint32_t param = 0;              // histogram / scatter: bins; select: CmpFn
  // The op's constants, as bits: select: [0] the threshold (in the input's dtype); map: scale, shift, lo, hi (f32);
  // scatter: [0] and [1] the output view's size in elements, low and high word (it bounds the positions).
  std::uint32_t consts[4] = {};
};
static_assert(sizeof(TaskDesc) == 128 && alignof(TaskDesc) == 16);

// A 64-bit constant in TaskDesc::consts[i, i + 1] (low word first): scatter's output size.
constexpr std::uint64_t const_u64(const TaskDesc& t, int i) {
  return std::uint64_t{t.consts[i]} | std::uint64_t{t.consts[i + 1]} << 32;
}
constexpr void set_const_u64(TaskDesc& t, int i, std::uint64_t v) {
  t.consts[i] = static_cast<std::uint32_t>(v);
  t.consts[i + 1] = static_cast<std::uint32_t>(v >> 32);
}
static_assert(std::is_trivially_copyable_v<TaskDesc>);

// One tile: which task, which piece, and where its dependency list lives in the dep array.
struct alignas(16) TileDesc {
  std::uint32_t task = 0;
  std::uint32_t index = 0;     // tile index within its task
  std::uint32_t dep_first = 0; // deps[dep_first, dep_first + dep_count)
  std::uint32_t dep_count = 0;
};
static_assert(sizeof(TileDesc) == 16 && std::is_trivially_copyable_v<TileDesc>);

enum class DepKind : std::uint32_t {
  task = 0,  // wait until every tile of `task` signalled: task counter >= num_tiles * epoch
  tiles = 1, // wait until tiles [tile_begin, tile_end) of `task` each published the epoch
};

struct alignas(16) DepDesc {
  std::uint32_t task = 0;
  std::uint32_t tile_begin = 0; // DepKind::tiles only
  std::uint32_t tile_end = 0;
  std::uint32_t kind = 0; // DepKind
};
static_assert(sizeof(DepDesc) == 16 && std::is_trivially_copyable_v<DepDesc>);

// A reduce_all tile's partial in the state arena (both executors): the value's bits (GPU: the 32-bit element;
// CPU: a double) and, for argmax, the global index of the best element (-1: empty tile).
struct alignas(16) Partial {
  std::uint64_t value = 0;
  std::int64_t index = -1;
};
static_assert(sizeof(Partial) == 16);

// Error codes the device (or the CPU executor) records; the host turns them into exceptions.
enum class ErrorCode : std::uint32_t {
  none = 0,
  watchdog_timeout = 1, // a wait exceeded the run's timeout
  bad_opcode = 2,       // a task descriptor carries an unknown opcode
  bad_descriptor = 3,   // a descriptor field is out of range (tile, task, buffer index)
  aborted = 4,          // another block failed first (never recorded as the first error)
  forward_mismatch = 5, // CPU check of on-chip forwarding: a forwarded tile's input differs from what the block's
                        // previous tile wrote (a lowering fault)
};

// What a wait was waiting on when the watchdog fired.
enum class WaitKind : std::uint32_t {
  none = 0,
  task_counter = 1, // DepKind::task
  tile_flag = 2,    // DepKind::tiles
  sentinel = 3,     // a value still holding the sentinel payload
  lookback = 4,     // a scan carry word of an earlier tile
  barrier = 5,      // the gridflow grid barrier
  claim = 6,        // (reserved)
};

// First error of a run; written once (the first block to CAS `code` from 0 wins).
struct alignas(16) ErrorRecord {
  std::uint32_t code = 0;       // ErrorCode
  std::uint32_t block = 0;      // block (worker) that recorded it
  std::uint32_t tile = 0;       // global tile it was running
  std::uint32_t task = 0;       // device task of that tile
  std::uint32_t wait_kind = 0;  // WaitKind
  std::uint32_t wait_task = 0;  // device task it waited on
  std::uint32_t wait_index = 0; // tile / element / barrier index it waited on
  std::uint32_t detail = 0;     // opcode for bad_opcode, field id for bad_descriptor
  std::uint64_t expected = 0;   // value the wait needed
  std::uint64_t seen = 0;       // value it last saw
  std::uint64_t waited_ns = 0;  // how long it waited
  std::uint64_t reserved = 0;
};
static_assert(sizeof(ErrorRecord) == 64 && std::is_trivially_copyable_v<ErrorRecord>);

// Trace of one tile, in executor clock nanoseconds (%globaltimer on the GPU, steady_clock on the CPU).
// Phases: [claim_begin, claimed) dispatch; [claimed, ready) dependency wait; [ready, executed) work;
// [executed, signalled) signal.
struct alignas(16) TileTrace {
  std::uint32_t block = 0;
  std::uint32_t smid = 0;
  std::uint32_t task = 0;
  std::uint32_t tile = 0; // global tile id; 0xffffffff marks a tile that never ran
  std::uint64_t claim_begin = 0;
  std::uint64_t claimed = 0;
  std::uint64_t ready = 0;
  std::uint64_t executed = 0;
  std::uint64_t signalled = 0;
  std::uint64_t runs = 0; // times the tile ran (traced runs check that it is exactly 1)
};
static_assert(sizeof(TileTrace) == 64 && std::is_trivially_copyable_v<TileTrace>);

// One block's passage through one grid barrier.
struct alignas(16) BarrierTrace {
  std::uint64_t arrive = 0;
  std::uint64_t leave = 0;
};
static_assert(sizeof(BarrierTrace) == 16);

inline constexpr std::uint32_t kNoTile = 0xffffffffu;

// How a waiting GPU thread paces its polls: it polls back to back `spin_polls` times, then sleeps between polls
// (__nanosleep), from 32 ns doubling up to `max_sleep_ns`. Sleeping keeps thousands of waiting blocks from
// saturating the L2 with polls; it also delays noticing a value by up to the current sleep. The CPU yields instead.
struct PollPacing {
  std::uint32_t spin_polls = 32;
  std::uint32_t max_sleep_ns = 512;
  // Polls between two checks of the abort flag and the watchdog's clock (1: after every poll). A check is a load of
  // its own, ordered after the acquire poll before it, so the next poll cannot issue until the check returned: checks
  // lengthen the time between polls, and with it the time a wait takes to see what it waits for.
  std::uint32_t check_every = 16;
};
// The leader's dependency waits never sleep by default: one thread per block polls one word per dependency, and
// sleeps cost a flags chain 12% per op (softmax 16K, dynamic schedule), while the sentinel body's polls, every
// thread on every element, get slower with shorter sleeps.
inline constexpr PollPacing kSpinPacing{0xffffffffu, 512};

// Sentinel mode: the reserved f32 bit pattern producer outputs are pre-filled with (a signalling NaN payload).
// No arithmetic produces it (the GPU returns the canonical NaN 0x7fffffff); a body that would store it stores
// kCanonicalNanBits instead, so a consumer never mistakes a computed value for "not yet written".
inline constexpr std::uint32_t kSentinelBits = 0x7fa11ed0u;
inline constexpr std::uint32_t kCanonicalNanBits = 0x7fffffffu;
inline constexpr std::size_t kLine = 128; // every counter and flag owns one line of this many bytes

// Fixed part of the state arena; program-dependent arrays follow at offsets in StateLayout.
struct alignas(128) ControlBlock {
  ErrorRecord error; // first error of the run
  unsigned char pad0[kLine - sizeof(ErrorRecord)];
  std::uint32_t abort; // nonzero: every block leaves at its next check
  unsigned char pad1[kLine - sizeof(std::uint32_t)];
};
static_assert(sizeof(ControlBlock) == 2 * kLine);

// Byte offsets of the program-dependent arrays inside the state arena (all kLine-aligned).
struct StateLayout {
  std::uint64_t claim = 0;      // lines: [0] dataflow ticket, [1 + L] ticket of level L (level modes)
  std::uint64_t task_done = 0;  // one line per task: uint64 completion counter
  std::uint64_t tile_flags = 0; // one line per tile: uint32 epoch of its last completion (0 if unused)
  std::uint64_t barrier = 0;    // gridflow grid barrier state (BarrierState)
  std::uint64_t scratch = 0;    // start of per-task scratch (partials, look-back words, arrival counters)
  std::uint64_t total = 0;      // arena size in bytes
};

} // namespace gridflow::program
