# angular_nets: Angular Nets (low-bit angular layers, G-Gradient).
# tune (learning rate of the experiments in tune.variants, by the tuning protocol) -> train (experiment x seed:
# every method on one backbone and data set) + planted -> figures
AN = "results/angular_nets"
AN_FIGURES = ["accuracy_vs_bits", "accuracy_vs_nu", "planted_recovery"]


use rule neurips26_step as angular_nets_tune with:
    input:
        data_paths("angular_nets", "cifar10_dir", "imagenet_dir", "glue_dir"),
    output:
        metrics=f"{AN}/tune/{{variant}}/metrics.json",
    params:
        step="angular_nets tune",
        args=paper_params("angular_nets", "methods", "angular", "data", "arch", "train", "tune", "seeds"),
        code=code_stamp("angular_nets"),
        out=folder_of("output", "metrics"),
    log:
        f"{AN}/logs/tune/{{variant}}.log",
    benchmark:
        f"{AN}/benchmarks/tune/{{variant}}.tsv"
    resources:
        **job_resources(
            config["angular_nets"]["resources"]["train_mem_mb"],
            config["angular_nets"]["resources"]["train_runtime_min"],
            config["angular_nets"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as angular_nets_train with:
    input:
        data_paths("angular_nets", "cifar10_dir", "imagenet_dir", "glue_dir"),
        tune=listed_variant("angular_nets", "tune", f"{AN}/tune/{{variant}}/metrics.json"),
    output:
        metrics=f"{AN}/train/{{variant}}/seed{{seed}}/metrics.json",
    params:
        step="angular_nets train",
        args=paper_params("angular_nets", "methods", "angular", "nu_study_method", "nu_values",
                          "nu_study_min_features", "data", "arch", "train"),
        code=code_stamp("angular_nets"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(tune=folder_of("input", "tune")),
    log:
        f"{AN}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{AN}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    resources:
        **job_resources(
            config["angular_nets"]["resources"]["train_mem_mb"],
            config["angular_nets"]["resources"]["train_runtime_min"],
            config["angular_nets"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as angular_nets_planted with:
    output:
        metrics=f"{AN}/planted/metrics.json",
    params:
        step="angular_nets planted",
        args=paper_params("angular_nets", "planted"),
        code=code_stamp("angular_nets"),
        out=folder_of("output", "metrics"),
    log:
        f"{AN}/logs/planted.log",
    benchmark:
        f"{AN}/benchmarks/planted.tsv"
    resources:
        mem_mb=2000,
        runtime=30,


use rule neurips26_step as angular_nets_figures with:
    input:
        metrics=grid("angular_nets", f"{AN}/train/{{variant}}/seed{{seed}}/metrics.json"),
        planted=rules.angular_nets_planted.output.metrics,
        # the tuned experiments' tune metrics (their tuning records and validation scores)
        tunes=[f"{AN}/tune/{v}/metrics.json" for v in config["angular_nets"]["tune"]["variants"]
               if v in config["angular_nets"]["run_variants"]],
    output:
        **figure_outputs("angular_nets", AN, AN_FIGURES),
    params:
        threads=1,
        step="angular_nets figures",
        args=paper_params(
            "angular_nets",
            "methods",
            "data",
            "train",
            "tune",
            "angular",
            run_variants=config["angular_nets"]["run_variants"],
            seeds=config["angular_nets"]["seeds"],
        ),
        code=code_stamp("angular_nets"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(
            optional_input("tunes", folder_of("input", "tunes", up=2)),
            trains=folder_of("input", "metrics", up=3),
            planted=folder_of("input", "planted"),
        ),
    log:
        f"{AN}/logs/figures.log",
    benchmark:
        f"{AN}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("angular_nets", rules.angular_nets_figures.output)
