# Assets several papers use. Nothing here runs unless an enabled paper's rule names these
# outputs as its inputs.
#
# Language-model assets (code: neurips26.data.lm_corpora, neurips26.core.lm, papers.lm_assets):
#   lm_corpora    -> results/lm_assets/corpora/manifest.json (+ <name>.{train,valid}.txt, <name>.cloze.jsonl)
#   lm_tokenizer  -> results/lm_assets/tokenizer/tokenizer.json (Hugging Face tokenizer folder)
#   lm_pretrain   -> results/lm_assets/models/{model}/model/model.safetensors (save_pretrained folder),
#                    one job per entry of config lm_assets.models
LM = LM_ASSETS


rule lm_corpora:
    output:
        manifest=f"{LM}/corpora/manifest.json",
    params:
        cli=CLI,
        args=paper_params("lm_assets", "corpora"),
        code=code_stamp("lm_assets"),
        out=folder_of("output", "manifest"),
    log:
        f"{LM}/logs/corpora.log",
    benchmark:
        f"{LM}/benchmarks/corpora.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} lm_assets corpora --params {params.args:q} --out {params.out} > {log} 2>&1"


rule lm_tokenizer:
    input:
        corpora=f"{LM}/corpora/manifest.json",
    output:
        tokenizer=f"{LM}/tokenizer/tokenizer.json",
    params:
        cli=CLI,
        args=paper_params("lm_assets", "tokenizer"),
        code=code_stamp("lm_assets"),
        corpora=folder_of("input", "corpora"),
        out=folder_of("output", "tokenizer"),
    log:
        f"{LM}/logs/tokenizer.log",
    benchmark:
        f"{LM}/benchmarks/tokenizer.tsv"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "{params.cli} lm_assets tokenizer --params {params.args:q} --input corpora={params.corpora}"
        " --out {params.out} > {log} 2>&1"


rule lm_pretrain:
    input:
        corpora=f"{LM}/corpora/manifest.json",
        tokenizer=f"{LM}/tokenizer/tokenizer.json",
    output:
        model=f"{LM}/models/{{model}}/model/model.safetensors",
        metrics=f"{LM}/models/{{model}}/pretrain_metrics.json",
    params:
        cli=CLI,
        args=lm_model_params,
        wildcards=wildcards_json,
        code=code_stamp("lm_assets"),
        corpora=folder_of("input", "corpora"),
        tokenizer=folder_of("input", "tokenizer"),
        out=folder_of("output", "metrics"),
    log:
        f"{LM}/logs/pretrain/{{model}}.log",
    benchmark:
        f"{LM}/benchmarks/pretrain/{{model}}.tsv"
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=3000,
        runtime=60,
    shell:
        "{params.cli} lm_assets pretrain --params {params.args:q} --input corpora={params.corpora}"
        " --input tokenizer={params.tokenizer} --out {params.out} --threads {threads}"
        " --wildcards {params.wildcards:q} > {log} 2>&1"
