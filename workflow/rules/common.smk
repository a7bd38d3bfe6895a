# Helpers only, no rules: config validation, targets, params lookup, code stamp, tracking hooks.
import inspect
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

from neurips26.core import job as job_context
from neurips26.core.config import NAME_PATTERN, ConfigError
from neurips26.papers import validate_config

try:
    _validated = validate_config(config, workflow.basedir)
except ConfigError as exc:
    raise WorkflowError(str(exc)) from None
config.clear()
config.update(_validated)

# Not a setting of any job's output: kept out of the config the rules and the report hash.
RETRAIN = config.pop("retrain", False)
PAPERS = config["papers"]
THREADS = config["threads_per_job"]
# the tuning protocol's settings, in every job's params (neurips26.core.tuning.settings)
TUNING = config.get("tuning", {"extensions": 3})
# Jobs (local or submitted, which inherit the environment) read this when they finish.
os.environ[job_context.KEEP_ENV] = "1" if config["keep_checkpoints"] else "0"
# What a variant or model name and a seed may be, for every rule's wildcards (the schema
# checks the config against the same pattern).
WILDCARDS = {"variant": NAME_PATTERN, "model": NAME_PATTERN, "seed": r"\d+"}
# Under --sdm conda (or a container) the job's own environment runs the step: the `python` its
# PATH finds there. Otherwise the interpreter that runs Snakemake, so rules need no activated venv.
# The interpreter reaches the shell line through the environment (jobs inherit it; a cluster job's
# own Snakemake sets it again), never through params: a moved checkout or a re-created venv
# changes no params and reruns nothing.
PYTHON_ENV = "NEURIPS26_PYTHON"
os.environ[PYTHON_ENV] = "python" if workflow.deployment_settings.deployment_method else sys.executable
CLI = f'"${{{PYTHON_ENV}:-python}}" -m neurips26'
ENV = "../../envs/neurips26.yaml"
# The committed reference run that `results/compare.md` checks this run against.
# Absent (a fork that dropped it): compare.md says so and the run goes on.
REFERENCE = "reference/summary.csv" if Path("reference/summary.csv").exists() else []
CONFIG_HASH = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
_TARGETS = {}
_STAMPS = {}


CLUSTER = config["cluster"]


def job_resources(mem_mb, runtime, gpus=0, cpu_ranks=1, training=False):
    """The resources of a GPU or multi-rank rule, used as `resources: **job_resources(...)`.

    One rank per GPU (or `cpu_ranks` processes without GPUs, DDP over gloo): SLURM makes the
    ranks with `--ntasks-per-node` (`tasks_per_node`; `tasks` would become `--ntasks`, which
    Lightning refuses without SLURM_NTASKS_PER_NODE), and the `mpi` resource, which the rule's
    shell line starts with, is `srun` itself: with an `mpi` resource the executor does not
    wrap the job in `srun -n1`. srun no longer inherits --cpus-per-task, so it is passed again.
    Locally `mpi` is empty: Lightning starts one process per device itself. A rule with GPUs
    goes to the GPU partition; `mem_mb` is for the whole node (all ranks).

    A training rule (Lightning through core.trainer) asks SLURM for SIGUSR1 `warning_seconds`
    before its time limit; SLURM signals job steps, not the batch shell, so its single rank runs
    under srun too. On the signal the trainer saves its checkpoint and the job fails, and
    Snakemake's retry resumes from it.
    """
    ranks = gpus if gpus > 0 else cpu_ranks
    cpus = CLUSTER["cpus_per_gpu"] if gpus > 0 else THREADS
    res = {"mem_mb": mem_mb, "runtime": runtime, "mpi": _launcher(ranks, cpus, gpus, training)}
    if gpus > 0:
        res.update(gpu=gpus, slurm_partition=CLUSTER["gpu_partition"], cpus_per_task=cpus)
    if ranks > 1:
        res["tasks_per_node"] = ranks
    if training:
        res["slurm_extra"] = f"--signal=USR1@{CLUSTER['warning_seconds']}"
    return res


def _launcher(ranks, cpus, gpus, training):
    """The `mpi` resource. Submitting (a non-local executor), only whether it is set matters:
    set, sbatch gets --ntasks-per-node, which a single rank must not have. Inside the allocation
    (the executor's job step, or a local run under salloc/sbatch) it is the srun that makes the
    ranks; the executor's job step strips the SLURM_* variables, so the step asks for its node,
    CPUs and GPUs again (every rank sees the node's GPUs; Lightning gives rank r cuda:r)."""
    step_gpus = f" --gpus={gpus}" if gpus > 0 else ""

    def mpi(wildcards, threads):
        inside = workflow.remote_exec or (not workflow.non_local_exec and "SLURM_JOB_ID" in os.environ)
        if inside and (ranks > 1 or training):
            return (f"srun --nodes=1 --ntasks-per-node={ranks} --cpus-per-task={cpus}{step_gpus}"
                    " --kill-on-bad-exit=1")
        if workflow.non_local_exec and not workflow.remote_exec and ranks > 1:
            return "srun"
        return ""

    return mpi


def register_targets(paper, targets):
    """Each paper's rules file names the final outputs `rule all` needs when it is enabled."""
    _TARGETS[paper] = list(targets)


def all_targets():
    return [t for paper in PAPERS for t in _TARGETS.get(paper, [])] + ["results/summary.md"]


def code_stamp(paper):
    """Hash of the code a paper's steps run (core/, data/ and its own package): a change to
    it changes the rules' params, so Snakemake reruns that paper's jobs. The step computes
    the same stamp for its checkpoint key (neurips26.core.job)."""
    if paper not in _STAMPS:
        _STAMPS[paper] = job_context.code_stamp(paper)
    return _STAMPS[paper]


def paper_params(paper, *sections, wildcards_in=(), **extra):
    """A params function: the named sections of the paper's config block as JSON, plus the
    job's variant (its settings merged in under 'variant_settings') and seed from wildcards,
    and the wildcards named in `wildcards_in` as they are."""
    block = config[paper]
    missing = [s for s in sections if s not in block]
    if missing:
        raise WorkflowError(f"config key '{paper}.{missing[0]}' is missing")

    def params(wildcards):
        out = {"paper": paper, "scale": config["scale"], "tuning": TUNING, **{s: block[s] for s in sections}, **extra}
        if "variant" in wildcards.keys():
            variants = block.get("variants", {})
            if wildcards.variant not in variants:
                raise WorkflowError(f"config key '{paper}.variants' has no variant '{wildcards.variant}'")
            out["variant"] = wildcards.variant
            out["variant_settings"] = variants[wildcards.variant]
        if "seed" in wildcards.keys():
            out["seed"] = int(wildcards.seed)
        out.update({name: getattr(wildcards, name) for name in wildcards_in})
        return json.dumps(out, sort_keys=True)

    return params


def data_paths(paper, *keys):
    """The real-data files or folders a paper's config names under `data` (none when generated)."""
    data = config[paper].get("data", {})
    return [data[k] for k in keys if data.get(k)]


def folder_of(kind, name, up=1):
    """A params function: the folder `up` levels above the job's input or output file `name`
    (steps take folders; deriving them from the files keeps rules free of hard-coded prefixes).
    An input left empty by the config gives ''."""

    def folder(wildcards, input, output):
        files = getattr(input if kind == "input" else output, name, None)
        if not files:  # an optional input this config does not use
            return ""
        path = Path(files if isinstance(files, str) else files[0])
        for _ in range(up):
            path = path.parent
        return str(path)

    return folder


def tuned_by(paper, pattern):
    """An input function: the tuning result a variant uses, `pattern` formatted with the variant
    that was tuned (`source`): the variant itself when its settings say `tune: true`, the variant
    its `tune_from` names, or none (the input stays empty)."""

    def files(wildcards):
        settings = config[paper]["variants"][wildcards.variant]
        source = wildcards.variant if settings.get("tune") else settings.get("tune_from")
        return [] if source is None else [pattern.format(source=source)]

    return files


def listed_variant(paper, section, pattern):
    """An input function: `pattern` (with the job's {variant}) when the variant is listed in
    `<paper>.<section>.variants`, none otherwise."""

    def files(wildcards):
        listed = config[paper].get(section, {}).get("variants", [])
        return [pattern.format(variant=wildcards.variant)] if wildcards.variant in listed else []

    return files


def wildcards_json(wildcards):
    return json.dumps(dict(wildcards.items()), sort_keys=True)


def wildcards_arg(wildcards):
    """The `--wildcards` argument of a step's shell line (for tracking); none for a rule without."""
    return f" --wildcards {shlex.quote(wildcards_json(wildcards))}" if len(wildcards.keys()) else ""


def launcher(wildcards, resources):
    """What a step's shell line starts with: the `mpi` resource of `job_resources` (srun inside a
    SLURM allocation for training and multi-rank jobs), or nothing."""
    mpi = resources.get("mpi", "") if hasattr(resources, "get") else ""
    return f"{mpi} " if mpi else ""


def files_of(name):
    """A params function: the job's input files `name`, space separated."""

    def files(wildcards, input):
        value = getattr(input, name, [])
        return value if isinstance(value, str) else " ".join(value)

    return files


def optional_input(name, folder):
    """A params function for `cli_inputs`: `--input name=<folder>` when the job has the input
    (`folder` a `folder_of(...)`), nothing otherwise."""

    def arg(wildcards, input, output):
        path = folder(wildcards, input, output)
        return f"--input {shlex.quote(f'{name}={path}')}" if path else ""

    return arg


def cli_inputs(*extra, **named):
    """A params function: a step's `--input name=folder` arguments, one per keyword (a string or a
    params function such as `folder_of(...)`; an empty folder means the input is not used), then
    the `extra` arguments, each a string or a params function giving whole arguments (or '')."""

    def call(value, wildcards, input, output):
        if not callable(value):
            return value
        wanted = inspect.signature(value).parameters
        given = {"wildcards": wildcards, "input": input, "output": output}
        return value(*[given[name] for name in wanted])

    def args(wildcards, input, output):
        # each `--input` argument shell-quoted (a folder may hold a space or a `;`); the extras are
        # whole arguments that their own helpers quote
        parts = [f"--input {shlex.quote(f'{name}={call(v, wildcards, input, output)}')}" for name, v in named.items()]
        parts += [call(v, wildcards, input, output).strip() for v in extra]
        return "".join(f" {p}" for p in parts if p)

    return args


def grid(paper, pattern):
    """`pattern` expanded over the paper's run_variants x seeds."""
    block = config[paper]
    return expand(pattern, variant=block["run_variants"], seed=block["seeds"])


def figure_outputs(paper, prefix, names):
    """The outputs every figures step writes: its figures (in the report, captioned by
    workflow/report/<paper>_<name>.rst), summary.csv, claims.csv and tuning.csv (every knob of every
    method and baseline as the tuning protocol chose or fixed it; `output: **figure_outputs(...)`)."""
    return {
        # a line may not start with `report` outside a rule (Snakemake reads it as the directive)
        "figures": [report(f"{prefix}/figures/{n}.png", caption=f"../report/{paper}_{n}.rst", category=paper,
                           subcategory="Figures") for n in names],
        "summary": f"{prefix}/summary.csv",
        "claims": f"{prefix}/claims.csv",
        "tuning": f"{prefix}/tuning.csv",
    }


def export_retrain():
    """Jobs of the rules this invocation forces (--forcerun, --forceall), or every job under
    `retrain: true`, train afresh instead of reusing a kept finished checkpoint (core.trainer).
    The jobs learn it as the `<paper> <step>` of each forced rule (its `step` param)."""
    forced = workflow.dag_settings.forcerun if workflow.dag_settings else ()
    everything = RETRAIN or (workflow.dag_settings is not None and workflow.dag_settings.forceall)
    steps = set()
    for name in forced:
        if isinstance(name, str) and workflow.is_rule(name):
            step = dict(workflow.get_rule(name).params.items()).get("step")
            if isinstance(step, str):
                steps.add(step)
    os.environ[job_context.RETRAIN_ENV] = "*" if everything else ",".join(sorted(steps))


def start_tracking():
    from neurips26.core import tracking

    export_retrain()
    from neurips26.papers import SHARED

    uri = tracking.tracking_uri()
    if workflow.non_local_exec and not workflow.remote_exec and uri.startswith("sqlite:") and not CLUSTER["allow_sqlite"]:
        raise WorkflowError(
            f"MLflow would log to the SQLite file {uri} from every cluster job at once, which locks it; "
            "set MLFLOW_TRACKING_URI to a tracking server (docs/cluster.md, 'A team tracking server'), "
            "or pass --config cluster='{allow_sqlite: true}' to use the file anyway"
        )
    try:
        tracking.start_invocation(PAPERS + ["summary", *SHARED])
    except Exception as exc:
        if tracking.is_tracking_error(exc):
            raise WorkflowError(f"MLflow tracking at {tracking.tracking_uri()} is unreachable: {exc}") from None
        raise


def end_tracking(status):
    from neurips26.core import tracking

    tracking.end_invocation(status)


_WARM = {}


def start_warm():
    """A local run's jobs are forks of one process that imported torch, Lightning and MLflow once
    (src/neurips26/core/warm.py); NEURIPS26_WARM_START=0 turns it off. Not for cluster jobs (other
    machines) nor under --sdm (the jobs' own environments)."""
    from neurips26.core import warm

    if workflow.non_local_exec or workflow.remote_exec or workflow.deployment_settings.deployment_method:
        return
    _WARM["server"] = warm.start(Path(".snakemake/log/neurips26-warm-start.log"), threads=THREADS)


def stop_warm():
    from neurips26.core import warm

    warm.stop(_WARM.pop("server", None))


# Shared language-model assets (rules in shared.smk): where they land, and the helpers their
# rules and the papers using them need.
LM_ASSETS = "results/lm_assets"


def lm_model_params(wildcards):
    """Params of one lm_pretrain job: only that model's spec, so editing one model reruns only it."""
    models = config["lm_assets"]["models"]
    if wildcards.model not in models:
        raise WorkflowError(f"config key 'lm_assets.models' has no model '{wildcards.model}'")
    return json.dumps({"paper": "lm_assets", "scale": config["scale"], "model": wildcards.model,
                       "models": {wildcards.model: models[wildcards.model]}}, sort_keys=True)


def lm_model_file(name):
    """The pretrained model file of lm_assets.models.<name> (for a paper rule's input)."""
    return f"{LM_ASSETS}/models/{name}/model/model.safetensors"
