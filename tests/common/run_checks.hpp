// Assertions shared by the CPU and GPU suites: traces prove every tile ran once and no dependency was violated.
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/run_result.hpp"
#include "scheduler/analysis.hpp"

#include <string>

namespace gridflow::testing {

// Empty when the trace is consistent with the program; otherwise a description of the first violation.
// Checks: every tile ran exactly once with ordered timestamps; in dataflow modes each tile became ready after
// every producer tile it waited on had executed; in level modes every tile of level L+1 was claimed after every
// tile of level L executed.
std::string trace_violation(const LoweredProgram& program, const RunResult& run);

} // namespace gridflow::testing
