#!/usr/bin/env bash
# The whole GPU check in one call: configure for sm_90, build, run every test (host and GPU), the sanitizers on a
# representative subset, and the benchmarks; logs and JSON go to OUTDIR, a summary table is printed last.
#
#   scripts/gpu-check.sh OUTDIR [STAGES]   STAGES: comma list of build,test,sanitize,examples,bench,chain,ncu,hotspots
#                                          (default: build,test,sanitize,examples,bench; examples runs every example
#                                          program: all sync modes, the baselines, the CUB equivalents; chain profiles
#                                          the softmax chain in every configuration with per-tile phase medians; ncu
#                                          profiles the megakernel on bench/graphs/*.json and the softmax chain with
#                                          Nsight Compute; hotspots samples the stalls per SASS instruction of the chain,
#                                          a 1024-column softmax and a multi-chunk scan (scripts/hotspots.sh) and counts
#                                          the 256-thread megakernel's SASS)
#
# GRIDFLOW_PREBUILT=DIR: use the programs of a tree from scripts/build-for-device.sh (built on a machine without a
# GPU and carried here) instead of building.
#
# Keeps to what the device tool brings back (at most 8 files): summary.txt stays beside results.tar.gz, which holds
# every log, JSON and report.
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUTDIR [build,test,sanitize,bench]}
stages=${2:-build,test,sanitize,examples,bench}
cd "$(dirname "$0")/.."
mkdir -p "$out"
build=${GRIDFLOW_BUILD_DIR:-build-gpu}
# A tree from scripts/build-for-device.sh, built elsewhere: no build here, its libraries first on the search path.
if [ -n "${GRIDFLOW_PREBUILT:-}" ]; then
  build=$GRIDFLOW_PREBUILT
  export LD_LIBRARY_PATH="$PWD/$build/lib:$PWD/$build/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
summary="$out/summary.txt"
: >"$summary"
note() { printf '%-28s %s\n' "$1" "$2" | tee -a "$summary"; }
has() { [[ ",$stages," == *",$1,"* ]]; }
export PATH=/usr/local/cuda/bin:$PATH

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -2; } \
  >"$out/machine.txt" 2>&1
note "gpu" "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

if [ -n "${GRIDFLOW_PREBUILT:-}" ] && ! "$build/tests/gridflow_device_tests" --gtest_list_tests >"$out/prebuilt.log" 2>&1; then
  note "prebuilt" "$build does not run here (prebuilt.log): building instead"
  GRIDFLOW_PREBUILT= build=${GRIDFLOW_BUILD_DIR:-build-gpu}
fi
if [ -n "${GRIDFLOW_PREBUILT:-}" ]; then
  note "build" "prebuilt: $build ($(head -1 "$build/BUILD_INFO" 2>/dev/null | cut -c1-12))"
elif has build || [ ! -x "$build/tests/gridflow_device_tests" ]; then
  t0=$(date +%s)
  if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/build.log" 2>&1 &&
     cmake --build "$build" --parallel "$(nproc)" >>"$out/build.log" 2>&1; then
    note "build" "ok ($(( $(date +%s) - t0 )) s)"
    cp "$build/.ninja_log" "$out/ninja_log.txt" 2>/dev/null # per-target build times
  else
    note "build" "FAILED (see build.log)"; tail -30 "$out/build.log"; exit 1
  fi
fi

if has test; then
  if [ -n "${GRIDFLOW_PREBUILT:-}" ]; then # they name the build machine's paths (the CLI, the sources)
    note "host tests" "not run: prebuilt tree (the build machine and CI run them)"
  else
    "$build/tests/gridflow_host_tests" --gtest_brief=1 >"$out/tests.log" 2>&1
    note "host tests" "$(grep -E '^\[  (PASSED|FAILED)' "$out/tests.log" | tr '\n' ' ')"
  fi
  GRIDFLOW_STRESS_RUNS=${GRIDFLOW_STRESS_RUNS:-250} \
  timeout "${GRIDFLOW_GPU_TEST_TIMEOUT:-420}" "$build/tests/gridflow_device_tests" --gtest_output=json:"$out/gpu-tests.json" >>"$out/tests.log" 2>&1
  rc=$?
  note "gpu tests" "rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED)|tests? from .* ran' "$out/tests.log" | tail -3 | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure|error' "$out/tests.log" | head -20
fi

if has sanitize; then
  san="$out/sanitizer.log"
  : >"$san"
  filter='GpuOps.ZeroLength:GpuOps.CountingOpsSmall:GpuOps.StreamedReadsSmall:GpuOps.ShortSoftmaxRowsSmall:GpuOps.ShortSoftmaxRowsStagedSmall:GpuOps.MediumSoftmaxRowsSmall:GpuOps.ViewsAndOffsets:GpuOps.StaticScheduleMatchesDynamic:Graphs/GpuRandomDag.*/n100_seed3:GpuRuntime.TracesAreCompleteAndMonotone:GpuLean.BothKernelsAgreeSmall:GpuLean.RowChainsRunOnTheLeanKernelWithForwarding:GpuBinding.*:GpuResident.EverySyncMode*:GpuResident.LeanTiles*:GpuResident.Recovers*:GpuResident.StopDrains*'
  for tool in memcheck racecheck synccheck; do
    timeout "${GRIDFLOW_SANITIZER_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 99 "$build/tests/gridflow_device_tests" \
      --gtest_filter="$filter" >>"$san" 2>&1
    note "sanitizer $tool" "rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$san" | tail -1)"
  done
fi

if has examples; then
  for e in "$build"/examples/example_*; do
    [ -x "$e" ] || continue
    echo "==== $(basename "$e")" >>"$out/examples.log"
    timeout 240 "$e" >>"$out/examples.log" 2>&1
    note "$(basename "$e")" "rc=$?"
  done
fi

if has bench; then
  for b in "$build"/bench/gridflow_bench_*; do
    [ -x "$b" ] || continue
    [[ ",${GRIDFLOW_BENCH_SKIP:-}," == *",$(basename "$b"),"* ]] && continue
    name=$(basename "$b")
    timeout 300 "$b" --json "$out/$name.json" >>"$out/bench.log" 2>&1
    note "$name" "rc=$?"
  done
  if [[ ",${GRIDFLOW_BENCH_SKIP:-}," != *",torch,"* ]]; then
    timeout 240 python3 bench/torch_baselines.py --json "$out/torch.json" >>"$out/bench.log" 2>&1
    note "torch baselines" "rc=$?"
  fi
fi

if has ncu; then
  ncu_log="$out/ncu.log"
  : >"$ncu_log"
  sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
  for g in bench/graphs/*.json examples/graphs/softmax_chain_16k.json; do # the last: what bounds a chain's tile body
    echo "==== $g" >>"$ncu_log"
    # shellcheck disable=SC2086
    timeout 240 ncu --kernel-name regex:megakernel --launch-count 1 $sections "$build/gridflow" run "$g" >>"$ncu_log" 2>&1
    note "ncu $(basename "$g" .json)" "rc=$?"
  done
fi

if has chain; then
  # The softmax chain in every configuration, traced: what each tile phase costs (the profile's per-tile medians).
  prof="$out/prof-softmax-chain"
  timeout 180 "$build/gridflow" profile examples/graphs/softmax_chain_16k.json --out "$prof" --no-baselines \
    >"$out/profile-softmax-chain.log" 2>&1
  note "profile softmax chain" "rc=$?"
  rm -f "$prof"/timeline-*.svg "$prof"/trace-*.json
  cat "$out/profile-softmax-chain.log"
fi

if has hotspots; then
  # Where the chain's one-row tile body spends its time (flags, static schedule: no waits left on the chain's path),
  # then a large softmax of 1024-column rows and a multi-chunk scan: warp-stall samples per SASS instruction.
  note "hotspots chain" "$(scripts/hotspots.sh "$build" "$out" chain-hotspots examples/graphs/softmax_chain_16k.json \
    --mode flags --schedule static)"
  note "hotspots softmax 1024" "$(scripts/hotspots.sh "$build" "$out" softmax1024-hotspots bench/graphs/softmax_65536x1024.json)"
  note "hotspots scan" "$(scripts/hotspots.sh "$build" "$out" scan-hotspots bench/graphs/scan_2e26.json)"
  kernels=$build/gridflow
  [ -f "$build/runtime/libgridflow_runtime.so" ] && kernels=$build/runtime/libgridflow_runtime.so
  note "sass megakernel<256>" "$(cuobjdump -sass "$kernels" 2>/dev/null |
    awk '/Function : /{p = ($0 ~ /megakernelILi256E/)} p' | grep -cE '/\*[0-9a-f]+\*/') instructions"
fi

# Everything but the summary into one archive (the device tool returns at most 8 files).
(cd "$out" && tar czf results.tar.gz --exclude=results.tar.gz --exclude=summary.txt -- * &&
  find . -type f ! -name results.tar.gz ! -name summary.txt -delete)

echo "---- summary"
cat "$summary"
