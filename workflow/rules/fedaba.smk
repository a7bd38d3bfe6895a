# fedaba: FedAbA, basis-consistent federated LoRA with heterogeneous ranks.
# tune (rank profile: every aggregator's learning rate and the strongest baseline on a validation split of
# the tuning seed's clients' data) -> train (rank profile x seed: every Dirichlet alpha x every aggregator,
# each at its tuned learning rate) -> figures
FB = "results/fedaba"
FB_FIGURES = ["accuracy", "accuracy_by_rank", "prefix_stability", "gain_vs_heterogeneity"]
FB_CFG = config["fedaba"]
# the generative profiles (task data_to_text) need the lm_assets model unless lm.model names one (paper scale)
FB_LM = any(FB_CFG["variants"][v].get("task") == "data_to_text" for v in FB_CFG["run_variants"])
FB_MODEL = [lm_model_file(FB_CFG["lm"]["asset"])] if FB_LM and not FB_CFG["lm"]["model"] else []
FB_LM_DATA = [FB_CFG["lm"]["dataset_file"]] if FB_LM and FB_CFG["lm"]["dataset_file"] else []


use rule neurips26_step as fedaba_tune with:
    input:
        FB_LM_DATA,
        model=FB_MODEL,
    output:
        tune=f"{FB}/tune/{{variant}}/tune.json",
        timing=f"{FB}/tune/{{variant}}/timing.json",
    params:
        step="fedaba tune",
        args=paper_params("fedaba", "alphas", "aggregators", "aggregator_settings", "fed", "data", "lm", "claims", "tune",
                          seed=FB_CFG["tune"]["seed"]),
        code=code_stamp("fedaba"),
        out=folder_of("output", "tune"),
        inputs=cli_inputs(model=folder_of("input", "model")),
    log:
        f"{FB}/logs/tune/{{variant}}.log",
    benchmark:
        f"{FB}/benchmarks/tune/{{variant}}.tsv"
    resources:
        **job_resources(
            config["fedaba"]["resources"]["train_mem_mb"],
            config["fedaba"]["resources"]["train_runtime_min"],
            config["fedaba"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as fedaba_train with:
    input:
        FB_LM_DATA,
        tune=rules.fedaba_tune.output.tune,
        model=FB_MODEL,
    output:
        metrics=f"{FB}/train/{{variant}}/seed{{seed}}/metrics.json",
    params:
        step="fedaba train",
        args=paper_params("fedaba", "alphas", "aggregators", "aggregator_settings", "fed", "data", "lm"),
        code=code_stamp("fedaba"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(tune=folder_of("input", "tune"), model=folder_of("input", "model")),
    log:
        f"{FB}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{FB}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["fedaba"]["resources"]["train_mem_mb"],
            config["fedaba"]["resources"]["train_runtime_min"],
            config["fedaba"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as fedaba_figures with:
    input:
        metrics=grid("fedaba", f"{FB}/train/{{variant}}/seed{{seed}}/metrics.json"),
        tune=expand(f"{FB}/tune/{{variant}}/tune.json", variant=FB_CFG["run_variants"]),
    output:
        **figure_outputs("fedaba", FB, FB_FIGURES),
    params:
        threads=1,
        step="fedaba figures",
        args=paper_params(
            "fedaba",
            "claims",
            run_variants=config["fedaba"]["run_variants"],
            seeds=config["fedaba"]["seeds"],
        ),
        code=code_stamp("fedaba"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(train=folder_of("input", "metrics", up=3), tune=folder_of("input", "tune", up=2)),
    log:
        f"{FB}/logs/figures.log",
    benchmark:
        f"{FB}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("fedaba", rules.fedaba_figures.output)
