#!/usr/bin/env python3
"""PyTorch baselines on the GPU machine, same shapes as gridflow's benchmarks: torch.sum, torch.cumsum,
torch.softmax at 2^28 floats (bandwidth, bytes read + written) and 512-op dependent chains (softmax / softmax+cumsum
alternating) in eager mode and replayed as a CUDA graph. Median of repetitions after warm-up, CUDA events."""
import argparse
import json
import time

import torch


def median_ms(fn, warmup=3, reps=10):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    out.sort()
    return out[len(out) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rows = []
    n = 1 << (26 if args.quick else 28)
    x = torch.rand(n, device="cuda") * 2 - 1
    for name, fn, nbytes in [("reduce sum f32", lambda: torch.sum(x), 4 * n),
                             ("scan incl sum f32", lambda: torch.cumsum(x, 0), 8 * n)]:
        ms = median_ms(fn)
        rows.append({"op": name, "shape": f"{n}", "impl": "torch", "ms": ms, "tb_per_s": nbytes / ms / 1e9})
    for cols in (1024, 4096, 8192, 32768):
        m = x.view(n // cols, cols)
        ms = median_ms(lambda: torch.softmax(m, dim=1))
        rows.append({"op": "softmax f32", "shape": f"{n // cols}x{cols}", "impl": "torch", "ms": ms,
                     "tb_per_s": 8 * n / ms / 1e9})
    del x
    for kind in ("softmax", "mixed"):
        for r in (16, 256):
            x0 = torch.rand(r, 1024, device="cuda") * 4 - 2

            def chain():
                y = x0
                for i in range(1, 513):
                    y = torch.cumsum(y, dim=1) if kind == "mixed" and i % 2 == 0 else torch.softmax(y, dim=1)
                return y

            eager = median_ms(chain, 2, 5)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                chain()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                chain()
            graph = median_ms(g.replay, 3, 10)
            for impl, ms in (("torch eager", eager), ("torch CUDA graph", graph)):
                rows.append({"chain": kind, "floats": r * 1024, "ops": 512, "executor": impl,
                             "us_per_op": ms * 1e3 / 512, "ms_per_run": ms})
    for row in rows:
        print(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "torch", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                       "gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
