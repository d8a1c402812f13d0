set -uo pipefail
mkdir -p $OUT/r
export PATH=/usr/local/cuda/bin:$PATH
B=build-gpu
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/machine.txt
{ git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null | grep -v '^??'; } > $OUT/r/build_info.txt
if [ "${STAGE:-1}" = 1 ]; then
  t0=$(date +%s)
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real > $OUT/r/build.log 2>&1 &&
  cmake --build $B --parallel 16 --target gridflow gridflow_device_tests >> $OUT/r/build.log 2>&1
  echo "build rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $OUT/r/build.log
  cuobjdump -res-usage $B/gridflow 2>/dev/null | grep -A1 -E "resident_kernel|lean_megakernel" | grep -E "Function|REG" | cut -c1-160 | head -12 > $OUT/r/res-usage.txt
  cat $OUT/r/res-usage.txt | grep -o "REG:[0-9]*.*STACK:[0-9]*" | head -6
  timeout 90 $B/tests/gridflow_device_tests --gtest_brief=1 --gtest_filter='GpuResident.*:GpuLean.*' > $OUT/r/gpu-resident-tests.log 2>&1; echo "resident tests rc=$?"; tail -3 $OUT/r/gpu-resident-tests.log; grep -B2 -A12 "Failure" $OUT/r/gpu-resident-tests.log | head -50
  for fp in 0 400 700 1000 1300; do
    timeout 60 stdbuf -oL $B/gridflow serve-bench bench/graphs/one_tile.json --submissions 20000 --first-poll-ns $fp --json $OUT/r/serve-one_tile-fp$fp.json > $OUT/r/serve-one_tile-fp$fp.log 2>&1; echo "serve one_tile first-poll $fp rc=$?"
    grep -E "resident|lean CUDA graph \+ PDL|relaunch" $OUT/r/serve-one_tile-fp$fp.log | cut -c1-100
  done
  for g in examples/graphs/attention_rows.json examples/graphs/moe_routing.json; do
    n=$(basename $g .json)
    timeout 100 stdbuf -oL $B/gridflow serve-bench $g --submissions 5000 --first-poll-ns ${FP:-0} --json $OUT/r/serve-$n.json > $OUT/r/serve-$n.log 2>&1; echo "serve $n rc=$?"
    grep -E "resident|lean CUDA graph \+ PDL|relaunch" $OUT/r/serve-$n.log | cut -c1-100
  done
else
  GRIDFLOW_STRESS_RUNS=${STRESS:-5} timeout 280 $B/tests/gridflow_device_tests --gtest_brief=1 > $OUT/r/gpu-tests.log 2>&1; echo "tests rc=$?"; tail -3 $OUT/r/gpu-tests.log; grep -B2 -A12 "Failure" $OUT/r/gpu-tests.log | head -50
  F='GpuResident.EverySyncMode*:GpuResident.LeanTiles*:GpuResident.Recovers*:GpuResident.StopDrains*'
  for tool in memcheck racecheck synccheck; do
    echo "== $tool" >> $OUT/r/sanitizers.txt
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 99 $B/tests/gridflow_device_tests --gtest_filter="$F" --gtest_brief=1 2>&1 | grep -E "PASSED|FAILED|SUMMARY|rror" | head -8 >> $OUT/r/sanitizers.txt
  done
  cat $OUT/r/sanitizers.txt
fi
tar czf $OUT/results.tgz -C $OUT r
