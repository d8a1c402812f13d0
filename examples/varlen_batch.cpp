// Variable-length batch: sequence lengths -> exclusive scan -> cu_seqlens (each sequence's first token) and a
// reduce -> the total; then a softmax over each sequence's own scores (len x len, packed back to back) and each
// row's sum. The lengths are a seeded uniform init, so the per-sequence views are computed here from the same
// values the graph scans. examples/graphs/varlen_batch.json is this graph (--write-json).
#include "examples/example_main.hpp"
#include "scheduler/buffer_data.hpp"

#include <string>

int main(int argc, char** argv) {
  using namespace gridflow;
  constexpr std::int64_t batch = 24;
  Buffer lengths{"lengths", DType::i32, {batch}, InitUniform{16, 384, 21}, ""};
  const HostTensor values = initial_data(lengths, {});
  const std::span<const std::int32_t> len = values.i32();
  std::int64_t tokens = 0, scores = 0;
  for (const std::int32_t l : len) {
    tokens += l;
    scores += std::int64_t{l} * l;
  }
  Graph g("varlen-batch");
  g.add_buffer(lengths);
  g.add_buffer("cu_seqlens", DType::i32, {batch});
  g.add_buffer("total_tokens", DType::i32, {1});
  g.add_buffer("scores", DType::f32, {scores}, InitUniform{-6, 6, 22});
  g.add_buffer("probs", DType::f32, {scores});
  g.add_buffer("row_sums", DType::f32, {tokens});
  g.scan("cu_seqlens", "lengths", "cu_seqlens", ScanFn::sum, /*exclusive=*/true);
  g.reduce("total_tokens", "lengths", "total_tokens", ReduceFn::sum);
  std::int64_t at = 0, row = 0;
  for (std::int64_t s = 0; s < batch; ++s) {
    const std::int64_t l = len[static_cast<std::size_t>(s)];
    const std::string id = std::to_string(s);
    g.softmax("softmax_" + id, ViewSpec::block("scores", at, l, l), ViewSpec::block("probs", at, l, l));
    g.reduce("row_sums_" + id, ViewSpec::block("probs", at, l, l), ViewSpec::range("row_sums", row, l), ReduceFn::sum,
             Axis::row);
    at += l * l;
    row += l;
  }
  return examples::run_example(g, argc, argv);
}
