// Programs of empty tasks (no buffers): dispatch throughput and dependency hand-off without any data movement.
#pragma once

#include "runtime/lowered_program.hpp"
#include "scheduler/lowering.hpp"

#include <string>

namespace gridflow::bench {

// `tasks` one-tile noop tasks; `chain`: task i waits for task i - 1 (one level per task in level modes).
inline LoweredProgram noop_program(std::uint32_t tasks, bool chain, SyncMode mode, std::uint32_t grid_blocks,
                                   std::uint32_t threads) {
  LoweredProgram p;
  p.mode = mode;
  p.grid_blocks = grid_blocks;
  p.threads_per_block = threads;
  const bool dataflow = !is_level_mode(mode);
  for (std::uint32_t i = 0; i < tasks; ++i) {
    program::TaskDesc d;
    d.opcode = static_cast<std::uint32_t>(program::Opcode::noop);
    d.first_tile = i;
    d.num_tiles = 1;
    d.tile_size = 1;
    d.level = chain ? i : 0;
    d.graph_task = i;
    p.tasks.push_back(d);
    program::TileDesc t{i, 0, static_cast<std::uint32_t>(p.deps.size()), 0};
    if (chain && dataflow && i > 0) {
      p.deps.push_back({i - 1, 0, 1, static_cast<std::uint32_t>(program::DepKind::task)});
      t.dep_count = 1;
    }
    p.tiles.push_back(t);
    p.task_names.push_back("noop" + std::to_string(i));
  }
  if (chain) {
    for (std::uint32_t i = 0; i <= tasks; ++i)
      p.level_begin.push_back(i);
  } else {
    p.level_begin = {0, tasks};
  }
  p.barriers_per_run = is_level_mode(mode) ? p.num_levels() - 1 : 0;
  assign_signal_flags(p);
  assign_state_layout(p);
  return p;
}

} // namespace gridflow::bench
