"""nar_dit's claims rows, a pure function of the figures step's per-seed metrics.

`summary` (built by `steps.figures`):

- `fd_name`: "FD_cls" (or "FID"); `steps`: the snapshot grid; `reference_step`: the step whose
  FD of a routed regime DiT has to reach (the paper's "400K-step FID");
- `regimes`: {regime: {"fd": per seed, the FD at every grid step; "final_fd": per seed;
  "route_sensitivity_high": per seed; "mean_generalization_gap": per seed;
  "gap_items": per seed, the per-probe-pair gaps (held-out minus train loss, all noise groups)}},
  seeds in the same order for every regime (seed i of every regime shares data, evaluation
  noise and probe pairs);
- `holds_fixed`: what the seeds keep fixed ("" if nothing).

The speedup follows the paper's definition: per seed, the steps DiT needs to reach the routed
regime's FD at `reference_step` (linear interpolation on the snapshot grid) divided by
`reference_step`. The grid resolves speedups up to steps[-1] / reference_step; a seed whose DiT
never reaches the target leaves the row untested.
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "nar_dit"
# comparisons: the smallest improvement that counts, as a share of the baseline's mean
FD_MIN_EFFECT = 0.05  # of the baseline's FD
SENSITIVITY_MIN_EFFECT = 0.10  # of the baseline's route sensitivity (it spans orders of magnitude)
GAP_MIN_EFFECT = 0.05  # of the baseline's train/held-out gap


def steps_to_reach(steps: list[int], curve: list[float], target: float) -> tuple[float, str]:
    """The first step at which `curve` (FD on the grid `steps`) reaches `target`, linearly
    interpolated between snapshots. Status: "ok"; "first" when the first snapshot already reaches
    it (the value is then an upper bound); "never" when the run does not reach it (value NaN)."""
    for k, (step, fd) in enumerate(zip(steps, curve)):
        if fd <= target:
            if k == 0:
                return float(step), "first"
            s0, f0 = steps[k - 1], curve[k - 1]
            return s0 + (step - s0) * (f0 - target) / (f0 - fd), "ok"
    return math.nan, "never"


def speedups(summary: dict, regime: str) -> tuple[list[float], list[str]]:
    """Per seed: DiT's steps to reach `regime`'s FD at the reference step, over the reference step."""
    steps, ref = summary["steps"], summary["reference_step"]
    at = steps.index(ref)
    out, status = [], []
    for dit_curve, curve in zip(summary["regimes"]["dit"]["fd"], summary["regimes"][regime]["fd"]):
        reach, how = steps_to_reach(steps, dit_curve, curve[at])
        out.append(reach / ref)
        status.append(how)
    return out, status


def _speedup_row(summary: dict, regime: str, claim: str, scale: str, paper_value: str) -> dict:
    steps, ref, fd = summary["steps"], summary["reference_step"], summary["fd_name"]
    metric = f"speedup: DiT's steps to reach {regime}'s {fd} at step {ref}, / {ref} (higher is better)"
    limit = steps[-1] / ref
    values, status = speedups(summary, regime)
    how = (f"per seed, DiT's steps to reach {regime}'s {fd} at step {ref} (interpolated on the "
           f"{steps[1] - steps[0] if len(steps) > 1 else steps[0]}-step snapshot grid) / {ref}; "
           f"geometric mean, 95% t interval of the log over {len(values)} paired seeds; "
           f"the grid resolves {steps[0] / ref:.3g}x to {limit:.3g}x")
    if status.count("first"):
        how += f"; {status.count('first')} seed(s) at the first snapshot: upper bounds"
    if summary.get("holds_fixed"):
        how += f"; replicates hold fixed: {summary['holds_fixed']}"
    reason = ""
    if len(values) < claims.MIN_REPLICATES:
        reason = f"fewer than {claims.MIN_REPLICATES} seeds"
    elif "never" in status:
        reason = (f"speedup beyond the measurable {limit:.3g}x: DiT does not reach {regime}'s {fd} at step "
                  f"{ref} within {steps[-1]} steps in {status.count('never')} of {len(values)} seeds")
    value, interval = math.nan, None
    if not reason:
        m, lo, hi = claims.paired_t_interval([math.log(v) for v in values])
        value, interval = math.exp(m), (math.exp(lo), math.exp(hi))
    return claims.target(P, claim, metric, regime, value, (1.0, None), scale, "fd_vs_steps.png",
                         interval=interval, paper_value=paper_value, n=len(values), baseline="dit",
                         how=how, untested_reason=reason)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def claim_rows(summary: dict, scale: str) -> list[dict]:
    regimes, fd = summary["regimes"], summary["fd_name"]
    fixed = summary.get("holds_fixed", "")

    def compare(claim, metric_key, metric, method, baseline, share, figure, items_key=None):
        for v in (method, baseline):
            if v not in regimes:
                return claims.untested(P, claim, metric, method, f"the regime '{v}' is not in run_variants", scale,
                                       figure)
        m, b = regimes[method][metric_key], regimes[baseline][metric_key]
        kw = {}
        if items_key:
            kw = {"method_items": regimes[method][items_key], "baseline_items": regimes[baseline][items_key]}
        return claims.comparison(P, claim, metric, method, m, baseline, b, False, scale, figure,
                                 min_effect=share * abs(_mean(b)), holds_fixed=fixed, **kw)

    final = f"final {fd}, lower is better"
    sens = "route sensitivity at high noise (relative MSE under a 0.5 routing probe), lower is better"
    gap = "train/held-out gap: held-out minus train flow loss, mean over noise groups, lower is better"
    rows = [
        _speedup_row(summary, "nar", "NAR converges faster than DiT", scale, "15.6x (ImageNet-256, 400K steps)")
        if "nar" in regimes else claims.untested(P, "NAR converges faster than DiT", "speedup", "nar",
                                                 "the regime 'nar' is not in run_variants", scale, "fd_vs_steps.png"),
        compare("NAR improves generation quality over DiT", "final_fd", final, "nar", "dit", FD_MIN_EFFECT,
                "fd_vs_steps.png"),
        compare("NAR outperforms TREAD at the same mean routing ratio", "final_fd", final, "nar", "tread",
                FD_MIN_EFFECT, "fd_vs_steps.png"),
        compare("more routing at high noise beats the inverted schedule", "final_fd", final, "nar", "nar_inverted",
                FD_MIN_EFFECT, "fd_vs_steps.png"),
        # mechanism: what is specific to NAR is where the routing goes, so NAR is compared with
        # the same mean ratio spread evenly (TREAD) and spread the other way (inverted)
        compare("a larger routing ratio at high noise regularises route sensitivity there (vs TREAD)",
                "route_sensitivity_high", sens, "nar", "tread", SENSITIVITY_MIN_EFFECT, "mechanism.png"),
        compare("a larger routing ratio at high noise regularises route sensitivity there (vs inverted)",
                "route_sensitivity_high", sens, "nar", "nar_inverted", SENSITIVITY_MIN_EFFECT, "mechanism.png"),
        compare("noise-aware allocation shrinks the train/held-out gap (vs TREAD)", "mean_generalization_gap", gap,
                "nar", "tread", GAP_MIN_EFFECT, "mechanism.png", items_key="gap_items"),
        compare("noise-aware allocation shrinks the train/held-out gap (vs inverted)", "mean_generalization_gap",
                gap, "nar", "nar_inverted", GAP_MIN_EFFECT, "mechanism.png", items_key="gap_items"),
    ]
    if "tread" in regimes:
        rows.append(_speedup_row(summary, "tread", "TREAD converges faster than DiT (prior work)", scale,
                                 "stated in the abstract, no number"))
        # sanity: DiT never saw dropped tokens, so any routed regime should be far less route-sensitive
        ratios = [t / d for t, d in zip(regimes["tread"]["route_sensitivity_high"],
                                        regimes["dit"]["route_sensitivity_high"])]
        rows.append(claims.check(P, "sanity: TREAD is less route-sensitive than DiT, which never routes",
                                 "route sensitivity at high noise, TREAD / DiT per seed", "tread", max(ratios), 1.0,
                                 scale, "mechanism.png", reference="dit", n=len(ratios),
                                 how="largest ratio over seeds"))
    return rows
