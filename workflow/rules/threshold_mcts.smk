# threshold_mcts: Thresholding MCTS by Track-and-Stop.
# simulate (one job per leaf family, every seed) | timing -> figures
TM = "results/threshold_mcts"
TM_FIGURES = ["error_rate", "stopping_time", "round_time"]


use rule neurips26_step as threshold_mcts_simulate with:
    output:
        metrics=f"{TM}/simulate/{{variant}}/metrics.json",
    params:
        step="threshold_mcts simulate",
        args=paper_params("threshold_mcts", "seeds", "deltas", "runs", "algorithms", "stopping", "lp_check_trees",
                          "asymptotics"),
        code=code_stamp("threshold_mcts"),
        out=folder_of("output", "metrics"),
    log:
        f"{TM}/logs/simulate/{{variant}}.log",
    benchmark:
        f"{TM}/benchmarks/simulate/{{variant}}.tsv"
    resources:
        mem_mb=1000,
        runtime=config["threshold_mcts"]["runtime_min"],


use rule neurips26_step as threshold_mcts_timing with:
    output:
        metrics=f"{TM}/timing/metrics.json",
        timing=f"{TM}/timing/timing.json",
    params:
        threads=1,
        step="threshold_mcts timing",
        args=paper_params("threshold_mcts", "timing"),
        code=code_stamp("threshold_mcts"),
        out=folder_of("output", "metrics"),
    log:
        f"{TM}/logs/timing.log",
    benchmark:
        f"{TM}/benchmarks/timing.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=config["threshold_mcts"]["runtime_min"],


use rule neurips26_step as threshold_mcts_figures with:
    input:
        metrics=expand(f"{TM}/simulate/{{variant}}/metrics.json", variant=config["threshold_mcts"]["run_variants"]),
        timing=f"{TM}/timing/timing.json",
    output:
        **figure_outputs("threshold_mcts", TM, TM_FIGURES),
    params:
        threads=1,
        step="threshold_mcts figures",
        args=paper_params("threshold_mcts", run_variants=config["threshold_mcts"]["run_variants"]),
        code=code_stamp("threshold_mcts"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(
            sims=folder_of("input", "metrics", up=2),
            timing=folder_of("input", "timing"),
        ),
    log:
        f"{TM}/logs/figures.log",
    benchmark:
        f"{TM}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("threshold_mcts", rules.threshold_mcts_figures.output)
