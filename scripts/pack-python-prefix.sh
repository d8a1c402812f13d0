#!/usr/bin/env bash
# Packs, on a machine with nvcc but no GPU, what the GPU machine needs to build the Python package for its own Python
# (scripts/device-python.sh): gridflow built with the GPU backend and a shared runtime (the build-for-device tree),
# installed into pyprefix/ (headers, libraries, CMake package), with the libfmt it was linked against, as
# pyprefix.tar.xz.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GRIDFLOW_DEVICE_BUILD_DIR:-build-device}
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DGRIDFLOW_SHARED_RUNTIME=ON >/dev/null
cmake --build "$build" --parallel "$(nproc)" --target gridflow_scheduler gridflow_runtime gridflow
rm -rf pyprefix pyprefix.tar.xz
cmake --install "$build" --prefix pyprefix --component Unspecified >/dev/null
rm -rf pyprefix/bin
ldd "$build/runtime/libgridflow_runtime.so" | awk '/libfmt/ {print $3}' | while read -r lib; do cp -L "$lib" pyprefix/lib/; done
{ git rev-parse HEAD; git status --short | grep -v '^??' || true; } >pyprefix/BUILD_INFO
tar cf - pyprefix | xz -T"$(nproc)" -4 >pyprefix.tar.xz
du -sh pyprefix.tar.xz
