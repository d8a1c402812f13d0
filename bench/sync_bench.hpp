// The synchronization microbenchmarks as a function, shared by gridflow_bench_sync and `gridflow bench sync`.
#pragma once

#include <nlohmann/json.hpp>

namespace gridflow::bench {

// Runs every microbenchmark, prints the tables, returns the rows (empty without a GPU).
nlohmann::json run_sync_bench(bool quick);

} // namespace gridflow::bench
