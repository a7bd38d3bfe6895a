"""The baselines: averaging, sparse (top-s) averaging, l1-regularised SVM with C chosen by
validation, plain SVM (the filter without the sparsity constraint is
`method.learn_sparse_halfspace(..., sparsity=None)`, the constrained hinge without the soft
outlier filter `method.learn_sparse_halfspace(..., soft_filter=False)`).

Sparse averaging keeps the s largest coordinates of the average: attribute-efficient on clean
data (its error does not grow with d beyond the log d of picking the support), with no defence
against malicious points. The l1-SVM's C is picked from a grid by the accuracy on a held-out
share of the training sample, which carries the same malicious points (the learner has no clean
data), and the model is refitted on the whole sample.

Averaging (Servedio 1999): w = sum_i y_i x_i, the estimator that is exact in expectation for
clean isotropic data and has no defence against malicious points. The SVMs are scikit-learn's
liblinear: l1 penalty with the squared hinge (the only l1 form liblinear solves), and the
standard l2-penalised hinge.
"""

from __future__ import annotations

import warnings

import numpy as np


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


def validated_l1_svm(x: np.ndarray, y: np.ndarray, cs: list[float], validation_share: float,
                     seed: int) -> tuple[np.ndarray, float]:
    """l1-SVM with C = the grid value of best held-out accuracy (ties: the smallest C), refitted
    on the whole sample; returns (w, C)."""
    rng = np.random.default_rng([seed, len(y), 17])
    order = rng.permutation(len(y))
    n_val = max(1, int(round(validation_share * len(y))))
    val, fit = order[:n_val], order[n_val:]
    accuracy = [float(np.mean(np.sign(x[val] @ l1_svm(x[fit], y[fit], c, seed)) == y[val])) for c in cs]
    best = cs[int(np.argmax(accuracy))]
    return l1_svm(x, y, best, seed), float(best)
