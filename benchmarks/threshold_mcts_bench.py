"""Per-round wall time of the threshold_mcts sampling rules against the number of leaves: classical
D-tracking (w* recomputed over all leaves), the ratio-based tree walk, uniform sampling and LUCB-MCTS,
on complete trees with `--branching` children per node (Gaussian leaves), one thread.

    python benchmarks/threshold_mcts_bench.py [--branching 10] [--max-depth 4] [--rounds 500] [--figure PATH]

Prints the table (microseconds per round), the log-log slope of each rule from the smallest to the
largest tree, and the share of rounds where the tree walk picked the leaf of a from-scratch pass;
writes the figure when --figure is given.
"""

from __future__ import annotations

import argparse
import math

from neurips26.papers.threshold_mcts.steps import NAMES, measure_round_times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--branching", type=int, default=10)
    ap.add_argument("--max-depth", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--figure", default=None, help="write the per-round time figure (png) here")
    args = ap.parse_args()
    rules = ["ratio", "dtracking", "uniform", "lucb"]
    cfg = {"algorithms": rules, "branching": args.branching, "depths": list(range(1, args.max_depth + 1)),
           "rounds": args.rounds, "repeats": args.repeats, "check_rounds": 20, "seed": 0}
    print(f"{'leaves':>8} {'rule':<32} {'us/round':>10}")
    timing, _, agree = measure_round_times(cfg, lambda K, rule, s: print(f"{K:>8} {NAMES[rule]:<32} {s * 1e6:>10.2f}", flush=True))
    ks = sorted(int(k) for k in timing["ratio"])
    for rule in rules:
        lo, hi = timing[rule][str(ks[0])], timing[rule][str(ks[-1])]
        print(f"log-log slope {NAMES[rule]:<32} {math.log(hi / lo) / math.log(ks[-1] / ks[0]):.2f}"
              f"  ({ks[-1]} vs {ks[0]} leaves: x{hi / lo:.1f})")
    print("tree walk picks the leaf of a from-scratch pass:", {k: f"{v:.3f}" for k, v in agree.items()})
    print(f"D-tracking / ratio walk at {ks[-1]} leaves: x{timing['dtracking'][str(ks[-1])] / timing['ratio'][str(ks[-1])]:.1f}")
    if args.figure:
        from neurips26.core import plotting
        from neurips26.papers.threshold_mcts.steps import COLORS

        fig, axes = plotting.figure()
        ax = axes[0, 0]
        for rule in rules:
            ax.plot(ks, [timing[rule][str(k)] * 1e6 for k in ks], marker="o", label=NAMES[rule], color=COLORS[rule])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of leaves (log scale)")
        ax.set_ylabel("wall time per round (microseconds)")
        ax.set_title(f"threshold_mcts: per-round cost, branching {args.branching} (best of {args.repeats})")
        ax.legend()
        plotting.save(fig, args.figure)
        print(f"figure: {args.figure}")


if __name__ == "__main__":
    main()
