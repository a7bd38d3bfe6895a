"""Claims rows of es_dynamics, a pure function of the aggregated metrics (`steps.claims_summary`).

The entries (claim, metric, band, margin, controls) are declared in `claims.yaml`; this module
computes their numbers and `core.claims.Sheet` decides them.

Synthetic rows: the ES-vs-SDE drift match (relative difference of the mean final drift
||theta_T - theta_0|| over independent ES runs and SDE paths, with its 95% interval), the reward
trajectory match (per seed, the mean gap of the window-mean reward curves over the SDE's rise; t
interval over seeds), the regime sequence (the share of a declared grid of landscapes, `LANDSCAPE_GRID`, whose
window-dominant term of the population reward variance goes task gradient -> curvature -> off-task
gradient, Clopper-Pearson), the synthetic
rise-then-decay (the peak window located on an independent ES run, its reward and the last window's
read on the reported run), the dimensionality paradox (generations until 90% of the task gap is
closed under the low-rank Hessian against the full-rank control at the same N, log scale), and
Z-scoring against centred ranks and plain ES, each with its step size tuned on a seed that is not
reported by the protocol of `core.tuning` (a shaping capped at a grid edge keeps a row from `yes`
against it, or from `no` for the Z-score side). LM rows: the drift of ES fine-tuning against the
SDE's random-walk prediction (a check: Z-scored weights make the drift norm the random walk's
whatever the reward), the drift along the task gradient against a pure-noise reward on the same
perturbations (the component the reward determines), forgetting
(general-corpus perplexity, on the log scale) and the rise-then-decay of the held-out verifiable
reward (peak chosen on one held-out set, read on another), both gated on the model learning the
task at all. Rows at the paper's scale (Qwen2.5, Abdi et al.'s drift) are untested.
"""

from __future__ import annotations

import math

from neurips26.core import claims

P = "es_dynamics"


def _rel_interval(a, b):
    """(a_mean - b_mean) / b_mean with a 95% normal interval from both sides' standard errors."""
    na, nb = len(a), len(b)
    ma, mb = sum(a) / na, sum(b) / nb
    va = sum((x - ma) ** 2 for x in a) / max(na - 1, 1)
    vb = sum((x - mb) ** 2 for x in b) / max(nb - 1, 1)
    rel = (ma - mb) / mb
    se = math.sqrt(va / na + vb / nb) / abs(mb)
    return rel, (rel - 1.96 * se, rel + 1.96 * se)


def claim_rows(summary: dict, scale: str) -> list[dict]:
    sheet = claims.Sheet(P, scale)
    s = summary["synthetic"]
    few = "" if s["seeds"] >= claims.MIN_REPLICATES else f"fewer than {claims.MIN_REPLICATES} seeds"
    setting = f"d = {s['dim']}, N = {s['population']}, T = {s['generations']}"

    rel, interval = _rel_interval(s["drift_es"], s["drift_sde"])
    sheet.target("sde_drift_synthetic", rel, interval=interval, n=s["seeds"],
                 baseline_value=claims.num(sum(s["drift_sde"]) / len(s["drift_sde"])), untested=few,
                 how=f"{setting}; independent ES runs and Euler-Maruyama SDE paths per seed, normal interval of the "
                     "difference of means over the SDE mean")
    if "reward_gap_seeds" in s:
        sheet.target("sde_reward_synthetic", values=s["reward_gap_seeds"],
                     how=f"window means of the noise-free reward of theta_t (windows of {s['window']} generations); "
                         f"the gap of the seed-mean curves is {s['reward_gap']:.3g}")
    else:
        sheet.target("sde_reward_synthetic", s["reward_gap"], n=s["seeds"], how="the gap of the seed-mean curves only")
    if s.get("landscapes"):
        sheet.target("three_regimes", successes=int(s["landscape_successes"]), trials=int(s["landscapes"]),
                     how="terms sigma^2 ||g_task||^2, sigma^2 ||g_off||^2, sigma^4 tr(H^2) / 2, sigma_n^2 at theta_t, "
                         f"dominant per window; on the default landscape {s['regime_successes']}/{s['seeds']} seeds show it")
    else:
        sheet.target("three_regimes", successes=int(s["regime_successes"]), trials=int(s["seeds"]), untested=few or
                     "no landscape grid in the metrics", how="the default landscape's seeds only")
    sheet.comparison("rise_decay_synthetic", s["peak_reward"], s["final_reward"],
                     how="peak window located on an independent ES run of the same landscape, read on the reported run; "
                         "read on the curve that located it, the peak is "
                         f"{claims.num(sum(s['peak_reward_same_curve']) / len(s['peak_reward_same_curve']))}")
    never = s.get("never_reached", {})
    sheet.comparison("dimensionality_paradox", s["generations_low_rank"], s["generations_full_rank"],
                     how=f"{setting}; the same step size, N and sigma on both sides; runs that never close "
                         f"{s.get('progress_share', 0.9):.0%} of the gap count T + 1 (low rank {never.get('low_rank', 0)}, "
                         f"full rank {never.get('full_rank', 0)}); share of the gap closed after T: low rank "
                         f"{claims.fmt(s['progress_low_rank'])}, full rank {claims.fmt(s['progress_full_rank'])}")
    for id, base in (("zscore_vs_centered_ranks", "centered_ranks"), ("zscore_vs_plain", "plain")):
        capped = s.get("capped", {})
        sheet.comparison(id, s["final"]["zscore"], s["final"][base],
                         how="each shaping's step size tuned on one tuning seed by the same grid rule",
                         method_capped=capped.get("zscore", ""), baseline_capped=capped.get(base, ""))

    lm = summary["lm"]
    ratios = [a / b - 1 for a, b in zip(lm["drift"], lm["drift_sde"])]
    noise = ""
    if "drift_noise" in lm:
        worst = max(abs(a / b - 1) for a, b in zip(lm["drift_noise"], lm["drift_sde"]))
        noise = f" (the pure-noise reward on the same perturbations: largest |measured / predicted - 1| {claims.num(worst)})"
    sheet.check("sde_drift_lm", max(abs(r) for r in ratios) if ratios else None, n=lm["seeds"],
                how=(f"{lm['generations']} generations, {lm['dim']} perturbed parameters, N = {lm['population']}; "
                     "a mechanism check, not a reproduction: with Z-scored weights the drift norm is the random "
                     f"walk's whatever the reward (a pure-noise reward drifts as far{noise})"))
    if "drift_task" in lm:
        sheet.comparison("lm_task_drift", lm["drift_task"], lm["drift_task_noise"],
                         how="u = the unit gradient of the training pool's mean answer log-probability at theta_0; "
                             "the pure-noise run replays the same perturbations with i.i.d. normal rewards")
    else:
        sheet.untested("lm_task_drift", "the LM runs did not record the drift along the task direction")
    sheet.comparison("lm_learns", lm["task_final"], lm["task_start"])
    sheet.comparison("lm_forgetting", lm["ppl_final"], lm["ppl_start"])
    sheet.comparison("rise_decay_lm", lm["task_peak"], lm["task_final"],
                     how="peak generation chosen on held-out set a, read on set b")
    sheet.untested("qwen_verification", "needs Qwen2.5-{0.5B,3B,7B}-Instruct ES fine-tuning on GPUs "
                   "(config/paper.yaml names them); the default run uses the tiny lm_assets model")
    sheet.untested("abdi_drift", "Abdi et al.'s drift numbers and runs are not available offline")
    return sheet.rows()
