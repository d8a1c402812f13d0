#!/usr/bin/env bash
# Same machine, the tree of 0fcf404 (before the resident change): serve-bench one_tile and attention_rows twice.
out=${1:?}
mkdir -p "$out/r"
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$out/r/machine.txt"
cat devtree/BUILD_INFO >> "$out/r/machine.txt"
for r in 1 2; do
for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json; do
  n=$(basename $g .json); s=20000; [ $n = one_tile ] || s=5000
  timeout 40 stdbuf -oL devtree/gridflow serve-bench $g --submissions $s --json $out/r/serve-$n-$r.json > $out/r/serve-$n-$r.log 2>&1
done
done
for f in $out/r/serve-*.log; do echo "== $f"; grep -E "resident submit|relaunch \(|lean CUDA|throughput|vs |first block to last" $f | cut -c1-100; done
tar czf $out/r.tgz -C $out r && rm -rf $out/r
