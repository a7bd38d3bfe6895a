"""The baselines: averaging, l1-regularised SVM, plain SVM (the filter without the sparsity
constraint is `method.learn_sparse_halfspace(..., sparsity=None)`).

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
