// MoE token routing: router logits (tokens x experts) -> each token's expert (row argmax) -> tokens per expert
// (histogram) -> each expert's first slot (exclusive scan) -> token indices grouped by expert, in token order
// (scatter); beside it the gate: softmax of the logits and each token's top probability.
// examples/graphs/moe_routing.json is this graph (--write-json). On the GPU the table adds
// cub::DeviceRadixSort::SortPairs of (expert, token), which computes the same grouping from the expert ids alone.
#include "examples/example_main.hpp"
#include "scheduler/buffer_data.hpp"

#if defined(GRIDFLOW_HAS_CUDA)
#include "bench/cub_baselines.hpp"
#endif

int main(int argc, char** argv) {
  using namespace gridflow;
  constexpr std::int64_t tokens = 65536, experts = 64;
  Graph g("moe-routing");
  g.add_buffer("logits", DType::f32, {tokens, experts}, InitUniform{-4, 4, 11});
  g.add_buffer("expert", DType::i32, {tokens});
  g.add_buffer("gate", DType::f32, {tokens, experts});
  g.add_buffer("top_p", DType::f32, {tokens});
  g.add_buffer("counts", DType::i32, {experts});
  g.add_buffer("offsets", DType::i32, {experts});
  g.add_buffer("order", DType::i32, {tokens});
  g.reduce("route", "logits", "expert", ReduceFn::argmax, Axis::row);
  g.softmax("gate", "logits", "gate");
  g.reduce("top_p", "gate", "top_p", ReduceFn::max, Axis::row);
  g.histogram("count", "expert", "counts");
  g.scan("offsets", "counts", "offsets", ScanFn::sum, /*exclusive=*/true);
  g.scatter("group", "expert", "offsets", "order");

  std::vector<ExternalBaseline> external;
#if defined(GRIDFLOW_HAS_CUDA)
  external.push_back(
      {"cub::DeviceRadixSort (grouping)", [](const std::vector<HostTensor>& initial, int warmup, int reps) {
         // The expert of each token from the initial logits (argmax, first maximum), then the sort.
         const std::span<const float> logits = initial[0].f32();
         std::vector<std::int32_t> expert(tokens);
         for (std::int64_t t = 0; t < tokens; ++t) {
           std::int64_t best = 0;
           for (std::int64_t e = 1; e < experts; ++e)
             if (logits[t * experts + e] > logits[t * experts + best])
               best = e;
           expert[t] = static_cast<std::int32_t>(best);
         }
         return bench::time_cub_sort_pairs(expert, 6, warmup, reps);
       }});
#endif
  return examples::run_example(g, argc, argv, std::move(external));
}
