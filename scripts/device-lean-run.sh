#!/usr/bin/env bash
# One device call over a carried tree (scripts/build-for-device.sh, packed as devtree.tar.xz): the chain and pattern
# benchmarks against the lean baselines, the lean megakernel's tile against its bodies alone (probe), the
# bound-memory benchmark, the resident runtime's serve-bench, the ops benchmark's sections named by OPS (default
# histogram,select,map) against CUB, the synchronization microbenchmarks, the GPU tests, the sanitizers and the set-up
# probe, into OUTDIR.
#   scripts/device-lean-run.sh OUTDIR [chain,probe,patterns,bound,serve,ops,sync,tests,deps,sanitize]
# Carry the tree as `devtree` (the run tool's carry) or as devtree.tar.xz. PATTERN_ARGS adds arguments to the
# patterns stage (e.g. "--only dag --variants"), PATTERN_TIMEOUT its limit in seconds (default 200). Output is line-buffered, so a stage cut off by its timeout keeps
# what it printed.
set -uo pipefail
out=${1:?usage: scripts/device-lean-run.sh OUTDIR [stages]}
stages=${2:-deps,chain,patterns,tests}
cd "$(dirname "$0")/.."
mkdir -p "$out"
[ -d devtree ] || tar xJf devtree.tar.xz
export LD_LIBRARY_PATH="$PWD/devtree/lib:$PWD/devtree/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH=/usr/local/cuda/bin:$PATH
has() { [[ ",$stages," == *",$1,"* ]]; }
note() { printf '%-20s %s\n' "$1" "$2" | tee -a "$out/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$out/machine.txt" 2>&1
note build "$(head -1 devtree/BUILD_INFO | cut -c1-12)"
if has deps; then
  t0=$SECONDS
  (source scripts/deps.sh) >"$out/deps.log" 2>&1
  note deps "rc=$? $(grep -m1 '^gridflow:' "$out/deps.log" || echo 'nothing missing') ($((SECONDS - t0)) s)"
fi
if has chain; then
  timeout 200 stdbuf -oL devtree/bench/gridflow_bench_chain --quick --json "$out/chain.json" >"$out/chain.log" 2>&1
  note chain "rc=$?"
fi
if has probe; then
  timeout 100 stdbuf -oL devtree/bench/gridflow_probe_lean_chain >"$out/probe.log" 2>&1
  note probe "rc=$?"
fi
if has patterns; then
  # shellcheck disable=SC2086
  timeout "${PATTERN_TIMEOUT:-200}" stdbuf -oL devtree/bench/gridflow_bench_patterns --quick ${PATTERN_ARGS:-} --json "$out/patterns.json" >"$out/patterns.log" 2>&1
  note patterns "rc=$?"
fi
if has bound; then
  timeout 200 devtree/bench/gridflow_bench_bound --json "$out/bound.json" >"$out/bound.log" 2>&1
  note bound "rc=$?"
fi
if has serve; then
  # Each graph at the default configuration (static lists in flags mode), then with the dynamic schedule and at one
  # block per SM (SERVE_VARIANTS=0: the default only).
  for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json examples/graphs/moe_routing.json; do
    name=$(basename "$g" .json)
    n=20000
    [ "$name" = one_tile ] || n=5000
    variants=("default:" "dynamic:--schedule dynamic" "default-1sm:--blocks-per-sm 1")
    [ "${SERVE_VARIANTS:-1}" = 0 ] && variants=("default:")
    for v in "${variants[@]}"; do
      tag=${v%%:*}
      # shellcheck disable=SC2086
      timeout 100 devtree/gridflow serve-bench "$g" --submissions "$n" ${v#*:} --json "$out/serve-$name-$tag.json" \
        >"$out/serve-$name-$tag.log" 2>&1
      note "serve $name $tag" "rc=$?"
    done
  done
fi
if has ops; then
  timeout 300 devtree/bench/gridflow_bench_ops --only "${OPS:-histogram,select,map}" --json "$out/ops.json" >"$out/ops.log" 2>&1
  note ops "rc=$?"
fi
if has sync; then
  timeout 300 devtree/gridflow bench sync --quick --json "$out/sync.json" --svg "$out/barriers.svg" >"$out/sync.log" 2>&1
  note sync "rc=$?"
fi
if has tests; then
  GRIDFLOW_STRESS_RUNS=${GRIDFLOW_STRESS_RUNS:-20} timeout "${GRIDFLOW_GPU_TEST_TIMEOUT:-300}" \
    stdbuf -oL devtree/tests/gridflow_device_tests --gtest_brief=1 >"$out/gpu-tests.log" 2>&1
  note tests "rc=$? $(grep -E '^\[  (PASSED|FAILED)|tests? from .* ran' "$out/gpu-tests.log" | tr '\n' ' ')"
fi
if has sanitize; then
  GRIDFLOW_PREBUILT=devtree scripts/gpu-check.sh "$out/check" sanitize >/dev/null 2>&1
  cat "$out/check/summary.txt" >>"$out/summary.txt"
fi
cat "$out/summary.txt"
