// One CPU worker as an interpreter Block (runtime/interpreter.hpp), shared by the CPU executor's launches and the CPU
// resident runtime: a single thread, always the leader, no block barrier needed; it checks on-chip forwarding claims.
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/program.hpp"

#include <cstdint>
#include <vector>

namespace gridflow::cpu {

// On-chip forwarding as the CPU checks it: which tile each forwarded tile takes its input from, and which tiles'
// outputs are taken.
struct ForwardPlan {
  std::vector<std::uint32_t>
      source; // per tile: the tile it takes its row from when forwarded (forwarding.hpp), else kNoTile
  std::vector<std::uint8_t> feeds; // per tile: some forwarded tile takes its output
  bool empty() const { return source.empty(); }
};

ForwardPlan forward_plan(const LoweredProgram& p);

class CpuBlock {
public:
  CpuBlock(const program::ProgramView& v, const program::RunParams& r, std::uint32_t index, const ForwardPlan& f)
      : v_(v), r_(r), index_(index), forward_(f) {}

  const program::ProgramView& view() const { return v_; }
  const program::RunParams& params() const { return r_; }
  std::uint32_t index() const { return index_; }
  bool is_leader() const { return true; }
  void sync() {}
  void ready() {}
  std::uint32_t signal_flags(std::uint32_t task) const { return v_.tasks[task].flags; }
  std::uint32_t share(std::uint32_t v) { return v; }
  std::uint32_t smid() const { return index_; }
  void stage(std::uint32_t, const program::TileDesc&, std::uint32_t) {}
  // Runs the tile. A forwarded tile first checks what the GPU's lean megakernel relies on: its input row is, bit for
  // bit, what this block's last tile to write whole rows wrote, and that tile is its source (the lowering's
  // forwarding decision, checked on every CPU run).
  bool execute(std::uint32_t tile);
  void fill_sentinels();
  // Both level modes use gridflow's barrier on the CPU (cooperative_groups exists only on the GPU).
  bool level_barrier(std::uint64_t generation);

private:
  const program::ProgramView& v_;
  const program::RunParams& r_;
  std::uint32_t index_;
  const ForwardPlan& forward_;
  std::uint32_t last_row_tile_ = program::kNoTile; // the last tile run that wrote whole rows (forwarding.hpp)
  std::vector<std::uint32_t> kept_;                // the output row of the last tile a forwarded tile takes
};

} // namespace gridflow::cpu
