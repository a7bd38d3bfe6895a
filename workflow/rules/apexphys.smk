# apexphys: ApexPhys, continual rPPG over sequential domains.
# generate (UBFC-rPPG / PURE folders) -> preprocess (loaders, crop, normalise, cache; GREEN/CHROM/POS)
# -> train (one job per method, every seed) -> figures. Generate and preprocess run once per seed:
# a seed draws its own subjects, heart rates and videos. EWC's and BCRP's lambda are tuned from the
# shared grid by the tuning protocol (apexphys_tune, on held-out training clips of one seed) before
# their train jobs; the same step scores every continual model on those clips, and the figures step
# names the strongest baseline and the regime control's best continual model from those scores.
AX = "results/apexphys"
AX_FIGURES = ["r_matrices", "avg_mae_per_task"]
# the continual models scored on the validation clips (joint training and the ablations are not candidates)
AX_VALIDATED = [v for v in config["apexphys"]["run_variants"] if v in ("finetune", "ewc", "lwf", "replay", "apexphys")]
AX_REAL_DIRS = [spec["data_dir"] for spec in config["apexphys"]["data"].get("real", {}).values()
                if config["apexphys"]["data"]["source"] == "real"]


use rule neurips26_step as apexphys_generate with:
    input:
        AX_REAL_DIRS,
    output:
        manifest=f"{AX}/raw/seed{{seed}}/manifest.json",
    params:
        step="apexphys generate",
        args=paper_params("apexphys", "data"),
        code=code_stamp("apexphys"),
        out=folder_of("output", "manifest"),
    log:
        f"{AX}/logs/generate_seed{{seed}}.log",
    benchmark:
        f"{AX}/benchmarks/generate_seed{{seed}}.tsv"
    resources:
        mem_mb=2000,
        runtime=30,


use rule neurips26_step as apexphys_preprocess with:
    input:
        manifest=rules.apexphys_generate.output.manifest,
    output:
        clips=f"{AX}/data/seed{{seed}}/clips.safetensors",
        index=f"{AX}/data/seed{{seed}}/index.json",
        unsupervised=f"{AX}/data/seed{{seed}}/unsupervised.json",
    params:
        step="apexphys preprocess",
        args=paper_params("apexphys", "data", "preprocess", "heart_rate"),
        code=code_stamp("apexphys"),
        out=folder_of("output", "clips"),
        inputs=cli_inputs(raw=folder_of("input", "manifest")),
    log:
        f"{AX}/logs/preprocess_seed{{seed}}.log",
    benchmark:
        f"{AX}/benchmarks/preprocess_seed{{seed}}.tsv"
    resources:
        mem_mb=4000,
        runtime=60,


use rule neurips26_step as apexphys_tune with:
    input:
        clips=f"{AX}/data/seed{config['apexphys']['tune']['seed']}/clips.safetensors",
        index=f"{AX}/data/seed{config['apexphys']['tune']['seed']}/index.json",
    output:
        choice=f"{AX}/tune/{{variant}}/choice.json",
        timing=f"{AX}/tune/{{variant}}/timing.json",
    params:
        step="apexphys tune",
        args=paper_params("apexphys", "preprocess", "heart_rate", "model", "train", "tune"),
        code=code_stamp("apexphys"),
        out=folder_of("output", "choice"),
        inputs=cli_inputs(data=folder_of("input", "clips", up=2)),
    log:
        f"{AX}/logs/tune/{{variant}}.log",
    benchmark:
        f"{AX}/benchmarks/tune/{{variant}}.tsv"
    resources:
        **job_resources(
            config["apexphys"]["resources"]["train_mem_mb"],
            config["apexphys"]["resources"]["train_runtime_min"],
            config["apexphys"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as apexphys_train with:
    input:
        clips=expand(f"{AX}/data/seed{{seed}}/clips.safetensors", seed=config["apexphys"]["seeds"]),
        index=expand(f"{AX}/data/seed{{seed}}/index.json", seed=config["apexphys"]["seeds"]),
        tuned=tuned_by("apexphys", f"{AX}/tune/{{source}}/choice.json"),
    output:
        metrics=f"{AX}/train/{{variant}}/metrics.json",
        timing=f"{AX}/train/{{variant}}/timing.json",
    params:
        step="apexphys train",
        args=paper_params("apexphys", "seeds", "preprocess", "heart_rate", "model", "train"),
        code=code_stamp("apexphys"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(
            data=folder_of("input", "clips", up=2),
            tuned=folder_of("input", "tuned"),
        ),
    log:
        f"{AX}/logs/train/{{variant}}.log",
    benchmark:
        f"{AX}/benchmarks/train/{{variant}}.tsv"
    resources:
        **job_resources(
            config["apexphys"]["resources"]["train_mem_mb"],
            config["apexphys"]["resources"]["train_runtime_min"],
            config["apexphys"]["resources"]["train_gpus"],
            training=True,
        ),


use rule neurips26_step as apexphys_figures with:
    input:
        metrics=expand(f"{AX}/train/{{variant}}/metrics.json", variant=config["apexphys"]["run_variants"]),
        unsupervised=expand(f"{AX}/data/seed{{seed}}/unsupervised.json", seed=config["apexphys"]["seeds"]),
        validation=expand(f"{AX}/tune/{{variant}}/choice.json", variant=AX_VALIDATED),
    output:
        **figure_outputs("apexphys", AX, AX_FIGURES),
    params:
        threads=1,
        step="apexphys figures",
        args=paper_params("apexphys", "seeds", "data", run_variants=config["apexphys"]["run_variants"]),
        code=code_stamp("apexphys"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(
            evals=folder_of("input", "metrics", up=2),
            data=folder_of("input", "unsupervised", up=2),
            validation=folder_of("input", "validation", up=2),
        ),
    log:
        f"{AX}/logs/figures.log",
    benchmark:
        f"{AX}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("apexphys", rules.apexphys_figures.output)
