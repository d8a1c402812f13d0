#include "tests/common/run_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace gridflow::testing {

std::string trace_violation(const LoweredProgram& p, const RunResult& run) {
  if (run.tiles.size() != p.tiles.size())
    return fmt::format("trace has {} tiles, program {}", run.tiles.size(), p.tiles.size());
  for (std::uint32_t g = 0; g < p.tiles.size(); ++g) {
    const program::TileTrace& t = run.tiles[g];
    if (t.runs != 1)
      return fmt::format("tile {} ran {} times", g, t.runs);
    if (t.tile != g || t.task != p.tiles[g].task)
      return fmt::format("tile {} trace names tile {} task {}", g, t.tile, t.task);
    if (!(t.claim_begin <= t.claimed && t.claimed <= t.ready && t.ready <= t.executed && t.executed <= t.signalled))
      return fmt::format("tile {} timestamps out of order", g);
    if (t.block >= run.blocks)
      return fmt::format("tile {} ran on block {} of {}", g, t.block, run.blocks);
  }
  if (is_level_mode(p.mode)) {
    for (std::uint32_t l = 0; l + 1 < p.num_levels(); ++l) {
      std::uint64_t done = 0, next = std::numeric_limits<std::uint64_t>::max();
      for (std::uint32_t g = p.level_begin[l]; g < p.level_begin[l + 1]; ++g)
        done = std::max(done, run.tiles[g].executed);
      for (std::uint32_t g = p.level_begin[l + 1]; g < p.level_begin[l + 2]; ++g)
        next = std::min(next, run.tiles[g].claimed);
      if (p.level_begin[l] < p.level_begin[l + 1] && p.level_begin[l + 1] < p.level_begin[l + 2] && next < done)
        return fmt::format("level {} started before level {} finished", l + 1, l);
    }
    return {};
  }
  // Every dependency, waited for or enforced by a block's program order (static schedule), was satisfied.
  std::string violation;
  for (std::uint32_t g = 0; g < p.tiles.size() && violation.empty(); ++g)
    p.for_each_dependency(g, [&](const program::DepDesc& dep) {
      const program::TaskDesc& prod = p.tasks[dep.task];
      const std::uint32_t lo = dep.kind == static_cast<std::uint32_t>(program::DepKind::task) ? 0 : dep.tile_begin;
      const std::uint32_t hi =
          dep.kind == static_cast<std::uint32_t>(program::DepKind::task) ? prod.num_tiles : dep.tile_end;
      for (std::uint32_t k = lo; k < hi && violation.empty(); ++k)
        if (run.tiles[prod.first_tile + k].executed > run.tiles[g].ready)
          violation = fmt::format("tile {} (task '{}') was ready before producer tile {} of task '{}' executed", g,
                                  p.task_names[p.tiles[g].task], k, p.task_names[dep.task]);
    });
  return violation;
}

} // namespace gridflow::testing
