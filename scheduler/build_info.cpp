#include "scheduler/build_info.hpp"

#include "runtime/version.hpp"

namespace gridflow {

nlohmann::json build_info_json() {
  return {{"version", version()}, {"commit", source_commit()}};
}

} // namespace gridflow
