"""The steps the CLI calls for crl_spectral: train (one job per seed) -> evaluate -> figures.

train: on each discrete joint, rank-D tables fitted by population InfoNCE and by the spectral
contrastive loss, beside the truncated SVD of the PMI; their PMI error, excess InfoNCE risk and
exact retrieval error. On correlated Gaussians, neural encoders of several widths and output
dimensions trained with in-batch InfoNCE (Lightning), and a spectral-contrastive network.
evaluate: every seed together, plus the risk-to-retrieval calibration exponent, in metrics.json.
figures: the spectra, error against D, the neural sweeps, the calibration scatter; claims.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning

from . import pmi as P
from .claims import TAIL_CONSTANT_MAX, claim_rows
from .retrieval import infonce_excess_risk, retrieval_error, tsybakov_exponent

PAPER = "crl_spectral"
# a D whose best error (the tail) is below this share of the target's norm is fitted exactly (the
# exact-fit check allows 1%; the per-D rows count only D with tail_D above 1% of ||PMI||): there the
# error shrinks towards 0 without end, and its change is settled relative to the target's norm
EXACT_FIT_TAIL = 1e-2


def _kernel_name(kernel: dict) -> str:
    return kernel.get("name") or f"{kernel['kind']}_{kernel['bandwidth']:g}"


def _discrete_joint(d: dict, kernel: dict) -> P.DiscreteJoint:
    # the same joint for every seed: seeds vary the encoders' initialisation
    rng = np.random.default_rng(d["data_seed"])
    return P.discrete_joint(kernel["kind"], d["states"], kernel["bandwidth"], d["noise"], d["marginal_spread"], rng)


def _measure(joint: P.DiscreteJoint, pmi_estimate: np.ndarray, ranking: np.ndarray, candidates: int,
             bayes_error: float) -> dict:
    return {
        "error": joint.error_mod_constant(pmi_estimate),
        "excess_risk_xy": infonce_excess_risk(joint, pmi_estimate, "xy"),
        "excess_risk_sym": infonce_excess_risk(joint, pmi_estimate, "sym"),
        "retrieval_excess": retrieval_error(joint, ranking, candidates) - bayes_error,
    }


def _train_discrete(d: dict, seed: int) -> dict:
    """Every kernel x D: both losses' tables, each stopped when its error has settled (the stopping
    tolerance is the one of the check `infonce_converged`; `d["iterations"]` caps it)."""
    from .claims import CONVERGENCE_TOLERANCE as tolerance
    from .method import fit_tables, log_score, spectral_closed_form

    out = {}
    for kernel_index, kernel in enumerate(d["kernels"]):
        name = _kernel_name(kernel)
        joint = _discrete_joint(d, kernel)
        pmi = joint.pmi()
        sv = P.spectrum(joint)
        dims = [int(k) for k in d["dims"] if k <= min(joint.n)]
        bayes = retrieval_error(joint, pmi, d["candidates"])
        res = {"singular_values": sv.tolist(), "norm": float(np.sqrt((sv ** 2).sum())), "dims": dims,
               "rank": P.numerical_rank(sv), "tail": P.spectral_tails(sv, dims).tolist(),
               "tail_next": P.spectral_tails(sv, [k + 1 for k in dims]).tolist(),
               "bayes_retrieval_error": bayes, "mutual_information": float((joint.joint * pmi).sum()),
               "methods": {"infonce": [], "spectral": [], "truncated_svd": []},
               "spectral_gap_to_closed_form": [], "calibration": []}
        ratio = joint.density_ratio()
        norm = res["norm"]
        for i, dim in enumerate(dims):
            fit_seed = 1000 * seed + i
            exact = res["tail"][i] <= EXACT_FIT_TAIL * norm
            info = fit_tables(joint, dim, "infonce", d["iterations"], fit_seed, d["init_scale"],
                              monitor=joint.error_mod_constant, tolerance=tolerance, floor=norm if exact else 0.0)
            res["methods"]["infonce"].append(_measure(joint, info.scores, info.scores, d["candidates"], bayes))
            # the error at the start of the last chunk: the change over it is what the stopping rule read
            res["methods"]["infonce"][-1].update(error_earlier=info.monitor_earlier, iterations=info.iterations,
                                                 iterations_earlier=info.iterations_earlier, converged=info.converged)
            # the spectral loss is ||s - R||^2 - ||R||^2 (R the density ratio): the same rule on its own
            # target, whose best rank-D error is that of the closed form
            closed = spectral_closed_form(joint, dim)
            ratio_norm = joint.l2(ratio)
            exact = joint.l2(closed - ratio) <= EXACT_FIT_TAIL * ratio_norm
            spec = fit_tables(joint, dim, "spectral", d["iterations"], fit_seed, d["init_scale"],
                              monitor=lambda s: joint.l2(s - ratio), tolerance=tolerance,
                              floor=ratio_norm if exact else 0.0)
            # the spectral loss targets the density ratio: its PMI estimate is the log of the score
            res["methods"]["spectral"].append(_measure(joint, log_score(spec.scores, d["spectral_floor"]), spec.scores,
                                                       d["candidates"], bayes))
            res["methods"]["spectral"][-1].update(iterations=spec.iterations, converged=spec.converged)
            # its excess over the rank-D optimum, relative to ||R||^2 (the closed form is not unique
            # at tied singular values)
            res["spectral_gap_to_closed_form"].append(
                (joint.l2(spec.scores - ratio) ** 2 - joint.l2(closed - ratio) ** 2) / joint.l2(ratio) ** 2)
            svd = P.truncated_svd(joint, joint.centred(pmi), dim)
            res["methods"]["truncated_svd"].append(_measure(joint, svd, svd, d["candidates"], bayes))
            tracking.active().log_metrics({f"{name}/infonce_error": res["methods"]["infonce"][-1]["error"],
                                           f"{name}/tail": res["tail"][i]}, step=dim)
            print(f"{name} D={dim}: tail {res['tail'][i]:.4f}  infonce {res['methods']['infonce'][-1]['error']:.4f}"
                  f"  spectral {res['methods']['spectral'][-1]['error']:.4f}"
                  f"  tsvd {res['methods']['truncated_svd'][-1]['error']:.4f}", flush=True)
        res["calibration"] = _perturbations(joint, d, seed, kernel_index, bayes)
        res["tsybakov"] = tsybakov_exponent(joint)
        out[name] = res
    return out


def _perturbations(joint: P.DiscreteJoint, d: dict, seed: int, kernel_index: int, bayes: float) -> list[dict]:
    """Controlled perturbations of the optimum: s = PMI + t ||PMI|| Delta with Delta a random
    centred table of unit L2(p_X x p_Y) norm (one per direction and seed), for t on a geometric
    grid; excess InfoNCE risk and exact excess retrieval error of each, and the excess spectral
    contrastive risk of the same ranking read as a density ratio, exp(s): ||exp(s) - R||^2 in
    L2(p_X x p_Y) (the calibration null: a surrogate without InfoNCE scored on the same scores)."""
    rng = np.random.default_rng([d["data_seed"], seed, kernel_index])
    pmi = joint.pmi()
    ratio = joint.density_ratio()
    norm = joint.l2(joint.centred(pmi))
    pert = d["perturbations"]
    points = []
    for k in range(pert["directions"]):
        delta = joint.centred(rng.standard_normal(joint.n))
        delta = delta / joint.l2(delta)
        for t in np.geomspace(pert["smallest"], pert["largest"], pert["steps"]):
            scores = pmi + t * norm * delta
            points.append({"direction": k, "t": float(t),
                           "excess_risk_xy": infonce_excess_risk(joint, scores, "xy"),
                           "excess_spectral_risk": joint.l2(np.exp(scores) - ratio) ** 2,
                           "retrieval_excess": retrieval_error(joint, scores, d["candidates"]) - bayes})
    return points


def _retrieval_mc(scores: np.ndarray, candidates: int, rng: np.random.Generator) -> float:
    """x_i against its own y_i and K - 1 other y_j of the evaluation set; ties count as misses."""
    n = len(scores)
    negatives = (np.arange(n)[:, None] + rng.integers(1, n, size=(n, candidates - 1))) % n
    positive = scores[np.arange(n), np.arange(n)]
    return float(np.mean(scores[np.arange(n)[:, None], negatives].max(1) >= positive))


def _train_neural(c: dict, params: dict, seed: int, out: Path) -> dict:
    from .method import log_score

    import torch

    from neurips26.core.seeding import generator
    from neurips26.core.trainer import fit, make_trainer

    from .neural import ContrastivePair

    pair = P.GaussianPair(c["dim"], c["rho"])
    sv = pair.spectrum()
    rank = pair.rank
    norm = float(np.sqrt((sv ** 2).sum()))
    eval_rng = np.random.default_rng([c["data_seed"], seed])          # each seed its own evaluation sample
    x_eval, y_eval = pair.sample(c["eval_points"], eval_rng)            # paired, for retrieval
    x_ind, _ = pair.sample(c["eval_points"], eval_rng)                  # independent x and y grid
    _, y_ind = pair.sample(c["eval_points"], eval_rng)
    pmi_grid = pair.pmi(x_ind, y_ind)
    bayes = _retrieval_mc(pair.pmi(x_eval, y_eval), c["candidates"], np.random.default_rng([c["data_seed"], seed, 1]))
    x_train, y_train = pair.sample(c["train_pairs"], np.random.default_rng(c["data_seed"] + 100 + seed))
    dataset = torch.utils.data.TensorDataset(torch.tensor(x_train, dtype=torch.float32),
                                             torch.tensor(y_train, dtype=torch.float32))
    widest = max(c["widths"])
    fits = [("infonce", w, rank) for w in c["widths"]] + [("infonce", widest, k) for k in c["dims"] if k != rank]
    if c["spectral_baseline"]:
        fits.append(("spectral", widest, rank))
    res = {"rank": rank, "singular_values": sv.tolist(), "norm": norm, "bayes_retrieval_error": bayes, "fits": []}
    for index, (loss, width, dim) in enumerate(fits):
        torch.manual_seed(1000 * seed + index)
        model = ContrastivePair(c["dim"], width, dim, c["depth"], c["lr"], loss)
        loader = torch.utils.data.DataLoader(dataset, batch_size=c["batch_size"], shuffle=True, drop_last=True,
                                             generator=generator(1000 * seed + index))
        name = f"{loss}_w{width}_d{dim}"
        trainer, _ = make_trainer(out / "neural" / name, {**params, "fit": name}, c["steps"],
                                  log_every_n_steps=max(1, c["steps"] // 10))
        # no resume: a fit takes seconds, and a checkpoint left by older code must not be reused
        fit(trainer, model, loader, None)
        grid = model.scores(x_ind, y_ind)
        paired = model.scores(x_eval, y_eval)
        estimate = log_score(grid, c["spectral_floor"]) if loss == "spectral" else grid
        error = P.error_mod_constant_samples(estimate, pmi_grid)
        row = {"loss": loss, "width": width, "dim": dim, "error": error, "relative_error": error / norm,
               "tail": float(P.spectral_tails(sv, [dim])[0]), "tail_next": float(P.spectral_tails(sv, [dim + 1])[0]),
               "retrieval_excess": _retrieval_mc(paired, c["candidates"],
                                                 np.random.default_rng([c["data_seed"], seed, 1])) - bayes}
        res["fits"].append(row)
        tracking.active().log_metrics({f"neural/{name}/relative_error": row["relative_error"]})
        print(f"neural {name}: relative error {row['relative_error']:.4f} (tail/norm {row['tail'] / norm:.4f})", flush=True)
    return res


# ---------------------------------------------------------------- train
def train(params, inputs, out: Path):
    """One seed: every discrete kernel x D x method, then the neural encoders on Gaussians."""
    seed = params["seed"]
    result = {"seed": seed, "discrete": _train_discrete(params["discrete"], seed),
              "continuous": _train_neural(params["continuous"], params, seed, out)}
    io.write_json(out / "fits.json", result)
    return [out / "fits.json"]


# ---------------------------------------------------------------- evaluate
def calibration_exponent(points: list[dict], max_risk: float, floor: float = 1e-10,
                         risk: str = "excess_risk_xy") -> float:
    """Least-squares slope of log excess retrieval error on log excess `risk` (InfoNCE by default),
    over the points with excess InfoNCE risk in (floor, max_risk] and a positive excess retrieval
    error: every risk is read on the same points."""
    pts = [(p[risk], p["retrieval_excess"]) for p in points
           if floor < p["excess_risk_xy"] <= max_risk and p["retrieval_excess"] > floor and p[risk] > floor]
    if len(pts) < 3:
        return float("nan")
    lx, ly = np.log(np.array(pts)).T
    return float(np.polyfit(lx, ly, 1)[0])


def tail_ratio(errors: list[float], tails: list[float], norm: float, min_tail: float) -> float:
    """Mean over D of error / tail_D, over the D whose tail is above min_tail * ||K||."""
    ratios = [e / t for e, t in zip(errors, tails) if t > min_tail * norm]
    return float(np.mean(ratios)) if ratios else float("nan")


def evaluate(params, inputs, out: Path):
    cal = params["calibration"]
    runs = [io.read_json(inputs["train"] / f"seed{s}" / "fits.json") for s in params["seeds"]]
    kernels = list(runs[0]["discrete"])
    metrics = {"seeds": params["seeds"], "discrete": {}, "continuous": {}, "calibration": {}}
    for name in kernels:
        first = runs[0]["discrete"][name]
        entry = {k: first[k] for k in ("singular_values", "norm", "dims", "rank", "tail", "tail_next",
                                       "bayes_retrieval_error", "mutual_information")}
        for method in first["methods"]:
            for key in ("error", "excess_risk_xy", "excess_risk_sym", "retrieval_excess"):
                entry.setdefault(method, {})[key] = [[r["discrete"][name]["methods"][method][i][key] for r in runs]
                                                    for i in range(len(first["dims"]))]
            errors_by_seed = [[m["error"] for m in r["discrete"][name]["methods"][method]] for r in runs]
            entry[method]["tail_ratio"] = [tail_ratio(e, first["tail"], first["norm"], cal["min_tail"])
                                           for e in errors_by_seed]
        entry["spectral_gap_to_closed_form"] = [max(r["discrete"][name]["spectral_gap_to_closed_form"]) for r in runs]
        entry["infonce"]["error_earlier"] = [[r["discrete"][name]["methods"]["infonce"][i]["error_earlier"] for r in runs]
                                             for i in range(len(first["dims"]))]
        for method in ("infonce", "spectral"):
            for key in ("iterations", "converged"):
                entry[method][key] = [[r["discrete"][name]["methods"][method][i][key] for r in runs]
                                      for i in range(len(first["dims"]))]
        entry["tsybakov"] = first["tsybakov"]
        metrics["discrete"][name] = entry
    points = {s: [p for name in kernels for p in r["discrete"][name]["calibration"]] for s, r in zip(params["seeds"], runs)}
    metrics["calibration"] = {
        "exponent": [calibration_exponent(points[s], cal["max_excess_risk"]) for s in params["seeds"]],
        "null_exponent": [calibration_exponent(points[s], cal["max_excess_risk"], risk="excess_spectral_risk")
                          for s in params["seeds"]],
        "slow_rate_exponent": cal["slow_rate_exponent"],
        "tsybakov_alpha": {name: runs[0]["discrete"][name]["tsybakov"]["alpha"] for name in kernels},
        "tsybakov_degenerate": {name: runs[0]["discrete"][name]["tsybakov"].get("degenerate", "") for name in kernels},
        "points": {str(s): [[p["excess_risk_xy"], p["retrieval_excess"]] for p in pts] for s, pts in points.items()},
    }
    cont = runs[0]["continuous"]
    fits = {}
    for i, fit in enumerate(cont["fits"]):
        key = f"{fit['loss']}_w{fit['width']}_d{fit['dim']}"
        fits[key] = {k: fit[k] for k in ("loss", "width", "dim", "tail", "tail_next")}
        for k in ("error", "relative_error", "retrieval_excess"):
            fits[key][k] = [r["continuous"]["fits"][i][k] for r in runs]
    metrics["continuous"] = {k: cont[k] for k in ("rank", "singular_values", "norm")}
    metrics["continuous"]["bayes_retrieval_error"] = [r["continuous"]["bayes_retrieval_error"] for r in runs]
    metrics["continuous"]["fits"] = fits
    for s, e in zip(params["seeds"], metrics["calibration"]["exponent"]):
        tracking.active().log_metrics({"calibration_exponent": e}, step=s)
    io.write_json(out / "metrics.json", metrics)
    return [out / "metrics.json"]


# ---------------------------------------------------------------- tuning
def tuning_records(discrete: dict, continuous: dict) -> list[tuning.Record]:
    """Every knob of the fits the claims compare. Nothing is tuned, for the method or a baseline:
    the discrete tables of both losses are fitted by the same full-batch L-BFGS (steps by line
    search), the truncated SVD is closed form, and every neural encoder (InfoNCE at every width
    and D, and the spectral network) shares one Adam schedule set in the config; the paper, a
    theory paper, tunes none of them."""
    from .claims import CONVERGENCE_TOLERANCE
    from .method import FIRST_CHUNK, LBFGS_HISTORY
    from .neural import LR_FLOOR

    tables = ("InfoNCE tables", "spectral contrastive tables")
    same_tables = "the same for both losses, every joint, D and seed; not tuned"
    out = []
    for name in tables:
        out += [tuning.fixed(name, "step size", "line search",
                             "full-batch L-BFGS with a strong-Wolfe line search (lr 1 is the trial step): no learning rate"),
                tuning.fixed(name, "iterations", discrete["iterations"],
                             f"L-BFGS cap: each fit stops earlier once its error changed by at most "
                             f"{CONVERGENCE_TOLERANCE:g} (relative) over a chunk of iterations (chunks double from "
                             f"{FIRST_CHUNK}); {same_tables}"),
                tuning.fixed(name, "history_size", LBFGS_HISTORY, f"L-BFGS memory; {same_tables}"),
                tuning.fixed(name, "init_scale", discrete["init_scale"], f"scale of the random initial tables; {same_tables}")]
    out.append(tuning.fixed("spectral contrastive tables", "spectral_floor", discrete["spectral_floor"],
                            "its PMI estimate is log max(s, floor) (the error rows); retrieval ranks by s itself, "
                            "so the retrieval comparison does not depend on it"))
    out.append(tuning.fixed("truncated SVD", "none", "closed form", "the L2-optimal rank-D fit: no knob"))
    nets = ["neural InfoNCE (every width and D)"] + (["neural spectral contrastive"] if continuous["spectral_baseline"] else [])
    same_nets = "one value for every encoder, InfoNCE at every width and D and the spectral network; not tuned"
    for name in nets:
        out += [tuning.fixed(name, "lr", continuous["lr"], f"Adam, cosine to {LR_FLOOR:g} lr; {same_nets}"),
                tuning.fixed(name, "steps", continuous["steps"], same_nets),
                tuning.fixed(name, "batch_size", continuous["batch_size"], same_nets),
                tuning.fixed(name, "depth", continuous["depth"], f"hidden layers; {same_nets}")]
    out.append(tuning.fixed(nets[0], "temperature", "none",
                            "scores f(x)^T g(y) are unscaled: a temperature is absorbed by the encoders' output scale"))
    return out


# ---------------------------------------------------------------- figures
COLOURS = {"infonce": "#d62728", "spectral": "#1f77b4", "truncated_svd": "#444444"}
LABELS = {"infonce": "InfoNCE, rank-D tables", "spectral": "spectral contrastive (log score)",
          "truncated_svd": "truncated SVD of PMI"}


def _mean(values) -> float:
    vals = [v for v in values if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")


def figures(params, inputs, out: Path):
    m = io.read_json(inputs["metrics"])
    scale, figdir = params["scale"], out / "figures"
    kernels = list(m["discrete"])
    cont = m["continuous"]
    fits = cont["fits"]
    n_seeds = len(m["seeds"])

    # spectra of the centred PMI operators
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    for name in kernels:
        sv = np.array(m["discrete"][name]["singular_values"])
        ax.semilogy(np.arange(1, len(sv) + 1), np.maximum(sv, 1e-16), "o-", ms=3, label=f"discrete {name} (rank {m['discrete'][name]['rank']})")
    sv = np.array(cont["singular_values"])
    ax.semilogy(np.arange(1, len(sv) + 1), sv, "s", ms=6, label=f"Gaussian m={len(sv) - 2}, rank {cont['rank']} (closed form)")
    ax.set_ylim(bottom=max(ax.get_ylim()[0], 1e-8))  # zero singular values sit at float round-off
    ax.set_xlabel("index k")
    ax.set_ylabel("singular value s_k of centred PMI operator")
    ax.set_title(f"crl_spectral: PMI operator spectra ({scale} scale)")
    ax.legend()
    plotting.save(fig, figdir / "spectrum.png")

    # error against D, per kernel, with the tail sandwich
    fig, axes = plotting.figure(ncols=len(kernels))
    for ax, name in zip(axes[0], kernels):
        e = m["discrete"][name]
        dims = e["dims"]
        ax.fill_between(dims, e["tail_next"], e["tail"], color="#bbbbbb", alpha=0.5,
                        label="[tail_{D+1}, tail_D]: best rank-D + const")
        ax.plot(dims, e["tail"], "k--", lw=1, label="spectral tail sqrt(sum_{k>D} s_k^2)")
        for method in ("infonce", "spectral", "truncated_svd"):
            plotting.mean_band(ax, dims, np.array(e[method]["error"]).T.tolist(), LABELS[method], COLOURS[method])
        ax.set_yscale("log")
        ax.set_ylim(bottom=max(ax.get_ylim()[0], 1e-5))  # exact fits sit at float round-off
        ax.set_xlabel("encoder dimension D")
        ax.set_ylabel("||s - PMI||, L2(p_X x p_Y), mod const")
        ax.set_title(f"{name}: error vs D")
        ax.legend()
    plotting.save(fig, figdir / "error_vs_dim.png")

    # neural encoders on correlated Gaussians
    rank, norm = cont["rank"], cont["norm"]
    fig, axes = plotting.figure(ncols=2)
    widths = sorted(f["width"] for k, f in fits.items() if f["loss"] == "infonce" and f["dim"] == rank)
    ax = axes[0, 0]
    runs = [[fits[f"infonce_w{w}_d{rank}"]["relative_error"][s] for w in widths] for s in range(n_seeds)]
    plotting.mean_band(ax, widths, runs, f"InfoNCE, D = rank = {rank}", COLOURS["infonce"])
    spectral_key = f"spectral_w{max(widths)}_d{rank}"
    if spectral_key in fits:
        ax.plot([max(widths)], [_mean(fits[spectral_key]["relative_error"])], "D", color=COLOURS["spectral"],
                label=f"spectral contrastive, width {max(widths)} (n={n_seeds})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("encoder width (2 hidden layers)")
    ax.set_ylabel("relative PMI error ||s - PMI|| / ||PMI|| (mod const)")
    ax.set_title("Gaussian PMI: error vs width")
    ax.legend()
    ax = axes[0, 1]
    dims = sorted(f["dim"] for f in fits.values() if f["loss"] == "infonce" and f["width"] == max(widths))
    runs = [[fits[f"infonce_w{max(widths)}_d{k}"]["relative_error"][s] for k in dims] for s in range(n_seeds)]
    tails = np.array(P.spectral_tails(np.array(cont["singular_values"]), dims)) / norm
    tails_next = np.array(P.spectral_tails(np.array(cont["singular_values"]), [k + 1 for k in dims])) / norm
    ax.fill_between(dims, tails_next, tails, color="#bbbbbb", alpha=0.5, label="[tail_{D+1}, tail_D] / ||PMI||")
    plotting.mean_band(ax, dims, runs, f"InfoNCE, width {max(widths)}", COLOURS["infonce"])
    ax.axvline(rank, color="#888888", ls=":", label=f"rank of PMI = m + 2 = {rank}")
    ax.set_xlabel("encoder dimension D")
    ax.set_ylabel("relative PMI error (mod const)")
    ax.set_title("Gaussian PMI: error vs D")
    ax.legend()
    plotting.save(fig, figdir / "neural.png")

    # per-D ratio error_D / tail_D of the InfoNCE tables, final and one doubling earlier
    fig, axes = plotting.figure(ncols=len(kernels))
    for ax, name in zip(axes[0], kernels):
        e = m["discrete"][name]
        ok = [i for i, t in enumerate(e["tail"]) if t > params["calibration"]["min_tail"] * e["norm"]]
        dims = [e["dims"][i] for i in ok]
        final = [[e["infonce"]["error"][i][s] / e["tail"][i] for i in ok] for s in range(n_seeds)]
        early = [[e["infonce"]["error_earlier"][i][s] / e["tail"][i] for i in ok] for s in range(n_seeds)]
        most = max(max(e["infonce"]["iterations"][i]) for i in ok) if ok else 0
        plotting.mean_band(ax, dims, final, f"InfoNCE, stopped when settled (at most {most} L-BFGS iterations)",
                           COLOURS["infonce"])
        ax.plot(dims, np.mean(early, 0), "k:", marker=".", label="same, one chunk of iterations before the stop")
        ax.axhline(TAIL_CONSTANT_MAX, color="#888888", ls="--", label=f"C = {TAIL_CONSTANT_MAX:g} (fixed before the run)")
        ax.axhline(1.0, color="#bbbbbb", ls="-", lw=0.8, label="1 (truncated SVD)")
        ax.set_xlabel("encoder dimension D")
        ax.set_ylabel("error_D / tail_D")
        ax.set_ylim(0, TAIL_CONSTANT_MAX * 1.2)
        ax.set_title(f"{name}: ratio per D")
        ax.legend(fontsize=7)
    plotting.save(fig, figdir / "tail_ratio.png")

    # calibration: excess retrieval error against excess InfoNCE risk, perturbations of the optimum
    fig, axes = plotting.figure()
    ax = axes[0, 0]
    cal = m["calibration"]
    for s, pts in cal["points"].items():
        arr = np.array([p for p in pts if p[0] > 1e-10 and p[1] > 1e-10])
        if len(arr):
            ax.loglog(arr[:, 0], arr[:, 1], ".", alpha=0.6, label=f"seed {s}: PMI + t Delta (all joints)")
    exps = [e for e in cal["exponent"] if not np.isnan(e)]
    if exps:
        xs = np.geomspace(1e-6, params["calibration"]["max_excess_risk"], 20)
        allp = np.array([p for pts in cal["points"].values() for p in pts if p[0] > 1e-10 and p[1] > 1e-10])
        anchor = np.exp(np.median(np.log(allp[:, 1]) - np.mean(exps) * np.log(allp[:, 0])))
        nulls = [e for e in cal.get("null_exponent", []) if not np.isnan(e)]
        null_text = f"; on excess spectral risk (null) {np.mean(nulls):.2f}" if nulls else ""
        ax.loglog(xs, anchor * xs ** np.mean(exps), "k-", label=f"fitted exponent {np.mean(exps):.2f}{null_text}")
        ax.loglog(xs, anchor * xs ** cal["slow_rate_exponent"], "k:",
                  label=f"reference slope {cal['slow_rate_exponent']} (slow rate), not a bound")
        for name, alpha in cal["tsybakov_alpha"].items():
            ref = 1.0 if alpha is None else (1 + alpha) / (2 + alpha)
            text = "degenerate margin law: a not fitted" if alpha is None else f"Tsybakov a = {alpha:.2f}"
            ax.loglog(xs, anchor * xs ** ref, "--", lw=0.8,
                      label=f"reference slope (1+a)/(2+a) = {ref:.2f}, {name} ({text}), not a bound")
    ax.set_xlabel("excess InfoNCE risk E_x KL(p(.|x) || q_s(.|x)) (nats)")
    ax.set_ylabel(f"excess retrieval error ({params['discrete']['candidates']} candidates)")
    ax.set_title("calibration: perturbations of the optimum (discrete, exact)", fontsize=9)
    ax.legend(fontsize=6)
    plotting.save(fig, figdir / "calibration.png")

    # table
    rows = []
    for name in kernels:
        e = m["discrete"][name]
        for i, dim in enumerate(e["dims"]):
            for method in ("infonce", "spectral", "truncated_svd"):
                rows.append({"case": f"discrete {name}", "method": method, "dim": dim, "width": "",
                             "tail": f"{e['tail'][i]:.4g}", "tail_next": f"{e['tail_next'][i]:.4g}",
                             "error": claims.fmt(e[method]["error"][i]),
                             "excess_risk_xy": claims.fmt(e[method]["excess_risk_xy"][i]),
                             "retrieval_excess": claims.fmt(e[method]["retrieval_excess"][i])})
    for key, f in fits.items():
        rows.append({"case": f"gaussian m={len(cont['singular_values']) - 2}", "method": f"neural {f['loss']}",
                     "dim": f["dim"], "width": f["width"], "tail": f"{f['tail']:.4g}", "tail_next": f"{f['tail_next']:.4g}",
                     "error": claims.fmt(f["error"]), "excess_risk_xy": "",
                     "retrieval_excess": claims.fmt(f["retrieval_excess"])})

    summary = {"discrete": m["discrete"], "continuous": cont, "calibration_exponent": cal["exponent"],
               "calibration_null_exponent": cal["null_exponent"],
               "slow_rate_exponent": cal["slow_rate_exponent"], "tsybakov_alpha": cal["tsybakov_alpha"],
               "tsybakov_degenerate": cal["tsybakov_degenerate"], "max_iterations": params["discrete"]["iterations"],
               "min_tail": params["calibration"]["min_tail"],
               "candidates": params["discrete"]["candidates"]}
    written = claims.write_tables(out, rows, claim_rows(summary, scale))
    return [*written, tuning.write_csv(out / "tuning.csv", PAPER, tuning_records(params["discrete"], params["continuous"]))]
