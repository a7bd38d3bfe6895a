# crl_spectral: contrastive learning as spectral approximation of PMI.
# train (one job per seed: discrete tables + neural encoders) -> evaluate -> figures
CS = "results/crl_spectral"
CS_FIGURES = ["spectrum", "error_vs_dim", "tail_ratio", "neural", "calibration"]


rule crl_spectral_train:
    output:
        fits=f"{CS}/train/seed{{seed}}/fits.json",
    params:
        cli=CLI,
        args=paper_params("crl_spectral", "discrete", "continuous"),
        wildcards=wildcards_json,
        code=code_stamp("crl_spectral"),
        out=folder_of("output", "fits"),
    log:
        f"{CS}/logs/train_seed{{seed}}.log",
    benchmark:
        f"{CS}/benchmarks/train_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["crl_spectral"]["resources"]["train_mem_mb"],
            config["crl_spectral"]["resources"]["train_runtime_min"],
            config["crl_spectral"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} crl_spectral train --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule crl_spectral_evaluate:
    input:
        fits=expand(f"{CS}/train/seed{{seed}}/fits.json", seed=config["crl_spectral"]["seeds"]),
    output:
        metrics=f"{CS}/eval/metrics.json",
    params:
        cli=CLI,
        args=paper_params("crl_spectral", "calibration", seeds=config["crl_spectral"]["seeds"]),
        code=code_stamp("crl_spectral"),
        train=folder_of("input", "fits", up=2),
        out=folder_of("output", "metrics"),
    log:
        f"{CS}/logs/evaluate.log",
    benchmark:
        f"{CS}/benchmarks/evaluate.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} crl_spectral evaluate --params {params.args:q} --input train={params.train}"
        " --out {params.out} > {log} 2>&1"


rule crl_spectral_figures:
    input:
        metrics=rules.crl_spectral_evaluate.output.metrics,
    output:
        figures=[
            report(f"{CS}/figures/{name}.png", caption=f"../report/crl_spectral_{name}.rst", category="crl_spectral")
            for name in CS_FIGURES
        ],
        summary=f"{CS}/summary.csv",
        claims=f"{CS}/claims.csv",
    params:
        cli=CLI,
        args=paper_params("crl_spectral", "discrete", "calibration"),
        code=code_stamp("crl_spectral"),
        out=folder_of("output", "claims"),
    log:
        f"{CS}/logs/figures.log",
    benchmark:
        f"{CS}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.cli} crl_spectral figures --params {params.args:q} --input metrics={input.metrics}"
        " --out {params.out} > {log} 2>&1"


register_targets("crl_spectral", rules.crl_spectral_figures.output)
