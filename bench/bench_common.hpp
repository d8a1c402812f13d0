// Shared pieces of the benchmarks: statistics, a JSON report, table printing, arguments.
// Method (docs/PERFORMANCE.md): warm-up first, then the median of repetitions timed with CUDA events; latency
// primitives by the difference method (time N and M iterations, report (t_N - t_M) / (N - M)).
#pragma once

#include "runtime/device.hpp"
#include "scheduler/build_info.hpp"
#include "scheduler/session.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gridflow::bench {

struct Stat {
  double median = 0, min = 0, max = 0;
  int n = 0;
};

inline Stat stat_of(std::vector<double> v) {
  Stat s;
  if (v.empty())
    return s;
  std::sort(v.begin(), v.end());
  s.n = static_cast<int>(v.size());
  s.median = s.n % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

// The GPU to measure on; without one (or without the GPU backend) prints why, naming `program`, and returns
// nothing: the benchmark then exits 0 with nothing measured.
inline std::optional<DeviceInfo> gpu_to_measure(const char* program) {
  DeviceInfo gpu = probe_gpu();
  if (gpu.available && gpu_backend_built())
    return gpu;
  std::printf("%s: no GPU (%s): nothing to measure\n", program, gpu.reason.c_str());
  return std::nullopt;
}

// Median milliseconds of `reps` timed runs of a session after 3 warm-up runs (traced when `trace`).
inline double median_run_ms(Session& s, int reps, bool trace = false) {
  std::vector<double> ms;
  for (const RunResult& r : s.time(3, reps, trace))
    ms.push_back(r.elapsed_ms);
  return stat_of(ms).median;
}

struct Args {
  std::string json_path;
  bool quick = false;
  std::string only;      // --only NAME[,NAME...]: run only the sections whose name contains one of the NAMEs
  bool variants = false; // --variants: also time the configurations of config_variants() (where a bench offers it)
  static Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--json") && i + 1 < argc)
        a.json_path = argv[++i];
      else if (!std::strcmp(argv[i], "--quick"))
        a.quick = true;
      else if (!std::strcmp(argv[i], "--only") && i + 1 < argc)
        a.only = argv[++i];
      else if (!std::strcmp(argv[i], "--variants"))
        a.variants = true;
      else {
        std::fprintf(stderr, "usage: %s [--json FILE] [--quick] [--only SECTION] [--variants]\n", argv[0]);
        std::exit(2);
      }
    }
    return a;
  }
  bool runs(const std::string& section) const {
    if (only.empty())
      return true;
    for (std::size_t begin = 0; begin <= only.size();) {
      const std::size_t end = std::min(only.find(',', begin), only.size());
      if (end > begin && section.find(only.substr(begin, end - begin)) != std::string::npos)
        return true;
      begin = end + 1;
    }
    return false;
  }
};

// A gridflow configuration beside the default: a name, what it changes, and whether it keeps the default's bits
// (false where it cuts float reduces or scans into other tiles, which reassociates them: only the float64 check
// applies).
struct Variant {
  const char* name;
  std::function<void(SessionOptions&)> change;
  bool keeps_bits = true;
};

// The configurations the benchmarks time beside the default, one lever or mode changed in each.
inline std::vector<Variant> config_variants() {
  return {
      {"general megakernel", [](SessionOptions& o) { o.exec.lean_kernel = false; }},
      {"no forwarding", [](SessionOptions& o) { o.forward = false; }},
      {"sinks in order", [](SessionOptions& o) { o.sinks_last = false; }},
      {"graph-order lists", [](SessionOptions& o) { o.graph_order = true; }},
      {"no plain tiles", [](SessionOptions& o) { o.exec.plain_tiles = false; }},
      {"no lean partials", [](SessionOptions& o) { o.tiles.lean_partials = false; }, false},
      {"no lean scans", [](SessionOptions& o) { o.tiles.lean_scans = false; }, false},
      {"dynamic schedule", [](SessionOptions& o) { o.schedule = Schedule::dynamic; }},
      {"sentinel", [](SessionOptions& o) { o.mode = SyncMode::sentinel; }},
      {"barrier", [](SessionOptions& o) { o.mode = SyncMode::barrier; }},
      {"grid-sync", [](SessionOptions& o) { o.mode = SyncMode::grid_sync; }},
      {"1 block/SM", [](SessionOptions& o) { o.blocks_per_sm = 1; }},
      {"2 blocks/SM", [](SessionOptions& o) { o.blocks_per_sm = 2; }},
  };
}

// Rows of results, written as {"gridflow": {version, commit}, "benchmark", "date", "gpu", "rows": [...]}.
class Report {
public:
  Report(std::string name, std::string gpu) : name_(std::move(name)), gpu_(std::move(gpu)) {}
  void add(nlohmann::json row) { rows_.push_back(std::move(row)); }
  const nlohmann::json& rows() const { return rows_; }
  void write(const std::string& path) const {
    if (path.empty())
      return;
    char date[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    nlohmann::json doc = {
        {"gridflow", build_info_json()}, {"benchmark", name_}, {"date", date}, {"gpu", gpu_}, {"rows", rows_}};
    std::ofstream(path) << doc.dump(1) << "\n";
  }

private:
  std::string name_, gpu_;
  nlohmann::json rows_ = nlohmann::json::array();
};

} // namespace gridflow::bench
