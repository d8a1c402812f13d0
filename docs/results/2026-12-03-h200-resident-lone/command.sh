set -uo pipefail
mkdir -p $OUT/r
[ -d devtree ] || tar xJf devtree.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/machine.txt
GRIDFLOW_STRESS_RUNS=${STRESS:-5} timeout 240 devtree/tests/gridflow_device_tests --gtest_brief=1 > $OUT/r/gpu-tests.log 2>&1; echo "tests rc=$?"; tail -3 $OUT/r/gpu-tests.log
for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json examples/graphs/moe_routing.json; do
  n=$(basename $g .json); s=20000; [ $n = one_tile ] || s=5000
  timeout 100 stdbuf -oL devtree/gridflow serve-bench $g --submissions $s --json $OUT/r/serve-$n.json > $OUT/r/serve-$n.log 2>&1; echo "serve $n rc=$?"
  grep -E "resident|lean CUDA graph \+ PDL|relaunch" $OUT/r/serve-$n.log | cut -c1-95
done
F='GpuResident.EverySyncMode*:GpuResident.Recovers*:GpuResident.StopDrains*'
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $OUT/r/sanitizers.txt
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 99 devtree/tests/gridflow_device_tests --gtest_filter="$F" --gtest_brief=1 2>&1 | grep -E "PASSED|FAILED|SUMMARY|rror" | head -8 >> $OUT/r/sanitizers.txt
done
cat $OUT/r/sanitizers.txt
tar czf $OUT/results.tgz -C $OUT r
