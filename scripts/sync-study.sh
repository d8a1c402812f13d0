#!/usr/bin/env bash
# Regenerates every measurement and figure of docs/SYNC-COST.md on a GPU machine, in one call:
#   scripts/sync-study.sh OUTDIR [quick]
# Uses the binaries of a carried tree when GRIDFLOW_PREBUILT names one (scripts/build-for-device.sh), else of build/.
# Writes OUTDIR/sync.json (gridflow bench sync), OUTDIR/predict.json and OUTDIR/calibration.json
# (gridflow_bench_predict), and OUTDIR/figures/*.svg|png (tools/plot_sync_study.py, when matplotlib is there; else
# run that script on a machine that has it).
set -uo pipefail
out=${1:?usage: scripts/sync-study.sh OUTDIR [quick]}
quick=${2:+--quick}
cd "$(dirname "$0")/.."
tree=${GRIDFLOW_PREBUILT:-build}
if [ -n "${GRIDFLOW_PREBUILT:-}" ]; then
  export LD_LIBRARY_PATH="$PWD/$tree/lib:$PWD/$tree/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
mkdir -p "$out"
# shellcheck disable=SC2086
timeout "${SYNC_TIMEOUT:-300}" "$tree/gridflow" bench sync $quick --json "$out/sync.json" >"$out/sync.log" 2>&1
echo "bench sync: rc=$?"
# shellcheck disable=SC2086
(cd "$out" && timeout "${PREDICT_TIMEOUT:-400}" "$OLDPWD/$tree/bench/gridflow_bench_predict" $quick --json predict.json >predict.log 2>&1)
echo "predictor: rc=$? $(tail -1 "$out/predict.log")"
if python3 -c 'import matplotlib' 2>/dev/null; then
  python3 tools/plot_sync_study.py "$out" "$out/figures" && echo "figures: $out/figures"
else
  echo "figures: no matplotlib here; run tools/plot_sync_study.py $out FIGDIR where it is installed"
fi
