#include "scheduler/errors.hpp"

#include <fmt/format.h>

namespace gridflow {

namespace {
bool is_control(char c) {
  return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
}
} // namespace

bool has_control_chars(std::string_view s) {
  for (char c : s)
    if (is_control(c))
      return true;
  return false;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (is_control(c))
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else
      out += c;
  }
  return out;
}

void throw_task_error(std::string_view task, std::string_view field, std::string_view value, std::string_view why) {
  throw GraphError(fmt::format("task '{}': {} = {}: {}", printable(task), printable(field), printable(value), why));
}

void throw_buffer_error(std::string_view buffer, std::string_view field, std::string_view value, std::string_view why) {
  throw GraphError(fmt::format("buffer '{}': {} = {}: {}", printable(buffer), printable(field), printable(value), why));
}

void throw_graph_error(std::string_view graph, std::string_view why) {
  throw GraphError(fmt::format("graph '{}': {}", printable(graph), why));
}

} // namespace gridflow
