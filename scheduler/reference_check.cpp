#include "scheduler/reference_check.hpp"

#include "kernels/counting.hpp"
#include "kernels/reference.hpp"
#include "scheduler/op_kinds.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <unordered_map>

namespace gridflow {
namespace {

// Acceptable argmax indices per output element, where reference values tie within the propagated error.
using Alternatives = std::unordered_map<std::int64_t, std::vector<std::int32_t>>;

// Reference state of one buffer: values rounded to the dtype, error scales (empty: all exact), which elements
// some task wrote, argmax alternatives, and which i32 elements were computed from an argmax near-tie (their value
// depends on which tied index the executor picked, so they cannot be checked).
struct RefBuffer {
  HostTensor data;
  std::vector<double> scale;
  std::vector<std::uint8_t> written;
  std::vector<std::uint8_t> undecidable;
  Alternatives alternatives;

  bool is_undecidable(std::int64_t i) const { return !undecidable.empty() && undecidable[static_cast<std::size_t>(i)]; }
  void mark_undecidable(std::int64_t i) {
    if (undecidable.empty())
      undecidable.assign(static_cast<std::size_t>(data.size()), 0);
    undecidable[static_cast<std::size_t>(i)] = 1;
  }

  double scale_at(std::int64_t i) const { return scale.empty() ? 0.0 : scale[static_cast<std::size_t>(i)]; }
  void set(std::int64_t i, double value, double s) {
    // A non-finite scale only comes with a non-finite value (inf arithmetic is exact): compare exactly.
    if (!std::isfinite(s))
      s = 0.0;
    const auto k = static_cast<std::size_t>(i);
    if (data.dtype() == DType::i32)
      data.i32()[k] = static_cast<std::int32_t>(value);
    else
      data.f32()[k] = static_cast<float>(value);
    if (s > 0.0 && scale.empty())
      scale.assign(static_cast<std::size_t>(data.size()), 0.0);
    if (!scale.empty())
      scale[k] = s;
    if (written.empty())
      written.assign(static_cast<std::size_t>(data.size()), 0);
    written[k] = 1;
    // (Guarded: per-task checks call set() from several threads, and then no buffer has alternatives.)
    if (!alternatives.empty())
      alternatives.erase(i);
    if (!undecidable.empty())
      undecidable[k] = 0;
  }
};

// The input view's values (as T) and their error scales.
template <class T> struct Inputs {
  std::vector<T> x;
  std::vector<double> s;
  std::vector<std::uint8_t> undecidable; // empty: none
  bool any_undecidable(std::int64_t first, std::int64_t count) const {
    if (undecidable.empty())
      return false;
    for (std::int64_t i = first; i < first + count; ++i)
      if (undecidable[static_cast<std::size_t>(i)])
        return true;
    return false;
  }
};

// Where a task's inputs come from: values and (optionally) their error scales and undecidable marks.
struct Source {
  const HostTensor& data;
  const std::vector<double>& scale;             // empty: exact
  const std::vector<std::uint8_t>& undecidable; // empty: none
};

template <class T> Inputs<T> gather(const Source& src, const ResolvedView& v) {
  Inputs<T> in;
  in.x.resize(static_cast<std::size_t>(v.elements()));
  in.s.assign(in.x.size(), 0.0);
  if (!in.x.empty())
    std::memcpy(in.x.data(), static_cast<const std::uint32_t*>(src.data.data()) + v.offset, in.x.size() * 4);
  if (!src.scale.empty())
    for (std::size_t i = 0; i < in.s.size(); ++i)
      in.s[i] = src.scale[static_cast<std::size_t>(v.offset) + i];
  if (!src.undecidable.empty())
    in.undecidable.assign(src.undecidable.begin() + v.offset, src.undecidable.begin() + v.offset + v.elements());
  // Infinite inputs (the identity of an exclusive max scan, say) are exact and carry no error budget.
  for (std::size_t i = 0; i < in.x.size(); ++i)
    if (!std::isfinite(static_cast<double>(in.x[i])))
      in.s[i] = 0.0;
  return in;
}

template <class T>
void apply_reduce(const Task& t, const ResolvedView& iv, const ResolvedView& ov, Inputs<T>& in, RefBuffer& out) {
  const std::int64_t rows = t.axis == Axis::all ? 1 : iv.rows;
  const std::int64_t cols = t.axis == Axis::all ? iv.elements() : iv.cols;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<const T> x(in.x.data() + r * cols, static_cast<std::size_t>(cols));
    const std::span<const double> s(in.s.data() + r * cols, static_cast<std::size_t>(cols));
    ref::Expected e = ref::reduce(t.reduce_fn, x);
    const double max_s = s.empty() ? 0.0 : *std::max_element(s.begin(), s.end());
    double sum_s = 0.0;
    for (double v : s)
      sum_s += v;
    if (t.reduce_fn == ReduceFn::sum)
      e.scale += sum_s;
    else if (t.reduce_fn != ReduceFn::argmax)
      e.scale = max_s;
    const std::int64_t o = ov.offset + r;
    out.set(o, e.value, std::is_same_v<T, float> ? e.scale : 0.0);
    if (in.any_undecidable(r * cols, cols))
      out.mark_undecidable(o);
    if (t.reduce_fn == ReduceFn::argmax && max_s > 0.0 && e.value >= 0) {
      const double best = static_cast<double>(x[static_cast<std::size_t>(e.value)]);
      const double slack = 2.0 * kCheckTolerance * max_s;
      std::vector<std::int32_t> ok;
      for (std::size_t j = 0; j < x.size(); ++j)
        if (static_cast<double>(x[j]) >= best - slack)
          ok.push_back(static_cast<std::int32_t>(j));
      if (ok.size() > 1) {
        out.alternatives[o] = std::move(ok);
        out.mark_undecidable(o); // downstream values depend on the executor's pick
      }
    }
  }
}

template <class T>
void apply_scan(const Task& t, const ResolvedView& iv, const ResolvedView& ov, Inputs<T>& in, RefBuffer& out) {
  const std::int64_t rows = t.axis == Axis::all ? 1 : iv.rows;
  const std::int64_t cols = t.axis == Axis::all ? iv.elements() : iv.cols;
  std::vector<ref::Expected> e(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::span<const T> x(in.x.data() + r * cols, static_cast<std::size_t>(cols));
    ref::scan(t.scan_fn, t.exclusive, x, e);
    double acc = 0.0;
    for (std::int64_t j = 0; j < cols; ++j) {
      const double sj = in.s[static_cast<std::size_t>(r * cols + j)];
      if (!t.exclusive)
        acc = t.scan_fn == ScanFn::sum ? acc + sj : std::max(acc, sj);
      const double scale = e[static_cast<std::size_t>(j)].scale + acc;
      if (t.exclusive)
        acc = t.scan_fn == ScanFn::sum ? acc + sj : std::max(acc, sj);
      out.set(ov.offset + r * cols + j, e[static_cast<std::size_t>(j)].value, std::is_same_v<T, float> ? scale : 0.0);
    }
    if (in.any_undecidable(r * cols, cols))
      for (std::int64_t j = 0; j < cols; ++j)
        out.mark_undecidable(ov.offset + r * cols + j);
  }
}

void apply_softmax(const Task& t, const ResolvedView& iv, const ResolvedView& ov, Inputs<float>& in, RefBuffer& out) {
  std::vector<ref::Expected> e(static_cast<std::size_t>(iv.cols));
  for (std::int64_t r = 0; r < iv.rows; ++r) {
    const std::span<const float> x(in.x.data() + r * iv.cols, static_cast<std::size_t>(iv.cols));
    ref::softmax(x, t.log, e);
    double max_s = 0.0;
    for (std::int64_t j = 0; j < iv.cols; ++j)
      max_s = std::max(max_s, in.s[static_cast<std::size_t>(r * iv.cols + j)]);
    for (std::int64_t j = 0; j < iv.cols; ++j) {
      const ref::Expected& ej = e[static_cast<std::size_t>(j)];
      // A perturbation d of the inputs moves y by about y * 2 * max|d| (log-softmax: 2 * max|d|).
      const double propagated = 2.0 * max_s * (t.log ? 1.0 : std::fabs(ej.value));
      out.set(ov.offset + r * iv.cols + j, ej.value, ej.scale + propagated);
    }
  }
}

// map: element by element, the input's error carried through the function's slope.
void apply_map(const Task& t, const ResolvedView& ov, Inputs<float>& in, RefBuffer& out) {
  const auto f = [](std::optional<double> v) { return static_cast<float>(v.value_or(0.0)); };
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    const ref::MapExpected m =
        ref::map(t.map_fn, in.x[i], static_cast<float>(t.scale), static_cast<float>(t.shift), f(t.lo), f(t.hi));
    const std::int64_t o = ov.offset + static_cast<std::int64_t>(i);
    out.set(o, m.e.value, m.e.scale + m.slope * in.s[i]);
    if (!in.undecidable.empty() && in.undecidable[i])
      out.mark_undecidable(o);
  }
}

// The counting ops (exact). An undecidable input element, or (select) a computed input within its error of the
// threshold, leaves the task's whole output view (and select's count) undecidable: which elements land where, and
// how many, could go either way, so even slots the reference leaves untouched may be written by an executor (GPU
// random DAG n2000/seed6: an argmax near-tie upstream moved a scatter placement to such a slot).
template <class T>
void apply_counting(const Task& t, const ResolvedView& ov, const ResolvedView& av, Inputs<T>& in,
                    const Inputs<std::int32_t>* offsets, RefBuffer& out, RefBuffer* count) {
  bool undecidable = in.any_undecidable(0, static_cast<std::int64_t>(in.x.size())) ||
                     (offsets && offsets->any_undecidable(0, static_cast<std::int64_t>(offsets->x.size())));
  if constexpr (std::is_same_v<T, std::int32_t>) {
    if (t.op == OpKind::histogram) {
      std::vector<std::int32_t> counts(static_cast<std::size_t>(ov.elements()));
      ref::histogram(in.x, counts);
      for (std::int64_t b = 0; b < ov.elements(); ++b)
        out.set(ov.offset + b, counts[static_cast<std::size_t>(b)], 0.0);
    } else if (t.op == OpKind::scatter) {
      ref::scatter(in.x, offsets->x, ov.elements(),
                   [&](std::int64_t pos, std::int64_t i) { out.set(ov.offset + pos, static_cast<double>(i), 0.0); });
    }
  }
  if (t.op == OpKind::select) {
    const T threshold = static_cast<T>(t.threshold);
    for (std::size_t i = 0; i < in.x.size() && !undecidable; ++i)
      undecidable = in.s[i] > 0.0 && std::fabs(static_cast<double>(in.x[i]) - t.threshold) <= kCheckTolerance * in.s[i];
    std::vector<T> kept(in.x.size());
    const std::int64_t n = ref::select(t.cmp, std::span<const T>(in.x), threshold, std::span<T>(kept));
    // Kept values are copies: each carries the error scale of the input element it copies.
    std::int64_t slot = 0;
    for (std::size_t i = 0; i < in.x.size() && slot < n; ++i)
      if (kernels::select_keep(t.cmp, in.x[i], threshold)) {
        out.set(ov.offset + slot, static_cast<double>(kept[static_cast<std::size_t>(slot)]), in.s[i]);
        ++slot;
      }
    count->set(av.offset, static_cast<double>(n), 0.0);
  }
  if (!undecidable)
    return;
  for (std::int64_t j = 0; j < ov.elements(); ++j)
    out.mark_undecidable(ov.offset + j);
  if (count)
    count->mark_undecidable(av.offset);
}

// Applies task `t` reading `src` (view iv) and writing `dst` (view ov); src may alias dst (inputs are copied
// before anything is written). Counting ops also get their aux view: offsets read from `aux_src`, or the count
// written to `aux_dst`.
void apply_task(const Task& t, const ResolvedView& iv, const ResolvedView& ov, const Source& src, RefBuffer& dst,
                const std::optional<ResolvedView>& av = {}, const Source* aux_src = nullptr,
                RefBuffer* aux_dst = nullptr) {
  if (kind_traits(t.op).counting) {
    std::optional<Inputs<std::int32_t>> offsets;
    if (aux_src)
      offsets = gather<std::int32_t>(*aux_src, *av);
    const ResolvedView none;
    if (src.data.dtype() == DType::f32) {
      Inputs<float> in = gather<float>(src, iv);
      apply_counting(t, ov, av ? *av : none, in, offsets ? &*offsets : nullptr, dst, aux_dst);
    } else {
      Inputs<std::int32_t> in = gather<std::int32_t>(src, iv);
      apply_counting(t, ov, av ? *av : none, in, offsets ? &*offsets : nullptr, dst, aux_dst);
    }
    return;
  }
  // The reference's dispatch (softmax and map are f32 only: validation refuses them on i32).
  auto run = [&](auto& in) {
    switch (t.op) {
    case OpKind::reduce:
      apply_reduce(t, iv, ov, in, dst);
      break;
    case OpKind::scan:
      apply_scan(t, iv, ov, in, dst);
      break;
    case OpKind::softmax:
      if constexpr (std::is_same_v<std::decay_t<decltype(in)>, Inputs<float>>)
        apply_softmax(t, iv, ov, in, dst);
      break;
    case OpKind::map:
      if constexpr (std::is_same_v<std::decay_t<decltype(in)>, Inputs<float>>)
        apply_map(t, ov, in, dst);
      break;
    default:
      break; // the counting ops: above
    }
  };
  if (src.data.dtype() == DType::f32) {
    Inputs<float> in = gather<float>(src, iv);
    run(in);
  } else {
    Inputs<std::int32_t> in = gather<std::int32_t>(src, iv);
    run(in);
  }
}

std::vector<RefBuffer> run_reference(const Graph& g, const Analysis& a, const std::vector<HostTensor>& initial) {
  std::vector<RefBuffer> state(initial.size());
  for (std::size_t b = 0; b < initial.size(); ++b)
    state[b].data = initial[b];
  for (std::uint32_t ti : a.order) {
    const Task& t = g.tasks()[ti];
    const RefBuffer& in = state[a.in[ti].buffer];
    std::optional<Source> aux_src;
    if (reads_aux(t.op)) {
      const RefBuffer& aux = state[a.aux[ti]->buffer];
      aux_src.emplace(Source{aux.data, aux.scale, aux.undecidable});
    }
    apply_task(t, a.in[ti], a.out[ti], Source{in.data, in.scale, in.undecidable}, state[a.out[ti].buffer], a.aux[ti],
               aux_src ? &*aux_src : nullptr, writes_aux(t.op) ? &state[a.aux[ti]->buffer] : nullptr);
  }
  return state;
}

bool per_task_checkable(const Graph& g, const Analysis& a) {
  for (std::size_t i = 0; i < g.tasks().size(); ++i) {
    const ResolvedView& in = a.in[i];
    const ResolvedView& out = a.out[i];
    if (in.buffer == out.buffer && in.offset < out.end() && out.offset < in.end())
      return false;
    if (writes_aux(g.tasks()[i].op))
      return false; // a second output: check from the initial data
    for (const Dependency& d : a.deps[i])
      if (d.hazards & (kHazardWar | kHazardWaw))
        return false;
  }
  return true;
}

// Compares element i of `out` with the reference; updates the buffer's record.
void compare(BufferCheck& bc, const HostTensor& out, const RefBuffer& expect, std::int64_t i, CheckReport& report) {
  if (expect.is_undecidable(i) && !expect.alternatives.count(i)) {
    ++bc.undecidable;
    return;
  }
  ++bc.checked;
  const double got = out.value(i);
  const double want = expect.data.value(i);
  const double scale = expect.scale_at(i);
  double err;
  if (out.dtype() == DType::f32)
    err = ref::scaled_error(got, {want, scale});
  else
    err = got == want ? 0.0 : std::numeric_limits<double>::infinity();
  if (err > 0.0 && out.dtype() == DType::i32) {
    auto it = expect.alternatives.find(i);
    if (it != expect.alternatives.end() &&
        std::find(it->second.begin(), it->second.end(), static_cast<std::int32_t>(got)) != it->second.end())
      err = 0.0;
  }
  const bool bad = !(err <= kCheckTolerance);
  auto record = [&] {
    bc.worst_index = i;
    bc.worst_out = got;
    bc.worst_expected = want;
  };
  if (bad) {
    if (bc.mismatches++ == 0)
      record(); // keep the first mismatch
    report.passed = false;
  } else if (bc.mismatches == 0 && (bc.worst_index < 0 || err > bc.max_error)) {
    record(); // otherwise the largest error
  }
  if (std::isfinite(err))
    bc.max_error = std::max(bc.max_error, err);
}

void compare_untouched(BufferCheck& bc, const HostTensor& out, const HostTensor& initial, std::int64_t i,
                       CheckReport& report) {
  ++bc.checked;
  if (out.bits()[static_cast<std::size_t>(i)] != initial.bits()[static_cast<std::size_t>(i)]) {
    if (bc.mismatches++ == 0) {
      bc.worst_index = i;
      bc.worst_out = out.value(i);
      bc.worst_expected = initial.value(i);
    }
    report.passed = false;
  }
}

// Runs fn(i) for i in [0, n) on every hardware thread (fn must be safe to run concurrently for distinct i).
template <class F> void parallel_for(std::size_t n, F fn) {
  const std::size_t workers = std::min<std::size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++)
      fn(i);
  };
  std::vector<std::jthread> pool;
  for (std::size_t w = 1; w < workers; ++w)
    pool.emplace_back(work);
  work();
}

} // namespace

std::vector<HostTensor> reference_outputs(const Graph& g, const Analysis& a, const std::vector<HostTensor>& initial) {
  std::vector<RefBuffer> state = run_reference(g, a, initial);
  std::vector<HostTensor> out;
  for (RefBuffer& b : state)
    out.push_back(std::move(b.data));
  return out;
}

CheckReport check_outputs(const Graph& g, const Analysis& a, const std::vector<HostTensor>& initial,
                          const std::vector<HostTensor>& final) {
  CheckReport report;
  report.per_task = per_task_checkable(g, a);
  std::vector<RefBuffer> expect;
  if (report.per_task) {
    // The reference of each task over the executor's own inputs (which no later task overwrote). Tasks write
    // disjoint ranges (no WAW here), so they run in parallel once every output's arrays exist.
    expect.resize(final.size());
    for (std::size_t b = 0; b < final.size(); ++b)
      expect[b].data = final[b];
    for (std::size_t t = 0; t < g.tasks().size(); ++t) {
      RefBuffer& out = expect[a.out[t].buffer];
      if (out.written.empty()) {
        out.written.assign(static_cast<std::size_t>(out.data.size()), 0);
        if (out.data.dtype() == DType::f32)
          out.scale.assign(static_cast<std::size_t>(out.data.size()), 0.0);
      }
    }
    const std::vector<double> exact;
    const std::vector<std::uint8_t> decided;
    parallel_for(a.order.size(), [&](std::size_t k) {
      const std::uint32_t ti = a.order[k];
      std::optional<Source> aux_src;
      if (reads_aux(g.tasks()[ti].op))
        aux_src.emplace(Source{final[a.aux[ti]->buffer], exact, decided});
      apply_task(g.tasks()[ti], a.in[ti], a.out[ti], Source{final[a.in[ti].buffer], exact, decided},
                 expect[a.out[ti].buffer], a.aux[ti], aux_src ? &*aux_src : nullptr);
    });
  } else {
    expect = run_reference(g, a, initial);
  }
  // Buffers compare independently; each gets its own report, merged in order.
  std::vector<BufferCheck> checks(final.size());
  std::vector<CheckReport> partial(final.size());
  parallel_for(final.size(), [&](std::size_t b) {
    BufferCheck& bc = checks[b];
    bc.buffer = g.buffers()[b].name;
    bc.written = !expect[b].written.empty();
    for (std::int64_t i = 0; i < final[b].size(); ++i) {
      // An undecidable element the reference left untouched may still have been written by the executor.
      if (bc.written && (expect[b].written[static_cast<std::size_t>(i)] || expect[b].is_undecidable(i)))
        compare(bc, final[b], expect[b], i, partial[b]);
      else
        compare_untouched(bc, final[b], initial[b], i, partial[b]);
    }
  });
  for (std::size_t b = 0; b < final.size(); ++b) {
    report.passed = report.passed && partial[b].passed;
    report.max_error = std::max(report.max_error, checks[b].max_error);
    report.buffers.push_back(std::move(checks[b]));
  }
  return report;
}

std::string CheckReport::summary() const {
  std::size_t bad = 0;
  std::int64_t checked = 0, undecidable = 0;
  for (const BufferCheck& b : buffers) {
    bad += b.mismatches > 0;
    checked += b.checked;
    undecidable += b.undecidable;
  }
  return fmt::format("check {}: max relative error {:.3g} (tolerance {:.0e}; {}; {} elements in {} buffers{}{})",
                     passed ? "passed" : "FAILED", max_error, kCheckTolerance,
                     per_task ? "each task against its own inputs" : "whole graph from the initial data", checked,
                     buffers.size(), bad ? fmt::format(", {} with mismatches", bad) : "",
                     undecidable ? fmt::format(", {} undecidable after argmax near-ties", undecidable) : "");
}

std::string CheckReport::details() const {
  std::string s;
  for (const BufferCheck& b : buffers)
    if (b.mismatches > 0)
      s += fmt::format("  buffer '{}': {} of {} elements wrong; first at [{}]: got {} expected {}{}\n", b.buffer,
                       b.mismatches, b.checked, b.worst_index, b.worst_out, b.worst_expected,
                       b.written ? "" : " (no task writes this buffer)");
  return s;
}

} // namespace gridflow
