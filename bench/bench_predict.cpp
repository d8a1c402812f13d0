// gridflow_bench_predict: the run-time predictor against measured runs. Calibrates on the calibration graphs (or
// reads --calibration FILE), then predicts and measures every sync mode and schedule of every example graph, every
// bench graph of at most 2^27 elements and random DAGs (none of them a calibration shape), and prints each
// configuration's error with the median and 90th percentile of the absolute errors, overall and per graph.
// With --measured RESULTS (the JSON an earlier run wrote) it measures nothing and needs no GPU: it predicts again, for
// the GPU the calibration names, against the measurements recorded there (how a change to the model is checked).
#include "bench/bench_common.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/predict.hpp"
#include "scheduler/report.hpp"
#include "tests/common/random_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

using namespace gridflow;

namespace {

std::pair<double, double> median_p90(std::vector<double> v) {
  if (v.empty())
    return {0, 0};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 9 / 10)]};
}

std::vector<std::pair<Graph, std::filesystem::path>> graphs_to_predict() {
  std::vector<std::pair<Graph, std::filesystem::path>> out;
  const std::filesystem::path root = GRIDFLOW_SOURCE_DIR;
  for (const char* folder : {"examples/graphs", "bench/graphs"}) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(root / folder))
      if (e.path().extension() == ".json")
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      Graph g = load_graph(f);
      std::int64_t elements = 0;
      for (const Buffer& b : g.buffers())
        elements = std::max(elements, b.elements());
      if (elements <= (std::int64_t{1} << 27))
        out.emplace_back(std::move(g), f);
    }
  }
  for (std::uint64_t seed : {1, 2, 3, 4}) {
    testing::RandomGraphOptions o;
    o.seed = seed;
    o.tasks = seed % 2 ? 40 : 120;
    o.max_rows = 256;
    o.max_cols = 2048;
    o.max_vector = 1 << 20;
    Graph g = testing::random_graph(o);
    g.set_name(fmt::format("random-{}x{}", o.tasks, seed));
    out.emplace_back(std::move(g), root / "bench");
  }
  return out;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

// (graph, configuration) -> measured ms, from the rows of a predict results file.
std::map<std::pair<std::string, std::string>, double> recorded_measurements(const nlohmann::json& results) {
  std::map<std::pair<std::string, std::string>, double> out;
  for (const nlohmann::json& row : results.at("rows"))
    if (row.contains("graph") && row.contains("measured_ms"))
      out[{row.at("graph").get<std::string>(), row.at("configuration").get<std::string>()}] =
          row.at("measured_ms").get<double>();
  return out;
}

} // namespace

int run(int argc, char** argv) {
  std::string calibration_file, measured_file;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--calibration" && i + 1 < argc)
      calibration_file = argv[++i];
    else if (std::string(argv[i]) == "--measured" && i + 1 < argc)
      measured_file = argv[++i];
    else
      rest.push_back(argv[i]);
  }
  const bench::Args args = bench::Args::parse(static_cast<int>(rest.size()), rest.data());
  const bool offline = !measured_file.empty();
  std::map<std::pair<std::string, std::string>, double> recorded;
  std::string device;
  if (offline) {
    if (calibration_file.empty()) {
      fmt::print(stderr, "gridflow_bench_predict: --measured needs --calibration (the run's calibration file)\n");
      return 2;
    }
    const nlohmann::json results = read_json(measured_file);
    recorded = recorded_measurements(results);
    device = results.value("gpu", std::string("recorded"));
  } else {
    const std::optional<DeviceInfo> gpu = bench::gpu_to_measure("gridflow_bench_predict");
    if (!gpu)
      return 0;
    device = gpu->describe();
  }
  SessionOptions base;
  base.backend = Backend::gpu;
  Calibration c;
  if (calibration_file.empty()) {
    c = calibrate(base, args.quick ? 3 : 5, [](const std::string& name) { fmt::print("calibrated on {}\n", name); });
    write_text("calibration.json", calibration_json(c).dump(1) + "\n");
  } else {
    c = calibration_from_json(read_json(calibration_file));
  }
  if (offline && !c.samples.bodies.empty()) { // the costs as this build's fit makes them from the recorded samples
    const GpuShape gpu = c.gpu;
    c = fit(c.samples, c.l2_bytes);
    c.gpu = gpu;
  }
  if (offline && c.gpu.sm_count == 0) {
    fmt::print(stderr,
               "gridflow_bench_predict: {} does not name its GPU (\"gpu\"), so nothing can be lowered for it "
               "here\n",
               calibration_file);
    return 2;
  }
  bench::Report report("predict", device);
  std::vector<double> all;
  fmt::print("{:<26} {:<28} {:>12} {:>12} {:>8} {:>7}\n", "graph", "configuration", "predicted ms", "measured ms",
             "error", "sync %");
  for (const auto& [g, file] : graphs_to_predict()) {
    SessionOptions o = base;
    o.files.input_dir = file.parent_path();
    std::vector<double> mine;
    for (PredictionRow& r : predict_graph(g, o, c, !offline, args.quick ? 5 : 10)) {
      if (offline) {
        const auto it = recorded.find({r.graph, r.configuration});
        if (it == recorded.end())
          continue; // not measured in that run
        r.measured_ms = it->second;
      }
      const double error = (r.predicted.elapsed_ms - r.measured_ms) / r.measured_ms;
      mine.push_back(std::fabs(error));
      fmt::print("{:<26} {:<28} {:>12.4f} {:>12.4f} {:>+7.0f}% {:>6.0f}%\n", r.graph, r.configuration,
                 r.predicted.elapsed_ms, r.measured_ms, 100 * error,
                 100 * r.predicted.sync_ms / std::max(r.predicted.elapsed_ms, 1e-12));
      report.add({{"graph", r.graph},
                  {"configuration", r.configuration},
                  {"predicted_ms", r.predicted.elapsed_ms},
                  {"measured_ms", r.measured_ms},
                  {"error", error},
                  {"sync_ms", r.predicted.sync_ms},
                  {"uncalibrated", r.predicted.uncalibrated}});
    }
    const auto [med, p90] = median_p90(mine);
    fmt::print("{:<26} median |error| {:.1f}%, 90th percentile {:.1f}%\n", g.name(), 100 * med, 100 * p90);
    all.insert(all.end(), mine.begin(), mine.end());
  }
  const auto [med, p90] = median_p90(all);
  fmt::print("all {} configurations: median |error| {:.1f}%, 90th percentile {:.1f}%\n", all.size(), 100 * med,
             100 * p90);
  report.add({{"summary", true}, {"configurations", all.size()}, {"median_abs_error", med}, {"p90_abs_error", p90}});
  report.write(args.json_path);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) { // a file that cannot be read or is not what it should be, a failed run
    fmt::print(stderr, "gridflow_bench_predict: {}\n", e.what());
    return 2;
  }
}
