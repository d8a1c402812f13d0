// The gridflow command line: behaviour, output and exit codes (0 ok, 1 runtime failure, 2 bad input).
#include "runtime/device.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gridflow_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  Result run(const std::string& args) {
    const std::string cmd = "cd '" + dir_.string() + "' && '" GRIDFLOW_CLI_PATH "' " + args + " > out.txt 2> err.txt";
    const int status = std::system(cmd.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir_ / "out.txt"), slurp(dir_ / "err.txt")};
  }

  fs::path dir_;
};

const char* kGraph = R"({"gridflow": 1, "name": "t",
  "buffers": [{"name": "x", "dtype": "f32", "shape": [8, 40], "init": {"uniform": {"seed": 3}}},
              {"name": "y", "dtype": "f32", "shape": [8, 40], "save": "y.bin"},
              {"name": "s", "dtype": "f32", "shape": [1]}],
  "tasks": [{"name": "sm", "op": "softmax", "in": "x", "out": "y"},
            {"name": "sum", "op": "reduce", "fn": "sum", "in": "y", "out": "s"}]})";

TEST_F(Cli, ValidateGoodGraph) {
  const Result r = run("validate " + write("g.json", kGraph).string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid: graph 't', 3 buffers, 2 tasks, 1 dependencies, 2 levels"), std::string::npos) << r.out;
}

TEST_F(Cli, MalformedJsonIsExitTwoWithOneLine) {
  const Result r = run("validate " + write("bad.json", "{\"gridflow\": 1,\n  \"buffers\": [,]}").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.json:2:"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(Cli, GarbageInputDoesNotCrash) {
  std::string junk;
  for (int i = 0; i < 4096; ++i)
    junk.push_back(static_cast<char>((i * 7919) & 0xff));
  const Result r = run("run " + write("junk.json", junk).string() + " --backend cpu");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("gridflow: error:"), std::string::npos);
}

TEST_F(Cli, InvalidGraphNamesTaskAndField) {
  std::string g = kGraph;
  g.replace(g.find("\"in\": \"y\""), 9, "\"in\": \"q\"");
  const Result r = run("validate " + write("g.json", g).string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("task 'sum': in.buffer = 'q': no buffer of that name"), std::string::npos) << r.err;
}

TEST_F(Cli, RunCheckOnCpuInEveryMode) {
  const fs::path g = write("g.json", kGraph);
  for (const char* mode : {"grid-sync", "barrier", "flags", "sentinel"}) {
    const Result r = run("run " + g.string() + " --backend cpu --check --workers 3 --overwrite --mode " + mode);
    EXPECT_EQ(r.code, 0) << mode << ": " << r.err;
    EXPECT_NE(r.out.find("check passed"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("mode=") + mode), std::string::npos) << r.out;
  }
  EXPECT_TRUE(fs::exists(dir_ / "y.bin")); // saved where gridflow ran
  EXPECT_EQ(fs::file_size(dir_ / "y.bin"), 8u * 40u * 4u);
  // Without --overwrite the existing file is refused before anything runs, and left as it was.
  std::ofstream(dir_ / "y.bin", std::ios::binary | std::ios::trunc) << "keep";
  const Result again = run("run " + g.string() + " --backend cpu");
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_NE(again.err.find("buffer 'y': save = \"y.bin\""), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("exists (--overwrite replaces it)"), std::string::npos) << again.err;
  EXPECT_EQ(again.out.find("run:"), std::string::npos) << again.out;
  EXPECT_EQ(slurp(dir_ / "y.bin"), "keep");
}

TEST_F(Cli, ClaimAheadIsAnOptionOfTheDynamicSchedule) {
  const fs::path g = write("g.json", kGraph);
  const Result on = run("run " + g.string() + " --backend cpu --check --workers 3 --claim-ahead");
  EXPECT_EQ(on.code, 0) << on.err;
  EXPECT_NE(on.out.find("check passed"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("claim_ahead=on"), std::string::npos) << on.out;
  const Result off = run("run " + g.string() + " --backend cpu --workers 3 --overwrite");
  EXPECT_EQ(off.code, 0) << off.err;
  EXPECT_EQ(off.out.find("claim_ahead"), std::string::npos) << off.out;
}

TEST_F(Cli, WavesSetTilesPerBlockOfALargeTask) {
  const fs::path g = write("r.json", R"({"gridflow": 1, "name": "r",
    "buffers": [{"name": "x", "dtype": "f32", "shape": [1048576], "init": {"uniform": {"seed": 1}}},
                {"name": "s", "dtype": "f32", "shape": [1]}],
    "tasks": [{"name": "sum", "op": "reduce", "fn": "sum", "in": "x", "out": "s"}]})");
  const Result fewer = run("lower " + g.string() + " --blocks 4 --waves 1");
  EXPECT_EQ(fewer.code, 0) << fewer.err;
  EXPECT_NE(fewer.out.find("4 tiles"), std::string::npos) << fewer.out;
  const Result more = run("lower " + g.string() + " --blocks 4 --waves 8");
  EXPECT_EQ(more.code, 0) << more.err;
  EXPECT_NE(more.out.find("32 tiles"), std::string::npos) << more.out;
  const Result bad = run("run " + g.string() + " --backend cpu --waves 0");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--waves"), std::string::npos) << bad.err;
}

TEST_F(Cli, PollPacingIsAnOptionOfEveryRun) {
  const fs::path g = write("g.json", kGraph);
  const Result on = run("run " + g.string() +
                        " --backend cpu --check --workers 3 --mode sentinel --poll-spins 1000 "
                        "--poll-max-sleep-ns 96");
  EXPECT_EQ(on.code, 0) << on.err;
  EXPECT_NE(on.out.find("check passed"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("gpu_poll(spins=1000 max_sleep_ns=96 check_every=16)"), std::string::npos) << on.out;
  EXPECT_EQ(on.out.find("gpu_wait"), std::string::npos) << on.out;
  const Result wait = run("run " + g.string() + " --backend cpu --check --workers 3 --wait-spins 32 --overwrite");
  EXPECT_EQ(wait.code, 0) << wait.err;
  EXPECT_NE(wait.out.find("check passed"), std::string::npos) << wait.out;
  EXPECT_NE(wait.out.find("gpu_wait(spins=32 max_sleep_ns=512 check_every=16)"), std::string::npos) << wait.out;
  const Result every = run("run " + g.string() + " --backend cpu --check --workers 3 --watchdog-every 1 --overwrite");
  EXPECT_EQ(every.code, 0) << every.err;
  EXPECT_NE(every.out.find("check_every=1)"), std::string::npos) << every.out;
  const Result never = run("run " + g.string() + " --backend cpu --workers 3 --watchdog-every 0 --overwrite");
  EXPECT_EQ(never.code, 2);
  EXPECT_NE(never.err.find("--watchdog-every"), std::string::npos) << never.err;
  const Result off = run("run " + g.string() + " --backend cpu --workers 3 --overwrite");
  EXPECT_EQ(off.code, 0) << off.err;
  EXPECT_EQ(off.out.find("gpu_poll"), std::string::npos) << off.out; // the default pacing is not named
  EXPECT_EQ(off.out.find("gpu_wait"), std::string::npos) << off.out;
}

TEST_F(Cli, RunRepeatReportsAMedian) {
  const Result r = run("run " + write("g.json", kGraph).string() + " --backend cpu --repeat 3 --warmup 1");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("median of 3 runs"), std::string::npos) << r.out;
}

TEST_F(Cli, AutoBackendFallsBackToCpuWithANotice) {
  if (gridflow::probe_gpu().available)
    GTEST_SKIP() << "a GPU is present: no fallback to see";
  const Result r = run("run " + write("g.json", kGraph).string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("running on the CPU reference backend"), std::string::npos) << r.err;
}

TEST_F(Cli, GpuBackendWithoutGpuIsARuntimeFailure) {
  if (gridflow::probe_gpu().available)
    GTEST_SKIP() << "a GPU is present";
  const Result r = run("run " + write("g.json", kGraph).string() + " --backend gpu");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
}

TEST_F(Cli, UsageErrorsAreExitTwo) {
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("run").code, 2);                            // missing GRAPH
  EXPECT_EQ(run("run g.json --mode fastest").code, 2);      // bad choice
  EXPECT_EQ(run("run missing.json --backend cpu").code, 2); // cannot open
}

TEST_F(Cli, HelpOnEverySubcommand) {
  for (const char* sub : {"", "validate", "lower", "run", "profile", "bench", "bench sync", "calibrate", "predict"}) {
    const Result r = run(std::string(sub) + " --help");
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub << r.out;
  }
}

TEST_F(Cli, RunWritesTraceAndReport) {
  const Result r = run("run " + write("g.json", kGraph).string() +
                       " --backend cpu --workers 2 --mode barrier --trace t.json --report rep.json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("traced run: makespan"), std::string::npos) << r.out;
  EXPECT_NE(slurp(dir_ / "t.json").find("traceEvents"), std::string::npos);
  EXPECT_NE(slurp(dir_ / "rep.json").find("\"breakdown\""), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_ / "rep.csv"));
  // Both say which gridflow made them.
  const std::string version = "\"version\":\"" GRIDFLOW_VERSION "\"";
  EXPECT_NE(slurp(dir_ / "t.json").find(version), std::string::npos) << slurp(dir_ / "t.json").substr(0, 200);
  const std::string report = slurp(dir_ / "rep.json");
  EXPECT_NE(report.find("\"version\": \"" GRIDFLOW_VERSION "\""), std::string::npos) << report.substr(0, 300);
  EXPECT_NE(report.find("\"commit\": \""), std::string::npos);
}

TEST_F(Cli, VersionNamesTheVersionAndCommit) {
  const Result r = run("--version");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("gridflow " GRIDFLOW_VERSION " (commit ", 0), 0u) << r.out;
}

TEST_F(Cli, ProfileRunsEveryModeAndWritesItsOutputs) {
  const Result r = run("profile " + write("g.json", kGraph).string() + " --backend cpu --workers 2 --repeat 2 --out p");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("gridflow sentinel static"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bit-identical"), std::string::npos) << r.out;
  for (const char* f : {"report.json", "report.csv", "breakdown.svg", "trace-gridflow-flags-dynamic.json",
                        "timeline-gridflow-grid-sync-static.svg"})
    EXPECT_TRUE(fs::exists(dir_ / "p" / f)) << f;
}

TEST_F(Cli, BenchSyncReplotsSavedResultsWithoutAGpu) {
  write("sync.json", R"({"rows": [{"what": "grid_barrier", "kind": "cg", "threads": 256, "blocks_per_sm": 1,
                                   "us_per_barrier": 1.0}, {"what": "grid_barrier", "kind": "flat", "threads": 256,
                                   "blocks_per_sm": 8, "us_per_barrier": 3.2}]})");
  const Result r = run("bench sync --from sync.json --svg b.svg");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(slurp(dir_ / "b.svg").find("flat (256 thr)"), std::string::npos);
  EXPECT_EQ(run("bench sync --from missing.json --svg b.svg").code, 2);
}

TEST_F(Cli, PredictMeasuresEveryConfigurationAgainstACalibration) {
  // A hand-written calibration of every configuration (the costs are invented; calibrate measures real ones).
  std::string configs;
  for (const char* mode : {"grid-sync", "barrier", "flags", "sentinel"})
    for (const char* schedule : {"dynamic", "static"})
      configs += std::string(configs.empty() ? "" : ",") + "\"" + mode + " " + schedule +
                 "\": {\"overhead_ns\": 5000, \"dispatch_ns\": 50, \"signal_ns\": 20, \"hop_ns\": 300, "
                 "\"barrier_ns\": 1000, \"runs\": 1}";
  write("cal.json", R"({"device": "test", "bodies": {"softmax_rows/lean-rows": {"fixed_ns": 900, "ns_per_byte": 0.01,
    "samples": 2}, "softmax_rows/short-rows": {"fixed_ns": 900, "ns_per_byte": 0.01, "samples": 2},
    "reduce_rows/lean-rows": {"fixed_ns": 500, "ns_per_byte": 0.01, "samples": 2},
    "reduce_rows/lean-rows/poll": {"fixed_ns": 500, "ns_per_byte": 0.01, "samples": 2}}, "configs": {)" +
                        configs + "}}");
  const Result r = run("predict " + write("g.json", kGraph).string() +
                       " --calibration cal.json --backend cpu --workers 2 --measure --repeat 2 --json pred.json");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sentinel static"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("absolute error over 8 configurations"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("uncalibrated"), std::string::npos) << r.out;
  const std::string json = slurp(dir_ / "pred.json");
  EXPECT_NE(json.find("\"measured_ms\""), std::string::npos) << json.substr(0, 300);
  EXPECT_NE(json.find("\"median_abs_error\""), std::string::npos);
  write("bad.json", R"({"device": "x", "bodies": {}, "configs": {"flags dynamic": {"hop_ns": 1}}})");
  const Result bad = run("predict g.json --calibration bad.json --backend cpu");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("calibration: missing field 'overhead_ns'"), std::string::npos) << bad.err;
}

TEST_F(Cli, LowerPrintsTheProgram) {
  const Result r = run("lower " + write("g.json", kGraph).string() + " --blocks 4 --schedule static --list-blocks");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("softmax_rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("block    3:"), std::string::npos) << r.out;
}

} // namespace
