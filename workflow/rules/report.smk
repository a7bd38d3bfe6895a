# Cross-paper summary: every enabled paper's claims.csv into results/summary.{md,csv}, and the
# comparison with the committed reference run (reference/summary.csv) into results/compare.md.


rule report:
    input:
        claims=expand("results/{paper}/claims.csv", paper=PAPERS),
        reference=REFERENCE,
    output:
        md=report("results/summary.md", caption="../report/summary.rst", category="Summary"),
        csv="results/summary.csv",
        compare=report("results/compare.md", caption="../report/compare.rst", category="Summary"),
        run_info="results/run_info.json",
    log:
        "results/logs/report.log",
    benchmark:
        "results/benchmarks/report.tsv"
    params:
        cli=CLI,
        out=folder_of("output", "md"),
        reference=folder_of("input", "reference"),
        config_hash=CONFIG_HASH,
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    shell:
        "{params.cli} report --claims {input.claims} --out {params.out} --reference={params.reference}"
        " --config-hash {params.config_hash} > {log} 2>&1"
