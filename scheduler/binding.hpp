// The checks of Session::bind: caller memory (runtime/binding.hpp's ExternalTensor) against the graph buffer it is
// to hold, and how the executor then runs on it.
#pragma once

#include "runtime/binding.hpp"
#include "scheduler/graph.hpp"

namespace gridflow {

// What `memory` must be for buffer `buffer`: its dtype; on `device` (the executor's memory_device()); non-null
// unless the buffer is empty; for contiguous rows (row_stride 0, or cols of a [rows, cols] buffer) exactly the
// buffer's elements; for strided rows (a [rows, cols] buffer only, row_stride >= cols) at least
// (rows - 1) x row_stride + cols elements. Memory the bodies can address directly (contiguous rows, 16-byte
// aligned) is bound directly; strided or unaligned memory is staged (BoundMemory). Throws GraphError
// "buffer 'NAME': bind.FIELD = VALUE: WHY" on any mismatch; nothing is bound then.
BoundMemory plan_binding(const Buffer& buffer, const ExternalTensor& memory, int device);

} // namespace gridflow
