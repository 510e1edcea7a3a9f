"""The cross-validating estimators' metadata: groups for group splitters, sample weights for
the held-out scores, as scikit-learn's LogisticRegressionCV and a routed GridSearchCV."""
import numpy as np
import pytest
import sklearn
from sklearn.exceptions import UnsetMetadataPassedError
from sklearn.metrics import get_scorer
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, StratifiedKFold

from sparsekit import L1LogisticOBA, L1LogisticOBACV, SparsemaxClassifier, SparsemaxClassifierCV

TIGHT = 1e-11     # warm paths and cold fits meet: the scores agree to rounding


def _data(seed=0, n=150, d=8):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.argmax(X[:, :3] + 0.8 * rng.standard_normal((n, 3)), axis=1)
    return X, y, rng.uniform(0.1, 3.0, n), rng.integers(0, 6, n)


def _pair(kind):
    """(the CV estimator, the estimator it cross-validates, its grid parameter, the grid's
    attribute)."""
    if kind == "l1":
        return (L1LogisticOBACV(Cs=4, tol=TIGHT), L1LogisticOBA(tol=TIGHT), "C", "Cs_")
    return (SparsemaxClassifierCV(alphas=4, tol=TIGHT), SparsemaxClassifier(tol=TIGHT),
            "alpha", "alphas_")


def _grid_scores(est, base, param, attr, X, y, cv, scoring, **fit_params):
    grid = GridSearchCV(base, {param: list(getattr(est, attr))}, cv=cv, scoring=scoring)
    grid.fit(X, y, **fit_params)
    n_folds = est.scores_.shape[0]
    return np.array([grid.cv_results_[f"split{k}_test_score"] for k in range(n_folds)])


def _scores(est):
    """(folds, grid points) for either estimator."""
    return est.scores_.reshape(est.scores_.shape[0], -1)


@pytest.mark.parametrize("kind", ["l1", "sparsemax"])
def test_groups_reach_a_group_splitter_with_routing_enabled(kind):
    X, y, _, groups = _data()
    est, _, _, _ = _pair(kind)
    with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
        est.set_params(cv=GroupKFold(3)).fit(X, y, groups=groups)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = est.set_params(cv=GroupKFold(3)).fit(X, y, groups=groups)
        scores = routed.scores_.copy()
        with pytest.raises(TypeError, match="not routed to any object"):
            est.set_params(cv=KFold(3)).fit(X, y, groups=groups)   # KFold takes no groups
    folds = list(GroupKFold(3).split(X, y, groups))
    for _, test in folds:             # the folds hold whole groups
        assert not set(groups[test]) & set(np.delete(groups, test))
    np.testing.assert_array_equal(scores, est.set_params(cv=folds).fit(X, y).scores_)
    with sklearn.config_context(enable_metadata_routing=True):   # a generator of folds
        generated = est.set_params(cv=GroupKFold(3).split(X, y, groups)).fit(X, y).scores_
    np.testing.assert_array_equal(scores, generated)


@pytest.mark.parametrize("kind, scoring", [("l1", "neg_log_loss"), ("l1", "accuracy"),
                                           ("sparsemax", "accuracy")])
def test_sample_weight_weighs_the_held_out_scores_as_in_a_grid_search(kind, scoring):
    X, y, sw, _ = _data(seed=1)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    est, base, param, attr = _pair(kind)
    est.set_params(cv=cv, scoring=None if kind == "sparsemax" else scoring)
    weighted = _scores(est.fit(X, y, sample_weight=sw))
    # scikit-learn's grid search weighs the held-out scores too (as LogisticRegressionCV)
    grid = _grid_scores(est, base, param, attr, X, y, cv, scoring, sample_weight=sw)
    np.testing.assert_allclose(weighted, grid, rtol=1e-7, atol=1e-9)
    with sklearn.config_context(enable_metadata_routing=True):
        base = _pair(kind)[1].set_fit_request(sample_weight=True)
        for request in (True, False):       # where the scorer asks for the weights or not
            scorer = get_scorer(scoring).set_score_request(sample_weight=request)
            routed = _scores(est.set_params(scoring=scorer).fit(X, y, sample_weight=sw))
            grid = _grid_scores(est, base, param, attr, X, y, cv, scorer, sample_weight=sw)
            np.testing.assert_allclose(routed, grid, rtol=1e-7, atol=1e-9)
            if request:
                np.testing.assert_allclose(routed, weighted, rtol=1e-12)
            else:
                assert np.abs(routed - weighted).max() > 1e-3
        with pytest.raises(UnsetMetadataPassedError, match=r"\[sample_weight\] are passed"):
            est.set_params(scoring=scoring).fit(X, y, sample_weight=sw)


@pytest.mark.parametrize("kind", ["l1", "sparsemax"])
def test_a_scorer_without_sample_weight_scores_unweighted_and_a_weightless_fold_is_refused(
        kind):
    X, y, sw, _ = _data(seed=2)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    est, _, _, _ = _pair(kind)

    def accuracy(model, X, y):
        return float(np.mean(model.predict(X) == y))
    with pytest.warns(UserWarning, match="does not take sample_weight: the held-out rows "
                                         "are scored unweighted"):
        plain = _scores(est.set_params(cv=cv, scoring=accuracy).fit(X, y, sample_weight=sw))
    with sklearn.config_context(enable_metadata_routing=True):
        declined = get_scorer("accuracy").set_score_request(sample_weight=False)
        routed = _scores(est.set_params(scoring=declined).fit(X, y, sample_weight=sw))
    np.testing.assert_allclose(plain, routed, rtol=1e-12)
    halves = np.r_[np.zeros(75), np.ones(75)]
    with pytest.raises(ValueError, match="held-out fold 0 weighs 0 in sample_weight: its "
                                         "score is undefined"):
        est.set_params(cv=KFold(2), scoring=None).fit(X, y, sample_weight=halves)


@pytest.mark.parametrize("kind", ["l1", "sparsemax"])
def test_a_cv_without_folds_or_with_an_empty_held_out_fold_is_refused(kind):
    X, y, _, _ = _data()
    with pytest.raises(ValueError, match=r"cv=\[\] gave no \(train, test\) folds"):
        _pair(kind)[0].set_params(cv=[]).fit(X, y)
    folds = [(np.arange(100), np.arange(100, 150)), (np.arange(150), np.arange(0))]
    with pytest.raises(ValueError, match="held-out fold 1 holds no sample: nothing to score"):
        _pair(kind)[0].set_params(cv=folds).fit(X, y)


@pytest.mark.parametrize("kind", ["l1", "sparsemax"])
@pytest.mark.parametrize("scoring", [None, "neg_log_loss", "f1_macro"])
def test_score_uses_scoring_as_logistic_regression_cv(kind, scoring):
    X, y, w, _ = _data()
    est, _, _, _ = _pair(kind)
    if kind == "sparsemax" and scoring == "neg_log_loss":
        scoring = "neg_brier_score"       # sparsemax gives zero probabilities
    est.set_params(scoring=scoring, cv=3).fit(X[:100], y[:100])
    X_test, y_test, w_test = X[100:], y[100:], w[100:]
    scorer = get_scorer("accuracy" if scoring is None else scoring)
    assert est.score(X_test, y_test) == pytest.approx(scorer(est, X_test, y_test), rel=1e-12)
    weighted = scorer(est, X_test, y_test, sample_weight=w_test)
    assert weighted != pytest.approx(scorer(est, X_test, y_test), rel=1e-6)
    assert est.score(X_test, y_test, w_test) == pytest.approx(weighted, rel=1e-12)
    with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
        est.score(X_test, y_test, groups=np.zeros(len(y_test)))
    with sklearn.config_context(enable_metadata_routing=True):
        if scoring is not None:     # scoring=None's fresh accuracy scorer takes no requests
            requesting = scorer.set_score_request(sample_weight=True)
            routed = est.set_params(scoring=requesting).fit(X[:100], y[:100])
            assert routed.score(X_test, y_test, sample_weight=w_test) == pytest.approx(
                weighted, rel=1e-12)
            est.set_params(scoring=scoring)
        with pytest.raises(UnsetMetadataPassedError):     # as LogisticRegressionCV.score
            est.score(X_test, y_test, sample_weight=w_test)
