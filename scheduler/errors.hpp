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

// "task 'NAME': FIELD = VALUE: WHY"
[[noreturn]] void throw_task_error(std::string_view task, std::string_view field, std::string_view value,
                                   std::string_view why);
// "buffer 'NAME': FIELD = VALUE: WHY"
[[noreturn]] void throw_buffer_error(std::string_view buffer, std::string_view field, std::string_view value,
                                     std::string_view why);
// "graph 'NAME': WHY"
[[noreturn]] void throw_graph_error(std::string_view graph, std::string_view why);

} // namespace gridflow
