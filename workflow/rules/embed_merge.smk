# embed_merge: model merging in a low-rank model embedding space.
# pretrain (vision domain, once) -> train (domain x seed: full and in-space fine-tunes of every
# task) -> merge (domain x seed) -> figures
EM = "results/embed_merge"
EM_FIGURES = ["accuracy_vs_tasks", "methods_at_max_tasks", "per_task", "subspace_share"]
# the released checkpoints and data the clip domains read (none for the domains trained here)
EM_CHECKPOINTS = sorted({
    path
    for name in config["embed_merge"]["run_variants"]
    for key, path in config["embed_merge"]["variants"][name].items()
    if key in ("pretrained_dir", "finetuned_dir", "heads_dir", "data_dir") and path
})


rule embed_merge_pretrain:
    output:
        pretrained=f"{EM}/pretrain/{{variant}}/pretrained.safetensors",
        info=f"{EM}/pretrain/{{variant}}/pretrain.json",
    params:
        cli=CLI,
        args=paper_params("embed_merge", "method"),
        wildcards=wildcards_json,
        code=code_stamp("embed_merge"),
        out=folder_of("output", "info"),
    log:
        f"{EM}/logs/pretrain/{{variant}}.log",
    benchmark:
        f"{EM}/benchmarks/pretrain/{{variant}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["embed_merge"]["resources"]["train_mem_mb"],
            config["embed_merge"]["resources"]["train_runtime_min"],
            config["embed_merge"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} embed_merge pretrain --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule embed_merge_train:
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
    output:
        pretrained=f"{EM}/train/{{variant}}/seed{{seed}}/pretrained.safetensors",
        info=f"{EM}/train/{{variant}}/seed{{seed}}/train.json",
    params:
        cli=CLI,
        args=paper_params("embed_merge", "method"),
        wildcards=wildcards_json,
        code=code_stamp("embed_merge"),
        out=folder_of("output", "info"),
        pretrain=lambda wildcards, input: f"--input pretrain={os.path.dirname(input.pretrain)}" if "pretrain" in input.keys() else "",
    log:
        f"{EM}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{EM}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["embed_merge"]["resources"]["train_mem_mb"],
            config["embed_merge"]["resources"]["train_runtime_min"],
            config["embed_merge"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} embed_merge train --params {params.args:q} {params.pretrain} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule embed_merge_merge:
    input:
        EM_CHECKPOINTS,
        info=rules.embed_merge_train.output.info,
        pretrained=rules.embed_merge_train.output.pretrained,
    output:
        metrics=f"{EM}/merge/{{variant}}/seed{{seed}}/metrics.json",
    params:
        cli=CLI,
        args=paper_params("embed_merge", "method", "merge", "resources"),
        wildcards=wildcards_json,
        code=code_stamp("embed_merge"),
        train=folder_of("input", "info"),
        out=folder_of("output", "metrics"),
    log:
        f"{EM}/logs/merge/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{EM}/benchmarks/merge/{{variant}}_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["embed_merge"]["resources"]["merge_mem_mb"],
            config["embed_merge"]["resources"]["merge_runtime_min"],
            config["embed_merge"]["resources"]["merge_gpus"],
        ),
    shell:
        "{resources.mpi} {params.cli} embed_merge merge --params {params.args:q} --input train={params.train}"
        " --out {params.out} --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule embed_merge_figures:
    input:
        metrics=grid("embed_merge", f"{EM}/merge/{{variant}}/seed{{seed}}/metrics.json"),
    output:
        figures=[
            report(f"{EM}/figures/{name}.png", caption=f"../report/embed_merge_{name}.rst", category="embed_merge")
            for name in EM_FIGURES
        ],
        summary=f"{EM}/summary.csv",
        claims=f"{EM}/claims.csv",
    params:
        cli=CLI,
        args=paper_params(
            "embed_merge",
            run_variants=config["embed_merge"]["run_variants"],
            seeds=config["embed_merge"]["seeds"],
        ),
        code=code_stamp("embed_merge"),
        merges=folder_of("input", "metrics", up=3),
        out=folder_of("output", "claims"),
    log:
        f"{EM}/logs/figures.log",
    benchmark:
        f"{EM}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.cli} embed_merge figures --params {params.args:q} --input merges={params.merges} --out {params.out} > {log} 2>&1"


register_targets("embed_merge", rules.embed_merge_figures.output)
