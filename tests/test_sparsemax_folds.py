"""SparsemaxClassifierCV's folds: the check that every training fold holds two classes, a
fold's path (a class its training rows lack gets zero weights), the held-out accuracy
without the input checks, and the fits' warnings recorded."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sparsekit.linear_model import SparsemaxClassifier
from sparsekit.linear_model._sparsemax_folds import (_path, _recorded, check_training_folds,
                                                     held_out_accuracy)


def _data(n=90, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.argmax(X[:, :3] + 0.5 * rng.standard_normal((n, 3)), axis=1)
    return X, y


def test_every_training_fold_holds_two_classes():
    y = np.array([0, 0, 1, 1, 2, 2])
    check_training_folds(y, [(np.array([0, 2]), np.array([1]))])
    with pytest.raises(ValueError, match=r"training fold 1 holds only the class 2; use fewer "
                                         r"folds or a stratified cv"):
        check_training_folds(y, [(np.array([0, 2]), None), (np.array([4, 5]), None)])
    with pytest.raises(ValueError, match="training fold 0 holds no sample"):
        check_training_folds(y, [(np.array([], dtype=int), None)])


def test_a_path_gives_a_class_the_fold_lacks_zero_weights_and_the_lowest_intercept():
    X, y = _data()
    train = y != 2                                        # the fold lacks class 2
    alphas = np.array([1.0, 0.1, 0.01])
    est = SparsemaxClassifier(warm_start=True, tol=1e-8)
    out = _path(est, alphas, lambda est: est.fit(X[train], y[train]) is est,
                lambda est: est.score(X[train], y[train]), np.array([0, 1, 2]))
    assert out["coefs"].shape == (3, 3, 4) and out["intercepts"].shape == (3, 3)
    assert out["failed"] == 0 and np.all(out["n_iter"] > 0)
    assert not out["coefs"][:, 2].any()
    np.testing.assert_array_equal(out["intercepts"][:, 2], out["intercepts"][:, :2].min(axis=1))
    last = SparsemaxClassifier(alpha=0.01, tol=1e-8).fit(X[train], y[train])
    np.testing.assert_allclose(out["coefs"][-1, :2], last.coef_, atol=1e-5)
    assert out["scores"][-1] == pytest.approx(last.score(X[train], y[train]), abs=0.02)


def test_held_out_accuracy_is_the_models_score():
    X, y = _data(seed=1)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, y.size)
    est = SparsemaxClassifier().fit(X[:60], y[:60])
    assert held_out_accuracy(est, X[60:], y[60:]) == pytest.approx(est.score(X[60:], y[60:]))
    assert held_out_accuracy(est, X[60:], y[60:, None], weights[60:]) == pytest.approx(
        est.score(X[60:], y[60:], sample_weight=weights[60:]))


def test_the_fits_warnings_are_recorded_not_shown():
    def path():
        warnings.warn("slow", ConvergenceWarning)
        warnings.warn("slow", ConvergenceWarning)
        warnings.warn("odd labels", UserWarning)
        return {"scores": 1.0}

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _recorded(path)
    assert out["failed"] == 2 and out["warnings"] == [(UserWarning, "odd labels")]
    assert out["scores"] == 1.0
