// The graph op table: one row per graph op (OpKind) with what the scheduler knows of it: its JSON keys, its third
// view (aux), the rules its views must meet, its output dtype and the device opcode it lowers to. The JSON reader and
// writer, validation and the lowering read it; the device side of each opcode is runtime/op_traits.hpp. A new graph
// op is a row here (with its validate and lower functions in op_kinds.cpp), a builder in graph.hpp, and what
// op_traits.hpp asks for its opcode.
#pragma once

#include "runtime/op_traits.hpp"
#include "scheduler/graph.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gridflow {

struct ResolvedView;

// What a row's validate function sees: the task, its resolved views and their buffers.
struct OpCheck {
  const Graph& graph;
  const Task& task;
  const ResolvedView& in;
  const ResolvedView& out;
  const ResolvedView* aux; // null when the op has no third view
};

// A task's JSON key beyond name, op, in, out and after: "fn", "axis", "exclusive", "log", "cmp", "threshold", or the
// aux view's key.
struct OpKey {
  std::string_view name;
  bool required;
};

struct OpKindTraits {
  OpKind kind;                 // (its name: to_string(kind), kernels/op_types.hpp)
  std::span<const OpKey> keys; // the task's own JSON keys
  program::AuxUse aux;         // the third view: none, read, written
  const char* aux_key;         // its JSON key and field name ("offsets", "count"); null without one
  bool rows_only;              // the op always works on rows (axis is row)
  bool counting;               // integer bookkeeping (kernels/counting.hpp): never a sentinel output
  // Throws GraphError (task, field, value, why) when the views or options break the op's rules.
  void (*validate)(const OpCheck&);
  // The element type written, given the input's.
  DType (*output_dtype)(const Task&, DType in);
  // The device opcode for the task, given its resolved input view.
  program::Opcode (*lower)(const Task&, const ResolvedView& in);
  // The op's own descriptor fields (fn, flags, param, consts) from the task and its views.
  void (*encode)(const OpCheck&, program::TaskDesc&);
  // The "fn" key, for ops that have one: the names it takes, setting one (false: not a name of this op's fns), and
  // the task's fn's name.
  const char* fn_choices;
  bool (*set_fn)(Task&, std::string_view);
  std::string_view (*fn_name)(const Task&);
};

const OpKindTraits& kind_traits(OpKind kind);
std::span<const OpKindTraits> all_kinds();

} // namespace gridflow
