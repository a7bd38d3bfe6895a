"""The steps the CLI calls for threshold_mcts: simulate (one job per tree family, every seed)
and timing -> figures.

simulate draws one random MAX/MIN tree instance per seed (leaf means with T* in a set range),
checks the T* recursion against the scipy max-min LP on random small trees, and runs every
sampling rule for every delta many times: error rate and stopping time against T* log(1/delta).
timing measures the wall time per round of each sampling rule against the number of leaves
(wall times go to timing.json, never to metrics.json).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking

from . import baselines, method, reference
from . import claims as paper_claims
from . import tree as T
from .claims import NAMES

COLORS = {"ratio": "#1f77b4", "dtracking": "#ff7f0e", "uniform": "#2ca02c", "lucb": "#d62728"}


def _round(x, digits: int = 10):
    x = float(x)
    return x if not np.isfinite(x) or x == 0.0 else float(f"{x:.{digits}g}")


def draw_instance(settings: dict, rng: np.random.Generator, max_tries: int = 10000):
    """A regular tree with alternating MAX/MIN labels and leaf means drawn uniformly in
    mean_range, redrawn until T* lies in t_star_range."""
    tree = T.regular(settings["branching"], settings["depth"], settings.get("root", "max") == "max")
    fam = T.FAMILIES[settings["family"]]
    low, high = settings["mean_range"]
    t_low, t_high = settings["t_star_range"]
    for _ in range(max_tries):
        mu = rng.uniform(low, high, tree.n_leaves)
        t_star, w = T.characteristic_time(tree, mu, settings["theta"], fam)
        if t_low <= t_star <= t_high:
            return tree, mu, fam, t_star, w
    raise ValueError(f"config key 'threshold_mcts.variants.*.t_star_range': no instance with T* in "
                     f"[{t_low}, {t_high}] after {max_tries} draws; widen the range")


def run_one(rule: str, tree, mu, fam, theta, delta, rng, stopping: dict) -> dict:
    if rule == "lucb":
        return baselines.lucb_mcts(tree, mu, fam, theta, delta, rng, max_samples=stopping["max_samples"])
    return method.track_and_stop(tree, mu, fam, theta, delta, rng, rule, stopping["beta"], stopping["max_samples"])


def lp_check(settings: dict, trees: int, rng: np.random.Generator) -> float:
    """Largest relative gap between the T* recursion and the scipy LP over random small trees
    of irregular shape and this variant's leaf family."""
    fam = T.FAMILIES[settings["family"]]
    low, high = settings["mean_range"]
    worst = 0.0
    for _ in range(trees):
        shape = [[0] * int(rng.integers(1, 4)) if rng.random() < 0.7 else 0 for _ in range(int(rng.integers(2, 4)))]
        tree = T.from_nested(shape, bool(rng.random() < 0.5))
        mu = rng.uniform(low, high, tree.n_leaves)
        ours, _ = T.characteristic_time(tree, mu, settings["theta"], fam)
        lp, _ = reference.characteristic_time_lp(tree, mu, settings["theta"], fam)
        worst = max(worst, abs(ours - lp) / lp)
    return worst


def simulate(params, inputs, out: Path):
    settings, stopping = params["variant_settings"], params["stopping"]
    deltas, runs, rules = params["deltas"], params["runs"], params["algorithms"]
    seeds = []
    for seed in params["seeds"]:
        rng = np.random.default_rng([int(settings.get("instance_seed", 0)), int(seed)])
        tree, mu, fam, t_star, w = draw_instance(settings, rng)
        truth = bool(T.tree_value(tree, mu)[0] >= settings["theta"])
        per_rule = {}
        for rule in rules:
            rows = []
            for di, delta in enumerate(deltas):
                results = [run_one(rule, tree, mu, fam, settings["theta"], delta,
                                   np.random.default_rng([int(seed), di, r, 7]), stopping) for r in range(runs)]
                samples = np.array([res["samples"] for res in results], dtype=float)
                errors = np.array([res["answer"] != truth for res in results], dtype=float)
                rows.append({"delta": delta, "errors": int(errors.sum()), "error_rate": _round(errors.mean()),
                             "mean_samples": _round(samples.mean()), "std_samples": _round(samples.std()),
                             "truncated": int(sum(res["truncated"] for res in results)),
                             "ratio_to_lower_bound": _round(samples.mean() / (t_star * math.log(1 / delta)))})
                tracking.active().log_metrics({f"seed{seed}/{rule}/mean_samples": samples.mean(),
                                               f"seed{seed}/{rule}/error_rate": errors.mean()}, step=di)
            per_rule[rule] = rows
        seeds.append({"seed": seed, "leaves": tree.n_leaves, "means": [_round(m) for m in mu],
                      "root_value": _round(T.tree_value(tree, mu)[0]), "answer": truth,
                      "t_star": _round(t_star), "weights": [_round(x) for x in w], "rules": per_rule,
                      "lp_check_max_rel_gap": _round(lp_check(settings, params["lp_check_trees"], rng), 4)})
    io.write_json(out / "metrics.json", {"variant": params["variant"], "settings": settings, "deltas": deltas,
                                         "runs": runs, "stopping": stopping, "seeds": seeds})
    return [out / "metrics.json"]


# ---------------------------------------------------------------- timing
def measure_round_times(cfg: dict, report=None) -> tuple[dict, dict, dict]:
    """Seconds per round of each sampling rule (selection + update + stopping check) on complete
    trees of growing size; also checks on every timed round that the tree walk picks the leaf a
    from-scratch pass would pick (deterministic, goes to metrics). Returns the best time of the
    repeats, every repeat's time (the replicates of the timing claim) and the agreement shares."""
    timing = {rule: {} for rule in cfg["algorithms"]}
    repeats = {rule: {} for rule in cfg["algorithms"]}
    agree = {}
    for depth in cfg["depths"]:
        tree = T.regular(cfg["branching"], depth)
        rng = np.random.default_rng([int(cfg["seed"]), depth])
        mu = rng.uniform(-1.0, 1.0, tree.n_leaves)
        K = tree.n_leaves
        for rule in cfg["algorithms"]:
            times = []
            for rep in range(cfg["repeats"]):
                src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng([rep, depth]))
                if rule == "lucb":
                    lst = baselines.LucbState(tree, T.GAUSSIAN, 0.0, 0.01)
                    lst.initialise(src.draw_all())
                    t0 = time.perf_counter()
                    for _ in range(cfg["rounds"]):
                        leaf = lst.representative()
                        lst.add(leaf, src.draw(leaf))
                        _ = lst.decided()
                    times.append((time.perf_counter() - t0) / cfg["rounds"])
                    continue
                st = method.State(tree, 0.0, T.GAUSSIAN)
                st.initialise(src.draw_all())
                select = {"ratio": st.select_ratio, "dtracking": st.select_dtracking,
                          "uniform": lambda: st.t % K}[rule]
                t0 = time.perf_counter()
                for _ in range(cfg["rounds"]):
                    leaf = select()
                    st.add(leaf, src.draw(leaf))
                    _ = st.glr[0] > method.beta(st.t, 0.01)
                times.append((time.perf_counter() - t0) / cfg["rounds"])
            best = min(times)
            timing[rule][str(K)] = best
            repeats[rule][str(K)] = times
            if report:
                report(K, rule, best)
        agree[str(K)] = _walk_matches_scan(tree, mu, cfg["check_rounds"], depth)
    return timing, repeats, agree


def _walk_matches_scan(tree, mu, rounds: int, depth: int) -> float:
    """Share of rounds where the incremental tree walk picks the same leaf as the ratio rule
    evaluated on statistics recomputed from scratch by a full pass."""
    src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng([99, depth]))
    st = method.State(tree, 0.0, T.GAUSSIAN)
    st.initialise(src.draw_all())
    same = 0
    for _ in range(rounds):
        walk = st.select_ratio()
        fresh = method.State(tree, 0.0, T.GAUSSIAN)
        sol = T.solve(tree, st.means(), 0.0, T.GAUSSIAN, counts=st.leaf_counts())
        fresh.N, fresh.val, fresh.glr, fresh.cost = list(st.N), sol.values.tolist(), sol.glr.tolist(), sol.cost.tolist()
        same += int(fresh.select_ratio() == walk)
        st.add(walk, src.draw(walk))
    return same / rounds


def timing(params, inputs, out: Path):
    cfg = params["timing"]
    seconds, repeats, agree = measure_round_times(cfg)
    io.write_json(out / "metrics.json", {"timing_config": cfg, "walk_matches_full_pass": agree,
                                         "leaves": [cfg["branching"] ** d for d in cfg["depths"]]})
    io.write_json(out / "timing.json", {"seconds_per_round": seconds, "seconds_per_round_repeats": repeats})
    for rule, per in seconds.items():
        for i, (k, v) in enumerate(per.items()):
            tracking.active().log_metrics({f"{rule}/seconds_per_round": v}, step=int(k))
    return [out / "metrics.json", out / "timing.json"]


# ---------------------------------------------------------------- figures
def figures(params, inputs, out: Path):
    variants, scale = params["run_variants"], params["scale"]
    runs = {v: io.read_json(inputs["sims"] / v / "metrics.json") for v in variants}
    tmeta = io.read_json(inputs["timing"] / "metrics.json")
    tjson = io.read_json(inputs["timing"] / "timing.json")
    tsec = tjson["seconds_per_round"]
    figdir = out / "figures"
    rules = [r for r in NAMES if r in runs[variants[0]]["seeds"][0]["rules"]]

    # error rate against delta
    fig, axes = plotting.figure(ncols=len(variants))
    for i, v in enumerate(variants):
        ax, m = axes[0, i], runs[v]
        deltas = m["deltas"]
        for rule in rules:
            plotting.mean_band(ax, deltas, [[row["error_rate"] for row in s["rules"][rule]] for s in m["seeds"]],
                               NAMES[rule], COLORS[rule])
        ax.plot(deltas, deltas, "k--", lw=1, label="delta (allowed error)")
        ax.set_xscale("log")
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_ylim(0, 2 * max(deltas))
        ax.set_xlabel("confidence parameter delta (log scale)")
        ax.set_ylabel(f"error rate over {m['runs']} runs per seed")
        ax.set_title(f"{v} leaves: error rate vs delta ({scale})", fontsize=10)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "error_rate.png")

    # stopping time against T* log(1/delta)
    fig, axes = plotting.figure(ncols=len(variants))
    for i, v in enumerate(variants):
        ax, m = axes[0, i], runs[v]
        x = [math.log(1 / d) for d in m["deltas"]]
        for rule in rules:
            plotting.mean_band(ax, x, [[row["ratio_to_lower_bound"] for row in s["rules"][rule]] for s in m["seeds"]],
                               NAMES[rule], COLORS[rule])
        ax.axhline(1.0, color="k", ls="--", lw=1, label="T* log(1/delta) (lower bound)")
        ax.set_yscale("log")
        ax.set_xlabel("log(1/delta)")
        ax.set_ylabel("mean stopping time / (T* log(1/delta))")
        ax.set_title(f"{v} leaves: samples relative to T* log(1/delta)", fontsize=10)
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "stopping_time.png")

    # wall time per round against the number of leaves
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    for rule, per in tsec.items():
        ks = sorted(int(k) for k in per)
        ax.plot(ks, [per[str(k)] * 1e6 for k in ks], marker="o", label=NAMES[rule], color=COLORS[rule])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of leaves (log scale)")
    ax.set_ylabel("wall time per round (microseconds)")
    ax.set_title(f"threshold_mcts: per-round cost (best of {tmeta['timing_config']['repeats']} repeats, {scale})",
                 fontsize=10)
    ax.legend()
    plotting.save(fig, figdir / "round_time.png")

    rows = []
    for v in variants:
        m = runs[v]
        seeds = m["seeds"]
        for rule in rules:
            for di, delta in enumerate(m["deltas"]):
                rows.append({"variant": v, "algorithm": NAMES[rule], "delta": delta,
                             "error_rate": claims.fmt([s["rules"][rule][di]["error_rate"] for s in seeds]),
                             "mean_samples": claims.fmt([s["rules"][rule][di]["mean_samples"] for s in seeds]),
                             "samples_over_Tstar_log": claims.fmt([s["rules"][rule][di]["ratio_to_lower_bound"] for s in seeds]),
                             "t_star": claims.fmt([s["t_star"] for s in seeds]),
                             "truncated_runs": sum(s["rules"][rule][di]["truncated"] for s in seeds),
                             "lp_check_max_rel_gap": max(s["lp_check_max_rel_gap"] for s in seeds)})
    summary = {"variants": {v: {"deltas": runs[v]["deltas"], "runs": runs[v]["runs"],
                                "t_star": [s["t_star"] for s in runs[v]["seeds"]],
                                "lp_gap": [s["lp_check_max_rel_gap"] for s in runs[v]["seeds"]],
                                "rules": {rule: {key: [[row[key] for row in s["rules"][rule]] for s in runs[v]["seeds"]]
                                                 for key in ("errors", "mean_samples")} for rule in rules}}
                            for v in variants},
               "timing": {"seconds": tjson["seconds_per_round_repeats"],
                          "walk_matches": tmeta["walk_matches_full_pass"]}}
    for k, share in tmeta["walk_matches_full_pass"].items():
        rows.append({"variant": "timing", "algorithm": "ratio walk vs full pass", "delta": "",
                     "error_rate": f"same leaf in {share:.3f} of rounds ({k} leaves)"})
    columns = list(dict.fromkeys(key for row in rows for key in row))
    io.write_csv(out / "summary.csv", [{c: r.get(c, "") for c in columns} for r in rows], columns)
    claims.write_claims(out / "claims.csv", paper_claims.claim_rows(summary, scale))
    return [*sorted(figdir.glob("*.png")), out / "summary.csv", out / "claims.csv"]
