// User-facing errors. A GraphError is bad input (CLI exit code 2): it names the task or buffer, the field and
// the value, and is raised before anything runs. Runtime failures (exit code 1) are gridflow::RuntimeError
// (runtime/errors.hpp).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace gridflow {

class GraphError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// True when `s` holds a control character (below 0x20, or 0x7f): names and paths carrying one are refused.
bool has_control_chars(std::string_view s);
// `s` with every control character written as \xNN, so text from a graph never reaches a terminal raw.
std::string printable(std::string_view s);

// "task 'NAME': FIELD = VALUE: WHY" (NAME and VALUE through printable()).
[[noreturn]] void throw_task_error(std::string_view task, std::string_view field, std::string_view value,
                                   std::string_view why);
// "buffer 'NAME': FIELD = VALUE: WHY" (NAME and VALUE through printable()).
[[noreturn]] void throw_buffer_error(std::string_view buffer, std::string_view field, std::string_view value,
                                     std::string_view why);
// "graph 'NAME': WHY" (NAME through printable()).
[[noreturn]] void throw_graph_error(std::string_view graph, std::string_view why);

} // namespace gridflow
