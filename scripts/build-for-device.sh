#!/usr/bin/env bash
# Builds, on a machine with nvcc but no GPU, the programs scripts/gpu-check.sh runs, and packs them into one small
# tree (default: devtree/, ignored by git) to carry to a GPU machine, so its time goes to tests and measurements
# instead of a build (about 3 minutes on the 16-core H200 machine, most of it the megakernel translation units, each on
# one core):
#
#   scripts/build-for-device.sh [DEVTREE]
#   (GPU machine)  GRIDFLOW_PREBUILT=DEVTREE scripts/gpu-check.sh OUTDIR test,sanitize,bench
#
# The runtime is a shared library (GRIDFLOW_SHARED_RUNTIME), so the megakernels are in the tree once; the
# executables find it through $ORIGIN-relative run paths. The tree also holds the shared libraries the programs need
# beyond glibc and libstdc++ (the CUDA runtime, fmt), and BUILD_INFO names the commit it was built from.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-devtree}
build=${GRIDFLOW_DEVICE_BUILD_DIR:-build-device}
export PATH=/usr/local/cuda/bin:$PATH
targets=(gridflow gridflow_host_tests gridflow_device_tests gridflow_bench_chain gridflow_bench_patterns gridflow_bench_ops
         gridflow_bench_scaling gridflow_bench_bound gridflow_bench_predict gridflow_probe_doorbell gridflow_probe_lean_chain)

# sm_90 machine code only (no PTX) and fatbins compressed for size: the tree is for Hopper cards, and the device
# tool carries at most 64 MiB.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90-real \
  -DCMAKE_CUDA_FLAGS=--compress-mode=size -DGRIDFLOW_SHARED_RUNTIME=ON
cmake --build "$build" --parallel "$(nproc)" --target "${targets[@]}"

rm -rf "$tree"
mkdir -p "$tree/lib" "$tree/runtime" "$tree/tests" "$tree/bench"
cp "$build/gridflow" "$tree/"
cp "$build"/runtime/libgridflow_runtime.so "$tree/runtime/"
cp "$build"/tests/gridflow_host_tests "$build"/tests/gridflow_device_tests "$tree/tests/"
cp "$build"/bench/gridflow_bench_chain "$build"/bench/gridflow_bench_patterns "$build"/bench/gridflow_bench_ops \
  "$build"/bench/gridflow_bench_scaling "$build"/bench/gridflow_bench_bound "$build"/bench/gridflow_bench_predict \
  "$build"/bench/gridflow_probe_doorbell "$build"/bench/gridflow_probe_lean_chain "$tree/bench/"
# Shared libraries beyond glibc, libstdc++ and libgcc (which the GPU machine has) and the runtime itself: the CUDA
# runtime, fmt.
ldd "$tree/gridflow" "$tree/runtime/libgridflow_runtime.so" "$tree/tests/gridflow_device_tests" |
  awk '/=> \// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux|libgridflow_runtime)[.-]' |
  while read -r lib; do cp -L "$lib" "$tree/lib/"; done
# Symbols off the executables (the runtime keeps its dynamic ones): room under the 64 MiB carry.
strip --strip-unneeded "$tree/gridflow" "$tree"/tests/* "$tree"/bench/*
{ git rev-parse HEAD; git status --short | grep -v '^??' || true; } >"$tree/BUILD_INFO"
du -sh "$tree"/* | sort -h
du -sh "$tree"
