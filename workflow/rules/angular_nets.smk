# angular_nets: Angular Nets (low-bit angular layers, G-Gradient).
# tune (learning-rate grid of the experiments in tune.variants) -> train (experiment x seed:
# every method on one backbone and data set) + planted -> figures
AN = "results/angular_nets"
AN_FIGURES = ["accuracy_vs_bits", "accuracy_vs_nu", "planted_recovery"]


rule angular_nets_tune:
    input:
        data_paths("angular_nets", "cifar10_dir", "imagenet_dir", "glue_dir"),
    output:
        metrics=f"{AN}/tune/{{variant}}/metrics.json",
    params:
        cli=CLI,
        args=paper_params("angular_nets", "methods", "angular", "data", "arch", "train", "tune"),
        wildcards=wildcards_json,
        code=code_stamp("angular_nets"),
        out=folder_of("output", "metrics"),
    log:
        f"{AN}/logs/tune/{{variant}}.log",
    benchmark:
        f"{AN}/benchmarks/tune/{{variant}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["angular_nets"]["resources"]["train_mem_mb"],
            config["angular_nets"]["resources"]["train_runtime_min"],
            config["angular_nets"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} angular_nets tune --params {params.args:q}"
        " --out {params.out} --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule angular_nets_train:
    input:
        data_paths("angular_nets", "cifar10_dir", "imagenet_dir", "glue_dir"),
        tune=listed_variant("angular_nets", "tune", f"{AN}/tune/{{variant}}/metrics.json"),
    output:
        metrics=f"{AN}/train/{{variant}}/seed{{seed}}/metrics.json",
    params:
        cli=CLI,
        args=paper_params("angular_nets", "methods", "angular", "nu_study_method", "nu_values",
                          "nu_study_min_features", "data", "arch", "train"),
        wildcards=wildcards_json,
        code=code_stamp("angular_nets"),
        out=folder_of("output", "metrics"),
        tune=folder_of("input", "tune"),
    log:
        f"{AN}/logs/train/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{AN}/benchmarks/train/{{variant}}_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["angular_nets"]["resources"]["train_mem_mb"],
            config["angular_nets"]["resources"]["train_runtime_min"],
            config["angular_nets"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} angular_nets train --params {params.args:q} --input tune={params.tune}"
        " --out {params.out} --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule angular_nets_planted:
    output:
        metrics=f"{AN}/planted/metrics.json",
    params:
        cli=CLI,
        args=paper_params("angular_nets", "planted"),
        code=code_stamp("angular_nets"),
        out=folder_of("output", "metrics"),
    log:
        f"{AN}/logs/planted.log",
    benchmark:
        f"{AN}/benchmarks/planted.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "{params.cli} angular_nets planted --params {params.args:q} --out {params.out}"
        " --threads {threads} > {log} 2>&1"


rule angular_nets_figures:
    input:
        metrics=grid("angular_nets", f"{AN}/train/{{variant}}/seed{{seed}}/metrics.json"),
        planted=rules.angular_nets_planted.output.metrics,
    output:
        figures=[
            report(f"{AN}/figures/{name}.png", caption=f"../report/angular_nets_{name}.rst", category="angular_nets")
            for name in AN_FIGURES
        ],
        summary=f"{AN}/summary.csv",
        claims=f"{AN}/claims.csv",
    params:
        args=paper_params(
            "angular_nets",
            "methods",
            run_variants=config["angular_nets"]["run_variants"],
            seeds=config["angular_nets"]["seeds"],
        ),
        cli=CLI,
        code=code_stamp("angular_nets"),
        trains=folder_of("input", "metrics", up=3),
        planted=folder_of("input", "planted"),
        out=folder_of("output", "claims"),
    log:
        f"{AN}/logs/figures.log",
    benchmark:
        f"{AN}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.cli} angular_nets figures --params {params.args:q} --input trains={params.trains}"
        " --input planted={params.planted} --out {params.out} > {log} 2>&1"


register_targets("angular_nets", rules.angular_nets_figures.output)
