"""apexphys's claims rows, a pure function of the figures step's per-seed metrics.

`summary` (built by `steps.figures`):

- `methods`: {method: {"bwt": per seed, "plasticity_mae": per seed, "final_mae": per seed,
  "final_items": per seed, one score per final test clip whose mean is that seed's final MAE}},
  seeds in the same order for every method (seed i of every method sees the same data and test
  clips, so seeds and clips pair the methods);
- `holds_fixed`: what the seeds keep fixed ("" when each seed draws its own data).

All rows are comparisons in bpm, lower is better, against the continual-learning baseline with the
best mean on that metric (joint training is an upper bound, not a baseline), or against an ablation.
"""

from __future__ import annotations

from neurips26.core import claims

P = "apexphys"
CL_BASELINES = ("finetune", "ewc", "lwf", "replay")
# half a beat per minute: a gain below it is not a better heart-rate monitor
MIN_EFFECT_BPM = 0.5


def claim_rows(summary: dict, scale: str) -> list[dict]:
    methods, fixed = summary["methods"], summary.get("holds_fixed", "")
    baselines = [v for v in CL_BASELINES if v in methods]

    def compare(claim, key, metric, baseline, figure, items=False):
        if "apexphys" not in methods or baseline is None or baseline not in methods:
            missing = "apexphys" if "apexphys" not in methods else (baseline or "a continual-learning baseline")
            return claims.untested(P, claim, metric, "apexphys", f"'{missing}' is not in run_variants", scale, figure)
        kw = ({"method_items": methods["apexphys"]["final_items"], "baseline_items": methods[baseline]["final_items"]}
              if items else {})
        return claims.comparison(P, claim, metric, "apexphys", methods["apexphys"][key], baseline,
                                 methods[baseline][key], False, scale, figure, min_effect=MIN_EFFECT_BPM,
                                 holds_fixed=fixed, **kw)

    def strongest(key):
        return min(baselines, key=lambda v: sum(methods[v][key]) / len(methods[v][key])) if baselines else None

    final = "final MAE averaged over domains (bpm), lower is better"
    rows = [
        compare("ApexPhys forgets less than continual-learning baselines", "bwt",
                "backward transfer: mean MAE increase on earlier domains (bpm), lower is better", strongest("bwt"),
                "r_matrices.png"),
        compare("ApexPhys has the lowest final average MAE among continual methods", "final_mae", final,
                strongest("final_mae"), "avg_mae_per_task.png", items=True),
        compare("ApexPhys adapts robustly to each new domain", "plasticity_mae",
                "mean R[i, i], MAE on the domain just learned (bpm), lower is better", strongest("plasticity_mae"),
                "r_matrices.png"),
    ]
    for part in ("bcrp", "hes", "pgp"):
        rows.append(compare(f"{part.upper()} improves ApexPhys (ablation)", "final_mae", final, f"apexphys_no_{part}",
                            "avg_mae_per_task.png", items=True))
    return rows


def final_items(final_eval: dict) -> list[float]:
    """Per final test clip, its absolute HR error weighted by N / (domains x clips of its domain),
    so that the items' mean is the final MAE averaged over domains even when domains have
    different numbers of test clips."""
    n = sum(len(e["pred_hr"]) for e in final_eval.values())
    out = []
    for e in final_eval.values():
        w = n / (len(final_eval) * len(e["pred_hr"]))
        out += [abs(p - g) * w for p, g in zip(e["pred_hr"], e["gt_hr"])]
    return out
