"""Federated LoRA harness shared by `fedlora_align` and `fedaba`.

Clients fine-tune peft LoRA adapters of a frozen pre-trained model on their own share of a
task; a server turns the clients' factors (B_i, A_i) into what each client receives next round.

Modules (import them directly; this file imports nothing heavy):
- `tasks`: offline text classification tasks written from templates, and the frozen lower
  layers of all-MiniLM-L6-v2 run once to cache the hidden states the LoRA layers see.
- `split`: Dirichlet label-skew client splits (concentration alpha; small alpha = skewed).
- `aggregators`: the server interface (`Dispatch`, `Aggregator`, the `AGGREGATORS` registry and
  its `register` decorator) and the aggregators both papers use: FedIT, zero-padding, FLoRA
  and the ideal (exact) aggregation.
- `subspace`: principal angles and projection distances between column / row spaces.
- `simulation`: the in-process, deterministic federation (local training of every client
  through `neurips26.core.trainer`, server rounds in between).
- `flower`: the same aggregators and local rounds as a Flower `ServerApp` / `ClientApp`, for
  federations across machines (imports flwr).

The harness takes its settings as arguments from the papers' config blocks.
"""
