#!/usr/bin/env python3
"""The figures of docs/SYNC-COST.md, as SVG and PNG, from the JSON the measurements write:

    tools/plot_sync_study.py RESULTS_DIR OUT_DIR

RESULTS_DIR holds sync.json (gridflow bench sync --json) and, when the predictor ran, predict.json
(gridflow_bench_predict --json). Every title says what is shown and where it was measured (GPU, date, command);
axes where sizes double are log2; every point is marked. Needs matplotlib (and nothing else)."""

import json
import sys
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Colour-blind-safe (Okabe-Ito) with distinct markers, so lines stay apart in print too.
STYLES = [("#0072B2", "o"), ("#D55E00", "s"), ("#009E73", "^"), ("#CC79A7", "D"), ("#E69F00", "v"),
          ("#56B4E9", "P"), ("#000000", "X"), ("#F0E442", "*")]


def load(path):
    doc = json.loads(Path(path).read_text())
    rows = doc["rows"] if isinstance(doc, dict) else doc
    where = ", ".join(x for x in (doc.get("gpu", ""), doc.get("date", "")[:10]) if x) if isinstance(doc, dict) else ""
    return rows, where


def save(fig, out, name):
    for ext in ("svg", "png"):
        fig.savefig(out / f"{name}.{ext}", dpi=150, bbox_inches="tight")
    plt.close(fig)


def barriers(rows, where, out):
    kinds = ["cg", "flat", "flat_checked_each_poll", "sm_aggregated", "split2", "split4", "split8"]
    labels = {"cg": "grid.sync() (cooperative groups)", "flat": "gridflow flat",
              "flat_checked_each_poll": "gridflow flat, watchdog checked each poll", "sm_aggregated": "gridflow per-SM",
              "split2": "gridflow split, 2 counters", "split4": "gridflow split, 4 counters",
              "split8": "gridflow split, 8 counters"}
    threads_seen = sorted({r["threads"] for r in rows if r.get("what") == "grid_barrier"})
    fig, axes = plt.subplots(1, len(threads_seen), figsize=(5 * len(threads_seen), 4), sharey=True, squeeze=False)
    for ax, threads in zip(axes[0], threads_seen):
        for (colour, marker), kind in zip(STYLES, kinds):
            pts = sorted((r["blocks_per_sm"], r["us_per_barrier"]) for r in rows
                         if r.get("what") == "grid_barrier" and r["kind"] == kind and r["threads"] == threads)
            if pts:
                ax.plot(*zip(*pts), marker=marker, color=colour, label=labels[kind])
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
        ax.set_xlabel("blocks per SM")
        ax.set_title(f"{threads} threads per block")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("us per grid barrier")
    handles, names = axes[0][0].get_legend_handles_labels()
    # Below the axes' labels: the figure keeps room under the subplots for it.
    fig.subplots_adjust(bottom=0.3)
    fig.legend(handles, names, loc="lower center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Grid barrier cost vs grid shape ({where}; gridflow bench sync)")
    save(fig, out, "barriers")


def cluster_barriers(rows, where, out):
    sel = [r for r in rows if r.get("what") == "cluster_grid_barrier" and r["threads"] == 256]
    if not sel:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for (colour, marker), cluster in zip(STYLES, sorted({r["cluster"] for r in sel})):
        pts = sorted((r["blocks_per_sm"], min(x for x in (r["cluster_first_polls_us"], r["cluster_all_poll_us"])
                                              if x is not None) / r["cg_us"])
                     for r in sel if r["cluster"] == cluster and
                     (r["cluster_first_polls_us"] is not None or r["cluster_all_poll_us"] is not None))
        if pts:
            ax.plot(*zip(*pts), marker=marker, color=colour, label=f"clusters of {cluster}")
    pts = sorted((r["blocks_per_sm"], r["flat_us"] / r["cg_us"]) for r in sel if r["cluster"] == 2)
    ax.plot(*zip(*pts), marker="x", color="#000000", linestyle="--", label="gridflow flat (no clusters)")
    ax.axhline(1.0, color="grey", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    ax.set_xlabel("blocks per SM")
    ax.set_ylabel("time / grid.sync() at the same grid")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"Grid barrier on thread-block clusters, 256 threads ({where}; gridflow bench sync)", fontsize=9)
    save(fig, out, "cluster-barriers")


def handoffs(rows, where, out):
    bars = []
    for r in rows:
        if r.get("what") == "handoff" and r.get("us_per_hop") is not None:
            name = {"flag": "flag (release / acquire)",
                    "flag_checked_each_poll": "flag, watchdog checked each poll",
                    "sentinel": "sentinel (data as flag)",
                    "dsmem": "distributed shared memory"}.get(r["kind"], r["kind"])
            bars.append((f"SM to SM: {name}", r["us_per_hop"]))
        elif r.get("what") == "kernel_chain":
            bars.append((f"kernel to kernel: {r['kind']}", r["us_per_kernel"]))
        elif r.get("what") == "doorbell":
            bars.append(("host to resident kernel: doorbell round trip, p50", r["p50_us"]))
    if not bars:
        return
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(bars) + 1))
    names, values = zip(*bars)
    ax.barh(names, values, color=[STYLES[i % len(STYLES)][0] for i in range(len(bars))])
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:.2f}", va="center", fontsize=8)
    ax.set_xscale("log")
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20) if min(values) / 2 <= t <= max(values) * 2]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("us per hand-off (one way), per dependent kernel, or per host round trip")
    ax.invert_yaxis()
    ax.set_title(f"Hand-off costs ({where}; gridflow bench sync)", fontsize=10)
    save(fig, out, "handoffs")


def predictor(rows, where, out):
    pts = [r for r in rows if "predicted_ms" in r and r.get("measured_ms", -1) > 0]
    if not pts:
        return
    fig, ax = plt.subplots(figsize=(5.5, 5))
    modes = sorted({r["configuration"].split()[0] for r in pts})
    for (colour, marker), mode in zip(STYLES, modes):
        sel = [r for r in pts if r["configuration"].split()[0] == mode]
        ax.scatter([r["measured_ms"] for r in sel], [r["predicted_ms"] for r in sel], color=colour, marker=marker,
                   label=mode, s=18)
    lo = min(min(r["measured_ms"], r["predicted_ms"]) for r in pts) * 0.8
    hi = max(max(r["measured_ms"], r["predicted_ms"]) for r in pts) * 1.25
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=1)
    ax.fill_between([lo, hi], [lo * 0.85, hi * 0.85], [lo * 1.15, hi * 1.15], color="grey", alpha=0.15,
                    label="within 15%")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured ms (median)")
    ax.set_ylabel("predicted ms")
    ax.legend(fontsize=8)
    ax.set_title(f"gridflow predict vs measured ({where}; gridflow_bench_predict)", fontsize=9)
    save(fig, out, "predictor")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    results, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    if (results / "sync.json").exists():
        rows, where = load(results / "sync.json")
        barriers(rows, where, out)
        cluster_barriers(rows, where, out)
        handoffs(rows, where, out)
    if (results / "predict.json").exists():
        rows, where = load(results / "predict.json")
        predictor(rows, where, out)


if __name__ == "__main__":
    main()
