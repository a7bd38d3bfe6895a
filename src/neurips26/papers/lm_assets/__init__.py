"""Shared language-model assets, not a paper: generated corpora, one BPE tokenizer and tiny
pretrained causal LMs that several papers name as inputs (rules in workflow/rules/shared.smk,
config block `lm_assets`)."""

STEPS = ("corpora", "tokenizer", "pretrain")
TITLE = "Shared language-model assets: corpora, tokenizer, tiny pretrained LMs"
