"""The baselines: averaging, sparse (top-s) averaging, l1-regularised SVM and plain SVM, each
SVM with C chosen by validation (the filter without the sparsity constraint is
`method.learn_sparse_halfspace(..., sparsity=None)`, the constrained hinge without the soft
outlier filter `method.learn_sparse_halfspace(..., soft_filter=False)`).

Sparse averaging keeps the s largest coordinates of the average: attribute-efficient on clean
data (its error does not grow with d beyond the log d of picking the support), with no defence
against malicious points. Both SVMs' C is tuned by the tuning protocol (core.tuning.search): one
log-spaced grid for both, scored by the accuracy on a held-out share of the training sample, which
carries the same malicious points (the learner has no clean data), extended while the best C sits
on an edge; the model is then refitted on the whole sample.

Averaging (Servedio 1999): w = sum_i y_i x_i, the estimator that is exact in expectation for
clean isotropic data and has no defence against malicious points. The SVMs are scikit-learn's
liblinear: l1 penalty with the squared hinge (the only l1 form liblinear solves), and the
standard l2-penalised hinge.
"""

from __future__ import annotations

import warnings

import numpy as np

from neurips26.core import tuning


def averaging(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return y @ x / len(y)


def l1_svm(x: np.ndarray, y: np.ndarray, c: float, seed: int) -> np.ndarray:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C=c, fit_intercept=False,
                          max_iter=2000, random_state=seed).fit(x, y)
    return model.coef_.ravel()


def svm(x: np.ndarray, y: np.ndarray, c: float, seed: int) -> np.ndarray:
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LinearSVC(penalty="l2", loss="hinge", dual=True, C=c, fit_intercept=False,
                          max_iter=5000, random_state=seed).fit(x, y)
    return model.coef_.ravel()


def sparse_averaging(x: np.ndarray, y: np.ndarray, s: int) -> np.ndarray:
    """The average y x with all but its s largest |coordinates| set to zero."""
    w = averaging(x, y)
    w[np.argsort(-np.abs(w), kind="stable")[s:]] = 0.0
    return w


def tuned_svm(kind: str, x: np.ndarray, y: np.ndarray, cs: list[float], validation_share: float, seed: int, *,
              extensions: int = tuning.DEFAULT_EXTENSIONS, setting: str = "", method: str = "",
              ) -> tuple[np.ndarray, float, list]:
    """The l1-SVM (kind "l1") or SVM (kind "l2") with C tuned by the protocol on held-out accuracy
    (a share of the corrupted training sample), refitted on the whole sample; returns (w, C, records)."""
    fit_fn = {"l1": l1_svm, "l2": svm}[kind]
    rng = np.random.default_rng([seed, len(y), 17])
    order = rng.permutation(len(y))
    n_val = max(1, int(round(validation_share * len(y))))
    val, fit = order[:n_val], order[n_val:]

    def accuracy(C):
        return float(np.mean(np.sign(x[val] @ fit_fn(x[fit], y[fit], C, seed)) == y[val]))

    chosen, records = tuning.search(accuracy, {"C": cs}, method=method or kind, setting=setting,
                                    metric="held-out accuracy (corrupted sample)", maximize=True,
                                    extensions=extensions, seed=seed,
                                    split=f"held-out {validation_share:g} of the training sample")
    c = float(chosen["C"])
    return fit_fn(x, y, c, seed), c, records
