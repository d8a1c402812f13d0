// Stream compaction: keep the elements of x that are > 0.5, in order, and their count (one select task: per-tile
// counts, exclusive positions by the deterministic look-back, as cub::DeviceSelect does). 10^8 floats by default;
// `--n N` picks the size (examples/graphs/compaction_1m.json is `--n 1000000 --write-json`). On the GPU the
// table adds cub::DeviceSelect::If on the same data.
#include "examples/example_main.hpp"

#if defined(GRIDFLOW_HAS_CUDA)
#include "bench/cub_baselines.hpp"
#endif

#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  using namespace gridflow;
  std::int64_t n = 100'000'000;
  if (argc >= 3 && std::string(argv[1]) == "--n") {
    n = std::atoll(argv[2]);
    argv[2] = argv[0];
    argv += 2;
    argc -= 2;
  }
  constexpr double threshold = 0.5;
  Graph g(n == 100'000'000 ? "compaction-1e8" : "compaction-" + std::to_string(n));
  g.add_buffer("x", DType::f32, {n}, InitUniform{-1, 1, 31});
  g.add_buffer("kept", DType::f32, {n});
  g.add_buffer("count", DType::i32, {1});
  g.select("compact", "x", "kept", "count", CmpFn::gt, threshold);

  std::vector<ExternalBaseline> external;
#if defined(GRIDFLOW_HAS_CUDA)
  external.push_back({"cub::DeviceSelect::If", [](const std::vector<HostTensor>& initial, int warmup, int reps) {
                        return bench::time_cub_select_gt(initial[0].f32(), static_cast<float>(threshold), warmup, reps);
                      }});
#endif
  return examples::run_example(g, argc, argv, std::move(external));
}
