// gridflow predict: a graph's run time in each sync mode and schedule before it runs, from its lowered program and
// a calibration of the machine (gridflow calibrate), and the share of that time synchronization costs.
//
// The model replays the program's schedule tile by tile:
//   - a tile's body costs what BodyCost says, per body key (opcode, row path, polled inputs, lean megakernel);
//   - claiming and staging a tile cost `dispatch_ns` before its body, signalling it `signal_ns` after; a tile that
//     waits for a producer starts `hop_ns` after the producer's last awaited tile signalled (a dependency on a tile
//     the same block ran earlier costs none); level modes pay `barrier_ns` between levels; a run pays
//     `overhead_ns` (plus the sentinel fill, in sentinel mode) beyond its makespan (launch, prologue, completion);
//   - the dynamic schedule hands the next tile in order to the block that frees first; static lists run as lowered.
// Every cost comes from traced runs of calibration graphs whose shapes differ from the graphs predicted.
// "Synchronization" is what the run would lose were dispatch, hand-offs, barriers and overhead free: the predicted
// time minus the same replay with those costs at zero.
#pragma once

#include "runtime/gpu_executor.hpp"
#include "runtime/lowered_program.hpp"
#include "scheduler/graph.hpp"
#include "scheduler/profile.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gridflow {

// A tile's body: fixed_ns + ns_per_row x (its row passes; row ops only) + (ns_per_byte + share x (ns_per_shared_byte +
// dram x ns_per_dram_byte)) x (the bytes it reads and writes), where
//   - a row pass is the rows one warp, group of warps or block takes in turn (row_passes in predict.cpp): on eight
//     warps a tile of eight 768-column softmax rows takes one pass (a warp per row), a tile of six such rows six
//     (each row spread over the block);
//   - share is the fraction of the grid its level keeps busy (capped at 1): the memory system's bandwidth is
//     divided among the blocks streaming at once;
//   - dram is the fraction of its task's bytes beyond what the L2 cache holds (1 - L2 / task bytes, at least 0):
//     streams that miss the L2 are served at the DRAM's bandwidth.
struct BodyCost {
  double fixed_ns = 0;
  double ns_per_byte = 0;
  std::size_t samples = 0; // tasks it was fitted on
  double ns_per_row = 0;
  double ns_per_shared_byte = 0;
  double ns_per_dram_byte = 0;
};

// The costs of one executor configuration ("flags static", "flags static lean", ...).
struct ConfigCost {
  double overhead_ns = 0;
  double dispatch_ns = 0;
  double signal_ns = 0;
  double hop_ns = 0;
  double barrier_ns = 0;
  std::size_t runs = 0;
  double ns_per_fill_byte = 0; // sentinel mode: overhead per byte of outputs pre-filled with the sentinel
};

// What the calibration learns from profiled runs: per body key, each task's median tile body against its tiles' mean
// bytes, rows, row passes and level share and the task's bytes; per config, dispatch, signal, hop and barrier
// durations and the run's overhead (median time minus traced makespan) with the bytes its sentinel fill wrote. Kept
// in the calibration file, so a changed fit can be checked without measuring again.
struct BodySample {
  double bytes = 0;
  double rows = 0;  // 0 for ops over elements
  double share = 0; // the fraction of the grid the task's level keeps busy
  double ns = 0;
  double passes = 0;     // row passes (row_passes); files that did not record them: rows
  double task_bytes = 0; // the whole task's bytes (0: not recorded)
};
struct CalibrationSamples {
  std::string device;
  std::map<std::string, std::vector<BodySample>> bodies;
  struct Config {
    std::vector<double> overhead_ns, dispatch_ns, signal_ns, hop_ns, barrier_ns;
    std::vector<double> fill_bytes; // per overhead_ns sample: the bytes the sentinel fill wrote (empty: none)
  };
  std::map<std::string, Config> configs;
  bool per_row = false; // from a file of the format before row passes: the row term is per row, not per pass
};

struct Calibration {
  std::string device;
  // The GPU it was measured on, as plan_gpu_shape described it: SM count and the megakernel's occupancy limit at the
  // calibrated threads per block (sm_count 0: not recorded). Lets predict_graph lower for that GPU without one.
  GpuShape gpu;
  double l2_bytes = 0; // that GPU's L2 cache (0: not recorded; no stream is then costed as missing it)
  // ns_per_row is per row, not per row pass: a file of the format before row passes ("row_costs" absent), whose
  // costs and samples keep their meaning. Such a file predicts as it did when written; calibrating again is better.
  bool per_row = false;
  std::map<std::string, BodyCost> bodies;    // body_key()
  std::map<std::string, ConfigCost> configs; // config_key()
  CalibrationSamples samples;                // what the costs were fitted on (empty in files that did not keep it)
};

nlohmann::json calibration_json(const Calibration& c);
// Throws GraphError naming the field when the JSON is not a calibration.
Calibration calibration_from_json(const nlohmann::json& j);

// The keys a program's tiles and configuration are costed under: the opcode, for row ops the body their rows take
// (lean rows at `threads`, rows of at most kShortRowMaxCols, longer rows), polled inputs, the lean megakernel.
std::string body_key(const program::TaskDesc& t, std::uint32_t threads, bool lean);
std::string config_key(const LoweredProgram& p, bool lean);
// Whether the GPU runs `p` on the lean megakernel (the CPU backend never does).
bool runs_lean(const LoweredProgram& p, Backend backend);

void add_samples(const ProfileResult& profiled, Backend backend, CalibrationSamples& samples);
// The costs from the samples, for a GPU with `l2_bytes` of L2 cache (the calibration keeps the samples and names no
// GPU shape; calibrate() adds it).
Calibration fit(const CalibrationSamples& samples, double l2_bytes);

// The calibration graphs: every whole-view op at five sizes, row ops over short and long rows in the L2 cache and
// beyond it, chains of small row ops on either megakernel; hand-offs and barriers in all of them. None has the shape
// of an example or bench graph.
std::vector<Graph> calibration_graphs();

struct Prediction {
  double elapsed_ms = 0;                 // overhead + makespan
  double makespan_ns = 0;                // first claim to last signal
  double sync_ms = 0;                    // elapsed minus the replay with free synchronization
  std::vector<std::string> uncalibrated; // body or config keys the calibration lacks (their costs are guesses)
};
Prediction predict(const LoweredProgram& p, bool lean, const Calibration& c);

// Profiles every calibration graph from `base` (every mode and schedule, traced; each must pass its reference
// check) and fits the costs. `progress` hears each graph's name.
Calibration calibrate(const SessionOptions& base, int repeat, const std::function<void(const std::string&)>& progress);

// One configuration of one graph: predicted, and measured when asked (measured_ms < 0 otherwise).
struct PredictionRow {
  std::string graph;
  std::string configuration; // config_key
  Prediction predicted;
  double measured_ms = -1;
};
// Predicts `g` in every sync mode and schedule from `base`; with `measure`, profiles it too (`repeat` timed runs).
// Without `measure`, a GPU backend's programs are lowered for the calibration's GPU when it names one (no GPU needed),
// else for the GPU present.
std::vector<PredictionRow> predict_graph(const Graph& g, const SessionOptions& base, const Calibration& c, bool measure,
                                         int repeat);

} // namespace gridflow
