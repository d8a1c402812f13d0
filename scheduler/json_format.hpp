// The JSON graph format (docs/JSON-FORMAT.md, schema in docs/graph.schema.json).
//
// Strict by design: unknown keys, keys that do not apply to a task's op, wrong types and malformed JSON are
// errors (GraphError) that give the file, the JSON path and the value ("g.json: tasks[2].in.offset: expected an
// integer, got \"abc\""), or line and column for syntax errors. A typo must never silently change a graph.
#pragma once

#include "scheduler/graph.hpp"

#include <filesystem>
#include <string>
#include <string_view>

namespace gridflow {

inline constexpr int kJsonFormatVersion = 1;

// Parses a graph; `source` names the text in error messages.
Graph graph_from_json(std::string_view text, std::string_view source = "<json>");

// Reads and parses a graph file.
Graph load_graph(const std::filesystem::path& path);

// Serialises a graph (pretty-printed with `indent` spaces, compact when indent < 0). Buffers initialised from
// host data (InitHost) cannot be written: GraphError names them.
std::string graph_to_json(const Graph& graph, int indent = 2);

} // namespace gridflow
