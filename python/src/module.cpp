// gridflow._gridflow: the C++ API for Python (nanobind). The graph API as in C++, sessions with every option, runs
// over numpy arrays, torch tensors or any DLPack producer bound without copies, traces and reports as JSON text
// (gridflow/__init__.py turns them into Python objects). Errors keep the C++ messages: GraphError (a ValueError)
// for bad input, GridflowError (a RuntimeError) for runtime failures, DeviceError (a GridflowError) for what a
// run recorded.
#include "runtime/checked_math.hpp"
#include "runtime/errors.hpp"
#include "runtime/version.hpp"
#include "scheduler/analysis.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/profile.hpp"
#include "scheduler/report.hpp"
#include "scheduler/resident_session.hpp"
#include "scheduler/session.hpp"
#include "scheduler/trace_analysis.hpp"

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace gridflow::python {

namespace {

// A name from Python, parsed by `parse`, or ValueError naming what and the value.
template <class T, class Parse> T parsed(const std::string& what, const std::string& value, Parse parse) {
  const auto v = parse(value);
  if (!v)
    throw nb::value_error(fmt::format("{} = '{}': unknown", what, value).c_str());
  return *v;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// ---- data between numpy and host tensors ---------------------------------------------------------------------

using HostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

DType dtype_of(const nb::dlpack::dtype& d, std::string_view what) {
  if (d == nb::dtype<float>())
    return DType::f32;
  if (d == nb::dtype<std::int32_t>())
    return DType::i32;
  throw nb::type_error(
      fmt::format("{}: dtype (code {}, {} bits) is not float32 or int32", what, int(d.code), int(d.bits)).c_str());
}

// The elements of a C-contiguous host array as a tensor of its dtype.
HostTensor tensor_of(const HostArray& a, std::string_view what) {
  HostTensor t(dtype_of(a.dtype(), what), static_cast<std::int64_t>(a.size()));
  if (t.bytes() > 0)
    std::memcpy(t.data(), a.data(), t.bytes());
  return t;
}

// A numpy array of `shape` that owns `t`.
nb::ndarray<nb::numpy> numpy_of(HostTensor t, const std::vector<std::int64_t>& shape) {
  auto* owner = new HostTensor(std::move(t));
  nb::capsule release(owner, [](void* p) noexcept { delete static_cast<HostTensor*>(p); });
  std::vector<std::size_t> dims(shape.begin(), shape.end());
  const nb::dlpack::dtype dt = owner->dtype() == DType::f32 ? nb::dtype<float>() : nb::dtype<std::int32_t>();
  return nb::ndarray<nb::numpy>(owner->data(), dims.size(), dims.data(), release, nullptr, dt);
}

// ---- graphs ---------------------------------------------------------------------------------------------------

// A view from Python: a buffer name, or a View object.
ViewSpec view_of(nb::handle h) {
  if (nb::isinstance<nb::str>(h))
    return ViewSpec(nb::cast<std::string>(h));
  return nb::cast<ViewSpec>(h);
}

// A buffer's init from Python: None, one of the Init classes, or an array of its elements (host data).
Init init_of(nb::handle h, const std::string& buffer, DType dtype, std::int64_t elements) {
  if (h.is_none())
    return std::monostate{};
  if (nb::isinstance<InitUniform>(h))
    return nb::cast<InitUniform>(h);
  if (nb::isinstance<InitIota>(h))
    return nb::cast<InitIota>(h);
  if (nb::isinstance<InitConstant>(h))
    return nb::cast<InitConstant>(h);
  if (nb::isinstance<InitFile>(h))
    return nb::cast<InitFile>(h);
  HostArray a;
  if (!nb::try_cast(h, a))
    throw nb::type_error(fmt::format("buffer '{}': init must be None, Uniform, Iota, Constant, File or a "
                                     "C-contiguous numpy array",
                                     buffer)
                             .c_str());
  const HostTensor t = tensor_of(a, "buffer '" + buffer + "': init");
  if (t.dtype() != dtype || t.size() != elements)
    throw GraphError(fmt::format("buffer '{}': init = an array of {} {}: the buffer holds {} {}", printable(buffer),
                                 t.size(), to_string(t.dtype()), elements, to_string(dtype)));
  const auto* bytes = static_cast<const std::byte*>(t.data());
  return InitHost{std::make_shared<const std::vector<std::byte>>(bytes, bytes + t.bytes())};
}

void add_buffer(Graph& g, const std::string& name, const std::string& dtype, std::vector<std::int64_t> shape,
                nb::handle init, const std::string& save) {
  Buffer b;
  b.name = name;
  b.dtype = parsed<DType>("dtype", dtype, parse_dtype);
  b.shape = std::move(shape);
  b.init = init_of(init, name, b.dtype, b.elements());
  b.save = save;
  g.add_buffer(std::move(b));
}

Task& with_after(Task& t, const std::vector<std::string>& after) {
  t.after.insert(t.after.end(), after.begin(), after.end());
  return t;
}

// ---- sessions -------------------------------------------------------------------------------------------------

// Caller memory for buffer `b` from a DLPack tensor: its shape, dtype and device, rows possibly strided. GraphError
// naming the buffer and the field for anything that does not fit.
ExternalTensor external_of(const Buffer& b, const nb::ndarray<>& a) {
  const std::string& name = b.name;
  const auto refuse = [&](std::string_view field, const std::string& value, const std::string& why) {
    throw_buffer_error(name, field, value, why);
  };
  std::vector<std::int64_t> shape;
  for (std::size_t d = 0; d < a.ndim(); ++d)
    shape.push_back(static_cast<std::int64_t>(a.shape(d)));
  if (shape != b.shape)
    refuse("bind.shape", shape_text(shape), fmt::format("the buffer's shape is {}", shape_text(b.shape)));
  ExternalTensor t;
  t.data = a.data();
  t.elements = b.elements();
  if (a.dtype() == nb::dtype<float>())
    t.dtype = DType::f32;
  else if (a.dtype() == nb::dtype<std::int32_t>())
    t.dtype = DType::i32;
  else
    refuse("bind.dtype", fmt::format("code {}, {} bits", int(a.dtype().code), int(a.dtype().bits)),
           fmt::format("gridflow buffers are float32 or int32; this one is {}", to_string(b.dtype)));
  if (a.device_type() == nb::device::cpu::value)
    t.device = kHostMemory;
  else if (a.device_type() == nb::device::cuda::value || a.device_type() == nb::device::cuda_managed::value)
    t.device = a.device_id();
  else
    refuse("bind.device", fmt::format("DLPack device type {}", a.device_type()), "only CPU or CUDA memory binds");
  const std::size_t last = a.ndim() == 0 ? 0 : a.ndim() - 1;
  if (a.ndim() > 0 && a.shape(last) > 1 && a.stride(last) != 1)
    refuse("bind.strides", fmt::format("{}", a.stride(last)), "the last dimension must be contiguous");
  if (a.ndim() == 2 && b.elements() > 0 && a.shape(0) > 1) {
    // Rows closer than a row apart (a broadcast row, a transposed view) would overlap.
    if (a.stride(0) < b.shape[1])
      refuse("bind.strides", fmt::format("{}", a.stride(0)),
             fmt::format("rows must be at least {} elements apart", b.shape[1]));
    t.row_stride = a.stride(0);
    const std::optional<std::int64_t> span = checked::mul(b.shape[0] - 1, t.row_stride);
    const std::optional<std::int64_t> extent = span ? checked::add(*span, b.shape[1]) : std::nullopt;
    if (!extent)
      refuse("bind.strides", fmt::format("{}", a.stride(0)), "the rows' extent overflows a 64-bit count");
    t.elements = *extent;
  }
  return t;
}

// A session and the caller's tensors it is bound to, kept alive while bound.
class PySession {
public:
  PySession(const Graph& g, const SessionOptions& o) : s_(g, o) {}

  Session& session() { return s_; }

  void bind(const std::string& name, nb::ndarray<> a) {
    const auto it = s_.analysis().buffer_index.find(name);
    if (it == s_.analysis().buffer_index.end())
      throw_buffer_error(name, "name", name, "the graph has no such buffer");
    const ExternalTensor t = external_of(s_.graph().buffers()[it->second], a);
    s_.bind(name, t);
    bound_[name] = std::move(a);
  }

  void unbind(const std::string& name) {
    s_.unbind(name);
    bound_.erase(name);
  }

private:
  std::map<std::string, nb::ndarray<>> bound_; // released after the session (which waits for a run in flight)
  Session s_;
};

// A resident runtime and the caller's tensors of every submission not yet waited for (released by its wait).
class PyResident {
public:
  explicit PyResident(const ResidentOptions& o) : r_(o) {}

  ResidentSession& session() { return r_; }

  ResidentSession::Ticket submit(ResidentSession::Handle h, const nb::dict& tensors, bool block) {
    std::vector<Binding> bindings;
    std::vector<nb::ndarray<>> keep;
    const Graph& g = r_.graph(h);
    for (auto [key, value] : tensors) {
      const std::string name = nb::cast<std::string>(key);
      const auto it =
          std::find_if(g.buffers().begin(), g.buffers().end(), [&](const Buffer& b) { return b.name == name; });
      if (it == g.buffers().end())
        throw_buffer_error(name, "name", name, "the graph has no such buffer");
      nb::ndarray<> a = nb::cast<nb::ndarray<>>(value);
      bindings.push_back({name, external_of(*it, a)});
      keep.push_back(std::move(a));
    }
    std::optional<ResidentSession::Ticket> t;
    {
      nb::gil_scoped_release release;
      t = block ? std::optional(r_.submit(h, bindings)) : r_.try_submit(h, bindings);
    }
    if (!t)
      return kNoTicket;
    held_[*t] = std::move(keep);
    return *t;
  }

  ResidentResult wait(ResidentSession::Ticket t) {
    struct Release { // the tensors go once the run is over, whether it succeeded or not
      PyResident& self;
      ResidentSession::Ticket t;
      ~Release() { self.held_.erase(t); }
    } release{*this, t};
    nb::gil_scoped_release unlocked;
    return r_.wait(t);
  }

  void wait_all() {
    {
      nb::gil_scoped_release unlocked;
      try {
        r_.wait_all();
      } catch (...) {
        nb::gil_scoped_acquire locked;
        held_.clear();
        throw;
      }
    }
    held_.clear();
  }

  void stop() {
    {
      nb::gil_scoped_release unlocked;
      r_.stop();
    }
  }

  static constexpr ResidentSession::Ticket kNoTicket = ~ResidentSession::Ticket{0};

private:
  std::map<ResidentSession::Ticket, std::vector<nb::ndarray<>>> held_;
  ResidentSession r_; // after held_: destroyed (stopped) first, while the tensors are still held
};

SessionOptions& set_backend(SessionOptions& o, const std::string& v) {
  o.backend = parsed<Backend>("backend", v, parse_backend);
  return o;
}

} // namespace

} // namespace gridflow::python

NB_MODULE(_gridflow, m) {
  using namespace gridflow;
  using namespace gridflow::python;
  m.doc() = "gridflow: task graphs of reductions, scans and softmaxes on one persistent cooperative kernel";
  m.attr("__version__") = std::string(version());
  m.def("source_commit", [] { return std::string(source_commit()); });
  m.attr("HOST_MEMORY") = kHostMemory;

  nb::exception<GraphError>(m, "GraphError", PyExc_ValueError);
  nb::exception<RuntimeError> runtime_error(m, "GridflowError", PyExc_RuntimeError);
  nb::exception<DeviceError>(m, "DeviceError", runtime_error);

  // ---- graph --------------------------------------------------------------------------------------------------
  nb::class_<InitUniform>(m, "Uniform")
      .def(nb::init<>())
      .def(
          "__init__",
          [](InitUniform* u, double low, double high, std::uint64_t seed) {
            new (u) InitUniform{low, high, seed};
          },
          "low"_a = -1.0, "high"_a = 1.0, "seed"_a = 1)
      .def_rw("low", &InitUniform::low)
      .def_rw("high", &InitUniform::high)
      .def_rw("seed", &InitUniform::seed);
  nb::class_<InitIota>(m, "Iota")
      .def(
          "__init__",
          [](InitIota* i, double start, double step) {
            new (i) InitIota{start, step};
          },
          "start"_a = 0.0, "step"_a = 1.0)
      .def_rw("start", &InitIota::start)
      .def_rw("step", &InitIota::step);
  nb::class_<InitConstant>(m, "Constant")
      .def(
          "__init__", [](InitConstant* c, double value) { new (c) InitConstant{value}; }, "value"_a)
      .def_rw("value", &InitConstant::value);
  nb::class_<InitFile>(m, "File")
      .def(
          "__init__", [](InitFile* f, std::string path) { new (f) InitFile{std::move(path)}; }, "path"_a)
      .def_rw("path", &InitFile::path);
  nb::class_<ViewSpec>(m, "View")
      .def(
          "__init__",
          [](ViewSpec* v, std::string buffer, std::int64_t offset, std::optional<std::int64_t> length,
             std::optional<std::int64_t> rows, std::optional<std::int64_t> cols) {
            new (v) ViewSpec(std::move(buffer));
            v->offset = offset;
            v->length = length;
            v->rows = rows;
            v->cols = cols;
          },
          "buffer"_a, "offset"_a = 0, "length"_a = nb::none(), "rows"_a = nb::none(), "cols"_a = nb::none())
      .def_ro("buffer", &ViewSpec::buffer)
      .def_ro("offset", &ViewSpec::offset);

  nb::class_<Graph>(m, "Graph")
      .def(nb::init<std::string>(), "name"_a = "graph")
      .def_prop_rw("name", &Graph::name, &Graph::set_name)
      .def("add_buffer", &add_buffer, "name"_a, "dtype"_a = "f32", "shape"_a, "init"_a = nb::none(), "save"_a = "",
           "A buffer: dtype 'f32' or 'i32', shape [n] or [rows, cols]; init None (written by tasks), Uniform, "
           "Iota, Constant, File, or a numpy array of its elements. Returns its name.")
      .def(
          "reduce",
          [](Graph& g, const std::string& name, nb::handle in, nb::handle out, const std::string& fn,
             const std::string& axis, const std::vector<std::string>& after) {
            with_after(g.reduce(name, view_of(in), view_of(out), parsed<ReduceFn>("fn", fn, parse_reduce_fn),
                                parsed<Axis>("axis", axis, parse_axis)),
                       after);
          },
          "name"_a, "input"_a, "output"_a, "fn"_a = "sum", "axis"_a = "all", "after"_a = std::vector<std::string>{})
      .def(
          "scan",
          [](Graph& g, const std::string& name, nb::handle in, nb::handle out, const std::string& fn, bool exclusive,
             const std::string& axis, const std::vector<std::string>& after) {
            with_after(g.scan(name, view_of(in), view_of(out), parsed<ScanFn>("fn", fn, parse_scan_fn), exclusive,
                              parsed<Axis>("axis", axis, parse_axis)),
                       after);
          },
          "name"_a, "input"_a, "output"_a, "fn"_a = "sum", "exclusive"_a = false, "axis"_a = "all",
          "after"_a = std::vector<std::string>{})
      .def(
          "softmax",
          [](Graph& g, const std::string& name, nb::handle in, nb::handle out, bool log,
             const std::vector<std::string>& after) {
            with_after(g.softmax(name, view_of(in), view_of(out), log), after);
          },
          "name"_a, "input"_a, "output"_a, "log"_a = false, "after"_a = std::vector<std::string>{})
      .def(
          "histogram",
          [](Graph& g, const std::string& name, nb::handle keys, nb::handle counts,
             const std::vector<std::string>& after) {
            with_after(g.histogram(name, view_of(keys), view_of(counts)), after);
          },
          "name"_a, "keys"_a, "counts"_a, "after"_a = std::vector<std::string>{})
      .def(
          "scatter",
          [](Graph& g, const std::string& name, nb::handle keys, nb::handle offsets, nb::handle out,
             const std::vector<std::string>& after) {
            with_after(g.scatter(name, view_of(keys), view_of(offsets), view_of(out)), after);
          },
          "name"_a, "keys"_a, "offsets"_a, "output"_a, "after"_a = std::vector<std::string>{})
      .def(
          "select",
          [](Graph& g, const std::string& name, nb::handle in, nb::handle out, nb::handle count, const std::string& cmp,
             double threshold, const std::vector<std::string>& after) {
            with_after(g.select(name, view_of(in), view_of(out), view_of(count),
                                parsed<CmpFn>("cmp", cmp, parse_cmp_fn), threshold),
                       after);
          },
          "name"_a, "input"_a, "output"_a, "count"_a, "cmp"_a = "gt", "threshold"_a = 0.0,
          "after"_a = std::vector<std::string>{})
      .def(
          "map",
          [](Graph& g, const std::string& name, nb::handle in, nb::handle out, const std::string& fn, double scale,
             double shift, std::optional<double> lo, std::optional<double> hi, const std::vector<std::string>& after) {
            Task& t = g.map(name, view_of(in), view_of(out), parsed<MapFn>("fn", fn, parse_map_fn), scale, shift);
            t.lo = lo;
            t.hi = hi;
            with_after(t, after);
          },
          "name"_a, "input"_a, "output"_a, "fn"_a = "identity", "scale"_a = 1.0, "shift"_a = 0.0, "lo"_a = nb::none(),
          "hi"_a = nb::none(), "after"_a = std::vector<std::string>{},
          "y = fn(scale * x + shift) elementwise over f32; fn 'identity', 'relu', 'exp', 'tanh' or 'clamp' (with lo "
          "and hi).")
      .def_prop_ro("buffer_names",
                   [](const Graph& g) {
                     std::vector<std::string> names;
                     for (const Buffer& b : g.buffers())
                       names.push_back(b.name);
                     return names;
                   })
      .def_prop_ro("task_names",
                   [](const Graph& g) {
                     std::vector<std::string> names;
                     for (const Task& t : g.tasks())
                       names.push_back(t.name);
                     return names;
                   })
      .def(
          "validate", [](const Graph& g) { analyze(g); },
          "Raises GraphError naming the task or buffer, field and value.")
      .def("to_json", &graph_to_json, "indent"_a = 2)
      .def(
          "save",
          [](const Graph& g, const std::string& path, int indent) { write_text(path, graph_to_json(g, indent)); },
          "path"_a, "indent"_a = 2, "Writes the graph as JSON (the format load_graph reads).");
  m.def(
      "graph_from_json",
      [](const std::string& text, const std::string& source) { return graph_from_json(text, source); }, "text"_a,
      "source"_a = "<json>");
  m.def(
      "load_graph", [](const std::string& path) { return load_graph(path); }, "path"_a);

  // ---- sessions -----------------------------------------------------------------------------------------------
  nb::class_<SessionOptions>(m, "SessionOptions")
      .def(nb::init<>())
      .def_prop_rw(
          "backend", [](const SessionOptions& o) { return std::string(to_string(o.backend)); },
          [](SessionOptions& o, const std::string& v) { set_backend(o, v); })
      .def_prop_rw(
          "mode", [](const SessionOptions& o) { return std::string(to_string(o.mode)); },
          [](SessionOptions& o, const std::string& v) { o.mode = parsed<SyncMode>("mode", v, parse_sync_mode); })
      .def_prop_rw(
          "schedule", [](const SessionOptions& o) { return std::string(to_string(o.schedule)); },
          [](SessionOptions& o, const std::string& v) { o.schedule = parsed<Schedule>("schedule", v, parse_schedule); })
      .def_rw("workers", &SessionOptions::cpu_workers)
      .def_rw("threads", &SessionOptions::threads_per_block)
      .def_rw("blocks_per_sm", &SessionOptions::blocks_per_sm)
      .def_rw("per_tile_deps", &SessionOptions::per_tile_deps)
      .def_rw("forward", &SessionOptions::forward)
      .def_rw("sinks_last", &SessionOptions::sinks_last)
      .def_rw("graph_order", &SessionOptions::graph_order)
      .def_rw("max_memory", &SessionOptions::max_memory)
      .def_prop_rw(
          "timeout", [](const SessionOptions& o) { return static_cast<double>(o.exec.timeout_ns) * 1e-9; },
          [](SessionOptions& o, double seconds) {
            if (!(seconds > 0.0 && seconds <= 3600.0))
              throw nb::value_error(fmt::format("timeout = {}: seconds in (0, 3600]", seconds).c_str());
            o.exec.timeout_ns = static_cast<std::uint64_t>(seconds * 1e9);
          })
      .def_prop_rw(
          "trace", [](const SessionOptions& o) { return o.exec.trace; },
          [](SessionOptions& o, bool v) { o.exec.trace = v; })
      .def_prop_rw(
          "lean_kernel", [](const SessionOptions& o) { return o.exec.lean_kernel; },
          [](SessionOptions& o, bool v) { o.exec.lean_kernel = v; })
      .def_prop_rw(
          "sentinel_fill", [](const SessionOptions& o) { return std::string(to_string(o.exec.sentinel_fill)); },
          [](SessionOptions& o, const std::string& v) {
            o.exec.sentinel_fill = parsed<SentinelFill>("sentinel_fill", v, parse_sentinel_fill);
          })
      .def_prop_rw(
          "input_dir", [](const SessionOptions& o) { return o.files.input_dir.string(); },
          [](SessionOptions& o, const std::string& v) { o.files.input_dir = v; })
      .def_prop_rw(
          "output_dir", [](const SessionOptions& o) { return o.files.output_dir.string(); },
          [](SessionOptions& o, const std::string& v) { o.files.output_dir = v; })
      .def("describe", [](const SessionOptions& o) { return describe(o); });

  nb::class_<RunResult>(m, "RunResult")
      .def_ro("elapsed_ms", &RunResult::elapsed_ms)
      .def_ro("blocks", &RunResult::blocks)
      .def_ro("lean_kernel", &RunResult::lean_kernel)
      .def_prop_ro("traced", [](const RunResult& r) { return !r.tiles.empty(); });

  nb::class_<CheckReport>(m, "CheckReport")
      .def_ro("passed", &CheckReport::passed)
      .def_ro("max_error", &CheckReport::max_error)
      .def_prop_ro("summary", &CheckReport::summary)
      .def_prop_ro("details", &CheckReport::details)
      .def("__bool__", [](const CheckReport& c) { return c.passed; });

  nb::class_<PySession>(m, "Session")
      .def(nb::init<const Graph&, const SessionOptions&>(), "graph"_a, "options"_a)
      .def("describe", [](PySession& p) { return p.session().describe(); })
      .def(
          "run", [](PySession& p) { return p.session().run(); }, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "check", [](PySession& p) { return p.session().check(); }, nb::call_guard<nb::gil_scoped_release>())
      .def("results",
           [](PySession& p) {
             nb::dict out;
             const Session& s = p.session();
             for (std::size_t b = 0; b < s.results().size(); ++b)
               if (s.results()[b].size() > 0 || s.graph().buffers()[b].elements() == 0)
                 out[s.graph().buffers()[b].name.c_str()] = numpy_of(s.results()[b], s.graph().buffers()[b].shape);
             return out;
           })
      .def("bind", &PySession::bind, "name"_a, "tensor"_a)
      .def("unbind", &PySession::unbind, "name"_a)
      .def(
          "is_bound", [](PySession& p, const std::string& name) { return p.session().is_bound(name); }, "name"_a)
      .def(
          "upload",
          [](PySession& p, const std::string& name, const HostArray& a) {
            p.session().upload(name, tensor_of(a, "upload '" + name + "'"));
          },
          "name"_a, "array"_a)
      .def(
          "download",
          [](PySession& p, const std::string& name) {
            HostTensor t;
            {
              nb::gil_scoped_release release;
              t = p.session().download(name);
            }
            const Graph& g = p.session().graph();
            return numpy_of(std::move(t), g.buffers()[p.session().analysis().buffer_index.at(name)].shape);
          },
          "name"_a)
      .def(
          "run_async",
          [](PySession& p, std::uintptr_t stream) { p.session().run_async(reinterpret_cast<StreamHandle>(stream)); },
          "stream"_a, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "wait", [](PySession& p) { return p.session().wait(); }, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "trace_json",
          [](PySession& p, const RunResult& r, const std::string& title) {
            return chrome_trace_json(p.session().program(), r, title);
          },
          "run"_a, "title"_a = "gridflow")
      .def(
          "analysis_json",
          [](PySession& p, const RunResult& r) {
            return analysis_json(analyze_trace(p.session().program(), r)).dump();
          },
          "run"_a)
      .def_prop_ro("memory_device", [](PySession& p) { return p.session().executor().memory_device(); })
      .def(
          "time_cpp_round_trips",
          [](PySession& p, std::uintptr_t stream, int warmup, int reps) {
            // The same round trip as run_async + wait from Python, looped in C++: what the binding layer adds is
            // the difference of the two in one process, over one session.
            std::vector<double> us;
            for (int i = 0; i < warmup + reps; ++i) {
              const auto t0 = std::chrono::steady_clock::now();
              p.session().run_async(reinterpret_cast<StreamHandle>(stream));
              p.session().wait();
              if (i >= warmup)
                us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
            }
            return us;
          },
          "stream"_a, "warmup"_a, "reps"_a, nb::call_guard<nb::gil_scoped_release>());

  nb::class_<ResidentResult>(m, "ResidentResult")
      .def_ro("ticket", &ResidentResult::ticket)
      .def_ro("submitted_ns", &ResidentResult::submitted_ns)
      .def_ro("published_ns", &ResidentResult::published_ns)
      .def_ro("first_ns", &ResidentResult::first_ns)
      .def_ro("done_ns", &ResidentResult::done_ns)
      .def_ro("seen_ns", &ResidentResult::seen_ns)
      .def_ro("lean_tiles", &ResidentResult::lean_tiles);

  nb::class_<PyResident>(m, "ResidentSession")
      .def(
          "__init__",
          [](PyResident* self, const std::string& backend, std::uint32_t workers, std::uint32_t threads,
             std::uint32_t blocks_per_sm, std::uint32_t depth, double idle_spin_ms) {
            ResidentOptions o;
            o.backend = parsed<Backend>("backend", backend, parse_backend);
            o.cpu_workers = workers;
            o.threads_per_block = threads;
            o.blocks_per_sm = blocks_per_sm;
            o.depth = depth;
            if (!(idle_spin_ms >= 0 && idle_spin_ms <= 60'000))
              throw GraphError(fmt::format("idle_spin_ms = {}: 0 to 60000", idle_spin_ms));
            o.idle.spin_ns = static_cast<std::uint64_t>(idle_spin_ms * 1e6);
            new (self) PyResident(o);
          },
          "backend"_a = "cpu", "workers"_a = 0, "threads"_a = 256, "blocks_per_sm"_a = 0, "depth"_a = 64,
          "idle_spin_ms"_a = 2.0)
      .def(
          "start", [](PyResident& r) { r.session().start(); }, nb::call_guard<nb::gil_scoped_release>())
      .def("stop", &PyResident::stop)
      .def_prop_ro("running", [](PyResident& r) { return r.session().running(); })
      .def("describe", [](PyResident& r) { return r.session().describe(); })
      .def(
          "add",
          [](PyResident& r, const Graph& g, const std::string& mode, const std::string& schedule, double timeout_ms) {
            ResidentProgramOptions po;
            po.mode = parsed<SyncMode>("mode", mode, parse_sync_mode);
            po.schedule = parsed<Schedule>("schedule", schedule, parse_schedule);
            if (!(timeout_ms > 0 && timeout_ms <= 86'400'000.0))
              throw GraphError(fmt::format("timeout_ms = {}: more than 0, at most a day", timeout_ms));
            po.timeout_ns = static_cast<std::uint64_t>(timeout_ms * 1e6);
            nb::gil_scoped_release release;
            return r.session().add(g, po);
          },
          "graph"_a, "mode"_a = "flags", "schedule"_a = "auto", "timeout_ms"_a = 10000.0)
      .def(
          "submit", [](PyResident& r, std::uint32_t h, const nb::dict& t) { return r.submit(h, t, true); }, "handle"_a,
          "tensors"_a = nb::dict())
      .def(
          "try_submit",
          [](PyResident& r, std::uint32_t h, const nb::dict& t) -> std::optional<std::uint64_t> {
            const auto ticket = r.submit(h, t, false);
            if (ticket == PyResident::kNoTicket)
              return std::nullopt;
            return ticket;
          },
          "handle"_a, "tensors"_a = nb::dict())
      .def("wait", &PyResident::wait, "ticket"_a)
      .def("wait_all", &PyResident::wait_all)
      .def(
          "upload",
          [](PyResident& r, std::uint32_t h, const std::string& name, const HostArray& a) {
            r.session().upload(h, name, tensor_of(a, "upload '" + name + "'"));
          },
          "handle"_a, "name"_a, "array"_a)
      .def(
          "download",
          [](PyResident& r, std::uint32_t h, const std::string& name) {
            HostTensor t;
            {
              nb::gil_scoped_release release;
              t = r.session().download(h, name);
            }
            const Graph& g = r.session().graph(h);
            for (const Buffer& b : g.buffers())
              if (b.name == name)
                return numpy_of(std::move(t), b.shape);
            throw_buffer_error(name, "name", name, "the graph has no such buffer");
          },
          "handle"_a, "name"_a);

  m.def(
      "profile_json",
      [](const Graph& g, const SessionOptions& base, int warmup, int repeat, bool baselines) {
        ProfileOptions po;
        po.base = base;
        po.warmup = warmup;
        po.repeat = repeat;
        po.baselines = baselines;
        const ProfileResult r = profile(g, po);
        nlohmann::json doc = profile_json(g.name(), r.device, r.entries);
        doc["table"] = profile_table(r);
        return doc.dump();
      },
      "graph"_a, "options"_a, "warmup"_a = 3, "repeat"_a = 10, "baselines"_a = true,
      nb::call_guard<nb::gil_scoped_release>());
}
