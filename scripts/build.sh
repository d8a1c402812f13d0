#!/usr/bin/env bash
# Configures and builds gridflow into ${GRIDFLOW_BUILD_DIR:-build} (Release, sm_90 by default).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GRIDFLOW_BUILD_DIR:-build}
[ -f "$build/CMakeCache.txt" ] || source scripts/deps.sh # a configured tree found its dependencies already
gen=(); command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release ${GRIDFLOW_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" --parallel "$(nproc)"
