"""Speed benchmark for acopula: seconds per log-density evaluation against d for acopula
(ours), two Python ports of R's nacLL (one keeping dnac.R's per-element products, one
vectorised over observations) and naive nested autograd, on two-level nested Clayton
copulas (sectors of 7 leaves; two equal sectors for small d), one thread, same process.

    python benchmarks/acopula_bench.py [--rows 1000] [--large-rows 8] [--max-d 2002]

Prints the table, the speedups over both nacLL ports at d=35 and the log-log slope of our
time from d=105 to d=2002 (targets of the issue: >= 100x and <= 2.2).
"""

from __future__ import annotations

import argparse

import torch

from neurips26.papers.acopula.claims import QUADRATIC_BAND
from neurips26.papers.acopula.steps import loglog_slope, measure_speed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000, help="observations per call for d <= 42")
    ap.add_argument("--rows-r", type=int, default=4, help="observations per call of the R-structured nacLL port")
    ap.add_argument("--large-rows", type=int, default=8, help="observations per call for d > 42")
    ap.add_argument("--max-d", type=int, default=2002)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    large = [d for d in (105, 210, 497, 994, 1407, 2002, 2828, 4004, 8001) if d <= args.max_d]
    nacll = [4, 6, 8, 14, 21, 28, 35, 42]
    cfg = {"seed": 0, "theta0": 1.0, "sector_size": 7, "naive_dims": [4, 6, 8],
           "nacll_dims": nacll, "nacll_r_dims": nacll, "ours_dims": [*nacll, *large],
           "rows_small": args.rows, "rows_large": args.large_rows, "rows_naive": 20,
           "rows_nacll_r": args.rows_r, "repeats": args.repeats}
    head = ("ours [s]", "nacLL R-structure [s]", "nacLL vectorised [s]", "naive autograd [s]", "R-str./ours", "vect./ours")
    print(f"{'d':>6} " + " ".join(f"{h:>{max(11, len(h))}}" for h in head))

    def line(d, timing):
        o, r, n, a = (timing[k].get(str(d)) for k in ("ours", "nacll_r", "nacll", "naive"))
        fmt = lambda x: f"{x:.3e}" if x is not None else "-"
        ratio = lambda x: f"{x / o:.1f}x" if x is not None else "-"
        cells = (fmt(o), fmt(r), fmt(n), fmt(a), ratio(r), ratio(n))
        print(f"{d:>6} " + " ".join(f"{c:>{max(11, len(h))}}" for c, h in zip(cells, head)), flush=True)

    timing, metrics = measure_speed(cfg, line)
    print(f"max |ours - nacLL ports| = {metrics['max_abs_diff_vs_nacll']:.2e}, "
          f"max |ours - naive autograd| = {metrics['max_abs_diff_vs_naive']:.2e}")
    for key, name in (("nacll_r", "nacLL port in dnac.R's structure"), ("nacll", "vectorised nacLL port")):
        speedup = timing[key]["35"] / timing["ours"]["35"]
        print(f"speedup over the {name} at d=35: {speedup:.1f}x (target >= 100x: "
              f"{'met' if speedup >= 100 else 'NOT met'})")
    if large:
        slope = loglog_slope(timing["ours"], 994, max(large))
        low, high = QUADRATIC_BAND
        print(f"log-log slope of our time, d=994..{max(large)}: {slope:.2f} "
              f"(band [{low}, {high}]: {'inside' if low <= slope <= high else 'outside'})")


if __name__ == "__main__":
    main()
