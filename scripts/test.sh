#!/usr/bin/env bash
# The test command: builds, then runs every test, one ctest entry per test, in parallel (the GPU tests one at a
# time). GPU tests skip themselves (visibly) without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir "${GRIDFLOW_BUILD_DIR:-build}" --output-on-failure --no-tests=error -j "$(nproc)" "$@"
