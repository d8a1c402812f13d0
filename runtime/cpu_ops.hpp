// CPU task bodies (the CPU executor's op table).
#pragma once

#include "runtime/lowered_program.hpp"

#include <cstdint>
#include <vector>

namespace gridflow::cpu {

// Runs tile `tile` on CPU worker `worker`. Returns false when the run was aborted (a wait inside the body timed
// out or another worker failed) or the descriptor was bad (the error is recorded in the control block).
bool execute_tile(const program::ProgramView& view, const program::RunParams& params, std::uint32_t worker,
                  std::uint32_t tile);

// Fills part `part` of `parts` of every sentinel buffer with the sentinel payload.
void fill_sentinels(const program::ProgramView& view, std::uint32_t part, std::uint32_t parts);

} // namespace gridflow::cpu
