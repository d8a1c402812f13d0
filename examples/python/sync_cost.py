"""What synchronization costs, from Python: `gridflow profile` over a graph (every sync mode and schedule, and on
the GPU the per-task launch baselines), then a stacked bar per configuration of where the blocks' time went
(work, dependency waits, barriers, dispatch, idle), plotted with matplotlib.

    python3 examples/python/sync_cost.py [GRAPH.json] [--cpu] [--out sync_cost.png]
"""

import argparse
import sys

import gridflow as gf
from common import GRAPHS

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("graph", nargs="?", default=str(GRAPHS / "softmax_chain_16k.json"))
parser.add_argument("--cpu", action="store_true", help="the CPU backend (no GPU needed)")
parser.add_argument("--out", default="sync_cost.png")
args = parser.parse_args()

graph = gf.load_graph(args.graph)
report = gf.profile(graph, backend="cpu" if args.cpu else "gpu", warmup=2, repeat=10)
print(report["table"])
rows = [e for e in report["entries"] if e.get("breakdown")]
if not rows:
    sys.exit("no traced configuration to plot")
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("the plot needs matplotlib (the table above has the numbers)")

parts = ["work", "wait", "barrier", "dispatch", "idle"]
labels = [e["executor"] for e in rows]
fig, ax = plt.subplots(figsize=(10, 0.5 * len(rows) + 1.5))
left = [0.0] * len(rows)
for part in parts:
    widths = [e["breakdown"][part]["share"] for e in rows]
    ax.barh(labels, widths, left=left, label=part)
    left = [a + b for a, b in zip(left, widths)]
ax.set_xlabel("share of the blocks' time")
ax.set_title(f"{graph.name}: where the time goes")
ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
fig.tight_layout()
fig.savefig(args.out)
print(f"wrote {args.out}")
