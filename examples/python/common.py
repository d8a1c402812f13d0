"""Shared pieces of the Python examples: the repository's graphs, CUDA-event timing, binding every buffer to torch."""

import sys
from pathlib import Path

import gridflow as gf

GRAPHS = Path(__file__).resolve().parents[1] / "graphs"
TORCH_DTYPE = {"f32": "float32", "i32": "int32"}


def median_ms(fn, torch, warmup=10, reps=100):
    """Median milliseconds of `fn()` on the current stream, CUDA events around each call, after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def bound_session(graph, tensors, **options):
    """A GPU session over `tensors` (buffer name -> torch tensor): every buffer bound, nothing copied."""
    session = gf.Session(graph, backend="gpu", **options)
    for name, tensor in tensors.items():
        session.bind(name, tensor)
    return session


def run_on_current_stream(session):
    session.run_async()
    session.wait()


def need_torch_on_a_gpu(script):
    """torch, or the script exits saying what it needs."""
    try:
        import torch
    except ImportError:
        sys.exit(f"{script} needs torch")
    if not torch.cuda.is_available():
        sys.exit(f"{script} needs a CUDA device")
    return torch


def time_side_by_side(session, with_torch, torch):
    """Prints the session, then gridflow's and torch's median per run (CUDA events, median of 100) and the ratio."""
    ms_gridflow = median_ms(lambda: (session.run_async(), session.wait()), torch)
    ms_torch = median_ms(with_torch, torch)
    print(session.describe())
    print(f"gridflow {ms_gridflow * 1e3:.1f} us, torch {ms_torch * 1e3:.1f} us per run (median of 100, CUDA events): "
          f"{ms_torch / ms_gridflow:.2f}x")
