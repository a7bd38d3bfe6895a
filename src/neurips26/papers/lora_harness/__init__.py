"""LoRA fine-tuning harness shared by `adaprelora` and `adapad` (no steps, no config block).

Real pre-trained models that are here offline, peft LoRA adapters on them, generated tasks, one
training loop through `neurips26.core.trainer`, and memory measured rather than estimated.

Modules (import them directly; this file imports nothing heavy):
- `tasks`: GLUE-style classification tasks for the packaged all-MiniLM-L6-v2, one or two
  sentences per example (`CLS_TASKS`: `topic_sentiment` and `intent` from the federated harness's
  generators, `paraphrase` a generated sentence-pair task), cached below the last layer
  (`prepare_classification` -> `ClsData`); an E2E-style data-to-text task for the tiny causal
  LMs of `lm_assets` written in words the shared tokenizer knows (`make_data_to_text`), or read
  from E2E's CSV files (`read_e2e_csv`), tokenized with the loss on the target only (`lm_task`
  -> `LMData`); `split_validation` holds out a validation part of the training set (tuning).
- `models`: the frozen last MiniLM layer read at [CLS] with a linear head
  (`minilm_classifier`), a tiny causal LM (`tiny_lm`), `add_lora` (peft), and `lora_pairs`
  (every adapted Linear's A, B, scaling and frozen base, for optimizers that act on the pair).
- `train`: `finetune` (manual optimization in a LightningModule: zero_grad, backward, the
  optimizer's step, the scheduler, an `after_step` hook; checkpoints hold the trainable
  tensors only), `evaluate` (accuracy; exact match, BLEU-4 and ROUGE-L of greedy decodes, by
  torchmetrics).
- `memory`: optimizer state bytes counted from the optimizer's state tensors, and the peak of
  the tensors alive during one training step (`torch.cuda.max_memory_allocated` on a GPU; on
  CPUs a dispatch-level tracker of tensor storages, said by `kind`).
"""
