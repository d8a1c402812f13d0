#include "runtime/config.hpp"

namespace gridflow {

std::string_view to_string(SyncMode m) {
  switch (m) {
  case SyncMode::grid_sync:
    return "grid-sync";
  case SyncMode::barrier:
    return "barrier";
  case SyncMode::flags:
    return "flags";
  case SyncMode::sentinel:
    return "sentinel";
  }
  return "?";
}

std::string_view to_string(Schedule s) {
  return s == Schedule::dynamic ? "dynamic" : s == Schedule::static_list ? "static" : "auto";
}
std::string_view to_string(SentinelFill f) {
  return f == SentinelFill::kernel ? "kernel" : "submit";
}

std::optional<SyncMode> parse_sync_mode(std::string_view s) {
  for (SyncMode m : kAllSyncModes)
    if (to_string(m) == s)
      return m;
  return std::nullopt;
}

std::optional<Schedule> parse_schedule(std::string_view s) {
  if (s == "dynamic")
    return Schedule::dynamic;
  if (s == "static")
    return Schedule::static_list;
  if (s == "auto")
    return Schedule::automatic;
  return std::nullopt;
}

std::optional<SentinelFill> parse_sentinel_fill(std::string_view s) {
  if (s == "kernel")
    return SentinelFill::kernel;
  if (s == "submit")
    return SentinelFill::submit;
  return std::nullopt;
}

} // namespace gridflow
