#!/usr/bin/env python3
"""Writes a dependent-chain graph: `ops` tasks over rows x cols f32, each reading its predecessor's output.
kind "softmax" repeats row softmax; "mixed" alternates softmax and a row scan (sum).
  python3 examples/make_chain_graph.py softmax 16 1024 512 > examples/graphs/softmax_chain_16k.json"""
import json
import sys


def chain(kind, rows, cols, ops):
    buffers = [{"name": "x0", "dtype": "f32", "shape": [rows, cols],
                "init": {"uniform": {"low": -2, "high": 2, "seed": 5}}}]
    tasks = []
    for i in range(1, ops + 1):
        buffers.append({"name": f"x{i}", "dtype": "f32", "shape": [rows, cols]})
        if kind == "mixed" and i % 2 == 0:
            tasks.append({"name": f"op{i}", "op": "scan", "fn": "sum", "axis": "row", "in": f"x{i - 1}", "out": f"x{i}"})
        else:
            tasks.append({"name": f"op{i}", "op": "softmax", "in": f"x{i - 1}", "out": f"x{i}"})
    buffers[-1]["save"] = f"{kind}_chain_out.bin"
    return {"gridflow": 1, "name": f"{kind}-chain-{rows}x{cols}x{ops}", "buffers": buffers, "tasks": tasks}


if __name__ == "__main__":
    kind, rows, cols, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(chain(kind, rows, cols, ops), indent=None, separators=(",", ":")))
