# es_dynamics: Z-score ES and its SDE (shared harness: zo_harness; shared lm_corpora/lm_pretrain).
# synthetic (one job, every seed) | lm (one job per seed) -> figures
ESD = "results/es_dynamics"
ESD_CFG = config["es_dynamics"]
ESD_FIGURES = ["synthetic_sde", "regimes", "dimensionality", "shapings", "lm"]
ESD_KEYS = ("synthetic", "lm", "seeds")
# a configured model (paper scale) is read by the step itself; otherwise the lm_assets model
ESD_MODEL = [] if ESD_CFG["lm"]["model"] else [lm_model_file(ESD_CFG["lm"]["asset"])]


use rule neurips26_step as es_dynamics_synthetic with:
    output:
        metrics=f"{ESD}/synthetic/metrics.json",
        timing=f"{ESD}/synthetic/timing.json",
    params:
        threads=1,
        step="es_dynamics synthetic",
        args=paper_params("es_dynamics", *ESD_KEYS),
        code=code_stamp("es_dynamics"),
        out=folder_of("output", "metrics"),
    log:
        f"{ESD}/logs/synthetic.log",
    benchmark:
        f"{ESD}/benchmarks/synthetic.tsv"
    threads: 1
    resources:
        mem_mb=ESD_CFG["resources"]["mem_mb"],
        runtime=ESD_CFG["resources"]["synthetic_runtime_min"],


use rule neurips26_step as es_dynamics_lm with:
    input:
        corpora=f"{LM}/corpora/manifest.json",
        model=ESD_MODEL,
    output:
        metrics=f"{ESD}/lm/seed{{seed}}/metrics.json",
        timing=f"{ESD}/lm/seed{{seed}}/timing.json",
    params:
        step="es_dynamics lm",
        args=paper_params("es_dynamics", *ESD_KEYS),
        code=code_stamp("es_dynamics"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(corpora=folder_of("input", "corpora"), model=folder_of("input", "model")),
    log:
        f"{ESD}/logs/lm/seed{{seed}}.log",
    benchmark:
        f"{ESD}/benchmarks/lm/seed{{seed}}.tsv"
    resources:
        **job_resources(ESD_CFG["resources"]["mem_mb"], ESD_CFG["resources"]["lm_runtime_min"], ESD_CFG["resources"]["gpus"]),


use rule neurips26_step as es_dynamics_figures with:
    input:
        synthetic=rules.es_dynamics_synthetic.output.metrics,
        metrics=expand(f"{ESD}/lm/seed{{seed}}/metrics.json", seed=ESD_CFG["seeds"]),
    output:
        **figure_outputs("es_dynamics", ESD, ESD_FIGURES),
    params:
        threads=1,
        step="es_dynamics figures",
        args=paper_params("es_dynamics", *ESD_KEYS),
        code=code_stamp("es_dynamics"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(synthetic=folder_of("input", "synthetic"), runs=folder_of("input", "metrics", up=2)),
    log:
        f"{ESD}/logs/figures.log",
    benchmark:
        f"{ESD}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("es_dynamics", rules.es_dynamics_figures.output)
