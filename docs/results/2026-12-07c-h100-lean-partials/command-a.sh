#!/usr/bin/env bash
# The lean partial tiles on the GPU: the whole GPU suite, the lean kernels' resources, the chains, then the
# summed-chain pattern with its variants (no lean partials among them) and the other patterns.
out=${1:?}
mkdir -p "$out/r"
rm -rf devtree && tar xJf devtree.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/r/machine.txt"
cat devtree/BUILD_INFO >> "$out/r/machine.txt"
cuobjdump --dump-resource-usage devtree/runtime/libgridflow_runtime.so 2>&1 | grep -A1 -E "lean_megakernel|resident_kernel" |
  grep -oE "Function [^ ]+|REG:[0-9]+ STACK:[0-9]+ SHARED:[0-9]+ LOCAL:[0-9]+" > "$out/r/res-usage.txt"
t0=$(date +%s)
timeout 300 stdbuf -oL devtree/tests/gridflow_device_tests > "$out/r/gpu-tests.log" 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s" >> "$out/r/gpu-tests.log"
timeout 120 stdbuf -oL devtree/bench/gridflow_bench_chain --quick --json "$out/r/chain.json" > "$out/r/chain.log" 2>&1
echo "chain rc=$?" >> "$out/r/chain.log"
cat "$out/r/machine.txt"; paste - - < "$out/r/res-usage.txt" | sed 's/_Z[A-Za-z0-9_]*\(lean_megakernel\|resident_kernel\)[A-Za-z0-9_]*/\1/' | head -12
grep -E "FAILED|PASSED|tests rc" "$out/r/gpu-tests.log" | tail -6
grep -E "^(softmax|mixed|chain)|x best|us/op" "$out/r/chain.log" | head -12
tar czf "$out/r.tgz" -C "$out" r && rm -rf "$out/r"
