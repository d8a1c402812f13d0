"""gridflow: task graphs of reductions, scans and softmaxes on one persistent cooperative CUDA kernel.

The graph API is the C++ one (``Graph``, ``View``, ``Uniform``, ``Iota``, ``Constant``, ``File``); ``Session`` runs
a graph on the CPU backend or the GPU, over its own buffers or over numpy arrays, torch tensors or any DLPack
producer bound without copies (``Session.bind``), on the caller's CUDA stream (``Session.run_async``). Errors keep
the C++ messages: ``GraphError`` (a ``ValueError``) for bad input, ``GridflowError`` (a ``RuntimeError``) for runtime
failures, ``DeviceError`` (a ``GridflowError``) for what a run recorded (watchdog, corrupt program).

``ResidentSession`` is the resident runtime: ``start()`` launches the megakernel once, ``add(graph)`` uploads a
graph, ``submit(handle, {name: tensor})`` returns a ticket and ``wait(ticket)`` its times. Submissions are not ordered
with the caller's CUDA streams: finish the work that writes a submission's tensors first (for torch,
``torch.cuda.current_stream().synchronize()``).
"""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

from ._gridflow import (  # noqa: F401  (the public names)
    HOST_MEMORY,
    CheckReport,
    Constant,
    DeviceError,
    File,
    Graph,
    GraphError,
    GridflowError,
    Iota,
    ResidentResult,
    ResidentSession,
    RunResult,
    SessionOptions,
    Uniform,
    View,
    __version__,
    graph_from_json,
    load_graph,
    source_commit,
)
from . import _gridflow

__all__ = [
    "HOST_MEMORY", "CheckReport", "Constant", "DeviceError", "File", "Graph", "GraphError", "GridflowError", "Iota",
    "ResidentResult", "ResidentSession", "RunResult", "Session", "SessionOptions", "Uniform", "View", "__version__", "graph_from_json", "load_graph",
    "options", "profile", "source_commit",
]


def options(**kwargs: Any) -> SessionOptions:
    """SessionOptions from keywords: backend ('cpu', 'gpu'), mode ('grid-sync', 'barrier', 'flags', 'sentinel'),
    schedule ('dynamic', 'static', 'auto'), workers, threads, blocks_per_sm, per_tile_deps, forward, timeout
    (seconds), trace, lean_kernel, sentinel_fill ('kernel', 'submit'), max_memory, input_dir, output_dir."""
    o = SessionOptions()
    for key, value in kwargs.items():
        if not hasattr(o, key) or key.startswith("_") or key == "describe":
            raise TypeError(f"options: unknown option '{key}'")
        setattr(o, key, value)
    return o


_raw_stream = None  # torch's raw current-stream accessor, found once


def _current_torch_stream(device: int) -> int:
    """The handle of torch's current CUDA stream on `device` when torch is loaded, else 0 (the legacy default).
    Through torch's raw-stream accessor where it has one: building a torch.cuda.Stream object costs microseconds."""
    global _raw_stream
    if _raw_stream is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return 0
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda d: torch.cuda.current_stream(d).cuda_stream)
    return int(_raw_stream(device))


class Session:
    """One graph bound to a backend: validated and lowered when made (GraphError for bad input).

    ``Session(graph, backend="gpu", mode="flags")`` takes the keywords of ``options()``, or ``options=`` one
    SessionOptions."""

    def __init__(self, graph: Graph, options: Optional[SessionOptions] = None, **kwargs: Any) -> None:
        if options is not None and kwargs:
            raise TypeError("Session: give either options= or keywords, not both")
        self.options = options if options is not None else globals()["options"](**kwargs)
        self.graph = graph
        self._s = _gridflow.Session(graph, self.options)
        self._device = self._s.memory_device if self.options.backend == "gpu" else None

    def describe(self) -> str:
        return self._s.describe()

    def run(self) -> RunResult:
        """Uploads the initial data (outputs poisoned), runs once and downloads every unbound buffer."""
        return self._s.run()

    def check(self) -> CheckReport:
        """The last run() against the float64 references (``bool(report)`` is whether it passed)."""
        return self._s.check()

    def results(self) -> dict:
        """The last run()'s buffers as numpy arrays of their shapes (bound buffers are the caller's own)."""
        return self._s.results()

    def bind(self, name: str, tensor: Any) -> None:
        """Runs buffer `name` on `tensor`'s memory, without copies: a numpy array (CPU backend), a torch tensor or
        any DLPack producer (GPU: CUDA memory of the session's device). Its dtype (float32, int32), shape and device
        must match the buffer and its last dimension be contiguous; rows may be strided. The session keeps a
        reference to it while bound."""
        self._s.bind(name, tensor)

    def unbind(self, name: str) -> None:
        self._s.unbind(name)

    def is_bound(self, name: str) -> bool:
        return self._s.is_bound(name)

    def upload(self, name: str, array: Any) -> None:
        self._s.upload(name, array)

    def download(self, name: str):
        return self._s.download(name)

    def run_async(self, stream: Any = None) -> None:
        """Enqueues one run on `stream` (a torch.cuda.Stream, a raw cudaStream_t as an int, or None: torch's current
        stream when torch is loaded, else the legacy default stream), after the work before it and before the work
        after it. One run at a time: wait() before the next."""
        if stream is None:
            handle = 0 if self._device is None else _current_torch_stream(self._device)
        elif hasattr(stream, "cuda_stream"):
            handle = int(stream.cuda_stream)
        else:
            handle = int(stream)
        self._s.run_async(handle)

    def wait(self) -> RunResult:
        """Waits for the run run_async enqueued; raises its DeviceError or GridflowError."""
        return self._s.wait()

    def trace(self, run: RunResult, title: str = "gridflow") -> dict:
        """A traced run (trace=True) as a Chrome/Perfetto trace."""
        return json.loads(self._s.trace_json(run, title))

    def analysis(self, run: RunResult) -> dict:
        """A traced run's breakdown: busy, waiting and barrier time, the critical path, sync statistics."""
        return json.loads(self._s.analysis_json(run))


def profile(graph: Graph, warmup: int = 3, repeat: int = 10, baselines: bool = True, **kwargs: Any) -> dict:
    """``gridflow profile``: the graph in every sync mode and schedule (and, on the GPU, the per-task launch
    baselines), checked and compared bit for bit, with each configuration's traced breakdown. Returns the report
    (the JSON the CLI writes) with its text table under "table". Keywords: those of ``options()``."""
    return json.loads(_gridflow.profile_json(graph, options(**kwargs), warmup, repeat, baselines))
