# beta_tta: BETA, black-box efficient test-time adaptation.
# train (variant x seed: the API's source model and the client's steering model) -> adapt
# (variant x seed: every method on every corruption x severity stream) -> figures
BT = "results/beta_tta"
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


use rule neurips26_step as beta_tta_adapt with:
    input:
        info=rules.beta_tta_train.output.info,
        source=rules.beta_tta_train.output.source,
        steering=rules.beta_tta_train.output.steering,
    output:
        metrics=f"{BT}/adapt/{{variant}}/seed{{seed}}/metrics.json",
        timing=f"{BT}/adapt/{{variant}}/seed{{seed}}/timing.json",
    params:
        step="beta_tta adapt",
        args=paper_params("beta_tta", "methods", "shift", "api", "beta", "beta_ablations", "tent", "tpt", "lame", "zoo"),
        code=code_stamp("beta_tta"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(train=folder_of("input", "info")),
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
        inputs=cli_inputs(adapt=folder_of("input", "metrics", up=3)),
    log:
        f"{BT}/logs/figures.log",
    benchmark:
        f"{BT}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("beta_tta", rules.beta_tta_figures.output)
