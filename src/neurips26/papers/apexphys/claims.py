"""apexphys's claims rows, a pure function of the figures step's per-seed metrics.

`summary` (built by `steps.figures`):

- `methods`: {method: {"bwt": per seed, "plasticity_mae": per seed, "final_mae": per seed,
  "final_items": per seed, one score per final test clip whose mean is that seed's final MAE}},
  seeds in the same order for every method (seed i of every method sees the same data and test
  clips, so seeds and clips pair the methods);
  and, optionally, "final_snr" (per seed, dB), "snr_items" (per seed, per final test clip) and
  "inherited_branches" (per seed, branches PGP actually copied);
- `holds_fixed`: what the seeds keep fixed ("" when each seed draws its own data).

The MAE rows are comparisons in bpm, lower is better, against the continual-learning baseline with
the best mean on that metric (joint training is an upper bound, not a baseline), or against an
ablation; the physiological-consistency row compares the pulse SNR in dB, higher is better. The
PGP row is `untested` when ApexPhys never inherited a branch (PGP never acted).
"""

from __future__ import annotations

from neurips26.core import claims

P = "apexphys"
CL_BASELINES = ("finetune", "ewc", "lwf", "replay")
# half a beat per minute: a gain below it is not a better heart-rate monitor
MIN_EFFECT_BPM = 0.5
# one decibel of pulse SNR: a quarter more power at the heart rate against the rest of the band
MIN_EFFECT_DB = 1.0


def claim_rows(summary: dict, scale: str) -> list[dict]:
    methods, fixed = summary["methods"], summary.get("holds_fixed", "")
    baselines = [v for v in CL_BASELINES if v in methods]

    def compare(claim, key, metric, baseline, figure, items=None, higher=False):
        if "apexphys" not in methods or baseline is None or baseline not in methods:
            missing = "apexphys" if "apexphys" not in methods else (baseline or "a continual-learning baseline")
            return claims.untested(P, claim, metric, "apexphys", f"'{missing}' is not in run_variants", scale, figure)
        if any(key not in methods[v] for v in ("apexphys", baseline)):
            return claims.untested(P, claim, metric, "apexphys", f"no '{key}' in the runs' metrics", scale, figure)
        kw = ({"method_items": methods["apexphys"][items], "baseline_items": methods[baseline][items]}
              if items else {})
        return claims.comparison(P, claim, metric, "apexphys", methods["apexphys"][key], baseline,
                                 methods[baseline][key], higher, scale, figure,
                                 min_effect=MIN_EFFECT_DB if higher else MIN_EFFECT_BPM, holds_fixed=fixed, **kw)

    def strongest(key, higher=False):
        usable = [v for v in baselines if key in methods[v]]
        if not usable:
            return None
        sign = -1 if higher else 1
        return min(usable, key=lambda v: sign * sum(methods[v][key]) / len(methods[v][key]))

    final = "final MAE averaged over domains (bpm), lower is better"
    rows = [
        compare("ApexPhys forgets less than continual-learning baselines", "bwt",
                "backward transfer: mean MAE increase on earlier domains (bpm), lower is better", strongest("bwt"),
                "r_matrices.png"),
        compare("ApexPhys has the lowest final average MAE among continual methods", "final_mae", final,
                strongest("final_mae"), "avg_mae_per_task.png", items="final_items"),
        compare("ApexPhys adapts robustly to each new domain", "plasticity_mae",
                "mean R[i, i], MAE on the domain just learned (bpm), lower is better", strongest("plasticity_mae"),
                "r_matrices.png"),
    ]
    rows.append(compare("ApexPhys keeps the pulse waveform physiologically consistent across domains", "final_snr",
                        "final pulse SNR at the reference heart rate averaged over domains (dB), higher is better",
                        strongest("final_snr", higher=True), "avg_mae_per_task.png", items="snr_items", higher=True))
    for part in ("bcrp", "hes", "pgp"):
        claim = f"{part.upper()} improves ApexPhys (ablation)"
        inherited = methods.get("apexphys", {}).get("inherited_branches")
        if part == "pgp" and inherited is not None and sum(inherited) == 0:
            rows.append(claims.untested(P, claim, final, "apexphys", "no branch was ever inherited in any seed "
                                        "(every new branch's most similar domain had none at that layer), so PGP "
                                        "never acted", scale, "avg_mae_per_task.png"))
            continue
        rows.append(compare(claim, "final_mae", final, f"apexphys_no_{part}", "avg_mae_per_task.png",
                            items="final_items"))
    return rows


def final_items(final_eval: dict, key: str | None = None) -> list[float]:
    """Per final test clip, its absolute HR error (or, with `key`, its value of that per-clip
    metric, e.g. "snr") weighted by N / (domains x clips of its domain), so that the items' mean
    is the metric averaged over domains even when domains have different numbers of test clips."""
    n = sum(len(e["pred_hr"]) for e in final_eval.values())
    out = []
    for e in final_eval.values():
        w = n / (len(final_eval) * len(e["pred_hr"]))
        values = [abs(p - g) for p, g in zip(e["pred_hr"], e["gt_hr"])] if key is None else e[key]
        out += [v * w for v in values]
    return out
