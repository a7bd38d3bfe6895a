"""FedAbA: basis-consistent federated LoRA with heterogeneous ranks (fedaba)."""

TITLE = "FedAbA: basis-consistent federated LoRA with heterogeneous ranks"
STEPS = ("train", "figures")
