# crl_spectral: contrastive learning as spectral approximation of PMI.
# train (one job per seed: discrete tables + neural encoders) -> evaluate -> figures
CS = "results/crl_spectral"
CS_FIGURES = ["spectrum", "error_vs_dim", "tail_ratio", "neural", "calibration"]


use rule neurips26_step as crl_spectral_train with:
    output:
        fits=f"{CS}/train/seed{{seed}}/fits.json",
    params:
        step="crl_spectral train",
        args=paper_params("crl_spectral", "discrete", "continuous"),
        code=code_stamp("crl_spectral"),
        out=folder_of("output", "fits"),
    log:
        f"{CS}/logs/train_seed{{seed}}.log",
    benchmark:
        f"{CS}/benchmarks/train_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["crl_spectral"]["resources"]["train_mem_mb"],
            config["crl_spectral"]["resources"]["train_runtime_min"],
            config["crl_spectral"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as crl_spectral_evaluate with:
    input:
        fits=expand(f"{CS}/train/seed{{seed}}/fits.json", seed=config["crl_spectral"]["seeds"]),
    output:
        metrics=f"{CS}/eval/metrics.json",
    params:
        threads=1,
        step="crl_spectral evaluate",
        args=paper_params("crl_spectral", "calibration", seeds=config["crl_spectral"]["seeds"]),
        code=code_stamp("crl_spectral"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(train=folder_of("input", "fits", up=2)),
    log:
        f"{CS}/logs/evaluate.log",
    benchmark:
        f"{CS}/benchmarks/evaluate.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


use rule neurips26_step as crl_spectral_figures with:
    input:
        metrics=rules.crl_spectral_evaluate.output.metrics,
    output:
        **figure_outputs("crl_spectral", CS, CS_FIGURES),
    params:
        threads=1,
        step="crl_spectral figures",
        args=paper_params("crl_spectral", "discrete", "continuous", "calibration"),
        code=code_stamp("crl_spectral"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(metrics=files_of("metrics")),
    log:
        f"{CS}/logs/figures.log",
    benchmark:
        f"{CS}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("crl_spectral", rules.crl_spectral_figures.output)
