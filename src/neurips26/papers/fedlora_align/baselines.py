"""The federated LoRA baselines of ALIGN registered on top of the shared harness (which holds
FedIT, zero-padding, FLoRA and the ideal aggregation): FFA-LoRA, FedEx-LoRA and FedSA-LoRA.

Notation as in `fed_harness.aggregators`: client i sends B_i (m x r), A_i (r x n), data share
p_i; the dispatch gives every client its next B, A and optionally a change of the frozen weight.
"""

from __future__ import annotations

from neurips26.papers.fed_harness.aggregators import Dispatch, register, weighted_sum, weights


@register("ffa_lora")
class FFALoRA:
    """FFA-LoRA (Sun et al., "Improving LoRA in Privacy-preserving Federated Learning", ICLR
    2024): A stays frozen at its shared random initialisation on every client (client option
    `freeze_A`), only B is trained and averaged, B = sum_i p_i B_i. With a common A the
    average of the products is exactly (sum_i p_i B_i) A: no aggregation bias."""

    client_options = {"freeze_A": True}

    def __call__(self, B, A, sizes, ranks, state):
        p = weights(sizes)
        b, a = weighted_sum(B, p), weighted_sum(A, p)  # the A_i are all equal (frozen, shared)
        return Dispatch([b.clone() for _ in B], [a.clone() for _ in A], None)


@register("fedex_lora")
class FedExLoRA:
    """FedEx-LoRA (Singhal et al., "FedEx-LoRA: Exact Aggregation for Federated and Efficient
    Fine-Tuning of Foundation Models", ACL 2025): FedIT's averages B = sum p_i B_i and
    A = sum p_i A_i are sent to every client, and the residual
    sum_i p_i B_i A_i - B A is added to the frozen weight, so the global model is exact."""

    def __call__(self, B, A, sizes, ranks, state):
        p = weights(sizes)
        b, a = weighted_sum(B, p), weighted_sum(A, p)
        residual = weighted_sum([x @ y for x, y in zip(B, A)], p) - b @ a
        return Dispatch([b.clone() for _ in B], [a.clone() for _ in A], residual)


@register("fedsa_lora")
class FedSALoRA:
    """FedSA-LoRA (Guo et al., "Selective Aggregation for Low-Rank Adaptation in Federated
    Learning", ICLR 2025): only A (general knowledge) is shared and averaged, A = sum p_i A_i;
    each client keeps its own B_i (client-specific knowledge), so every client ends with its
    own model W0 + B_i A."""

    def __call__(self, B, A, sizes, ranks, state):
        a = weighted_sum(A, weights(sizes))
        return Dispatch([b.clone() for b in B], [a.clone() for _ in A], None)
