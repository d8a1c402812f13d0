// One tile of any op: descriptor checks, the tile context, then the op table with the task's access policies.
#pragma once

#include "runtime/gpu/counting_ops.cuh"
#include "runtime/gpu/ops.cuh"

namespace gridflow::gpu {

// Runs one tile with every thread of the block; false when the run was aborted or the descriptor is bad.
template <int THREADS>
__device__ bool execute_tile(const program::ProgramView& v, const program::RunParams& r, SharedStorage<THREADS>& s,
                             std::uint32_t tile) {
  const program::TileDesc t = v.tiles[tile];
  // The task descriptor to shared memory, one word per lane of warp 0 (one coalesced load instead of a chain of
  // dependent field loads); the barrier below publishes it. The previous tile's readers are past the barrier that
  // ends execute_tile.
  static_assert(sizeof(program::TaskDesc) == 32 * sizeof(std::uint32_t));
  if (threadIdx.x < 32)
    reinterpret_cast<std::uint32_t*>(&s.task)[threadIdx.x] =
        reinterpret_cast<const std::uint32_t*>(&v.tasks[t.task])[threadIdx.x];
  if (threadIdx.x == 0) s.abort = 0;
  __syncthreads();
  const program::TaskDesc& task = s.task;
  const bool needs_buffers = task.opcode != static_cast<std::uint32_t>(program::Opcode::noop);
  // scan_all tiles are whole register tiles (chunks); select tiles exactly one.
  const long long chunk = static_cast<long long>(THREADS) * scan_items(THREADS);
  const bool bad_scan_tile =
      (task.opcode == static_cast<std::uint32_t>(program::Opcode::scan_all) &&
       (task.tile_size <= 0 || task.tile_size % chunk != 0)) ||
      (task.opcode == static_cast<std::uint32_t>(program::Opcode::select) && task.tile_size != chunk);
  const bool needs_aux = task.opcode == static_cast<std::uint32_t>(program::Opcode::scatter) ||
                         task.opcode == static_cast<std::uint32_t>(program::Opcode::select);
  const bool bad_bins = (task.opcode == static_cast<std::uint32_t>(program::Opcode::histogram) &&
                         (task.param == 0 || task.param > kernels::kHistogramMaxBins)) ||
                        (task.opcode == static_cast<std::uint32_t>(program::Opcode::scatter) &&
                         (task.param == 0 || task.param > kernels::kScatterMaxBins));
  if ((needs_buffers && (task.in_buffer >= v.num_buffers || task.out_buffer >= v.num_buffers)) || bad_scan_tile ||
      (needs_aux && task.aux_buffer >= v.num_buffers) || bad_bins) {
    if (threadIdx.x == 0) program::detail::raise_bad_descriptor(v, blockIdx.x, tile, bad_scan_tile ? 3 : bad_bins ? 4 : 2);
    return false;
  }
  const TileContext<THREADS> c{v, r, s, task, t.index,
                               TileSite{program::detail::wait_site(v, r, blockIdx.x, tile), t.task, &s.abort}};
  const bool poll = task.flags & program::kPollInputs;
  const bool canonical = task.flags & program::kSentinelOutput;
  bool known;
  if (program::is_counting_op(task.opcode)) known = dispatch_counting(c);
  else if (poll) known = canonical ? dispatch(c, PollLoad{&c.site}, CanonicalStore{})
                              : dispatch(c, PollLoad{&c.site}, kernels::PlainStore{});
  else known = canonical ? dispatch(c, kernels::PlainLoad{}, CanonicalStore{})
                         : dispatch(c, kernels::PlainLoad{}, kernels::PlainStore{});
  if (!known) {
    if (threadIdx.x == 0) {
      program::ErrorRecord e;
      e.code = static_cast<std::uint32_t>(program::ErrorCode::bad_opcode);
      e.block = blockIdx.x;
      e.tile = tile;
      e.task = t.task;
      e.detail = task.opcode;
      protocol::raise_error(reinterpret_cast<program::ControlBlock*>(v.state), e);
    }
    return false;
  }
  __syncthreads();
  return s.abort == 0;
}

} // namespace gridflow::gpu
