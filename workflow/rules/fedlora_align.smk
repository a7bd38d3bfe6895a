# fedlora_align: ALIGN, subspace alignment for federated LoRA.
# data (variant x seed, and the tuning seed: sentences, frozen MiniLM layers run once) -> tune (variant:
# every method's learning rate and the strongest existing method on a validation split of the tuning
# seed's clients' data) -> train (variant x seed: every alpha x method federation on the shared
# fed_harness, each method at its tuned learning rate) -> figures
FA = "results/fedlora_align"
FA_FIGURES = ["conflict_vs_heterogeneity", "conflict_per_round", "accuracy_vs_heterogeneity"]
FA_CFG = config["fedlora_align"]
FA_TUNE_SEED = FA_CFG["tune"]["seed"]
# the generative variants (task data_to_text) need the lm_assets model unless lm.model names one (paper scale)
FA_LM = any(FA_CFG["variants"][v]["task"] == "data_to_text" for v in FA_CFG["run_variants"])
FA_MODEL = [lm_model_file(FA_CFG["lm"]["asset"])] if FA_LM and not FA_CFG["lm"]["model"] else []
FA_LM_DATA = [FA_CFG["lm"]["dataset_file"]] if FA_LM and FA_CFG["lm"]["dataset_file"] else []


use rule neurips26_step as fedlora_align_data with:
    input:
        data_paths("fedlora_align", "data_dir"),
        FA_LM_DATA,
        model=FA_MODEL,
    output:
        data=f"{FA}/data/{{variant}}/seed{{seed}}/data.safetensors",
        info=f"{FA}/data/{{variant}}/seed{{seed}}/data.json",
    params:
        step="fedlora_align data",
        args=paper_params("fedlora_align", "data", "lm"),
        code=code_stamp("fedlora_align"),
        out=folder_of("output", "info"),
        inputs=cli_inputs(model=folder_of("input", "model")),
    log:
        f"{FA}/logs/data/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{FA}/benchmarks/data/{{variant}}_seed{{seed}}.tsv"
    resources:
        mem_mb=3000,
        runtime=20,


use rule neurips26_step as fedlora_align_tune with:
    input:
        data=f"{FA}/data/{{variant}}/seed{FA_TUNE_SEED}/data.safetensors",
        info=f"{FA}/data/{{variant}}/seed{FA_TUNE_SEED}/data.json",
        model=FA_MODEL,
    output:
        tune=f"{FA}/tune/{{variant}}/tune.json",
        timing=f"{FA}/tune/{{variant}}/timing.json",
    params:
        step="fedlora_align tune",
        args=paper_params("fedlora_align", "data", "federation", "methods", "align", "lm", "tune", seed=FA_TUNE_SEED),
        code=code_stamp("fedlora_align"),
        out=folder_of("output", "tune"),
        inputs=cli_inputs(data=folder_of("input", "info"), model=folder_of("input", "model")),
    log:
        f"{FA}/logs/tune/{{variant}}.log",
    benchmark:
        f"{FA}/benchmarks/tune/{{variant}}.tsv"
    resources:
        **job_resources(
            config["fedlora_align"]["resources"]["train_mem_mb"],
            config["fedlora_align"]["resources"]["train_runtime_min"],
            config["fedlora_align"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as fedlora_align_train with:
    input:
        data=rules.fedlora_align_data.output.data,
        info=rules.fedlora_align_data.output.info,
        tune=rules.fedlora_align_tune.output.tune,
        model=FA_MODEL,
    output:
        metrics=f"{FA}/train/{{variant}}/seed{{seed}}/metrics.json",
        timing=f"{FA}/train/{{variant}}/seed{{seed}}/timing.json",
    params:
        step="fedlora_align train",
        args=paper_params("fedlora_align", "data", "federation", "methods", "align", "lm"),
        code=code_stamp("fedlora_align"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(data=folder_of("input", "info"), tune=folder_of("input", "tune"), model=folder_of("input", "model")),
    log:
        f"{FA}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{FA}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["fedlora_align"]["resources"]["train_mem_mb"],
            config["fedlora_align"]["resources"]["train_runtime_min"],
            config["fedlora_align"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as fedlora_align_figures with:
    input:
        metrics=grid("fedlora_align", f"{FA}/train/{{variant}}/seed{{seed}}/metrics.json"),
        tune=expand(f"{FA}/tune/{{variant}}/tune.json", variant=FA_CFG["run_variants"]),
    output:
        **figure_outputs("fedlora_align", FA, FA_FIGURES),
    params:
        threads=1,
        step="fedlora_align figures",
        args=paper_params(
            "fedlora_align",
            "federation",
            "methods",
            run_variants=config["fedlora_align"]["run_variants"],
            seeds=config["fedlora_align"]["seeds"],
        ),
        code=code_stamp("fedlora_align"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(runs=folder_of("input", "metrics", up=3), tune=folder_of("input", "tune", up=2)),
    log:
        f"{FA}/logs/figures.log",
    benchmark:
        f"{FA}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("fedlora_align", rules.fedlora_align_figures.output)
