#!/usr/bin/env bash
# Call C: the resident kernel with fewer block barriers on a lone run's path: serve-bench, the resident GPU tests
# (stressed), and memcheck / racecheck / synccheck over them.
out=${1:?}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$out/machine.txt"
cat devtree/BUILD_INFO >> "$out/machine.txt"
cuobjdump -res-usage devtree/runtime/libgridflow_runtime.so 2>/dev/null | grep -A1 -E "resident_kernel" | grep -E "Function|REG" | cut -c1-160 > $out/res-usage.txt
for r in 1 2; do
for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json examples/graphs/moe_routing.json; do
  n=$(basename $g .json); s=20000; [ $n = one_tile ] || s=5000
  timeout 40 stdbuf -oL devtree/gridflow serve-bench $g --submissions $s --json $out/serve-$n-$r.json > $out/serve-$n-$r.log 2>&1
done
done
GRIDFLOW_STRESS_RUNS=5 timeout 100 devtree/tests/gridflow_device_tests --gtest_filter='GpuResident.*' --gtest_brief=1 > $out/gpu-tests.log 2>&1
echo "tests rc=$?" >> $out/gpu-tests.log
F='GpuResident.EverySyncMode*:GpuResident.LeanTiles*:GpuResident.Recovers*:GpuResident.StopDrains*'
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $out/sanitizers.txt
  timeout 70 compute-sanitizer --tool $tool --error-exitcode 99 devtree/tests/gridflow_device_tests --gtest_filter="$F" --gtest_brief=1 2>&1 | grep -E "PASSED|FAILED|SUMMARY|rror" | head -8 >> $out/sanitizers.txt
done
cat $out/machine.txt $out/res-usage.txt
for f in $out/serve-*.log; do echo "== $f"; grep -E "resident submit|relaunch \(|lean CUDA|throughput|vs |first block to last|lean tile" $f | cut -c1-100; done
tail -3 $out/gpu-tests.log; cat $out/sanitizers.txt
