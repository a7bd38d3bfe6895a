# beta_tta: BETA, black-box efficient test-time adaptation.
# train (variant x seed: the API's source model and the client's steering model; also the tuning
# seed's) -> tune (variant: every method's knobs on the tuning seed's validation streams) -> adapt
# (variant x seed: every method on every corruption x severity stream, with the tuned knobs) -> figures
BT = "results/beta_tta"
BT_TUNE_SEED = config["beta_tta"]["tune"]["seed"]
BT_SECTIONS = ("methods", "shift", "api", "beta", "beta_ablations", "tent", "tpt", "lame", "zoo", "tune")
BT_FIGURES = ["accuracy_per_corruption", "accuracy_vs_queries", "ablation"]


use rule neurips26_step as beta_tta_train with:
    output:
        source=f"{BT}/train/{{variant}}/seed{{seed}}/source.safetensors",
        steering=f"{BT}/train/{{variant}}/seed{{seed}}/steering.safetensors",
        info=f"{BT}/train/{{variant}}/seed{{seed}}/train.json",
    params:
        step="beta_tta train",
        args=paper_params("beta_tta"),
        code=code_stamp("beta_tta"),
        out=folder_of("output", "info"),
    log:
        f"{BT}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{BT}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["beta_tta"]["resources"]["train_mem_mb"],
            config["beta_tta"]["resources"]["train_runtime_min"],
            config["beta_tta"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as beta_tta_tune with:
    input:
        info=f"{BT}/train/{{variant}}/seed{BT_TUNE_SEED}/train.json",
        source=f"{BT}/train/{{variant}}/seed{BT_TUNE_SEED}/source.safetensors",
        steering=f"{BT}/train/{{variant}}/seed{BT_TUNE_SEED}/steering.safetensors",
    output:
        tune=f"{BT}/tune/{{variant}}/tune.json",
    params:
        step="beta_tta tune",
        args=paper_params("beta_tta", *BT_SECTIONS),
        code=code_stamp("beta_tta"),
        out=folder_of("output", "tune"),
        inputs=cli_inputs(train=folder_of("input", "info")),
    log:
        f"{BT}/logs/tune/{{variant}}.log",
    benchmark:
        f"{BT}/benchmarks/tune/{{variant}}.tsv"
    resources:
        **job_resources(
            config["beta_tta"]["resources"]["adapt_mem_mb"],
            config["beta_tta"]["resources"]["adapt_runtime_min"],
            config["beta_tta"]["resources"]["adapt_gpus"],
        ),


use rule neurips26_step as beta_tta_adapt with:
    input:
        info=rules.beta_tta_train.output.info,
        source=rules.beta_tta_train.output.source,
        steering=rules.beta_tta_train.output.steering,
        tune=rules.beta_tta_tune.output.tune,
    output:
        metrics=f"{BT}/adapt/{{variant}}/seed{{seed}}/metrics.json",
        timing=f"{BT}/adapt/{{variant}}/seed{{seed}}/timing.json",
    params:
        step="beta_tta adapt",
        args=paper_params("beta_tta", *BT_SECTIONS),
        code=code_stamp("beta_tta"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(train=folder_of("input", "info"), tune=folder_of("input", "tune")),
    log:
        f"{BT}/logs/adapt/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{BT}/benchmarks/adapt/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["beta_tta"]["resources"]["adapt_mem_mb"],
            config["beta_tta"]["resources"]["adapt_runtime_min"],
            config["beta_tta"]["resources"]["adapt_gpus"],
        ),


use rule neurips26_step as beta_tta_figures with:
    input:
        metrics=grid("beta_tta", f"{BT}/adapt/{{variant}}/seed{{seed}}/metrics.json"),
        timing=grid("beta_tta", f"{BT}/adapt/{{variant}}/seed{{seed}}/timing.json"),
        tune=expand(f"{BT}/tune/{{variant}}/tune.json", variant=config["beta_tta"]["run_variants"]),
    output:
        **figure_outputs("beta_tta", BT, BT_FIGURES),
    params:
        threads=1,
        step="beta_tta figures",
        args=paper_params(
            "beta_tta",
            "api",
            "zoo",
            run_variants=config["beta_tta"]["run_variants"],
            seeds=config["beta_tta"]["seeds"],
        ),
        code=code_stamp("beta_tta"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(adapt=folder_of("input", "metrics", up=3), tune=folder_of("input", "tune", up=2)),
    log:
        f"{BT}/logs/figures.log",
    benchmark:
        f"{BT}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("beta_tta", rules.beta_tta_figures.output)
