# nar_dit: Noise-Aware Routing for DiT.
# prepare -> classifier (FD_cls features) -> train (regime x seed) -> evaluate -> figures
ND = "results/nar_dit"
ND_RES = config["nar_dit"]["resources"]
from neurips26.papers.nar_dit import size_study_variants

ND_STUDY = config["nar_dit"].get("size_study", {})
ND_SIZE_RUNS = (
    expand(f"{ND}/size/{{size}}/metrics.json", size=[s["name"] for s in ND_STUDY.get("sizes", [])])
    if size_study_variants(ND_STUDY, config["nar_dit"]["run_variants"]) else []
)
ND_FIGURES = (["fd_vs_steps", "fd_vs_flops", "fd_vs_wallclock", "mechanism", "samples"]
              + (["guidance"] if config["nar_dit"]["evaluate"].get("guided_scale") is not None else [])
              + (["size_study"] if ND_SIZE_RUNS else []))


use rule neurips26_step as nar_dit_prepare with:
    input:
        data_paths("nar_dit", "features_dir", "labels_dir"),
    output:
        images=f"{ND}/data/images.safetensors",
        manifest=f"{ND}/data/manifest.json",
    params:
        step="nar_dit prepare",
        args=paper_params("nar_dit", "data"),
        code=code_stamp("nar_dit"),
        out=folder_of("output", "images"),
    log:
        f"{ND}/logs/prepare.log",
    benchmark:
        f"{ND}/benchmarks/prepare.tsv"
    resources:
        mem_mb=4000,
        runtime=60,


use rule neurips26_step as nar_dit_classifier with:
    input:
        images=rules.nar_dit_prepare.output.images,
    output:
        net=f"{ND}/classifier/classifier.safetensors",
        metrics=f"{ND}/classifier/metrics.json",
    params:
        step="nar_dit classifier",
        args=paper_params("nar_dit", "data", "classifier"),
        code=code_stamp("nar_dit"),
        out=folder_of("output", "net"),
        inputs=cli_inputs(data=folder_of("input", "images")),
    log:
        f"{ND}/logs/classifier.log",
    benchmark:
        f"{ND}/benchmarks/classifier.tsv"
    resources:
        mem_mb=3000,
        runtime=30,


use rule neurips26_step as nar_dit_train with:
    input:
        images=rules.nar_dit_prepare.output.images,
    output:
        snapshots=f"{ND}/train/{{variant}}/seed{{seed}}/snapshots.safetensors",
        info=f"{ND}/train/{{variant}}/seed{{seed}}/train.json",
        timing=f"{ND}/train/{{variant}}/seed{{seed}}/timing.json",
    params:
        step="nar_dit train",
        args=paper_params("nar_dit", "model", "train"),
        code=code_stamp("nar_dit"),
        out=folder_of("output", "snapshots"),
        inputs=cli_inputs(data=folder_of("input", "images")),
    log:
        f"{ND}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{ND}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            ND_RES["train_mem_mb"], ND_RES["train_runtime_min"], ND_RES["train_gpus"],
            cpu_ranks=ND_RES["train_cpu_ranks"],
            training=True,
        ),


use rule neurips26_step as nar_dit_evaluate with:
    input:
        images=rules.nar_dit_prepare.output.images,
        # the FD_cls feature network; the paper-scale Inception metric needs none
        net=rules.nar_dit_classifier.output.net if config["nar_dit"]["evaluate"]["metric"] == "fd_cls" else [],
        snapshots=rules.nar_dit_train.output.snapshots,
    output:
        metrics=f"{ND}/eval/{{variant}}/seed{{seed}}/metrics.json",
        samples=f"{ND}/eval/{{variant}}/seed{{seed}}/samples.safetensors",
    params:
        step="nar_dit evaluate",
        args=paper_params("nar_dit", "model", "train", "evaluate"),
        code=code_stamp("nar_dit"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(
            data=folder_of("input", "images"),
            classifier=folder_of("input", "net"),
            train=folder_of("input", "snapshots"),
        ),
    log:
        f"{ND}/logs/eval/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{ND}/benchmarks/eval/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(ND_RES["evaluate_mem_mb"], ND_RES["evaluate_runtime_min"], ND_RES["evaluate_gpus"]),


# size study: every regime of the study and every seed at one smaller size, in one job
use rule neurips26_step as nar_dit_size with:
    wildcard_constraints:
        size="[A-Za-z0-9_]+",
    input:
        images=rules.nar_dit_prepare.output.images,
        net=rules.nar_dit_classifier.output.net,
    output:
        metrics=f"{ND}/size/{{size}}/metrics.json",
    params:
        step="nar_dit size",
        args=paper_params("nar_dit", "model", "train", "evaluate", "variants", "size_study",
                          seeds=config["nar_dit"]["seeds"], run_variants=config["nar_dit"]["run_variants"],
                          wildcards_in=("size",)),
        code=code_stamp("nar_dit"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(data=folder_of("input", "images"), classifier=folder_of("input", "net")),
    log:
        f"{ND}/logs/size/{{size}}.log",
    benchmark:
        f"{ND}/benchmarks/size/{{size}}.tsv"
    resources:
        # the training rule's machine; the job trains (and samples from) every regime x seed in turn
        **job_resources(ND_RES["train_mem_mb"], ND_RES["train_runtime_min"], ND_RES["train_gpus"], training=True),


use rule neurips26_step as nar_dit_figures with:
    input:
        sizes=ND_SIZE_RUNS,
        metrics=grid("nar_dit", f"{ND}/eval/{{variant}}/seed{{seed}}/metrics.json"),
        samples=grid("nar_dit", f"{ND}/eval/{{variant}}/seed{{seed}}/samples.safetensors"),
        info=grid("nar_dit", f"{ND}/train/{{variant}}/seed{{seed}}/train.json"),
        timing=grid("nar_dit", f"{ND}/train/{{variant}}/seed{{seed}}/timing.json"),
    output:
        **figure_outputs("nar_dit", ND, ND_FIGURES),
        size_study=[f"{ND}/size_study.csv"] if ND_SIZE_RUNS else [],
    params:
        threads=1,
        step="nar_dit figures",
        args=paper_params(
            "nar_dit",
            "claims",
            "size_study",
            "train",
            "evaluate",
            run_variants=config["nar_dit"]["run_variants"],
            seeds=config["nar_dit"]["seeds"],
        ),
        code=code_stamp("nar_dit"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(
            f"--input sizes={ND}/size" if ND_SIZE_RUNS else "",
            evals=folder_of("input", "metrics", up=3),
            trains=folder_of("input", "info", up=3),
        ),
    log:
        f"{ND}/logs/figures.log",
    benchmark:
        f"{ND}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("nar_dit", rules.nar_dit_figures.output)
