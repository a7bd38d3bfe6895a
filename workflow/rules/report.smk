# Cross-paper summary: every enabled paper's claims.csv into results/summary.{md,csv}.


rule report:
    input:
        claims=expand("results/{paper}/claims.csv", paper=PAPERS),
    output:
        md=report("results/summary.md", caption="../report/summary.rst", category="Summary"),
        csv="results/summary.csv",
    log:
        "results/logs/report.log",
    benchmark:
        "results/benchmarks/report.tsv"
    params:
        cli=CLI,
        out=folder_of("output", "md"),
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "{params.cli} report --claims {input.claims} --out {params.out} > {log} 2>&1"
