# sparse_halfspace: attribute-efficient learning of sparse halfspaces under malicious noise.
# train (one job per seed: every method on the (d, n) grid and the noise sweep) -> evaluate -> figures
SH = "results/sparse_halfspace"
SH_FIGURES = ["error_vs_n", "error_vs_d", "error_vs_noise", "sample_complexity"]


rule sparse_halfspace_train:
    output:
        results=f"{SH}/train/seed{{seed}}/results.json",
    params:
        cli=CLI,
        args=paper_params("sparse_halfspace", "problem", "adversary", "noise_sweep", "complexity", "algorithm", "baselines"),
        wildcards=wildcards_json,
        code=code_stamp("sparse_halfspace"),
        out=folder_of("output", "results"),
    log:
        f"{SH}/logs/train_seed{{seed}}.log",
    benchmark:
        f"{SH}/benchmarks/train_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=config["sparse_halfspace"]["resources"]["train_mem_mb"],
        runtime=config["sparse_halfspace"]["resources"]["train_runtime_min"],
    shell:
        "{params.cli} sparse_halfspace train --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule sparse_halfspace_evaluate:
    input:
        results=expand(f"{SH}/train/seed{{seed}}/results.json", seed=config["sparse_halfspace"]["seeds"]),
    output:
        metrics=f"{SH}/eval/metrics.json",
    params:
        cli=CLI,
        args=paper_params("sparse_halfspace", "complexity", "noise_sweep", seeds=config["sparse_halfspace"]["seeds"]),
        code=code_stamp("sparse_halfspace"),
        train=folder_of("input", "results", up=2),
        out=folder_of("output", "metrics"),
    log:
        f"{SH}/logs/evaluate.log",
    benchmark:
        f"{SH}/benchmarks/evaluate.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} sparse_halfspace evaluate --params {params.args:q} --input train={params.train}"
        " --out {params.out} > {log} 2>&1"


rule sparse_halfspace_figures:
    input:
        metrics=rules.sparse_halfspace_evaluate.output.metrics,
    output:
        figures=[
            report(f"{SH}/figures/{name}.png", caption=f"../report/sparse_halfspace_{name}.rst", category="sparse_halfspace")
            for name in SH_FIGURES
        ],
        summary=f"{SH}/summary.csv",
        claims=f"{SH}/claims.csv",
    params:
        cli=CLI,
        args=paper_params("sparse_halfspace", "problem", "adversary"),
        code=code_stamp("sparse_halfspace"),
        out=folder_of("output", "claims"),
    log:
        f"{SH}/logs/figures.log",
    benchmark:
        f"{SH}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.cli} sparse_halfspace figures --params {params.args:q} --input metrics={input.metrics}"
        " --out {params.out} > {log} 2>&1"


register_targets("sparse_halfspace", rules.sparse_halfspace_figures.output)
