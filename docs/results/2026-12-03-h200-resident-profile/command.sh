# The build of commit 514478d with stamps.patch applied (block 0's thread 0 sums clock64 deltas between the stamps
# GF_STAMP(i) and prints their mean per submission at kStop), sm_90, shared runtime; on the H200:
export LD_LIBRARY_PATH=$PWD/devtree/lib:$PWD/devtree/runtime:/usr/local/cuda/lib64
devtree/gridflow serve-bench bench/graphs/one_tile.json --submissions 20000 > prof-one_tile.log
devtree/gridflow serve-bench examples/graphs/attention_rows.json --submissions 5000 > prof-attention_rows.log
