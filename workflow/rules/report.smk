# Cross-paper summary: every enabled paper's claims.csv into results/summary.{md,csv}, the verdict
# pictures (results/summary.png and each paper's results/<paper>/figures/claims.png, drawn by
# neurips26.core.claims_plot), every paper's tuning.csv into results/tuning.csv with its picture
# results/<paper>/figures/tuning.png (neurips26.core.tuning), and the comparison with the committed reference run
# (reference/summary.csv) into results/compare.md. In the report, the category "0 Summary" sorts
# before the papers, and in each paper's category the subcategory "Claims" before its "Figures".


rule report:
    input:
        claims=expand("results/{paper}/claims.csv", paper=PAPERS),
        tuning=expand("results/{paper}/tuning.csv", paper=PAPERS),
        reference=REFERENCE,
    output:
        picture=report("results/summary.png", caption="../report/summary_picture.rst", category="0 Summary"),
        md=report("results/summary.md", caption="../report/summary.rst", category="0 Summary"),
        csv="results/summary.csv",
        compare=report("results/compare.md", caption="../report/compare.rst", category="0 Summary"),
        claims=[
            report(f"results/{paper}/figures/claims.png", caption="../report/claims_picture.rst",
                   category=paper, subcategory="Claims")
            for paper in PAPERS
        ],
        tuning_pictures=[
            report(f"results/{paper}/figures/tuning.png", caption="../report/tuning_picture.rst",
                   category=paper, subcategory="Tuning")
            for paper in PAPERS
        ],
        tuning="results/tuning.csv",
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
        "{params.cli} report --claims {input.claims:q} --tuning {input.tuning:q} --out {params.out:q} --reference={params.reference:q}"
        " --config-hash {params.config_hash} > {log:q} 2>&1"
