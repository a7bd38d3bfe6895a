# bdc_merge: BDC-Merge, cross-architecture model merging with Brownian distance correlation.
# shared lm_corpora/lm_tokenizer/lm_pretrain (when the config names no models or tasks) -> tune (each merge's
# strength per task, on the tuning seed) -> run (one job per seed) -> figures
BM = "results/bdc_merge"
BM_FIGURES = ["tasks", "strength", "calibration_size"]
BM_CFG = config["bdc_merge"]
# a configured tasks folder is the input itself; the generated corpora are named by their manifest
BM_TASKS = [BM_CFG["data"]["tasks_dir"]] if BM_CFG["data"]["tasks_dir"] else [f"{LM}/corpora/manifest.json"]
BM_TASKS_UP = 0 if BM_CFG["data"]["tasks_dir"] else 1
BM_SOURCE = [] if BM_CFG["models"]["source"] else [lm_model_file(BM_CFG["models"]["source_asset"])]
BM_TARGET = [] if BM_CFG["models"]["target"] else [lm_model_file(BM_CFG["models"]["target_asset"])]
# a source with its own tokenizer (second BPE tokenizer, source pretrained with it), merged into the same target
BM_CROSS = BM_CFG["cross_tokenizer"]["enabled"] and not BM_CFG["models"]["target"] and not BM_CFG["data"]["tasks_dir"]
BM_CROSS_RUNS = expand(f"{BM}/cross/seed{{seed}}/metrics.json", seed=BM_CFG["cross_tokenizer"]["seeds"]) if BM_CROSS else []
BM_RUN_KEYS = ("models", "data", "calibration", "strengths", "strength", "bdc", "transport", "naive", "lora", "evaluate", "matched")
BM_TUNE = f"{BM}/tune/tune.json"


# the test seeds are a param: the tune step scores on text none of them evaluates
use rule neurips26_step as bdc_merge_tune with:
    input:
        corpora=BM_TASKS,
        source=BM_SOURCE,
        target=BM_TARGET,
    output:
        tune=BM_TUNE,
        timing=f"{BM}/tune/timing.json",
    params:
        step="bdc_merge tune",
        args=paper_params("bdc_merge", *BM_RUN_KEYS, "tune", "seeds"),
        code=code_stamp("bdc_merge"),
        out=folder_of("output", "tune"),
        inputs=cli_inputs(
            corpora=folder_of("input", "corpora", up=BM_TASKS_UP),
            source=folder_of("input", "source"),
            target=folder_of("input", "target"),
        ),
    log:
        f"{BM}/logs/tune.log",
    benchmark:
        f"{BM}/benchmarks/tune.tsv"
    resources:
        **job_resources(BM_CFG["resources"]["run_mem_mb"], BM_CFG["resources"]["run_runtime_min"], BM_CFG["resources"]["run_gpus"]),


use rule neurips26_step as bdc_merge_run with:
    input:
        tune=BM_TUNE,
        corpora=BM_TASKS,
        source=BM_SOURCE,
        target=BM_TARGET,
    output:
        metrics=f"{BM}/runs/seed{{seed}}/metrics.json",
        timing=f"{BM}/runs/seed{{seed}}/timing.json",
    params:
        step="bdc_merge run",
        args=paper_params("bdc_merge", *BM_RUN_KEYS, "sweeps"),
        code=code_stamp("bdc_merge"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(
            tune=folder_of("input", "tune"),
            corpora=folder_of("input", "corpora", up=BM_TASKS_UP),
            source=folder_of("input", "source"),
            target=folder_of("input", "target"),
        ),
    log:
        f"{BM}/logs/run/seed{{seed}}.log",
    benchmark:
        f"{BM}/benchmarks/run/seed{{seed}}.tsv"
    resources:
        **job_resources(BM_CFG["resources"]["run_mem_mb"], BM_CFG["resources"]["run_runtime_min"], BM_CFG["resources"]["run_gpus"]),


use rule neurips26_step as bdc_merge_cross_source with:
    input:
        corpora=f"{LM}/corpora/manifest.json",
        shared_tokenizer=f"{LM}/tokenizer/tokenizer.json",
    output:
        model=f"{BM}/cross/source/model/model.safetensors",
        info=f"{BM}/cross/source/cross_tokenizer.json",
    params:
        step="bdc_merge cross_source",
        args=paper_params("bdc_merge", "cross_tokenizer",
                          source_spec=config["lm_assets"]["models"][BM_CFG["models"]["source_asset"]]),
        code=code_stamp("bdc_merge"),
        out=folder_of("output", "info"),
        inputs=cli_inputs(
            corpora=folder_of("input", "corpora"),
            shared_tokenizer=folder_of("input", "shared_tokenizer"),
        ),
    log:
        f"{BM}/logs/cross_source.log",
    benchmark:
        f"{BM}/benchmarks/cross_source.tsv"
    resources:
        mem_mb=2000,
        runtime=30,


use rule neurips26_step as bdc_merge_cross_run with:
    input:
        tune=BM_TUNE,
        corpora=f"{LM}/corpora/manifest.json",
        source=f"{BM}/cross/source/model/model.safetensors",
        target=BM_TARGET,
    output:
        metrics=f"{BM}/cross/seed{{seed}}/metrics.json",
        timing=f"{BM}/cross/seed{{seed}}/timing.json",
    params:
        step="bdc_merge run",
        args=paper_params("bdc_merge", *BM_RUN_KEYS, sweeps=False),
        code=code_stamp("bdc_merge"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(
            "--rule bdc_merge_cross_run",
            tune=folder_of("input", "tune"),
            corpora=folder_of("input", "corpora"),
            source=folder_of("input", "source"),
            target=folder_of("input", "target"),
        ),
    log:
        f"{BM}/logs/cross/seed{{seed}}.log",
    benchmark:
        f"{BM}/benchmarks/cross/seed{{seed}}.tsv"
    resources:
        **job_resources(BM_CFG["resources"]["run_mem_mb"], BM_CFG["resources"]["run_runtime_min"], BM_CFG["resources"]["run_gpus"]),


use rule neurips26_step as bdc_merge_figures with:
    input:
        tune=BM_TUNE,
        metrics=expand(f"{BM}/runs/seed{{seed}}/metrics.json", seed=BM_CFG["seeds"]),
        timing=expand(f"{BM}/runs/seed{{seed}}/timing.json", seed=BM_CFG["seeds"]),
        cross=BM_CROSS_RUNS,
    output:
        **figure_outputs("bdc_merge", BM, BM_FIGURES),
    params:
        threads=1,
        step="bdc_merge figures",
        args=paper_params("bdc_merge", "calibration", "strengths", "strength", "general_tolerance", "transport", "bdc", "lora"),
        code=code_stamp("bdc_merge"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(
            optional_input("cross", folder_of("input", "cross", up=2)),
            tune=folder_of("input", "tune"),
            runs=folder_of("input", "metrics", up=2),
        ),
    log:
        f"{BM}/logs/figures.log",
    benchmark:
        f"{BM}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("bdc_merge", rules.bdc_merge_figures.output)
