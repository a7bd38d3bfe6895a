"""nar_dit's claims rows, a pure function of the figures step's per-seed metrics.

`summary` (built by `steps.figures`):

- `fd_name`: "FD_cls" (or "FID"); `steps`: the snapshot grid; `reference_step`: the step whose
  FD of a routed regime DiT has to reach (the paper's "400K-step FID");
- `regimes`: {regime: {"fd": per seed, the FD at every grid step; "final_fd": per seed;
  "route_sensitivity_high": per seed; "mean_generalization_gap": per seed;
  "gap_items": per seed, the per-probe-pair gaps (held-out minus train loss, all noise groups)}},
  seeds in the same order for every regime (seed i of every regime shares data, evaluation
  noise and probe pairs);
- `holds_fixed`: what the seeds keep fixed ("" if nothing);
- `guided` (optional): {"scale": s, "regimes": {regime: per seed, the final FD with guidance s}};
- `size_study` (optional): {"variants": regimes, "sizes": names small to large, "params": one
  count per size, "fd": {regime: per seed, the final FD at every size},
  "extrapolate_params": the count the trend is read at}.

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


def size_trend(params: list[float], routed: list[list[float]], dit: list[list[float]]) -> list[tuple[float, float]]:
    """Per seed, the least-squares line (slope, intercept) of routing's relative FD deficit
    `routed / dit - 1` against log10(parameter count), over the sizes of the study.

    `params`: one count per size; `routed`, `dit`: per seed, the final FD at every size (same
    order). A negative slope means the deficit shrinks as the model grows."""
    xs = [math.log10(p) for p in params]
    if len(xs) < 2:
        raise ValueError("a size trend needs at least two sizes")
    out = []
    for r_seed, d_seed in zip(routed, dit):
        ys = [r / d - 1 for r, d in zip(r_seed, d_seed)]
        mx, my = _mean(xs), _mean(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
        out.append((slope, my - slope * mx))
    return out


def size_prediction(fits: list[tuple[float, float]], at_params: float) -> dict:
    """What the mean line predicts: the relative deficit at `at_params` and the parameter count
    where the deficit reaches 0 (routing starts to pay; NaN when the mean slope is not negative)."""
    slope = _mean([f[0] for f in fits])
    intercept = _mean([f[1] for f in fits])
    x = math.log10(at_params)
    return {"slope": slope, "intercept": intercept, "at_params": at_params,
            "deficit_at_params": intercept + slope * x,
            "breakeven_params": 10 ** (-intercept / slope) if slope < 0 else math.nan}


def _size_rows(summary: dict, scale: str) -> list[dict]:
    study = summary.get("size_study")
    if not study:
        return []
    fd, names, params = summary["fd_name"], study["sizes"], study["params"]
    rows = []
    for regime in study["variants"]:
        if regime == "dit":
            continue
        claim = f"routing pays more as the model grows: {regime}'s {fd} deficit against DiT shrinks with size"
        metric = (f"slope of ({regime} / DiT - 1) in final {fd} against log10(parameters), per decade "
                  "(negative = the deficit shrinks with size)")
        fits = size_trend(params, study["fd"][regime], study["fd"]["dit"])
        slopes = [f[0] for f in fits]
        pred = size_prediction(fits, study["extrapolate_params"])
        how = (f"per seed, least-squares line of {regime}/DiT - 1 in final {fd} on log10(params) over "
               f"{len(names)} sizes ({', '.join(f'{n}: {p / 1e6:.3g}M params' for n, p in zip(names, params))}), "
               f"each size with its own training length; mean slope, 95% t interval over {len(slopes)} seeds; "
               f"the mean line gives {pred['deficit_at_params']:+.3g} at {pred['at_params'] / 1e6:.3g}M params")
        reason = f"fewer than {claims.MIN_REPLICATES} seeds" if len(slopes) < claims.MIN_REPLICATES else ""
        value, interval = _mean(slopes), None
        if not reason:
            m, lo, hi = claims.paired_t_interval(slopes)
            value, interval = m, (lo, hi)
        rows.append(claims.target(P, claim, metric, regime, value, (None, 0.0), scale, "size_study.png",
                                  interval=interval, n=len(slopes), baseline="dit", how=how,
                                  paper_value="gains reported at DiT-XL/2 (675M params)", untested_reason=reason))
    return rows


def _guided_row(summary: dict, scale: str) -> dict:
    guided, fd = summary.get("guided"), summary["fd_name"]
    claim = "classifier-free guidance improves NAR's sample quality (the paper's guided FID)"
    if not guided or "nar" not in guided["regimes"]:
        return claims.untested(P, claim, f"final {fd}, guided vs unguided", "nar",
                               "no guided sampling (evaluate.guided_scale is null) or no 'nar' regime", scale,
                               "guidance.png")
    g = guided["regimes"]["nar"]
    base = summary["regimes"]["nar"]["final_fd"]
    return claims.comparison(P, claim, f"final {fd} of NAR, guided (scale {guided['scale']:g}) vs unguided, "
                             "lower is better", f"nar_cfg{guided['scale']:g}", g, "nar_unguided", base, False, scale,
                             "guidance.png", min_effect=FD_MIN_EFFECT * abs(_mean(base)),
                             holds_fixed="; ".join(filter(None, (summary.get("holds_fixed", ""),
                                                                  "the sampling noise and labels"))),
                             paper_value="FID 2.67 guided (ImageNet-256)")


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
    rows.append(_guided_row(summary, scale))
    rows.extend(_size_rows(summary, scale))
    return rows
