// Caller-owned memory a graph buffer runs on (Session::bind), and a run on the caller's stream (Session::run_async).
// Plain C++: the stream is the CUDA runtime's own handle type, declared here without the CUDA headers.
#pragma once

#include "kernels/op_types.hpp"

#include <cstddef>
#include <cstdint>

struct CUstream_st; // cudaStream_t is CUstream_st*

namespace gridflow {

// A cudaStream_t. nullptr is the legacy default stream; the CPU backend ignores it.
using StreamHandle = CUstream_st*;

// The device of host memory in an ExternalTensor (DLPack's kDLCPU); CUDA devices are their ordinals.
inline constexpr int kHostMemory = -1;

// Caller memory as a DLPack tensor describes it. For a [rows, cols] buffer, row r starts row_stride elements
// after row r - 1 (0: cols, the rows contiguous); a 1-D buffer has one row.
struct ExternalTensor {
  void* data = nullptr;
  std::int64_t elements = 0; // elements the memory holds from `data` on
  DType dtype = DType::f32;
  int device = kHostMemory;    // the CUDA device ordinal of the memory, or kHostMemory
  std::int64_t row_stride = 0; // in elements
};

// How an executor runs a buffer on caller memory (Executor::bind; the checks are scheduler/binding.hpp's).
// Direct: the program's tiles read and write `data` itself. Staged, for memory the bodies cannot address directly
// (rows not contiguous, or not 16-byte aligned for vector loads): the run works on the executor's own copy, copied
// from the caller's rows before each run and back after it when the program writes the buffer, both on the run's
// stream.
struct BoundMemory {
  void* data = nullptr; // never freed by the executor
  bool staged = false;
  std::int64_t rows = 1;       // staged: rows of row_bytes, pitch_bytes apart from `data` on
  std::size_t row_bytes = 0;   // staged
  std::size_t pitch_bytes = 0; // staged
};

} // namespace gridflow
