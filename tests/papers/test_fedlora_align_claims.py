"""fedlora_align claims: each row says `no` when its claim is false and `yes` when it holds."""

from neurips26.papers.fedlora_align.claims import claim_rows

METHODS = ["fedit", "ffa_lora", "flora", "fedex_lora", "fedsa_lora", "ideal", "align", "align_no_drift"]


def _summary(holds: bool):
    def entry(acc, col, row):
        return {"acc_global": [acc + 0.002 * k for k in range(3)], "acc_local": [acc] * 3,
                "column": [col + 0.001 * k for k in range(3)], "row": [row + 0.001 * k for k in range(3)]}

    by = {}
    for a, het in (("0.1", 1.0), ("1.0", 0.5), ("10.0", 0.0)):
        by[a] = {}
        for m in METHODS:
            gain = 0.05 if (m == "align") == holds else -0.05
            acc = 0.6 + (gain if m == "align" else 0.0)
            if holds:
                col, row = 0.3 + 0.4 * het, 0.2
            else:
                col, row = 0.5 - 0.3 * het, 0.6
            if m == "align":
                col = col - 0.1 if holds else col + 0.1
            by[a][m] = entry(acc, col, row)
    return {"variants": {"topic_sentiment": {"alphas": ["0.1", "1.0", "10.0"], "seeds": 3, "methods": METHODS,
                                             "by_alpha": by}},
            "report_alphas": ["0.1", "1.0"]}


def test_every_row_can_say_no_and_yes():
    no = claim_rows(_summary(False), "default")
    yes = claim_rows(_summary(True), "default")
    assert len(no) == len(yes) == 3 + 2 * 2 + 2
    for row in no:
        assert row["reproduced"] == "no", row
    for row in yes:
        assert row["reproduced"] == "yes", row


def _lm_summary(holds: bool):
    """The generative variant: two alphas, four methods, mean token accuracy as its score."""
    s = _summary(holds)["variants"]["topic_sentiment"]
    methods = ["fedit", "flora", "ideal", "align"]
    by = {a: {m: s["by_alpha"][a][m] for m in methods} for a in ("0.1", "10.0")}
    return {"variants": {"data_to_text": {"alphas": ["0.1", "10.0"], "seeds": 3, "methods": methods, "by_alpha": by,
                                          "score": "mean token accuracy (teacher-forced)"}},
            "report_alphas": ["0.1", "1.0"]}


def test_generative_rows_can_say_no_and_yes():
    no = claim_rows(_lm_summary(False), "default")
    yes = claim_rows(_lm_summary(True), "default")
    # conflict vs heterogeneity, column vs row, ALIGN's conflict; vs FedIT and vs the strongest at 0.1; vs ideal
    assert len(no) == len(yes) == 3 + 2 + 1
    assert all("data_to_text" in r["claim"] for r in yes)
    assert all("mean token accuracy" in r["metric"] for r in yes if "improves" in r["claim"] or "beats" in r["claim"])
    for row in no:
        assert row["reproduced"] == "no", row
    for row in yes:
        assert row["reproduced"] == "yes", row
