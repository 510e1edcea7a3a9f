"""L1LogisticOBACV: the grid scored as a grid search of L1LogisticOBA would score it, the
chosen model, the grid of C, errors."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.utils._param_validation import InvalidParameterError

from _callbacks import Recorder
from _gpu import on_device
from sparsekit.linear_model import L1LogisticOBA, L1LogisticOBACV

TIGHT = 1e-11   # every solve near its minimum: scores comparable to 1e-7


def _data(n_classes, seed=0, n=120, d=12, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.3] = 0
    scores = X[:, :n_classes] + 0.8 * rng.standard_normal((n, n_classes))
    y = np.argmax(scores, axis=1) if n_classes > 2 else (scores[:, 0] > 0).astype(int)
    return (sp.csr_matrix(X) if sparse else X), y


CASES = {
    "binary": (2, {}),
    "binary, no intercept, sparse": (2, {"fit_intercept": False}),
    "one-vs-rest": (3, {}),
    "multinomial, elastic net": (3, {"multiclass": "multinomial", "l1_ratio": 0.6}),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("scoring", ["neg_log_loss", None])
def test_scores_are_those_of_a_grid_search_over_cold_fits(case, scoring):
    """Every fold's warm-started path scores each C as a cold L1LogisticOBA fit on that
    fold does (the same folds and grid through GridSearchCV), and the refitted model is the
    cold fit at the chosen C on all the data."""
    n_classes, params = CASES[case]
    X, y = _data(n_classes, sparse="sparse" in case)
    params = dict(params)
    l1_ratio = params.pop("l1_ratio", 1.0)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    est = L1LogisticOBACV(Cs=6, l1_ratios=[l1_ratio], cv=cv, scoring=scoring, tol=TIGHT,
                          **params).fit(X, y)
    assert est.Cs_.shape == (6,) and np.all(np.diff(est.Cs_) > 0)
    search = GridSearchCV(L1LogisticOBA(tol=TIGHT, l1_ratio=l1_ratio, **params),
                          {"C": est.Cs_}, cv=cv, scoring=scoring).fit(X, y)
    for f in range(4):
        np.testing.assert_allclose(est.scores_[f, 0], search.cv_results_[f"split{f}_test_score"],
                                   rtol=1e-7, atol=1e-9)
    assert est.C_ == search.best_params_["C"] and est.l1_ratio_ == l1_ratio
    np.testing.assert_allclose(est.coef_, search.best_estimator_.coef_, atol=1e-6)
    np.testing.assert_allclose(est.intercept_, search.best_estimator_.intercept_, atol=1e-6)
    rows = 1 if n_classes == 2 else n_classes
    assert est.coefs_paths_.shape == (4, 1, 6, rows, X.shape[1] + est.fit_intercept)
    assert est.n_iter_.shape == (4, 1, 6) and est.n_iter_.sum() > 0
    np.testing.assert_array_equal(est.predict(X), search.best_estimator_.predict(X))


def test_the_default_grid_starts_where_the_first_coefficient_leaves_zero():
    X, y = _data(3, seed=1)
    est = L1LogisticOBACV(Cs=5, cv=3, l1_ratios=[0.5, 1.0]).fit(X, y)
    np.testing.assert_allclose(est.Cs_[-1] / est.Cs_[0], 2e4, rtol=1e-9)   # (1/0.5) 10⁴
    c_min = est.Cs_[0] / 0.5            # ℓ1: the smallest C of any one-vs-rest problem
    assert not np.any(L1LogisticOBA(C=0.999 * c_min).fit(X, y).coef_)
    assert np.any(L1LogisticOBA(C=1.01 * c_min).fit(X, y).coef_)
    assert est.scores_.shape == (3, 2, 5)
    assert est.l1_ratio_ in (0.5, 1.0)


def test_ties_go_to_the_smaller_C_and_an_array_grid_is_sorted():
    X, y = _data(2)
    est = L1LogisticOBACV(Cs=[1e-6, 1e-7, 1.0], cv=3).fit(X, y)
    np.testing.assert_array_equal(est.Cs_, [1e-7, 1e-6, 1.0])
    assert not est.coefs_paths_[:, :, :2, :, :-1].any()    # w = 0 below C_min
    np.testing.assert_array_equal(est.scores_[:, 0, 0], est.scores_[:, 0, 1])
    assert est.C_ in (1e-7, 1.0)       # the two null models tie: the smaller C wins


def test_without_refit_the_model_averages_the_folds_best_solutions():
    X, y = _data(3, seed=2)
    est = L1LogisticOBACV(Cs=4, cv=3, refit=False, tol=TIGHT).fit(X, y)
    best = [np.unravel_index(np.argmax(s), s.shape) for s in est.scores_]
    coef = np.mean([est.coefs_paths_[f, r, c] for f, (r, c) in enumerate(best)], axis=0)
    np.testing.assert_allclose(est.coef_, coef[:, :-1])
    np.testing.assert_allclose(est.intercept_, coef[:, -1])
    assert est.C_ == pytest.approx(np.mean([est.Cs_[c] for _, c in best]))
    assert np.all(np.isnan(est.optimality_))
    assert est.predict_proba(X).shape == (len(y), 3)


def test_balanced_class_weights_come_from_all_the_data():
    X, y = _data(3, seed=3)
    y[:60] = 0                                        # unbalanced classes
    totals = np.bincount(y)
    weights = {k: len(y) / (3 * totals[k]) for k in range(3)}
    a = L1LogisticOBACV(Cs=3, cv=3, class_weight="balanced", tol=TIGHT).fit(X, y)
    b = L1LogisticOBACV(Cs=3, cv=3, class_weight=weights, tol=TIGHT).fit(X, y)
    np.testing.assert_allclose(a.scores_, b.scores_, rtol=1e-9)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)


def test_sample_weight_reaches_every_fold_and_the_refit():
    X, y = _data(2, seed=4)
    sw = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    est = L1LogisticOBACV(Cs=4, cv=cv, tol=TIGHT, scoring="accuracy").fit(X, y, sample_weight=sw)
    for f, (train, test) in enumerate(cv.split(X, y)):
        for c, C in enumerate(est.Cs_):
            cold = L1LogisticOBA(C=C, tol=TIGHT).fit(X[train], y[train], sample_weight=sw[train])
            np.testing.assert_allclose(est.coefs_paths_[f, 0, c, 0, :-1], cold.coef_[0],
                                       atol=1e-6)
    cold = L1LogisticOBA(C=est.C_, tol=TIGHT).fit(X, y, sample_weight=sw)
    np.testing.assert_allclose(est.coef_, cold.coef_, atol=1e-6)


@pytest.mark.parametrize("n_classes, multiclass", [(2, "ovr"), (3, "ovr"), (3, "multinomial")])
def test_sparse_paths_hold_the_dense_paths_row_by_row(n_classes, multiclass):
    X, y = _data(n_classes, seed=9, sparse=True)
    params = dict(Cs=3, cv=3, l1_ratios=[0.7, 1.0], multiclass=multiclass)
    dense = L1LogisticOBACV(**params).fit(X, y)
    sparse = L1LogisticOBACV(sparse_coef=True, **params).fit(X, y)
    assert sp.issparse(sparse.coefs_paths_) and sp.issparse(sparse.coef_)
    np.testing.assert_array_equal(sparse.coefs_paths_.toarray().reshape(
        dense.coefs_paths_.shape), dense.coefs_paths_)
    # the scorers' margins: a sparse coef_ takes another product (rounding only)
    np.testing.assert_allclose(sparse.scores_, dense.scores_, rtol=1e-12)
    np.testing.assert_allclose(sparse.coef_.toarray(), dense.coef_, rtol=1e-9, atol=1e-12)


def test_processes_change_nothing_and_float32_stays_float32():
    X, y = _data(3, seed=5, sparse=True)
    a = L1LogisticOBACV(Cs=4, cv=3).fit(X, y)
    b = L1LogisticOBACV(Cs=4, cv=3, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.scores_, b.scores_)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    c = L1LogisticOBACV(Cs=4, cv=3, sparse_coef=True).fit(X.astype(np.float32), y)
    assert sp.issparse(c.coef_) and c.coef_.dtype == np.float32
    assert c.predict_proba(X.astype(np.float32)).dtype == np.float32


def test_a_held_out_fold_without_some_class_is_scored_by_the_log_loss():
    X, y = _data(3, seed=6)
    order = np.argsort(y, kind="stable")                # class 2 only in the last fold
    X, y = X[order], y[order]
    cv = [(np.arange(0, 100), np.arange(100, 120)), (np.arange(20, 120), np.arange(0, 20))]
    assert set(y[:20]) != set(y) and set(y[:100]) == set(y)
    est = L1LogisticOBACV(Cs=3, cv=cv).fit(X, y)
    assert np.all(np.isfinite(est.scores_))


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_a_class_rarer_than_the_folds_is_fit_as_a_grid_search_fits_it(multiclass):
    """A class of one sample is absent from the training fold whose test rows hold it: that
    fold's models give it zero weights and a probability of about 0 (the fold's model of a
    grid search lacks it), and the others are those of a grid search."""
    X, y = _data(3, seed=11)
    y[0] = 9
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The least populated class")
        warnings.simplefilter("error", ConvergenceWarning)
        est = L1LogisticOBACV(Cs=4, cv=cv, scoring="accuracy", tol=TIGHT,
                              multiclass=multiclass).fit(X, y)
        search = GridSearchCV(L1LogisticOBA(tol=TIGHT, multiclass=multiclass),
                              {"C": est.Cs_}, cv=cv).fit(X, y)
        folds = list(cv.split(X, y))
    for f, (train, _) in enumerate(folds):
        np.testing.assert_array_equal(est.scores_[f, 0],
                                      search.cv_results_[f"split{f}_test_score"])
        rare = est.coefs_paths_[f, 0, :, 3]
        if 0 in train:
            assert rare[-1, :-1].any()          # the sample is fit at the largest C
            continue
        assert not rare[:, :-1].any()
        assert np.all(rare[:, -1] < est.coefs_paths_[f, 0, :, :3, -1].min(axis=1) - 20)
        for block in est.coefs_paths_[f, 0]:
            model = est._fold_model(block, X.dtype, multiclass == "multinomial")
            assert model.predict_proba(X)[:, 3].max() < 1e-10
    assert est.C_ == search.best_params_["C"]
    # (with four classes a column's multinomial weights may shift together at no cost)
    np.testing.assert_allclose(est.predict_proba(X), search.best_estimator_.predict_proba(X),
                               atol=1e-7)


def test_errors_are_clear():
    X, y = _data(3, seed=7)
    with pytest.raises(ValueError, match="l1_ratios must hold numbers in"):
        L1LogisticOBACV(l1_ratios=[0.0, 1.0]).fit(X, y)
    for Cs in ([1.0, -1.0], [], [[1.0, 2.0]], ["a", 1.0]):
        with pytest.raises(ValueError, match="Cs must be a number of C values .* or a non-empty "
                                             "1-D list of positive finite numbers, got"):
            L1LogisticOBACV(Cs=Cs).fit(X, y)
    with pytest.raises(ValueError, match="smallest C that gives a nonzero w is inf, no start"):
        L1LogisticOBACV().fit(X * 1e-310, y)          # subnormal entries: no default grid
    with pytest.raises(InvalidParameterError):
        L1LogisticOBACV(scoring="no such score").fit(X, y)
    with pytest.raises(InvalidParameterError):
        L1LogisticOBACV(Cs=0).fit(X, y)
    two = np.sort(y % 2)
    with pytest.raises(ValueError, match="training fold 1 weighs only the class 0: every "
                                         "training fold needs two classes"):
        L1LogisticOBACV(cv=KFold(2)).fit(X, two)
    halves = np.r_[np.zeros(60), np.ones(60)]
    with pytest.raises(ValueError, match="training fold 0 weighs no sample"):
        L1LogisticOBACV(cv=[(np.arange(60), np.arange(60, 120))]).fit(X, y, halves)
    with pytest.raises(ValueError, match="held-out fold 0 weighs 0 in sample_weight: its "
                                         "score is undefined"):
        L1LogisticOBACV(cv=KFold(2)).fit(X, y, sample_weight=halves)
    with pytest.raises(ValueError, match="n_splits=5 cannot be greater"):
        L1LogisticOBACV().fit(X[:8], y[:8])
    est = L1LogisticOBACV(Cs=3, cv=3).fit(X, y)
    coef = est.coef_.copy()
    with pytest.raises(ValueError):
        est.fit(X, np.zeros(len(y)))                    # one class
    np.testing.assert_array_equal(est.coef_, coef)


def test_a_dense_coefs_paths_larger_than_half_the_memory_is_refused(monkeypatch):
    import sparsekit.utils._validation as module
    X, y = _data(3, seed=8)
    est = L1LogisticOBACV(Cs=4, cv=3)
    # 3 folds x 1 l1_ratio x 4 Cs x 3 rows x 13 columns of 8 bytes: 3,744 bytes
    monkeypatch.setattr(module, "physical_memory", lambda: 5000)
    with pytest.raises(ValueError, match=r"coefs_paths_ would take 0.0 GiB as a dense array "
                                         r"\(3 folds x 1 l1_ratios x 4 Cs x 3 rows x 13 "
                                         r"columns\), more than half .* sparse_coef=True"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    assert sp.issparse(est.set_params(sparse_coef=True).fit(X, y).coefs_paths_)
    monkeypatch.setattr(module, "physical_memory", lambda: 7500)
    assert est.set_params(sparse_coef=False).fit(X, y).coefs_paths_.shape == (3, 1, 4, 3, 13)
    monkeypatch.setattr(module, "physical_memory", lambda: None)   # the OS does not say
    assert est.fit(X, y).coefs_paths_.shape == (3, 1, 4, 3, 13)


DEVICE_CASES = {
    "binary, sparse, weights, folds with repeated rows": (
        2, dict(Cs=4, sparse=True), "weights"),
    "one-vs-rest, dense, balanced, accuracy": (
        3, dict(Cs=[0.03, 0.3, 3.0], class_weight="balanced", scoring="accuracy"), None),
    "multinomial, sparse, elastic net": (
        3, dict(Cs=[0.05, 0.5], l1_ratios=[0.5, 1.0], multiclass="multinomial",
                sparse=True), None),
    "binary, float32, no refit": (2, dict(Cs=3, refit=False, dtype=np.float32), None),
}


@pytest.mark.parametrize("case", DEVICE_CASES)
def test_cross_validation_on_the_gpu_is_the_cpu_one(cupy_backend, monkeypatch, case):
    """device="cuda": the folds' paths weigh their training rows in device datafits on all
    of X and the held-out margins are device products; the grid, the scores, the paths
    and the refit equal the CPU's, from device X and from host X (copied once)."""
    import sparsekit.linear_model._l1_problems as one
    import sparsekit.linear_model._l1_folds as module

    cp = cupy_backend
    made, block = [], one.device_block
    for where in (one, module):
        monkeypatch.setattr(where, "device_block",
                            lambda *a, **kw: made.append(a[-1]) or block(*a, **kw))
    n_classes, params, extra = DEVICE_CASES[case]
    params = dict(params)
    sparse, dtype = params.pop("sparse", False), params.pop("dtype", np.float64)
    X, y = _data(n_classes, seed=21, sparse=sparse)
    X = X.astype(dtype)
    fit = {}
    cv = 3
    if extra == "weights":
        rng = np.random.default_rng(3)
        fit["sample_weight"] = rng.uniform(0.2, 2.0, y.size)
        order = rng.permutation(y.size)     # unsorted held-out rows, repeated training rows
        cv = [(np.r_[order[40:], order[40:60]], order[:40]),
              (np.r_[order[:80], order[:10]], order[80:])]
    params.update(cv=cv, tol=TIGHT)
    cpu = L1LogisticOBACV(**params).fit(X, y, **fit)
    rtol = 1e-4 if dtype == np.float32 else 1e-7
    problems = [None] if "multinomial" in case else [1] if n_classes == 2 else [0, 1, 2]
    solves = (isinstance(params["Cs"], int) + len(cv if isinstance(cv, list) else range(cv))
              + ("no refit" not in case))
    for X_fit in (on_device(cp, X), X):
        made.clear()
        gpu = L1LogisticOBACV(device="cuda", **params).fit(X_fit, y, **fit)
        assert made == problems * solves     # the grid's span, the folds', the refit's
        np.testing.assert_allclose(gpu.Cs_, cpu.Cs_, rtol=1e-12)
        np.testing.assert_allclose(gpu.scores_, cpu.scores_, rtol=rtol, atol=1e-9)
        np.testing.assert_allclose(gpu.coefs_paths_, cpu.coefs_paths_, rtol=1e-4, atol=1e-5)
        assert gpu.C_ == pytest.approx(cpu.C_, rel=1e-12)
        assert gpu.l1_ratio_ == cpu.l1_ratio_
        assert type(gpu.coef_) is np.ndarray and gpu.coef_.dtype == cpu.coef_.dtype
        np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(gpu.classes_, cpu.classes_)
        assert gpu.n_features_in_ == X.shape[1]
        assert gpu.score(X, y) == pytest.approx(cpu.score(X, y), rel=1e-5)


def test_device_input_errors(cupy_backend):
    """CuPy X needs device="cuda" (as L1LogisticOBA); bad labels and weights fail on the
    host before any solve, as on the CPU."""
    X, y = _data(2)
    Xd = cupy_backend.asarray(X)
    with pytest.raises(TypeError, match="X is on the GPU .* device='cpu'"):
        L1LogisticOBACV().fit(Xd, y)
    with pytest.raises(ValueError, match="y must have shape"):
        L1LogisticOBACV(device="cuda").fit(Xd, y[:-1])
    with pytest.raises(ValueError, match="Negative values in data passed to `sample_weight`"):
        L1LogisticOBACV(device="cuda").fit(Xd, y, sample_weight=-np.ones(y.size))
    with pytest.raises(ValueError, match="training fold 0 weighs only the class 1"):
        L1LogisticOBACV(device="cuda", cv=[(np.flatnonzero(y == 1), np.arange(10))]).fit(
            Xd, y)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        L1LogisticOBACV(device="cuda").fit(cupy_backend.asarray(bad), y)


def test_verbose_prints_a_line_per_path_and_the_choice(capsys):
    X, y = _data(3, seed=10)
    L1LogisticOBACV(Cs=3, cv=2, verbose=1).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("[L1LogisticOBACV]")]
    assert sum("fold " in line and "3 solves" in line for line in lines) == 6   # 2 folds x 3
    assert "fold 2/2, class 2: 3 solves" in "\n".join(lines)
    assert lines[-1].startswith("[L1LogisticOBACV] C = ")
    assert lines[-1].endswith("refit on all the data")


def test_too_few_iterations_warn():
    X, y = _data(2, seed=8)
    with pytest.warns(ConvergenceWarning, match="did not converge in 1 iterations for"):
        L1LogisticOBACV(Cs=4, cv=3, max_iter=1).fit(X, y)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_folds_center_columns_far_from_zero_as_the_fit_does(multiclass):
    """A column far from 0 (a year) is centered in each fold's solves: the scores, the C
    chosen and the model are those of X centered by hand, the intercepts moved back."""
    from sklearn.datasets import make_classification
    X, y = make_classification(600, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=0)
    X[:, 0] = 2012.0 + 5.0 * X[:, 0]
    shift = np.zeros(6)
    shift[0] = 2012.0
    kw = dict(Cs=[0.05, 0.5, 5.0], cv=3, multiclass=multiclass)
    raw = L1LogisticOBACV(**kw).fit(X, y)
    by_hand = L1LogisticOBACV(**kw).fit(X - shift, y)
    np.testing.assert_allclose(raw.scores_, by_hand.scores_, rtol=1e-5)
    assert raw.C_ == by_hand.C_
    np.testing.assert_allclose(raw.coef_, by_hand.coef_, atol=1e-5)
    np.testing.assert_allclose(raw.intercept_ + raw.coef_ @ shift
                               - (raw.coef_ @ shift).mean() * (multiclass == "multinomial"),
                               by_hand.intercept_, atol=1e-3)


def test_stalled_solves_warn_apart_from_those_at_max_iter():
    """The folds' solves that stalled (tol 1e-12, below the gradient's rounding beside a raw
    timestamp column) are counted in a warning of their own, which does not advise
    max_iter."""
    from sklearn.datasets import make_classification
    X, y = make_classification(600, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=0)
    X = np.column_stack([X, 1.7e9 + np.random.default_rng(0).uniform(0, 3e7, 600)])
    with pytest.warns(ConvergenceWarning, match=r"OBA stalled in \d+ of the 9 solves .*"
                                                r"StandardScaler") as record:
        L1LogisticOBACV(Cs=[0.1, 1.0, 10.0], cv=3, multiclass="multinomial",
                        tol=1e-12).fit(X, y)
    assert not any("max_iter" in str(w.message) for w in record)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_progress_callbacks_see_each_path_and_the_refit(n_jobs):
    """Also when the paths run in worker processes: the fit reports them as they arrive."""
    X, y = load_iris(return_X_y=True)
    recorder = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        L1LogisticOBACV(Cs=3, cv=3, n_jobs=n_jobs).set_callbacks(recorder).fit(
            X / X.max(axis=0), y)
    ended = [name for name, _ in recorder.ended]
    assert ended.count("fold path") == 9 and ended.count("refit") == 1
    assert ended[-1] == "fit"


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("sparse_coef", [False, True])
def test_empty_columns_cost_nothing_and_get_zero_weights(multiclass, sparse_coef):
    from _hashed import spread_columns

    X, y = _data(3, seed=4, sparse=True)
    wide, places = spread_columns(X, 600)
    params = dict(Cs=3, cv=3, multiclass=multiclass, sparse_coef=sparse_coef)
    est = L1LogisticOBACV(**params).fit(wide, y)
    ref = L1LogisticOBACV(**params).fit(X, y)
    np.testing.assert_array_equal(est.Cs_, ref.Cs_)
    np.testing.assert_allclose(est.scores_, ref.scores_, rtol=1e-12)   # margins' rounding
    paths = est.coefs_paths_.toarray() if sparse_coef else est.coefs_paths_
    ref_paths = ref.coefs_paths_.toarray() if sparse_coef else ref.coefs_paths_
    assert paths.shape[-1] == 601
    np.testing.assert_array_equal(paths[..., np.r_[places, 600]], ref_paths)
    assert not np.any(np.delete(paths[..., :600], places, axis=-1))
    coef = est.coef_.toarray() if sparse_coef else est.coef_
    np.testing.assert_allclose(coef[:, places], ref.coef_.toarray() if sparse_coef
                               else ref.coef_, rtol=1e-9, atol=1e-12)
    assert not np.any(np.delete(coef, places, axis=1))
    mean = L1LogisticOBACV(refit=False, **params).fit(wide, y)     # the folds' average
    ref = L1LogisticOBACV(refit=False, **params).fit(X, y)
    coef = mean.coef_.toarray() if sparse_coef else mean.coef_
    np.testing.assert_allclose(coef[:, places], ref.coef_.toarray() if sparse_coef
                               else ref.coef_, rtol=1e-12, atol=1e-15)
    assert not np.any(np.delete(coef, places, axis=1)) and mean.C_ == ref.C_


def test_penalty_follows_the_chosen_l1_ratio_for_select_from_model():
    from sklearn.feature_selection import SelectFromModel
    X, y = _data(3, seed=4)
    assert L1LogisticOBACV().penalty == "l1"
    assert L1LogisticOBACV(l1_ratios=(0.5, 1.0)).penalty == "elasticnet"
    selector = SelectFromModel(L1LogisticOBACV(Cs=4, cv=3)).fit(X, y)
    assert selector.estimator_.l1_ratio_ == 1 and selector.threshold_ == 1e-5
    np.testing.assert_array_equal(selector.get_support(),
                                  (selector.estimator_.coef_ != 0).any(axis=0))
    model = L1LogisticOBACV(Cs=3, cv=3, l1_ratios=(0.5,), tol=1e-6).fit(X, y)
    assert model.penalty == "elasticnet"
