"""The steps the CLI calls for apexphys: generate -> preprocess -> train -> figures.

generate: synthetic domains written as UBFC-rPPG / PURE folders (or, with real data, the
dataset folders checked and listed). preprocess: every recording read back through the
format loaders, face-cropped, resized and normalised, cached; GREEN, CHROM and POS scored on
the test clips. train: one method over the domain sequence, every seed, R matrix and final
metrics. figures: heatmaps, curves, tables and claims.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from neurips26.core import claims, io, plotting, tracking, tuning

from . import claims as apex_claims


# ---------------------------------------------------------------- generate
# clip k of domain i for replicate seed s: generator seed data.seed * DATA_SEED_STRIDE
# + s * REPLICATE_STRIDE + 1009 i + k (no two clips share a seed for s < 100)
DATA_SEED_STRIDE = 100_003
REPLICATE_STRIDE = 10_000_019


def generate(params, inputs, out: Path):
    """Write each synthetic domain of one replicate seed in its dataset's on-disk format; list
    real datasets (the same for every seed)."""
    d = params["data"]
    domains = []
    if d["source"] == "real":
        for name in d["order"]:
            spec = d["real"].get(name)
            if spec is None:
                raise ValueError(f"config key 'apexphys.data.real': no dataset named '{name}' (from data.order)")
            root = Path(spec["data_dir"])
            if not root.is_dir():
                raise FileNotFoundError(f"config key 'apexphys.data.real.{name}.data_dir': {root} is not a folder")
            domains.append({"name": name, "format": spec["format"], "root": str(root), "split": "fraction",
                            "light": spec.get("light")})
        io.write_json(out / "manifest.json", {"source": "real", "domains": domains})
        return [out / "manifest.json"]
    from .formats import write_pure, write_ubfc
    from .synthetic import render_clip

    by_name = {dom["name"]: dom for dom in d["domains"]}
    n_clips = d["train_clips"] + d["test_clips"]
    for di, name in enumerate(d["order"]):
        dom = by_name[name]
        root = out / name
        if root.exists():
            shutil.rmtree(root)
        for k in range(n_clips):
            clip = render_clip(dom, d["frames"], d["fps"], d["frame_size"], seed=d["seed"] * DATA_SEED_STRIDE + params["seed"] * REPLICATE_STRIDE + 1_009 * di + k,
                               hr_range=tuple(d["hr_range"]), hr_drift=d["hr_drift_bpm"])
            if dom["format"] == "ubfc":
                write_ubfc(root / f"subject{k + 1}", clip.frames, clip.wave, clip.heart_rate, clip.wave_times, d["fps"])
            else:
                t0 = 1_392_643_993_642_815_000
                write_pure(root / f"{di + 1:02d}-{k + 1:02d}", clip.frames,
                           t0 + np.round(clip.frame_times * 1e9).astype(np.int64), clip.wave, clip.heart_rate,
                           t0 + np.round(clip.wave_times * 1e9).astype(np.int64))
        domains.append({"name": name, "format": dom["format"], "root": name, "split": "count",
                        "train_clips": d["train_clips"], "test_clips": d["test_clips"]})
        print(f"generated {name}: {n_clips} clips in {dom['format'].upper()} format", flush=True)
    io.write_json(out / "manifest.json", {"source": "synthetic", "domains": domains})
    return [out / "manifest.json"]


# ---------------------------------------------------------------- preprocess
def preprocess(params, inputs, out: Path):
    """Read every recording through its format's loader; cache normalised clips; score GREEN/CHROM/POS."""
    import torch

    from . import signals
    from .formats import READERS
    from .preprocess import process_recording

    p, band = params["preprocess"], params["heart_rate"]
    raw = inputs["raw"]
    manifest = io.read_json(raw / "manifest.json")
    fps = params["data"]["fps"]
    tensors, index, unsup = {}, {}, {}
    for dom in manifest["domains"]:
        root = Path(dom["root"]) if manifest["source"] == "real" else raw / dom["root"]
        lister, reader = READERS[dom["format"]]
        folders = lister(root, light=dom["light"]) if dom.get("light") else lister(root)
        if not folders:
            raise FileNotFoundError(f"{root}: no {dom['format'].upper()} recordings found")
        if dom["split"] == "count":
            n_train = dom["train_clips"]
        else:
            folders, n_train = subject_split(folders, dom["format"], params["data"]["test_fraction"], params["seed"])
        processed = [process_recording(reader(f), p["size"], p["face_detector"], p["max_frames"]) for f in folders]
        length = min(len(r["y"]) for r in processed)
        length -= length % p["chunk_length"]
        if length < p["chunk_length"]:
            raise ValueError(f"{root}: recordings shorter than preprocess.chunk_length {p['chunk_length']}")
        x = torch.from_numpy(np.stack([r["x"][:, :length] for r in processed])).half()
        y = torch.from_numpy(np.stack([r["y"][:length] for r in processed]))
        name = dom["name"]
        tensors[f"{name}/train_x"], tensors[f"{name}/train_y"] = x[:n_train], y[:n_train]
        tensors[f"{name}/test_x"], tensors[f"{name}/test_y"] = x[n_train:], y[n_train:]
        gt = [signals.heart_rate(r["y"][:length], fps, band["low_hz"], band["high_hz"]) for r in processed[n_train:]]
        scores = {}
        for method, fn in signals.UNSUPERVISED.items():
            pulses = [fn(r["rgb"][:length], fps) for r in processed[n_train:]]
            pred = [signals.heart_rate(x, fps, band["low_hz"], band["high_hz"]) for x in pulses]
            snr = [signals.snr_db(x, fps, g, band["low_hz"], band["high_hz"]) for x, g in zip(pulses, gt)]
            wave_r = [signals.waveform_correlation(x, r["y"][:length], fps, band["low_hz"], band["high_hz"])
                      for x, r in zip(pulses, processed[n_train:])]
            scores[method] = {"pred_hr": pred, "mae": float(np.mean(np.abs(np.array(pred) - np.array(gt)))),
                              "snr": snr, "wave_r": wave_r, "mean_snr": float(np.mean(snr)),
                              "mean_wave_r": float(np.mean(wave_r))}
        unsup[name] = {"gt_hr": gt, **scores}
        index[name] = {"format": dom["format"], "train_clips": n_train, "test_clips": len(processed) - n_train,
                       "frames": length, "face_boxes": [list(map(int, r["box"])) for r in processed]}
        print(f"preprocessed {name}: {len(processed)} recordings, {length} frames; unsupervised MAE "
              + ", ".join(f"{m} {scores[m]['mae']:.2f}" for m in scores), flush=True)
        tracking.active().log_metrics({f"unsupervised/{name}/{m}_mae": s["mae"] for m, s in scores.items()})
    io.save_tensors(out / "clips.safetensors", tensors)
    io.write_json(out / "index.json", {"order": [d["name"] for d in manifest["domains"]], "fps": fps, "domains": index})
    io.write_json(out / "unsupervised.json", unsup)
    return [out / "index.json", out / "unsupervised.json"]


def subject_split(folders: list, fmt: str, test_fraction: float, seed: int) -> tuple[list, int]:
    """Real datasets: the recordings reordered so that the training ones come first, and how many
    there are. Subjects (never recordings of one person on both sides) are shuffled by the
    replicate seed and the first round((1 - test_fraction) x subjects) train, so each seed draws
    its own split."""
    from .formats import subject_of

    subjects = sorted({subject_of(fmt, f) for f in folders})
    if len(subjects) < 2:
        raise ValueError(f"{Path(folders[0]).parent}: one subject only, no train/test split (data.test_fraction)")
    order = np.random.default_rng(SPLIT_SEED + seed).permutation(len(subjects))
    n_train = min(len(subjects) - 1, max(1, int(round(len(subjects) * (1 - test_fraction)))))
    train_subjects = {subjects[i] for i in order[:n_train]}
    train = [f for f in folders if subject_of(fmt, f) in train_subjects]
    test = [f for f in folders if subject_of(fmt, f) not in train_subjects]
    return train + test, len(train)


SPLIT_SEED = 4_242


# ---------------------------------------------------------------- tune
def _split_validation(domains: list[dict], clips: int, chunk_length: int, stride: int) -> list[dict]:
    """Hold out the last `clips` training clips of every domain as its validation clips; the
    rest train. The test clips are not touched."""
    from .continual import chunks_of

    out = []
    for d in domains:
        n = len(d["train_clips_x"])
        if n <= clips:
            raise ValueError(f"config key 'apexphys.tune.validation_clips': domain {d['name']} has {n} training "
                             f"clips, it needs more than {clips}")
        train_x, train_y = chunks_of(d["train_clips_x"][:n - clips], d["train_clips_y"][:n - clips], chunk_length, stride)
        out.append({"name": d["name"], "train_x": train_x, "train_y": train_y,
                    "test_x": list(d["train_clips_x"][n - clips:]), "test_y": list(d["train_clips_y"][n - clips:])})
    return out


def tune(params, inputs, out: Path):
    """On seed `tune.seed`'s data, train on all but `tune.validation_clips` training clips per
    domain over the whole sequence and score the model on the held-out clips (final validation MAE
    averaged over domains; backward transfer and plasticity from the per-task evaluations). A
    variant with a penalty strength (`tune`: EWC's or BCRP's lambda) has it tuned by the tuning
    protocol (core.tuning.search): the shared log-spaced grid `tune.grid`, extended while the best
    value sits on an edge; the other continual models are scored once. Every continual model's
    validation scores feed the figures step's choices (the strongest baseline, the regime
    control's best continual model)."""
    from neurips26.core.job import global_rank

    from .continual import run_protocol

    tun, band = params["tune"], params["heart_rate"]
    settings = params["variant_settings"]
    key = settings.get("tune")
    t = params["train"] | {"chunk_length": params["preprocess"]["chunk_length"]}
    domains, index = _load_domains(inputs["data"] / f"seed{tun['seed']}", t["chunk_length"], t["train_stride"])
    domains = _split_validation(domains, tun["validation_clips"], t["chunk_length"], t["train_stride"])
    runs, timing = {}, {}

    def validate(value=None):
        for old in out.glob("grid*"):
            shutil.rmtree(old)
        started = time.perf_counter()
        tag = "none" if value is None else f"{value:g}"
        res = run_protocol(domains, settings["kind"], settings if value is None else settings | {key: float(value)},
                           t, params["model"], tun["seed"], out / f"grid{tag}", params | {"tune_value": tag},
                           index["fps"], (band["low_hz"], band["high_hz"]), evaluate_each_task=True)
        timing[tag] = time.perf_counter() - started
        runs[tag] = {"val_mae": res["final"]["mae"], "val_snr_db": res["final"]["snr_db"], "val_bwt": res["bwt"],
                     "val_plasticity_mae": res["plasticity_mae"]}
        print(f"tune {params['variant']}: {key or 'no knob'} = {tag}: validation MAE {res['final']['mae']:.3f} bpm "
              f"({timing[tag]:.1f} s)", flush=True)
        return res["final"]["mae"]

    records = []
    if key is None:
        validate()
        chosen, best = None, runs["none"]
    else:
        point, records = tuning.search(lambda **kw: validate(kw[key]), {key: list(tun["grid"])},
                                       method=params["variant"], metric="final validation MAE (bpm)", maximize=False,
                                       extensions=tuning.settings(params)["extensions"], bounds={key: (0.0, None)},
                                       seed=tun["seed"], split=f"{tun['validation_clips']} held-out training clips "
                                                               "per domain")
        chosen = float(point[key])
        best = runs[f"{chosen:g}"]
    for old in out.glob("grid*"):
        shutil.rmtree(old)
    if global_rank() == 0:
        io.write_json(out / "choice.json", {"variant": params["variant"], "key": key,
                                            "grid": [] if key is None else records[0].grid, "seed": tun["seed"],
                                            "validation_clips": tun["validation_clips"], "scores": runs,
                                            "chosen": chosen, "validation": best,
                                            "records": [r.to_json() for r in records]})
        io.write_json(out / "timing.json", {"seconds_per_value": timing, "seconds": sum(timing.values())})
    return [out / "choice.json", out / "timing.json"]


# ---------------------------------------------------------------- train
def _load_domains(folder: Path, chunk_length: int, stride: int):
    from .continual import chunks_of

    tensors = io.load_tensors(folder / "clips.safetensors")
    index = io.read_json(folder / "index.json")
    domains = []
    for name in index["order"]:
        clips_x, clips_y = tensors[f"{name}/train_x"].float(), tensors[f"{name}/train_y"]
        train_x, train_y = chunks_of(clips_x, clips_y, chunk_length, stride)
        domains.append({"name": name, "train_x": train_x, "train_y": train_y, "train_clips_x": clips_x,
                        "train_clips_y": clips_y,
                        "test_x": list(tensors[f"{name}/test_x"].float()), "test_y": list(tensors[f"{name}/test_y"])})
    return domains, index


def train(params, inputs, out: Path):
    """One method over the domain sequence, for every seed (each on its own data): R matrix,
    forgetting, final metrics."""
    import torch

    from .continual import run_protocol

    from neurips26.core.job import global_rank

    band = params["heart_rate"]
    t = params["train"] | {"chunk_length": params["preprocess"]["chunk_length"]}
    settings = dict(params["variant_settings"])
    tuned = None
    if "tuned" in inputs:  # the strength picked on the shared grid (this variant's or the one it follows)
        tuned = io.read_json(inputs["tuned"] / "choice.json")
        settings[tuned["key"]] = tuned["chosen"]
        print(f"{params['variant']}: {tuned['key']} = {tuned['chosen']} (tuned for {tuned['variant']})", flush=True)
    results, timing = {}, {}
    for seed in params["seeds"]:
        domains, index = _load_domains(inputs["data"] / f"seed{seed}", t["chunk_length"], t["train_stride"])
        for old in out.glob("seed*/task*"):
            shutil.rmtree(old)  # a rerun starts afresh: branch structure and buffers are not in checkpoints
        torch.manual_seed(seed)
        started = time.perf_counter()
        results[str(seed)] = run_protocol(domains, settings["kind"], settings, t, params["model"], seed,
                                          out / f"seed{seed}", params | {"seed_run": seed}, index["fps"],
                                          (band["low_hz"], band["high_hz"]))
        timing[str(seed)] = time.perf_counter() - started
        fin = results[str(seed)]["final"]
        tracking.active().log_metrics({f"seed{seed}/final_mae": fin["mae"], f"seed{seed}/bwt": results[str(seed)]["bwt"]})
    for old in out.glob("seed*"):
        shutil.rmtree(old)
    metrics = {"variant": params["variant"], "kind": settings["kind"], "domains": index["order"], "settings": settings,
               "tuned": None if tuned is None else {"key": tuned["key"], "value": tuned["chosen"],
                                                    "from": tuned["variant"], "scores": tuned["scores"]},
               "seeds": results}
    if global_rank() == 0:
        io.write_json(out / "metrics.json", metrics)
        io.write_json(out / "timing.json", {"seconds_per_seed": timing})
    return [out / "metrics.json", out / "timing.json"]


# ---------------------------------------------------------------- figures
LABELS = {"finetune": "Fine-tuning", "joint": "Joint (upper bound)", "ewc": "EWC", "lwf": "LwF",
          "replay": "Replay", "apexphys": "ApexPhys", "apexphys_no_bcrp": "ApexPhys w/o BCRP",
          "apexphys_no_hes": "ApexPhys w/o HES", "apexphys_no_pgp": "ApexPhys w/o PGP",
          "apexphys_no_bn_freeze": "ApexPhys w/o BN freezing"}
COLOURS = {"finetune": "#7f7f7f", "joint": "#2ca02c", "ewc": "#1f77b4", "lwf": "#9467bd", "replay": "#ff7f0e",
           "apexphys": "#d62728", "apexphys_no_bcrp": "#17becf", "apexphys_no_hes": "#8c564b",
           "apexphys_no_pgp": "#e377c2", "apexphys_no_bn_freeze": "#bcbd22"}


def figures(params, inputs, out: Path):
    variants, seeds, scale = params["run_variants"], params["seeds"], params["scale"]
    runs = {v: io.read_json(inputs["evals"] / v / "metrics.json") for v in variants}
    # GREEN / CHROM / POS on every seed's test clips, pooled
    per_seed_unsup = [io.read_json(inputs["data"] / f"seed{s}" / "unsupervised.json") for s in seeds]
    unsup = {}
    for name in per_seed_unsup[0]:
        gt = [h for u in per_seed_unsup for h in u[name]["gt_hr"]]
        unsup[name] = {"gt_hr": gt}
        for method in ("GREEN", "CHROM", "POS"):
            pred = [h for u in per_seed_unsup for h in u[name][method]["pred_hr"]]
            snr = [v for u in per_seed_unsup for v in u[name][method]["snr"]]
            wave_r = [v for u in per_seed_unsup for v in u[name][method]["wave_r"]]
            unsup[name][method] = {"pred_hr": pred, "mae": float(np.mean(np.abs(np.array(pred) - np.array(gt)))),
                                   "snr": float(np.mean(snr)), "wave_r": float(np.mean(wave_r))}
    order = runs[variants[0]]["domains"]
    n = len(order)
    figdir = out / "figures"

    def per_seed(v, fn):
        return [fn(runs[v]["seeds"][str(s)]) for s in seeds]

    # R-matrix heatmaps, mean over seeds, side by side
    import matplotlib

    cols = min(len(variants), 5)
    rows = (len(variants) + cols - 1) // cols
    fig, axes = plotting.figure(ncols=cols, nrows=rows, width=2.9, height=2.9)
    stacked = {v: np.mean([runs[v]["seeds"][str(s)]["R"] for s in seeds], axis=0) for v in variants}
    vmax = max(float(m.max()) for m in stacked.values())
    for i, ax in enumerate(axes.flat):
        if i >= len(variants):
            ax.set_axis_off()
            continue
        v = variants[i]
        im = ax.imshow(stacked[v], cmap="viridis_r", vmin=0, vmax=vmax)
        for a in range(n):
            for b in range(n):
                ax.text(b, a, f"{stacked[v][a, b]:.1f}", ha="center", va="center", fontsize=6,
                        color="white" if stacked[v][a, b] > vmax / 2 else "black")
        ax.set_xticks(range(n), [f"D{j}" for j in range(n)])
        ax.set_yticks(range(n), [f"D{j}" for j in range(n)])
        if i >= len(variants) - cols:
            ax.set_xlabel("evaluated domain j")
        if i % cols == 0:
            ax.set_ylabel("after task i")
        ax.set_title(f"{LABELS.get(v, v)} (n={len(seeds)})", fontsize=9)
        ax.grid(False)
    fig.suptitle(f"apexphys: R[i, j] = HR MAE on domain j after task i, mean over seeds ({scale} scale)\n"
                 + ", ".join(f"D{j} = {name}" for j, name in enumerate(order)), fontsize=9)
    fig.tight_layout(rect=(0, 0, 0.92, 1))
    cax = fig.add_axes((0.935, 0.15, 0.015, 0.7))
    fig.colorbar(im, cax=cax, label="MAE (bpm), lower is better")
    path = figdir / "r_matrices.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    from neurips26.core.io import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    matplotlib.pyplot.close(fig)

    # average MAE (top) and pulse SNR (bottom) over seen domains after each task: methods vs
    # baselines, and the ablations; the unsupervised GREEN, CHROM and POS as references
    fig, axes = plotting.figure(ncols=2, nrows=2, width=6.2, height=4.4)
    xs = list(range(1, n + 1))
    panels = (("ApexPhys against the baselines", [v for v in variants if not v.startswith("apexphys_")]),
              ("ApexPhys against its ablations", [v for v in variants if v.startswith("apexphys")]))
    rows_spec = (("seen_mae_after_task", "mae", "mean HR MAE over seen domains (bpm)", "lower is better"),
                 ("seen_snr_after_task", "snr", "mean pulse SNR over seen domains (dB)", "higher is better"))
    for row, (key, ref_key, ylabel, direction) in zip(axes, rows_spec):
        for ax, (title, group) in zip(row, panels):
            for v in group:
                plotting.mean_band(ax, xs, per_seed(v, lambda r: r[key]), LABELS.get(v, v), COLOURS.get(v))
            for method, style in (("GREEN", "--"), ("POS", ":"), ("CHROM", "-.")):
                ref = [np.mean([unsup[name][method][ref_key] for name in order[:i]]) for i in xs]
                ax.plot(xs, ref, style, color="grey", label=f"{method} (unsupervised)")
            ax.set_xticks(xs, [f"{i}: {order[i - 1]}" for i in xs], rotation=20, fontsize=7)
            ax.set_xlabel("task (domain just trained on)")
            ax.set_ylabel(ylabel)
            ax.set_title(f"{title} ({direction})", fontsize=9)
            ax.legend(fontsize=6)
    fig.suptitle(f"apexphys: average MAE and pulse SNR after each task ({scale} scale; line = mean, "
                 "band = min-max over seeds)", fontsize=10)
    plotting.save(fig, figdir / "avg_mae_per_task.png")

    # table
    table = []
    for v in variants:
        table.append({
            "method": v,
            "final_mae_bpm": claims.fmt(per_seed(v, lambda r: r["final"]["mae"])),
            "final_rmse_bpm": claims.fmt(per_seed(v, lambda r: r["final"]["rmse"])),
            "final_mape_pct": claims.fmt(per_seed(v, lambda r: r["final"]["mape"])),
            "final_pearson": claims.fmt(per_seed(v, lambda r: r["final"]["pearson"])),
            "final_snr_db": claims.fmt(per_seed(v, lambda r: r["final"]["snr_db"])),
            "final_wave_r": claims.fmt(per_seed(v, lambda r: r["final"]["wave_r"])),
            "bwt_bpm": claims.fmt(per_seed(v, lambda r: r["bwt"])),
            "plasticity_mae_bpm": claims.fmt(per_seed(v, lambda r: r["plasticity_mae"])),
            "branches": claims.fmt(per_seed(v, lambda r: r["branches"])),
            "inherited_branches": claims.fmt(per_seed(v, lambda r: r["strategy"].get("inherited_branches", 0))),
            "tuned": "" if not runs[v].get("tuned") else f"{runs[v]['tuned']['key']} = {runs[v]['tuned']['value']:g}",
        })
    for method in ("GREEN", "CHROM", "POS"):
        pred = np.concatenate([unsup[name][method]["pred_hr"] for name in order])
        gt = np.concatenate([unsup[name]["gt_hr"] for name in order])
        table.append({"method": f"{method} (unsupervised)",
                      "final_mae_bpm": f"{np.mean([unsup[name][method]['mae'] for name in order]):.3g}",
                      "final_rmse_bpm": f"{np.sqrt(np.mean((pred - gt) ** 2)):.3g}",
                      "final_mape_pct": f"{np.mean(np.abs(pred - gt) / gt) * 100:.3g}",
                      "final_pearson": f"{np.corrcoef(pred, gt)[0, 1]:.3g}" if pred.std() > 0 else "n/a",
                      "final_snr_db": f"{np.mean([unsup[name][method]['snr'] for name in order]):.3g}",
                      "final_wave_r": f"{np.mean([unsup[name][method]['wave_r'] for name in order]):.3g}",
                      "bwt_bpm": "", "plasticity_mae_bpm": "", "branches": "", "inherited_branches": "", "tuned": ""})

    source = params["data"]["source"]
    summary = {
        "methods": {v: {"bwt": per_seed(v, lambda r: r["bwt"]), "plasticity_mae": per_seed(v, lambda r: r["plasticity_mae"]),
                        "final_mae": per_seed(v, lambda r: r["final"]["mae"]),
                        "final_items": per_seed(v, lambda r: apex_claims.final_items(r["final_eval"])),
                        "first_domain_mae": per_seed(v, lambda r: r["R"][0][0]),
                        "final_snr": per_seed(v, lambda r: r["final"]["snr_db"]),
                        "snr_items": per_seed(v, lambda r: apex_claims.final_items(r["final_eval"], "snr")),
                        "inherited_branches": per_seed(v, lambda r: r["strategy"].get("inherited_branches", 0))}
                    for v in variants},
        "holds_fixed": "the recordings (each seed draws its own subject split)" if source == "real" else "",
        # the untrained references on each seed's own test clips, MAE averaged over domains: the
        # regime control of the claims (a learned continual model beats them)
        "unsupervised": {m: {"final_mae": [float(np.mean([np.mean(np.abs(np.array(u[name][m]["pred_hr"])
                                                                        - np.array(u[name]["gt_hr"])))
                                                          for name in order])) for u in per_seed_unsup]}
                         for m in ("GREEN", "CHROM", "POS")},
    }
    # and on the first domain alone, the control of the forgetting rows (fine-tuning's R[0, 0] against them)
    for m in ("GREEN", "CHROM", "POS"):
        summary["unsupervised"][m]["first_domain_mae"] = [
            float(np.mean(np.abs(np.array(u[order[0]][m]["pred_hr"]) - np.array(u[order[0]]["gt_hr"]))))
            for u in per_seed_unsup]
    validation, records = validation_scores(inputs, variants, runs)
    summary["validation"], summary["tuning"] = validation, [r.to_json() for r in records]
    choices = apex_claims.choices(summary)
    records += [rec for _, rec in choices.values()]
    tuning.write_csv(out / "tuning.csv", "apexphys", records)
    return claims.write_tables(out, table, apex_claims.claim_rows(summary, scale))


FIXED = {"lwf": [("lwf_alpha", "the distillation weight of the LwF baseline as configured; the paper tunes only the "
                               "parameter-penalty strengths (EWC's and BCRP's lambda)")],
         "replay": [("replay_per_domain", "the replay buffer size is a memory budget, not tuned"),
                    ("replay_batch", "a memory budget, not tuned")],
         "apexphys": [("bcrp_top_fraction", "fixed as in the paper's method; not tuned"),
                      ("hes_tau", "fixed as in the paper's method; not tuned"),
                      ("hes_min_discrepancy", "fixed as in the paper's method; not tuned")]}


def validation_scores(inputs, variants: list, runs: dict) -> tuple[dict, list]:
    """Every continual model's scores on the validation clips (the tune step's choice.json), and the
    tuning records: the tuned lambdas, the knobs that stay fixed, and the shared training settings."""
    folder = inputs.get("validation") if hasattr(inputs, "get") else None
    validation, records = {}, []
    for v in variants:
        f = Path(folder) / v / "choice.json" if folder else None
        if f is None or not f.exists():
            continue
        c = io.read_json(f)
        validation[v] = {"final_mae": c["validation"]["val_mae"], "final_snr": c["validation"]["val_snr_db"],
                         "bwt": c["validation"]["val_bwt"], "plasticity_mae": c["validation"]["val_plasticity_mae"]}
        records += [tuning.Record.from_json(r) for r in c.get("records", [])]
    for v in variants:
        settings = runs[v].get("settings") or {}
        for knob, why in FIXED.get(v, []):
            records.append(tuning.fixed(v, knob, settings.get(knob, ""), why))
        if v in ("apexphys_no_hes", "apexphys_no_pgp", "apexphys_no_bn_freeze"):
            records.append(tuning.fixed(v, "bcrp_lambda", "as apexphys", "the ablation keeps the full method's tuned "
                                                                          "lambda (tune_from: apexphys)"))
    records.append(tuning.fixed("every method", "lr, steps_per_task, batch_size", "apexphys.train",
                                "one training schedule for every method (the paper's shared PhysNet schedule)"))
    return validation, records
