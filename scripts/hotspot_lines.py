#!/usr/bin/env python3
"""Where a kernel's warp-stall samples fall, by source line: joins the SASS rows scripts/hotspots.sh brought back
(Nsight Compute's source page, CSV) with `nvdisasm -g` of the same cubin, which names each SASS offset's (innermost)
source line.

  cuobjdump -xelf all devtree/runtime/libgridflow_runtime.so      # megakernel_t256.sm_90.cubin, ...
  nvdisasm -g -c megakernel_t256.sm_90.cubin > mk256.sass
  scripts/hotspot_lines.py NAME-sass.csv mk256.sass [--top N]

Prints the stall reasons over all samples, then the top source lines by samples (share, instructions executed per
warp-instruction count, the line's main stall reasons), then the top single SASS instructions.
"""
import argparse
import collections
import csv
import re


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    header = rows[head]
    data = [r for r in rows[head + 1:] if r and r[0].startswith("0x")]
    return header, data


def read_lines(listing):
    """offset -> 'file:line' from an nvdisasm -g listing of one cubin (the first function: the megakernel)."""
    where, lines = None, {}
    loc = re.compile(r'//## File "([^"]+)", line (\d+)')
    ins = re.compile(r"/\*([0-9a-f]{4,})\*/")
    started = False
    with open(listing) as f:
        for text in f:
            if text.startswith(".text."):
                if started:
                    break  # only the first function
                started = True
            m = loc.search(text)
            if m:
                path = m.group(1)
                path = path.split("/include/")[-1] if "/cuda" in path else re.sub(r"^.*?/(kernels|runtime)/", r"\1/", path)
                where = f"{path}:{m.group(2)}"
                continue
            m = ins.search(text)
            if m and where:
                lines[int(m.group(1), 16)] = where
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("listing")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    header, data = read_rows(a.csv)
    col = {name: i for i, name in enumerate(header)}
    samples_i = col["Warp Stall Sampling (All Samples)"]
    exec_i = col["Instructions Executed"]
    stall_cols = [(name[len("stall_"):], i) for name, i in col.items() if name.startswith("stall_") and "(Not" not in name]
    base = min(int(r[0], 16) for r in data)
    lines = read_lines(a.listing)
    total = sum(number(r[samples_i]) for r in data) or 1.0
    by_line = collections.defaultdict(lambda: [0.0, 0.0, collections.Counter()])
    reasons = collections.Counter()
    singles = []
    for r in data:
        off = int(r[0], 16) - base
        s = number(r[samples_i])
        where = lines.get(off, "?")
        e = by_line[where]
        e[0] += s
        e[1] += number(r[exec_i])
        for name, i in stall_cols:
            v = number(r[i])
            if v:
                e[2][name] += v
                reasons[name] += v
        singles.append((s, off, r[1].strip(), where))
    print(f"samples {int(total)}; stall reasons: " +
          ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in reasons.most_common(8)))
    print(f"\n{'share':>6} {'samples':>8} {'executed':>10}  line  (main stalls)")
    for where, (s, ex, st) in sorted(by_line.items(), key=lambda kv: -kv[1][0])[:a.top]:
        top = ", ".join(f"{k} {int(v)}" for k, v in st.most_common(3))
        print(f"{100 * s / total:5.1f}% {int(s):8d} {int(ex):10d}  {where}  ({top})")
    print("\nlargest single instructions:")
    for s, off, sass, where in sorted(singles, reverse=True)[:a.top]:
        print(f"  +{off:06x} {int(s):6d}  {sass[:48]:48s} {where}")


if __name__ == "__main__":
    main()
