// Validation and dependency analysis of a Graph: the step between what a user wrote and what can be lowered.
//
// analyze() checks everything that can be checked without running (names, shapes, dtypes, view ranges,
// aliasing, init parameters, size limits, read-before-write, cycles) and throws GraphError naming the task or
// buffer, the field and the value. On success it returns resolved views, the direct dependencies of each task
// with the hazards that caused them, topological levels and a deterministic topological order.
#pragma once

#include "scheduler/graph.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace gridflow {

// Size limits of what gridflow accepts (the device program uses 32-bit task and tile ids).
inline constexpr std::int64_t kMaxBufferElements = std::int64_t{1} << 40;
inline constexpr std::size_t kMaxTasks = std::size_t{1} << 22;
inline constexpr std::size_t kMaxBuffers = std::size_t{1} << 20;
// Rows of a buffer or view of zero columns: they hold nothing but are still iterated, so they are bounded alone.
inline constexpr std::int64_t kMaxEmptyRows = std::int64_t{1} << 20;

// A view with every field resolved: `rows x cols` contiguous elements starting at `offset`.
struct ResolvedView {
  std::uint32_t buffer = 0;
  std::int64_t offset = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t elements() const { return rows * cols; }
  std::int64_t end() const { return offset + elements(); }
};

enum Hazard : std::uint32_t {
  kHazardRaw = 1u << 0,   // reads what an earlier task wrote
  kHazardWar = 1u << 1,   // writes what an earlier task read
  kHazardWaw = 1u << 2,   // writes what an earlier task wrote
  kHazardAfter = 1u << 3, // explicit `after` edge
};
std::string hazard_names(std::uint32_t hazards); // "RAW|WAR"

struct Dependency {
  std::uint32_t producer = 0; // task index that must finish first
  std::uint32_t hazards = 0;  // Hazard bits
};

struct Analysis {
  std::vector<ResolvedView> in;                 // per task
  std::vector<ResolvedView> out;                // per task
  std::vector<std::optional<ResolvedView>> aux; // per task: scatter's offsets (read), select's count (written)
  std::vector<std::vector<Dependency>> deps;    // per task: direct predecessors, sorted by producer
  std::vector<std::uint32_t> level;             // per task: 0 for tasks without predecessors
  std::vector<std::uint32_t> order;             // all tasks, sorted by (level, declaration index)
  std::uint32_t num_levels = 0;
  std::unordered_map<std::string, std::uint32_t> buffer_index;
  std::vector<std::uint32_t> writers; // per buffer: how many tasks write it
};

Analysis analyze(const Graph& graph);

// Whether a task's aux view is read (scatter's offsets) or written (select's count): the op table's aux use.
bool reads_aux(OpKind op);
bool writes_aux(OpKind op);

// Whether two resolved views share an element.
bool overlaps(const ResolvedView& a, const ResolvedView& b);

// Whether `v` is a value of the dtype: an integer in the int32 range, or a finite number within the f32 range.
bool fits_dtype(DType dtype, double v);

} // namespace gridflow
