// Corrupt device programs for the executors' descriptor checks: the host suite feeds each to the CPU executor, the
// GPU suite to the megakernel, and both must stop with a bad_descriptor error naming the same field
// (program::check_descriptor and the interpreter's claim and wait checks).
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/op_traits.hpp"

#include <functional>
#include <string>
#include <vector>

namespace gridflow::testing {

struct BadDescriptor {
  std::string name;
  program::DescriptorField field; // what the error must name
  // The program, lowered for `blocks` blocks of `threads` threads with the default tile policy, then corrupted.
  std::function<LoweredProgram(std::uint32_t blocks, std::uint32_t threads)> make;
};

std::vector<BadDescriptor> bad_descriptors();

} // namespace gridflow::testing
