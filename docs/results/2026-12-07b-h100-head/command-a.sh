#!/usr/bin/env bash
# The sync-cost study on HEAD's tree: bench sync --quick (barriers, hand-offs, the doorbell) and the predictor.
out=${1:?}
mkdir -p "$out/r"
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$out/r/machine.txt"
cat devtree/BUILD_INFO >> "$out/r/machine.txt"
t0=$(date +%s)
SYNC_TIMEOUT=100 PREDICT_TIMEOUT=460 GRIDFLOW_PREBUILT=devtree scripts/sync-study.sh "$out/r/study" quick > "$out/r/study.txt" 2>&1
echo "study $(( $(date +%s) - t0 )) s" >> "$out/r/study.txt"
cat "$out/r/machine.txt" "$out/r/study.txt"
grep -A12 "grid barrier, us" "$out/r/study/sync.log" | head -16; grep -A4 -i "doorbell" "$out/r/study/sync.log" | head -8
tail -25 "$out/r/study/predict.log"
tar czf "$out/r.tgz" -C "$out" r && rm -rf "$out/r"
