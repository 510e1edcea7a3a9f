"""Conventions every estimator follows alike (scikit-learn's, where it has one)."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier
from sparsekit.linear_model import _extreme_softmax, _sparsemax

#: every configuration that should pass scikit-learn's checks; the second L1LogisticOBA
#: solves to 1e-10, as the sample-weight equivalence check compares predict_proba to 1e-7
#: relative, finer than the default tol (1e-8 on the ISTA residual) promises
CHECKED = [
    SparsemaxClassifier(), SparsemaxClassifier(solver="nqn"),
    SparsemaxClassifier(solver="newton-cg"), SparsemaxClassifier(solver="sdca", random_state=0),
    L1LogisticOBA(), L1LogisticOBA(sparse_coef=True, C=0.5, tol=1e-10),
    *[ExtremeSoftmaxSGD(method, random_state=0) for method in ("implicit", "umax", "ove")],
]


def _expected_failures(estimator):
    if isinstance(estimator, L1LogisticOBA) and estimator.sparse_coef:
        return {"check_class_weight_balanced_linear_classifier":
                "the check compares coef_ with assert_allclose, which takes no sparse matrix"}
    return {SparsemaxClassifier: _sparsemax.EXPECTED_FAILED_CHECKS,
            ExtremeSoftmaxSGD: _extreme_softmax.EXPECTED_FAILED_CHECKS}.get(type(estimator), {})


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failures)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # convergence on the checks' tiny data sets
        check(estimator)

ESTIMATORS = {
    "SparsemaxClassifier": lambda: SparsemaxClassifier(),
    "SparsemaxClassifier(newton-cg)": lambda: SparsemaxClassifier(solver="newton-cg"),
    "SparsemaxClassifier(sdca)": lambda: SparsemaxClassifier(solver="sdca"),
    "L1LogisticOBA": lambda: L1LogisticOBA(),
    "ExtremeSoftmaxSGD": lambda: ExtremeSoftmaxSGD(n_epochs=3, random_state=0),
}


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return X / X.max(axis=0), y


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("sparse", [False, True])
def test_coef_and_probabilities_follow_the_dtype_of_X(iris, name, sparse):
    """float32 X gives float32 coef_, intercept_ and probabilities; float64 X float64 ones
    (a float32 model asked about float64 X answers in float64)."""
    X, y = iris
    for dtype in (np.float32, np.float64):
        Xd = X.astype(dtype)
        Xd = sp.csr_matrix(Xd) if sparse else Xd
        est = ESTIMATORS[name]().fit(Xd, y)
        assert est.coef_.dtype == est.intercept_.dtype == dtype
        for method in ("predict_proba", "decision_function"):
            assert getattr(est, method)(Xd).dtype == dtype, method
            assert getattr(est, method)(X).dtype == np.float64, method
        assert np.isfinite(est.predict_proba(Xd)).all()


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_method_before_fit_raises_not_fitted(iris, name):
    X, y = iris
    est = ESTIMATORS[name]()
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(NotFittedError):
            getattr(est, method)(X)
    with pytest.raises(NotFittedError):
        est.score(X, y)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_failed_refit_keeps_the_fitted_model(iris, name):
    X, y = iris
    est = ESTIMATORS[name]().fit(X, y)
    before = {k: np.copy(v) for k, v in vars(est).items()
              if k.endswith("_") and isinstance(v, np.ndarray)}
    with pytest.raises(ValueError):
        est.fit(np.c_[X, X], np.zeros(len(y)))           # one class: refused
    with pytest.raises(ValueError):
        est.fit(X[:, :2], y[:-1])                         # inconsistent lengths
    for k, v in before.items():
        np.testing.assert_array_equal(getattr(est, k), v)
    assert est.n_features_in_ == X.shape[1]
    est.predict(X)
