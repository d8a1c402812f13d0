#!/usr/bin/env bash
# Same machine: the patterns, default configuration, then the summed chain in every variant.
out=${1:?}
mkdir -p "$out/p"
[ -d devtree ] || tar xJf devtree.tar.xz
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
timeout 250 stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --json "$out/p/patterns.json" > "$out/p/patterns.log" 2>&1
echo "patterns rc=$?" >> "$out/p/patterns.log"
timeout 200 stdbuf -oL devtree/bench/gridflow_bench_patterns --quick --only sums --variants --json "$out/p/sums-variants.json" > "$out/p/sums-variants.log" 2>&1
echo "variants rc=$?" >> "$out/p/sums-variants.log"
cat "$out/p/patterns.log" | tail -30; grep -v "^ *$" "$out/p/sums-variants.log" | tail -30
tar czf "$out/p.tgz" -C "$out" p && rm -rf "$out/p"
