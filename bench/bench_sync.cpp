// gridflow_bench_sync: the synchronization microbenchmarks (bench/sync_bench.cpp) as a program.
#include "bench/bench_common.hpp"
#include "bench/sync_bench.hpp"
#include "runtime/device.hpp"

int main(int argc, char** argv) {
  const auto args = gridflow::bench::Args::parse(argc, argv);
  gridflow::bench::Report report("sync", gridflow::probe_gpu().describe());
  for (auto& row : gridflow::bench::run_sync_bench(args.quick))
    report.add(row);
  report.write(args.json_path);
  return 0;
}
