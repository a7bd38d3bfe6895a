# bdc_merge: BDC-Merge, cross-architecture model merging with Brownian distance correlation.
# shared lm_corpora/lm_tokenizer/lm_pretrain (when the config names no models or tasks) -> run (one job per seed) -> figures
BM = "results/bdc_merge"
BM_FIGURES = ["tasks", "strength", "calibration_size"]
BM_CFG = config["bdc_merge"]
# a configured tasks folder is the input itself; the generated corpora are named by their manifest
BM_TASKS = [BM_CFG["data"]["tasks_dir"]] if BM_CFG["data"]["tasks_dir"] else [f"{LM}/corpora/manifest.json"]
BM_TASKS_UP = 0 if BM_CFG["data"]["tasks_dir"] else 1
BM_SOURCE = [] if BM_CFG["models"]["source"] else [lm_model_file(BM_CFG["models"]["source_asset"])]
BM_TARGET = [] if BM_CFG["models"]["target"] else [lm_model_file(BM_CFG["models"]["target_asset"])]


rule bdc_merge_run:
    input:
        corpora=BM_TASKS,
        source=BM_SOURCE,
        target=BM_TARGET,
    output:
        metrics=f"{BM}/runs/seed{{seed}}/metrics.json",
    params:
        cli=CLI,
        args=paper_params(
            "bdc_merge", "models", "data", "calibration", "strengths", "strength", "bdc", "transport", "naive", "lora", "evaluate"
        ),
        wildcards=wildcards_json,
        code=code_stamp("bdc_merge"),
        corpora=folder_of("input", "corpora", up=BM_TASKS_UP),
        source=folder_of("input", "source"),
        target=folder_of("input", "target"),
        out=folder_of("output", "metrics"),
    log:
        f"{BM}/logs/run/seed{{seed}}.log",
    benchmark:
        f"{BM}/benchmarks/run/seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(BM_CFG["resources"]["run_mem_mb"], BM_CFG["resources"]["run_runtime_min"], BM_CFG["resources"]["run_gpus"]),
    shell:
        "{resources.mpi} {params.cli} bdc_merge run --params {params.args:q} --input corpora={params.corpora}"
        " --input source={params.source} --input target={params.target} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule bdc_merge_figures:
    input:
        metrics=expand(f"{BM}/runs/seed{{seed}}/metrics.json", seed=BM_CFG["seeds"]),
    output:
        figures=[
            report(f"{BM}/figures/{name}.png", caption=f"../report/bdc_merge_{name}.rst", category="bdc_merge")
            for name in BM_FIGURES
        ],
        summary=f"{BM}/summary.csv",
        claims=f"{BM}/claims.csv",
    params:
        cli=CLI,
        args=paper_params("bdc_merge", "calibration", "strengths", "strength", "general_tolerance"),
        code=code_stamp("bdc_merge"),
        runs=folder_of("input", "metrics", up=2),
        out=folder_of("output", "claims"),
    log:
        f"{BM}/logs/figures.log",
    benchmark:
        f"{BM}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} bdc_merge figures --params {params.args:q} --input runs={params.runs} --out {params.out} > {log} 2>&1"


register_targets("bdc_merge", rules.bdc_merge_figures.output)
