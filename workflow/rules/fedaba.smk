# fedaba: FedAbA, basis-consistent federated LoRA with heterogeneous ranks.
# train (rank profile x seed: every Dirichlet alpha x every aggregator) -> figures
FA = "results/fedaba"
FA_FIGURES = ["accuracy", "accuracy_by_rank", "prefix_stability", "gain_vs_heterogeneity"]


rule fedaba_train:
    output:
        metrics=f"{FA}/train/{{variant}}/seed{{seed}}/metrics.json",
    params:
        cli=CLI,
        args=paper_params("fedaba", "alphas", "aggregators", "aggregator_settings", "fed", "data"),
        wildcards=wildcards_json,
        code=code_stamp("fedaba"),
        out=folder_of("output", "metrics"),
    log:
        f"{FA}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{FA}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["fedaba"]["resources"]["train_mem_mb"],
            config["fedaba"]["resources"]["train_runtime_min"],
            config["fedaba"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} fedaba train --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule fedaba_figures:
    input:
        metrics=grid("fedaba", f"{FA}/train/{{variant}}/seed{{seed}}/metrics.json"),
    output:
        figures=[
            report(f"{FA}/figures/{name}.png", caption=f"../report/fedaba_{name}.rst", category="fedaba")
            for name in FA_FIGURES
        ],
        summary=f"{FA}/summary.csv",
        claims=f"{FA}/claims.csv",
    params:
        cli=CLI,
        args=paper_params(
            "fedaba",
            "claims",
            run_variants=config["fedaba"]["run_variants"],
            seeds=config["fedaba"]["seeds"],
        ),
        code=code_stamp("fedaba"),
        train=folder_of("input", "metrics", up=3),
        out=folder_of("output", "claims"),
    log:
        f"{FA}/logs/figures.log",
    benchmark:
        f"{FA}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.cli} fedaba figures --params {params.args:q} --input train={params.train} --out {params.out} > {log} 2>&1"


register_targets("fedaba", rules.fedaba_figures.output)
