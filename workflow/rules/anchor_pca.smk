# anchor_pca: Anchor PCA, robust PCA across domains.
# evaluate (one job per experiment, all seeds and gammas) -> figures
AP = "results/anchor_pca"
AP_FIGURES = ["principal_angles", "recovery_vs_n", "unseen_variance"]


rule anchor_pca_evaluate:
    input:
        data_paths("anchor_pca", "gas_dir"),
    output:
        metrics=f"{AP}/eval/{{variant}}/metrics.json",
    params:
        cli=CLI,
        args=paper_params("anchor_pca", "seeds", "gammas", "validation", "maximin_iterations", "data"),
        wildcards=wildcards_json,
        code=code_stamp("anchor_pca"),
        out=folder_of("output", "metrics"),
    log:
        f"{AP}/logs/eval/{{variant}}.log",
    benchmark:
        f"{AP}/benchmarks/eval/{{variant}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "{params.cli} anchor_pca evaluate --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule anchor_pca_figures:
    input:
        metrics=expand(f"{AP}/eval/{{variant}}/metrics.json", variant=config["anchor_pca"]["run_variants"]),
    output:
        figures=[
            report(f"{AP}/figures/{name}.png", caption=f"../report/anchor_pca_{name}.rst", category="anchor_pca")
            for name in AP_FIGURES
        ],
        summary=f"{AP}/summary.csv",
        claims=f"{AP}/claims.csv",
    params:
        cli=CLI,
        args=paper_params("anchor_pca", "gammas", run_variants=config["anchor_pca"]["run_variants"]),
        code=code_stamp("anchor_pca"),
        evals=folder_of("input", "metrics", up=2),
        out=folder_of("output", "claims"),
    log:
        f"{AP}/logs/figures.log",
    benchmark:
        f"{AP}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} anchor_pca figures --params {params.args:q} --input evals={params.evals} --out {params.out} > {log} 2>&1"


register_targets("anchor_pca", rules.anchor_pca_figures.output)
