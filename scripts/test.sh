#!/usr/bin/env bash
# The test command: builds, then runs every test. GPU tests skip themselves (visibly) without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir "${GRIDFLOW_BUILD_DIR:-build}" --output-on-failure "$@"
