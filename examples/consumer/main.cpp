// A program of someone else's that uses gridflow as a library: builds a graph (a row softmax, the rows' maxima,
// their sum), runs it on the CPU backend, and checks it against the float64 references. Exit 0 when it passed.
#include <gridflow/runtime/version.hpp>
#include <gridflow/scheduler/session.hpp>

#include <cstdio>

int main() {
  gridflow::Graph g("consumer");
  g.add_buffer("x", gridflow::DType::f32, {64, 1000}, gridflow::InitUniform{-4, 4, 11});
  g.add_buffer("y", gridflow::DType::f32, {64, 1000});
  g.add_buffer("m", gridflow::DType::f32, {64});
  g.add_buffer("s", gridflow::DType::f32, {1});
  g.softmax("softmax", "x", "y");
  g.reduce("row_max", "y", "m", gridflow::ReduceFn::max, gridflow::Axis::row);
  g.reduce("sum", "m", "s", gridflow::ReduceFn::sum);
  gridflow::Session session(g, {}); // the CPU backend
  session.run();
  const gridflow::CheckReport check = session.check();
  std::printf("gridflow %s (commit %s): %s\n", gridflow::version(), gridflow::source_commit(), check.summary().c_str());
  return check.passed ? 0 : 1;
}
