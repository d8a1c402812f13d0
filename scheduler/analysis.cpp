#include "scheduler/analysis.hpp"

#include "kernels/counting.hpp"
#include "runtime/checked_math.hpp"
#include "scheduler/buffer_data.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/op_kinds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

namespace gridflow {

std::string hazard_names(std::uint32_t hazards) {
  std::string s;
  auto add = [&](std::uint32_t bit, const char* name) {
    if (!(hazards & bit))
      return;
    if (!s.empty())
      s += '|';
    s += name;
  };
  add(kHazardRaw, "RAW");
  add(kHazardWar, "WAR");
  add(kHazardWaw, "WAW");
  add(kHazardAfter, "after");
  return s;
}

namespace {
bool is_integral(double v) {
  return std::isfinite(v) && std::floor(v) == v;
}
} // namespace

bool reads_aux(OpKind op) {
  return kind_traits(op).aux == program::AuxUse::read;
}
bool writes_aux(OpKind op) {
  return kind_traits(op).aux == program::AuxUse::write;
}

bool overlaps(const ResolvedView& a, const ResolvedView& b) {
  return a.buffer == b.buffer && a.offset < b.end() && b.offset < a.end() && a.elements() > 0 && b.elements() > 0;
}

// Whether `v` is a value of the dtype: an integer in the int32 range, or a finite number within the f32 range
// (a larger one would silently become an infinity).
bool fits_dtype(DType d, double v) {
  if (d == DType::i32)
    return is_integral(v) && v >= std::numeric_limits<std::int32_t>::min() &&
           v <= std::numeric_limits<std::int32_t>::max();
  return std::isfinite(v) && std::fabs(v) <= std::numeric_limits<float>::max();
}

namespace {

std::string in_quotes(std::string_view s) {
  return fmt::format("'{}'", s);
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::string view_text(const ViewSpec& v) {
  std::string s = fmt::format("{{buffer '{}', offset {}", v.buffer, v.offset);
  if (v.length)
    s += fmt::format(", length {}", *v.length);
  if (v.rows)
    s += fmt::format(", rows {}", *v.rows);
  if (v.cols)
    s += fmt::format(", cols {}", *v.cols);
  return s + "}";
}

std::string dtype_range_text(DType d) {
  return d == DType::i32 ? "i32 buffers need an integer in the int32 range"
                         : "f32 buffers need a finite number within the f32 range (magnitude <= 3.4028235e38)";
}

void validate_init(const Buffer& b) {
  const bool i32 = b.dtype == DType::i32;
  auto need_value = [&](const char* field, double v) {
    if (!fits_dtype(b.dtype, v))
      throw_buffer_error(b.name, field, fmt::format("{}", v), dtype_range_text(b.dtype));
  };
  if (const auto* u = std::get_if<InitUniform>(&b.init)) {
    need_value("init.uniform.low", u->low);
    need_value("init.uniform.high", u->high);
    if (i32 ? u->low > u->high : u->low >= u->high)
      throw_buffer_error(b.name, "init.uniform.high", fmt::format("{}", u->high),
                         fmt::format("must be {} low ({})", i32 ? ">=" : ">", u->low));
    if (!i32) {
      const F32Range r = f32_values_in(u->low, u->high);
      if (r.first > r.last)
        throw_buffer_error(b.name, "init.uniform.high", fmt::format("{}", u->high),
                           fmt::format("no f32 value lies in [low, high) = [{}, {})", u->low, u->high));
    }
  } else if (const auto* io = std::get_if<InitIota>(&b.init)) {
    need_value("init.iota.start", io->start);
    need_value("init.iota.step", io->step);
    // Values grow monotonically, so the first and the last element bound them all.
    const std::int64_t n = b.elements();
    const double last = io->start + io->step * static_cast<double>(n > 0 ? n - 1 : 0);
    if (!fits_dtype(b.dtype, last))
      throw_buffer_error(b.name, "init.iota.step", fmt::format("{}", io->step),
                         fmt::format("the last element, start + step x {} = {}, is outside the buffer's dtype: {}",
                                     n > 0 ? n - 1 : 0, last, dtype_range_text(b.dtype)));
  } else if (const auto* c = std::get_if<InitConstant>(&b.init)) {
    need_value("init.constant", c->value);
  } else if (const auto* f = std::get_if<InitFile>(&b.init)) {
    if (f->path.empty())
      throw_buffer_error(b.name, "init.file", "\"\"", "needs a path");
    if (has_control_chars(f->path))
      throw_buffer_error(b.name, "init.file", printable(f->path), "control characters are refused in paths");
  } else if (const auto* h = std::get_if<InitHost>(&b.init)) {
    const std::optional<std::int64_t> want = checked::mul<std::int64_t>(b.elements(), dtype_size(b.dtype));
    const std::size_t have = h->bytes ? h->bytes->size() : 0;
    if (!want || have != static_cast<std::size_t>(*want))
      throw_buffer_error(b.name, "init.host", fmt::format("{} bytes", have),
                         fmt::format("expected {} bytes", want.value_or(-1)));
  }
}

// A name that reaches terminals and files: non-empty, no control characters.
void validate_name(const std::string& name, std::size_t index, bool task) {
  const std::string who = name.empty() ? fmt::format("#{}", index) : name;
  auto fail = [&](std::string_view value, std::string_view why) {
    task ? throw_task_error(who, "name", value, why) : throw_buffer_error(who, "name", value, why);
  };
  if (name.empty())
    fail("\"\"", task ? "tasks need a non-empty name" : "buffers need a non-empty name");
  if (has_control_chars(name))
    fail(printable(name), "control characters are refused in names");
}

std::unordered_map<std::string, std::uint32_t> validate_buffers(const Graph& g) {
  if (g.buffers().size() > kMaxBuffers)
    throw_graph_error(g.name(), fmt::format("{} buffers exceed the limit of {}", g.buffers().size(), kMaxBuffers));
  if (has_control_chars(g.name()))
    throw_graph_error(g.name(), "control characters are refused in the graph's name");
  std::unordered_map<std::string, std::uint32_t> index;
  std::map<std::string, std::string> saved_by; // normalized save path -> buffer
  for (std::uint32_t i = 0; i < g.buffers().size(); ++i) {
    const Buffer& b = g.buffers()[i];
    validate_name(b.name, i, false);
    if (!index.emplace(b.name, i).second)
      throw_buffer_error(b.name, "name", in_quotes(b.name), "defined twice");
    if (!b.save.empty()) {
      if (has_control_chars(b.save))
        throw_buffer_error(b.name, "save", printable(b.save), "control characters are refused in paths");
      const auto [it, fresh] = saved_by.emplace(std::filesystem::path(b.save).lexically_normal().string(), b.name);
      if (!fresh)
        throw_buffer_error(b.name, "save", fmt::format("\"{}\"", b.save),
                           fmt::format("buffer '{}' is saved to the same path", it->second));
    }
    if (b.shape.empty() || b.shape.size() > 2)
      throw_buffer_error(b.name, "shape", shape_text(b.shape), "must be [n] or [rows, cols]");
    std::int64_t n = 1;
    for (std::int64_t d : b.shape) {
      if (d < 0)
        throw_buffer_error(b.name, "shape", shape_text(b.shape), "dimensions must be >= 0");
      if (d > 0 && n > kMaxBufferElements / d)
        throw_buffer_error(b.name, "shape", shape_text(b.shape),
                           fmt::format("more than the limit of {} elements", kMaxBufferElements));
      n *= d;
    }
    if (b.is_matrix() && b.shape[1] == 0 && b.shape[0] > kMaxEmptyRows)
      throw_buffer_error(b.name, "shape", shape_text(b.shape),
                         fmt::format("a buffer of zero columns has at most {} rows", kMaxEmptyRows));
    validate_init(b);
  }
  return index;
}

ResolvedView resolve_view(const Graph& g, const std::unordered_map<std::string, std::uint32_t>& index, const Task& t,
                          const ViewSpec& v, const char* field) {
  const std::string f(field);
  auto it = index.find(v.buffer);
  if (it == index.end())
    throw_task_error(t.name, f + ".buffer", in_quotes(v.buffer),
                     v.buffer.empty() ? "missing" : "no buffer of that name");
  const Buffer& b = g.buffers()[it->second];
  if (v.offset < 0)
    throw_task_error(t.name, f + ".offset", fmt::format("{}", v.offset), "must be >= 0");
  if (v.length && (v.rows || v.cols))
    throw_task_error(t.name, f, view_text(v), "give either length or rows and cols, not both");
  if (v.rows.has_value() != v.cols.has_value())
    throw_task_error(t.name, f, view_text(v), "rows and cols go together");
  if (v.length && *v.length < 0)
    throw_task_error(t.name, f + ".length", fmt::format("{}", *v.length), "must be >= 0");
  if (v.rows && *v.rows < 0)
    throw_task_error(t.name, f + ".rows", fmt::format("{}", *v.rows), "must be >= 0");
  if (v.cols && *v.cols < 0)
    throw_task_error(t.name, f + ".cols", fmt::format("{}", *v.cols), "must be >= 0");

  ResolvedView r;
  r.buffer = it->second;
  r.offset = v.offset;
  const std::int64_t size = b.elements();
  if (v.offset > size)
    throw_task_error(t.name, f + ".offset", fmt::format("{}", v.offset),
                     fmt::format("past the end of buffer '{}' ({} elements)", b.name, size));
  const std::int64_t room = size - v.offset; // elements from the offset to the buffer's end
  if (v.length) {
    if (*v.length > room)
      throw_task_error(t.name, f + ".length", fmt::format("{}", *v.length),
                       fmt::format("offset {} + length {} ends past the end of buffer '{}' ({} elements)", v.offset,
                                   *v.length, b.name, size));
    r.rows = 1;
    r.cols = *v.length;
  } else if (v.rows) {
    const std::optional<std::int64_t> n = checked::mul(*v.rows, *v.cols);
    if (!n || *n > room)
      throw_task_error(t.name, f, view_text(v),
                       fmt::format("{} rows x {} cols from offset {} end past the end of buffer '{}' ({} elements)",
                                   *v.rows, *v.cols, v.offset, b.name, size));
    // A view of zero columns holds nothing, but its rows are still iterated: bounded on their own.
    if (*v.cols == 0 && *v.rows > kMaxEmptyRows)
      throw_task_error(t.name, f + ".rows", fmt::format("{}", *v.rows),
                       fmt::format("a view of zero columns has at most {} rows", kMaxEmptyRows));
    r.rows = *v.rows;
    r.cols = *v.cols;
  } else if (v.offset == 0 && b.is_matrix()) {
    r.rows = b.shape[0];
    r.cols = b.shape[1];
  } else {
    r.rows = 1;
    r.cols = room;
  }
  return r;
}

// Per-buffer interval map of the latest writer and the readers since, for hazard inference.
struct Segment {
  std::int64_t end = 0;
  std::int64_t writer = -1; // task index, -1: initial contents
  std::vector<std::uint32_t> readers;
};
using SegmentMap = std::map<std::int64_t, Segment>;

// Split so that a segment starts exactly at `at` (if inside the map's range).
void split_at(SegmentMap& m, std::int64_t at) {
  auto it = m.upper_bound(at);
  if (it == m.begin())
    return;
  --it;
  if (it->first == at || it->second.end <= at)
    return;
  Segment right = it->second;
  it->second.end = at;
  m.emplace(at, std::move(right));
}

class HazardTracker {
public:
  HazardTracker(const Graph& g, std::vector<std::vector<Dependency>>& deps) : g_(g), deps_(deps) {
    maps_.resize(g.buffers().size());
    for (std::size_t b = 0; b < maps_.size(); ++b) {
      const std::int64_t n = g.buffers()[b].elements();
      if (n > 0)
        maps_[b].emplace(0, Segment{n, -1, {}});
    }
  }

  void read(std::uint32_t task, const ResolvedView& v) {
    for_each_segment(v, [&](std::int64_t begin, Segment& s) {
      if (s.writer >= 0)
        add_edge(static_cast<std::uint32_t>(s.writer), task, kHazardRaw);
      else if (std::holds_alternative<std::monostate>(g_.buffers()[v.buffer].init))
        throw_task_error(g_.tasks()[task].name, "in", in_quotes(g_.buffers()[v.buffer].name),
                         fmt::format("reads elements [{}, {}) before any task writes them, and the buffer has no init",
                                     begin, s.end));
      if (s.readers.empty() || s.readers.back() != task)
        s.readers.push_back(task);
    });
  }

  void write(std::uint32_t task, const ResolvedView& v) {
    for_each_segment(v, [&](std::int64_t, Segment& s) {
      if (s.writer >= 0 && static_cast<std::uint32_t>(s.writer) != task)
        add_edge(static_cast<std::uint32_t>(s.writer), task, kHazardWaw);
      for (std::uint32_t r : s.readers)
        if (r != task)
          add_edge(r, task, kHazardWar);
      s.writer = task;
      s.readers.clear();
    });
  }

  void add_edge(std::uint32_t from, std::uint32_t to, std::uint32_t hazard) {
    auto& list = deps_[to];
    for (Dependency& d : list)
      if (d.producer == from) {
        d.hazards |= hazard;
        return;
      }
    list.push_back({from, hazard});
  }

private:
  template <class F> void for_each_segment(const ResolvedView& v, F f) {
    if (v.elements() == 0)
      return;
    SegmentMap& m = maps_[v.buffer];
    split_at(m, v.offset);
    split_at(m, v.end());
    for (auto it = m.find(v.offset); it != m.end() && it->first < v.end(); ++it)
      f(it->first, it->second);
  }

  const Graph& g_;
  std::vector<std::vector<Dependency>>& deps_;
  std::vector<SegmentMap> maps_;
};

// Describe one cycle among the tasks Kahn's algorithm could not order.
[[noreturn]] void report_cycle(const Graph& g, const std::vector<std::vector<Dependency>>& deps,
                               const std::vector<std::uint32_t>& remaining_indegree) {
  // Walk predecessors from a blocked task until a task repeats; every blocked task has a blocked predecessor.
  std::uint32_t start = 0;
  while (remaining_indegree[start] == 0)
    ++start;
  std::vector<std::uint32_t> path;
  std::vector<std::int64_t> pos(g.tasks().size(), -1);
  std::uint32_t cur = start;
  while (pos[cur] < 0) {
    pos[cur] = static_cast<std::int64_t>(path.size());
    path.push_back(cur);
    for (const Dependency& d : deps[cur])
      if (remaining_indegree[d.producer] > 0) {
        cur = d.producer;
        break;
      }
  }
  // path[pos[cur]..] walks backwards along edges; print it forwards.
  std::vector<std::uint32_t> cycle(path.begin() + pos[cur], path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::string text;
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    const std::uint32_t from = cycle[i], to = cycle[(i + 1) % cycle.size()];
    std::uint32_t hz = 0;
    for (const Dependency& d : deps[to])
      if (d.producer == from)
        hz = d.hazards;
    text += fmt::format("'{}' -({})-> ", g.tasks()[from].name, hazard_names(hz));
  }
  text += fmt::format("'{}'", g.tasks()[cycle.front()].name);
  throw_graph_error(g.name(), "dependency cycle: " + text);
}

// Each task's name, views and op-specific fields, checked; the views into a; returns name -> index.
std::unordered_map<std::string, std::uint32_t> resolve_tasks(const Graph& g, Analysis& a) {
  const std::size_t n = g.tasks().size();
  std::unordered_map<std::string, std::uint32_t> task_index;
  a.in.resize(n);
  a.out.resize(n);
  a.aux.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const Task& t = g.tasks()[i];
    validate_name(t.name, i, true);
    if (!task_index.emplace(t.name, i).second)
      throw_task_error(t.name, "name", in_quotes(t.name), "defined twice");
    const OpKindTraits& kind = kind_traits(t.op);
    a.in[i] = resolve_view(g, a.buffer_index, t, t.in, "in");
    a.out[i] = resolve_view(g, a.buffer_index, t, t.out, "out");
    if (kind.aux != program::AuxUse::none)
      a.aux[i] = resolve_view(g, a.buffer_index, t, t.aux, kind.aux_key);
    else if (!t.aux.buffer.empty())
      throw_task_error(t.name, "aux", in_quotes(t.aux.buffer),
                       fmt::format("a {} task takes no third view", to_string(t.op)));
    kind.validate({g, t, a.in[i], a.out[i], a.aux[i] ? &*a.aux[i] : nullptr});
  }
  return task_index;
}

// Dependencies: the hazards between views in declaration order, then the explicit `after` edges; each task's list
// sorted by producer. Counts each buffer's writers.
void find_dependencies(const Graph& g, const std::unordered_map<std::string, std::uint32_t>& task_index, Analysis& a) {
  const std::size_t n = g.tasks().size();
  a.deps.resize(n);
  a.writers.assign(g.buffers().size(), 0);
  HazardTracker tracker(g, a.deps);
  for (std::uint32_t i = 0; i < n; ++i) {
    tracker.read(i, a.in[i]);
    if (reads_aux(g.tasks()[i].op))
      tracker.read(i, *a.aux[i]);
    tracker.write(i, a.out[i]);
    ++a.writers[a.out[i].buffer];
    if (writes_aux(g.tasks()[i].op)) {
      tracker.write(i, *a.aux[i]);
      ++a.writers[a.aux[i]->buffer];
    }
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    const Task& t = g.tasks()[i];
    for (std::size_t k = 0; k < t.after.size(); ++k) {
      auto it = task_index.find(t.after[k]);
      const std::string field = fmt::format("after[{}]", k);
      if (it == task_index.end())
        throw_task_error(t.name, field, in_quotes(t.after[k]), "no task of that name");
      if (it->second == i)
        throw_task_error(t.name, field, in_quotes(t.after[k]), "a task cannot follow itself");
      tracker.add_edge(it->second, i, kHazardAfter);
    }
  }
  for (auto& list : a.deps)
    std::sort(list.begin(), list.end(),
              [](const Dependency& x, const Dependency& y) { return x.producer < y.producer; });
}

// Kahn's algorithm in declaration order: levels (the longest path from a source), the level order, or the cycle.
void assign_levels(const Graph& g, Analysis& a) {
  const std::size_t n = g.tasks().size();
  std::vector<std::vector<std::uint32_t>> consumers(n);
  std::vector<std::uint32_t> indegree(n, 0);
  for (std::uint32_t i = 0; i < n; ++i)
    for (const Dependency& d : a.deps[i]) {
      consumers[d.producer].push_back(i);
      ++indegree[i];
    }
  a.level.assign(n, 0);
  std::vector<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < n; ++i)
    if (indegree[i] == 0)
      ready.push_back(i);
  std::size_t done = 0;
  while (!ready.empty()) {
    const std::uint32_t p = ready.back();
    ready.pop_back();
    ++done;
    for (std::uint32_t c : consumers[p]) {
      a.level[c] = std::max(a.level[c], a.level[p] + 1);
      if (--indegree[c] == 0)
        ready.push_back(c);
    }
  }
  if (done != n)
    report_cycle(g, a.deps, indegree);
  a.order.resize(n);
  for (std::uint32_t i = 0; i < n; ++i)
    a.order[i] = i;
  std::stable_sort(a.order.begin(), a.order.end(),
                   [&](std::uint32_t x, std::uint32_t y) { return a.level[x] < a.level[y]; });
  a.num_levels = 1 + *std::max_element(a.level.begin(), a.level.end());
}

} // namespace

Analysis analyze(const Graph& g) {
  Analysis a;
  a.buffer_index = validate_buffers(g);
  const std::size_t n = g.tasks().size();
  if (n == 0)
    throw_graph_error(g.name(), "has no tasks (an empty graph runs nothing: add at least one task)");
  if (n > kMaxTasks)
    throw_graph_error(g.name(), fmt::format("{} tasks exceed the limit of {}", n, kMaxTasks));
  const auto task_index = resolve_tasks(g, a);
  find_dependencies(g, task_index, a);
  assign_levels(g, a);
  return a;
}

} // namespace gridflow
