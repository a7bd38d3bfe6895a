"""Claims rows of angular_nets, a pure function of the aggregated metrics (`steps.claims_summary`).

The rows, margins and controls are declared in `claims.yaml`; this module computes their numbers
and `core.claims.Sheet` decides them. An entry's id ends in its experiment's key, the experiment
name up to the first "_" (`resnet_cifar10` at paper scale is the `resnet` experiment of the
default scale). Accuracy comparisons pair the methods of one experiment by seed (same data, steps
and optimiser) and, when the runs saved which test examples each method got right, by test
example: the interval is the wider of the two-level paired bootstrap over seeds x test examples
and the paired t over seeds. The 1-bit angular layer binarises its activations after a
full-precision projection G x, so its 1-bit rows are labelled so and it meets two kinds of STE
baseline: BNN / XNOR-Net (sign of the raw input) and `angular_ste` (straight-through sign of the
same projections). Every comparison of an experiment stands on its regime control
`fp_learns__<key>`: the full-precision model reaches ten points above chance, or the
experiment's quantised nets are not compared. "The strongest 1-bit STE baseline" of the
`one_bit` rows is chosen on validation accuracy (`strongest_baseline`, `core.tuning.strongest`)
before any test number is read: the tune step's validation split at the tuning seed where the
experiment is tuned, else a validation draw of a generated data set (its items never test items).
Rows whose sides were tuned to a capped grid edge pass the tuning protocol's notes
(`core.tuning.capped_note`). The planted-model claim ("a small G-gradient
guarantees exact recovery") has two rows: the target declared first, the share of trials with a
final G-gradient norm below 0.005 that miss w*, its Clopper-Pearson interval inside [0, 0.1]
(`planted_error_rate`), and a check under the project's own recovery condition (G-gradient norm
below its threshold, `planted.recovery_threshold`), where every trial must recover w*
(`planted_recovery`). The regime control `fp_learns__<key>` asks for a stated full-precision
accuracy (claims.yaml), not only for learning above chance. Ablation methods (a method entry
with `ablation` in the config: `resample`, `equal_bits`) fill their own rows and never stand for
the 1-bit angular net of the other rows.
"""

from __future__ import annotations

from neurips26.core import claims, tuning

P = "angular_nets"
STE_BINARY = ("bnn", "xnor")
ROWS = ("fp_learns", "matched_ste", "one_bit", "equal_bits", "two_bit", "nu", "resample")
# the planted target row as declared first (claims.yaml, planted_error_rate): "small" is a final
# G-gradient norm below this, at every sample size
PLANTED_SMALL_GRADIENT = 0.005


def _mean(xs):
    return sum(xs) / len(xs)


def experiment_key(name: str) -> str:
    return name.split("_")[0]


def strongest_baseline(e: str, exp: dict) -> tuple[str | None, tuning.Record | None, str]:
    """(name, choice record, why not) of the strongest 1-bit STE baseline on raw signs (BNN,
    XNOR-Net) of one experiment, chosen on the validation accuracies `exp["validation"]` (never on
    test accuracy); (None, None, reason) when the experiment runs none or has no validation score."""
    candidates = [n for n, m in exp["methods"].items() if m["family"] in STE_BINARY
                  and m["weight_bits"] == 1 and m["activation_bits"] == 1]
    if not candidates:
        return None, None, "no 1-bit STE baseline"
    scores = exp.get("validation") or {}
    missing = [n for n in candidates if scores.get(n) is None]
    if len(candidates) == 1 and missing:
        return candidates[0], None, ""  # one candidate: nothing to choose
    if missing:
        return None, None, (f"no validation score for {', '.join(missing)} to choose the strongest 1-bit STE "
                            "baseline on (a fixed data set without a tune step)")
    name, rec = tuning.strongest({n: scores[n] for n in candidates}, candidates=candidates, setting=e,
                                 metric="accuracy", seed=exp.get("validation_seed", ""),
                                 split=exp.get("validation_split", "validation"))
    return name, rec, ""


def _experiment_rows(sheet: claims.Sheet, e: str, exp: dict, key: str, declared: set[str],
                     records: list) -> None:
    methods = exp["methods"]
    fixed = f"replicates hold fixed: the {exp['data']} train and test sets" if exp["data_fixed"] else ""

    def at_bits(families, bits):
        return [n for n, m in methods.items() if m["family"] in families and not m.get("ablation")
                and m["weight_bits"] == bits and m["activation_bits"] == bits]

    def ablation(kind):
        return [n for n, m in methods.items() if m.get("ablation") == kind]

    def compare(row, method, mvals, baseline, bvals, how="", tuned_as=None):
        id = f"{row}__{key}"
        if id not in declared:
            raise ValueError(f"{P}: experiment '{e}' measures '{id}', which claims.yaml does not declare")
        items = mvals["correct"] is not None and bvals["correct"] is not None
        m_tuned, b_tuned = tuned_as or (method, baseline)
        sheet.comparison(id, mvals["accuracy"], bvals["accuracy"], method=method, baseline=baseline,
                         method_items=mvals["correct"] if items else None,
                         baseline_items=bvals["correct"] if items else None,
                         how="; ".join(filter(None, (f"experiment {e} ({exp['data']})", how, fixed))),
                         method_capped=tuning.capped_note(records, m_tuned, e),
                         baseline_capped=tuning.capped_note(records, b_tuned, e))
        done.add(id)

    done: set[str] = set()
    fp = [n for n, m in methods.items() if m["family"] == "fp"]
    classes = exp.get("num_classes")
    if fp:
        chance = f", chance {1.0 / classes:.3g}" if classes else ""
        sheet.target(f"fp_learns__{key}", values=list(methods[fp[0]]["accuracy"]), method=fp[0],
                     how=f"experiment {e} ({exp['data']}{f', {classes} classes' if classes else ''}{chance})")
    else:
        sheet.untested(f"fp_learns__{key}", "the experiment trains no full-precision model")
    done.add(f"fp_learns__{key}")
    ang1, binaries = at_bits(("angular",), 1), at_bits(STE_BINARY, 1)
    if ang1 and binaries:
        best, choice, why = strongest_baseline(e, exp)
        if best is None:
            sheet.untested(f"one_bit__{key}", why)
            done.add(f"one_bit__{key}")
        else:
            compare("one_bit", ang1[0], methods[ang1[0]], best, methods[best],
                    how=(f"the strongest of {', '.join(choice.grid)} on {choice.split} accuracy: {best}" if choice
                         else f"{best}, the experiment's only 1-bit STE baseline on raw signs"))
    matched = at_bits(("angular_ste",), 1)
    if ang1 and matched:
        compare("matched_ste", ang1[0], methods[ang1[0]], matched[0], methods[matched[0]])
    eq, bnn = ablation("equal_bits"), [n for n in binaries if methods[n]["family"] == "bnn"]
    if eq and bnn and f"equal_bits__{key}" in declared:
        bits = {n: methods[n].get("storage_bytes") for n in (eq[0], bnn[0])}
        compare("equal_bits", eq[0], methods[eq[0]], bnn[0], methods[bnn[0]],
                how=("stored weights (bit-packed, whole net): " + ", ".join(f"{n} {b / 1e3:.3g} kB" for n, b in
                                                                            bits.items() if b)) if all(bits.values()) else "")
    res = ablation("resample")
    if ang1 and res and f"resample__{key}" in declared:
        compare("resample", res[0], methods[res[0]], ang1[0], methods[ang1[0]])
    ang2, lsq2 = at_bits(("angular",), 2), at_bits(("lsq",), 2)
    if ang2 and lsq2:
        compare("two_bit", ang2[0], methods[ang2[0]], lsq2[0], methods[lsq2[0]])
    nus = list(exp["nu_study"])
    if len(nus) >= 2:
        lo, hi = min(nus, key=float), max(nus, key=float)
        base = exp.get("nu_study_method", "")
        compare("nu", f"nu={hi}", exp["nu_study"][hi], f"nu={lo}", exp["nu_study"][lo], tuned_as=(base, base))
    for id in sorted(declared - done):
        if id.endswith(f"__{key}"):
            what = {"one_bit": "a 1-bit angular net and BNN or XNOR-Net", "matched_ste": "a 1-bit angular net and "
                    "the STE on projected signs", "two_bit": "a 2-bit angular net and LSQ at 2 bits",
                    "nu": "a nu study of two or more values",
                    "equal_bits": "a 1-bit angular net at N = d (ablation 'equal_bits') and BNN",
                    "resample": "a 1-bit angular net with G resampled (ablation 'resample') and one with a fixed G"}[
                        id.split("__")[0]]
            sheet.untested(id, f"experiment {e} runs no {what}")


def claim_rows(summary: dict, scale: str, records: list | None = None) -> list[dict]:
    """The claims rows; `records`: the tuning records (core.tuning.Record) of the run, whose capped
    knobs keep a row from reading yes (baseline capped) or no (method capped)."""
    records = list(records or [])
    sheet = claims.Sheet(P, scale)
    declared = {id for id in sheet.order if "__" in id}
    keys = {}
    for e in summary["experiments"]:
        k = experiment_key(e)
        if k in keys:
            raise ValueError(f"{P}: experiments '{keys[k]}' and '{e}' share the key '{k}' of their claims rows")
        if f"fp_learns__{k}" not in declared:
            raise ValueError(f"{P}: experiment '{e}' has no rows in claims.yaml (ids ending in '__{k}')")
        keys[k] = e
    for k, e in keys.items():
        _experiment_rows(sheet, e, summary["experiments"][e], k, declared, records)
    for id in sheet.order:
        if "__" in id and id.split("__")[1] not in keys:
            sheet.untested(id, f"no experiment '{id.split('__')[1]}' in run_variants at this scale")
    planted_row(sheet, summary["planted"])
    return sheet.rows()


def planted_row(sheet: claims.Sheet, planted: dict) -> None:
    """The target declared first (the share of small-gradient trials that miss w*, against 10%)
    and the check under the project's recovery condition (misses among the trials under it, which
    must be 0)."""
    small = [t for t in planted["trials"] if t["g_gradient_norm"] < PLANTED_SMALL_GRADIENT]
    missed = sum(not t["recovered"] for t in small)
    sheet.target("planted_error_rate", successes=missed, trials=len(small),
                 how=(f"{missed} of {len(small)} trials with a final G-gradient norm < {PLANTED_SMALL_GRADIENT:g} "
                      f"(n = {', '.join(str(n) for n in sorted({t['n'] for t in small}))}) miss w*"),
                 untested="" if small else f"no trial ended with a G-gradient norm below {PLANTED_SMALL_GRADIENT:g}")
    margin = planted["condition_margin"]
    under = [t for t in planted["trials"] if t["g_gradient_norm"] < t["threshold"]]
    misses = sum(not t["recovered"] for t in under)
    sheet.check("planted_recovery", float(misses) if under else None, n=len(under),
                how=(f"condition: final G-gradient norm < {margin:g} lambda_min(H*) / sqrt(d); {misses} of {len(under)} "
                     "trials under the condition miss w*"),
                untested="" if under else "no trial ended under the recovery condition")
