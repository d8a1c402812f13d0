#!/usr/bin/env bash
# One call: machine, resources, the GPU suite, every pattern (default), the scan variants, the chains, sanitizers.
out=${1:?}
W=/tmp/gfr/r; rm -rf /tmp/gfr; mkdir -p "$W"
rm -rf devtree && tar xJf devtree.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$W/machine.txt"
cat devtree/BUILD_INFO >> "$W/machine.txt"
cuobjdump --dump-resource-usage devtree/runtime/libgridflow_runtime.so 2>&1 | grep -A1 -E "lean_megakernel|resident_kernel" |
  grep -oE "Function [^ ]+|REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+ LOCAL:[0-9]+" > "$W/res-usage.txt"
t0=$(date +%s)
timeout 320 stdbuf -oL devtree/tests/gridflow_device_tests > "$W/gpu-tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s" >> "$W/gpu-tests.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
timeout 90 stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --json "$W/patterns.json" > "$W/patterns.log" 2>&1
echo "patterns rc=$?" >> "$W/patterns.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
timeout 60 stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --only scan --variants --json "$W/scan-variants.json" > "$W/scan-variants.log" 2>&1
echo "variants rc=$?" >> "$W/scan-variants.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
timeout 70 stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --only dag --variants --json "$W/dag-variants.json" > "$W/dag-variants.log" 2>&1
echo "dag variants rc=$?" >> "$W/dag-variants.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
timeout 80 stdbuf -oL devtree/bench/gridflow_bench_chain --quick --json "$W/chain.json" > "$W/chain.log" 2>&1
echo "chain rc=$?" >> "$W/chain.log"
tar czf "$out/r.tgz" -C /tmp/gfr r
cat "$W/machine.txt"; paste - - < "$W/res-usage.txt" | sed 's/_Z[A-Za-z0-9_]*\(lean_megakernel\|resident_kernel\)[A-Za-z0-9_]*/\1/' | head -12
grep -E "FAILED|PASSED|tests rc" "$W/gpu-tests.log" | tail -8
grep -E "^(softmax|mixed|chain)|x best|us/op|rc=" "$W/chain.log" | head -14
cat "$W/patterns.log"; grep -v "^ *$" "$W/scan-variants.log" | tail -24
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 99 devtree/tests/gridflow_device_tests \
    --gtest_filter='GpuLean.BothKernelsAgreeSmall' > "$W/sanitizer-$tool.log" 2>&1
  echo "$tool rc=$?" | tee -a "$W/sanitizer-$tool.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$W/sanitizer-$tool.log" | tail -3
done
tar czf "$out/r.tgz" -C /tmp/gfr r
