# Assets several papers use. Nothing here runs unless an enabled paper's rule names these
# outputs as its inputs.
#
# Language-model assets (code: neurips26.data.lm_corpora, neurips26.core.lm, papers.lm_assets):
#   lm_corpora    -> results/lm_assets/corpora/manifest.json (+ <name>.{train,valid}.txt, <name>.cloze.jsonl)
#   lm_tokenizer  -> results/lm_assets/tokenizer/tokenizer.json (Hugging Face tokenizer folder)
#   lm_pretrain   -> results/lm_assets/models/{model}/model/model.safetensors (save_pretrained folder),
#                    one job per entry of config lm_assets.models
LM = LM_ASSETS


use rule neurips26_step as lm_corpora with:
    output:
        manifest=f"{LM}/corpora/manifest.json",
    params:
        threads=1,
        step="lm_assets corpora",
        args=paper_params("lm_assets", "corpora"),
        code=code_stamp("lm_assets"),
        out=folder_of("output", "manifest"),
    log:
        f"{LM}/logs/corpora.log",
    benchmark:
        f"{LM}/benchmarks/corpora.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


use rule neurips26_step as lm_tokenizer with:
    input:
        corpora=f"{LM}/corpora/manifest.json",
    output:
        tokenizer=f"{LM}/tokenizer/tokenizer.json",
    params:
        threads=1,
        step="lm_assets tokenizer",
        args=paper_params("lm_assets", "tokenizer"),
        code=code_stamp("lm_assets"),
        out=folder_of("output", "tokenizer"),
        inputs=cli_inputs(corpora=folder_of("input", "corpora")),
    log:
        f"{LM}/logs/tokenizer.log",
    benchmark:
        f"{LM}/benchmarks/tokenizer.tsv"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,


use rule neurips26_step as lm_pretrain with:
    input:
        corpora=f"{LM}/corpora/manifest.json",
        tokenizer=f"{LM}/tokenizer/tokenizer.json",
    output:
        model=f"{LM}/models/{{model}}/model/model.safetensors",
        metrics=f"{LM}/models/{{model}}/pretrain_metrics.json",
    params:
        step="lm_assets pretrain",
        args=lm_model_params,
        code=code_stamp("lm_assets"),
        out=folder_of("output", "metrics"),
        inputs=cli_inputs(
            corpora=folder_of("input", "corpora"),
            tokenizer=folder_of("input", "tokenizer"),
        ),
    log:
        f"{LM}/logs/pretrain/{{model}}.log",
    benchmark:
        f"{LM}/benchmarks/pretrain/{{model}}.tsv"
    resources:
        mem_mb=3000,
        runtime=60,

