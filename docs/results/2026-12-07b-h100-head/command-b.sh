#!/usr/bin/env bash
# The second call on the same warm machine: the whole GPU suite, then serve-bench on the three resident graphs.
mkdir -p $OUT/r; export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
t0=$(date +%s); timeout 300 stdbuf -oL devtree/tests/gridflow_device_tests > $OUT/r/gpu-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s" >> $OUT/r/gpu-tests.log
for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json examples/graphs/moe_routing.json; do
  n=$(basename $g .json); s=20000; [ $n = one_tile ] || s=3000
  timeout 60 devtree/gridflow serve-bench $g --submissions $s --json $OUT/r/serve-$n.json > $OUT/r/serve-$n.log 2>&1
done
tar czf $OUT/r2.tgz -C $OUT r && rm -rf $OUT/r
