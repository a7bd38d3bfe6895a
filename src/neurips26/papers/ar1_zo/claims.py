"""Claims rows of ar1_zo, a pure function of the aggregated metrics (`steps.claims_summary`).

The entries (claim, metric, band, margin, controls) are declared in `claims.yaml`; this module
computes their numbers and `core.claims.Sheet` decides them.

Mechanism checks: at the LoRA initialisation (B = 0) the naive query is AR1-ZO's times 1/r, so
the log-log slope of the naive / AR1-ZO signal ratio against the rank is -1 (of the FD-SNR ratio
-2) on every seed, and AR1-ZO's own slopes are flat by construction (a_i drawn independently of r). Directional collapse:
the share of noisy atom queries whose sign matches the noise-free one at the largest rank, AR1-ZO
against naive, gated on naive's own loss of direction between the smallest and largest rank. A
check: at r = 1 the two scalings are the same adapter. Accuracy rows: test accuracy at the same
forward-pass budget, paired by seed (same data, batches, noise draws and LoRA initialisation
within a seed), with per-example scores (paired bootstrap over seeds x items), gated on a regime
control: the cell with the best validation accuracy beats the zero-shot prompt. A row with an
atomwise cell at rank r needs at least 10 visits per atom (steps >= 10 r), else it is untested. Each cell's learning
rate is tuned by the protocol of `core.tuning`; a cell whose rate stayed on a capped grid edge carries
the protocol's note, and a row cannot then say `yes` against a capped baseline (nor `no` for a capped
method).
"""

from __future__ import annotations

from neurips26.core import claims

P = "ar1_zo"
ATOMWISE = ("naive_atom", "ar1_zo")
VISITS_PER_ATOM = 10


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else float("nan")


def best_on_validation(cells: dict, rank: int) -> str | None:
    """The cell at `rank` with the highest mean validation accuracy (ties: the first in order);
    None when no cell there reports one."""
    scored = [(k, _mean(c.get("val_accuracy") or [])) for k, c in cells.items() if c["rank"] == rank]
    scored = [(k, v) for k, v in scored if v == v]
    if not scored:
        return None
    return max(scored, key=lambda kv: kv[1])[0]


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    m = summary["mechanism"]
    naive, ar1 = m["naive_atom"], m["ar1_zo"]
    rmin, rmax = summary["min_rank"], summary["max_rank"]
    per_seed = "least-squares slope of log value on log r per seed, the largest over seeds"

    # ---- mechanism (at the initialisation B = 0, where the slopes are identities of the scaling)
    def worst(xs, target=0.0):
        return max(abs(x - target) for x in xs) if xs else None

    ratio = "slope of the ratio naive / AR1-ZO per seed (the same atoms, queries and noise draws)"
    sheet.check("naive_signal_slope", worst([a - b for a, b in zip(naive["signal_slope"], ar1["signal_slope"])], -1.0),
                n=len(naive["signal_slope"]), how=ratio)
    sheet.check("naive_snr_slope", worst([a - b for a, b in zip(naive["snr_slope"], ar1["snr_slope"])], -2.0),
                n=len(naive["snr_slope"]), how=ratio)
    sheet.check("ar1_signal_flat", worst(ar1["signal_slope"]), n=len(ar1["signal_slope"]), how=per_seed)
    sheet.check("ar1_snr_flat", worst(ar1["snr_slope"]), n=len(ar1["snr_slope"]), how=per_seed)
    if "sign_agreement_min_rank" in naive:
        sheet.comparison("naive_collapses", naive["sign_agreement_min_rank"], naive["sign_agreement_max_rank"],
                         method=f"naive_atom@r{rmin}", baseline=f"naive_atom@r{rmax}")
    else:
        sheet.untested("naive_collapses", "the mechanism metrics lack the sign agreement at the smallest rank")
    sheet.comparison("direction_restored", ar1["sign_agreement_max_rank"], naive["sign_agreement_max_rank"],
                     method=f"ar1_zo@r{rmax}", baseline=f"naive_atom@r{rmax}")
    diff = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(ar1["signal_r1"], naive["signal_r1"]))
    sheet.check("same_adapter_r1", diff, n=len(naive["signal_r1"]), how="gamma = alpha r equals alpha at r = 1")

    # ---- accuracy
    cells = summary["cells"]
    r0 = summary["rank"]
    best = best_on_validation(cells, r0)
    zero_items = summary.get("zero_shot_items")
    if best is None:
        sheet.untested("learns_beyond_zero_shot", "no cell reports a validation accuracy to choose the best method by")
    else:
        items = zero_items if zero_items and all(x is not None for x in zero_items) else None
        sheet.comparison("learns_beyond_zero_shot", cells[best]["accuracy"], summary["zero_shot"],
                         method_items=cells[best]["items"] if items else None, baseline_items=items,
                         method=best, baseline="zero_shot", method_capped=cells[best].get("capped", ""),
                         how=f"{best} chosen by mean validation accuracy among the cells at r = {r0}")

    steps = summary["forwards"] // 2  # two forward passes per step

    def compare(id, a, b):
        if a not in cells or b not in cells:
            sheet.untested(id, f"{a} or {b} was not run", method=a, baseline=b)
            return
        ca, cb = cells[a], cells[b]
        # an atomwise method at rank r visits each atom every r steps: a rank claim needs 10 visits per atom
        rank = max((c["rank"] for c in (ca, cb) if c["method"] in ATOMWISE), default=0)
        if steps < VISITS_PER_ATOM * rank:
            sheet.untested(id, f"{steps} steps give {steps / rank:g} visits per atom at r = {rank}; the rank "
                               f"comparison needs {VISITS_PER_ATOM} (steps >= {VISITS_PER_ATOM * rank})",
                           method=a, baseline=b)
            return
        sheet.comparison(id, ca["accuracy"], cb["accuracy"], method_items=ca["items"], baseline_items=cb["items"],
                         method=a, baseline=b, how=f"{summary['forwards']} forward passes per run",
                         method_capped=ca.get("capped", ""), baseline_capped=cb.get("capped", ""))

    for id, base in (("beats_mezo_full", "mezo_full"), ("beats_mezo_lora", "mezo_lora"), ("beats_lozo", "lozo"),
                     ("beats_naive", "naive_atom")):
        compare(id, f"ar1_zo@r{r0}", f"{base}@r{r0}")
    sweep = summary["ranks_sweep"]
    hi, lo = max(sweep), min(sweep)
    compare("high_rank_beats_naive", f"ar1_zo@r{hi}", f"naive_atom@r{hi}")
    compare("high_rank_beats_low_rank", f"ar1_zo@r{hi}", f"ar1_zo@r{lo}")
    return sheet.rows()
