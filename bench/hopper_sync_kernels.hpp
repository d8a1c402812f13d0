// Microbenchmarks of Hopper's own synchronization primitives (bench/hopper_sync_kernels.cu): thread-block cluster
// barriers, a grid barrier built on clusters, mbarrier inside a block, a hand-off through distributed shared memory,
// and the kernel-to-kernel hand-offs a CUDA engineer would use instead of a megakernel (stream order, programmatic
// dependent launch, CUDA Graph nodes). Host entry points only; every figure is microseconds per operation by the
// difference method (two iteration counts in one launch each, (t_long - t_short) / (n_long - n_short)), median of
// `reps` repetitions after one warm-up. A shape the GPU cannot run gives nullopt.
#pragma once

#include <optional>

namespace gridflow::bench {

// cluster.sync() by every block of clusters of `cluster` blocks, `blocks_per_sm` x SMs blocks of `threads`.
std::optional<double> cluster_sync_us(int cluster, int blocks_per_sm, int threads, int reps);

// A grid barrier on clusters, cooperative launch: a cluster barrier, one arrival per cluster on a global counter
// (gridflow's release add), then `every_block_polls`: each block's leader polls the counter (acquire); otherwise
// the cluster's first block polls and a second cluster barrier releases the rest. `blocks` is the grid.
std::optional<double> cluster_grid_barrier_us(int cluster, int blocks, int threads, bool every_block_polls, int reps);
// The most blocks the cluster grid barrier's kernel keeps co-resident at that cluster size and block size.
int cluster_grid_barrier_max_blocks(int cluster, int threads);

// Block-wide barriers of one block per SM: `mbarrier`: cuda::barrier<thread_scope_block>::arrive_and_wait (an
// mbarrier in shared memory); otherwise __syncthreads().
double block_barrier_us(bool mbarrier, int threads, int reps);

// One-way hand-off between the two blocks of a cluster of 2: a release store into the peer's shared memory
// (distributed shared memory), polled with acquire loads at cluster scope by the peer.
std::optional<double> dsmem_handoff_us(int reps);

// Per dependent kernel of a chain of empty kernels (`blocks` x 128 threads, each kernel adds one to a counter after
// waiting for the previous): launched on a stream, with programmatic dependent launch or not, or as nodes of an
// instantiated CUDA Graph captured from that stream (the programmatic edges kept). The counter is checked.
double kernel_chain_us(bool graph, bool pdl, int blocks, int reps);

} // namespace gridflow::bench
