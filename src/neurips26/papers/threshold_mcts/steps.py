"""The steps the CLI calls for threshold_mcts: simulate (one job per tree family, every seed)
and timing -> figures.

simulate draws one random MAX/MIN tree instance per seed (leaf means with T* in a set range),
checks the T* recursion against the scipy max-min LP on random small trees, and runs every
sampling rule for every delta many times: error rate and stopping time against T* log(1/delta).
Each simulate job also runs the asymptotics experiment: ratio tracking at deltas down to 1e-9
with the practical threshold (many runs at the larger deltas, for the Clopper-Pearson bounds) and
the provable union threshold beside it. timing measures the wall time per round of each sampling
rule against the number of leaves on wide (depth 1) and deep trees (wall times go to timing.json,
never to metrics.json).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning
from neurips26.core.io import significant

from . import baselines, method, reference
from . import claims as paper_claims
from . import tree as T
from .claims import NAMES

COLORS = {"ratio": "#1f77b4", "ratio_global": "#9467bd", "dtracking": "#ff7f0e", "uniform": "#2ca02c",
          "lucb": "#d62728", "lucb_matched": "#e377c2", "ratio_scan": "#8c564b"}
LINEAR_RULES = ("ratio_scan", "dtracking", "lucb")  # linear in the branching or #leaves: fewer timed rounds
TIMING_NAMES = {"ratio": "ratio tracking, kinetic tournament trees", "ratio_scan": "ratio tracking, linear scan"}


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


def run_one(rule: str, tree, mu, fam, theta, delta, rng, stopping: dict, beta_kind: str | None = None) -> dict:
    if rule in ("lucb", "lucb_matched"):
        return baselines.lucb_mcts(tree, mu, fam, theta, delta, rng, max_samples=stopping["max_samples"],
                                   calibration="k" if rule == "lucb" else "matched")
    return method.track_and_stop(tree, mu, fam, theta, delta, rng, rule, beta_kind or stopping["beta"],
                                 stopping["max_samples"])


def run_rows(rule, tree, mu, fam, theta, truth, t_star, deltas, runs, seed, tag, stopping, beta_kind=None):
    """Runs of one rule at each delta (runs: one count per delta): errors, stopping times, forced share."""
    rows = []
    for di, (delta, n_runs) in enumerate(zip(deltas, runs)):
        results = [run_one(rule, tree, mu, fam, theta, delta, np.random.default_rng([int(seed), di, r, tag]),
                           stopping, beta_kind) for r in range(n_runs)]
        samples = np.array([res["samples"] for res in results], dtype=float)
        errors = np.array([res["answer"] != truth for res in results], dtype=float)
        forced = np.array([res.get("forced", 0) for res in results], dtype=float)
        rows.append({"delta": delta, "runs": n_runs, "errors": int(errors.sum()), "error_rate": significant(errors.mean()),
                     "mean_samples": significant(samples.mean()), "std_samples": significant(samples.std()),
                     "forced_share": significant((forced / samples).mean()),
                     "truncated": int(sum(res["truncated"] for res in results)),
                     "ratio_to_lower_bound": significant(samples.mean() / (t_star * math.log(1 / delta)))})
        tracking.active().log_metrics({f"seed{seed}/{rule}{'' if beta_kind is None else '/' + beta_kind}/mean_samples":
                                       samples.mean()}, step=di)
    return rows


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
    asym = params["asymptotics"]
    if len(asym["runs"]) != len(asym["deltas"]):
        raise ValueError("config key 'threshold_mcts.asymptotics.runs': need one run count per delta")
    theta = settings["theta"]
    seeds = []
    for seed in params["seeds"]:
        rng = np.random.default_rng([int(settings.get("instance_seed", 0)), int(seed)])
        tree, mu, fam, t_star, w = draw_instance(settings, rng)
        truth = bool(T.tree_value(tree, mu)[0] >= theta)
        per_rule = {}
        for rule in rules:
            print(f"seed {seed}: {rule}", flush=True)
            per_rule[rule] = run_rows(rule, tree, mu, fam, theta, truth, t_star, deltas, [runs] * len(deltas),
                                      seed, 7, stopping)
        print(f"seed {seed}: asymptotics", flush=True)
        asymptotics = {"practical": run_rows("ratio", tree, mu, fam, theta, truth, t_star, asym["deltas"], asym["runs"],
                                             seed, 11, stopping, "practical")}
        if asym["union_runs"]:
            asymptotics["union"] = run_rows("ratio", tree, mu, fam, theta, truth, t_star, asym["deltas"],
                                            [asym["union_runs"]] * len(asym["deltas"]), seed, 13, stopping, "union")
        seeds.append({"seed": seed, "leaves": tree.n_leaves, "means": [significant(m) for m in mu],
                      "root_value": significant(T.tree_value(tree, mu)[0]), "answer": truth,
                      "t_star": significant(t_star), "weights": [significant(x) for x in w], "rules": per_rule,
                      "asymptotics": asymptotics,
                      "lp_check_max_rel_gap": significant(lp_check(settings, params["lp_check_trees"], rng), 4)})
    io.write_json(out / "metrics.json", {"variant": params["variant"], "settings": settings, "deltas": deltas,
                                         "runs": runs, "stopping": stopping, "asymptotics": asym, "seeds": seeds})
    return [out / "metrics.json"]


# ---------------------------------------------------------------- timing
def timing_trees(cfg: dict) -> list[tuple[str, int, T.Tree]]:
    """(shape, #leaves, tree): wide = depth 1 with `wide` children; deep = `deep.branching`^depth."""
    out = [("wide", b, T.regular(b, 1)) for b in cfg["wide"]]
    out += [("deep", cfg["deep"]["branching"] ** d, T.regular(cfg["deep"]["branching"], d)) for d in cfg["deep"]["depths"]]
    return out


def _blocks(rounds: int, blocks: int) -> list[int]:
    """Split `rounds` timed rounds into `blocks` blocks (at least one round each)."""
    blocks = max(1, min(blocks, rounds))
    return [rounds // blocks + (i < rounds % blocks) for i in range(blocks)]


def measure_round_times(cfg: dict, report=None) -> tuple[dict, dict, dict]:
    """Seconds per round of each sampling rule (selection + update + stopping check) on wide and deep
    complete trees. A repeat's value is its fastest block of rounds (timing.blocks blocks per repeat):
    on a shared machine a block hit by preemption is discarded rather than averaged in. Also checks on every checked round that the tournament-tree walk picks the leaf
    the linear scan picks on statistics recomputed by a full pass (deterministic, goes to metrics).
    Returns {shape: {rule: {K: best}}}, {shape: {rule: {K: [every repeat]}}} and the agreement shares."""
    timing = {shape: {rule: {} for rule in cfg["algorithms"]} for shape in ("wide", "deep")}
    repeats = {shape: {rule: {} for rule in cfg["algorithms"]} for shape in ("wide", "deep")}
    agree = {}
    for shape, K, tree in timing_trees(cfg):
        rng = np.random.default_rng([int(cfg["seed"]), K, shape == "deep"])
        # every leaf 3-4 noise sd below theta = 0: from the first rounds on every empirical mean stays
        # below theta, so each MAX node disagrees and splits its weight over all of its children by the
        # gap key (the part of the walk whose cost is in question); with means on both sides of theta
        # (or close to it) a MAX node agrees and the walk only reads one argmin
        mu = rng.uniform(-4.0, -3.0, tree.n_leaves)
        for rule in cfg["algorithms"]:
            times = []
            rounds = cfg["linear_rounds"] if rule in LINEAR_RULES else cfg["rounds"]
            for rep in range(cfg["repeats"]):
                src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng([rep, K]))
                warm = max(1, rounds // 4)  # untimed rounds first: caches and allocator settle
                if rule == "lucb":
                    lst = baselines.LucbState(tree, T.GAUSSIAN, 0.0, 0.01)
                    lst.initialise(src.draw_all())
                    for _ in range(warm):
                        leaf = lst.representative()
                        lst.add(leaf, src.draw(leaf))
                    block_times = []
                    for block in _blocks(rounds, cfg["blocks"]):
                        t0 = time.perf_counter()
                        for _ in range(block):
                            leaf = lst.representative()
                            lst.add(leaf, src.draw(leaf))
                            _ = lst.decided()
                        block_times.append((time.perf_counter() - t0) / block)
                    times.append(min(block_times))
                    continue
                st = method.State(tree, 0.0, T.GAUSSIAN)
                st.initialise(src.draw_all())
                select = method.selector(st, rule)
                for _ in range(warm):
                    leaf = select()
                    st.add(leaf, src.draw(leaf))
                block_times = []
                for block in _blocks(rounds, cfg["blocks"]):
                    t0 = time.perf_counter()
                    for _ in range(block):
                        leaf = select()
                        st.add(leaf, src.draw(leaf))
                        _ = st.glr[0] > method.beta(st.t, 0.01)
                    block_times.append((time.perf_counter() - t0) / block)
                times.append(min(block_times))
            timing[shape][rule][str(K)] = min(times)
            repeats[shape][rule][str(K)] = times
            if report:
                report(shape, K, rule, min(times))
        agree[f"{shape} {K}"] = _walk_matches_scan(tree, mu, cfg["check_rounds"], K)
    return timing, repeats, agree


def _walk_matches_scan(tree, mu, rounds: int, seed: int) -> float:
    """Share of rounds where the incremental tournament-tree walk picks the same leaf as the linear
    scan of the ratio rule evaluated on statistics recomputed from scratch by a full pass."""
    src = method.RewardSource(mu, T.GAUSSIAN, np.random.default_rng([99, seed]))
    st = method.State(tree, 0.0, T.GAUSSIAN)
    st.initialise(src.draw_all())
    same = 0
    for _ in range(rounds):
        walk = st.select_ratio()
        fresh = method.State(tree, 0.0, T.GAUSSIAN)
        sol = T.solve(tree, st.means(), 0.0, T.GAUSSIAN, counts=st.leaf_counts())
        fresh.N, fresh.val, fresh.glr, fresh.cost = list(st.N), sol.values.tolist(), sol.glr.tolist(), sol.cost.tolist()
        fresh.t = st.t
        same += int(fresh.select_ratio_scan() == walk)
        st.add(walk, src.draw(walk))
    return same / rounds


def timing(params, inputs, out: Path):
    cfg = params["timing"]
    seconds, repeats, agree = measure_round_times(
        cfg, report=lambda shape, K, rule, s: print(f"{shape} {K} leaves {rule}: {s * 1e6:.1f} us/round", flush=True))
    io.write_json(out / "metrics.json", {"timing_config": cfg, "walk_matches_scan": agree,
                                         "leaves": {shape: sorted({K for sh, K, _ in timing_trees(cfg) if sh == shape})
                                                    for shape in ("wide", "deep")}})
    io.write_json(out / "timing.json", {"seconds_per_round": seconds, "seconds_per_round_repeats": repeats})
    for shape, per_rule in seconds.items():
        for rule, per in per_rule.items():
            for k, v in per.items():
                tracking.active().log_metrics({f"{shape}/{rule}/seconds_per_round": v}, step=int(k))
    return [out / "metrics.json", out / "timing.json"]


# ---------------------------------------------------------------- tuning
def tuning_records(algorithms: list[str], stopping: dict) -> list[tuning.Record]:
    """Every knob of every sampling rule the comparisons run. Nothing is tuned: the stopping
    thresholds and exploration levels are what makes each rule delta-correct (a smaller constant
    stops sooner by giving up that guarantee), and the forced-exploration schedules are the ones
    the convergence proofs use; each is fixed for every rule that has it."""
    tas = ("ratio", "ratio_global", "dtracking", "uniform")
    out = []
    for rule in algorithms:
        name = NAMES.get(rule, rule)
        if rule in tas:
            out.append(tuning.fixed(name, "stopping threshold beta(t, delta)", f"{stopping['beta']}: log((1 + log t) / delta)"
                                    if stopping["beta"] == "practical" else stopping["beta"],
                                    "the GLR threshold of Track-and-Stop (Garivier & Kaufmann 2016), the same for every "
                                    "rule with the GLR stop; it sets delta-correctness, so it is not a free constant"))
        if rule == "ratio":
            forcing = "N_c < sqrt(N_n) - b_n / 2 at every node"
        elif rule in ("ratio_global", "dtracking"):
            forcing = "N_i < sqrt(t) - K / 2 over the leaves"
        else:
            forcing = ""
        if forcing:
            out.append(tuning.fixed(name, "forced exploration", forcing,
                                    "D-tracking's schedule (Garivier & Kaufmann 2016), which the convergence of "
                                    "tracking needs; no constant is tuned for any rule"))
        if rule == "uniform":
            out.append(tuning.fixed(name, "sampling", "round robin", "the uniform baseline has no knob"))
        if rule in ("lucb", "lucb_matched"):
            level = "log(K (1 + log n) / delta)" if rule == "lucb" else "log((1 + log n) / delta)"
            out.append(tuning.fixed(name, "exploration level b(n)", level,
                                    "LUCB-MCTS's calibration (Kaufmann & Koolen 2017), a union bound over the K leaves"
                                    if rule == "lucb" else
                                    "the same log(1/delta) + log log term as Track-and-Stop's threshold, without "
                                    "LUCB-MCTS's factor K: the baseline given the method's own calibration"))
        out.append(tuning.fixed(name, "max_samples", stopping["max_samples"],
                                "the same sample cap for every rule (a run that reaches it is counted as truncated)"))
    return out


# ---------------------------------------------------------------- figures
def _kl_delta(delta: float) -> float:
    """kl(delta, 1 - delta): the finite-delta lower bound is T* kl(delta, 1 - delta)."""
    return float(T.kl_bernoulli(delta, 1 - delta))


def _pooled(seeds, get, di):
    rows = [get(s)[di] for s in seeds]
    return sum(r["errors"] for r in rows), sum(r["runs"] for r in rows)


def figures(params, inputs, out: Path):
    variants, scale = params["run_variants"], params["scale"]
    runs = {v: io.read_json(inputs["sims"] / v / "metrics.json") for v in variants}
    tmeta = io.read_json(inputs["timing"] / "metrics.json")
    tjson = io.read_json(inputs["timing"] / "timing.json")
    tsec = tjson["seconds_per_round"]
    figdir = out / "figures"
    rules = [r for r in NAMES if r in runs[variants[0]]["seeds"][0]["rules"]]
    kinds = [k for k in ("practical", "union") if k in runs[variants[0]]["seeds"][0]["asymptotics"]]
    asym_label = {"practical": "TaS ratio, practical beta (asymptotics runs)",
                  "union": "TaS ratio, provable beta (union)"}
    asym_color = {"practical": "#17becf", "union": "#7f7f7f"}

    # error rate against delta: pooled over instances, Clopper-Pearson 95% interval
    fig, axes = plotting.figure(ncols=len(variants), width=6.0, height=4.4)
    for i, v in enumerate(variants):
        ax, m = axes[0, i], runs[v]
        series = [(NAMES[r], COLORS[r], m["deltas"], lambda s, r=r: s["rules"][r]) for r in rules]
        series += [(asym_label[k], asym_color[k], m["asymptotics"]["deltas"], lambda s, k=k: s["asymptotics"][k])
                   for k in kinds]
        for j, (label, color, deltas, get) in enumerate(series):
            xs, rate, lo, hi = [], [], [], []
            for di, delta in enumerate(deltas):
                e, n = _pooled(m["seeds"], get, di)
                cl, ch = claims.clopper_pearson(e, n)
                xs.append(delta * (1.08 ** (j - len(series) / 2)))  # small offsets keep the bars apart
                rate.append(e / n)
                lo.append(cl)
                hi.append(ch)
            xs, rate, lo, hi = map(np.asarray, (xs, rate, lo, hi))
            ax.plot(xs, hi, marker="v", ls=":", color=color, lw=1, label=f"{label}: 95% CP upper bound")
            pos = rate > 0
            if pos.any():
                ax.errorbar(xs[pos], rate[pos], yerr=[rate[pos] - lo[pos], hi[pos] - rate[pos]], fmt="o",
                            color=color, capsize=2)
        dl = sorted({*m["deltas"], *m["asymptotics"]["deltas"]})
        ax.plot(dl, dl, "k--", lw=1, label="delta (allowed error)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("confidence parameter delta (log scale)")
        ax.set_ylabel("error rate (dots: observed; triangles: CP upper bound)")
        ax.set_title(f"{v}: error rate vs delta, pooled over {len(m['seeds'])} instances ({scale})", fontsize=9)
        ax.legend(fontsize=5)
    plotting.save(fig, figdir / "error_rate.png")

    # stopping time / T* against log(1/delta), with the finite-delta lower bound
    fig, axes = plotting.figure(ncols=len(variants), width=6.0, height=4.4)
    for i, v in enumerate(variants):
        ax, m = axes[0, i], runs[v]
        ts = [s["t_star"] for s in m["seeds"]]
        x = [math.log(1 / d) for d in m["deltas"]]
        for rule in rules:
            plotting.mean_band(ax, x, [[row["mean_samples"] / t for row in s["rules"][rule]] for s, t in zip(m["seeds"], ts)],
                               NAMES[rule], COLORS[rule])
        xa = [math.log(1 / d) for d in m["asymptotics"]["deltas"]]
        for k in kinds:
            plotting.mean_band(ax, xa, [[row["mean_samples"] / t for row in s["asymptotics"][k]]
                                        for s, t in zip(m["seeds"], ts)], asym_label[k], asym_color[k])
        grid = np.linspace(min(x + xa), max(x + xa), 50)
        ax.plot(grid, grid, "k--", lw=1, label="T* log(1/delta) (asymptotic rate, slope 1)")
        ax.plot(grid, [_kl_delta(math.exp(-g)) for g in grid], "k:", lw=1.2,
                label="finite-delta lower bound T* kl(delta, 1-delta)")
        ax.set_yscale("log")
        ax.set_xlabel("log(1/delta)")
        ax.set_ylabel("mean stopping time / T*")
        ax.set_title(f"{v}: E[tau] / T* vs log(1/delta) ({scale})", fontsize=9)
        ax.legend(fontsize=5)
    plotting.save(fig, figdir / "stopping_time.png")

    # wall time per round against the number of leaves: wide (depth 1) and deep trees
    tcfg = tmeta["timing_config"]
    fig, axes = plotting.figure(ncols=2, width=5.6, height=4.2)
    for i, shape in enumerate(("wide", "deep")):
        ax = axes[0, i]
        for rule, per in tsec[shape].items():
            if not per:
                continue
            ks = sorted(int(k) for k in per)
            ax.plot(ks, [per[str(k)] * 1e6 for k in ks], marker="o", label=TIMING_NAMES.get(rule, NAMES.get(rule, rule)),
                    color=COLORS.get(rule))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("number of leaves (log scale)")
        ax.set_ylabel("wall time per round (microseconds)")
        what = "depth 1, K children" if shape == "wide" else f"{tcfg['deep']['branching']} children per node, depth 1-{max(tcfg['deep']['depths'])}"
        ax.set_title(f"{shape} trees ({what}): best of {tcfg['repeats']} repeats ({scale})", fontsize=8)
        ax.legend(fontsize=6)
    plotting.save(fig, figdir / "round_time.png")

    rows = []
    for v in variants:
        m = runs[v]
        seeds = m["seeds"]
        for rule in rules:
            for di, delta in enumerate(m["deltas"]):
                e, n = _pooled(seeds, lambda s: s["rules"][rule], di)
                rows.append({"variant": v, "algorithm": NAMES[rule], "experiment": "comparison", "delta": delta,
                             "errors": f"{e}/{n}", "error_rate": claims.fmt([s["rules"][rule][di]["error_rate"] for s in seeds]),
                             "mean_samples": claims.fmt([s["rules"][rule][di]["mean_samples"] for s in seeds]),
                             "samples_over_Tstar_log": claims.fmt([s["rules"][rule][di]["ratio_to_lower_bound"] for s in seeds]),
                             "forced_share": claims.fmt([s["rules"][rule][di]["forced_share"] for s in seeds]),
                             "t_star": claims.fmt([s["t_star"] for s in seeds]),
                             "truncated_runs": sum(s["rules"][rule][di]["truncated"] for s in seeds),
                             "lp_check_max_rel_gap": max(s["lp_check_max_rel_gap"] for s in seeds)})
        for k in kinds:
            for di, delta in enumerate(m["asymptotics"]["deltas"]):
                e, n = _pooled(seeds, lambda s: s["asymptotics"][k], di)
                rows.append({"variant": v, "algorithm": asym_label[k], "experiment": "asymptotics", "delta": delta,
                             "errors": f"{e}/{n}",
                             "error_rate": claims.fmt([s["asymptotics"][k][di]["error_rate"] for s in seeds]),
                             "mean_samples": claims.fmt([s["asymptotics"][k][di]["mean_samples"] for s in seeds]),
                             "samples_over_Tstar_log": claims.fmt([s["asymptotics"][k][di]["ratio_to_lower_bound"] for s in seeds]),
                             "forced_share": claims.fmt([s["asymptotics"][k][di]["forced_share"] for s in seeds]),
                             "t_star": claims.fmt([s["t_star"] for s in seeds]),
                             "truncated_runs": sum(s["asymptotics"][k][di]["truncated"] for s in seeds),
                             "kl_lower_bound_over_Tstar": f"{_kl_delta(delta):.4g}"})
    summary = {"variants": {v: {"deltas": runs[v]["deltas"], "runs": runs[v]["runs"],
                                "t_star": [s["t_star"] for s in runs[v]["seeds"]],
                                "lp_gap": [s["lp_check_max_rel_gap"] for s in runs[v]["seeds"]],
                                "rules": {rule: {key: [[row[key] for row in s["rules"][rule]] for s in runs[v]["seeds"]]
                                                 for key in ("errors", "mean_samples")} for rule in rules},
                                "asymptotics": {"deltas": runs[v]["asymptotics"]["deltas"],
                                                "runs": runs[v]["asymptotics"]["runs"],
                                                "slope_max_delta": runs[v]["asymptotics"]["slope_max_delta"],
                                                **{k: {key: [[row[key] for row in s["asymptotics"][k]] for s in runs[v]["seeds"]]
                                                       for key in ("errors", "mean_samples")} for k in kinds}}}
                            for v in variants},
               "timing": {"seconds": tjson["seconds_per_round_repeats"],
                          "walk_matches": tmeta["walk_matches_scan"]}}
    for shape, per_rule in tsec.items():
        for rule, per in per_rule.items():
            for k, sec in per.items():
                rows.append({"variant": f"timing {shape}", "algorithm": TIMING_NAMES.get(rule, NAMES.get(rule, rule)),
                             "experiment": "round time", "delta": "", "leaves": k, "us_per_round": f"{sec * 1e6:.3g}"})
    for k, share in tmeta["walk_matches_scan"].items():
        rows.append({"variant": "timing", "algorithm": "tournament walk vs linear scan", "experiment": "check",
                     "delta": "", "leaves": k, "error_rate": f"same leaf in {share:.3f} of rounds"})
    written = claims.write_tables(out, rows, paper_claims.claim_rows(summary, scale))
    # the rules and stopping settings the simulate jobs ran (their metrics.json)
    records = tuning_records(rules, runs[variants[0]]["stopping"])
    return [*written, tuning.write_csv(out / "tuning.csv", paper_claims.P, records)]
