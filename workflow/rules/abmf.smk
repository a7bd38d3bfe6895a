# abmf: exact penalty for asymmetric Burer-Monteiro factorisation.
# evaluate (one job per problem, all seeds and gamma ratios) -> figures
AB = "results/abmf"
AB_FIGURES = ["asymmetry", "objective_gap", "critical_points", "cost"]


use rule neurips26_step as abmf_evaluate with:
    output:
        metrics=f"{AB}/eval/{{variant}}/metrics.json",
        timing=f"{AB}/eval/{{variant}}/timing.json",
    params:
        step="abmf evaluate",
        args=paper_params("abmf", "seeds", "gamma_ratios", "solver", "search", "objective_tol"),
        code=code_stamp("abmf"),
        out=folder_of("output", "metrics"),
    log:
        f"{AB}/logs/eval/{{variant}}.log",
    benchmark:
        f"{AB}/benchmarks/eval/{{variant}}.tsv"
    resources:
        mem_mb=2000,
        runtime=config["abmf"]["resources"]["evaluate_runtime_min"],


use rule neurips26_step as abmf_figures with:
    input:
        metrics=expand(f"{AB}/eval/{{variant}}/metrics.json", variant=config["abmf"]["run_variants"]),
        timing=expand(f"{AB}/eval/{{variant}}/timing.json", variant=config["abmf"]["run_variants"]),
    output:
        **figure_outputs("abmf", AB, AB_FIGURES),
    params:
        threads=1,
        step="abmf figures",
        args=paper_params("abmf", "gamma_ratios", "symmetric_tol", "objective_tol", "cost_ratio", "solver",
                          run_variants=config["abmf"]["run_variants"]),
        code=code_stamp("abmf"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(evals=folder_of("input", "metrics", up=2)),
    log:
        f"{AB}/logs/figures.log",
    benchmark:
        f"{AB}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("abmf", rules.abmf_figures.output)
