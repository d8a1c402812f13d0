#include "runtime/executor.hpp"

#include "runtime/op_traits.hpp"

namespace gridflow {

std::vector<bool> written_buffers(const LoweredProgram& p) {
  std::vector<bool> out(p.buffers.size(), false);
  const auto mark = [&](std::uint32_t b) {
    if (b < out.size())
      out[b] = true;
  };
  for (const program::TaskDesc& t : p.tasks) {
    if (program::op_has(program::kBufferOps, t.opcode))
      mark(t.out_buffer);
    if (program::op_traits(t.opcode).aux == program::AuxUse::write)
      mark(t.aux_buffer);
  }
  return out;
}

} // namespace gridflow
