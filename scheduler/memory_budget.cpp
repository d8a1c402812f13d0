#include "scheduler/memory_budget.hpp"

#include "runtime/checked_math.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <limits>
#include <string_view>
#include <sys/resource.h>
#include <unistd.h>

namespace gridflow {
namespace {

constexpr std::uint64_t kNoLimit = std::numeric_limits<std::uint64_t>::max();

// The first number after `key` in `path` (e.g. "MemAvailable:" in /proc/meminfo, in kB there), or the file's first
// word as a number without a key (memory.max), or nullopt ("max" and the like: no limit). Parsed with from_chars:
// no stream or locale takes part, so a host process whose C++ library state is not ours (Python with torch loaded,
// where stream reads came back empty) reads the same numbers.
std::optional<std::uint64_t> read_number(const std::string& path, const std::string& key = {}) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  std::size_t i = 0;
  const auto next_word = [&]() -> std::string_view {
    while (i < text.size() && is_space(text[i]))
      ++i;
    const std::size_t begin = i;
    while (i < text.size() && !is_space(text[i]))
      ++i;
    return std::string_view(text).substr(begin, i - begin);
  };
  for (std::string_view word = next_word(); !word.empty(); word = next_word()) {
    if (!key.empty() && word != key)
      continue;
    const std::string_view number = key.empty() ? word : next_word();
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
    if (ec != std::errc() || end != number.data() + number.size())
      return std::nullopt;
    return v;
  }
  return std::nullopt;
}

// The cgroup (v2) the process runs in: "/sys/fs/cgroup" + the path after "0::" in /proc/self/cgroup.
std::string cgroup_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0)
      return "/sys/fs/cgroup" + line.substr(3);
  return {};
}

std::uint64_t cgroup_room() {
  const std::string dir = cgroup_dir();
  if (!dir.empty()) {
    const auto max = read_number(dir + "/memory.max");
    const auto cur = read_number(dir + "/memory.current");
    if (max && cur)
      return *max > *cur ? *max - *cur : 0;
  }
  const auto limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes"); // cgroup v1
  const auto usage = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
  if (limit && usage && *limit < (std::uint64_t{1} << 60))
    return *limit > *usage ? *limit - *usage : 0;
  return kNoLimit;
}

std::uint64_t address_space_room() {
  rlimit r{};
  if (::getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
    return kNoLimit;
  const auto pages = read_number("/proc/self/statm"); // first field: mapped pages
  const std::uint64_t mapped = pages ? *pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
  return r.rlim_cur > mapped ? r.rlim_cur - mapped : 0;
}

std::uint64_t program_bytes(const LoweredProgram& p) {
  checked::Sum<std::uint64_t> s;
  s += p.tasks.size() * sizeof(program::TaskDesc);
  s += p.tiles.size() * sizeof(program::TileDesc);
  s += p.deps.size() * sizeof(program::DepDesc);
  s += p.block_tiles.size() * (sizeof(std::uint32_t) + sizeof(program::TileDesc)); // lists and their descriptors
  s += (p.level_begin.size() + p.block_begin.size()) * sizeof(std::uint32_t);
  s += p.buffers.size() * (sizeof(void*) + 2 * sizeof(std::int64_t)); // buffer table, sentinel ranges
  s += p.layout.total;
  return s.ok() ? s.value() : kNoLimit;
}

std::uint64_t trace_bytes(const LoweredProgram& p) {
  return p.tiles.size() * sizeof(program::TileTrace) +
         std::uint64_t{p.grid_blocks} * (p.barriers_per_run + 1) * sizeof(program::BarrierTrace);
}

std::uint64_t buffer_bytes(const Buffer& b) {
  return checked::mul<std::uint64_t>(static_cast<std::uint64_t>(std::max<std::int64_t>(b.elements(), 0)),
                                     dtype_size(b.dtype))
      .value_or(kNoLimit);
}

} // namespace

std::string byte_text(std::uint64_t bytes) {
  if (bytes == kNoLimit)
    return "more than 16 EiB";
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

MemoryNeed memory_needed(const Graph& g, const LoweredProgram& p, const MemoryUse& use) {
  checked::Sum<std::uint64_t> data, check;
  std::uint64_t largest_input = 0;
  std::vector<std::pair<std::string, std::uint64_t>> sizes;
  for (const Buffer& b : g.buffers()) {
    const std::uint64_t bytes = buffer_bytes(b);
    data += bytes;
    // Reference state per element: the value (4), its error scale (8), whether it was written (1).
    check += checked::mul<std::uint64_t>(bytes / dtype_size(b.dtype), 13).value_or(kNoLimit);
    sizes.emplace_back(b.name, bytes);
  }
  for (const program::TaskDesc& t : p.tasks)
    largest_input = std::max(largest_input, static_cast<std::uint64_t>(t.rows) * static_cast<std::uint64_t>(t.cols));
  check += checked::mul<std::uint64_t>(largest_input, 12).value_or(kNoLimit); // one task's gathered input and scales

  MemoryNeed need;
  checked::Sum<std::uint64_t> host, device;
  host += data.ok() ? data.value() : kNoLimit; // initial contents
  host += data.ok() ? data.value() : kNoLimit; // CPU: the run's buffers, also the results; GPU: the results
  if (use.check)
    host += check.ok() ? check.value() : kNoLimit;
  if (use.gpu) {
    device += data.ok() ? data.value() : kNoLimit;
    device += program_bytes(p);
    if (use.trace)
      device += trace_bytes(p);
  } else {
    host += program_bytes(p);
  }
  if (use.trace)
    host += trace_bytes(p);
  need.host_bytes = host.ok() ? host.value() : kNoLimit;
  need.device_bytes = use.gpu ? (device.ok() ? device.value() : kNoLimit) : 0;
  std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  sizes.resize(std::min<std::size_t>(sizes.size(), 3));
  need.largest = std::move(sizes);
  return need;
}

std::uint64_t host_memory_available() {
  std::uint64_t room = kNoLimit;
  if (const auto kb = read_number("/proc/meminfo", "MemAvailable:"))
    room = *kb * 1024;
  else
    room = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return std::min({room, cgroup_room(), address_space_room()});
}

void check_memory_budget(const Graph& g, const MemoryNeed& need, std::uint64_t max_bytes, std::uint64_t host_free,
                         std::uint64_t device_free) {
  auto refuse = [&](const char* where, std::uint64_t needed, std::uint64_t budget, const char* source) {
    std::string largest;
    for (const auto& [name, bytes] : need.largest)
      largest += fmt::format("{}'{}' {}", largest.empty() ? "" : ", ", printable(name), byte_text(bytes));
    throw_graph_error(g.name(), fmt::format("a run needs {} of {} memory, more than the {} {} (largest buffers: {})",
                                            byte_text(needed), where, byte_text(budget), source, largest));
  };
  const std::uint64_t host_budget = max_bytes > 0 ? std::min(max_bytes, host_free) : host_free;
  if (need.host_bytes > host_budget)
    refuse("host", need.host_bytes, host_budget,
           max_bytes > 0 && max_bytes <= host_free ? "--max-memory allows" : "available");
  if (need.device_bytes > 0) {
    const std::uint64_t device_budget = max_bytes > 0 ? std::min(max_bytes, device_free) : device_free;
    if (need.device_bytes > device_budget)
      refuse("device", need.device_bytes, device_budget,
             max_bytes > 0 && max_bytes <= device_free ? "--max-memory allows" : "free on the GPU");
  }
}

} // namespace gridflow
