#!/usr/bin/env bash
# What separates the megakernel's reduce_all from CUB's DeviceReduce (issue 6): the same sum at 2^26 .. 2^29 floats
# (the difference method: the slope between sizes is the steady bandwidth, the intercept the fixed cost of a run),
# gridflow against CUB on the same data (`gridflow profile`, which also times the CUB call), one traced run (where
# the blocks' time went: work, dispatch, idle tail), and Nsight Compute's DRAM counters of both kernels at 2^28
# with the clocks left as they are.
#
#   scripts/reduce-gap.sh BUILD OUTDIR      BUILD: a build directory or a scripts/build-for-device.sh tree
set -uo pipefail
build=${1:?usage: scripts/reduce-gap.sh BUILD OUTDIR}
out=${2:?}
cd "$(dirname "$0")/.."
mkdir -p "$out/graphs"
for k in 26 27 28 29; do
  n=$((1 << k))
  g="$out/graphs/reduce_2e$k.json"
  printf '{"gridflow":1,"name":"reduce-2^%s","buffers":[{"name":"x","dtype":"f32","shape":[%s],"init":{"uniform":{"low":-1,"high":1,"seed":1}}},{"name":"s","dtype":"f32","shape":[1]}],"tasks":[{"name":"sum","op":"reduce","fn":"sum","in":"x","out":"s"}]}\n' "$k" "$n" >"$g"
  for bps in 2 1; do
    echo "==== 2^$k 256x$bps/SM" >>"$out/sizes.log"
    "$build/gridflow" run "$g" --repeat 30 --warmup 5 --blocks-per-sm "$bps" >>"$out/sizes.log" 2>&1
  done
  echo "==== 2^$k profile" >>"$out/profile.log"
  timeout 120 "$build/gridflow" profile "$g" --repeat 20 --out "$out/prof-2e$k" >>"$out/profile.log" 2>&1
  rm -f "$out/prof-2e$k"/timeline-*.svg "$out/prof-2e$k"/trace-*.json
done
"$build/gridflow" run "$out/graphs/reduce_2e28.json" --repeat 5 --report "$out/report-2e28.json" \
  --trace "$out/trace-2e28.json" >"$out/traced.log" 2>&1
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__block_size,launch__registers_per_thread,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct
timeout 120 ncu --clock-control none --kernel-name regex:megakernel --launch-skip 2 --launch-count 1 --metrics "$metrics" \
  "$build/gridflow" run "$out/graphs/reduce_2e28.json" --repeat 2 --warmup 1 >"$out/ncu.log" 2>&1
echo "ncu gridflow rc=$?" >>"$out/ncu.log"
timeout 150 ncu --clock-control none --kernel-name regex:DeviceReduce --launch-skip 2 --launch-count 2 --metrics "$metrics" \
  "$build/gridflow" profile "$out/graphs/reduce_2e28.json" --repeat 2 --warmup 1 --out "$out/prof-ncu" >>"$out/ncu.log" 2>&1
echo "ncu cub rc=$?" >>"$out/ncu.log"
rm -rf "$out/prof-ncu"
