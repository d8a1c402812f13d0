// The attention-rows pipeline from C++: softmax over a scores matrix, then row max and row sum statistics, then a
// global reduce of the row maxima. examples/graphs/attention_rows.json is this graph (--write-json).
#include "examples/example_main.hpp"

int main(int argc, char** argv) {
  using namespace gridflow;
  Graph g("attention-rows");
  g.add_buffer("scores", DType::f32, {256, 1024}, InitUniform{-4, 4, 7});
  g.add_buffer("probs", DType::f32, {256, 1024});
  g.add_buffer("row_max", DType::f32, {256});
  g.add_buffer("row_sum", DType::f32, {256});
  g.add_buffer("total", DType::f32, {1});
  g.softmax("softmax", "scores", "probs");
  g.reduce("row_max", "probs", "row_max", ReduceFn::max, Axis::row);
  g.reduce("row_sum", "probs", "row_sum", ReduceFn::sum, Axis::row);
  g.reduce("total", "row_max", "total", ReduceFn::sum);
  return examples::run_example(g, argc, argv);
}
