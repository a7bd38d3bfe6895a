# anchor_pca: Anchor PCA, robust PCA across domains.
# evaluate (one job per experiment, all seeds and gammas) -> figures
AP = "results/anchor_pca"
AP_FIGURES = ["principal_angles", "recovery_vs_n", "unseen_variance"]


use rule neurips26_step as anchor_pca_evaluate with:
    input:
        data_paths("anchor_pca", "gas_dir"),
    output:
        metrics=f"{AP}/eval/{{variant}}/metrics.json",
    params:
        step="anchor_pca evaluate",
        args=paper_params("anchor_pca", "seeds", "gammas", "validation", "maximin_iterations", "data"),
        code=code_stamp("anchor_pca"),
        out=folder_of("output", "metrics"),
    log:
        f"{AP}/logs/eval/{{variant}}.log",
    benchmark:
        f"{AP}/benchmarks/eval/{{variant}}.tsv"
    resources:
        mem_mb=2000,
        runtime=30,


use rule neurips26_step as anchor_pca_figures with:
    input:
        metrics=expand(f"{AP}/eval/{{variant}}/metrics.json", variant=config["anchor_pca"]["run_variants"]),
    output:
        **figure_outputs("anchor_pca", AP, AP_FIGURES),
    params:
        threads=1,
        step="anchor_pca figures",
        args=paper_params("anchor_pca", "gammas", run_variants=config["anchor_pca"]["run_variants"]),
        code=code_stamp("anchor_pca"),
        out=folder_of("output", "claims"),
        inputs=cli_inputs(evals=folder_of("input", "metrics", up=2)),
    log:
        f"{AP}/logs/figures.log",
    benchmark:
        f"{AP}/benchmarks/figures.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


register_targets("anchor_pca", rules.anchor_pca_figures.output)
