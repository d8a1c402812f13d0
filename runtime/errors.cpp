#include "runtime/errors.hpp"

#include "runtime/op_traits.hpp"

#include <fmt/format.h>

namespace gridflow {
namespace {

std::string task_name(const LoweredProgram& p, std::uint32_t task) {
  return task < p.task_names.size() ? fmt::format("'{}'", p.task_names[task]) : fmt::format("#{}", task);
}

std::string waited_on(const program::ErrorRecord& e, const LoweredProgram& p) {
  using program::WaitKind;
  switch (static_cast<WaitKind>(e.wait_kind)) {
  case WaitKind::task_counter:
    return fmt::format("task {} to finish (its counter reached {} of {})", task_name(p, e.wait_task), e.seen,
                       e.expected);
  case WaitKind::tile_flag:
    return fmt::format("tile {} of task {} (its flag shows run {}, needed run {})", e.wait_index,
                       task_name(p, e.wait_task), e.seen, e.expected);
  case WaitKind::sentinel:
    return fmt::format("element {} of task {}'s input to be written (it still holds the sentinel)", e.wait_index,
                       task_name(p, e.wait_task));
  case WaitKind::lookback:
    return fmt::format("the scan carry of tile {} of task {}", e.wait_index, task_name(p, e.wait_task));
  case WaitKind::barrier:
    return fmt::format("grid barrier generation {} (arrivals {} of {})", e.wait_index, e.seen, e.expected);
  default:
    return "something unknown";
  }
}

} // namespace

std::string describe_error(const program::ErrorRecord& e, const LoweredProgram& p) {
  using program::ErrorCode;
  const std::string where = e.tile < p.tiles.size() ? fmt::format("block {} running tile {} of task {}", e.block,
                                                                  e.tile, task_name(p, p.tiles[e.tile].task))
                                                    : fmt::format("block {}", e.block);
  switch (static_cast<ErrorCode>(e.code)) {
  case ErrorCode::watchdog_timeout:
    return fmt::format("watchdog: {} waited {:.3f} ms for {}; the run was aborted (deadlock or a lost signal)", where,
                       static_cast<double>(e.waited_ns) * 1e-6, waited_on(e, p));
  case ErrorCode::bad_opcode:
    return fmt::format("corrupt program: {} found unknown opcode {}", where, e.detail);
  case ErrorCode::bad_descriptor:
    return fmt::format("corrupt program: {} found a descriptor field out of range ({})", where,
                       e.detail < program::kDescriptorFieldCount ? program::kDescriptorFieldNames[e.detail]
                                                                 : "unknown");
  case ErrorCode::forward_mismatch:
    return fmt::format("corrupt program: {} was told to take its input from the block's previous tile, but that tile "
                       "did not write it (on-chip forwarding)",
                       where);
  default:
    return fmt::format("device error {} at {}", e.code, where);
  }
}

DeviceError::DeviceError(const program::ErrorRecord& record, const LoweredProgram& program)
    : RuntimeError(describe_error(record, program)), record_(record) {}

} // namespace gridflow
