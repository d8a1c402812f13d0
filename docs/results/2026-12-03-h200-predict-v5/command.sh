set -uo pipefail
mkdir -p $OUT/r
[ -d devtree2 ] || tar xJf devtree2.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree2/lib:$PWD/devtree2/runtime:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $OUT/r/machine.txt
start=$(date +%s)
(cd $OUT/r && timeout 520 stdbuf -oL $OLDPWD/devtree2/bench/gridflow_bench_predict --quick --json predict.json > predict.log 2>&1; echo "rc=$?" >> predict.log)
echo "predict took $(( $(date +%s) - start )) s"; tail -3 $OUT/r/predict.log
xz -9 -T0 $OUT/r/calibration.json 2>/dev/null
tar czf $OUT/results.tgz -C $OUT r
