#!/usr/bin/env bash
# The main job: builds, then runs an example pipeline (attention rows: softmax, row statistics, a global reduce)
# with --check,
# on the GPU when one is present, else on the CPU reference backend with a one-line notice.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >&2 # the build's progress on stderr, the run's output on stdout
graph=${1:-examples/graphs/attention_rows.json}
shift || true
exec "${GRIDFLOW_BUILD_DIR:-build}/gridflow" run "$graph" --check --repeat 20 "$@"
