# neurips26: NeurIPS 2026 papers re-run against their baselines, one DAG.
# Run: make run (or: snakemake --cores all --profile profiles/default)
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


wildcard_constraints:
    variant=WILDCARDS["variant"],
    model=WILDCARDS["model"],
    seed=WILDCARDS["seed"],


include: "workflow/rules/step.smk"
include: "workflow/rules/shared.smk"
include: "workflow/rules/nar_dit.smk"
include: "workflow/rules/crl_spectral.smk"
include: "workflow/rules/sparse_halfspace.smk"
include: "workflow/rules/abmf.smk"
include: "workflow/rules/angular_nets.smk"
include: "workflow/rules/anchor_pca.smk"
include: "workflow/rules/acopula.smk"
include: "workflow/rules/threshold_mcts.smk"
include: "workflow/rules/adap.smk"
include: "workflow/rules/apexphys.smk"
include: "workflow/rules/embed_merge.smk"
include: "workflow/rules/bdc_merge.smk"
include: "workflow/rules/fedlora_align.smk"
include: "workflow/rules/fedaba.smk"
include: "workflow/rules/beta_tta.smk"
include: "workflow/rules/ar1_zo.smk"
include: "workflow/rules/es_dynamics.smk"
include: "workflow/rules/adapad.smk"
include: "workflow/rules/adaprelora.smk"
include: "workflow/rules/report.smk"


onstart:
    start_tracking()
    start_warm()


onsuccess:
    stop_warm()
    end_tracking("FINISHED")


onerror:
    stop_warm()
    end_tracking("FAILED")


rule all:
    input:
        all_targets(),
    default_target: True
