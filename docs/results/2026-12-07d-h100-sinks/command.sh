#!/usr/bin/env bash
# Last-budget call: the GPU suite straight into $OUT (its log returns even if the call is cut), then the summed chain's variants.
out=${1:?}
rm -rf devtree && tar xJf devtree.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; cat devtree/BUILD_INFO; } > "$out/machine.txt"
t0=$(date +%s)
stdbuf -oL devtree/tests/gridflow_device_tests > "$out/gpu-tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s" >> "$out/gpu-tests.log"
stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --only sums --variants > "$out/variants.log" 2>&1
grep -E "FAILED|PASSED|tests rc" "$out/gpu-tests.log" | tail -6; tail -20 "$out/variants.log"
