#!/usr/bin/env bash
# Call B: the predictor of the study (gridflow_bench_predict --quick), then the figures where matplotlib is.
out=${1:?}
mkdir -p "$out/study"
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$out/machine.txt"
cat devtree/BUILD_INFO >> "$out/machine.txt"
t0=$(date +%s)
(cd "$out/study" && timeout 540 stdbuf -oL "$OLDPWD/devtree/bench/gridflow_bench_predict" --quick --json predict.json > predict.log 2>&1; echo "rc=$?" >> predict.log)
echo "predict took $(( $(date +%s) - t0 )) s"; tail -25 "$out/study/predict.log"
xz -9 -T0 "$out/study/calibration.json" 2>/dev/null; ls -la "$out/study"
