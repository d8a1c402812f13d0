#!/usr/bin/env python3
"""Per-tile phase medians from the Chrome traces that `gridflow profile --out DIR` writes (trace-*.json).

    scripts/tile_phases.py DIR

Phases (docs/ARCHITECTURE.md): claim = claim_begin -> claimed, wait = claimed -> ready, work = ready -> executed,
signal = executed -> signalled, in microseconds. A phase of zero length is not written to the trace, so its count
can be below the tile count (a tile with no dependency skips the wait, a tile nobody awaits skips the signal).
"""
import json
import pathlib
import statistics
import sys


def phases(trace):
    out = {"claim": [], "wait": [], "work": [], "signal": []}
    for e in trace["traceEvents"] if isinstance(trace, dict) else trace:
        if e.get("ph") != "X":
            continue
        cat, name = e.get("cat"), e.get("name")
        key = {"dispatch": name if name in ("claim", "signal") else None, "wait": "wait", "work": "work"}.get(cat)
        if key:
            out[key].append(e["dur"])
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for path in sorted(pathlib.Path(sys.argv[1]).glob("trace-*.json")):
        p = phases(json.loads(path.read_text()))
        cells = "  ".join(f"{k} {statistics.median(v):7.3f} (n={len(v)})" if v else f"{k} -" for k, v in p.items())
        print(f"{path.stem[len('trace-'):]:<32} {cells}")


if __name__ == "__main__":
    main()
