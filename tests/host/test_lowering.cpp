// Lowering: tiling policy, dependency lowering per mode, levels, arena layout, static schedules.
#include "kernels/tile_shapes.hpp"
#include "runtime/errors.hpp"
#include "runtime/lean_program.hpp"
#include "runtime/protocol.hpp"
#include "runtime/tiles.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/lowering.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <functional>
#include <set>
#include <stdexcept>

namespace gridflow {
namespace {

using program::DepKind;
using program::Opcode;

LoweredProgram lower_graph(const Graph& g, SyncMode mode, std::uint32_t blocks = 132,
                           Schedule schedule = Schedule::dynamic, bool per_tile = true) {
  LoweringOptions o;
  o.mode = mode;
  o.grid_blocks = blocks;
  o.schedule = schedule;
  o.per_tile_deps = per_tile;
  return lower(g, analyze(g), o);
}

Graph chain_graph() {
  Graph g("chain");
  g.add_buffer("x", DType::f32, {64, 1024}, InitUniform{});
  g.add_buffer("y", DType::f32, {64, 1024});
  g.add_buffer("r", DType::f32, {64});
  g.add_buffer("s", DType::f32, {1});
  g.softmax("sm", "x", "y");
  g.reduce("rows", "y", "r", ReduceFn::sum, Axis::row);
  g.reduce("total", "r", "s", ReduceFn::sum);
  return g;
}

// `ops` softmaxes in a row chain over 16 x 1024 floats: x0 -> s1 -> x1 -> ... -> x<ops>.
Graph softmax_row_chain(int ops) {
  Graph g("rowchain");
  g.add_buffer("x0", DType::f32, {16, 1024}, InitUniform{});
  for (int i = 1; i <= ops; ++i) {
    g.add_buffer("x" + std::to_string(i), DType::f32, {16, 1024});
    g.softmax("s" + std::to_string(i), "x" + std::to_string(i - 1), "x" + std::to_string(i));
  }
  return g;
}

TEST(Lowering, TilesScaleWithTheData) {
  Graph g("sizes");
  g.add_buffer("small", DType::f32, {16384}, InitUniform{});
  g.add_buffer("big", DType::f32, {std::int64_t{1} << 26}, InitUniform{});
  g.add_buffer("o1", DType::f32, {1});
  g.add_buffer("o2", DType::f32, {1});
  g.reduce("small", "small", "o1", ReduceFn::sum);
  g.reduce("big", "big", "o2", ReduceFn::sum);
  const LoweredProgram p = lower_graph(g, SyncMode::flags, 132);
  EXPECT_LE(p.tasks[0].num_tiles, 8u);   // a 16K reduce wants a few blocks
  EXPECT_GE(p.tasks[1].num_tiles, 132u); // a 256 MiB reduce wants every SM
  for (const auto& t : p.tasks)
    EXPECT_EQ(t.tile_size % 1024, 0);
}

// scan_all tiles are whole chunks (threads x items): one chunk while the task is small, up to
// scan_chunks_per_tile chunks once it has that many chunks per block and wave.
TEST(Lowering, ScanTilesGrowByWholeChunks) {
  Graph g("scans");
  for (std::int64_t n : {std::int64_t{100000}, std::int64_t{3} << 22, std::int64_t{1} << 28}) {
    const std::string name = std::to_string(n);
    g.add_buffer("v" + name, DType::f32, {n}, InitUniform{});
    g.add_buffer("c" + name, DType::f32, {n});
    g.scan("scan" + name, "v" + name, "c" + name, ScanFn::sum);
  }
  LoweringOptions o;
  o.grid_blocks = 264;
  o.threads_per_block = 256;
  const std::int64_t chunk = 256 * 16;
  for (std::uint32_t waves : {1u, 4u})
    for (std::uint32_t most : {1u, 4u, 8u}) {
      o.tiles.waves = waves;
      o.tiles.scan_chunks_per_tile = most;
      const LoweredProgram p = lower(g, analyze(g), o);
      const std::int64_t per_tile = (3072 + 264 * waves - 1) / (264 * waves); // 3072 chunks over 264 x waves tiles
      EXPECT_EQ(p.tasks[0].tile_size, chunk) << most;                         // 25 chunks: one per tile
      EXPECT_EQ(p.tasks[1].tile_size, chunk * std::min<std::int64_t>(per_tile, most)) << waves << " " << most;
      EXPECT_EQ(p.tasks[2].tile_size, chunk * most) << most; // 65536 chunks: the cap
      for (const auto& t : p.tasks)
        EXPECT_EQ(t.num_tiles, (program::task_items(t) + t.tile_size - 1) / t.tile_size);
    }
}

// select tiles grow like scan tiles, but no further than the copy ring holds (the tile's second pass reads it
// from there): 4 chunks at 256 and 1024 threads, 5 at 128.
TEST(Lowering, SelectTilesGrowByWholeChunksUpToTheRing) {
  Graph g("selects");
  for (std::int64_t n : {std::int64_t{100000}, std::int64_t{1} << 28}) {
    const std::string name = std::to_string(n);
    g.add_buffer("v" + name, DType::f32, {n}, InitUniform{});
    g.add_buffer("k" + name, DType::f32, {n});
    g.add_buffer("n" + name, DType::i32, {1});
    g.select("select" + name, "v" + name, "k" + name, "n" + name, CmpFn::gt, 0.0);
  }
  LoweringOptions o;
  o.grid_blocks = 264;
  for (const auto& [threads, ring_chunks] : {std::pair{128u, 5}, std::pair{256u, 4}, std::pair{1024u, 4}}) {
    o.threads_per_block = threads;
    o.tiles.scan_items_per_thread = kernels::scan_items_for(static_cast<int>(threads));
    const std::int64_t chunk = std::int64_t{threads} * o.tiles.scan_items_per_thread;
    const LoweredProgram p = lower(g, analyze(g), o);
    EXPECT_EQ(p.tasks[0].tile_size, chunk) << threads;               // a few chunks: one per tile
    EXPECT_EQ(p.tasks[1].tile_size, chunk * ring_chunks) << threads; // thousands: what the ring holds
  }
}

TEST(Lowering, EveryItemIsCoveredExactlyOnce) {
  const LoweredProgram p = lower_graph(chain_graph(), SyncMode::flags);
  for (const auto& t : p.tasks) {
    std::int64_t covered = 0;
    for (std::uint32_t k = 0; k < t.num_tiles; ++k) {
      const auto r = program::tile_items(t, k);
      EXPECT_EQ(r.begin, covered);
      covered = r.end;
      EXPECT_GT(r.size(), 0);
    }
    EXPECT_EQ(covered, program::task_items(t));
  }
}

TEST(Lowering, GraphEdgesAreKeptInEveryMode) {
  for (SyncMode m : kAllSyncModes) {
    const LoweredProgram p = lower_graph(chain_graph(), m);
    ASSERT_EQ(p.pred_begin.size(), 4u);
    EXPECT_EQ(p.pred_begin[1] - p.pred_begin[0], 0u);
    ASSERT_EQ(p.pred_begin[2] - p.pred_begin[1], 1u);
    EXPECT_EQ(p.pred_tasks[p.pred_begin[1]], 0u);
    EXPECT_EQ(p.pred_tasks[p.pred_begin[2]], 1u);
  }
}

TEST(Lowering, LevelModesHaveNoDependencyEntries) {
  for (SyncMode m : {SyncMode::grid_sync, SyncMode::barrier}) {
    const LoweredProgram p = lower_graph(chain_graph(), m);
    EXPECT_TRUE(p.deps.empty());
    EXPECT_EQ(p.barriers_per_run, 2u);
    ASSERT_EQ(p.level_begin.size(), 4u);
    EXPECT_EQ(p.level_begin.back(), p.tiles.size());
    for (std::uint32_t l = 0; l < 3; ++l)
      for (std::uint32_t g = p.level_begin[l]; g < p.level_begin[l + 1]; ++g)
        EXPECT_EQ(p.tasks[p.tiles[g].task].level, l);
  }
}

TEST(Lowering, RowConsumersWaitOnlyForTheirProducerTiles) {
  const LoweredProgram p = lower_graph(chain_graph(), SyncMode::flags);
  const auto& sm = p.tasks[0];
  const auto& rows = p.tasks[1];
  EXPECT_TRUE(sm.flags & program::kSignalTiles);
  EXPECT_TRUE(p.uses_tile_flags);
  for (std::uint32_t k = 0; k < rows.num_tiles; ++k) {
    const auto& tile = p.tiles[rows.first_tile + k];
    ASSERT_EQ(tile.dep_count, 1u);
    const auto& d = p.deps[tile.dep_first];
    EXPECT_EQ(d.kind, static_cast<std::uint32_t>(DepKind::tiles));
    // The producer tiles cover exactly the consumer's rows.
    const auto r = program::tile_items(rows, k);
    EXPECT_LE(program::tile_items(sm, d.tile_begin).begin, r.begin);
    EXPECT_GE(program::tile_items(sm, d.tile_end - 1).end, r.end);
  }
  // reduce_all's single output is not tile-local: its consumer waits for the whole task.
  const auto& total = p.tasks[2];
  const auto& d = p.deps[p.tiles[total.first_tile].dep_first];
  EXPECT_EQ(d.kind, static_cast<std::uint32_t>(DepKind::task));
}

TEST(Lowering, NoTileDepsMeansWholeTasks) {
  const LoweredProgram p = lower_graph(chain_graph(), SyncMode::flags, 132, Schedule::dynamic, false);
  EXPECT_FALSE(p.uses_tile_flags);
  for (const auto& d : p.deps)
    EXPECT_EQ(d.kind, static_cast<std::uint32_t>(DepKind::task));
}

TEST(Lowering, SentinelModePollsEligibleEdgesAndCountsTheRest) {
  Graph g = chain_graph();
  g.add_buffer("k", DType::i32, {64}, InitIota{});
  g.add_buffer("ks", DType::i32, {64});
  g.add_buffer("kt", DType::i32, {1});
  g.scan("ks", "k", "ks", ScanFn::sum);
  g.reduce("kt", "ks", "kt", ReduceFn::sum); // i32 producer: no sentinel possible
  const LoweredProgram p = lower_graph(g, SyncMode::sentinel);
  EXPECT_TRUE(p.buffers[1].sentinel);  // y
  EXPECT_TRUE(p.buffers[2].sentinel);  // r
  EXPECT_FALSE(p.buffers[5].sentinel); // ks (i32)
  auto task_named = [&](const std::string& n) {
    return static_cast<std::uint32_t>(std::find(p.task_names.begin(), p.task_names.end(), n) - p.task_names.begin());
  };
  EXPECT_TRUE(p.tasks[task_named("rows")].flags & program::kPollInputs);
  EXPECT_EQ(p.tiles[p.tasks[task_named("rows")].first_tile].dep_count, 0u);
  EXPECT_EQ(p.tiles[p.tasks[task_named("kt")].first_tile].dep_count, 1u);
}

TEST(Lowering, ArenaLayoutIsLineAligned) {
  Graph g = chain_graph();
  g.add_buffer("v", DType::f32, {100000}, InitUniform{});
  g.add_buffer("vs", DType::f32, {100000});
  g.scan("scan", "v", "vs", ScanFn::sum);
  const LoweredProgram p = lower_graph(g, SyncMode::flags);
  for (std::uint64_t off :
       {p.layout.claim, p.layout.task_done, p.layout.tile_flags, p.layout.barrier, p.layout.scratch})
    EXPECT_EQ(off % program::kLine, 0u);
  EXPECT_GE(p.layout.claim, sizeof(program::ControlBlock));
  for (const auto& t : p.tasks) {
    EXPECT_EQ(t.scratch % program::kLine, 0u);
    EXPECT_LE(t.scratch, p.layout.total);
  }
  const auto& scan = p.tasks[std::find(p.task_names.begin(), p.task_names.end(), "scan") - p.task_names.begin()];
  EXPECT_EQ(scan.opcode, static_cast<std::uint32_t>(Opcode::scan_all));
  EXPECT_GT(scan.num_tiles, 1u);
  EXPECT_LE(scan.scratch + 8 * protocol::lookback_words(scan.num_tiles), p.layout.total);
}

// Every byte of per-task scratch belongs to one task: partials, arrival counters and look-back words never
// overlap each other or the fixed arrays (a partial that overruns its slots corrupts another task's counters).
TEST(Lowering, ScratchRegionsAreDisjointAndInsideTheArena) {
  Graph g("scratch");
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    g.add_buffer("v" + n, DType::f32, {1000000 + i}, InitUniform{});
    g.add_buffer("s" + n, DType::f32, {1});
    g.add_buffer("c" + n, DType::f32, {1000000 + i});
    g.reduce("r" + n, "v" + n, "s" + n, i % 2 ? ReduceFn::argmax : ReduceFn::sum);
    g.scan("scan" + n, "v" + n, "c" + n, ScanFn::sum);
  }
  for (auto& b : g.buffers())
    if (b.name[0] == 's' && b.name.size() == 2 && (b.name[1] - '0') % 2)
      b.dtype = DType::i32;
  const LoweredProgram p = lower_graph(g, SyncMode::flags, 132);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> regions;
  for (const auto& t : p.tasks) {
    if (t.num_tiles <= 1)
      continue;
    if (t.opcode == static_cast<std::uint32_t>(Opcode::reduce_all)) {
      regions.emplace_back(t.counter, t.counter + program::kLine);
      regions.emplace_back(t.scratch, t.scratch + sizeof(program::Partial) * t.num_tiles);
    } else if (t.opcode == static_cast<std::uint32_t>(Opcode::scan_all)) {
      regions.emplace_back(t.scratch, t.scratch + 8 * protocol::lookback_words(t.num_tiles));
    }
  }
  ASSERT_GE(regions.size(), 8u);
  std::sort(regions.begin(), regions.end());
  EXPECT_GE(regions.front().first, p.layout.scratch);
  for (std::size_t i = 1; i < regions.size(); ++i)
    EXPECT_LE(regions[i - 1].second, regions[i].first) << i;
  EXPECT_LE(regions.back().second, p.layout.total);
}

// The counting ops: descriptors carry bins / cmp / threshold / aux; their scratch is disjoint and inside the
// arena; consumers of their outputs wait for whole tasks; they never poll and never get sentinel outputs.
TEST(Lowering, CountingOpsDescriptorsScratchAndDependencies) {
  Graph g("counting");
  const std::int64_t n = 300000;
  g.add_buffer("x", DType::f32, {n}, InitUniform{});
  g.add_buffer("k", DType::i32, {n}, InitUniform{0, 9, 4});
  g.add_buffer("y", DType::f32, {n});
  g.add_buffer("c", DType::i32, {10});
  g.add_buffer("o", DType::i32, {10});
  g.add_buffer("p", DType::i32, {n});
  g.add_buffer("kept", DType::f32, {n});
  g.add_buffer("cnt", DType::i32, {1});
  g.add_buffer("z", DType::f32, {n});
  g.softmax("sm", ViewSpec::block("x", 0, 1000, 300), ViewSpec::block("y", 0, 1000, 300)); // f32 producer
  g.histogram("h", "k", "c");
  g.scan("sc", "c", "o", ScanFn::sum, true);
  g.scatter("sp", "k", "o", "p");
  g.select("sel", "y", "kept", "cnt", CmpFn::ge, 0.001);
  g.scan("after_sel", "kept", "z", ScanFn::sum);
  for (SyncMode mode : {SyncMode::flags, SyncMode::sentinel}) {
    const LoweredProgram p = lower_graph(g, mode);
    auto task = [&](const char* name) -> const program::TaskDesc& {
      for (std::size_t i = 0; i < p.tasks.size(); ++i)
        if (p.task_names[i] == name)
          return p.tasks[i];
      throw std::runtime_error(name);
    };
    const auto& h = task("h");
    const auto& sp = task("sp");
    const auto& sel = task("sel");
    EXPECT_EQ(h.opcode, static_cast<std::uint32_t>(Opcode::histogram));
    EXPECT_EQ(h.param, 10u);
    EXPECT_GT(h.num_tiles, 1u);
    EXPECT_EQ(sp.param, 10u);
    EXPECT_EQ(sp.aux_buffer, 4u); // "o"
    EXPECT_EQ(program::const_u64(sp, 0), static_cast<std::uint64_t>(n));
    EXPECT_EQ(sel.param, static_cast<std::uint32_t>(CmpFn::ge));
    EXPECT_EQ(sel.consts[0], std::bit_cast<std::uint32_t>(0.001f));
    EXPECT_EQ(sel.aux_buffer, 7u); // "cnt"
    EXPECT_EQ(sel.tile_size, 256 * 16);
    for (const auto* t : {&h, &sp, &sel}) {
      EXPECT_FALSE(t->flags & program::kPollInputs) << to_string(mode);
      EXPECT_FALSE(t->flags & program::kSentinelOutput);
    }
    // Scratch: histogram counter + rows, scatter rows + ready words, select look-back words: disjoint, in the arena.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> regions{
        {h.counter, h.counter + program::kLine},
        {h.scratch, h.scratch + 4ull * h.param * h.num_tiles},
        {sp.scratch, sp.scratch + program::scatter_ready_words_offset(sp) + 8ull * sp.num_tiles},
        {sel.scratch, sel.scratch + 8 * protocol::lookback_words(sel.num_tiles)}};
    std::sort(regions.begin(), regions.end());
    for (std::size_t i = 1; i < regions.size(); ++i)
      EXPECT_LE(regions[i - 1].second, regions[i].first) << i;
    EXPECT_LE(regions.back().second, p.layout.total);
    // Every tile of the scan after the select waits for the whole select task (its output is not tile-local).
    const auto& after = task("after_sel");
    const std::uint32_t sel_index = static_cast<std::uint32_t>(&sel - p.tasks.data());
    for (std::uint32_t k = 0; k < after.num_tiles; ++k) {
      const program::TileDesc& tile = p.tiles[after.first_tile + k];
      bool waits = false;
      for (std::uint32_t d = tile.dep_first; d < tile.dep_first + tile.dep_count; ++d)
        if (p.deps[d].task == sel_index) {
          EXPECT_EQ(p.deps[d].kind, static_cast<std::uint32_t>(DepKind::task));
          waits = true;
        }
      EXPECT_TRUE(waits) << k;
    }
  }
}

TEST(Lowering, SentinelPrefillCoversExactlyTheWritersOutput) {
  Graph g("partial");
  g.add_buffer("x", DType::f32, {100}, InitUniform{});
  g.add_buffer("y", DType::f32, {100});
  g.add_buffer("s", DType::f32, {1});
  g.scan("sc", ViewSpec::range("x", 0, 60), ViewSpec::range("y", 10, 60), ScanFn::sum);
  g.reduce("r", ViewSpec::range("y", 10, 60), "s", ReduceFn::sum);
  const LoweredProgram p = lower_graph(g, SyncMode::sentinel);
  EXPECT_TRUE(p.buffers[1].sentinel);
  EXPECT_EQ(p.buffers[1].sentinel_offset, 10);
  EXPECT_EQ(p.buffers[1].sentinel_count, 60);
}

TEST(Lowering, SingleRowOpsLowerToWholeRange) {
  Graph g("one-row");
  g.add_buffer("x", DType::f32, {1, 50000}, InitUniform{});
  g.add_buffer("s", DType::f32, {1});
  g.add_buffer("c", DType::f32, {1, 50000});
  g.reduce("r", "x", "s", ReduceFn::sum, Axis::row);
  g.scan("c", "x", "c", ScanFn::sum, false, Axis::row);
  const LoweredProgram p = lower_graph(g, SyncMode::flags);
  EXPECT_EQ(p.tasks[0].opcode, static_cast<std::uint32_t>(Opcode::reduce_all));
  EXPECT_EQ(p.tasks[1].opcode, static_cast<std::uint32_t>(Opcode::scan_all));
}

TEST(Lowering, StaticScheduleCoversEveryTileInIncreasingOrder) {
  for (SyncMode m : kAllSyncModes) {
    const LoweredProgram p = lower_graph(chain_graph(), m, 7, Schedule::static_list);
    ASSERT_EQ(p.block_begin.size(), 8u);
    std::set<std::uint32_t> seen;
    for (std::uint32_t b = 0; b < 7; ++b)
      for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i) {
        EXPECT_TRUE(seen.insert(p.block_tiles[i]).second);
        if (i > p.block_begin[b]) {
          EXPECT_LT(p.block_tiles[i - 1], p.block_tiles[i]); // increasing lists: deadlock freedom
        }
      }
    EXPECT_EQ(seen.size(), p.tiles.size());
  }
}

// The executors' copy of each static entry's descriptor (read by a claim without waiting for the tile id).
TEST(Lowering, BlockDescsFollowTheStaticLists) {
  LoweredProgram p = lower_graph(chain_graph(), SyncMode::flags, 7, Schedule::static_list);
  std::vector<program::TileDesc> d = block_descs(p);
  ASSERT_EQ(d.size(), p.block_tiles.size());
  for (std::size_t i = 0; i < d.size(); ++i) {
    const program::TileDesc& t = p.tiles[p.block_tiles[i]];
    EXPECT_EQ(d[i].task, t.task);
    EXPECT_EQ(d[i].index, t.index);
    EXPECT_EQ(d[i].dep_first, t.dep_first);
    EXPECT_EQ(d[i].dep_count, t.dep_count);
  }
  p.block_tiles[0] = static_cast<std::uint32_t>(p.tiles.size()); // out of range: no descriptor to copy
  EXPECT_EQ(block_descs(p)[0].task, program::kNoTile);
  EXPECT_TRUE(block_descs(lower_graph(chain_graph(), SyncMode::flags, 7)).empty()); // dynamic: no lists
}

TEST(Lowering, StaticScheduleKeepsRowChainsOnOneBlock) {
  const Graph g = softmax_row_chain(8);
  const LoweredProgram p = lower_graph(g, SyncMode::flags, 16, Schedule::static_list);
  std::vector<std::uint32_t> block_of(p.tiles.size());
  for (std::uint32_t b = 0; b < 16; ++b)
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i)
      block_of[p.block_tiles[i]] = b;
  // Tile k of every softmax runs where tile k of the previous one ran.
  for (std::size_t t = 1; t < p.tasks.size(); ++t)
    for (std::uint32_t k = 0; k < p.tasks[t].num_tiles; ++k)
      EXPECT_EQ(block_of[p.tasks[t].first_tile + k], block_of[p.tasks[t - 1].first_tile + k]);
}

// A DAG of row ops over independent rows (each op reads one of the eight latest outputs). A block per row: every
// row's ops stay on its block, so no tile waits. One spare block: it takes a row's tile only where that starts it
// earlier by more than the hop and the wait steps, so few tiles wait (with only the hop charged, 877 of its 1024
// tiles wait).
TEST(Lowering, StaticScheduleKeepsRowDagsOnOneBlock) {
  constexpr std::int64_t kRows = 16;
  Graph g("row-dag");
  g.add_buffer("x0", DType::f32, {kRows, 1024}, InitUniform{-1, 1, 6});
  std::uint64_t state = 12345;
  auto next = [&] { return state = state * 6364136223846793005ULL + 1442695040888963407ULL, state >> 33; };
  std::size_t reads_a_task = 0; // ops whose input some op wrote (not x0)
  for (int i = 1; i <= 64; ++i) {
    const int src = i - 1 - static_cast<int>(next() % static_cast<std::uint64_t>(std::min(i, 8)));
    reads_a_task += src > 0;
    g.add_buffer("x" + std::to_string(i), DType::f32, {kRows, 1024});
    if (next() % 2)
      g.softmax("op" + std::to_string(i), "x" + std::to_string(src), "x" + std::to_string(i));
    else
      g.scan("op" + std::to_string(i), "x" + std::to_string(src), "x" + std::to_string(i), ScanFn::sum, false,
             Axis::row);
  }
  const LoweredProgram p = lower_graph(g, SyncMode::flags, kRows, Schedule::static_list);
  ASSERT_EQ(p.tiles.size(), 64u * kRows);
  std::size_t local = 0;
  for (std::uint32_t t = 0; t < p.tiles.size(); ++t) {
    EXPECT_EQ(p.tiles[t].dep_count, 0u) << "tile " << t << " of task " << p.task_names[p.tiles[t].task];
    p.for_each_dependency(t, [&](const program::DepDesc&) { ++local; });
  }
  EXPECT_GT(reads_a_task, 32u);
  EXPECT_EQ(local, reads_a_task * kRows); // each such op's tile reads one producer row, on its own block

  const LoweredProgram spare = lower_graph(g, SyncMode::flags, kRows + 1, Schedule::static_list);
  std::size_t waiting = 0;
  for (const program::TileDesc& t : spare.tiles)
    waiting += t.dep_count > 0;
  EXPECT_LE(waiting, spare.tiles.size() / 8) << describe(spare);
}

// The static schedule drops the waits its own program order enforces: a row chain kept on one block waits for
// nothing, keeps its dependencies as local ones (for analysis), and publishes no flags; the dynamic schedule of
// the same graph waits per tile and publishes flags for every task but the last, which nobody awaits.
TEST(Lowering, StaticScheduleDropsWaitsItsProgramOrderEnforces) {
  Graph g = softmax_row_chain(4);
  g.add_buffer("total", DType::f32, {1});
  g.reduce("sum", "x4", "total", ReduceFn::sum);
  const LoweredProgram st = lower_graph(g, SyncMode::flags, 16, Schedule::static_list);
  const LoweredProgram dy = lower_graph(g, SyncMode::flags, 16, Schedule::dynamic);
  ASSERT_EQ(st.tiles.size(), dy.tiles.size());
  for (std::uint32_t t = 1; t < 4; ++t)
    for (std::uint32_t k = 0; k < st.tasks[t].num_tiles; ++k) {
      const std::uint32_t g_tile = st.tasks[t].first_tile + k;
      EXPECT_EQ(st.tiles[g_tile].dep_count, 0u) << "task " << t << " tile " << k;
      std::size_t local = 0, waited = 0;
      st.for_each_dependency(g_tile, [&](const program::DepDesc&) { ++local; });
      dy.for_each_dependency(g_tile, [&](const program::DepDesc&) { ++waited; });
      EXPECT_EQ(local, 1u);
      EXPECT_EQ(waited, 1u);
      EXPECT_EQ(dy.tiles[g_tile].dep_count, 1u);
    }
  for (std::uint32_t t = 0; t < 3; ++t) {
    EXPECT_EQ(st.tasks[t].flags & (program::kSignalTiles | program::kSignalCounter), 0u) << t;
    EXPECT_NE(dy.tasks[t].flags & program::kSignalTiles, 0u) << t;
  }
  // Each reduce tile waits for 4 rows of the last softmax (flags); nobody waits for the reduce.
  EXPECT_NE(dy.tasks[3].flags & program::kSignalTiles, 0u);
  EXPECT_EQ(st.tasks[4].flags & (program::kSignalTiles | program::kSignalCounter), 0u);
  EXPECT_EQ(dy.tasks[4].flags & (program::kSignalTiles | program::kSignalCounter), 0u);
}

TEST(Lowering, DescribeListsTasks) {
  const std::string s = describe(lower_graph(chain_graph(), SyncMode::flags));
  EXPECT_NE(s.find("softmax_rows"), std::string::npos);
  EXPECT_NE(s.find("waits for tiles"), std::string::npos);
  EXPECT_EQ(s.find("static lists:"), std::string::npos); // dynamic schedule: no lists
  // A row chain on static lists: nothing waits, every dependency is kept by the block's order, every row but the
  // first op's is forwarded.
  const LoweredProgram chain = lower_graph(softmax_row_chain(4), SyncMode::flags, 16, Schedule::static_list);
  std::size_t forwarded = 0;
  for (const std::uint8_t f : chain.forwarded)
    forwarded += f != 0;
  ASSERT_GT(forwarded, 0u);
  EXPECT_NE(describe(chain).find(fmt::format("static lists: 0 of {} tiles wait (for other blocks' tiles or whole "
                                             "tasks), {} dependencies kept by their block's order, {} rows forwarded",
                                             chain.tiles.size(), chain.local_deps.size(), forwarded)),
            std::string::npos)
      << describe(chain);
}

TEST(Lowering, RejectsBadShapes) {
  LoweringOptions o;
  o.threads_per_block = 100;
  const Graph g = chain_graph();
  EXPECT_THROW(lower(g, analyze(g), o), GraphError);
}

} // namespace
} // namespace gridflow

namespace gridflow {
namespace {

// The automatic schedule: static lists for graphs of lean tiles (lean rows, and a whole-range sum beside them as lean
// partials), the dynamic ticket otherwise (here a whole-range argmax, which has no lean form).
TEST(Lowering, AutomaticScheduleIsStaticForLeanRowGraphs) {
  EXPECT_EQ(lower_graph(softmax_row_chain(8), SyncMode::flags, 132, Schedule::automatic).schedule,
            Schedule::static_list);
  EXPECT_EQ(lower_graph(chain_graph(), SyncMode::flags, 132, Schedule::automatic).schedule, Schedule::static_list);
  Graph g = chain_graph();
  g.add_buffer("t", DType::f32, {1});
  g.reduce("everything", "y", "t", ReduceFn::sum);
  EXPECT_EQ(lower_graph(g, SyncMode::flags, 132, Schedule::automatic).schedule, Schedule::static_list);
  g.add_buffer("a", DType::i32, {1});
  g.reduce("best", "y", "a", ReduceFn::argmax);
  EXPECT_EQ(lower_graph(g, SyncMode::flags, 132, Schedule::automatic).schedule, Schedule::dynamic);
}

// A whole-range reduce or scan of at most one lean row's elements runs as that row; a longer one keeps its
// whole-range tiles.
TEST(Lowering, ShortWholeRangeReducesAndScansRunAsOneLeanRow) {
  Graph g("short");
  g.add_buffer("x", DType::f32, {4, 256}, InitUniform{});
  g.add_buffer("big", DType::f32, {1025}, InitUniform{});
  g.add_buffer("s", DType::f32, {1});
  g.add_buffer("c", DType::f32, {4, 256});
  g.add_buffer("b", DType::f32, {1});
  g.add_buffer("d", DType::f32, {1025});
  g.reduce("sum", "x", "s", ReduceFn::sum);
  g.scan("scan", "x", "c", ScanFn::sum);
  g.reduce("big_sum", "big", "b", ReduceFn::sum);
  g.scan("big_scan", "big", "d", ScanFn::sum);
  const LoweredProgram p = lower_graph(g, SyncMode::flags);
  const auto task = [&](const char* name) {
    const auto it = std::find(p.task_names.begin(), p.task_names.end(), name);
    return p.tasks.at(static_cast<std::size_t>(it - p.task_names.begin()));
  };
  for (const char* name : {"sum", "scan"}) {
    const program::TaskDesc t = task(name);
    EXPECT_TRUE(program::lean_rows(t, 256)) << name;
    EXPECT_EQ(t.rows, 1) << name;
    EXPECT_EQ(t.cols, 1024) << name;
    EXPECT_EQ(t.num_tiles, 1u) << name;
  }
  EXPECT_EQ(task("sum").opcode, static_cast<std::uint32_t>(program::Opcode::reduce_rows));
  EXPECT_EQ(task("scan").opcode, static_cast<std::uint32_t>(program::Opcode::scan_rows));
  EXPECT_EQ(task("big_sum").opcode, static_cast<std::uint32_t>(program::Opcode::reduce_all));
  EXPECT_EQ(task("big_scan").opcode, static_cast<std::uint32_t>(program::Opcode::scan_all));
}

// Whole-range reduces beside lean row tiles become lean partial tiles (one lean row of elements each, the last one
// shorter), so the lean megakernel runs the whole program; beside any other task, or as argmax, or with more partials
// than one lean row folds, they keep their streamed tiles. A consumer of one still waits for its whole task.
TEST(Lowering, WholeRangeReducesBesideLeanRowsRunAsLeanPartials) {
  // A softmax chain over 16 x 1024 floats with a sum of its first output and a softmax of that sum, an i32 min over
  // 5000 elements, a row reduce, and `extra`'s task.
  const auto build = [](const std::function<void(Graph&)>& extra) {
    Graph g = softmax_row_chain(3);
    g.add_buffer("t1", DType::f32, {1});
    g.add_buffer("odd", DType::i32, {5000}, InitUniform{});
    g.add_buffer("t3", DType::i32, {1});
    g.add_buffer("r", DType::f32, {16});
    g.reduce("sum1", "x1", "t1", ReduceFn::sum);
    g.reduce("odd_min", "odd", "t3", ReduceFn::min);
    g.reduce("rows", "x3", "r", ReduceFn::sum, Axis::row);
    g.add_buffer("t1s", DType::f32, {1});
    g.softmax("after_sum", "t1", "t1s");
    extra(g);
    return lower_graph(g, SyncMode::flags, 132, Schedule::static_list);
  };
  const auto task = [](const LoweredProgram& p, const char* name) {
    const auto it = std::find(p.task_names.begin(), p.task_names.end(), name);
    return p.tasks.at(static_cast<std::size_t>(it - p.task_names.begin()));
  };
  const LoweredProgram p = build([](Graph&) {});
  EXPECT_TRUE(lean_program(p, 256));
  EXPECT_FALSE(resident_lean_program(p, 256)); // the resident kernel's lean path has no partial tiles
  EXPECT_TRUE(
      resident_lean_program(lower_graph(softmax_row_chain(3), SyncMode::flags, 132, Schedule::static_list), 256));
  const program::TaskDesc sum = task(p, "sum1"), odd = task(p, "odd_min");
  EXPECT_EQ(sum.opcode, static_cast<std::uint32_t>(Opcode::reduce_all));
  EXPECT_EQ(sum.tile_size, 1024);
  EXPECT_EQ(sum.num_tiles, 16u);
  EXPECT_TRUE(program::lean_partials(sum, 256));
  EXPECT_EQ(odd.num_tiles, 5u); // 4 x 1024 + 904
  EXPECT_TRUE(program::lean_partials(odd, 256));
  // A consumer of a reduce waits for its whole task (the last arriver writes the value).
  const program::TaskDesc after = task(p, "after_sum");
  ASSERT_EQ(p.tiles[after.first_tile].dep_count, 1u);
  EXPECT_EQ(p.deps[p.tiles[after.first_tile].dep_first].kind, static_cast<std::uint32_t>(DepKind::task));
  // The instructions: one row each, `out` the task's one value; never plain.
  const std::vector<void*> bases(p.buffers.size(), reinterpret_cast<void*>(std::uintptr_t{1} << 20));
  std::size_t seen = 0;
  for (const program::TileInstr& in : block_instrs(p, bases)) {
    if (p.task_names[in.task] != "odd_min")
      continue;
    const std::uint32_t index = in.tile - odd.first_tile;
    EXPECT_EQ(in.rows, 1u);
    EXPECT_EQ(in.cols, index + 1 < odd.num_tiles ? 1024u : 904u) << index;
    EXPECT_EQ(in.in, (std::uint64_t{1} << 20) + 4 * (odd.in_offset + 1024 * index));
    EXPECT_EQ(in.out, (std::uint64_t{1} << 20) + 4 * odd.out_offset);
    EXPECT_EQ(in.flags & program::kPlainTile, 0u);
    ++seen;
  }
  EXPECT_EQ(seen, 5u);

  // 2^20 elements: 1024 partials, one full lean row, still lean.
  const LoweredProgram most = build([](Graph& g) {
    g.add_buffer("big", DType::f32, {std::int64_t{1} << 20}, InitUniform{});
    g.add_buffer("tb", DType::f32, {1});
    g.reduce("big_sum", "big", "tb", ReduceFn::sum);
  });
  EXPECT_TRUE(program::lean_partials(task(most, "big_sum"), 256));
  EXPECT_TRUE(lean_program(most, 256));
  // Beside a histogram, an argmax (its partials would need indices) or a reduce of more partials than a lean row
  // folds, every reduce keeps its streamed tiles; so do reduces with no lean rows beside them.
  const std::vector<std::function<void(Graph&)>> others = {[](Graph& g) {
                                                             g.add_buffer("kk", DType::i32, {4096}, InitUniform{0, 7});
                                                             g.add_buffer("h", DType::i32, {8});
                                                             g.histogram("other", "kk", "h");
                                                           },
                                                           [](Graph& g) {
                                                             g.add_buffer("ta", DType::i32, {1});
                                                             g.reduce("other", "x3", "ta", ReduceFn::argmax);
                                                           },
                                                           [](Graph& g) {
                                                             g.add_buffer("big", DType::f32,
                                                                          {(std::int64_t{1} << 20) + 1}, InitUniform{});
                                                             g.add_buffer("tb", DType::f32, {1});
                                                             g.reduce("other", "big", "tb", ReduceFn::sum);
                                                           }};
  for (std::size_t i = 0; i < others.size(); ++i) {
    const LoweredProgram q = build(others[i]);
    EXPECT_FALSE(lean_program(q, 256)) << i;
    for (const char* name : {"sum1", "odd_min", "other"})
      EXPECT_FALSE(program::lean_partials(task(q, name), 256)) << i << " " << name;
  }
  LoweringOptions off;
  off.tiles.lean_partials = false;
  Graph chain = softmax_row_chain(2);
  chain.add_buffer("t", DType::f32, {1});
  chain.reduce("sum", "x1", "t", ReduceFn::sum);
  EXPECT_TRUE(lean_program(lower(chain, analyze(chain), LoweringOptions{}), 256));
  EXPECT_FALSE(lean_program(lower(chain, analyze(chain), off), 256)); // turned off: streamed tiles
  Graph alone("alone");
  alone.add_buffer("x", DType::f32, {16 * 1024}, InitUniform{});
  alone.add_buffer("s", DType::f32, {1});
  alone.reduce("sum", "x", "s", ReduceFn::sum);
  EXPECT_FALSE(program::lean_partials(lower_graph(alone, SyncMode::flags).tasks.at(0), 256));
}

// Whole-range scans beside lean row tiles become lean look-back tiles (one lean row of elements each, the last one
// shorter): the lean megakernel runs the whole program, a row op over a scan's output waits for the scan tiles under
// its rows only, and the descriptor check takes the lean tile size; off, alone or beside another op, they keep their
// chunked tiles.
// Graph-order lists (LoweringOptions::graph_order): two branches of two steps each, declared branch by branch. Level
// by level every row's block runs a, b, c, d, so neither c nor d follows the step it reads; in graph order it runs a,
// c, b, d, and both are forwarded. Level modes keep level order (their lists must be).
TEST(Lowering, GraphOrderListsFollowEachStepWithTheStepItReads) {
  Graph g("branches");
  g.add_buffer("x0", DType::f32, {4, 1024}, InitUniform{-2, 2, 3});
  for (const char* b : {"x1", "x2", "x3", "x4"})
    g.add_buffer(b, DType::f32, {4, 1024});
  g.softmax("a", "x0", "x1");
  g.softmax("c", "x1", "x3");
  g.softmax("b", "x0", "x2");
  g.softmax("d", "x2", "x4");
  const auto forwarded = [](const LoweredProgram& p) {
    std::size_t n = 0;
    for (const std::uint8_t f : p.forwarded)
      n += f != 0;
    return n;
  };
  const auto names_on_block = [](const LoweredProgram& p, std::uint32_t b) {
    std::string s;
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i)
      s += p.task_names[p.tiles[p.block_tiles[i]].task];
    return s;
  };
  LoweringOptions o;
  o.grid_blocks = 4;
  o.schedule = Schedule::static_list;
  o.sinks_last = false;
  const Analysis a = analyze(g);
  for (SyncMode mode : kAllSyncModes) {
    o.mode = mode;
    o.graph_order = false;
    const LoweredProgram levels = lower(g, a, o);
    o.graph_order = true;
    const LoweredProgram graph = lower(g, a, o);
    const bool dataflow = mode == SyncMode::flags || mode == SyncMode::sentinel;
    for (std::uint32_t b = 0; b < 4; ++b) {
      EXPECT_EQ(names_on_block(levels, b), "abcd") << to_string(mode) << " block " << b;
      EXPECT_EQ(names_on_block(graph, b), dataflow ? "acbd" : "abcd") << to_string(mode) << " block " << b;
    }
    EXPECT_EQ(forwarded(levels), 0u) << to_string(mode);
    EXPECT_EQ(forwarded(graph), dataflow ? 8u : 0u) << to_string(mode);
  }
}

// A level of lean row tiles wider than the default grid (2 blocks per SM) runs on the lean row kernel's blocks per SM
// (lean_row_blocks_per_sm: 4 of 256 threads on a device whose lean row kernel fits them); everything else keeps the
// default or what was asked, and a shape only the lean row kernel fits is refused for a program it does not run.
TEST(Lowering, WideLevelsOfLeanRowTilesRunOnMoreBlocksPerSm) {
  const auto wide = [](int ops) {
    Graph g("wide");
    g.add_buffer("x", DType::f32, {256, 1024}, InitUniform{-1, 1, 3});
    for (int i = 0; i < ops; ++i) {
      g.add_buffer(fmt::format("y{}", i), DType::f32, {256, 1024});
      g.softmax(fmt::format("s{}", i), "x", fmt::format("y{}", i));
    }
    return g;
  };
  GpuShape device;
  device.threads_per_block = 256;
  device.sm_count = 132;
  device.max_blocks_per_sm = 2;
  device.max_lean_blocks_per_sm = 4;
  const auto plan = [&](const Graph& g, SyncMode mode, std::uint32_t blocks_per_sm = 0, bool lean_kernel = true) {
    SessionOptions o;
    o.backend = Backend::gpu;
    o.mode = mode;
    o.blocks_per_sm = blocks_per_sm;
    o.exec.lean_kernel = lean_kernel;
    return lower_for_gpu(g, analyze(g), o, device, "H200");
  };
  const GpuPlan four = plan(wide(3), SyncMode::flags); // one level of 768 tiles
  EXPECT_EQ(four.shape.blocks_per_sm, 4u);
  EXPECT_EQ(four.shape.grid_blocks, 528u);
  EXPECT_EQ(four.program.grid_blocks, 528u);
  EXPECT_EQ(plan(wide(3), SyncMode::grid_sync).shape.blocks_per_sm, 4u);
  EXPECT_EQ(plan(wide(1), SyncMode::flags).shape.blocks_per_sm, 2u);    // 256 tiles: the default grid holds the level
  EXPECT_EQ(plan(wide(3), SyncMode::sentinel).shape.blocks_per_sm, 2u); // the sentinel row kernel has 128 registers
  EXPECT_EQ(plan(wide(3), SyncMode::flags, 0, false).shape.blocks_per_sm, 2u); // the general megakernel
  EXPECT_EQ(plan(wide(3), SyncMode::flags, 3).shape.blocks_per_sm, 3u);
  Graph summed = wide(3);
  summed.add_buffer("sum", DType::f32, {1});
  summed.reduce("total", "y0", "sum", ReduceFn::sum); // lean partial tiles: the cross-tile kernel
  EXPECT_EQ(plan(summed, SyncMode::flags).shape.blocks_per_sm, 2u);
  EXPECT_THROW(plan(summed, SyncMode::flags, 4), RuntimeError);
  EXPECT_THROW(plan(wide(3), SyncMode::sentinel, 4), RuntimeError);
  EXPECT_THROW(plan(wide(3), SyncMode::flags, 4, false), RuntimeError);
  EXPECT_THROW(plan(wide(3), SyncMode::flags, 5), RuntimeError); // beyond either kernel
  device.max_lean_blocks_per_sm = 0;                             // not recorded (an older calibration)
  EXPECT_EQ(plan(wide(3), SyncMode::flags).shape.blocks_per_sm, 2u);
  EXPECT_THROW(plan(wide(3), SyncMode::flags, 3), RuntimeError);
}

TEST(Lowering, WholeRangeScansBesideLeanRowsRunAsLeanLookbackTiles) {
  Graph g = softmax_row_chain(2); // x0 -> x1 -> x2, 16 x 1024
  g.add_buffer("c", DType::f32, {16, 1024});
  g.add_buffer("after", DType::f32, {16, 1024});
  g.add_buffer("odd", DType::i32, {5000}, InitUniform{});
  g.add_buffer("odd_out", DType::i32, {5000});
  g.scan("scan", "x1", "c", ScanFn::sum);
  g.softmax("after_scan", "c", "after");
  g.scan("odd_scan", "odd", "odd_out", ScanFn::max, true);
  const LoweredProgram p = lower_graph(g, SyncMode::flags, 132, Schedule::static_list);
  const auto task = [&](const char* name) {
    const auto it = std::find(p.task_names.begin(), p.task_names.end(), name);
    return p.tasks.at(static_cast<std::size_t>(it - p.task_names.begin()));
  };
  EXPECT_TRUE(lean_program(p, 256));
  EXPECT_TRUE(lean_cross_program(p, 256));
  EXPECT_FALSE(resident_lean_program(p, 256)); // the resident kernel's lean path has no look-back tiles
  // In sentinel mode the lean megakernel is a row kernel only: the same lean tasks run on the general megakernel, on
  // the static lists the automatic schedule still picks for them.
  const LoweredProgram sentinel = lower_graph(g, SyncMode::sentinel, 132, Schedule::automatic);
  EXPECT_TRUE(lean_tasks(sentinel, 256));
  EXPECT_TRUE(lean_cross_program(sentinel, 256));
  EXPECT_FALSE(lean_program(sentinel, 256));
  EXPECT_EQ(sentinel.schedule, Schedule::static_list);
  const LoweredProgram row_chain = lower_graph(softmax_row_chain(3), SyncMode::sentinel, 132, Schedule::automatic);
  EXPECT_FALSE(lean_cross_program(row_chain, 256));
  EXPECT_TRUE(lean_program(row_chain, 256));      // the sentinel row kernel
  EXPECT_FALSE(lean_row_program(row_chain, 256)); // built for the general megakernel's blocks per SM
  EXPECT_FALSE(lean_row_program(p, 256));         // cross tiles
  EXPECT_TRUE(lean_row_program(lower_graph(softmax_row_chain(3), SyncMode::flags, 132, Schedule::automatic), 256));
  const program::TaskDesc scan = task("scan"), odd = task("odd_scan"), after = task("after_scan");
  EXPECT_EQ(scan.opcode, static_cast<std::uint32_t>(Opcode::scan_all));
  EXPECT_EQ(scan.tile_size, 1024);
  EXPECT_EQ(scan.num_tiles, 16u);
  EXPECT_TRUE(program::lean_scans(scan, 256));
  EXPECT_EQ(odd.num_tiles, 5u); // 4 x 1024 + 904
  EXPECT_TRUE(program::lean_scans(odd, 256));
  EXPECT_TRUE(program::check_descriptor(scan, 8, 4096, 1024, 1, 1).ok);
  program::TaskDesc off_size = scan;
  off_size.tile_size = 1000;
  EXPECT_EQ(program::check_descriptor(off_size, 8, 4096, 1024, 1, 1).field, program::DescriptorField::tile_size);
  // A row of the softmax after the scan waits for the one scan tile under it (kept, or elided as local).
  for (std::uint32_t k = 0; k < after.num_tiles; ++k) {
    const std::uint32_t id = after.first_tile + k;
    const program::TileDesc& t = p.tiles[id];
    std::vector<program::DepDesc> deps(p.deps.begin() + t.dep_first, p.deps.begin() + t.dep_first + t.dep_count);
    if (!p.local_begin.empty())
      deps.insert(deps.end(), p.local_deps.begin() + p.local_begin[id], p.local_deps.begin() + p.local_begin[id + 1]);
    const program::ItemRange rows = program::tile_items(after, k);
    std::size_t found = 0;
    for (const program::DepDesc& dep : deps) {
      if (p.task_names[dep.task] != "scan")
        continue;
      ++found;
      EXPECT_EQ(dep.kind, static_cast<std::uint32_t>(DepKind::tiles)) << k;
      EXPECT_EQ(dep.tile_begin, static_cast<std::uint32_t>(rows.begin)) << k;
      EXPECT_EQ(dep.tile_end, static_cast<std::uint32_t>(rows.end)) << k;
    }
    EXPECT_EQ(found, 1u) << k;
  }
  // The instructions: one row each, in and out at the tile's elements; each ends with a barrier; never plain.
  const std::vector<void*> bases(p.buffers.size(), reinterpret_cast<void*>(std::uintptr_t{1} << 20));
  std::size_t seen = 0;
  for (const program::TileInstr& in : block_instrs(p, bases)) {
    if (in.task >= p.tasks.size() || p.task_names[in.task] != "odd_scan")
      continue;
    const std::uint32_t index = in.tile - odd.first_tile;
    EXPECT_EQ(in.rows, 1u);
    EXPECT_EQ(in.cols, index + 1 < odd.num_tiles ? 1024u : 904u) << index;
    EXPECT_EQ(in.out_stride, in.cols) << index;
    EXPECT_EQ(in.in, (std::uint64_t{1} << 20) + 4 * (odd.in_offset + 1024 * index));
    EXPECT_EQ(in.out, (std::uint64_t{1} << 20) + 4 * (odd.out_offset + 1024 * index));
    EXPECT_NE(in.flags & program::kCloseBarrier, 0u);
    EXPECT_EQ(in.flags & program::kPlainTile, 0u);
    ++seen;
  }
  EXPECT_EQ(seen, 5u);

  LoweringOptions off;
  off.tiles.lean_scans = false;
  const Analysis a = analyze(g);
  EXPECT_FALSE(lean_program(lower(g, a, off), 256)); // turned off: chunked tiles
  Graph longer = softmax_row_chain(1);               // a scan of more tiles than one lean row keeps its chunks
  longer.add_buffer("big", DType::f32, {(std::int64_t{1} << 20) + 1}, InitUniform{});
  longer.add_buffer("big_out", DType::f32, {(std::int64_t{1} << 20) + 1});
  longer.scan("big_scan", "big", "big_out", ScanFn::sum);
  EXPECT_FALSE(lean_program(lower_graph(longer, SyncMode::flags, 132, Schedule::static_list), 256));
  Graph alone("alone");
  alone.add_buffer("x", DType::f32, {16 * 1024}, InitUniform{});
  alone.add_buffer("s", DType::f32, {16 * 1024});
  alone.scan("scan", "x", "s", ScanFn::sum);
  EXPECT_FALSE(program::lean_scans(lower_graph(alone, SyncMode::flags).tasks.at(0), 256));
}

// A sum beside every step of a row chain (a sink: nothing waits for it) is placed after every other tile: on the 16
// blocks of the chain's rows none of its partial tiles runs between two steps, and more of them take spare blocks
// (the last steps' sums still end their rows' blocks, where the estimate has them sooner than a hop away); in graph
// order (sinks_last off) some sit between the steps on the rows' own blocks. Every list holds its sink tiles
// after the others; where every block is busy, and in a level mode, graph order stays.
TEST(Lowering, SinkTilesArePlacedAfterEveryOtherTile) {
  Graph g = softmax_row_chain(6);
  g.add_buffer("sums", DType::f32, {6});
  for (int i = 1; i <= 6; ++i)
    g.reduce("sum" + std::to_string(i), "x" + std::to_string(i), ViewSpec::range("sums", i - 1, 1), ReduceFn::sum);
  LoweringOptions o;
  o.schedule = Schedule::static_list;
  const auto placed = [&](const LoweredProgram& p) {
    std::size_t between = 0, spare = 0; // partial tiles between two chain steps; on a block without chain tiles
    for (std::uint32_t b = 0; b < p.grid_blocks; ++b) {
      bool chain = false, sink_seen = false, chain_after_sink = false;
      for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i) {
        const bool sink =
            p.tasks[p.tiles[p.block_tiles[i]].task].opcode == static_cast<std::uint32_t>(Opcode::reduce_all);
        chain_after_sink = chain_after_sink || (!sink && sink_seen);
        sink_seen = sink_seen || sink;
        chain = chain || !sink;
        if (sink && i + 1 < p.block_begin[b + 1] &&
            p.tasks[p.tiles[p.block_tiles[i + 1]].task].opcode != static_cast<std::uint32_t>(Opcode::reduce_all))
          ++between;
      }
      if (!chain)
        spare += p.block_begin[b + 1] - p.block_begin[b];
      if (o.sinks_last) {
        EXPECT_FALSE(chain_after_sink) << "block " << b;
      }
    }
    return std::pair{between, spare};
  };
  const LoweredProgram last = lower(g, analyze(g), o);
  ASSERT_TRUE(lean_program(last, 256));
  const auto [between, spare] = placed(last);
  EXPECT_EQ(between, 0u);
  o.sinks_last = false;
  const auto [between_off, spare_off] = placed(lower(g, analyze(g), o));
  EXPECT_GT(between_off, 0u);
  EXPECT_GT(spare, spare_off); // of the 6 x 16 partial tiles (a sum's per row)
  // On 16 blocks, one per row, every block is busy: the sinks would end the rows' blocks, so graph order stays.
  o.sinks_last = true;
  o.grid_blocks = 16;
  const LoweredProgram busy = lower(g, analyze(g), o);
  o.sinks_last = false;
  const LoweredProgram graph_order = lower(g, analyze(g), o);
  EXPECT_EQ(busy.block_tiles, graph_order.block_tiles);
  EXPECT_EQ(busy.block_begin, graph_order.block_begin);
  o.grid_blocks = 132;
  o.sinks_last = true;
  o.mode = SyncMode::barrier;
  const LoweredProgram levels = lower(g, analyze(g), o);
  for (std::uint32_t b = 0; b < levels.grid_blocks; ++b)
    for (std::uint32_t i = levels.block_begin[b] + 1; i < levels.block_begin[b + 1]; ++i)
      EXPECT_LT(levels.block_tiles[i - 1], levels.block_tiles[i]) << "block " << b;
}

// The summed chain of gridflow_bench_patterns (32 steps): at 16 rows on 132 blocks its sums move to spare blocks; at
// 256 rows on 264 blocks (2 per SM) nearly every block has a row, so graph order stays.
TEST(Lowering, SummedChainsPlaceSinksLastOnlyWithSpareBlocks) {
  const auto summed = [](std::int64_t rows) {
    Graph g("sums");
    g.add_buffer("x0", DType::f32, {rows, 1024}, InitUniform{});
    g.add_buffer("sums", DType::f32, {32});
    for (int i = 1; i <= 32; ++i) {
      g.add_buffer("x" + std::to_string(i), DType::f32, {rows, 1024});
      g.softmax("sm" + std::to_string(i), "x" + std::to_string(i - 1), "x" + std::to_string(i));
      g.reduce("sum" + std::to_string(i), "x" + std::to_string(i), ViewSpec::range("sums", i - 1, 1), ReduceFn::sum);
    }
    return g;
  };
  for (const auto& [rows, blocks, reordered] : {std::tuple{16, 132u, true}, std::tuple{256, 264u, false}}) {
    const Graph g = summed(rows);
    LoweringOptions o;
    o.schedule = Schedule::static_list;
    o.grid_blocks = blocks;
    const LoweredProgram last = lower(g, analyze(g), o);
    o.sinks_last = false;
    const LoweredProgram in_order = lower(g, analyze(g), o);
    EXPECT_EQ(last.block_tiles != in_order.block_tiles, reordered) << rows << " rows";
  }
}

// A row chain keeps each row on its block, and every tile after the first op takes its input from the tile before it.
TEST(Lowering, RowChainsForwardEveryRowOnChip) {
  const int ops = 12;
  const LoweredProgram p = lower_graph(softmax_row_chain(ops), SyncMode::flags, 132, Schedule::static_list);
  ASSERT_EQ(p.forwarded.size(), p.tiles.size());
  std::size_t forwarded = 0;
  for (std::uint32_t g = 0; g < p.tiles.size(); ++g) {
    const bool first_op = p.tiles[g].task == 0;
    EXPECT_EQ(p.forwarded[g] != 0, !first_op) << "tile " << g;
    forwarded += p.forwarded[g];
  }
  EXPECT_EQ(forwarded, 16u * (ops - 1));
  // Nothing waits: every dependency is local, so nothing signals either.
  EXPECT_TRUE(p.deps.empty());
  for (const program::TaskDesc& t : p.tasks)
    EXPECT_EQ(t.flags & (program::kSignalTiles | program::kSignalCounter), 0u);
}

// nonempty_lists_first keeps every list whole and in order, only moving the non-empty ones to the first blocks; the
// program then runs the same on the CPU (its forwarding and local waits go with the lists).
TEST(Lowering, NonemptyListsMoveToTheFirstBlocks) {
  Graph g("few");
  g.add_buffer("x", DType::f32, {3, 256}, InitUniform{-1, 1, 4});
  g.add_buffer("y", DType::f32, {3, 256});
  g.add_buffer("z", DType::f32, {3, 256});
  g.softmax("a", "x", "y");
  g.scan("b", "y", "z", ScanFn::sum, false, Axis::row);
  LoweredProgram p = lower_graph(g, SyncMode::flags, 8, Schedule::static_list);
  // Make the lists sparse: move block 0's list to block 5 (an empty one).
  ASSERT_EQ(p.block_begin.size(), 9u);
  std::vector<std::vector<std::uint32_t>> lists(8);
  for (std::uint32_t b = 0; b < 8; ++b)
    lists[b].assign(p.block_tiles.begin() + p.block_begin[b], p.block_tiles.begin() + p.block_begin[b + 1]);
  ASSERT_FALSE(lists[0].empty());
  ASSERT_TRUE(lists[5].empty());
  std::swap(lists[0], lists[5]);
  p.block_begin.assign(1, 0);
  p.block_tiles.clear();
  for (const auto& l : lists) {
    p.block_tiles.insert(p.block_tiles.end(), l.begin(), l.end());
    p.block_begin.push_back(static_cast<std::uint32_t>(p.block_tiles.size()));
  }
  nonempty_lists_first(p);
  std::vector<std::vector<std::uint32_t>> want;
  for (const auto& l : lists)
    if (!l.empty())
      want.push_back(l);
  for (std::uint32_t b = 0; b < 8; ++b) {
    const std::vector<std::uint32_t> got(p.block_tiles.begin() + p.block_begin[b],
                                         p.block_tiles.begin() + p.block_begin[b + 1]);
    EXPECT_EQ(got, b < want.size() ? want[b] : std::vector<std::uint32_t>{}) << "block " << b;
  }
}

// Forwarding needs the producer to be the consumer's only producer, the same row, and the block's previous tile.
TEST(Lowering, ForwardingOnlyFromTheOneProducerOfTheRow) {
  Graph g("fw");
  g.add_buffer("x", DType::f32, {4, 256}, InitUniform{-1, 1, 2});
  g.add_buffer("y", DType::f32, {4, 256});
  g.add_buffer("z", DType::f32, {4, 256});
  g.add_buffer("r", DType::f32, {4});
  g.softmax("a", "x", "y");
  g.scan("b", "y", "z", ScanFn::sum, false, Axis::row); // forwarded from a
  g.reduce("c", "z", "r", ReduceFn::sum, Axis::row);    // forwarded from b (a row reduction consumes whole rows)
  g.softmax("d", "r", "r");                             // a row reduction's output is no row: never forwarded
  g.scan("e", "y", "y", ScanFn::max, true, Axis::row);  // y's producer a is not e's block predecessor's task
  const LoweredProgram p = lower_graph(g, SyncMode::flags, 8, Schedule::static_list);
  auto task_of = [&](std::uint32_t gtile) { return p.task_names[p.tiles[gtile].task]; };
  ASSERT_FALSE(p.forwarded.empty());
  for (std::uint32_t b = 0; b < p.grid_blocks; ++b)
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i) {
      const std::uint32_t t = p.block_tiles[i];
      if (!p.forwarded[t])
        continue;
      ASSERT_GT(i, p.block_begin[b]);
      const std::string prev = task_of(p.block_tiles[i - 1]), cur = task_of(t);
      EXPECT_TRUE((prev == "a" && cur == "b") || (prev == "b" && cur == "c")) << prev << " -> " << cur;
      EXPECT_EQ(p.tiles[t].index, p.tiles[p.block_tiles[i - 1]].index); // the same row
    }
  std::size_t b_forwarded = 0;
  for (std::uint32_t t = 0; t < p.tiles.size(); ++t)
    b_forwarded += p.forwarded[t] && task_of(t) == "b";
  EXPECT_EQ(b_forwarded, 4u); // every row of b runs right after its row of a
}

// The lean instructions end a tile with a block barrier only where something needs it: a row chain's tiles are
// followed on their block by forwarded tiles and signal nothing, so none does; a tile that signals does, and so does
// one whose block's next tile reads memory; the dynamic instructions always do.
TEST(Lowering, LeanTilesCloseWithABarrierOnlyWhereNeeded) {
  const LoweredProgram chain = lower_graph(softmax_row_chain(6), SyncMode::flags, 132, Schedule::static_list);
  const std::vector<void*> bases(chain.buffers.size(), reinterpret_cast<void*>(std::uintptr_t{4096}));
  for (const program::TileInstr& in : block_instrs(chain, bases))
    EXPECT_EQ(in.flags & program::kCloseBarrier, 0u) << "tile " << in.tile;
  for (const program::TileInstr& in : tile_instrs(chain, bases))
    EXPECT_NE(in.flags & program::kCloseBarrier, 0u) << "tile " << in.tile;

  program::TileInstr tile, next;
  EXPECT_FALSE(needs_close_barrier(tile, nullptr));
  next.flags = program::kForwardInput;
  EXPECT_FALSE(needs_close_barrier(tile, &next));
  next.flags = 0; // reads its input from memory before its first barrier
  EXPECT_TRUE(needs_close_barrier(tile, &next));
  next.flags = program::kForwardInput;
  for (const std::uint32_t flag : {program::kSignalTiles, program::kSignalCounter, program::kPollInputs}) {
    tile.flags = flag;
    EXPECT_TRUE(needs_close_barrier(tile, &next)) << flag;
    EXPECT_TRUE(needs_close_barrier(tile, nullptr)) << flag;
  }

  // A graph whose rows change blocks between ops (fewer blocks than rows, a reduce in between): every instruction
  // agrees with the rule on its block's list.
  Graph g("mix");
  g.add_buffer("x", DType::f32, {8, 256}, InitUniform{-1, 1, 3});
  g.add_buffer("y", DType::f32, {8, 256});
  g.add_buffer("z", DType::f32, {8, 256});
  g.add_buffer("r", DType::f32, {8});
  g.softmax("a", "x", "y");
  g.scan("b", "y", "z", ScanFn::sum, false, Axis::row);
  g.reduce("c", "y", "r", ReduceFn::max, Axis::row);
  const LoweredProgram p = lower_graph(g, SyncMode::flags, 3, Schedule::static_list);
  const std::vector<program::TileInstr> ins = block_instrs(p, bases);
  ASSERT_EQ(ins.size(), p.block_tiles.size());
  std::size_t closed = 0;
  for (std::uint32_t b = 0; b < p.grid_blocks; ++b)
    for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i) {
      const bool last = i + 1 == p.block_begin[b + 1];
      const bool want = (ins[i].flags & (program::kSignalTiles | program::kSignalCounter)) != 0 ||
                        (!last && !(ins[i + 1].flags & program::kForwardInput));
      EXPECT_EQ((ins[i].flags & program::kCloseBarrier) != 0, want) << "entry " << i;
      closed += want;
    }
  EXPECT_GT(closed, 0u); // c reads y from memory after b on some block
}

// A lean instruction is plain (its body alone, no protocol step on the device) exactly when it waits for nothing,
// publishes nothing, polls nothing, needs no closing barrier, and is one full row of 16-byte groups: a row chain's
// tiles all are; tiles with a dependency left, a signal or a closing barrier are not; misaligned rows, short rows and
// the dynamic instructions never are.
TEST(Lowering, LeanTilesArePlainOnlyWhereTheyNeedNoProtocol) {
  const LoweredProgram chain = lower_graph(softmax_row_chain(6), SyncMode::flags, 132, Schedule::static_list);
  ASSERT_EQ(kernels::lean_max_cols(static_cast<int>(chain.threads_per_block)), 1024);
  const std::vector<void*> aligned(chain.buffers.size(), reinterpret_cast<void*>(std::uintptr_t{4096}));
  for (const program::TileInstr& in : block_instrs(chain, aligned))
    EXPECT_NE(in.flags & program::kPlainTile, 0u) << "tile " << in.tile;
  for (const program::TileInstr& in : tile_instrs(chain, aligned))
    EXPECT_EQ(in.flags & program::kPlainTile, 0u) << "tile " << in.tile;
  const std::vector<void*> odd(chain.buffers.size(), reinterpret_cast<void*>(std::uintptr_t{4100}));
  for (const program::TileInstr& in : block_instrs(chain, odd))
    EXPECT_EQ(in.flags & program::kPlainTile, 0u) << "tile " << in.tile;

  // Each condition on its own, from one plain instruction of the chain.
  const program::TileInstr plain = block_instrs(chain, aligned).front();
  ASSERT_TRUE(plain_tile(chain, plain));
  auto with = [&](auto change) {
    program::TileInstr in = plain;
    change(in);
    return plain_tile(chain, in);
  };
  for (const std::uint32_t flag : {program::kPollInputs, program::kSentinelOutput})
    EXPECT_FALSE(with([&](program::TileInstr& in) { in.flags |= flag; })) << flag;
  // What it publishes, it publishes after its closing barrier, as every tile does.
  for (const std::uint32_t flag :
       {program::kForwardInput, program::kSignalTiles, program::kSignalCounter, program::kCloseBarrier})
    EXPECT_TRUE(with([&](program::TileInstr& in) { in.flags |= flag; })) << flag;
  EXPECT_FALSE(with([](program::TileInstr& in) { in.dep_count = 1; }));
  EXPECT_FALSE(with([](program::TileInstr& in) { in.rows = 2; }));
  EXPECT_FALSE(with([](program::TileInstr& in) { in.cols = 1020; }));
  EXPECT_FALSE(with([](program::TileInstr& in) { in.out += 4; }));
  EXPECT_FALSE(with([](program::TileInstr& in) { in.in = 0; }));
  EXPECT_FALSE(with([](program::TileInstr& in) { in.tile = program::kNoTile; }));
  EXPECT_FALSE(with([&](program::TileInstr& in) { in.task = static_cast<std::uint32_t>(chain.tasks.size()); }));

  // A row chain ending in a whole-tensor reduce, which waits for every block's row reduction: every instruction
  // agrees with the rule, and both kinds occur (the chain's softmax and scan tiles and the signalling row reduction
  // are plain, the whole-tensor reduce waits).
  Graph g("cross");
  g.add_buffer("x", DType::f32, {8, 1024}, InitUniform{-1, 1, 4});
  g.add_buffer("y", DType::f32, {8, 1024});
  g.add_buffer("z", DType::f32, {8, 1024});
  g.add_buffer("r", DType::f32, {8});
  g.add_buffer("s", DType::f32, {1});
  g.softmax("a", "x", "y");
  g.scan("b", "y", "z", ScanFn::sum, false, Axis::row);
  g.reduce("c", "z", "r", ReduceFn::max, Axis::row);
  g.reduce("d", "r", "s", ReduceFn::sum);
  const LoweredProgram p = lower_graph(g, SyncMode::flags, 8, Schedule::static_list);
  std::size_t plain_count = 0, plain_signalling = 0;
  const std::vector<program::TileInstr> ins = block_instrs(p, aligned);
  for (const program::TileInstr& in : ins) {
    const bool want = in.dep_count == 0 && in.rows == 1 && in.cols == 1024;
    EXPECT_EQ((in.flags & program::kPlainTile) != 0, want) << "tile " << in.tile;
    plain_count += want;
    if (want && (in.flags & (program::kSignalTiles | program::kSignalCounter))) {
      EXPECT_NE(in.flags & program::kCloseBarrier, 0u) << "tile " << in.tile; // signals after its closing barrier
      ++plain_signalling;
    }
  }
  EXPECT_GT(plain_count, 0u);
  EXPECT_GT(plain_signalling, 0u);
  EXPECT_LT(plain_count, ins.size());
}

} // namespace
} // namespace gridflow
