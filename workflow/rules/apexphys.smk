# apexphys: ApexPhys, continual rPPG over sequential domains.
# generate (UBFC-rPPG / PURE folders) -> preprocess (loaders, crop, normalise, cache; GREEN/CHROM/POS)
# -> train (one job per method, every seed) -> figures. Generate and preprocess run once per seed:
# a seed draws its own subjects, heart rates and videos. EWC's and BCRP's lambda are tuned on the
# shared grid (apexphys_tune, on held-out training clips of one seed) before their train jobs.
AX = "results/apexphys"
AX_FIGURES = ["r_matrices", "avg_mae_per_task"]
AX_REAL_DIRS = [spec["data_dir"] for spec in config["apexphys"]["data"].get("real", {}).values()
                if config["apexphys"]["data"]["source"] == "real"]


rule apexphys_generate:
    input:
        AX_REAL_DIRS,
    output:
        manifest=f"{AX}/raw/seed{{seed}}/manifest.json",
    params:
        cli=CLI,
        args=paper_params("apexphys", "data"),
        wildcards=wildcards_json,
        code=code_stamp("apexphys"),
        out=folder_of("output", "manifest"),
    log:
        f"{AX}/logs/generate_seed{{seed}}.log",
    benchmark:
        f"{AX}/benchmarks/generate_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "{params.cli} apexphys generate --params {params.args:q} --out {params.out} --threads {threads}"
        " --wildcards {params.wildcards:q} > {log} 2>&1"


rule apexphys_preprocess:
    input:
        manifest=rules.apexphys_generate.output.manifest,
    output:
        clips=f"{AX}/data/seed{{seed}}/clips.safetensors",
        index=f"{AX}/data/seed{{seed}}/index.json",
        unsupervised=f"{AX}/data/seed{{seed}}/unsupervised.json",
    params:
        cli=CLI,
        args=paper_params("apexphys", "data", "preprocess", "heart_rate"),
        wildcards=wildcards_json,
        code=code_stamp("apexphys"),
        raw=folder_of("input", "manifest"),
        out=folder_of("output", "clips"),
    log:
        f"{AX}/logs/preprocess_seed{{seed}}.log",
    benchmark:
        f"{AX}/benchmarks/preprocess_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=60,
    shell:
        "{params.cli} apexphys preprocess --params {params.args:q} --input raw={params.raw}"
        " --out {params.out} --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule apexphys_tune:
    input:
        clips=f"{AX}/data/seed{config['apexphys']['tuning']['seed']}/clips.safetensors",
        index=f"{AX}/data/seed{config['apexphys']['tuning']['seed']}/index.json",
    output:
        choice=f"{AX}/tune/{{variant}}/choice.json",
        timing=f"{AX}/tune/{{variant}}/timing.json",
    params:
        cli=CLI,
        args=paper_params("apexphys", "preprocess", "heart_rate", "model", "train", "tuning"),
        wildcards=wildcards_json,
        code=code_stamp("apexphys"),
        data=folder_of("input", "clips", up=2),
        out=folder_of("output", "choice"),
    log:
        f"{AX}/logs/tune/{{variant}}.log",
    benchmark:
        f"{AX}/benchmarks/tune/{{variant}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["apexphys"]["resources"]["train_mem_mb"],
            config["apexphys"]["resources"]["train_runtime_min"],
            config["apexphys"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} apexphys tune --params {params.args:q} --input data={params.data}"
        " --out {params.out} --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule apexphys_train:
    input:
        clips=expand(f"{AX}/data/seed{{seed}}/clips.safetensors", seed=config["apexphys"]["seeds"]),
        index=expand(f"{AX}/data/seed{{seed}}/index.json", seed=config["apexphys"]["seeds"]),
        tuned=tuned_by("apexphys", f"{AX}/tune/{{source}}/choice.json"),
    output:
        metrics=f"{AX}/train/{{variant}}/metrics.json",
        timing=f"{AX}/train/{{variant}}/timing.json",
    params:
        cli=CLI,
        args=paper_params("apexphys", "seeds", "preprocess", "heart_rate", "model", "train"),
        wildcards=wildcards_json,
        code=code_stamp("apexphys"),
        data=folder_of("input", "clips", up=2),
        tuned=folder_of("input", "tuned"),
        out=folder_of("output", "metrics"),
    log:
        f"{AX}/logs/train/{{variant}}.log",
    benchmark:
        f"{AX}/benchmarks/train/{{variant}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["apexphys"]["resources"]["train_mem_mb"],
            config["apexphys"]["resources"]["train_runtime_min"],
            config["apexphys"]["resources"]["train_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} apexphys train --params {params.args:q} --input data={params.data}"
        " --input tuned={params.tuned} --out {params.out} --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule apexphys_figures:
    input:
        metrics=expand(f"{AX}/train/{{variant}}/metrics.json", variant=config["apexphys"]["run_variants"]),
        unsupervised=expand(f"{AX}/data/seed{{seed}}/unsupervised.json", seed=config["apexphys"]["seeds"]),
    output:
        figures=[
            report(f"{AX}/figures/{name}.png", caption=f"../report/apexphys_{name}.rst", category="apexphys")
            for name in AX_FIGURES
        ],
        summary=f"{AX}/summary.csv",
        claims=f"{AX}/claims.csv",
    params:
        cli=CLI,
        args=paper_params("apexphys", "seeds", "data", run_variants=config["apexphys"]["run_variants"]),
        code=code_stamp("apexphys"),
        evals=folder_of("input", "metrics", up=2),
        data=folder_of("input", "unsupervised", up=2),
        out=folder_of("output", "claims"),
    log:
        f"{AX}/logs/figures.log",
    benchmark:
        f"{AX}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.cli} apexphys figures --params {params.args:q} --input evals={params.evals}"
        " --input data={params.data} --out {params.out} > {log} 2>&1"


register_targets("apexphys", rules.apexphys_figures.output)
