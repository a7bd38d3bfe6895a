# sparse_halfspace: attribute-efficient learning of sparse halfspaces under malicious noise.
# train (one job per seed: every method on the (d, n) grid and the noise sweep) -> evaluate -> figures
SH = "results/sparse_halfspace"
SH_FIGURES = ["error_vs_n", "error_vs_d", "error_vs_noise", "sample_complexity"]


use rule neurips26_step as sparse_halfspace_train with:
    output:
        results=f"{SH}/train/seed{{seed}}/results.json",
    params:
        step="sparse_halfspace train",
        args=paper_params("sparse_halfspace", "problem", "adversary", "noise_sweep", "complexity", "algorithm", "baselines"),
        code=code_stamp("sparse_halfspace"),
        out=folder_of("output", "results"),
    log:
        f"{SH}/logs/train_seed{{seed}}.log",
    benchmark:
        f"{SH}/benchmarks/train_seed{{seed}}.tsv"
    resources:
        mem_mb=config["sparse_halfspace"]["resources"]["train_mem_mb"],
        runtime=config["sparse_halfspace"]["resources"]["train_runtime_min"],


use rule neurips26_step as sparse_halfspace_evaluate with:
    input:
        results=expand(f"{SH}/train/seed{{seed}}/results.json", seed=config["sparse_halfspace"]["seeds"]),
    output:
        metrics=f"{SH}/eval/metrics.json",
    params:
        threads=1,
        step="sparse_halfspace evaluate",
        args=paper_params("sparse_halfspace", "complexity", "noise_sweep", "problem", "adversary", "algorithm", "baselines",
                          seeds=config["sparse_halfspace"]["seeds"]),
        code=code_stamp("sparse_halfspace"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(train=folder_of("input", "results", up=2)),
    log:
        f"{SH}/logs/evaluate.log",
    benchmark:
        f"{SH}/benchmarks/evaluate.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


use rule neurips26_step as sparse_halfspace_figures with:
    input:
        metrics=rules.sparse_halfspace_evaluate.output.metrics,
    output:
        **figure_outputs("sparse_halfspace", SH, SH_FIGURES),
    params:
        threads=1,
        step="sparse_halfspace figures",
        args=paper_params("sparse_halfspace", "problem", "adversary"),
        code=code_stamp("sparse_halfspace"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(metrics=files_of("metrics")),
    log:
        f"{SH}/logs/figures.log",
    benchmark:
        f"{SH}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("sparse_halfspace", rules.sparse_halfspace_figures.output)
