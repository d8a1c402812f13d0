#!/usr/bin/env bash
# Call A: the full bench sync of the study (barrier table, flat vs checked each poll, cg, same run), the watchdog
# A/B on the random DAGs (default every 16 polls against every poll), then the GPU tests most touched by waits.
out=${1:?}
mkdir -p "$out/study"
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$out/machine.txt"
cat devtree/BUILD_INFO >> "$out/machine.txt"
t0=$(date +%s)
timeout 300 devtree/gridflow bench sync --json "$out/study/sync.json" > "$out/study/sync.log" 2>&1
echo "sync rc=$? $(( $(date +%s) - t0 )) s" >> "$out/study/sync.log"
for g in dag1000_256 dag100_256 dag1000_16 dag100_16; do
  for m in flags barrier; do
    for v in "" "--watchdog-every 1"; do
      echo "== $g $m $v" >> "$out/ab.log"
      timeout 30 devtree/gridflow run scratch/$g.json --backend gpu --mode $m --check --repeat 15 --warmup 3 $v 2>&1 | tail -3 >> "$out/ab.log"
    done
  done
done
for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json; do
  n=$(basename $g .json); s=20000; [ $n = one_tile ] || s=5000
  timeout 40 stdbuf -oL devtree/gridflow serve-bench $g --submissions $s --json $out/serve-$n.json > $out/serve-$n.log 2>&1
done
rest=$(( 560 - ($(date +%s) - t0) )); [ $rest -gt 150 ] && rest=150
timeout $rest stdbuf -oL devtree/tests/gridflow_device_tests --gtest_filter='GpuRuntime.*:GpuLean.*:GpuResident.*:Graphs/GpuRandomDag.*:GpuBinding.*:GpuOps.WholeRangeScansRepeatBitForBitInEveryMode:GpuOps.CountingOpsEdgeSizesEveryMode:GpuOps.VectorTwoToThe26' > "$out/gpu-tests.log" 2>&1
echo "tests rc=$?" >> "$out/gpu-tests.log"
cat "$out/machine.txt"; tail -1 "$out/study/sync.log"; grep -E "^==|median|check" "$out/ab.log" | head -80
grep -B2 -A14 -i "grid barrier" "$out/study/sync.log" | head -60; grep -A5 "hand-off" "$out/study/sync.log" | head -20
grep -A8 "p50" $out/serve-one_tile.log | head -20; grep -A8 "p50" $out/serve-attention_rows.log | head -12
grep -E "^\[  (FAILED|PASSED)|tests ran|rc=" "$out/gpu-tests.log"; grep -c "^\[       OK" "$out/gpu-tests.log"
