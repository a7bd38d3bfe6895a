# adaprelora: AdaPreLoRA, a preconditioned LoRA optimizer (shared harness: lora_harness; lm_assets model).
# tune (one job per task) -> train (one job per task and seed) -> figures
APL = "results/adaprelora"
APL_CFG = config["adaprelora"]
APL_FIGURES = ["score_memory", "learning_curves", "lr_sensitivity", "accuracy_steps"]
APL_KEYS = ("classification", "lm", "optim", "methods", "grid", "damping_grid", "tasks", "tune", "seeds", "check_layers")
# the data-to-text task needs the lm_assets model unless a model is configured (paper scale)
APL_MODEL = [] if (APL_CFG["lm"]["model"] or "data_to_text" not in APL_CFG["tasks"]) else [lm_model_file(APL_CFG["lm"]["asset"])]


use rule neurips26_step as adaprelora_tune with:
    input:
        model=APL_MODEL,
    output:
        tune=f"{APL}/tune/{{task}}/tune.json",
        timing=f"{APL}/tune/{{task}}/timing.json",
    params:
        step="adaprelora tune",
        args=paper_params("adaprelora", *APL_KEYS, wildcards_in=("task",)),
        code=code_stamp("adaprelora"),
        out=folder_of("output", "tune"),
        inputs=cli_inputs(model=folder_of("input", "model")),
    log:
        f"{APL}/logs/tune/{{task}}.log",
    benchmark:
        f"{APL}/benchmarks/tune/{{task}}.tsv"
    resources:
        **job_resources(APL_CFG["resources"]["mem_mb"], APL_CFG["resources"]["tune_runtime_min"], APL_CFG["resources"]["gpus"], training=True),


use rule neurips26_step as adaprelora_train with:
    input:
        tune=f"{APL}/tune/{{task}}/tune.json",
        model=APL_MODEL,
    output:
        metrics=f"{APL}/train/{{task}}/seed{{seed}}/metrics.json",
        timing=f"{APL}/train/{{task}}/seed{{seed}}/timing.json",
    params:
        step="adaprelora train",
        args=paper_params("adaprelora", *APL_KEYS, wildcards_in=("task",)),
        code=code_stamp("adaprelora"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(tune=folder_of("input", "tune"), model=folder_of("input", "model")),
    log:
        f"{APL}/logs/train/{{task}}_seed{{seed}}.log",
    benchmark:
        f"{APL}/benchmarks/train/{{task}}_seed{{seed}}.tsv"
    resources:
        **job_resources(APL_CFG["resources"]["mem_mb"], APL_CFG["resources"]["train_runtime_min"], APL_CFG["resources"]["gpus"], training=True),


use rule neurips26_step as adaprelora_figures with:
    input:
        tune=expand(f"{APL}/tune/{{task}}/tune.json", task=APL_CFG["tasks"]),
        metrics=expand(f"{APL}/train/{{task}}/seed{{seed}}/metrics.json", task=APL_CFG["tasks"], seed=APL_CFG["seeds"]),
    output:
        **figure_outputs("adaprelora", APL, APL_FIGURES),
    params:
        threads=1,
        step="adaprelora figures",
        args=paper_params("adaprelora", *APL_KEYS),
        code=code_stamp("adaprelora"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(tune=folder_of("input", "tune", up=2), runs=folder_of("input", "metrics", up=3)),
    log:
        f"{APL}/logs/figures.log",
    benchmark:
        f"{APL}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("adaprelora", rules.adaprelora_figures.output)
