// Runtime failures (CLI exit code 1): device errors recorded by a run (watchdog, corrupt descriptors), CUDA
// errors, co-residency refusals. Bad input is gridflow::GraphError (scheduler/errors.hpp), exit code 2.
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/program.hpp"

#include <stdexcept>
#include <string>

namespace gridflow {

class RuntimeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// An error a run recorded in its control block; the message names the tasks involved.
class DeviceError : public RuntimeError {
public:
  DeviceError(const program::ErrorRecord& record, const LoweredProgram& program);
  const program::ErrorRecord& record() const { return record_; }

private:
  program::ErrorRecord record_;
};

std::string describe_error(const program::ErrorRecord& record, const LoweredProgram& program);

} // namespace gridflow
