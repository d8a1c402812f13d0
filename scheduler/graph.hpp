// The user-facing task graph: named buffers and named tasks that read and write views of them.
//
// A Graph is only a description: nothing is checked when it is built. `analyze()` (analysis.hpp) validates it,
// infers dependencies and computes levels; every error names the task (or buffer), the field and the value.
// Tasks run as if in declaration order: dependencies are inferred from overlapping reads and writes (RAW, WAR,
// WAW) in that order, plus explicit `after` edges.
#pragma once

#include "kernels/op_types.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gridflow {

// Buffer initialisers, so a graph carries its own inputs.
struct InitUniform { // seeded uniform random in [low, high) (f32) or integers in [low, high] (i32)
  double low = -1.0;
  double high = 1.0;
  std::uint64_t seed = 1;
};
struct InitIota { // start, start + step, ...
  double start = 0.0;
  double step = 1.0;
};
struct InitConstant {
  double value = 0.0;
};
struct InitFile { // raw little-endian elements of the buffer's dtype; relative to the graph file's folder
  std::string path;
};
struct InitHost { // C++ API only: the bytes of every element, in the buffer's dtype
  std::shared_ptr<const std::vector<std::byte>> bytes;
};
using Init = std::variant<std::monostate, InitUniform, InitIota, InitConstant, InitFile, InitHost>;

struct Buffer {
  std::string name;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape; // [n] or [rows, cols]
  Init init;                       // monostate: written by tasks only
  std::string save;                // where `run` saves the buffer after the graph ran (empty: not saved)

  std::int64_t elements() const; // product of the shape; INT64_MAX when it overflows (analyze() refuses both)
  bool is_matrix() const { return shape.size() == 2; }
};

// A view of a buffer: the whole buffer, a 1-D range (offset, length), or a row-major block (offset, rows, cols)
// of contiguous elements.
struct ViewSpec {
  std::string buffer;
  std::int64_t offset = 0;
  std::optional<std::int64_t> length;
  std::optional<std::int64_t> rows;
  std::optional<std::int64_t> cols;

  ViewSpec() = default;
  ViewSpec(std::string name) : buffer(std::move(name)) {} // NOLINT: a buffer name is its whole view
  ViewSpec(const char* name) : buffer(name) {}            // NOLINT
  static ViewSpec range(std::string name, std::int64_t offset, std::int64_t length);
  static ViewSpec block(std::string name, std::int64_t offset, std::int64_t rows, std::int64_t cols);
};

// One task. The counting ops (contracts in kernels/counting.hpp) work on 1-D views:
//   histogram: in = i32 keys, out = i32 counts (bins = out's length, at most 4096);
//   scatter:   in = i32 keys, aux = i32 offsets (bins = its length, at most 1024), out = i32 placed indices;
//   select:    in = f32 or i32, out = same dtype and length, aux = one i32 (the count); keeps x CMP threshold.
// map (kernels/map.hpp): in = f32, out = f32 of the same length (in place on exactly the input allowed);
//   y = f(scale * x + shift); clamp needs lo <= hi.
struct Task {
  std::string name;
  OpKind op = OpKind::reduce;
  ReduceFn reduce_fn = ReduceFn::sum; // reduce
  ScanFn scan_fn = ScanFn::sum;       // scan
  bool exclusive = false;             // scan
  bool log = false;                   // softmax
  Axis axis = Axis::all;              // reduce, scan: the whole view or each row; softmax: always rows
  CmpFn cmp = CmpFn::gt;              // select
  double threshold = 0.0;             // select (an integer for i32 inputs)
  MapFn map_fn = MapFn::identity;     // map
  double scale = 1.0;                 // map
  double shift = 0.0;                 // map
  std::optional<double> lo, hi;       // map: clamp's bounds (required for clamp, refused otherwise)
  ViewSpec in;
  ViewSpec out;
  ViewSpec aux;                   // scatter: offsets (read); select: count (written); others: none (no buffer)
  std::vector<std::string> after; // names of tasks this one must follow
};

class Graph {
public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Buffers. The returned name can be passed wherever a view is expected.
  std::string add_buffer(Buffer buffer);
  std::string add_buffer(std::string name, DType dtype, std::vector<std::int64_t> shape, Init init = {});
  // C++ convenience: a buffer initialised from host data (copied).
  std::string add_buffer(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& data);
  std::string add_buffer(std::string name, std::vector<std::int64_t> shape, const std::vector<std::int32_t>& data);

  // Tasks. Each returns the task so `after` edges can be added (the reference is valid until the next add).
  Task& add_task(Task task);
  Task& reduce(std::string name, ViewSpec in, ViewSpec out, ReduceFn fn, Axis axis = Axis::all);
  Task& scan(std::string name, ViewSpec in, ViewSpec out, ScanFn fn, bool exclusive = false, Axis axis = Axis::all);
  Task& softmax(std::string name, ViewSpec in, ViewSpec out, bool log = false);
  Task& histogram(std::string name, ViewSpec keys, ViewSpec counts);
  Task& scatter(std::string name, ViewSpec keys, ViewSpec offsets, ViewSpec out);
  Task& select(std::string name, ViewSpec in, ViewSpec out, ViewSpec count, CmpFn cmp, double threshold);
  Task& map(std::string name, ViewSpec in, ViewSpec out, MapFn fn, double scale = 1.0, double shift = 0.0);
  Task& clamp(std::string name, ViewSpec in, ViewSpec out, double lo, double hi, double scale = 1.0,
              double shift = 0.0);

  const std::vector<Buffer>& buffers() const { return buffers_; }
  std::vector<Buffer>& buffers() { return buffers_; }
  const std::vector<Task>& tasks() const { return tasks_; }
  std::vector<Task>& tasks() { return tasks_; }

  const Buffer* find_buffer(const std::string& name) const;
  Buffer* find_buffer(const std::string& name);

private:
  std::string name_;
  std::vector<Buffer> buffers_;
  std::vector<Task> tasks_;
};

} // namespace gridflow
