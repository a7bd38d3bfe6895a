# adapad: AdaPaD, adaptive parallel deflation for LoRA (shared harness: lora_harness).
# mechanism (one job, every seed) | tune (one job per task) -> train (one job per task and seed) -> figures
APD = "results/adapad"
AP_CFG = config["adapad"]
APD_FIGURES = ["deflation_errors", "decay", "advance", "accuracy_size", "ranks"]
AP_KEYS = ("mechanism", "data", "finetune", "methods", "grid", "adalora", "sequential", "adapad", "compare", "seeds")


use rule neurips26_step as adapad_mechanism with:
    output:
        metrics=f"{APD}/mechanism/metrics.json",
        timing=f"{APD}/mechanism/timing.json",
    params:
        threads=1,
        step="adapad mechanism",
        args=paper_params("adapad", *AP_KEYS),
        code=code_stamp("adapad"),
        out=folder_of("output", "metrics"),
    log:
        f"{APD}/logs/mechanism.log",
    benchmark:
        f"{APD}/benchmarks/mechanism.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=AP_CFG["resources"]["mechanism_runtime_min"],


use rule neurips26_step as adapad_tune with:
    output:
        tune=f"{APD}/tune/{{task}}/tune.json",
        timing=f"{APD}/tune/{{task}}/timing.json",
    params:
        step="adapad tune",
        args=paper_params("adapad", *AP_KEYS, wildcards_in=("task",)),
        code=code_stamp("adapad"),
        out=folder_of("output", "tune"),
    log:
        f"{APD}/logs/tune/{{task}}.log",
    benchmark:
        f"{APD}/benchmarks/tune/{{task}}.tsv"
    resources:
        **job_resources(AP_CFG["resources"]["mem_mb"], AP_CFG["resources"]["tune_runtime_min"], AP_CFG["resources"]["gpus"],
            training=True),


use rule neurips26_step as adapad_train with:
    input:
        tune=f"{APD}/tune/{{task}}/tune.json",
    output:
        metrics=f"{APD}/train/{{task}}/seed{{seed}}/metrics.json",
        timing=f"{APD}/train/{{task}}/seed{{seed}}/timing.json",
    params:
        step="adapad train",
        args=paper_params("adapad", *AP_KEYS, wildcards_in=("task",)),
        code=code_stamp("adapad"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(tune=folder_of("input", "tune")),
    log:
        f"{APD}/logs/train/{{task}}_seed{{seed}}.log",
    benchmark:
        f"{APD}/benchmarks/train/{{task}}_seed{{seed}}.tsv"
    resources:
        **job_resources(AP_CFG["resources"]["mem_mb"], AP_CFG["resources"]["train_runtime_min"], AP_CFG["resources"]["gpus"],
            training=True),


use rule neurips26_step as adapad_figures with:
    input:
        mechanism=rules.adapad_mechanism.output.metrics,
        tune=expand(f"{APD}/tune/{{task}}/tune.json", task=AP_CFG["data"]["tasks"]),
        metrics=expand(f"{APD}/train/{{task}}/seed{{seed}}/metrics.json", task=AP_CFG["data"]["tasks"], seed=AP_CFG["seeds"]),
    output:
        **figure_outputs("adapad", APD, APD_FIGURES),
    params:
        threads=1,
        step="adapad figures",
        args=paper_params("adapad", *AP_KEYS),
        code=code_stamp("adapad"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(mechanism=folder_of("input", "mechanism"), tune=folder_of("input", "tune", up=2),
                          runs=folder_of("input", "metrics", up=3)),
    log:
        f"{APD}/logs/figures.log",
    benchmark:
        f"{APD}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("adapad", rules.adapad_figures.output)
