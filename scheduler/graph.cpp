#include "scheduler/graph.hpp"

#include "runtime/checked_math.hpp"

#include <cstring>
#include <limits>

namespace gridflow {

std::int64_t Buffer::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    const std::optional<std::int64_t> next = checked::mul(n, d);
    if (!next)
      return std::numeric_limits<std::int64_t>::max(); // validation refuses it (kMaxBufferElements)
    n = *next;
  }
  return shape.empty() ? 0 : n;
}

ViewSpec ViewSpec::range(std::string name, std::int64_t offset, std::int64_t length) {
  ViewSpec v(std::move(name));
  v.offset = offset;
  v.length = length;
  return v;
}

ViewSpec ViewSpec::block(std::string name, std::int64_t offset, std::int64_t rows, std::int64_t cols) {
  ViewSpec v(std::move(name));
  v.offset = offset;
  v.rows = rows;
  v.cols = cols;
  return v;
}

std::string Graph::add_buffer(Buffer buffer) {
  buffers_.push_back(std::move(buffer));
  return buffers_.back().name;
}

std::string Graph::add_buffer(std::string name, DType dtype, std::vector<std::int64_t> shape, Init init) {
  return add_buffer(Buffer{std::move(name), dtype, std::move(shape), std::move(init), {}});
}

namespace {
template <class T> InitHost host_bytes(const std::vector<T>& data) {
  auto bytes = std::make_shared<std::vector<std::byte>>(data.size() * sizeof(T));
  if (!data.empty())
    std::memcpy(bytes->data(), data.data(), bytes->size());
  return InitHost{std::move(bytes)};
}
} // namespace

std::string Graph::add_buffer(std::string name, std::vector<std::int64_t> shape, const std::vector<float>& data) {
  return add_buffer(std::move(name), DType::f32, std::move(shape), host_bytes(data));
}

std::string Graph::add_buffer(std::string name, std::vector<std::int64_t> shape,
                              const std::vector<std::int32_t>& data) {
  return add_buffer(std::move(name), DType::i32, std::move(shape), host_bytes(data));
}

Task& Graph::add_task(Task task) {
  tasks_.push_back(std::move(task));
  return tasks_.back();
}

Task& Graph::reduce(std::string name, ViewSpec in, ViewSpec out, ReduceFn fn, Axis axis) {
  Task t;
  t.name = std::move(name);
  t.op = OpKind::reduce;
  t.reduce_fn = fn;
  t.axis = axis;
  t.in = std::move(in);
  t.out = std::move(out);
  return add_task(std::move(t));
}

Task& Graph::scan(std::string name, ViewSpec in, ViewSpec out, ScanFn fn, bool exclusive, Axis axis) {
  Task t;
  t.name = std::move(name);
  t.op = OpKind::scan;
  t.scan_fn = fn;
  t.exclusive = exclusive;
  t.axis = axis;
  t.in = std::move(in);
  t.out = std::move(out);
  return add_task(std::move(t));
}

Task& Graph::softmax(std::string name, ViewSpec in, ViewSpec out, bool log) {
  Task t;
  t.name = std::move(name);
  t.op = OpKind::softmax;
  t.log = log;
  t.axis = Axis::row;
  t.in = std::move(in);
  t.out = std::move(out);
  return add_task(std::move(t));
}

Task& Graph::histogram(std::string name, ViewSpec keys, ViewSpec counts) {
  Task t;
  t.name = std::move(name);
  t.op = OpKind::histogram;
  t.in = std::move(keys);
  t.out = std::move(counts);
  return add_task(std::move(t));
}

Task& Graph::scatter(std::string name, ViewSpec keys, ViewSpec offsets, ViewSpec out) {
  Task t;
  t.name = std::move(name);
  t.op = OpKind::scatter;
  t.in = std::move(keys);
  t.aux = std::move(offsets);
  t.out = std::move(out);
  return add_task(std::move(t));
}

Task& Graph::select(std::string name, ViewSpec in, ViewSpec out, ViewSpec count, CmpFn cmp, double threshold) {
  Task t;
  t.name = std::move(name);
  t.op = OpKind::select;
  t.in = std::move(in);
  t.out = std::move(out);
  t.aux = std::move(count);
  t.cmp = cmp;
  t.threshold = threshold;
  return add_task(std::move(t));
}

Task& Graph::map(std::string name, ViewSpec in, ViewSpec out, MapFn fn, double scale, double shift) {
  Task t;
  t.name = std::move(name);
  t.op = OpKind::map;
  t.in = std::move(in);
  t.out = std::move(out);
  t.map_fn = fn;
  t.scale = scale;
  t.shift = shift;
  return add_task(std::move(t));
}

Task& Graph::clamp(std::string name, ViewSpec in, ViewSpec out, double lo, double hi, double scale, double shift) {
  Task& t = map(std::move(name), std::move(in), std::move(out), MapFn::clamp, scale, shift);
  t.lo = lo;
  t.hi = hi;
  return t;
}

const Buffer* Graph::find_buffer(const std::string& name) const {
  for (const Buffer& b : buffers_)
    if (b.name == name)
      return &b;
  return nullptr;
}

Buffer* Graph::find_buffer(const std::string& name) {
  for (Buffer& b : buffers_)
    if (b.name == name)
      return &b;
  return nullptr;
}

} // namespace gridflow
