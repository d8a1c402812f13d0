"""What the Python layer adds to a run: run_async + wait on an already-bound graph, timed from Python
(time.perf_counter_ns around each round trip) and the same round trip looped in C++ over the same session
(Session.time_cpp_round_trips), in one process. Medians of interleaved batches; the difference is the binding's
cost per run.

    python3 bench/python_overhead.py [--cpu] [--reps N] [--json FILE]
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import gridflow as gf

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--cpu", action="store_true", help="the CPU backend, numpy arrays (no GPU needed)")
parser.add_argument("--reps", type=int, default=2000)
parser.add_argument("--json", default="")
args = parser.parse_args()

# The smallest graph: one task on one tile.
g = gf.Graph("smallest")
g.add_buffer("x", "f32", [256], gf.Uniform(-1, 1, 3))  # the init is unused once bound
g.add_buffer("s", "f32", [1])
g.reduce("sum", "x", "s", fn="sum")
if args.cpu:
    x, s = np.random.default_rng(0).uniform(-1, 1, 256).astype(np.float32), np.zeros(1, np.float32)
    session, stream, where = gf.Session(g, backend="cpu", workers=2), 0, "cpu"
else:
    try:
        import torch
    except ImportError:
        sys.exit("python_overhead.py needs torch on the GPU (or --cpu)")
    if not torch.cuda.is_available():
        sys.exit("python_overhead.py: no CUDA device (use --cpu)")
    x, s = torch.rand(256, device="cuda"), torch.zeros(1, device="cuda")
    session = gf.Session(g, backend="gpu")
    stream, where = torch.cuda.current_stream().cuda_stream, torch.cuda.get_device_name()
session.bind("x", x)
session.bind("s", s)


def python_round_trips(n, explicit_stream):
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        if explicit_stream:
            session.run_async(stream)
        else:
            session.run_async()
        session.wait()
        out.append((time.perf_counter_ns() - t0) * 1e-3)
    return out


py_default, py_explicit, cpp = [], [], []
python_round_trips(100, True)  # warm-up
batch = 200
for _ in range(max(1, args.reps // batch)):
    py_default += python_round_trips(batch, False)
    py_explicit += python_round_trips(batch, True)
    cpp += session._s.time_cpp_round_trips(stream, 0, batch)
med = {k: statistics.median(v) for k, v in
       {"python_default_stream_us": py_default, "python_explicit_stream_us": py_explicit, "cpp_us": cpp}.items()}
med["overhead_default_stream_us"] = med["python_default_stream_us"] - med["cpp_us"]
med["overhead_explicit_stream_us"] = med["python_explicit_stream_us"] - med["cpp_us"]
print(f"python_overhead on {where}, {session.describe()}")
print(f"round trip median of {len(cpp)}: C++ {med['cpp_us']:.2f} us; Python {med['python_explicit_stream_us']:.2f} us "
      f"with a stream handle (+{med['overhead_explicit_stream_us']:.2f}), {med['python_default_stream_us']:.2f} us "
      f"on torch's current stream (+{med['overhead_default_stream_us']:.2f})")
if args.json:
    with open(args.json, "w") as f:
        json.dump({"gridflow": {"version": gf.__version__, "commit": gf.source_commit()}, "device": where,
                   "config": session.describe(), "reps": len(cpp), **med}, f, indent=1)
