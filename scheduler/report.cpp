#include "scheduler/report.hpp"

#include "runtime/errors.hpp"
#include "scheduler/build_info.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

namespace gridflow {

namespace {

nlohmann::json stats_json(const EventStats& s) {
  return {{"count", s.count},
          {"median_us", s.median_ns * 1e-3},
          {"p99_us", s.p99_ns * 1e-3},
          {"max_us", s.max_ns * 1e-3},
          {"total_us", s.total_ns * 1e-3}};
}

nlohmann::json share_json(const Share& s) {
  return {{"us", s.ns * 1e-3}, {"share", s.share}};
}

// Colours of the breakdown categories, in drawing order.
struct Category {
  const char* name;
  const char* colour;
};
constexpr Category kCategories[] = {
    {"work", "#4c9a2a"}, {"wait", "#e8a33d"}, {"barrier", "#c0392b"}, {"dispatch", "#5b7db1"}, {"idle", "#cccccc"}};

double category_share(const Breakdown& b, int i) {
  const Share* s[] = {&b.work, &b.wait, &b.barrier, &b.dispatch, &b.idle};
  return s[i]->share;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

std::string svg_open(int w, int h) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      w, h, w, h);
}

std::string legend(int x, int y) {
  std::string s;
  for (int i = 0; i < 5; ++i)
    s += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
        x + i * 90, y, kCategories[i].colour, x + i * 90 + 14, y + 9, kCategories[i].name);
  return s;
}

} // namespace

nlohmann::json analysis_json(const TraceAnalysis& a) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const TaskProfile& t : a.tasks)
    tasks.push_back({{"name", t.name},
                     {"tiles", t.tiles},
                     {"work_us", t.work_ns * 1e-3},
                     {"wait_us", t.wait_ns * 1e-3},
                     {"span_us", t.span_ns * 1e-3},
                     {"longest_tile_us", t.longest_tile_ns * 1e-3}});
  return {{"blocks", a.blocks},
          {"makespan_us", a.makespan_ns * 1e-3},
          {"critical_path_us", a.critical_path_ns * 1e-3},
          {"breakdown",
           {{"work", share_json(a.breakdown.work)},
            {"wait", share_json(a.breakdown.wait)},
            {"barrier", share_json(a.breakdown.barrier)},
            {"dispatch", share_json(a.breakdown.dispatch)},
            {"idle", share_json(a.breakdown.idle)}}},
          {"sync",
           {{"dependency_wait", stats_json(a.dependency_wait)},
            {"barrier_wait", stats_json(a.barrier_wait)},
            {"dispatch", stats_json(a.dispatch)},
            {"claim", stats_json(a.claim)},
            {"stage", stats_json(a.stage)},
            {"signal", stats_json(a.signal)}}},
          {"body", stats_json(a.body)},
          {"tasks", tasks}};
}

nlohmann::json profile_json(const std::string& graph, const std::string& device, const std::vector<ProfileEntry>& e) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ProfileEntry& p : e) {
    nlohmann::json r = {
        {"executor", p.executor}, {"config", p.config}, {"median_ms", p.median_ms}, {"min_ms", p.min_ms},
        {"max_ms", p.max_ms},     {"runs", p.runs},     {"check", p.check},         {"matches_first", p.matches_first}};
    if (p.analysis) {
      const nlohmann::json a = analysis_json(*p.analysis);
      r["breakdown"] = a["breakdown"];
      r["analysis"] = a;
    }
    rows.push_back(std::move(r));
  }
  return {{"gridflow", build_info_json()}, {"graph", graph}, {"device", device}, {"entries", rows}};
}

std::string profile_csv(const std::vector<ProfileEntry>& entries) {
  std::string s =
      "executor,median_ms,min_ms,max_ms,runs,work_share,wait_share,barrier_share,dispatch_share,idle_share,"
      "makespan_us,critical_path_us,claim_median_us,stage_median_us,wait_median_us,body_median_us,signal_median_us,"
      "matches_first\n";
  for (const ProfileEntry& e : entries) {
    s += fmt::format("\"{}\",{:.6f},{:.6f},{:.6f},{}", e.executor, e.median_ms, e.min_ms, e.max_ms, e.runs);
    if (e.analysis) {
      const Breakdown& b = e.analysis->breakdown;
      const TraceAnalysis& a = *e.analysis;
      s +=
          fmt::format(",{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.3f},{:.3f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f}",
                      b.work.share, b.wait.share, b.barrier.share, b.dispatch.share, b.idle.share, a.makespan_ns * 1e-3,
                      a.critical_path_ns * 1e-3, a.claim.median_ns * 1e-3, a.stage.median_ns * 1e-3,
                      a.dependency_wait.median_ns * 1e-3, a.body.median_ns * 1e-3, a.signal.median_ns * 1e-3);
    } else {
      s += ",,,,,,,,,,,,";
    }
    s += fmt::format(",{}\n", e.matches_first ? 1 : 0);
  }
  return s;
}

std::string timeline_svg(const LoweredProgram& p, const RunResult& r, const std::string& title) {
  std::uint64_t t0 = std::numeric_limits<std::uint64_t>::max(), t1 = 0;
  for (const auto& t : r.tiles) {
    t0 = std::min(t0, t.claim_begin);
    t1 = std::max(t1, t.signalled);
  }
  for (const auto& b : r.barriers)
    if (b.arrive) {
      t0 = std::min(t0, b.arrive);
      t1 = std::max(t1, b.leave);
    }
  if (t1 <= t0)
    t1 = t0 + 1;
  const int left = 70, width = 1000, row = r.blocks > 200 ? 2 : r.blocks > 64 ? 4 : 10;
  const int height = 50 + static_cast<int>(r.blocks) * row + 30;
  const double scale = static_cast<double>(width) / static_cast<double>(t1 - t0);
  auto x = [&](std::uint64_t ns) { return left + static_cast<double>(ns - std::min(ns, t0)) * scale; };
  std::string s = svg_open(left + width + 20, height);
  s += fmt::format("<text x=\"{}\" y=\"16\" font-size=\"13\">{} ({:.1f} us, {} blocks, {} tiles)</text>\n", left,
                   escape(title), static_cast<double>(t1 - t0) * 1e-3, r.blocks, p.tiles.size());
  s += legend(left, 24);
  auto rect = [&](std::uint32_t block, std::uint64_t a, std::uint64_t b, const char* colour) {
    if (b <= a)
      return;
    s += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>\n", x(a),
                     44 + static_cast<int>(block) * row, std::max(0.3, x(b) - x(a)), std::max(1, row - 1), colour);
  };
  for (std::size_t g = 0; g < r.tiles.size(); ++g) {
    const program::TileTrace& t = r.tiles[g];
    rect(t.block, t.claim_begin, t.claimed, kCategories[3].colour);
    const bool waits = g < p.tiles.size() && tile_waits(p, g); // else claimed -> ready is staging: dispatch
    rect(t.block, t.claimed, t.ready, kCategories[waits ? 1 : 3].colour);
    rect(t.block, t.ready, t.executed, kCategories[0].colour);
    rect(t.block, t.executed, t.signalled, kCategories[3].colour);
  }
  for (std::uint32_t b = 0; b < r.blocks; ++b)
    for (std::uint32_t k = 0; k < r.barriers_per_block; ++k) {
      const auto& bt = r.barriers[std::size_t{b} * r.barriers_per_block + k];
      rect(b, bt.arrive, bt.leave, kCategories[2].colour);
    }
  s += fmt::format("<text x=\"4\" y=\"52\">block 0</text><text x=\"4\" y=\"{}\">block {}</text>\n",
                   44 + static_cast<int>(r.blocks) * row, r.blocks - 1);
  return s + "</svg>\n";
}

std::string breakdown_svg(const std::vector<ProfileEntry>& entries, const std::string& title) {
  const int left = 230, width = 600, bar = 18;
  int n = 0;
  for (const auto& e : entries)
    n += e.analysis.has_value();
  std::string s = svg_open(left + width + 120, 60 + n * (bar + 8) + 20);
  s += fmt::format(
      "<text x=\"10\" y=\"16\" font-size=\"13\">{}: where the time went (share of blocks x makespan)</text>\n",
      escape(title));
  s += legend(left, 26);
  int y = 46;
  for (const auto& e : entries) {
    if (!e.analysis)
      continue;
    s += fmt::format("<text x=\"10\" y=\"{}\">{}</text>\n", y + 13, escape(e.executor));
    double at = left;
    for (int i = 0; i < 5; ++i) {
      const double w = category_share(e.analysis->breakdown, i) * width;
      s += fmt::format("<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"{}\"/>\n", at, y, w, bar,
                       kCategories[i].colour);
      at += w;
    }
    s += fmt::format("<text x=\"{}\" y=\"{}\">{:.3f} ms</text>\n", left + width + 8, y + 13, e.median_ms);
    y += bar + 8;
  }
  return s + "</svg>\n";
}

std::string barrier_svg(const nlohmann::json& rows, const std::string& title) {
  // One series per barrier kind at one block size (256 threads when measured, else the first one found): us per
  // barrier against blocks per SM on a log2 axis, each point marked.
  int threads = -1;
  for (const auto& r : rows)
    if (r.contains("us_per_barrier") && (threads < 0 || r["threads"].get<int>() == 256))
      threads = r["threads"].get<int>();
  std::map<std::string, std::vector<std::pair<double, double>>> series;
  double ymax = 0;
  for (const auto& r : rows) {
    if (!r.contains("us_per_barrier") || r["threads"].get<int>() != threads)
      continue;
    const std::string key = fmt::format("{} ({} thr)", r["kind"].get<std::string>(), threads);
    series[key].emplace_back(r["blocks_per_sm"].get<double>(), r["us_per_barrier"].get<double>());
    ymax = std::max(ymax, r["us_per_barrier"].get<double>());
  }
  const int left = 60, width = 520, height = 320, top = 40;
  ymax = std::max(1.0, ymax * 1.1);
  auto px = [&](double bps) { return left + (std::log2(bps) / 3.0) * width; }; // 1..8 blocks per SM
  auto py = [&](double us) { return top + height - us / ymax * height; };
  std::string s = svg_open(left + width + 230, top + height + 50);
  s += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"13\">{}</text>\n", left, escape(title));
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", left, top + height,
                   left + width, top + height);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", left, top, left, top + height);
  for (double bps : {1.0, 2.0, 4.0, 8.0})
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>\n", px(bps) - 3, top + height + 15, bps);
  s += fmt::format("<text x=\"{}\" y=\"{}\">blocks per SM</text>\n", left + width / 2 - 40, top + height + 32);
  for (int i = 0; i <= 4; ++i)
    s += fmt::format("<text x=\"5\" y=\"{:.1f}\">{:.2f} us</text>\n", py(ymax * i / 4) + 4, ymax * i / 4);
  const char* colours[] = {"#c0392b", "#2e86c1", "#28b463", "#af7ac5", "#f39c12",
                           "#7f8c8d", "#17202a", "#e84393", "#1abc9c"};
  int c = 0;
  for (auto& [key, pts] : series) {
    std::sort(pts.begin(), pts.end());
    std::string path;
    for (const auto& [bps, us] : pts)
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", px(bps), py(us));
    const char* col = colours[c % 9];
    s += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, col);
    for (const auto& [bps, us] : pts)
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n", px(bps), py(us), col);
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", left + width + 10, top + 14 * c + 10, col,
                     escape(key));
    ++c;
  }
  return s + "</svg>\n";
}

void write_text(const std::string& path, const std::string& text) {
  const std::filesystem::path p(path);
  if (p.has_parent_path())
    std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close(); // the flush's status too
  if (!out)
    throw RuntimeError("cannot write " + path);
}

} // namespace gridflow
