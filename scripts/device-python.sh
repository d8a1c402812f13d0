#!/usr/bin/env bash
# On the GPU machine: the Python package built for its own Python against the carried pyprefix.tar.xz
# (scripts/pack-python-prefix.sh), then the Python tests (CPU and torch), the examples and the overhead benchmark,
# into OUTDIR.
#   scripts/device-python.sh OUTDIR
set -uo pipefail
out=${1:?usage: scripts/device-python.sh OUTDIR}
cd "$(dirname "$0")/.."
mkdir -p "$out"
note() { printf '%-20s %s\n' "$1" "$2" | tee -a "$out/summary.txt"; }
[ -d pyprefix ] || tar xJf pyprefix.tar.xz
export PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
py=$(command -v python3)
# One CUDA runtime in the process, torch's: the carried runtime library links libcudart.so.13 dynamically, and the
# toolkit's copy loaded first would stand in for the newer one torch was built against. (A pip-installed gridflow
# links the CUDA runtime statically and has no such choice to make.)
torch_cudart=$(dirname "$(find "$($py -c 'import site; print(site.getsitepackages()[0])')/nvidia" -name 'libcudart.so.13*' 2>/dev/null | head -1)" 2>/dev/null)
export LD_LIBRARY_PATH="${torch_cudart:+$torch_cudart:}$PWD/pyprefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
note cudart "${torch_cudart:-from the CUDA toolkit}"
note python "$($py --version 2>&1) $($py -c 'import nanobind, torch; print("nanobind", nanobind.__version__, "torch", torch.__version__)' 2>&1)"
build=/tmp/gridflow-python
t0=$SECONDS
# The system compiler where there is one: it links the system's libstdc++, the one torch uses.
compiler=(); [ -x /usr/bin/g++ ] && compiler=(-DCMAKE_CXX_COMPILER=/usr/bin/g++)
cmake -S python -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/pyprefix" "${compiler[@]}" \
  -DPython_EXECUTABLE="$py" -DGRIDFLOW_PYTHON_EXTRA_LIBS="$(ls "$PWD"/pyprefix/lib/libfmt.so* | head -1)" \
  >"$out/configure.log" 2>&1 && cmake --build "$build" -- -v >"$out/build.log" 2>&1
note build "rc=$? ($((SECONDS - t0)) s)"
export PYTHONPATH="$build"
timeout 300 $py -m pytest -q -rs -p no:cacheprovider python/tests >"$out/pytest.log" 2>&1
note pytest "rc=$? $(tail -1 "$out/pytest.log")"
for example in attention_rows moe_routing; do
  timeout 120 $py examples/python/$example.py >"$out/$example.log" 2>&1
  note "$example" "rc=$? $(tail -1 "$out/$example.log")"
done
timeout 200 $py examples/python/sync_cost.py --out "$out/sync_cost.png" >"$out/sync_cost.log" 2>&1
note sync_cost "rc=$? $(tail -1 "$out/sync_cost.log")"
timeout 120 $py bench/python_overhead.py --json "$out/overhead.json" >"$out/overhead.log" 2>&1
note overhead "rc=$? $(tail -1 "$out/overhead.log")"
cat "$out/summary.txt"
