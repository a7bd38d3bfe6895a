# acopula: nested Archimedean copulas with censoring and exact gradients.
# speed | simulate (per seed) | stocks | survival -> figures
AC = "results/acopula"
AC_FIGURES = ["speed", "censoring", "stocks", "survival"]
AC_STOCK_FILES = [p for p in (config["acopula"]["stocks"].get("prices_path"), config["acopula"]["stocks"].get("sectors_path")) if p]
AC_SURVIVAL_FILES = [p for p in (config["acopula"]["survival"].get("survival_path"),) if p]


use rule neurips26_step as acopula_speed with:
    output:
        metrics=f"{AC}/speed/metrics.json",
        timing=f"{AC}/speed/timing.json",
    params:
        step="acopula speed",
        args=paper_params("acopula", "speed"),
        code=code_stamp("acopula"),
        out=folder_of("output", "metrics"),
    log:
        f"{AC}/logs/speed.log",
    benchmark:
        f"{AC}/benchmarks/speed.tsv"
    resources:
        mem_mb=config["acopula"]["resources"]["mem_mb"],
        runtime=config["acopula"]["resources"]["runtime_min"],


use rule neurips26_step as acopula_simulate with:
    output:
        metrics=f"{AC}/simulate/seed{{seed}}/metrics.json",
    params:
        step="acopula simulate",
        args=paper_params("acopula", "simulate"),
        code=code_stamp("acopula"),
        out=folder_of("output", "metrics"),
    log:
        f"{AC}/logs/simulate_seed{{seed}}.log",
    benchmark:
        f"{AC}/benchmarks/simulate_seed{{seed}}.tsv"
    resources:
        mem_mb=config["acopula"]["resources"]["mem_mb"],
        runtime=config["acopula"]["resources"]["runtime_min"],


use rule neurips26_step as acopula_stocks with:
    input:
        AC_STOCK_FILES,
    output:
        metrics=f"{AC}/stocks/metrics.json",
    params:
        step="acopula stocks",
        args=paper_params("acopula", "stocks"),
        code=code_stamp("acopula"),
        out=folder_of("output", "metrics"),
    log:
        f"{AC}/logs/stocks.log",
    benchmark:
        f"{AC}/benchmarks/stocks.tsv"
    resources:
        mem_mb=config["acopula"]["resources"]["mem_mb"],
        runtime=config["acopula"]["resources"]["runtime_min"],


use rule neurips26_step as acopula_survival with:
    input:
        AC_SURVIVAL_FILES,
    output:
        metrics=f"{AC}/survival/metrics.json",
    params:
        step="acopula survival",
        args=paper_params("acopula", "survival"),
        code=code_stamp("acopula"),
        out=folder_of("output", "metrics"),
    log:
        f"{AC}/logs/survival.log",
    benchmark:
        f"{AC}/benchmarks/survival.tsv"
    resources:
        mem_mb=config["acopula"]["resources"]["mem_mb"],
        runtime=config["acopula"]["resources"]["runtime_min"],


use rule neurips26_step as acopula_figures with:
    input:
        speed=rules.acopula_speed.output.metrics,
        timing=rules.acopula_speed.output.timing,
        simulate=expand(f"{AC}/simulate/seed{{seed}}/metrics.json", seed=config["acopula"]["seeds"]),
        stocks=rules.acopula_stocks.output.metrics,
        survival=rules.acopula_survival.output.metrics,
    output:
        **figure_outputs("acopula", AC, AC_FIGURES),
    params:
        threads=1,
        step="acopula figures",
        args=paper_params("acopula", "speed", "simulate", "stocks", "survival", seeds=config["acopula"]["seeds"]),
        code=code_stamp("acopula"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(
            speed=folder_of("input", "speed"),
            simulate=folder_of("input", "simulate", up=2),
            stocks=folder_of("input", "stocks"),
            survival=folder_of("input", "survival"),
        ),
    log:
        f"{AC}/logs/figures.log",
    benchmark:
        f"{AC}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,


register_targets("acopula", rules.acopula_figures.output)
