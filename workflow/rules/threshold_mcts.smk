# threshold_mcts: Thresholding MCTS by Track-and-Stop.
# simulate (one job per leaf family, every seed) | timing -> figures
TM = "results/threshold_mcts"
TM_FIGURES = ["error_rate", "stopping_time", "round_time"]


rule threshold_mcts_simulate:
    output:
        metrics=f"{TM}/simulate/{{variant}}/metrics.json",
    params:
        cli=CLI,
        args=paper_params("threshold_mcts", "seeds", "deltas", "runs", "algorithms", "stopping", "lp_check_trees",
                          "asymptotics"),
        wildcards=wildcards_json,
        code=code_stamp("threshold_mcts"),
        out=folder_of("output", "metrics"),
    log:
        f"{TM}/logs/simulate/{{variant}}.log",
    benchmark:
        f"{TM}/benchmarks/simulate/{{variant}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=1000,
        runtime=config["threshold_mcts"]["runtime_min"],
    shell:
        "{params.cli} threshold_mcts simulate --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule threshold_mcts_timing:
    output:
        metrics=f"{TM}/timing/metrics.json",
        timing=f"{TM}/timing/timing.json",
    params:
        cli=CLI,
        args=paper_params("threshold_mcts", "timing"),
        code=code_stamp("threshold_mcts"),
        out=folder_of("output", "metrics"),
    log:
        f"{TM}/logs/timing.log",
    benchmark:
        f"{TM}/benchmarks/timing.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=config["threshold_mcts"]["runtime_min"],
    shell:
        "{params.cli} threshold_mcts timing --params {params.args:q} --out {params.out} --threads {threads} > {log} 2>&1"


rule threshold_mcts_figures:
    input:
        metrics=expand(f"{TM}/simulate/{{variant}}/metrics.json", variant=config["threshold_mcts"]["run_variants"]),
        timing=f"{TM}/timing/timing.json",
    output:
        figures=[
            report(f"{TM}/figures/{name}.png", caption=f"../report/threshold_mcts_{name}.rst", category="threshold_mcts")
            for name in TM_FIGURES
        ],
        summary=f"{TM}/summary.csv",
        claims=f"{TM}/claims.csv",
    params:
        cli=CLI,
        args=paper_params("threshold_mcts", run_variants=config["threshold_mcts"]["run_variants"]),
        code=code_stamp("threshold_mcts"),
        sims=folder_of("input", "metrics", up=2),
        timing=folder_of("input", "timing"),
        out=folder_of("output", "claims"),
    log:
        f"{TM}/logs/figures.log",
    benchmark:
        f"{TM}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} threshold_mcts figures --params {params.args:q} --input sims={params.sims}"
        " --input timing={params.timing} --out {params.out} > {log} 2>&1"


register_targets("threshold_mcts", rules.threshold_mcts_figures.output)
