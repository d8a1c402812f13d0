#!/usr/bin/env bash
# The sanitizers on the lean kernels' small agreement test (lean look-back scans and partials among its tasks).
out=${1:?}
rm -rf devtree && tar xJf devtree.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64 PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/machine.txt"; cat devtree/BUILD_INFO >> "$out/machine.txt"
for tool in memcheck racecheck synccheck; do
  timeout 170 compute-sanitizer --tool $tool --error-exitcode 99 devtree/tests/gridflow_device_tests \
    --gtest_filter='GpuLean.BothKernelsAgreeSmall' > "$out/sanitizer-$tool.log" 2>&1
  echo "$tool rc=$?" | tee -a "$out/sanitizer-$tool.log"
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$out/sanitizer-$tool.log" | tail -3
done
