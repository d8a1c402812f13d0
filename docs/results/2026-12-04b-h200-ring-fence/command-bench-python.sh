# Call B on the same warm machine: devtree/ is there from call A; devtree-b.tar.xz brings the CLI, the benchmarks and
# the installed package minus the runtime library (pyprefix/, its library linked from devtree/).
set -uo pipefail
mkdir -p $OUT/r
tar xJf devtree-b.tar.xz
[ -d devtree ] || { echo "devtree/ missing: call A did not run on this machine"; exit 3; }
cp devtree/runtime/libgridflow_runtime.so pyprefix/lib/
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
export PATH=/usr/local/cuda/bin:$PATH
t0=$SECONDS
GRIDFLOW_STRESS_RUNS=1250 timeout 170 devtree/tests/gridflow_device_tests --gtest_filter='GpuOps.WholeRangeScansRepeatBitForBitInEveryMode' > $OUT/r/scan-stress.log 2>&1
echo "scan stress (50 runs per mode) rc=$? $((SECONDS - t0)) s" >> $OUT/r/summary.txt
timeout 150 devtree-b/gridflow_bench_ops --only reduce,scan,softmax --json $OUT/r/ops.json > $OUT/r/ops.log 2>&1; echo "ops rc=$?" >> $OUT/r/summary.txt
timeout 100 devtree-b/gridflow_bench_bound --json $OUT/r/bound.json > $OUT/r/bound.log 2>&1; echo "bound rc=$?" >> $OUT/r/summary.txt
for g in bench/graphs/one_tile.json examples/graphs/attention_rows.json; do
  n=$(basename $g .json); s=20000; [ $n = one_tile ] || s=5000
  timeout 60 devtree-b/gridflow serve-bench $g --submissions $s --json $OUT/r/serve-$n.json > $OUT/r/serve-$n.log 2>&1; echo "serve $n rc=$?" >> $OUT/r/summary.txt
done
# The Python package for this machine's Python against pyprefix (as scripts/device-python.sh), its tests, examples
# and the overhead benchmark.
py=$(command -v python3)
torch_cudart=$(dirname "$(find "$($py -c 'import site; print(site.getsitepackages()[0])')/nvidia" -name 'libcudart.so.13*' 2>/dev/null | head -1)" 2>/dev/null)
export LD_LIBRARY_PATH="${torch_cudart:+$torch_cudart:}$PWD/pyprefix/lib:$LD_LIBRARY_PATH"
echo "python $($py --version 2>&1) $($py -c 'import nanobind, torch; print("nanobind", nanobind.__version__, "torch", torch.__version__)' 2>&1)" >> $OUT/r/summary.txt
compiler=(); [ -x /usr/bin/g++ ] && compiler=(-DCMAKE_CXX_COMPILER=/usr/bin/g++)
t0=$SECONDS
cmake -S python -B /tmp/gridflow-python -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PWD/pyprefix" "${compiler[@]}" \
  -DPython_EXECUTABLE="$py" -DGRIDFLOW_PYTHON_EXTRA_LIBS="$(ls "$PWD"/pyprefix/lib/libfmt.so* | head -1)" > $OUT/r/py-configure.log 2>&1 &&
  cmake --build /tmp/gridflow-python > $OUT/r/py-build.log 2>&1
echo "python build rc=$? ($((SECONDS - t0)) s)" >> $OUT/r/summary.txt
export PYTHONPATH=/tmp/gridflow-python PYTHONUNBUFFERED=1
timeout 200 $py -m pytest -q -rs -p no:cacheprovider python/tests > $OUT/r/pytest.log 2>&1; echo "pytest rc=$? $(tail -1 $OUT/r/pytest.log)" >> $OUT/r/summary.txt
for e in attention_rows moe_routing; do
  timeout 90 $py examples/python/$e.py > $OUT/r/py-$e.log 2>&1; echo "$e rc=$? $(tail -1 $OUT/r/py-$e.log)" >> $OUT/r/summary.txt
done
timeout 100 $py bench/python_overhead.py --json $OUT/r/overhead.json > $OUT/r/overhead.log 2>&1; echo "overhead rc=$? $(tail -1 $OUT/r/overhead.log)" >> $OUT/r/summary.txt
tar czf $OUT/results.tgz -C $OUT r
cat $OUT/r/summary.txt; tail -25 $OUT/r/ops.log; grep -iE "bound|x best" $OUT/r/bound.log | tail -8
