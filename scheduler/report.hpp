// Reports of measured runs: JSON (the breakdown under "breakdown"), CSV, and SVG plots rendered natively (a
// per-block timeline, breakdown bars across executors, barrier cost against grid shape).
#pragma once

#include "runtime/lowered_program.hpp"
#include "runtime/run_result.hpp"
#include "scheduler/trace_analysis.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gridflow {

// One executor configuration of one graph, measured.
struct ProfileEntry {
  std::string executor; // "gridflow flags dynamic", "stream launch per task", ...
  std::string config;   // everything the number depends on
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
  std::optional<TraceAnalysis> analysis; // when a traced run was analysed
  std::string check;                     // the reference check's summary line ("" when not checked)
  bool matches_first = true;             // outputs bit-identical to the first entry's
};

nlohmann::json analysis_json(const TraceAnalysis& a);
nlohmann::json profile_json(const std::string& graph, const std::string& device, const std::vector<ProfileEntry>& e);
std::string profile_csv(const std::vector<ProfileEntry>& entries);

// SVG plots.
std::string timeline_svg(const LoweredProgram& program, const RunResult& run, const std::string& title);
std::string breakdown_svg(const std::vector<ProfileEntry>& entries, const std::string& title);
// `rows`: {"kind", "blocks_per_sm", "threads", "us_per_barrier"} objects (gridflow bench sync).
std::string barrier_svg(const nlohmann::json& rows, const std::string& title);

// Writes text to a file (creating folders); throws RuntimeError on failure.
void write_text(const std::string& path, const std::string& text);

} // namespace gridflow
