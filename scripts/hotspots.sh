#!/usr/bin/env bash
# Where a graph's megakernel spends its time: Nsight Compute warp-stall samples and executed instructions per SASS
# instruction (one launch after warm-up), plus the kernel's speed-of-light, warp-state and launch sections.
#
#   scripts/hotspots.sh BUILD OUTDIR NAME GRAPH [gridflow run options...]
#
# BUILD: a build directory or a scripts/build-for-device.sh tree (its `gridflow`); writes OUTDIR/NAME.log (the
# sections) and OUTDIR/NAME-sass.csv (only the executed or sampled SASS rows: the whole megakernel is some 400k
# lines). Map the rows' addresses to source lines on any machine with the same binary: nvdisasm -g on the cubin.
set -uo pipefail
build=${1:?usage: scripts/hotspots.sh BUILD OUTDIR NAME GRAPH [run options]}
out=${2:?} name=${3:?} graph=${4:?}
shift 4
cd "$(dirname "$0")/.."
rep="$out/$name"
timeout 300 ncu --kernel-name regex:megakernel --launch-skip 2 --launch-count 1 --import-source yes \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight --section LaunchStats \
  --section MemoryWorkloadAnalysis -o "$rep" \
  "$build/gridflow" run "$graph" --repeat 2 --warmup 1 "$@" >"$rep.log" 2>&1
rc=$?
ncu -i "$rep.ncu-rep" --page details >>"$rep.log" 2>&1
ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$rep-sass-all.csv" 2>&1
kept=$(python3 scripts/sass_rows_hit.py "$rep-sass-all.csv" "$rep-sass.csv")
rm -f "$rep-sass-all.csv" "$rep.ncu-rep"
echo "rc=$rc; $kept"
