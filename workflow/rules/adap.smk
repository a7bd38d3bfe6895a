# adap: ADAP, generative active search (generate, rank, verify).
# synthetic (one job per success-function shape, every seed) | lm (train, sample, evaluate) -> figures
AD = "results/adap"
AD_FIGURES = ["cost_ratio", "expected_cost"]


rule adap_synthetic:
    output:
        metrics=f"{AD}/eval/{{variant}}/metrics.json",
    wildcard_constraints:
        variant="(?!lm$)[a-z_]+",
    params:
        cli=CLI,
        args=paper_params("adap", "seeds", "evaluation"),
        wildcards=wildcards_json,
        code=code_stamp("adap"),
        out=folder_of("output", "metrics"),
    log:
        f"{AD}/logs/synthetic/{{variant}}.log",
    benchmark:
        f"{AD}/benchmarks/synthetic/{{variant}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=2000,
        runtime=config["adap"]["runtime_min"],
    shell:
        "{params.cli} adap synthetic --params {params.args:q} --out {params.out}"
        " --threads {threads} --wildcards {params.wildcards:q} > {log} 2>&1"


rule adap_lm:
    output:
        metrics=f"{AD}/eval/lm/metrics.json",
    params:
        cli=CLI,
        args=paper_params("adap", "seeds", "evaluation", "lm"),
        code=code_stamp("adap"),
        out=folder_of("output", "metrics"),
    log:
        f"{AD}/logs/lm.log",
    benchmark:
        f"{AD}/benchmarks/lm.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=3000,
        runtime=config["adap"]["runtime_min"],
    shell:
        "{params.cli} adap lm --params {params.args:q} --out {params.out} --threads {threads} > {log} 2>&1"


rule adap_figures:
    input:
        metrics=expand(f"{AD}/eval/{{variant}}/metrics.json", variant=config["adap"]["run_variants"] + ["lm"]),
    output:
        figures=[
            report(f"{AD}/figures/{name}.png", caption=f"../report/adap_{name}.rst", category="adap")
            for name in AD_FIGURES
        ],
        summary=f"{AD}/summary.csv",
        claims=f"{AD}/claims.csv",
    params:
        cli=CLI,
        args=paper_params("adap", run_variants=config["adap"]["run_variants"] + ["lm"]),
        code=code_stamp("adap"),
        evals=folder_of("input", "metrics", up=2),
        out=folder_of("output", "claims"),
    log:
        f"{AD}/logs/figures.log",
    benchmark:
        f"{AD}/benchmarks/figures.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} adap figures --params {params.args:q} --input evals={params.evals} --out {params.out} > {log} 2>&1"


register_targets("adap", rules.adap_figures.output)
