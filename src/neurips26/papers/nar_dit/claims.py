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
- `guided` (optional): {"scale": s, "regimes": {regime: per seed, the final FD with guidance s}}
  for every regime sampled with guidance (all of them when `evaluate.guided_scale` is set);
- `size_study` (optional): {"variants": regimes, "sizes": names small to large, "params": one
  count per size, "fd": {regime: per seed, the final FD at every size},
  "extrapolate_params": the count the trend is read at, "steps": training steps per size (all
  the main runs' steps), "untrained_fd": per seed, the FD of the untrained model's samples}.
  `size_learns` (the regime control of the size rows) asks that DiT's final FD at every size be
  at most half the untrained one.

The rows, margins and bands are declared in `claims.yaml`; this module computes their numbers and
`core.claims.Sheet` decides them. The speedup follows the paper's definition: per seed, the steps
DiT needs to reach the routed regime's FD at `reference_step` (linear interpolation on the
snapshot grid) divided by `reference_step`, a ratio read on the log scale over seeds. DiT's steps
are read conservatively (`bracket_to_reach`): the last snapshot before DiT's curve reaches the
target, a lower bound on the crossing whatever the curve's shape, so the reading cannot favour the
routed regime (linear interpolation, the earlier reading, overstates the speedup on a convex
curve). The grid resolves speedups up to steps[-1] / reference_step; a seed whose DiT never
reaches the target leaves the row untested. TREAD's own speedup over DiT is the regime control of the NAR-vs-DiT and
NAR-vs-TREAD speed and quality rows: where routing does not speed up training at all, those rows
are untested. The size slopes are fitted per seed and the t interval taken over those slopes.
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "nar_dit"


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


def bracket_to_reach(steps: list[int], curve: list[float], target: float) -> tuple[float, float, str]:
    """The snapshots that bracket the step at which `curve` first reaches `target`: (the last
    snapshot before it, the first at or below it, status). Only monotonicity between snapshots is
    assumed, no shape: the crossing lies in (lower, upper]. Status as `steps_to_reach`; "first":
    the lower end is unknown and returned as the first snapshot (an upper bound); "never": both NaN."""
    for k, (step, fd) in enumerate(zip(steps, curve)):
        if fd <= target:
            return (float(step) if k == 0 else float(steps[k - 1])), float(step), ("first" if k == 0 else "ok")
    return math.nan, math.nan, "never"


def speedups(summary: dict, regime: str, reading: str = "bracket") -> tuple[list[float], list[str]]:
    """Per seed: DiT's steps to reach `regime`'s FD at the reference step, over the reference step.

    `reading` "bracket" (the rows' reading): DiT's steps are the last snapshot before its curve
    reaches the target, the earlier end of the bracket, so the speedup is a lower bound that no
    curve shape can inflate. "linear": interpolated between the bracketing snapshots (the reading
    until the conservative one; on a convex curve the chord lies above the curve, which puts DiT's
    crossing late and overstates the speedup)."""
    if reading not in ("bracket", "linear"):
        raise ValueError(f"unknown speedup reading '{reading}'")
    steps, ref = summary["steps"], summary["reference_step"]
    at = steps.index(ref)
    out, status = [], []
    for dit_curve, curve in zip(summary["regimes"]["dit"]["fd"], summary["regimes"][regime]["fd"]):
        if reading == "linear":
            reach, how = steps_to_reach(steps, dit_curve, curve[at])
        else:
            reach, _, how = bracket_to_reach(steps, dit_curve, curve[at])
        out.append(reach / ref)
        status.append(how)
    return out, status


def _speedup_row(sheet: claims.Sheet, summary: dict, id: str, regime: str) -> None:
    if regime not in summary["regimes"] or "dit" not in summary["regimes"]:
        sheet.untested(id, f"the regime '{regime if regime in summary['regimes'] else 'dit'}' is not in run_variants")
        return
    steps, ref, fd = summary["steps"], summary["reference_step"], summary["fd_name"]
    limit = steps[-1] / ref
    values, status = speedups(summary, regime)
    linear, _ = speedups(summary, regime, reading="linear")
    grid = steps[1] - steps[0] if len(steps) > 1 else steps[0]
    how = (f"per seed, DiT's steps to reach {regime}'s {fd} at step {ref}, read as the last snapshot of the "
           f"{grid}-step grid before DiT's curve reaches it (a lower bound on DiT's steps, so on the speedup) / "
           f"{ref}; the grid resolves {steps[0] / ref:.3g}x to {limit:.3g}x in steps of {grid / ref:.3g}x; "
           f"linear interpolation between snapshots (the earlier reading) would give "
           f"{', '.join('nan' if math.isnan(v) else f'{v:.3g}' for v in linear)}")
    if status.count("first"):
        how += f"; {status.count('first')} seed(s) at the first snapshot: upper bounds"
    if summary.get("holds_fixed"):
        how += f"; replicates hold fixed: {summary['holds_fixed']}"
    reason = ""
    if "never" in status:
        reason = (f"speedup beyond the measurable {limit:.3g}x: DiT does not reach {regime}'s {fd} at step "
                  f"{ref} within {steps[-1]} steps in {status.count('never')} of {len(values)} seeds")
    sheet.target(id, values=[v for v in values if not math.isnan(v)], how=how, untested=reason)


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


def learnt_ratios(study: dict) -> list[float]:
    """Per seed, the largest over the study's sizes of DiT's final FD / the untrained model's FD
    (`study["untrained_fd"]`, one per seed): how far the worst-learnt size got from noise."""
    return [max(fd / u for fd in dit_seed) for dit_seed, u in zip(study["fd"]["dit"], study["untrained_fd"])]


def _size_rows(sheet: claims.Sheet, summary: dict) -> None:
    study = summary.get("size_study")
    ids = {"nar": "size_trend_nar", "tread": "size_trend_tread"}
    if not study:
        sheet.untested("size_learns", "the run has no size study (nar_dit.size_study)")
        for id in ids.values():
            sheet.untested(id, "the run has no size study (nar_dit.size_study)")
        return
    steps = sorted(set(study.get("steps", [])))
    if "dit" not in study["variants"] or "untrained_fd" not in study:
        sheet.untested("size_learns", "the size study has no DiT runs or no untrained reference")
    else:
        ratios = learnt_ratios(study)
        per_size = [[d / u for d in dit_seed] for dit_seed, u in zip(study["fd"]["dit"], study["untrained_fd"])]
        sheet.target("size_learns", values=ratios,
                     how=(f"untrained {summary['fd_name']} per seed {', '.join(f'{u:.3g}' for u in study['untrained_fd'])}; "
                          "DiT / untrained per size (" + ", ".join(study["sizes"]) + ") and seed: "
                          + "; ".join(", ".join(f"{r:.3g}" for r in seed) for seed in per_size)
                          + f"; every size trains {', '.join(map(str, steps))} steps"))
    unknown = [v for v in study["variants"] if v != "dit" and v not in ids]
    if unknown:
        raise ValueError(f"{P}: size-study regimes without rows in claims.yaml: {', '.join(unknown)}")
    fd, names, params = summary["fd_name"], study["sizes"], study["params"]
    for regime, id in ids.items():
        if regime not in study["variants"] or "dit" not in study["variants"]:
            sheet.untested(id, f"the size study does not train '{regime if 'dit' in study['variants'] else 'dit'}'")
            continue
        xs = [math.log10(p) for p in params]
        ys = [[r / d - 1 for r, d in zip(r_seed, d_seed)] for r_seed, d_seed in zip(study["fd"][regime], study["fd"]["dit"])]
        if len(xs) < 2:
            sheet.untested(id, "a size trend needs at least two sizes")
            continue
        pred = size_prediction(size_trend(params, study["fd"][regime], study["fd"]["dit"]), study["extrapolate_params"])
        how = (f"per seed, least-squares line of {regime}/DiT - 1 in final {fd} on log10(params) over "
               f"{len(names)} sizes ({', '.join(f'{n}: {p / 1e6:.3g}M params' for n, p in zip(names, params))}), "
               f"every size trained {', '.join(map(str, steps)) or '?'} steps; the mean line gives "
               f"{pred['deficit_at_params']:+.3g} at "
               f"{pred['at_params'] / 1e6:.3g}M params")
        sheet.target(id, values=claims.slopes_per_replicate(xs, ys), how=how)


def _ratio_check(sheet: claims.Sheet, id: str, num: list[float], den: list[float], how: str) -> None:
    ratios = [a / b for a, b in zip(num, den)]
    sheet.check(id, max(ratios), n=len(ratios), how=f"largest ratio over seeds ({', '.join(f'{r:.3g}' for r in ratios)}); {how}")


def _guided_rows(sheet: claims.Sheet, summary: dict) -> None:
    guided, regimes = summary.get("guided"), summary["regimes"]
    g = (guided or {}).get("regimes", {})
    fixed = "; ".join(filter(None, (summary.get("holds_fixed", ""), "the sampling noise and labels")))
    if not guided:
        why = "no guided sampling (evaluate.guided_scale is null)"
        sheet.untested("guided_nar_vs_dit", why)
        sheet.check("guidance_nar", None, untested=why)
        return
    scale = f"{guided['scale']:g}"
    if "nar" in g and "dit" in g:
        sheet.comparison("guided_nar_vs_dit", g["nar"], g["dit"], method=f"nar_cfg{scale}", baseline=f"dit_cfg{scale}",
                         how=f"guidance scale {scale} on both sides; replicates hold fixed: {fixed}")
    else:
        sheet.untested("guided_nar_vs_dit", "no guided samples of " + " and ".join(v for v in ("nar", "dit") if v not in g))
    if "nar" in g and "nar" in regimes:
        _ratio_check(sheet, "guidance_nar", g["nar"], regimes["nar"]["final_fd"],
                     f"guidance scale {scale}, the same noise and labels as the unguided samples; guided DiT: "
                     + (", ".join(f"{x:.3g}" for x in g["dit"]) + " against unguided "
                        + ", ".join(f"{x:.3g}" for x in regimes["dit"]["final_fd"]) if "dit" in g and "dit" in regimes
                        else "not sampled"))
    else:
        sheet.check("guidance_nar", None, untested="no guided samples of nar")


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    regimes = summary["regimes"]
    fixed = summary.get("holds_fixed", "")
    how = f"replicates hold fixed: {fixed}" if fixed else ""

    def compare(id, key, method, baseline, items_key=None):
        missing = [v for v in (method, baseline) if v not in regimes]
        if missing:
            sheet.untested(id, f"the regime '{missing[0]}' is not in run_variants")
            return
        kw = {}
        if items_key:
            kw = {"method_items": regimes[method][items_key], "baseline_items": regimes[baseline][items_key]}
        sheet.comparison(id, regimes[method][key], regimes[baseline][key], how=how, **kw)

    def sensitivity(id, method, baseline):
        if method not in regimes or baseline not in regimes:
            sheet.check(id, None, untested=f"the regime '{method if method not in regimes else baseline}' is not in run_variants")
            return
        _ratio_check(sheet, id, regimes[method]["route_sensitivity_high"], regimes[baseline]["route_sensitivity_high"],
                     "route sensitivity at high noise under the same routing probe for both")

    _speedup_row(sheet, summary, "tread_faster", "tread")
    _speedup_row(sheet, summary, "nar_speedup", "nar")
    compare("nar_vs_dit_fd", "final_fd", "nar", "dit")
    compare("nar_vs_tread_fd", "final_fd", "nar", "tread")
    compare("nar_vs_inverted_fd", "final_fd", "nar", "nar_inverted")
    # mechanism: trained with more routing at high noise, NAR is less sensitive to a routing probe
    # there by construction; checks, not claims
    sensitivity("sensitivity_vs_tread", "nar", "tread")
    sensitivity("sensitivity_vs_inverted", "nar", "nar_inverted")
    compare("gap_vs_tread", "mean_generalization_gap", "nar", "tread", items_key="gap_items")
    compare("gap_vs_inverted", "mean_generalization_gap", "nar", "nar_inverted", items_key="gap_items")
    # sanity: DiT never saw dropped tokens, so any routed regime should be far less route-sensitive
    sensitivity("tread_sensitivity_sanity", "tread", "dit")
    _guided_rows(sheet, summary)
    _size_rows(sheet, summary)
    return sheet.rows()
