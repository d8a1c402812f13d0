#!/usr/bin/env bash
# One call: machine, resources, the lean GPU tests (the wide-level shape among them), every pattern, the DAG variants
# (2 blocks/SM beside the new default), the chains, memcheck on the wide-level test.
out=${1:?}
W=/tmp/gfr/r; rm -rf /tmp/gfr; mkdir -p "$W"
rm -rf devtree && tar xJf devtree.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$W/machine.txt"
cat devtree/BUILD_INFO >> "$W/machine.txt"
cuobjdump --dump-resource-usage devtree/runtime/libgridflow_runtime.so 2>&1 | grep -A1 -E "lean_megakernel" |
  grep -oE "Function [^ ]+|REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+ LOCAL:[0-9]+" > "$W/res-usage.txt"
tests='GpuLean.*:-GpuLean.BothKernelsAgreeBitForBitInEveryConfiguration'
timeout 90 stdbuf -oL devtree/tests/gridflow_device_tests --gtest_filter="$tests" > "$W/gpu-tests.log" 2>&1
echo "tests rc=$?" >> "$W/gpu-tests.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
timeout 70 stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --json "$W/patterns.json" > "$W/patterns.log" 2>&1
echo "patterns rc=$?" >> "$W/patterns.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
timeout 100 stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --only dag --variants --json "$W/dag-variants.json" > "$W/dag-variants.log" 2>&1
echo "dag variants rc=$?" >> "$W/dag-variants.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
timeout 75 stdbuf -oL devtree/bench/gridflow_bench_chain --quick --json "$W/chain.json" > "$W/chain.log" 2>&1
echo "chain rc=$?" >> "$W/chain.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
cat "$W/machine.txt"; paste - - < "$W/res-usage.txt" | sed 's/_Z[A-Za-z0-9_]*\(lean_megakernel\)[A-Za-z0-9_]*/\1/' | head -12
grep -E "^\[ *(OK|FAILED) |tests rc" "$W/gpu-tests.log" | tail -12
grep -E "=>|rc=" "$W/chain.log" | head -6
cat "$W/patterns.log"; grep -v "^ *$" "$W/dag-variants.log" | grep -E "^random|default|2 blocks|1 block|barrier|graph-order|rc="
# The python-made 1000-op DAG at 256 x 1024 (scratch/dag, carried untracked): timed runs and one traced run's
# breakdown, at the default shape and at 2 blocks per SM.
for bps in 0 2; do
  timeout 25 devtree/gridflow run scratch/dag/dag256_1000.json --backend gpu --warmup 3 --repeat 20 \
    --blocks-per-sm $bps --report /tmp/gfr/dag-report-$bps.json > "$W/dag-run-$bps.log" 2>&1
  echo "rc=$?" >> "$W/dag-run-$bps.log"; cat "$W/dag-run-$bps.log"
done
tar czf "$out/r.tgz" -C /tmp/gfr r
for tool in memcheck; do
  timeout 45 compute-sanitizer --tool $tool --error-exitcode 99 devtree/tests/gridflow_device_tests \
    --gtest_filter='GpuLean.WideRowLevelsRunOnTheLeanRowKernelsBlocksPerSm' > "$W/sanitizer-$tool.log" 2>&1
  echo "$tool rc=$?" | tee -a "$W/sanitizer-$tool.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$W/sanitizer-$tool.log" | tail -3
done
tar czf "$out/r.tgz" -C /tmp/gfr r
