// What made a report: gridflow's version and the commit of its sources (runtime/version.hpp), as the JSON object
// every report, trace and benchmark file carries under "gridflow".
#pragma once

#include <nlohmann/json.hpp>

namespace gridflow {

nlohmann::json build_info_json(); // {"version": "0.1.0", "commit": "0123456789ab"}

} // namespace gridflow
