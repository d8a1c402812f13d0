#include "scheduler/errors.hpp"

#include <fmt/format.h>

namespace gridflow {

void throw_task_error(std::string_view task, std::string_view field, std::string_view value, std::string_view why) {
  throw GraphError(fmt::format("task '{}': {} = {}: {}", task, field, value, why));
}

void throw_buffer_error(std::string_view buffer, std::string_view field, std::string_view value,
                        std::string_view why) {
  throw GraphError(fmt::format("buffer '{}': {} = {}: {}", buffer, field, value, why));
}

void throw_graph_error(std::string_view graph, std::string_view why) {
  throw GraphError(fmt::format("graph '{}': {}", graph, why));
}

} // namespace gridflow
