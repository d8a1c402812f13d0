# The final call, in two parts on one warm machine, over a tree built here (no GPU) with
#   cmake -S . -B build-dev90r -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real -DGRIDFLOW_SHARED_RUNTIME=ON
#   cmake --build build-dev90r --target gridflow gridflow_device_tests
# packed as devtree-a.tar.xz (runtime library, GPU tests, fmt) and devtree-b.tar.xz (the CLI): STAGE=tests, then
# STAGE=serve. The earlier calls (command-variants.sh) built on the GPU machine (-DCMAKE_CUDA_ARCHITECTURES=90-real).
set -uo pipefail
mkdir -p $OUT/r
[ -f devtree-a.tar.xz ] && tar xJf devtree-a.tar.xz
[ -f devtree-b.tar.xz ] && tar xJf devtree-b.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/r/machine.txt
cp devtree/BUILD_INFO $OUT/r/build_info.txt
if [ "${STAGE:-tests}" = tests ]; then
  cuobjdump -res-usage devtree/runtime/libgridflow_runtime.so 2>/dev/null | grep -A1 -E "resident_kernel|lean_megakernel" | grep -E "Function|REG" | cut -c1-160 > $OUT/r/res-usage.txt
  GRIDFLOW_STRESS_RUNS=${STRESS:-3} timeout 260 devtree/tests/gridflow_device_tests --gtest_brief=1 > $OUT/r/gpu-tests.log 2>&1
  F='GpuResident.EverySyncMode*:GpuResident.LeanTiles*:GpuResident.Recovers*:GpuResident.StopDrains*'
  for tool in memcheck racecheck synccheck; do
    echo "== $tool" >> $OUT/r/sanitizers.txt
    timeout 70 compute-sanitizer --tool $tool --error-exitcode 99 devtree/tests/gridflow_device_tests --gtest_filter="$F" --gtest_brief=1 2>&1 | grep -E "PASSED|FAILED|SUMMARY|rror" | head -8 >> $OUT/r/sanitizers.txt
  done
else
  for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json examples/graphs/moe_routing.json; do
    n=$(basename $g .json); s=20000; [ $n = one_tile ] || s=5000
    timeout 60 stdbuf -oL devtree-cli/gridflow serve-bench $g --submissions $s --json $OUT/r/serve-$n.json > $OUT/r/serve-$n.log 2>&1
  done
fi
tar czf $OUT/results.tgz -C $OUT r
# Then, once more on the same machine: devtree/tests/gridflow_device_tests --gtest_filter=GpuOps.VectorTwoToThe26
# (passed; it had failed once in STAGE=tests: gpu-tests.log).
