"""Speed benchmark for acopula: seconds per log-density evaluation against d for acopula
(ours), the Python port of R's nacLL and naive nested autograd, on two-level nested Clayton
copulas (sectors of 7 leaves; two equal sectors for small d), one thread, same process.

    python benchmarks/acopula_bench.py [--rows 1000] [--large-rows 8] [--max-d 2002]

Prints the table, the speedup over the nacLL port at d=35 and the log-log slope of our
time from d=105 to d=2002 (targets of the issue: >= 100x and <= 2.2).
"""

from __future__ import annotations

import argparse

import torch

from neurips26.papers.acopula.steps import loglog_slope, measure_speed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000, help="observations per call for d <= 35")
    ap.add_argument("--large-rows", type=int, default=8, help="observations per call for d > 35")
    ap.add_argument("--max-d", type=int, default=2002)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    large = [d for d in (105, 210, 497, 994, 2002, 4004, 8001) if d <= args.max_d]
    cfg = {"seed": 0, "theta0": 1.0, "sector_size": 7, "naive_dims": [4, 6, 8],
           "nacll_dims": [4, 6, 8, 14, 21, 28, 35], "ours_dims": [4, 6, 8, 14, 21, 28, 35, *large],
           "rows_small": args.rows, "rows_large": args.large_rows, "rows_naive": 20, "repeats": args.repeats}
    print(f"{'d':>6} {'ours [s]':>11} {'nacLL port [s]':>15} {'naive autograd [s]':>19} {'nacLL/ours':>11}")

    def line(d, timing):
        o, n, a = (timing[k].get(str(d)) for k in ("ours", "nacll", "naive"))
        fmt = lambda x: f"{x:.3e}" if x is not None else "-"
        ratio = f"{n / o:.1f}x" if n is not None else "-"
        print(f"{d:>6} {fmt(o):>11} {fmt(n):>15} {fmt(a):>19} {ratio:>11}", flush=True)

    timing, metrics = measure_speed(cfg, line)
    print(f"max |ours - nacLL port| = {metrics['max_abs_diff_vs_nacll']:.2e}, "
          f"max |ours - naive autograd| = {metrics['max_abs_diff_vs_naive']:.2e}")
    speedup = timing["nacll"]["35"] / timing["ours"]["35"]
    print(f"speedup over the nacLL port at d=35: {speedup:.1f}x (target >= 100x: {'met' if speedup >= 100 else 'NOT met'})")
    if large:
        slope = loglog_slope(timing["ours"], 105, max(large))
        print(f"log-log slope of our time, d=105..{max(large)}: {slope:.2f} "
              f"(target <= 2.2: {'met' if slope <= 2.2 else 'NOT met'})")


if __name__ == "__main__":
    main()
