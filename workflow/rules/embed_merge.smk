# embed_merge: model merging in a low-rank model embedding space.
# pretrain (vision domain, once) -> tune_lr (domain x constrained mode, on the tuning seed) -> train (domain x seed: full and in-space fine-tunes of every
# task) -> merge (domain x seed; each scaled method's scale by the tuning protocol) -> figures
EM = "results/embed_merge"
EM_FIGURES = ["accuracy_vs_tasks", "methods_at_max_tasks", "per_task", "subspace_share"]
# the released checkpoints and data the clip domains read (none for the domains trained here)
EM_CHECKPOINTS = sorted({
    path
    for name in config["embed_merge"]["run_variants"]
    for key, path in config["embed_merge"]["variants"][name].items()
    if key in ("pretrained_dir", "finetuned_dir", "heads_dir", "data_dir") and path
})


use rule neurips26_step as embed_merge_pretrain with:
    output:
        pretrained=f"{EM}/pretrain/{{variant}}/pretrained.safetensors",
        info=f"{EM}/pretrain/{{variant}}/pretrain.json",
    params:
        step="embed_merge pretrain",
        args=paper_params("embed_merge", "method"),
        code=code_stamp("embed_merge"),
        out=folder_of("output", "info"),
    log:
        f"{EM}/logs/pretrain/{{variant}}.log",
    benchmark:
        f"{EM}/benchmarks/pretrain/{{variant}}.tsv"
    resources:
        **job_resources(
            config["embed_merge"]["resources"]["train_mem_mb"],
            config["embed_merge"]["resources"]["train_runtime_min"],
            config["embed_merge"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as embed_merge_tune_lr with:
    input:
        # the pre-trained ViT a vision domain's fine-tunes start from (none for the other kinds)
        unpack(
            lambda wildcards: (
                {"pretrain": f"{EM}/pretrain/{wildcards.variant}/pretrain.json"}
                if config["embed_merge"]["variants"][wildcards.variant]["kind"] == "vision"
                else {}
            )
        ),
    output:
        lr=f"{EM}/tune_lr/{{variant}}/{{mode}}/lr.json",
    params:
        step="embed_merge tune_lr",
        args=paper_params("embed_merge", "method", "seeds", wildcards_in=("mode",)),
        code=code_stamp("embed_merge"),
        out=folder_of("output", "lr"),
        inputs=cli_inputs(optional_input("pretrain", folder_of("input", "pretrain"))),
    log:
        f"{EM}/logs/tune_lr/{{variant}}_{{mode}}.log",
    benchmark:
        f"{EM}/benchmarks/tune_lr/{{variant}}_{{mode}}.tsv"
    resources:
        **job_resources(
            config["embed_merge"]["resources"]["train_mem_mb"],
            config["embed_merge"]["resources"]["train_runtime_min"],
            config["embed_merge"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as embed_merge_train with:
    input:
        EM_CHECKPOINTS,
        # the pre-trained ViT a vision domain's fine-tunes start from (none for the other kinds)
        unpack(
            lambda wildcards: (
                {"pretrain": f"{EM}/pretrain/{wildcards.variant}/pretrain.json"}
                if config["embed_merge"]["variants"][wildcards.variant]["kind"] == "vision"
                else {}
            )
        ),
        # the tuned learning rates of the constrained fine-tunes (lr_tuning.modes; none when not tuned)
        lr=lambda wildcards: [
            f"{EM}/tune_lr/{wildcards.variant}/{mode}/lr.json"
            for mode in config["embed_merge"]["variants"][wildcards.variant].get("lr_tuning", {}).get("modes", [])
        ],
    output:
        pretrained=f"{EM}/train/{{variant}}/seed{{seed}}/pretrained.safetensors",
        info=f"{EM}/train/{{variant}}/seed{{seed}}/train.json",
    params:
        step="embed_merge train",
        args=paper_params("embed_merge", "method"),
        code=code_stamp("embed_merge"),
        out=folder_of("output", "info"),
        inputs=cli_inputs(
            optional_input("pretrain", folder_of("input", "pretrain")),
            optional_input("lr", folder_of("input", "lr", up=2)),
        ),
    log:
        f"{EM}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{EM}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["embed_merge"]["resources"]["train_mem_mb"],
            config["embed_merge"]["resources"]["train_runtime_min"],
            config["embed_merge"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as embed_merge_merge with:
    input:
        EM_CHECKPOINTS,
        info=rules.embed_merge_train.output.info,
        pretrained=rules.embed_merge_train.output.pretrained,
    output:
        metrics=f"{EM}/merge/{{variant}}/seed{{seed}}/metrics.json",
    params:
        step="embed_merge merge",
        args=paper_params("embed_merge", "method", "merge", "resources"),
        code=code_stamp("embed_merge"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(train=folder_of("input", "info")),
    log:
        f"{EM}/logs/merge/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{EM}/benchmarks/merge/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["embed_merge"]["resources"]["merge_mem_mb"],
            config["embed_merge"]["resources"]["merge_runtime_min"],
            config["embed_merge"]["resources"]["merge_gpus"],
        ),


use rule neurips26_step as embed_merge_figures with:
    input:
        metrics=grid("embed_merge", f"{EM}/merge/{{variant}}/seed{{seed}}/metrics.json"),
    output:
        **figure_outputs("embed_merge", EM, EM_FIGURES),
    params:
        threads=1,
        step="embed_merge figures",
        args=paper_params(
            "embed_merge",
            "merge",
            "variants",
            run_variants=config["embed_merge"]["run_variants"],
            seeds=config["embed_merge"]["seeds"],
        ),
        code=code_stamp("embed_merge"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(merges=folder_of("input", "metrics", up=3)),
    log:
        f"{EM}/logs/figures.log",
    benchmark:
        f"{EM}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("embed_merge", rules.embed_merge_figures.output)
