# adap: ADAP, generative active search (generate, rank, verify).
# synthetic (one job per success-function shape, every seed) | lm (train, sample, evaluate) -> figures
AD = "results/adap"
AD_FIGURES = ["cost_ratio", "expected_cost"]


use rule neurips26_step as adap_synthetic with:
    output:
        metrics=f"{AD}/eval/{{variant}}/metrics.json",
    wildcard_constraints:
        variant="(?!lm$)[a-z_]+",
    params:
        step="adap synthetic",
        args=paper_params("adap", "seeds", "evaluation"),
        code=code_stamp("adap"),
        out=folder_of("output", "metrics"),
    log:
        f"{AD}/logs/synthetic/{{variant}}.log",
    benchmark:
        f"{AD}/benchmarks/synthetic/{{variant}}.tsv"
    resources:
        mem_mb=2000,
        runtime=config["adap"]["runtime_min"],


use rule neurips26_step as adap_lm with:
    output:
        metrics=f"{AD}/eval/lm/metrics.json",
    params:
        step="adap lm",
        args=paper_params("adap", "seeds", "evaluation", "lm"),
        code=code_stamp("adap"),
        out=folder_of("output", "metrics"),
    log:
        f"{AD}/logs/lm.log",
    benchmark:
        f"{AD}/benchmarks/lm.tsv"
    resources:
        mem_mb=3000,
        runtime=config["adap"]["runtime_min"],


use rule neurips26_step as adap_figures with:
    input:
        metrics=expand(f"{AD}/eval/{{variant}}/metrics.json", variant=config["adap"]["run_variants"] + ["lm"]),
    output:
        **figure_outputs("adap", AD, AD_FIGURES),
    params:
        threads=1,
        step="adap figures",
        args=paper_params("adap", run_variants=config["adap"]["run_variants"] + ["lm"]),
        code=code_stamp("adap"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(evals=folder_of("input", "metrics", up=2)),
    log:
        f"{AD}/logs/figures.log",
    benchmark:
        f"{AD}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("adap", rules.adap_figures.output)
