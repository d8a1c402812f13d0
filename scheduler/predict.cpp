#include "scheduler/predict.hpp"

#include "kernels/tile_shapes.hpp"
#include "runtime/device.hpp"
#include "runtime/errors.hpp"
#include "runtime/lean_program.hpp"
#include "runtime/op_traits.hpp"
#include "runtime/tiles.hpp"
#include "scheduler/errors.hpp"
#include "scheduler/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>

namespace gridflow {
namespace {

using program::TaskDesc;

double median(std::vector<double> v) {
  if (v.empty())
    return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Bytes tile k of `t` reads and writes (4-byte elements). Tiles whose partial results the last arriver folds (a
// reduction's partial, a histogram's count row) write too little to count.
double tile_bytes(const TaskDesc& t, std::uint32_t k) {
  const std::int64_t items = program::tile_items(t, k).size();
  const program::Scratch scratch = program::op_traits(t.opcode).scratch;
  const bool writes_view = scratch != program::Scratch::partials && scratch != program::Scratch::count_rows;
  const std::int64_t in = items * program::input_per_item(t);
  const std::int64_t out = writes_view ? items * program::output_per_item(t) : 0;
  return 4.0 * static_cast<double>(in + out);
}

// Rows tile k of a row op covers (0 for ops over elements).
double tile_rows(const TaskDesc& t, std::uint32_t k) {
  return program::is_row_op(t.opcode) ? static_cast<double>(program::tile_items(t, k).size()) : 0.0;
}

// The rows of tile k of a row op that one warp, group of warps or the block takes in turn at `threads` (0 for ops
// over elements): short rows go a warp per row, softmax's a group of warps per row where the tile has fewer rows
// than the block has warps (kernels::short_row_group_warps); lean and long rows go the whole block per row.
double row_passes(const TaskDesc& t, std::uint32_t k, std::uint32_t threads) {
  if (!program::is_row_op(t.opcode))
    return 0.0;
  const std::int64_t rows = program::tile_items(t, k).size();
  if (program::lean_rows(t, static_cast<int>(threads)) || t.cols > kernels::kShortRowMaxCols)
    return static_cast<double>(rows);
  const int warps = std::max<int>(1, static_cast<int>(threads / 32));
  const int group = t.opcode == static_cast<std::uint32_t>(program::Opcode::softmax_rows)
                        ? kernels::short_row_group_warps(rows, t.cols, warps)
                        : 1;
  const std::int64_t at_once = std::max(1, warps / group);
  return static_cast<double>((rows + at_once - 1) / at_once);
}

// Bytes all tiles of `t` read and write.
double task_bytes(const TaskDesc& t) {
  double bytes = 0.0;
  for (std::uint32_t k = 0; k < t.num_tiles; ++k)
    bytes += tile_bytes(t, k);
  return bytes;
}

// The fraction of a task's bytes beyond what an L2 cache of `l2_bytes` holds (0 when it fits or the size is not known).
double dram_fraction(double task_bytes, double l2_bytes) {
  return l2_bytes > 0 && task_bytes > l2_bytes ? 1.0 - l2_bytes / task_bytes : 0.0;
}

// Bytes a sentinel-mode run pre-fills with the sentinel before its megakernel runs (0 in other modes).
double fill_bytes(const LoweredProgram& p) {
  if (p.mode != SyncMode::sentinel)
    return 0.0;
  const std::vector<std::int64_t> ranges = sentinel_ranges(p);
  double elements = 0.0;
  for (std::size_t b = 1; b < ranges.size(); b += 2)
    elements += static_cast<double>(ranges[b]);
  return 4.0 * elements;
}

// When the inputs of tile g of a task that polls them (sentinel mode) are all written, from when each producer tile
// and task finished. A row op over a producer row op tiled the same way reads the producer's tile of the same index;
// any other consumer may read any tile of its producers.
template <class TileDone, class TaskDone>
double polled_inputs_ready(const LoweredProgram& p, std::uint32_t g, TileDone tile_done, TaskDone task_done) {
  const program::TileDesc& tile = p.tiles[g];
  const TaskDesc& t = p.tasks[tile.task];
  double ready = 0.0;
  for (std::uint32_t k = p.pred_begin[tile.task]; k < p.pred_begin[tile.task + 1]; ++k) {
    const std::uint32_t pred = p.pred_tasks[k];
    const TaskDesc& q = p.tasks[pred];
    const bool aligned = program::is_row_op(t.opcode) && program::is_row_op(q.opcode) && q.rows == t.rows &&
                         q.num_tiles == t.num_tiles && q.tile_size == t.tile_size;
    ready = std::max(ready, aligned ? tile_done(q.first_tile + tile.index) : task_done(pred));
  }
  return ready;
}

// Per tile: the fraction of the grid its level keeps busy (the level's tiles over the blocks, at most 1).
std::vector<double> level_shares(const LoweredProgram& p) {
  std::vector<double> share(p.tiles.size(), 1.0);
  const double blocks = std::max<double>(p.grid_blocks, 1);
  for (std::uint32_t l = 0; l < p.num_levels(); ++l)
    for (std::uint32_t g = p.level_begin[l]; g < p.level_begin[l + 1] && g < share.size(); ++g)
      share[g] = std::min(1.0, (p.level_begin[l + 1] - p.level_begin[l]) / blocks);
  return share;
}

// Tiles of task `task` that a consumer waiting on `d` waits for.
std::pair<std::uint32_t, std::uint32_t> awaited_tiles(const program::DepDesc& d, const LoweredProgram& p) {
  if (d.kind == static_cast<std::uint32_t>(program::DepKind::tiles))
    return {d.tile_begin, d.tile_end};
  return {0, p.tasks[d.task].num_tiles};
}

// The replay: finish time (ns from the first claim) of every tile, given each tile's body and the sync costs.
// Tiles are replayed in global order, which is topological, so every producer tile finished before its consumers.
struct Replay {
  const LoweredProgram& p;
  std::function<double(std::uint32_t)> body; // ns of tile g's body
  ConfigCost sync;

  struct State {
    std::vector<double> finish;    // per tile
    std::vector<double> task_done; // per task: its latest tile's finish so far
    std::vector<double> free_at;   // per block
  };

  // When tile g's inputs are ready: a hop after the producer tiles it waits for finished; a dependency the static
  // schedule dropped (the producer ran earlier on the same block) costs no hop.
  double ready_time(std::uint32_t g, const State& s) const {
    double ready = 0.0, local = 0.0;
    bool waits = false;
    const auto finished = [&](const program::DepDesc& d) {
      if (d.kind != static_cast<std::uint32_t>(program::DepKind::tiles))
        return s.task_done[d.task];
      double f = 0.0;
      const std::uint32_t first = p.tasks[d.task].first_tile;
      for (std::uint32_t k = d.tile_begin; k < d.tile_end; ++k)
        f = std::max(f, s.finish[first + k]);
      return f;
    };
    const program::TileDesc& tile = p.tiles[g];
    for (std::uint32_t d = tile.dep_first; d < tile.dep_first + tile.dep_count; ++d) {
      ready = std::max(ready, finished(p.deps[d]));
      waits = true;
    }
    if (!p.local_begin.empty())
      for (std::uint32_t d = p.local_begin[g]; d < p.local_begin[g + 1]; ++d)
        local = std::max(local, finished(p.local_deps[d]));
    // A sentinel consumer has no dependency entries: it polls its producers' outputs.
    if ((p.tasks[tile.task].flags & program::kPollInputs) && p.pred_begin[tile.task] < p.pred_begin[tile.task + 1]) {
      ready = std::max(ready, polled_inputs_ready(
                                  p, g, [&](std::uint32_t t) { return s.finish[t]; },
                                  [&](std::uint32_t task) { return s.task_done[task]; }));
      waits = true;
    }
    return std::max(local, waits ? ready + sync.hop_ns : 0.0);
  }

  // Runs tiles [begin, end) from `start`: static lists keep their blocks (block_of), dynamic claims go to the block
  // that frees first. Returns the latest finish.
  double run(std::uint32_t begin, std::uint32_t end, double start, State& s,
             const std::vector<std::uint32_t>& block_of) const {
    using Slot = std::pair<double, std::uint32_t>; // (free at, block)
    std::priority_queue<Slot, std::vector<Slot>, std::greater<>> blocks;
    const bool dynamic = block_of.empty();
    if (dynamic)
      for (std::uint32_t b = 0; b < s.free_at.size(); ++b)
        blocks.push({std::max(s.free_at[b], start), b});
    double last = start;
    for (std::uint32_t g = begin; g < end; ++g) {
      std::uint32_t b;
      if (dynamic) {
        b = blocks.top().second;
        blocks.pop();
      } else {
        b = block_of[g];
      }
      const double claimed = std::max(s.free_at[b], start) + sync.dispatch_ns;
      const double done = std::max(claimed, ready_time(g, s)) + body(g) + sync.signal_ns;
      s.finish[g] = done;
      s.free_at[b] = done;
      double& task_done = s.task_done[p.tiles[g].task];
      task_done = std::max(task_done, done);
      last = std::max(last, done);
      if (dynamic)
        blocks.push({done, b});
    }
    return last;
  }

  double makespan() const {
    const auto tiles = static_cast<std::uint32_t>(p.tiles.size());
    State s{std::vector<double>(tiles, 0.0), std::vector<double>(p.tasks.size(), 0.0),
            std::vector<double>(std::max<std::uint32_t>(p.grid_blocks, 1), 0.0)};
    std::vector<std::uint32_t> block_of;
    if (p.schedule == Schedule::static_list && !p.block_begin.empty()) {
      block_of.assign(tiles, 0);
      for (std::uint32_t b = 0; b + 1 < p.block_begin.size(); ++b)
        for (std::uint32_t i = p.block_begin[b]; i < p.block_begin[b + 1]; ++i)
          block_of[p.block_tiles[i]] = b;
    }
    if (!is_level_mode(p.mode))
      return run(0, tiles, 0.0, s, block_of);
    double t = 0.0;
    for (std::uint32_t l = 0; l < p.num_levels(); ++l) {
      const double end = run(p.level_begin[l], p.level_begin[l + 1], t, s, block_of);
      t = l + 1 < p.num_levels() ? end + sync.barrier_ns : end;
    }
    return t;
  }
};

// A body's cost terms: 1, row passes, bytes, bytes x share, bytes x share x dram fraction (BodyCost).
constexpr int kFeatures = 5;
using Features = std::array<double, kFeatures>;

Features features(double bytes, double passes, double share, double dram) {
  return {1.0, passes, bytes, bytes * share, bytes * share * dram};
}

// One observation of a linear cost: its terms and the time measured.
struct Observation {
  Features f{};
  double ns = 0;
};

// Weighted least squares of ns ~ sum_j c_j f_j over the observations for the features `use`, weights 1 / ns^2 so
// every observation counts by its relative error. False when the system is singular or a c_j < 0.
bool solve_features(const std::vector<Observation>& s, const std::array<bool, kFeatures>& use, Features& c,
                    double& rss) {
  std::vector<int> idx;
  for (int j = 0; j < kFeatures; ++j)
    if (use[j])
      idx.push_back(j);
  const std::size_t k = idx.size();
  double a[kFeatures][kFeatures + 1] = {};
  for (const Observation& x : s) {
    const double w = 1.0 / std::max(x.ns * x.ns, 1.0);
    const Features& f = x.f;
    for (std::size_t i = 0; i < k; ++i) {
      for (std::size_t j = 0; j < k; ++j)
        a[i][j] += w * f[idx[i]] * f[idx[j]];
      a[i][k] += w * f[idx[i]] * x.ns;
    }
  }
  // Gauss-Jordan with partial pivoting. A pivot far below its column's own diagonal means the features are collinear
  // (the terms have different units, so each column is judged against itself).
  double diagonal[kFeatures] = {};
  for (std::size_t i = 0; i < k; ++i)
    diagonal[i] = a[i][i];
  for (std::size_t col = 0; col < k; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < k; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col]))
        pivot = r;
    if (!(std::fabs(a[pivot][col]) > 1e-10 * diagonal[col]))
      return false;
    std::swap(a[col], a[pivot]);
    for (std::size_t r = 0; r < k; ++r)
      if (r != col) {
        const double m = a[r][col] / a[col][col];
        for (std::size_t j = col; j <= k; ++j)
          a[r][j] -= m * a[col][j];
      }
  }
  c = {};
  for (std::size_t i = 0; i < k; ++i) {
    c[idx[i]] = a[i][k] / a[i][i];
    if (!(c[idx[i]] >= 0.0))
      return false;
  }
  rss = 0.0;
  for (const Observation& x : s) {
    double y = 0.0;
    for (int j = 0; j < kFeatures; ++j)
      y += c[j] * x.f[j];
    const double e = (y - x.ns) / std::max(x.ns, 1.0);
    rss += e * e;
  }
  return true;
}

// Of the non-negative fits over subsets of the terms `allowed` that hold every term of `required`, the one with the
// least Bayesian information criterion (relative residuals), so a term is kept only where the observations vary
// enough to show it; nullopt when none fits.
std::optional<Features> fit_terms(const std::vector<Observation>& s, int allowed, int required = 0) {
  const auto n = static_cast<double>(s.size());
  double best = std::numeric_limits<double>::infinity();
  std::optional<Features> out;
  for (int mask = 1; mask < 1 << kFeatures; ++mask) {
    if ((mask & ~allowed) != 0 || (mask & required) != required)
      continue;
    std::array<bool, kFeatures> use{};
    int k = 0;
    for (int j = 0; j < kFeatures; ++j)
      k += (use[j] = (mask >> j & 1) != 0) ? 1 : 0;
    Features coef{};
    double rss = 0.0;
    if (!solve_features(s, use, coef, rss))
      continue;
    const double bic = n * std::log(std::max(rss, 1e-12) / n) + k * std::log(n);
    if (bic < best) {
      best = bic;
      out = coef;
    }
  }
  return out;
}

constexpr int kAllTerms = (1 << kFeatures) - 1;
constexpr int kDramTerm = 1 << 4; // bytes x share x dram fraction (features)

// A body's cost from its samples (BodyCost's terms, fit_terms); with no fit at all, the median. A row op's body with
// samples beyond the L2 keeps the DRAM term where a non-negative fit with it exists: its calibration rows beyond the
// L2 are one or two shapes among many in it, too few for the criterion to keep the term, yet graphs that stream
// hundreds of megabytes of rows run at the DRAM's rate, not the L2's.
BodyCost fit_body(const std::vector<BodySample>& s, double l2_bytes) {
  BodyCost c;
  c.samples = s.size();
  if (s.empty())
    return c;
  std::vector<Observation> obs;
  std::vector<double> ys;
  bool rows_beyond_l2 = false;
  for (const BodySample& x : s) {
    const double dram = dram_fraction(x.task_bytes, l2_bytes);
    obs.push_back({features(x.bytes, x.passes, x.share, dram), x.ns});
    ys.push_back(x.ns);
    rows_beyond_l2 = rows_beyond_l2 || (x.rows > 0 && dram > 0);
  }
  std::optional<Features> coef = rows_beyond_l2 ? fit_terms(obs, kAllTerms, kDramTerm) : std::nullopt;
  if (!coef)
    coef = fit_terms(obs, kAllTerms);
  if (coef) {
    const Features& k = *coef;
    c.fixed_ns = k[0], c.ns_per_row = k[1], c.ns_per_byte = k[2], c.ns_per_shared_byte = k[3],
    c.ns_per_dram_byte = k[4];
  } else {
    c.fixed_ns = median(ys);
  }
  return c;
}

// A configuration's overhead: the median of its runs' overheads beyond a per-byte cost of the sentinel fill, which is
// fitted (fixed and per byte, fit_terms) where the runs filled different amounts.
void fit_overhead(const CalibrationSamples::Config& k, ConfigCost& c) {
  c.ns_per_fill_byte = 0.0;
  const bool filled = k.fill_bytes.size() == k.overhead_ns.size() &&
                      std::any_of(k.fill_bytes.begin(), k.fill_bytes.end(), [](double b) { return b > 0; });
  if (filled) {
    std::vector<Observation> obs;
    for (std::size_t i = 0; i < k.overhead_ns.size(); ++i)
      obs.push_back({features(k.fill_bytes[i], 0, 0, 0), k.overhead_ns[i]});
    if (const std::optional<Features> coef = fit_terms(obs, 1 << 0 | 1 << 2))
      c.ns_per_fill_byte = (*coef)[2];
  }
  std::vector<double> beyond;
  for (std::size_t i = 0; i < k.overhead_ns.size(); ++i)
    beyond.push_back(k.overhead_ns[i] - (filled ? c.ns_per_fill_byte * k.fill_bytes[i] : 0.0));
  c.overhead_ns = std::max(0.0, median(beyond));
}

const nlohmann::json& field(const nlohmann::json& j, const char* name) {
  if (!j.is_object() || !j.contains(name))
    throw GraphError(fmt::format("calibration: missing field '{}'", name));
  return j.at(name);
}

double number(const nlohmann::json& j, const char* name) {
  const nlohmann::json& v = field(j, name);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    throw GraphError(fmt::format("calibration: field '{}' must be a finite number >= 0", name));
  return v.get<double>();
}

// The samples a calibration file keeps: {"bodies": {key: [[bytes, rows, share, ns], ...]}, "configs": {key: {name:
// [...]}}}.
CalibrationSamples samples_from_json(const nlohmann::json& j) {
  CalibrationSamples s;
  const auto values = [](const nlohmann::json& list, const std::string& what) {
    std::vector<double> out;
    if (!list.is_array())
      throw GraphError(fmt::format("calibration: samples.{} must be an array", what));
    for (const nlohmann::json& v : list) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        throw GraphError(fmt::format("calibration: samples.{} must hold finite numbers >= 0", what));
      out.push_back(v.get<double>());
    }
    return out;
  };
  for (const auto& [key, list] : field(j, "bodies").items()) {
    if (!list.is_array())
      throw GraphError(fmt::format("calibration: samples.bodies.{} must be an array", key));
    for (const nlohmann::json& row : list) {
      const std::vector<double> v = values(row, "bodies." + key);
      if (v.size() != 4 && v.size() != 6)
        throw GraphError(
            fmt::format("calibration: samples.bodies.{} holds [bytes, rows, share, ns, passes, task bytes] rows", key));
      // Files that did not record passes and task bytes: the row term counts rows (Calibration::per_row), and no
      // stream is costed as missing the L2.
      s.bodies[key].push_back({v[0], v[1], v[2], v[3], v.size() == 6 ? v[4] : v[1], v.size() == 6 ? v[5] : 0.0});
    }
  }
  for (const auto& [key, k] : field(j, "configs").items()) {
    CalibrationSamples::Config& c = s.configs[key];
    c.overhead_ns = values(field(k, "overhead_ns"), "configs." + key + ".overhead_ns");
    c.dispatch_ns = values(field(k, "dispatch_ns"), "configs." + key + ".dispatch_ns");
    c.signal_ns = values(field(k, "signal_ns"), "configs." + key + ".signal_ns");
    c.hop_ns = values(field(k, "hop_ns"), "configs." + key + ".hop_ns");
    c.barrier_ns = values(field(k, "barrier_ns"), "configs." + key + ".barrier_ns");
    if (k.contains("fill_bytes")) {
      c.fill_bytes = values(k.at("fill_bytes"), "configs." + key + ".fill_bytes");
      if (c.fill_bytes.size() != c.overhead_ns.size())
        throw GraphError(fmt::format("calibration: samples.configs.{}.fill_bytes must hold one value per overhead_ns "
                                     "sample ({}, not {})",
                                     key, c.overhead_ns.size(), c.fill_bytes.size()));
    }
  }
  return s;
}

} // namespace

std::string body_key(const TaskDesc& t, std::uint32_t threads, bool lean) {
  std::string key = program::op_traits(t.opcode).name;
  // Row ops take a different body by row length: lean rows, rows a warp holds, longer rows.
  if (program::is_row_op(t.opcode))
    key += program::lean_rows(t, static_cast<int>(threads)) ? "/lean-rows"
           : t.cols <= kernels::kShortRowMaxCols            ? "/short-rows"
                                                            : "/long-rows";
  else if (program::lean_partials(t, static_cast<int>(threads)))
    key += "/lean-partials";
  else if (program::lean_scans(t, static_cast<int>(threads)))
    key += "/lean-scans";
  if (t.flags & program::kPollInputs)
    key += "/poll";
  if (lean)
    key += "/lean";
  return key;
}

std::string config_key(const LoweredProgram& p, bool lean) {
  return fmt::format("{} {}{}", to_string(p.mode), to_string(p.schedule), lean ? " lean" : "");
}

bool runs_lean(const LoweredProgram& p, Backend backend) {
  return backend == Backend::gpu && lean_program(p, p.threads_per_block);
}

nlohmann::json calibration_json(const Calibration& c) {
  nlohmann::json bodies = nlohmann::json::object(), configs = nlohmann::json::object();
  for (const auto& [key, b] : c.bodies)
    bodies[key] = {{"fixed_ns", b.fixed_ns},
                   {"ns_per_row", b.ns_per_row},
                   {"ns_per_byte", b.ns_per_byte},
                   {"ns_per_shared_byte", b.ns_per_shared_byte},
                   {"ns_per_dram_byte", b.ns_per_dram_byte},
                   {"samples", b.samples}};
  for (const auto& [key, k] : c.configs)
    configs[key] = {{"overhead_ns", k.overhead_ns},
                    {"dispatch_ns", k.dispatch_ns},
                    {"signal_ns", k.signal_ns},
                    {"hop_ns", k.hop_ns},
                    {"barrier_ns", k.barrier_ns},
                    {"ns_per_fill_byte", k.ns_per_fill_byte},
                    {"runs", k.runs}};
  nlohmann::json j = {{"device", c.device},
                      {"bodies", bodies},
                      {"configs", configs},
                      {"row_costs", c.per_row ? "per_row" : "per_pass"}};
  if (!c.samples.bodies.empty() || !c.samples.configs.empty()) {
    nlohmann::json sb = nlohmann::json::object(), sc = nlohmann::json::object();
    for (const auto& [key, list] : c.samples.bodies) {
      nlohmann::json rows = nlohmann::json::array();
      for (const BodySample& x : list)
        rows.push_back({x.bytes, x.rows, x.share, x.ns, x.passes, x.task_bytes});
      sb[key] = rows;
    }
    for (const auto& [key, k] : c.samples.configs) {
      sc[key] = {{"overhead_ns", k.overhead_ns},
                 {"dispatch_ns", k.dispatch_ns},
                 {"signal_ns", k.signal_ns},
                 {"hop_ns", k.hop_ns},
                 {"barrier_ns", k.barrier_ns}};
      if (!k.fill_bytes.empty())
        sc[key]["fill_bytes"] = k.fill_bytes;
    }
    j["samples"] = {{"bodies", sb}, {"configs", sc}};
  }
  if (c.gpu.sm_count > 0)
    j["gpu"] = {{"threads_per_block", c.gpu.threads_per_block},
                {"sm_count", c.gpu.sm_count},
                {"max_blocks_per_sm", c.gpu.max_blocks_per_sm},
                {"l2_bytes", c.l2_bytes}};
  if (c.gpu.max_lean_blocks_per_sm > 0)
    j["gpu"]["max_lean_blocks_per_sm"] = c.gpu.max_lean_blocks_per_sm;
  return j;
}

Calibration calibration_from_json(const nlohmann::json& j) {
  Calibration c;
  const nlohmann::json& device = field(j, "device");
  c.device = device.is_string() ? device.get<std::string>() : "";
  if (j.contains("gpu")) { // absent from calibrations that did not record their GPU
    const nlohmann::json& gpu = j.at("gpu");
    const auto count = [&](const char* name, double most) {
      const double v = number(gpu, name);
      if (v < 1 || v > most || v != std::floor(v))
        throw GraphError(fmt::format("calibration: gpu.{} must be a whole number from 1 to {}", name, most));
      return static_cast<std::uint32_t>(v);
    };
    // Bounds a GPU has (CUDA allows at most 32 resident blocks per SM), so the grid a program is lowered for stays
    // small and its product cannot overflow.
    c.gpu.threads_per_block = count("threads_per_block", 1024);
    c.gpu.sm_count = count("sm_count", 4096);
    c.gpu.max_blocks_per_sm = count("max_blocks_per_sm", 32);
    if (gpu.contains("max_lean_blocks_per_sm")) // absent from calibrations that did not record it
      c.gpu.max_lean_blocks_per_sm = count("max_lean_blocks_per_sm", 32);
    if (std::find(std::begin(kGpuThreadChoices), std::end(kGpuThreadChoices), c.gpu.threads_per_block) ==
        std::end(kGpuThreadChoices))
      throw GraphError(fmt::format("calibration: gpu.threads_per_block = {}: the megakernel is compiled for 128, 256, "
                                   "512 and 1024",
                                   c.gpu.threads_per_block));
    if (gpu.contains("l2_bytes")) // absent from calibrations that did not record it
      c.l2_bytes = number(gpu, "l2_bytes");
  }
  const auto optional = [](const nlohmann::json& k, const char* name) {
    return k.contains(name) ? number(k, name) : 0.0;
  };
  for (const auto& [key, b] : field(j, "bodies").items())
    c.bodies[key] = {
        number(b, "fixed_ns"),     number(b, "ns_per_byte"),          static_cast<std::size_t>(number(b, "samples")),
        optional(b, "ns_per_row"), optional(b, "ns_per_shared_byte"), optional(b, "ns_per_dram_byte")};
  if (j.contains("samples"))
    c.samples = samples_from_json(j.at("samples"));
  if (j.contains("row_costs")) {
    const nlohmann::json& r = j.at("row_costs");
    if (r != "per_row" && r != "per_pass")
      throw GraphError("calibration: field 'row_costs' must be \"per_pass\" or \"per_row\"");
    c.per_row = r == "per_row";
  } else {
    c.per_row = true; // written before row passes
  }
  c.samples.per_row = c.per_row;
  for (const auto& [key, k] : field(j, "configs").items())
    c.configs[key] = {number(k, "overhead_ns"),       number(k, "dispatch_ns"),
                      number(k, "signal_ns"),         number(k, "hop_ns"),
                      number(k, "barrier_ns"),        static_cast<std::size_t>(number(k, "runs")),
                      optional(k, "ns_per_fill_byte")};
  return c;
}

void add_samples(const ProfileResult& profiled, Backend backend, CalibrationSamples& samples) {
  if (samples.device.empty())
    samples.device = profiled.device;
  for (const ProfiledTrace& pt : profiled.traces) {
    const LoweredProgram& p = pt.program;
    const std::vector<program::TileTrace>& tr = pt.run.tiles;
    const auto ordered = [](const program::TileTrace& x) {
      return x.tile != program::kNoTile && x.claim_begin <= x.claimed && x.claimed <= x.ready &&
             x.ready <= x.executed && x.executed <= x.signalled;
    };
    if (tr.size() != p.tiles.size() || !std::all_of(tr.begin(), tr.end(), ordered))
      continue; // not traced, or a tile that did not run
    const bool lean = runs_lean(p, backend);
    CalibrationSamples::Config& cfg = samples.configs[config_key(p, lean)];
    // Bodies: each task's median tile body against its tiles' mean bytes, rows and level share. A tile that polls its
    // inputs (sentinel mode) waits inside its body: its body starts once they are written (polled_inputs_ready), as
    // the replay has it.
    const std::vector<double> share = level_shares(p);
    std::vector<std::uint64_t> task_signalled(p.tasks.size(), 0);
    for (std::uint32_t g = 0; g < p.tiles.size(); ++g)
      task_signalled[p.tiles[g].task] = std::max(task_signalled[p.tiles[g].task], tr[g].signalled);
    for (std::uint32_t task = 0; task < p.tasks.size(); ++task) {
      const TaskDesc& t = p.tasks[task];
      std::vector<double> ns;
      double bytes = 0, rows = 0, busy = 0, passes = 0;
      for (std::uint32_t k = 0; k < t.num_tiles; ++k) {
        const program::TileTrace& x = tr[t.first_tile + k];
        const auto inputs_done =
            (t.flags & program::kPollInputs)
                ? static_cast<std::uint64_t>(polled_inputs_ready(
                      p, t.first_tile + k, [&](std::uint32_t g) { return static_cast<double>(tr[g].signalled); },
                      [&](std::uint32_t q) { return static_cast<double>(task_signalled[q]); }))
                : std::uint64_t{0};
        const std::uint64_t start = std::min(x.executed, std::max(x.ready, inputs_done));
        ns.push_back(static_cast<double>(x.executed - start));
        bytes += tile_bytes(t, k);
        rows += tile_rows(t, k);
        passes += row_passes(t, k, p.threads_per_block);
        busy += share[t.first_tile + k];
      }
      if (!ns.empty()) {
        const auto n = static_cast<double>(ns.size());
        samples.bodies[body_key(t, p.threads_per_block, lean)].push_back(
            {bytes / n, rows / n, busy / n, median(ns), passes / n, bytes});
      }
    }
    // Dispatch, hand-offs, the makespan.
    std::uint64_t t0 = UINT64_MAX, t_end = 0;
    for (std::uint32_t g = 0; g < p.tiles.size(); ++g) {
      const program::TileTrace& x = tr[g];
      t0 = std::min(t0, x.claim_begin);
      t_end = std::max(t_end, x.signalled);
      double dispatch = static_cast<double>(x.claimed - x.claim_begin);
      cfg.signal_ns.push_back(static_cast<double>(x.signalled - x.executed));
      std::uint64_t producers_done = 0;
      bool has_deps = false;
      p.for_each_dependency(g, [&](const program::DepDesc& d) {
        const auto [lo, hi] = awaited_tiles(d, p);
        for (std::uint32_t k = lo; k < hi; ++k)
          producers_done = std::max(producers_done, tr[p.tasks[d.task].first_tile + k].signalled);
        has_deps = has_deps || lo < hi;
      });
      if (!has_deps)
        dispatch += static_cast<double>(x.ready - x.claimed);
      else if (producers_done > x.claimed && x.ready >= producers_done)
        cfg.hop_ns.push_back(static_cast<double>(x.ready - producers_done)); // it waited: the hand-off's latency
      cfg.dispatch_ns.push_back(dispatch);
    }
    // Barriers: from the last signal of a level to the first claim of the next.
    if (is_level_mode(p.mode))
      for (std::uint32_t l = 1; l < p.num_levels(); ++l) {
        std::uint64_t prev_end = 0, next_begin = UINT64_MAX;
        for (std::uint32_t g = p.level_begin[l - 1]; g < p.level_begin[l]; ++g)
          prev_end = std::max(prev_end, tr[g].signalled);
        for (std::uint32_t g = p.level_begin[l]; g < p.level_begin[l + 1]; ++g)
          next_begin = std::min(next_begin, tr[g].claim_begin);
        if (next_begin != UINT64_MAX && next_begin >= prev_end)
          cfg.barrier_ns.push_back(static_cast<double>(next_begin - prev_end));
      }
    // Overhead: the timed runs' median beyond the traced makespan, with what the sentinel fill wrote.
    const double filled = fill_bytes(p);
    for (const ProfileEntry& e : profiled.entries)
      if (e.executor == pt.executor && t_end > t0) {
        cfg.overhead_ns.push_back(std::max(0.0, e.median_ms * 1e6 - static_cast<double>(t_end - t0)));
        cfg.fill_bytes.push_back(filled);
      }
  }
}

Calibration fit(const CalibrationSamples& s, double l2_bytes) {
  Calibration c;
  c.device = s.device;
  c.l2_bytes = l2_bytes;
  c.per_row = s.per_row;
  c.samples = s;
  for (const auto& [key, points] : s.bodies)
    c.bodies[key] = fit_body(points, l2_bytes);
  for (const auto& [key, k] : s.configs) {
    ConfigCost& cost = c.configs[key];
    cost = {
        0.0, median(k.dispatch_ns), median(k.signal_ns), median(k.hop_ns), median(k.barrier_ns), k.overhead_ns.size()};
    fit_overhead(k, cost);
  }
  return c;
}

std::vector<Graph> calibration_graphs() {
  std::vector<Graph> graphs;
  // Whole-view ops from latency-bound to bandwidth-bound tiles, at more sizes than a body has cost terms.
  for (std::int64_t n : {std::int64_t{1} << 18, std::int64_t{3} << 19, std::int64_t{1} << 22, std::int64_t{3} << 22,
                         std::int64_t{1} << 25}) {
    Graph g(fmt::format("calibrate-vector-{}", n));
    g.add_buffer("x", DType::f32, {n}, InitUniform{-1, 1, 3});
    g.add_buffer("k", DType::i32, {n}, InitUniform{-1, 200, 4});
    g.add_buffer("sum", DType::f32, {1});
    g.add_buffer("pre", DType::f32, {n});
    g.add_buffer("act", DType::f32, {n});
    g.add_buffer("counts", DType::i32, {200});
    g.add_buffer("offsets", DType::i32, {200});
    g.add_buffer("order", DType::i32, {n});
    g.add_buffer("kept", DType::f32, {n});
    g.add_buffer("n_kept", DType::i32, {1});
    g.reduce("sum", "x", "sum", ReduceFn::sum);
    g.scan("scan", "x", "pre", ScanFn::sum);
    g.map("act", "x", "act", MapFn::tanh);
    g.histogram("count", "k", "counts");
    g.scan("offsets", "counts", "offsets", ScanFn::sum, true);
    g.scatter("group", "k", "offsets", "order");
    g.select("keep", "x", "kept", "n_kept", CmpFn::gt, 0.0);
    // Whole-view consumers of a produced buffer (they poll it in sentinel mode).
    g.add_buffer("act_sum", DType::f32, {1});
    g.add_buffer("act_pre", DType::f32, {n});
    g.reduce("act_sum", "act", "act_sum", ReduceFn::sum);
    g.scan("act_scan", "act", "act_pre", ScanFn::sum);
    graphs.push_back(std::move(g));
  }
  // Row ops over short and long rows, chained so hand-offs and barriers are exercised: in the L2 cache (1-12 MB
  // buffers; narrow rows take many passes a tile, long rows one row to eight), and streamed from DRAM (96 MB buffers;
  // short and long rows, each at two widths, so the row passes per byte vary beyond the L2 as within it).
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{49152, 32},
                                   {8192, 128},
                                   {4096, 256},
                                   {2048, 512},
                                   {2048, 768},
                                   {200, 1280},
                                   {2048, 1536},
                                   {512, 3072},
                                   {64, 16384},
                                   {98304, 256},
                                   {32768, 768},
                                   {6144, 4096},
                                   {2048, 12288}}) {
    Graph g(fmt::format("calibrate-rows-{}x{}", rows, cols));
    g.add_buffer("m", DType::f32, {rows, cols}, InitUniform{-3, 3, 5});
    g.add_buffer("p", DType::f32, {rows, cols});
    g.add_buffer("c", DType::f32, {rows, cols});
    g.add_buffer("r", DType::f32, {rows});
    g.softmax("softmax", "m", "p");
    g.scan("cumulative", "p", "c", ScanFn::sum, false, Axis::row);
    g.reduce("row_max", "c", "r", ReduceFn::max, Axis::row);
    g.add_buffer("q", DType::f32, {rows, cols});
    g.softmax("softmax_c", "c", "q"); // a softmax of a produced buffer (polled in sentinel mode)
    graphs.push_back(std::move(g));
  }
  // Chains of small row ops, one buffer per op: alone (the lean megakernel's programs on the GPU), with a whole-view
  // sum of every few links (lean partial tiles, still the lean megakernel), and beside a whole-view argmax with a
  // row reduce at the end (the same lean row tiles on the general megakernel).
  enum class Beside { nothing, sums, general };
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{40, 1024}, {128, 256}})
    for (Beside beside : {Beside::nothing, Beside::sums, Beside::general}) {
      const bool general = beside == Beside::general;
      Graph g(fmt::format("calibrate-row-chain-{}x{}{}", rows, cols,
                          general                  ? "-general"
                          : beside == Beside::sums ? "-sums"
                                                   : ""));
      g.add_buffer("b0", DType::f32, {rows, cols}, InitUniform{-2, 2, 6});
      constexpr int kOps = 24;
      for (int k = 1; k <= kOps; ++k) {
        const std::string in = fmt::format("b{}", k - 1), out = fmt::format("b{}", k);
        g.add_buffer(out, DType::f32, {rows, cols});
        if (k % 2)
          g.softmax(fmt::format("softmax{}", k), in, out);
        else
          g.scan(fmt::format("scan{}", k), in, out, ScanFn::max, false, Axis::row);
        if (beside == Beside::sums && k % 4 == 0) {
          g.add_buffer(fmt::format("sum{}", k), DType::f32, {1});
          g.reduce(fmt::format("sum{}", k), out, fmt::format("sum{}", k), ReduceFn::sum);
        }
      }
      if (general) {
        g.add_buffer("total", DType::i32, {1});
        g.add_buffer("row_sums", DType::f32, {rows});
        g.reduce("total", "b0", "total", ReduceFn::argmax); // not lean partials (an argmax's partial needs its index)
        g.reduce("row_sums", fmt::format("b{}", kOps), "row_sums", ReduceFn::sum, Axis::row);
      }
      graphs.push_back(std::move(g));
    }
  return graphs;
}

Prediction predict(const LoweredProgram& p, bool lean, const Calibration& c) {
  Prediction out;
  const std::string ckey = config_key(p, lean);
  ConfigCost sync;
  if (auto it = c.configs.find(ckey); it != c.configs.end())
    sync = it->second;
  else
    out.uncalibrated.push_back(ckey);
  std::vector<BodyCost> cost(p.tasks.size());
  for (std::uint32_t t = 0; t < p.tasks.size(); ++t) {
    const std::uint32_t threads = p.threads_per_block;
    const std::string key = body_key(p.tasks[t], threads, lean);
    // The body as calibrated on this megakernel, else on the other one (the lean row bodies are the same code on
    // both), else read plainly instead of polled.
    program::TaskDesc plain = p.tasks[t];
    plain.flags &= ~program::kPollInputs;
    auto it = c.bodies.end();
    for (const std::string& k :
         {key, body_key(p.tasks[t], threads, !lean), body_key(plain, threads, lean), body_key(plain, threads, !lean)})
      if (it == c.bodies.end())
        it = c.bodies.find(k);
    if (it == c.bodies.end()) {
      if (std::find(out.uncalibrated.begin(), out.uncalibrated.end(), key) == out.uncalibrated.end())
        out.uncalibrated.push_back(key);
    } else {
      cost[t] = it->second;
    }
  }
  const std::vector<double> share = level_shares(p);
  std::vector<double> dram(p.tasks.size());
  for (std::uint32_t t = 0; t < p.tasks.size(); ++t)
    dram[t] = dram_fraction(task_bytes(p.tasks[t]), c.l2_bytes);
  const auto body = [&](std::uint32_t g) {
    const program::TileDesc& tile = p.tiles[g];
    const BodyCost& b = cost[tile.task];
    const TaskDesc& t = p.tasks[tile.task];
    const double row_term = c.per_row ? tile_rows(t, tile.index) : row_passes(t, tile.index, p.threads_per_block);
    return b.fixed_ns + b.ns_per_row * row_term +
           (b.ns_per_byte + share[g] * (b.ns_per_shared_byte + dram[tile.task] * b.ns_per_dram_byte)) *
               tile_bytes(t, tile.index);
  };
  const Replay with_sync{p, body, sync};
  const Replay free_sync{p, body, ConfigCost{}};
  out.makespan_ns = with_sync.makespan();
  out.elapsed_ms = (sync.overhead_ns + sync.ns_per_fill_byte * fill_bytes(p) + out.makespan_ns) * 1e-6;
  out.sync_ms = std::max(0.0, out.elapsed_ms - free_sync.makespan() * 1e-6);
  return out;
}

Calibration calibrate(const SessionOptions& base, int repeat, const std::function<void(const std::string&)>& progress) {
  CalibrationSamples samples;
  for (const Graph& g : calibration_graphs()) {
    ProfileOptions po;
    po.base = base;
    po.repeat = repeat;
    po.warmup = 2;
    po.baselines = false;
    const ProfileResult r = profile(g, po);
    if (!r.all_checked)
      throw RuntimeError("calibration graph '" + g.name() + "' failed its reference check");
    add_samples(r, base.backend, samples);
    if (progress)
      progress(g.name());
  }
  const bool gpu = base.backend == Backend::gpu;
  Calibration c = fit(samples, gpu ? static_cast<double>(probe_gpu().l2_bytes) : 0.0);
  if (gpu)
    c.gpu = plan_gpu_shape(base.threads_per_block, 0);
  return c;
}

std::vector<PredictionRow> predict_graph(const Graph& g, const SessionOptions& base, const Calibration& c, bool measure,
                                         int repeat) {
  std::optional<ProfileResult> measured;
  if (measure) {
    ProfileOptions po;
    po.base = base;
    po.repeat = repeat;
    po.baselines = false;
    measured = profile(g, po);
  }
  const bool for_calibrated_gpu = !measure && base.backend == Backend::gpu && c.gpu.sm_count > 0;
  const Analysis analysis = for_calibrated_gpu ? analyze(g) : Analysis{}; // plan_run analyzes for itself
  std::vector<PredictionRow> rows;
  for (SyncMode mode : kAllSyncModes)
    for (Schedule schedule : {Schedule::dynamic, Schedule::static_list}) {
      SessionOptions o = base;
      o.mode = mode;
      o.schedule = schedule;
      const LoweredProgram program =
          for_calibrated_gpu ? lower_for_gpu(g, analysis, o, c.gpu, c.device).program : plan_run(g, o).program;
      const bool lean = runs_lean(program, o.backend);
      PredictionRow row{g.name(), config_key(program, lean), predict(program, lean, c)};
      if (measured) {
        const std::string executor = fmt::format("gridflow {} {}", to_string(mode), to_string(schedule));
        for (const ProfileEntry& e : measured->entries)
          if (e.executor == executor)
            row.measured_ms = e.median_ms;
      }
      rows.push_back(std::move(row));
    }
  return rows;
}

} // namespace gridflow
