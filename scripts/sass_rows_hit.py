#!/usr/bin/env python3
"""Keep the rows of an Nsight Compute source-page CSV (--page source --csv --print-source sass) that were executed or
sampled: the header, then every SASS row whose instruction-executed or warp-stall-sampling count is non-zero.

  scripts/sass_rows_hit.py IN.csv OUT.csv
"""
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main(src, dst):
    with open(src, newline="") as f_in, open(dst, "w", newline="") as f_out:
        rows = csv.reader(f_in)
        out = csv.writer(f_out)
        header = None
        kept = total = 0
        for row in rows:
            if header is None:
                if any("Address" in c or "Source" in c for c in row):
                    header = row
                    counted = [i for i, c in enumerate(row) if "Sampl" in c or "Executed" in c]
                out.writerow(row)  # preamble lines and the header itself
                continue
            total += 1
            if any(i < len(row) and number(row[i]) != 0 for i in counted):
                out.writerow(row)
                kept += 1
    print(f"{kept} of {total} SASS rows executed or sampled")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
