// gridflow's version (the CMake project version) and the commit of the sources it was built from (git's short hash,
// "-dirty" with uncommitted changes, "unknown" outside a git checkout), both fixed at build time.
#pragma once

namespace gridflow {

const char* version();
const char* source_commit();

} // namespace gridflow
