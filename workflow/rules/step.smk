# The rule every paper step derives from: `use rule neurips26_step as <p>_<step> with:` gives the
# step its files (input, output, log, benchmark), its params (`step`, `args`, `code`, `out`, and
# `inputs=cli_inputs(...)` for the folders it reads), its threads and resources. The shell line,
# the conda environment and the tracking arguments are written once, here. Never run itself.


rule neurips26_step:
    output:
        template=".neurips26_step/{name}",
    params:
        cli=CLI,
        launch=launcher,
        wildcards=wildcards_arg,
        inputs="",
        # the configured thread count (a rule declaring `threads: 1` sets this to 1 too): Snakemake's
        # {threads} is scaled down to --cores, which would make results follow the machine
        threads=THREADS,
    log:
        ".neurips26_step/{name}.log",
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.launch}{params.cli} {params.step} --params {params.args:q}{params.inputs} --out {params.out:q}"
        " --threads {params.threads}{params.wildcards} > {log:q} 2>&1"
