#include "tests/common/random_graph.hpp"

#include <fmt/format.h>

#include <random>
#include <vector>

namespace gridflow::testing {
namespace {

struct Candidate {
  std::string name;
  DType dtype;
  std::int64_t rows; // 1 for vectors
  std::int64_t cols;
  bool matrix;
};

} // namespace

Graph random_graph(const RandomGraphOptions& o) {
  std::mt19937_64 rng(o.seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };

  Graph g(fmt::format("random-{}-{}", o.tasks, o.seed));
  std::vector<Candidate> readable;
  auto new_buffer = [&](DType dtype, std::int64_t rows, std::int64_t cols, bool matrix, bool init) {
    const std::string name = fmt::format("b{}", g.buffers().size());
    Init in;
    if (init) {
      if (dtype == DType::f32)
        in = InitUniform{-2.0, 2.0, rng()};
      else
        in = InitUniform{-50.0, 50.0, rng()};
    }
    g.add_buffer(name, dtype, matrix ? std::vector<std::int64_t>{rows, cols} : std::vector<std::int64_t>{rows * cols},
                 in);
    return Candidate{name, dtype, rows, cols, matrix};
  };
  // Inputs of both dtypes and shapes, including edge sizes.
  const std::int64_t edge_sizes[] = {1, 31, 32, 33, 1023, 1025};
  for (int i = 0; i < 6; ++i) {
    const DType dt = i % 3 == 2 ? DType::i32 : DType::f32;
    if (i % 2 == 0)
      readable.push_back(new_buffer(dt, pick(1, o.max_rows), pick(1, o.max_cols), true, true));
    else
      readable.push_back(new_buffer(dt, 1, chance(0.5) ? edge_sizes[pick(0, 5)] : pick(1, o.max_vector), false, true));
  }

  for (std::uint32_t t = 0; t < o.tasks; ++t) {
    // Half the tasks read one of the (large) initial buffers, so tasks keep spanning many tiles.
    const std::int64_t last = chance(0.5) ? 5 : static_cast<std::int64_t>(readable.size()) - 1;
    const Candidate src = readable[static_cast<std::size_t>(pick(0, last))];
    Task task;
    task.name = fmt::format("t{}", t);
    // Input view: whole buffer, or a sub-range / row block of it.
    ViewSpec in(src.name);
    std::int64_t rows = src.rows, cols = src.cols;
    if (src.matrix && src.rows > 1 && chance(0.3)) {
      const std::int64_t r0 = pick(0, src.rows - 1);
      rows = pick(1, src.rows - r0);
      in = ViewSpec::block(src.name, r0 * src.cols, rows, src.cols);
    } else if (!src.matrix && src.cols > 2 && chance(0.3)) {
      const std::int64_t off = pick(0, src.cols - 1);
      cols = pick(1, src.cols - off);
      in = ViewSpec::range(src.name, off, cols);
    }
    const bool matrix_view = src.matrix && rows > 0 && (in.rows.has_value() || !in.length.has_value());
    const std::int64_t n = rows * cols;
    if (o.counting && src.dtype == DType::i32 && chance(0.12)) {
      // The routing chain over these keys: histogram -> exclusive scan -> scatter (placements never collide).
      const std::int64_t bins = pick(1, 64);
      const Candidate counts = new_buffer(DType::i32, 1, bins, false, false);
      const Candidate offsets = new_buffer(DType::i32, 1, bins, false, false);
      const Candidate perm = new_buffer(DType::i32, 1, n, false, false);
      g.histogram(fmt::format("t{}_count", t), in, counts.name);
      g.scan(fmt::format("t{}_offsets", t), counts.name, offsets.name, ScanFn::sum, true);
      g.scatter(fmt::format("t{}", t), in, offsets.name, perm.name);
      readable.push_back(counts); // fully written; perm keeps unplaced slots' contents, so nobody reads it
      continue;
    }
    if (o.counting && chance(0.06)) {
      // Compaction; its output is partly untouched, so later tasks read only the count.
      const Candidate kept = new_buffer(src.dtype, 1, n, false, false);
      const Candidate count = new_buffer(DType::i32, 1, 1, false, false);
      const double threshold =
          src.dtype == DType::f32 ? static_cast<double>(pick(-100, 100)) / 100.0 : static_cast<double>(pick(-20, 20));
      g.select(fmt::format("t{}", t), in, kept.name, count.name, static_cast<CmpFn>(pick(0, 5)), threshold);
      readable.push_back(count);
      continue;
    }
    int op = static_cast<int>(pick(0, 2));
    if (src.dtype == DType::i32 && op == 2)
      op = static_cast<int>(pick(0, 1)); // softmax needs f32
    task.op = static_cast<OpKind>(op);
    task.axis = matrix_view && chance(0.6) ? Axis::row : Axis::all;
    if (task.op == OpKind::softmax)
      task.axis = Axis::row;
    Candidate dst;
    if (task.op == OpKind::reduce) {
      task.reduce_fn = static_cast<ReduceFn>(pick(0, 3));
      const DType out_dt = task.reduce_fn == ReduceFn::argmax ? DType::i32 : src.dtype;
      const std::int64_t out_n = task.axis == Axis::all ? 1 : (matrix_view ? rows : 1);
      dst = new_buffer(out_dt, 1, out_n, false, false);
    } else {
      if (task.op == OpKind::scan) {
        task.scan_fn = static_cast<ScanFn>(pick(0, 1));
        task.exclusive = chance(0.5);
      } else {
        task.log = chance(0.3);
      }
      const bool in_place = o.hazards && chance(0.1) && src.name != readable.front().name;
      if (in_place) {
        task.in = in;
        task.out = in;
        g.add_task(task);
        continue;
      }
      // Overwrite an earlier buffer of the same size and dtype (WAR / WAW), or make a fresh one.
      bool reused = false;
      if (o.hazards && chance(0.15))
        for (const Candidate& c : readable)
          if (c.dtype == src.dtype && c.rows * c.cols == n && c.name != src.name && c.name != readable.front().name) {
            dst = c;
            reused = true;
            break;
          }
      if (!reused)
        dst = new_buffer(src.dtype, matrix_view ? rows : 1, matrix_view ? cols : n, matrix_view, false);
      if (reused) {
        task.in = in;
        task.out = ViewSpec(dst.name);
        if (matrix_view && !dst.matrix)
          task.out = ViewSpec::range(dst.name, 0, n);
        g.add_task(task);
        continue;
      }
    }
    task.in = in;
    task.out = ViewSpec(dst.name);
    if (o.explicit_after && t > 0 && chance(0.05))
      task.after.push_back(fmt::format("t{}", pick(0, t - 1)));
    g.add_task(task);
    readable.push_back(dst);
  }
  return g;
}

} // namespace gridflow::testing
