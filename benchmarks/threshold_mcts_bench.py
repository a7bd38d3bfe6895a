"""Per-round wall time of the threshold_mcts sampling rules against the number of leaves: classical
D-tracking (w* recomputed over all leaves), ratio tracking by tournament trees and by a linear scan
over the children, uniform sampling and LUCB-MCTS, on wide trees (depth 1, up to --max-wide children)
and deep trees (`--branching` children per node, depth 1..--max-depth), Gaussian leaves, one thread.

    python benchmarks/threshold_mcts_bench.py [--max-wide 10000] [--branching 10] [--max-depth 4]
                                              [--rounds 500] [--figure PATH]

Prints the table (microseconds per round), the log-log slope of each rule from the smallest to the
largest tree of each shape, and the share of rounds where the tournament-tree walk picked the leaf of
the linear scan on a from-scratch pass; writes the figure when --figure is given.
"""

from __future__ import annotations

import argparse
import math

from neurips26.papers.threshold_mcts.steps import COLORS, NAMES, TIMING_NAMES, measure_round_times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-wide", type=int, default=10000)
    ap.add_argument("--branching", type=int, default=10)
    ap.add_argument("--max-depth", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--figure", default=None, help="write the per-round time figure (png) here")
    args = ap.parse_args()
    rules = ["ratio", "ratio_scan", "dtracking", "uniform", "lucb"]
    wide = [10 ** e for e in range(1, int(math.log10(args.max_wide)) + 1)]
    cfg = {"algorithms": rules, "wide": wide, "deep": {"branching": args.branching, "depths": list(range(1, args.max_depth + 1))},
           "rounds": args.rounds, "linear_rounds": max(10, args.rounds // 10), "blocks": 5, "repeats": args.repeats,
           "check_rounds": 20, "seed": 0}
    name = lambda rule: TIMING_NAMES.get(rule, NAMES.get(rule, rule))  # noqa: E731
    print(f"{'shape':<6} {'leaves':>8} {'rule':<36} {'us/round':>10}")
    timing, _, agree = measure_round_times(
        cfg, lambda shape, K, rule, s: print(f"{shape:<6} {K:>8} {name(rule):<36} {s * 1e6:>10.2f}", flush=True))
    for shape in ("wide", "deep"):
        ks = sorted(int(k) for k in timing[shape]["ratio"])
        for rule in rules:
            lo, hi = timing[shape][rule][str(ks[0])], timing[shape][rule][str(ks[-1])]
            print(f"{shape}: log-log slope {name(rule):<36} {math.log(hi / lo) / math.log(ks[-1] / ks[0]):.2f}"
                  f"  ({ks[-1]} vs {ks[0]} leaves: x{hi / lo:.1f})")
    print("tournament walk picks the leaf of the linear scan:", {k: f"{v:.3f}" for k, v in agree.items()})
    if args.figure:
        from neurips26.core import plotting

        fig, axes = plotting.figure(ncols=2)
        for i, shape in enumerate(("wide", "deep")):
            ax = axes[0, i]
            ks = sorted(int(k) for k in timing[shape]["ratio"])
            for rule in rules:
                ax.plot(ks, [timing[shape][rule][str(k)] * 1e6 for k in ks], marker="o", label=name(rule), color=COLORS[rule])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("number of leaves (log scale)")
            ax.set_ylabel("wall time per round (microseconds)")
            ax.set_title(f"threshold_mcts: {shape} trees, per-round cost (best of {args.repeats})", fontsize=9)
            ax.legend(fontsize=7)
        plotting.save(fig, args.figure)
        print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
