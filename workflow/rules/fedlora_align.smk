# fedlora_align: ALIGN, subspace alignment for federated LoRA.
# data (variant x seed: sentences, frozen MiniLM layers run once) -> federate (variant x seed:
# every alpha x method federation on the shared fed_harness) -> figures
FA = "results/fedlora_align"
FA_FIGURES = ["conflict_vs_heterogeneity", "conflict_per_round", "accuracy_vs_heterogeneity"]


rule fedlora_align_data:
    output:
        data=f"{FA}/data/{{variant}}/seed{{seed}}/data.safetensors",
        info=f"{FA}/data/{{variant}}/seed{{seed}}/data.json",
    params:
        cli=CLI,
        args=paper_params("fedlora_align", "data"),
        wildcards=wildcards_json,
        code=code_stamp("fedlora_align"),
        out=folder_of("output", "info"),
    log:
        f"{FA}/logs/data/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{FA}/benchmarks/data/{{variant}}_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=3000,
        runtime=20,
    shell:
        "{params.cli} fedlora_align data --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule fedlora_align_federate:
    input:
        data=rules.fedlora_align_data.output.data,
        info=rules.fedlora_align_data.output.info,
    output:
        metrics=f"{FA}/federate/{{variant}}/seed{{seed}}/metrics.json",
        timing=f"{FA}/federate/{{variant}}/seed{{seed}}/timing.json",
    params:
        cli=CLI,
        args=paper_params("fedlora_align", "data", "federation", "methods", "align"),
        wildcards=wildcards_json,
        code=code_stamp("fedlora_align"),
        data=folder_of("input", "info"),
        out=folder_of("output", "metrics"),
    log:
        f"{FA}/logs/federate/{{variant}}_seed{{seed}}.log",
    benchmark:
        f"{FA}/benchmarks/federate/{{variant}}_seed{{seed}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        **job_resources(
            config["fedlora_align"]["resources"]["federate_mem_mb"],
            config["fedlora_align"]["resources"]["federate_runtime_min"],
            config["fedlora_align"]["resources"]["federate_gpus"],
            training=True,
        ),
    shell:
        "{resources.mpi} {params.cli} fedlora_align federate --params {params.args:q} --input data={params.data}"
        " --out {params.out} --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule fedlora_align_figures:
    input:
        metrics=grid("fedlora_align", f"{FA}/federate/{{variant}}/seed{{seed}}/metrics.json"),
    output:
        figures=[
            report(f"{FA}/figures/{name}.png", caption=f"../report/fedlora_align_{name}.rst", category="fedlora_align")
            for name in FA_FIGURES
        ],
        summary=f"{FA}/summary.csv",
        claims=f"{FA}/claims.csv",
    params:
        cli=CLI,
        args=paper_params(
            "fedlora_align",
            "federation",
            "methods",
            run_variants=config["fedlora_align"]["run_variants"],
            seeds=config["fedlora_align"]["seeds"],
        ),
        code=code_stamp("fedlora_align"),
        runs=folder_of("input", "metrics", up=3),
        out=folder_of("output", "claims"),
    log:
        f"{FA}/logs/figures.log",
    benchmark:
        f"{FA}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "{params.cli} fedlora_align figures --params {params.args:q} --input runs={params.runs} --out {params.out} > {log} 2>&1"


register_targets("fedlora_align", rules.fedlora_align_figures.output)
