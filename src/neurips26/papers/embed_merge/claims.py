"""Claims rows of embed_merge, a pure function of the aggregated metrics (`steps.claims_summary`);
the entries, margins and controls are declared in `claims.yaml`, and `core.claims.Sheet` decides.

Merging comparisons use the mean normalised accuracy over the merged tasks with all tasks merged,
paired by seed (one pre-trained model, one set of fine-tunes and one draw of every task's data
per seed, shared by all methods); with per-example scores the interval is the wider of the
paired bootstrap over seeds x test examples (examples of every task, weighted so that their mean
is the mean over tasks) and the paired t over seeds. Every row of a domain leans on its regime
control: the fine-tuned experts beat the pre-trained backbone on their own tasks (otherwise a
merge has nothing to keep). The rows against a baseline have a null control: the pre-trained
backbone, merging nothing, scored against the same baseline and margin; when it passes, beating
that baseline says nothing about the merge. The hypothesis row measures how much of each update's energy falls
inside the pre-trained top-r subspace, against a random subspace of the same size (a ratio per
seed, on the log scale).
"""

from __future__ import annotations

from neurips26.core import claims, tuning

P = "embed_merge"
OURS = ("embed_mean", "embed_aligned")
ABLATIONS = ("embed_mean_posthoc", "embed_aligned_posthoc")  # ours on projected full fine-tunes: not "the field's"
CONTROLS = ("random_subspace_mean", "lora_mean")  # the same averaging without the pre-trained subspace: not "the field's"
# the domains claims.yaml declares, and the merge comparisons each in-space domain carries
DOMAINS = ("vision", "language", "clip_vit_b32", "clip_vit_l14")
PAIRS = {"beats_weight_averaging": ("embed_mean", "weight_averaging"),
         "beats_task_arithmetic": ("embed_mean", "task_arithmetic"),
         "inspace_beats_posthoc": ("embed_mean", "embed_mean_posthoc"),
         "aligned_beats_mean": ("embed_aligned", "embed_mean"),
         # the controls of the pre-trained subspace: the same averaging inside a random subspace of
         # the same rank (the nulls of the rows that credit the pre-trained subspace) and LoRA
         "random_subspace_beats_weight_averaging": ("random_subspace_mean", "weight_averaging"),
         "random_subspace_beats_task_arithmetic": ("random_subspace_mean", "task_arithmetic"),
         "random_subspace_beats_posthoc": ("random_subspace_mean", "embed_mean_posthoc"),
         "pretrained_space_beats_random_subspace": ("embed_mean", "random_subspace_mean"),
         "pretrained_space_beats_lora": ("embed_mean", "lora_mean")}
# the post-hoc reading of the method (full fine-tunes projected onto the pre-trained space), beside
# the in-space reading: rows posthoc_beats_<key>, the better post-hoc merge by validation
POSTHOC_PAIRS = {"posthoc_beats_weight_averaging": "weight_averaging", "posthoc_beats_task_arithmetic": "task_arithmetic"}


def _mean(xs):
    return sum(xs) / len(xs)


def field_choice(v: str, dom: dict) -> tuple[str | None, tuning.Record | None]:
    """The strongest of the field's methods (the baselines: neither ours nor a post-hoc ablation;
    the pre-trained backbone is a control, never a candidate) by mean validation score over the
    seeds (`core.tuning.strongest`), named before any test number is read."""
    methods = dom["methods"]
    base = [m for m in methods if m not in OURS and m not in ABLATIONS and m not in CONTROLS]
    if not base:
        return None, None
    scores = {m: _mean(methods[m]["val"]) for m in base}
    return tuning.strongest(scores, candidates=base, setting=f"{v}, {dom.get('full_count', '')} tasks",
                            metric="normalised accuracy (mean over seeds)", seed="every seed",
                            split="validation (each task's validation split)")


def claim_rows(summary: dict, scale: str, spec=None, records: list | None = None) -> list[dict]:
    """The claims rows; `records`: the run's tuning records (core.tuning.Record), whose capped
    scales keep a row from reading yes (baseline capped) or no (method capped)."""
    sheet = claims.Sheet(P, scale, spec)
    records = list(records or [])
    for v in DOMAINS:
        ids = [i for i in sheet.order if i.endswith(f"_{v}")]
        dom = summary.get(v)
        if dom is None:
            for i in ids:
                sheet.untested(i, f"the {scale} config does not run the {v} domain")
            continue
        fixed = f"replicates hold fixed: {dom['holds_fixed']}" if dom["holds_fixed"] else ""
        sheet.comparison(f"experts_beat_pretrained_{v}", dom["experts"], dom["pretrained"], how=fixed)
        methods = dom["methods"]
        setting = f"{v}, {dom.get('full_count', '')} tasks"

        def capped(name):
            """The tuning protocol's note when `name`'s scale stayed on a capped grid edge at any seed."""
            return tuning.capped_note(records, name, setting)

        def nomerge(id, baseline):
            """The null: the pre-trained backbone (merging nothing) against the same baseline."""
            if baseline not in methods:
                sheet.untested(id, f"the {scale} config does not run {baseline}", baseline=baseline)
                return
            sheet.comparison(id, dom["pretrained_normalized"], methods[baseline]["normalized"], baseline=baseline, how=fixed,
                             baseline_capped=capped(baseline))

        def compare(id, method, baseline):
            if method not in methods or baseline not in methods:
                missing = [m for m in (method, baseline) if m not in methods]
                sheet.untested(id, f"the {scale} config does not run {', '.join(missing)}", method=method, baseline=baseline)
                return
            m, b = methods[method], methods[baseline]
            items = m["items"] is not None and b["items"] is not None
            sheet.comparison(id, m["normalized"], b["normalized"], method=method, baseline=baseline,
                             method_items=m["items"] if items else None,
                             baseline_items=b["items"] if items else None, how=fixed,
                             method_capped=capped(method), baseline_capped=capped(baseline))

        for key in ("weight_averaging", "task_arithmetic"):
            if f"nomerge_beats_{key}_{v}" in sheet.spec:
                nomerge(f"nomerge_beats_{key}_{v}", key)
        for key, (method, baseline) in PAIRS.items():
            if f"{key}_{v}" in sheet.spec:
                compare(f"{key}_{v}", method, baseline)
        strongest, _ = field_choice(v, dom)
        posthoc = [m for m in ABLATIONS if m in methods]
        best_posthoc = max(posthoc, key=lambda m: _mean(methods[m]["val"])) if posthoc else "embed_mean_posthoc"
        for key, baseline in POSTHOC_PAIRS.items():
            if f"{key}_{v}" in sheet.spec:
                compare(f"{key}_{v}", best_posthoc, baseline)
        # the field rows: every pick on the validation splits (mean over seeds), never on the test scores compared
        for id, candidates in ((f"beats_field_{v}", OURS), (f"posthoc_beats_field_{v}", ABLATIONS),
                               (f"random_subspace_beats_field_{v}", ("random_subspace_mean",))):
            if id not in sheet.spec:
                continue
            ours = [m for m in candidates if m in methods]
            if ours and strongest:
                best = max(ours, key=lambda m: _mean(methods[m]["val"]))
                compare(id, best, strongest)
            else:
                sheet.untested(id, f"the {scale} config runs no {' or '.join(candidates) if not ours else 'baseline'}")
        if f"nomerge_beats_field_{v}" in sheet.spec:
            if strongest:
                nomerge(f"nomerge_beats_field_{v}", strongest)
            else:
                sheet.untested(f"nomerge_beats_field_{v}", f"the {scale} config runs no baseline")
        share_row(sheet, v, dom)
    return sheet.rows()


def share_row(sheet: claims.Sheet, v: str, dom: dict) -> None:
    """Two rows: per seed, the mean share over tasks divided by the mean chance share (the geometric
    mean over seeds with a t interval of the log ratio, against the band ratio >= 1.5), and the
    absolute share itself (t interval over seeds, against the declared band share >= 0.5)."""
    ratios = [s / c for s, c in zip(dom["share"], dom["chance"])]
    fixed = f"; replicates hold fixed: {dom['holds_fixed']}" if dom["holds_fixed"] else ""
    how = f"share {claims.fmt(dom['share'])} against chance {claims.fmt(dom['chance'])}" + fixed
    sheet.target(f"updates_in_pretrained_space_{v}", values=ratios, how=how)
    if f"updates_confined_to_pretrained_space_{v}" in sheet.spec:
        sheet.target(f"updates_confined_to_pretrained_space_{v}", values=list(dom["share"]),
                     how=f"chance at the same rank {claims.fmt(dom['chance'])}" + fixed)
