# ar1_zo: AR1-ZO, rank-1 atom zeroth-order LoRA fine-tuning (shared harness: zo_harness).
# mechanism (one job, every seed) | tune (one job, a tuning seed; the tuning protocol's records) -> train (one job per seed) -> figures (tuning.csv)
AR = "results/ar1_zo"
AR_CFG = config["ar1_zo"]
AR_FIGURES = ["signal_vs_rank", "accuracy_vs_rank", "methods", "training_loss"]
AR_KEYS = ("model", "data", "lora", "lozo", "methods", "grid", "budget", "noise_floor", "tune", "mechanism", "seeds")


use rule neurips26_step as ar1_zo_mechanism with:
    output:
        metrics=f"{AR}/mechanism/metrics.json",
        timing=f"{AR}/mechanism/timing.json",
    params:
        step="ar1_zo mechanism",
        args=paper_params("ar1_zo", *AR_KEYS),
        code=code_stamp("ar1_zo"),
        out=folder_of("output", "metrics"),
    log:
        f"{AR}/logs/mechanism.log",
    benchmark:
        f"{AR}/benchmarks/mechanism.tsv"
    resources:
        **job_resources(AR_CFG["resources"]["mem_mb"], AR_CFG["resources"]["mechanism_runtime_min"], AR_CFG["resources"]["gpus"]),


use rule neurips26_step as ar1_zo_tune with:
    output:
        tune=f"{AR}/tune/tune.json",
        timing=f"{AR}/tune/timing.json",
    params:
        step="ar1_zo tune",
        args=paper_params("ar1_zo", *AR_KEYS),
        code=code_stamp("ar1_zo"),
        out=folder_of("output", "tune"),
    log:
        f"{AR}/logs/tune.log",
    benchmark:
        f"{AR}/benchmarks/tune.tsv"
    resources:
        **job_resources(AR_CFG["resources"]["mem_mb"], AR_CFG["resources"]["tune_runtime_min"], AR_CFG["resources"]["gpus"]),


use rule neurips26_step as ar1_zo_train with:
    input:
        tune=rules.ar1_zo_tune.output.tune,
    output:
        metrics=f"{AR}/train/seed{{seed}}/metrics.json",
        timing=f"{AR}/train/seed{{seed}}/timing.json",
    params:
        step="ar1_zo train",
        args=paper_params("ar1_zo", *AR_KEYS),
        code=code_stamp("ar1_zo"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(tune=folder_of("input", "tune")),
    log:
        f"{AR}/logs/train/seed{{seed}}.log",
    benchmark:
        f"{AR}/benchmarks/train/seed{{seed}}.tsv"
    resources:
        **job_resources(AR_CFG["resources"]["mem_mb"], AR_CFG["resources"]["train_runtime_min"], AR_CFG["resources"]["gpus"]),


use rule neurips26_step as ar1_zo_figures with:
    input:
        mechanism=rules.ar1_zo_mechanism.output.metrics,
        tune=rules.ar1_zo_tune.output.tune,
        metrics=expand(f"{AR}/train/seed{{seed}}/metrics.json", seed=AR_CFG["seeds"]),
    output:
        **figure_outputs("ar1_zo", AR, AR_FIGURES),
    params:
        threads=1,
        step="ar1_zo figures",
        args=paper_params("ar1_zo", *AR_KEYS),
        code=code_stamp("ar1_zo"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(mechanism=folder_of("input", "mechanism"), tune=folder_of("input", "tune"),
                          runs=folder_of("input", "metrics", up=2)),
    log:
        f"{AR}/logs/figures.log",
    benchmark:
        f"{AR}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("ar1_zo", rules.ar1_zo_figures.output)
