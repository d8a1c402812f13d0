// The resident megakernel: one cooperative launch that serves the submission ring (runtime/resident.hpp) until a
// kStop submission, each run going through the same interpreter and Block as a launch of the general megakernel
// (runtime/gpu/megakernel.cuh), in every sync mode.
#pragma once

#include "runtime/gpu/megakernel.cuh"
#include "runtime/resident.hpp"

namespace gridflow::gpu {

// The block's copy of the current run's program record, in shared memory (raw storage: __shared__ variables take no
// initializers).
struct ResidentShared {
  alignas(16) unsigned char record[sizeof(resident::ProgramRecord)];
};

// A block of the resident kernel as serve()'s Worker. Its leader's broadcasts go through a GpuBlock of its own over
// the block's shared storage, alternating the same two slots as each run's GpuBlock: serve() puts a block barrier
// between its last broadcast and a run's first and between a run's last and its next, so no slot is rewritten before
// every thread read it.
template <int THREADS> class GpuWorker {
public:
  __device__ explicit GpuWorker(ResidentShared& s)
      : s_(s), broadcast_(record().view, record().params, block_shared<THREADS>()) {}
  __device__ std::uint32_t index() const { return blockIdx.x; }
  __device__ bool is_leader() const { return threadIdx.x == 0; }
  __device__ void sync() const { __syncthreads(); }
  __device__ std::uint32_t share(std::uint32_t value) { return broadcast_.share(value); }
  __device__ std::uint32_t thread() const { return threadIdx.x; }
  __device__ std::uint32_t threads() const { return THREADS; }
  __device__ resident::ProgramRecord& record() { return *reinterpret_cast<resident::ProgramRecord*>(s_.record); }

  // A fresh GpuBlock per run: its descriptor look-ahead must not carry over from another program.
  __device__ void run(std::uint32_t, std::uint64_t) {
    SharedStorage<THREADS>& shared = block_shared<THREADS>();
    const program::ProgramView& view = record().view;
    const program::RunParams& params = record().params;
    init_shared(view, params, shared);
    GpuBlock<THREADS> block(view, params, shared);
    program::interpret(block);
    drain_lookahead();
  }

private:
  ResidentShared& s_;
  GpuBlock<THREADS> broadcast_;
};

template <int THREADS>
__global__ void __launch_bounds__(THREADS, min_blocks_per_sm<THREADS>())
    resident_kernel(const __grid_constant__ resident::Rings rings) {
  __shared__ ResidentShared shared;
  GpuWorker<THREADS> worker(shared);
  resident::serve(worker, rings);
}

} // namespace gridflow::gpu
