# Call A: the GPU tests over the carried runtime (devtree-a.tar.xz): the scan stress, the whole suite, the sanitizers.
set -uo pipefail
mkdir -p $OUT/r
rm -rf devtree && tar xJf devtree-a.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/machine.txt
cp devtree/BUILD_INFO $OUT/r/build_info.txt
T=devtree/tests/gridflow_device_tests
GRIDFLOW_STRESS_RUNS=${SCAN_STRESS:-5000} timeout 200 $T --gtest_filter='GpuOps.WholeRangeScansRepeatBitForBitInEveryMode' > $OUT/r/scan-stress.log 2>&1
echo "rc=$?" >> $OUT/r/scan-stress.log
GRIDFLOW_STRESS_RUNS=3 timeout 260 $T --gtest_brief=1 --gtest_filter='*-GpuOps.WholeRangeScansRepeatBitForBitInEveryMode' > $OUT/r/gpu-tests.log 2>&1
echo "rc=$?" >> $OUT/r/gpu-tests.log
F='GpuOps.ZeroLength:GpuOps.StreamedReadsSmall:GpuOps.ShortSoftmaxRowsStagedSmall:GpuOps.MediumSoftmaxRowsSmall:GpuOps.ViewsAndOffsets:GpuBinding.*:GpuResident.EverySyncMode*:GpuResident.LeanTiles*'
for tool in memcheck racecheck synccheck; do
  echo "== $tool" >> $OUT/r/sanitizers.txt
  timeout 80 compute-sanitizer --tool $tool --error-exitcode 99 $T --gtest_filter="$F" --gtest_brief=1 2>&1 | grep -E "PASSED|FAILED|SUMMARY|rror" | head -8 >> $OUT/r/sanitizers.txt
done
tar czf $OUT/results.tgz -C $OUT r
grep -v "^\[ " $OUT/r/scan-stress.log | cut -c1-600 | tail -12; grep -E "FAILED|PASSED|rc=|differ" $OUT/r/gpu-tests.log | cut -c1-300 | tail -8; cat $OUT/r/sanitizers.txt
