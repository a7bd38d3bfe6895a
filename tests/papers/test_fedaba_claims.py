"""fedaba claims rows: each says `no` (`fail`) on metrics where its claim is false and `yes` (`pass`) where it holds."""

from neurips26.papers.fedaba.claims import claim_rows

AGGS = ("fedaba", "cafd", "flexlora", "hetlora", "zeropad", "flora")


def summary(strong_gain=0.05, uniform_gain=0.0, prefix_ours=0.1, prefix_cafd=0.3, low_ours=0.6, low_cafd=0.5,
            svd=1e-15, gauge=1e-15):
    def accs(base, ours_gain):
        out = {a: [base + 0.01 * s for s in range(3)] for a in AGGS}
        out["fedaba"] = [base + ours_gain + 0.01 * s + 0.001 * (-1) ** s for s in range(3)]
        return out
    return {"strong": "strong", "uniform": "uniform", "alpha": "0.1", "low_rank": 2,
            "acc": {"strong": {"0.1": accs(0.5, strong_gain)}, "uniform": {"0.1": accs(0.5, uniform_gain)}},
            "acc_low": {"strong": {"0.1": {"fedaba": [low_ours + 0.01 * s for s in range(3)],
                                           "cafd": [low_cafd + 0.01 * s + 0.002 * (-1) ** s for s in range(3)]}}},
            "prefix": {"strong": {"0.1": {"fedaba": [prefix_ours + 0.01 * s for s in range(3)],
                                          "cafd": [prefix_cafd + 0.01 * s + 0.002 * (-1) ** s for s in range(3)]}}},
            "checks": {"svd_rel_err": svd, "gauge_rel_err": gauge}}


def verdicts(rows, text):
    return {r["reproduced"] for r in rows if text in r["claim"]}


def test_outperforms_baselines():
    assert verdicts(claim_rows(summary(), "default"), "FedAbA outperforms") == {"yes"}
    assert verdicts(claim_rows(summary(strong_gain=-0.05), "default"), "FedAbA outperforms") == {"no"}
    assert len([r for r in claim_rows(summary(), "default") if "FedAbA outperforms" in r["claim"]]) == 4


def test_largest_gain_at_strongest_heterogeneity():
    assert verdicts(claim_rows(summary(strong_gain=0.05, uniform_gain=0.0), "default"), "gain is larger") == {"yes"}
    assert verdicts(claim_rows(summary(strong_gain=0.0, uniform_gain=0.05), "default"), "gain is larger") == {"no"}


def test_prefix_stability():
    assert verdicts(claim_rows(summary(), "default"), "stabilises") == {"yes"}
    assert verdicts(claim_rows(summary(prefix_ours=0.4), "default"), "stabilises") == {"no"}


def test_low_rank_accuracy():
    assert verdicts(claim_rows(summary(), "default"), "clients' accuracy") == {"yes"}
    assert verdicts(claim_rows(summary(low_ours=0.4), "default"), "clients' accuracy") == {"no"}


def test_checks():
    assert verdicts(claim_rows(summary(), "default"), "refactorization") == {"pass"}
    assert verdicts(claim_rows(summary(svd=1e-3), "default"), "refactorization") == {"fail"}
    assert verdicts(claim_rows(summary(), "default"), "reparametrises") == {"pass"}
    assert verdicts(claim_rows(summary(gauge=1e-2), "default"), "reparametrises") == {"fail"}


def lm_summary(gain=0.05, prefix_ours=0.1, prefix_cafd=0.3):
    aggs = ("fedaba", "cafd", "flexlora", "hetlora", "zeropad")
    acc = {a: [0.3 + 0.01 * s for s in range(3)] for a in aggs}
    acc["fedaba"] = [0.3 + gain + 0.01 * s + 0.001 * (-1) ** s for s in range(3)]
    prefix = {"fedaba": [prefix_ours + 0.01 * s for s in range(3)],
              "cafd": [prefix_cafd + 0.01 * s + 0.002 * (-1) ** s for s in range(3)]}
    return {**summary(), "lm": {"strong_lm": {"alpha": "0.1", "low_rank": 2, "acc": {"0.1": acc},
                                              "prefix": {"0.1": prefix}}}}


def test_generative_rows_can_say_no_and_yes():
    text = "on the generative task"
    rows = [r for r in claim_rows(lm_summary(), "default") if text in r["claim"]]
    assert len(rows) == 3 + 1 and {r["reproduced"] for r in rows} == {"yes"}  # HetLoRA, FlexLoRA, zero-padding; prefix
    no = [r for r in claim_rows(lm_summary(gain=-0.05, prefix_ours=0.5), "default") if text in r["claim"]]
    assert {r["reproduced"] for r in no} == {"no"}
