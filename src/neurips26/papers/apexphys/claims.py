"""apexphys's claims rows, a pure function of the figures step's per-seed metrics.

`summary` (built by `steps.figures`):

- `methods`: {method: {"bwt": per seed, "plasticity_mae": per seed, "final_mae": per seed,
  "final_items": per seed, one score per final test clip whose mean is that seed's final MAE,
  "first_domain_mae": per seed, R[0, 0], the MAE on the first domain after training on it}},
  seeds in the same order for every method (seed i of every method sees the same data and test
  clips, so seeds and clips pair the methods);
  and, optionally, "final_snr" (per seed, dB), "snr_items" (per seed, per final test clip) and
  "inherited_branches" (per seed, branches PGP actually copied);
- `unsupervised` (optional): {"GREEN" | "CHROM" | "POS": {"final_mae": per seed, on that seed's
  test clips, averaged over domains; "first_domain_mae": per seed, on the first domain's test
  clips}}, the untrained references;
- `holds_fixed`: what the seeds keep fixed ("" when each seed draws its own data).

The rows, margins and controls are declared in `claims.yaml`; this module computes their numbers
and `core.claims.Sheet` decides them. The MAE rows compare in bpm, lower is better, against the
continual-learning baseline named on the validation clips by that metric (`validation`: {variant:
{metric: value}}, the tune step's scores; joint training is an upper bound, not a baseline), or
against an ablation; the physiological-consistency row compares the pulse
SNR in dB, higher is better. Every claim row stands on the regime control
`learned_beats_untrained`: the best continual model (named on the validation clips) must beat the best untrained reference
(GREEN, CHROM or POS), or the test bed does not reward learning in sequence and the rows are
untested. The forgetting, final-MAE and plasticity rows stand instead on `first_domain_learned`:
fine-tuning's model after the first domain must beat the best untrained reference on that
domain's test clips (R[0, 0] against GREEN/CHROM/POS), or there is no learned representation
whose forgetting the rows could measure. The plasticity row compares with the strongest of EWC,
LwF and replay: fine-tuning, which nothing holds back, is the plasticity ceiling by
construction, not a baseline a continual method is claimed to beat. The PGP row is `untested` when ApexPhys never inherited a branch (PGP never acted).
"""

from __future__ import annotations

from neurips26.core import claims, tuning

P = "apexphys"
CL_BASELINES = ("finetune", "ewc", "lwf", "replay")
# the plasticity row's candidates: fine-tuning is the plasticity ceiling by construction
PLASTICITY_BASELINES = ("ewc", "lwf", "replay")
CONTINUAL = (*CL_BASELINES, "apexphys")
UNTRAINED = ("GREEN", "CHROM", "POS")


def _mean(xs):
    return sum(xs) / len(xs)


def choices(summary: dict) -> dict:
    """The names every comparison needs, chosen on the validation clips (summary["validation"]:
    {variant: {"final_mae", "bwt", "plasticity_mae", "final_snr"}}, the tune step's scores on
    seed `tune.seed`'s held-out training clips) before any test number is read: the strongest
    continual-learning baseline per metric, and the best continual model of the regime control.
    {id: (name, tuning record)}; an id without validation scores is left out."""
    methods, val = summary["methods"], summary.get("validation") or {}
    out = {}
    for key, higher in (("bwt", False), ("final_mae", False), ("plasticity_mae", False), ("final_snr", True)):
        candidates = PLASTICITY_BASELINES if key == "plasticity_mae" else CL_BASELINES
        pool = [v for v in candidates if v in methods and key in val.get(v, {})]
        if pool:
            out[key] = tuning.strongest({v: val[v][key] for v in pool}, candidates=pool, maximize=higher,
                                        setting=f"strongest baseline by validation {key}", metric=key,
                                        seed="tune.seed", split="validation clips")
    pool = [v for v in CONTINUAL if v in methods and "final_mae" in val.get(v, {})]
    if pool:
        name, rec = tuning.strongest({v: val[v]["final_mae"] for v in pool}, candidates=pool, maximize=False,
                                     setting="regime control: best continual model", metric="final_mae",
                                     seed="tune.seed", split="validation clips")
        rec.method = "best continual model"
        out["regime"] = (name, rec)
    return out


def _regime_row(sheet: claims.Sheet, summary: dict, chosen: dict) -> None:
    methods, unsup = summary["methods"], summary.get("unsupervised") or {}
    learned = [v for v in CONTINUAL if v in methods]
    refs = [m for m in UNTRAINED if m in unsup]
    if not learned or not refs:
        sheet.untested("learned_beats_untrained", "the run has " + ("no continual model" if not learned
                                                                      else "no untrained reference scored"))
        return
    if "regime" not in chosen:
        sheet.untested("learned_beats_untrained", "no continual model was scored on the validation clips")
        return
    best = chosen["regime"][0]
    ref = min(refs, key=lambda m: _mean(unsup[m]["final_mae"]))
    sheet.comparison("learned_beats_untrained", methods[best]["final_mae"], unsup[ref]["final_mae"],
                     method=best, baseline=f"{ref} (no training)",
                     how=(f"the best of {len(learned)} continual models by final MAE on the validation clips, against "
                          f"the best of {len(refs)} untrained references (they have no knob and see no training "
                          "data), both on the same test clips ("
                          + ", ".join(f"{m} {_mean(unsup[m]['final_mae']):.3g}" for m in refs) + ")"))


def _first_domain_row(sheet: claims.Sheet, summary: dict) -> None:
    """Fine-tuning's R[0, 0] against the best untrained reference on the first domain's test clips
    (the reference with the lowest mean over seeds there), paired by seed."""
    methods, unsup = summary["methods"], summary.get("unsupervised") or {}
    ft = methods.get("finetune", {}).get("first_domain_mae")
    refs = [m for m in UNTRAINED if "first_domain_mae" in unsup.get(m, {})]
    if ft is None or not refs:
        sheet.untested("first_domain_learned", "the run has " + ("no fine-tuning model scored after the first domain"
                                                                 if ft is None else "no untrained reference scored "
                                                                 "on the first domain"))
        return
    ref = min(refs, key=lambda m: _mean(unsup[m]["first_domain_mae"]))
    sheet.comparison("first_domain_learned", ft, unsup[ref]["first_domain_mae"], method="finetune",
                     baseline=f"{ref} (no training)",
                     how=("fine-tuning's model after the first domain (the first task, before any other domain), "
                          f"against the best of {len(refs)} untrained references on that domain's test clips ("
                          + ", ".join(f"{m} {_mean(unsup[m]['first_domain_mae']):.3g}" for m in refs) + ")"))


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    methods, fixed = summary["methods"], summary.get("holds_fixed", "")
    baselines = [v for v in CL_BASELINES if v in methods]
    how = f"replicates hold fixed: {fixed}" if fixed else ""

    chosen = choices(summary)
    records = [tuning.Record.from_json(r) for r in summary.get("tuning", [])]

    def compare(id, key, baseline, items=None):
        if "apexphys" not in methods or baseline is None or baseline not in methods:
            missing = "apexphys" if "apexphys" not in methods else (baseline or "a continual-learning baseline")
            sheet.untested(id, f"'{missing}' is not in run_variants")
            return
        if any(key not in methods[v] for v in ("apexphys", baseline)):
            sheet.untested(id, f"no '{key}' in the runs' metrics")
            return
        kw = ({"method_items": methods["apexphys"][items], "baseline_items": methods[baseline][items]}
              if items else {})
        sheet.comparison(id, methods["apexphys"][key], methods[baseline][key], baseline=baseline, how=how,
                         method_capped=tuning.capped_note(records, "apexphys"),
                         baseline_capped=tuning.capped_note(records, baseline), **kw)

    def strongest(key, higher=False):
        """The continual-learning baseline named on the validation clips by this metric."""
        return chosen[key][0] if key in chosen and key in methods[chosen[key][0]] else None

    _regime_row(sheet, summary, chosen)
    _first_domain_row(sheet, summary)
    compare("forgetting", "bwt", strongest("bwt"))
    compare("final_mae", "final_mae", strongest("final_mae"), items="final_items")
    compare("plasticity", "plasticity_mae", strongest("plasticity_mae"))
    compare("physiological_consistency", "final_snr", strongest("final_snr", higher=True), items="snr_items")
    inherited = methods.get("apexphys", {}).get("inherited_branches")
    for part in ("bcrp", "bn_freeze", "hes", "pgp"):
        if part == "pgp" and inherited is not None and sum(inherited) == 0:
            sheet.untested("ablation_pgp", "no branch was ever inherited in any seed (every new branch's most "
                           "similar domain had none at that layer), so PGP never acted")
            continue
        compare(f"ablation_{part}", "final_mae", f"apexphys_no_{part}", items="final_items")
    return sheet.rows()


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
