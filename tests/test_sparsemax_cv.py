"""SparsemaxClassifierCV: the grid search it replaces, its grid, label sets, bad input."""
import os
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.utils._param_validation import InvalidParameterError

from _callbacks import Recorder
from _gpu import on_device
from sparsekit import SparsemaxClassifier, SparsemaxClassifierCV

TIGHT = 1e-10    # every fit near its minimum: warm and cold fits give the same models


def _data(n_classes=3, seed=0, n=150, d=10, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.3] = 0
    scores = X[:, :n_classes] + 0.8 * rng.standard_normal((n, n_classes))
    y = np.argmax(scores, axis=1)
    return (sp.csr_matrix(X) if sparse else X), y


def _label_sets(seed=1, n=160, d=8, k=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    Y = (X[:, :k] + 0.5 * rng.standard_normal((n, k)) > 0.3).astype(int)
    return X, Y


@pytest.mark.parametrize("sparse", [False, True])
def test_scores_and_choice_are_those_of_a_grid_search_over_cold_fits(sparse):
    X, y = _data(sparse=sparse)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    est = SparsemaxClassifierCV(alphas=6, cv=cv, tol=TIGHT).fit(X, y)
    grid = GridSearchCV(SparsemaxClassifier(tol=TIGHT), {"alpha": list(est.alphas_)},
                        cv=cv).fit(X, y)
    for k in range(4):
        np.testing.assert_array_equal(est.scores_[k],
                                      grid.cv_results_[f"split{k}_test_score"])
    assert est.alpha_ == grid.best_params_["alpha"]
    np.testing.assert_allclose(est.coef_, grid.best_estimator_.coef_, atol=1e-6)
    np.testing.assert_allclose(est.intercept_, grid.best_estimator_.intercept_, atol=1e-6)
    np.testing.assert_array_equal(est.predict(X), grid.predict(X))


@pytest.mark.parametrize("empty_columns", [0, 100])
def test_the_refit_starts_at_the_mean_of_the_folds_solutions(monkeypatch, empty_columns):
    X, y = _data(seed=5, n=240)
    if empty_columns:      # as hashed features: the paths run on the used columns only
        X = sp.hstack([sp.csr_matrix((len(y), empty_columns)), X], format="csr")
    fits = []              # (rows, columns, alpha, coef_ at the start, coef_ at the end)
    fit = SparsemaxClassifier._fit_problem      # the folds' fits and the refit's solve

    def spy(est, problem):
        start = getattr(est, "coef_", None)
        start = None if start is None else start.copy()
        fit(est, problem)
        fits.append((*problem.X.shape, est.alpha, start, est.coef_.copy()))
    monkeypatch.setattr(SparsemaxClassifier, "_fit_problem", spy)
    est = SparsemaxClassifierCV(alphas=5, cv=4).fit(X, y)
    folds = [end for rows, _, alpha, _, end in fits if rows < len(y) and alpha == est.alpha_]
    refit = [start for rows, _, _, start, _ in fits if rows == len(y)]
    assert len(folds) == 4 and len(refit) == 1
    assert {width for rows, width, *_ in fits if rows < len(y)} == {X.shape[1] - empty_columns}
    start = refit[0]
    np.testing.assert_allclose(start[:, empty_columns:], np.mean(folds, axis=0), rtol=1e-12,
                               atol=1e-15)
    assert start.shape == (3, X.shape[1]) and not np.any(start[:, :empty_columns])
    assert est.coef_.shape == (3, X.shape[1]) and not np.any(est.coef_[:, :empty_columns])


def test_a_training_fold_is_validated_once_for_its_path(monkeypatch):
    """Each fold's rows are validated and encoded once for all the alphas, and its datafits
    made once per kind of solver (SDCA at the grid's large alphas, L-BFGS at its small
    ones on this sparse X), not once per fit."""
    import sparsekit.linear_model._sparsemax as module

    X, y = _data(seed=3, n=240, sparse=True)
    calls = {"problems": 0, "datafits": []}
    problem, datafit = SparsemaxClassifier._problem, module.FenchelYoungLinear

    def count_problem(est, *args):
        calls["problems"] += 1
        return problem(est, *args)

    def count_datafit(*args, **kwargs):
        calls["datafits"].append(kwargs["center"])
        return datafit(*args, **kwargs)
    monkeypatch.setattr(SparsemaxClassifier, "_problem", count_problem)
    monkeypatch.setattr(module, "FenchelYoungLinear", count_datafit)
    est = SparsemaxClassifierCV(alphas=8, cv=3).fit(X, y)
    assert calls["problems"] == 3 + 1                       # the folds and the refit
    assert est.n_iter_path_.shape == (3, 8)
    # each fold path: SDCA's datafit (not centered), then L-BFGS's (centered); the refit one
    assert calls["datafits"][:6] == [False, True] * 3 and len(calls["datafits"]) == 7


def test_the_warm_paths_take_fewer_iterations_than_cold_fits():
    X, y = _data(seed=2, n=300)
    cv = list(StratifiedKFold(3).split(X, y))
    est = SparsemaxClassifierCV(alphas=8, cv=cv, tol=1e-6).fit(X, y)
    cold = np.array([[SparsemaxClassifier(alpha=a, tol=1e-6).fit(X[train], y[train]).n_iter_
                      for a in est.alphas_] for train, _ in cv])
    assert est.n_iter_path_.shape == cold.shape == (3, 8)
    assert np.all(est.n_iter_path_[:, 0] == cold[:, 0])     # the first fit starts at zero
    assert est.n_iter_path_.sum() < 0.8 * cold.sum()


def test_an_integer_grid_spans_the_scale_of_the_default_alpha():
    X, y = _data(seed=3)
    w = np.random.default_rng(0).uniform(0.5, 2.0, size=len(y))
    for sample_weight in (None, w):
        scale = SparsemaxClassifier().fit(X, y, sample_weight).alpha_
        est = SparsemaxClassifierCV(alphas=5, cv=3).fit(X, y, sample_weight)
        np.testing.assert_allclose(est.alphas_, scale * np.logspace(2, -2, 5), rtol=1e-12)
        assert est.alpha_ in est.alphas_ and est.scores_.shape == (3, 5)
        one = SparsemaxClassifierCV(alphas=1, cv=3).fit(X, y, sample_weight)
        np.testing.assert_allclose(one.alphas_, [scale], rtol=1e-12)


def test_given_alphas_are_searched_from_the_largest_and_ties_go_to_it():
    X, y = load_iris(return_X_y=True)
    est = SparsemaxClassifierCV(alphas=[1e-3, 1e4, 1e-3, 1e3], cv=3).fit(X, y)
    np.testing.assert_array_equal(est.alphas_, [1e4, 1e3, 1e-3])
    # at 1e3 and 1e4 the weights are ~0: the same predictions, the same scores
    assert est.scores_[:, 0].tolist() == est.scores_[:, 1].tolist()
    huge = SparsemaxClassifierCV(alphas=[1e3, 1e4], cv=3).fit(X, y)
    assert huge.alpha_ == 1e4


def test_label_sets_on_the_box_with_a_scorer_name():
    X, Y = _label_sets()
    cv = KFold(3, shuffle=True, random_state=0)
    est = SparsemaxClassifierCV(alphas=4, cv=cv, polytope="box", scoring="f1_micro",
                                tol=TIGHT).fit(X, Y)
    grid = GridSearchCV(SparsemaxClassifier(polytope="box", tol=TIGHT),
                        {"alpha": list(est.alphas_)}, cv=cv, scoring="f1_micro").fit(X, Y)
    np.testing.assert_allclose(est.scores_.mean(axis=0), grid.cv_results_["mean_test_score"],
                               atol=1e-12)
    assert est.alpha_ == grid.best_params_["alpha"]
    assert est.target_type_ == "multilabel" and 0.0 < est.threshold_ < 1.0
    assert est.threshold_ == pytest.approx(grid.best_estimator_.threshold_, abs=1e-6)
    np.testing.assert_array_equal(est.predict(X), grid.predict(X))


def test_label_sets_as_lists_of_labels_name_the_binarizer():
    X, y = load_iris(return_X_y=True)
    labels = [[c] if i % 3 else [c, (c + 1) % 3] for i, c in enumerate(y)]
    with pytest.raises(ValueError, match="y holds a collection of labels per example; "
                                         "SparsemaxClassifierCV takes label sets as a 0/1 "
                                         "indicator matrix.*MultiLabelBinarizer"):
        SparsemaxClassifierCV(alphas=2, cv=2).fit(X, labels)


def test_folds_in_processes_give_the_same_result():
    """(to rounding: the worker processes' kernels may run another number of threads)"""
    X, y = _data(seed=5, sparse=True)
    one = SparsemaxClassifierCV(alphas=4, cv=3, tol=TIGHT).fit(X, y)
    two = SparsemaxClassifierCV(alphas=4, cv=3, tol=TIGHT, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.scores_, two.scores_)
    np.testing.assert_allclose(one.coef_, two.coef_, atol=1e-8)


def test_no_more_processes_than_folds(monkeypatch):
    """n_jobs=64 on three folds started 64 processes (15 s on two cores for a 0.1-s fit)."""
    from sparsekit.utils import _threads
    asked = []

    class Recording(_threads.Parallel):
        def __init__(self, n_jobs=None, **kwargs):
            asked.append(n_jobs)
            super().__init__(n_jobs=1, **kwargs)
    monkeypatch.setattr(_threads, "Parallel", Recording)
    X, y = _data(seed=5)
    for n_jobs, expected in [(64, 3), (-1, min(3, os.cpu_count())), (None, None), (2, 2)]:
        SparsemaxClassifierCV(alphas=2, cv=3, n_jobs=n_jobs).fit(X, y)
        assert asked.pop() == expected


@pytest.mark.parametrize("solver", ["lbfgs", "auto"])
def test_the_folds_in_parallel_share_the_memory(monkeypatch, solver):
    """Each fold's solver was checked against the whole memory, so n_jobs paths together
    could hold n_jobs times what fits (the OS kills the processes): a solver whose arrays
    fit once but not twice is refused at n_jobs=2, naming n_jobs (auto runs Newton-CG on
    the folds, as a fit alone does), and runs at n_jobs=1. The folds run in threads here,
    so that the machine's memory can be patched in their process."""
    from joblib import parallel_config

    import sparsekit.linear_model._sparsemax as sparsemax
    import sparsekit.linear_model._sparsemax_solvers as solvers
    X, y = _data(seed=5)                         # dense: every column in every fold
    weights = (X.shape[1] + 1) * 3 * 8
    monkeypatch.setattr(solvers, "physical_memory",
                        lambda: 1.5 * solvers.SOLVER_ARRAYS["lbfgs"] * weights)
    solved = []
    solve = sparsemax.SparsemaxClassifier._solve
    monkeypatch.setattr(sparsemax.SparsemaxClassifier, "_solve",
                        lambda self, name, *args: solved.append(name) or solve(
                            self, name, *args))
    cv = SparsemaxClassifierCV(alphas=2, cv=2, solver=solver, n_jobs=2)
    with parallel_config(backend="threading"):
        if solver == "lbfgs":
            with pytest.raises(ValueError, match=r"would hold about .* GiB in the 2 fits that "
                                                 r"run at a time \(n_jobs: .*of weights "
                                                 r"each, .*: use fewer n_jobs or "
                                                 r"solver='newton-cg'"):
                cv.fit(X, y)
            assert not solved and not hasattr(cv, "coef_")
        else:
            cv.fit(X, y)
            assert solved == ["newton-cg"] * 4 + ["lbfgs"]     # the refit runs alone
        solved.clear()
        cv.set_params(n_jobs=1).fit(X, y)
    assert solved == ["lbfgs"] * 5


def test_the_folds_convergence_warnings_come_as_one():
    X, y = _data(seed=6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SparsemaxClassifierCV(alphas=3, cv=3, max_iter=1).fit(X, y)
    paths = [w for w in caught if "folds' paths" in str(w.message)]
    assert len(paths) == 1 and issubclass(paths[0].category, ConvergenceWarning)
    assert "in 9 of the 9 fits" in str(paths[0].message)


def test_sdca_folds_on_a_column_in_other_units_name_it():
    """The folds' warning of SDCA fits gives SparsemaxClassifier's advice for a column in
    other units (named as X names it); without such a column, the general one."""
    pd = pytest.importorskip("pandas")
    from sklearn.datasets import make_classification

    X, y = make_classification(600, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=0)
    X[:, 5] = np.random.default_rng(0).integers(10_000, 100_000, X.shape[0])
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)] + ["zip"])
    params = dict(alphas=2, cv=2, solver="sdca", max_iter=20, random_state=0)
    for given, name, fit in ((frame, "'zip'", params), (X, "5", params),
                             (X[:, :5], None, dict(params, max_iter=1, tol=0.0))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            SparsemaxClassifierCV(**fit).fit(given, y)
        paths = [str(w.message) for w in caught if "folds' paths" in str(w.message)]
        assert len(paths) == 1
        if name is None:
            assert paths[0].endswith("increase max_iter or scale the data.")
        else:
            assert f"the nonzero entries of column {name} have a root mean square" in paths[0]
            assert "solver='lbfgs'" in paths[0]


def test_callbacks_see_each_fold_path_and_the_refit():
    X, y = _data(seed=7)
    recorder = Recorder()
    SparsemaxClassifierCV(alphas=3, cv=4).set_callbacks(recorder).fit(X, y)
    ended = [name for name, _ in recorder.ended]
    assert ended.count("fold path") == 4 and ended.count("refit") == 1
    assert ended[-1] == "fit"


@pytest.mark.parametrize("alphas, error", [
    ([], ValueError), ([-1.0, 1.0], ValueError), ([np.nan], ValueError),
    ([[1.0, 2.0]], ValueError), (["scale", 1.0], ValueError), (0, InvalidParameterError),
    ("scale", InvalidParameterError),
])
def test_bad_alphas_are_refused(alphas, error):
    X, y = _data()
    with pytest.raises(error, match="alphas"):
        SparsemaxClassifierCV(alphas=alphas).fit(X, y)


def test_a_class_missing_from_a_training_fold_is_scored_as_a_grid_search_scores_it():
    """A class in two rows is missing from some training folds: their models lack it (as a
    grid search's do) and the refit, started from the folds' solutions, has every class."""
    X, y = _data(seed=8)
    y = y.copy()
    y[:2] = 7
    cv = KFold(3)
    est = SparsemaxClassifierCV(alphas=3, cv=cv, tol=TIGHT).fit(X, y)
    grid = GridSearchCV(SparsemaxClassifier(tol=TIGHT), {"alpha": list(est.alphas_)},
                        cv=cv).fit(X, y)
    for k in range(3):
        np.testing.assert_array_equal(est.scores_[k], grid.cv_results_[f"split{k}_test_score"])
    assert est.classes_.tolist() == [0, 1, 2, 7] and est.coef_.shape == (4, X.shape[1])
    np.testing.assert_allclose(est.coef_, grid.best_estimator_.coef_, atol=1e-6)


@pytest.mark.parametrize("case", ["binary strings, weights", "3 classes float32 sparse"])
def test_the_default_score_is_the_estimators_accuracy_without_its_input_checks(case,
                                                                                monkeypatch):
    """scoring=None scores each held-out fold with the accuracy that
    ``SparsemaxClassifier.score`` gives (the same floats as scikit-learn's "accuracy"
    scorer), computed from the validated rows' scores instead of through ``score``."""
    binary = case.startswith("binary")
    X, y = _data(n_classes=2 if binary else 3, seed=5, sparse=not binary)
    sw = np.random.default_rng(2).uniform(0.2, 3.0, y.size) if binary else None
    if binary:
        y = np.array(["no", "yes"])[y]
    else:
        X = X.astype(np.float32)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    named = SparsemaxClassifierCV(alphas=4, cv=cv, scoring="accuracy").fit(X, y, sw)

    def refused(self, X, y, sample_weight=None):      # score's signature: it weighs rows
        raise AssertionError("the default scoring went through score")
    monkeypatch.setattr(SparsemaxClassifier, "score", refused)
    default = SparsemaxClassifierCV(alphas=4, cv=cv).fit(X, y, sw)
    np.testing.assert_array_equal(default.scores_, named.scores_)
    assert default.alpha_ == named.alpha_


@pytest.mark.parametrize("weights", [False, True])
def test_a_column_of_labels_is_scored_as_its_raveled_labels(weights):
    """y of shape (n, 1), as a one-column DataFrame's values: the folds' accuracies (the
    default scoring) and the choice are those of the raveled y (a column broadcast against
    the predictions compared every row with every label), and the conversion warned of
    once (the folds' fits and the refit each warned of it)."""
    X, y = _data(seed=3)
    sw = np.random.default_rng(4).uniform(0.5, 2.0, y.size) if weights else None
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    flat = SparsemaxClassifierCV(alphas=5, cv=cv).fit(X, y, sw)
    with pytest.warns(DataConversionWarning) as caught:
        column = SparsemaxClassifierCV(alphas=5, cv=cv).fit(X, y.reshape(-1, 1), sw)
    assert sum(w.category is DataConversionWarning for w in caught) == 1
    np.testing.assert_array_equal(column.scores_, flat.scores_)
    assert column.alpha_ == flat.alpha_


def test_an_X_that_stores_no_entry_is_the_zero_X():
    """A sparse X of no stored entry: the model of the dense zero X (the class frequencies)
    where the folds' fits were given a matrix of no columns and refused it."""
    y = np.tile([0, 1, 2, 0, 1, 2, 0], 3)
    est = SparsemaxClassifierCV(cv=3).fit(sp.csr_matrix((21, 5)), y)
    ref = SparsemaxClassifierCV(cv=3).fit(np.zeros((21, 5)), y)
    assert est.coef_.shape == (3, 5) and not np.any(est.coef_) and est.alpha_ == ref.alpha_
    np.testing.assert_allclose(est.predict_proba(np.zeros((1, 5)))[0], [3 / 7, 2 / 7, 2 / 7],
                               atol=1e-4)     # the default tol (SDCA at the chosen alpha)
    np.testing.assert_allclose(ref.predict_proba(np.zeros((1, 5)))[0], [3 / 7, 2 / 7, 2 / 7],
                               atol=1e-4)


def test_one_class_folds_continuous_targets_and_huge_entries_are_refused():
    X, y = _data()
    y = np.where(np.arange(len(y)) < 100, 0, 1)
    with pytest.raises(ValueError, match="training fold 2 holds only the class 0"):
        SparsemaxClassifierCV(alphas=2, cv=KFold(3)).fit(X, y)
    with pytest.raises(ValueError, match="training fold 0 holds no sample"):
        SparsemaxClassifierCV(alphas=2, cv=[(np.arange(0), np.arange(len(y)))]).fit(X, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        SparsemaxClassifierCV(alphas=2).fit(X, np.linspace(0, 1, len(y)))
    with pytest.raises(ValueError, match="non-zero"):
        SparsemaxClassifierCV(alphas=2).fit(X, y, np.zeros(len(y)))
    with pytest.raises(ValueError, match="only one class: 0"):
        SparsemaxClassifierCV(alphas=2).fit(X, np.zeros(len(y), dtype=int))
    with pytest.raises(ValueError, match="squared row norms overflow"):   # not an alpha of inf
        SparsemaxClassifierCV().fit(X * 1e300, y)


DEVICE_CASES = {
    "labels, sparse, weights, f1_macro": (
        lambda: _data(sparse=True, n=30, d=5), dict(alphas=[0.3, 0.03], scoring="f1_macro"),
        True),
    "labels, dense, balanced, newton-cg": (
        lambda: _data(n=30, d=5), dict(alphas=1, class_weight="balanced", solver="newton-cg"),
        False),
    "label sets, box": (
        lambda: _label_sets(n=30, d=5, k=3), dict(alphas=[1e-1, 1e-2], polytope="box"), False),
}


@pytest.mark.parametrize("case", DEVICE_CASES)
def test_cross_validation_on_the_gpu_is_the_cpu_one(cupy_backend, monkeypatch, case):
    """device="cuda": each fold's rows sliced on the device and its path fit there, the
    held-out scores computed there; the grid, the scores and the refit equal the CPU's,
    from device X and from host X (copied once)."""
    import sparsekit.linear_model._sparsemax_folds as module

    cp = cupy_backend
    products = []
    product = module.device_product
    monkeypatch.setattr(module, "device_product",
                        lambda *a: products.append(a[0].shape[0]) or product(*a))
    make, params, weighted = DEVICE_CASES[case]
    X, y = make()
    fit = {"sample_weight": np.random.default_rng(4).uniform(0.2, 2.0, y.shape[0])
           } if weighted else {}
    params.update(cv=KFold(3, shuffle=True, random_state=1), tol=1e-8)
    cpu = SparsemaxClassifierCV(**params).fit(X, y, **fit)
    for X_fit in (on_device(cp, X), X):
        products.clear()
        gpu = SparsemaxClassifierCV(device="cuda", **params).fit(X_fit, y, **fit)
        # every held-out score (3 folds x the grid) was a device product, of a third of y
        assert products == [len(y) // 3] * (3 * cpu.alphas_.size)
        np.testing.assert_allclose(gpu.alphas_, cpu.alphas_, rtol=1e-12)
        np.testing.assert_allclose(gpu.scores_, cpu.scores_, rtol=1e-6, atol=1e-9)
        assert gpu.alpha_ == pytest.approx(cpu.alpha_, rel=1e-12)
        assert type(gpu.coef_) is np.ndarray
        np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, rtol=1e-4, atol=1e-5)
        assert gpu.n_features_in_ == X.shape[1]
        assert gpu.score(X, y) == pytest.approx(cpu.score(X, y), rel=1e-6)


def test_device_input_errors(cupy_backend):
    """CuPy X needs device="cuda" (as SparsemaxClassifier); bad labels and weights fail
    before any fit, as on the CPU; sdca runs on the CPU only."""
    X, y = _data()
    Xd = cupy_backend.asarray(X)
    with pytest.raises(TypeError, match="X is on the GPU .* device='cpu'"):
        SparsemaxClassifierCV().fit(Xd, y)
    with pytest.raises(ValueError, match="y must have shape"):
        SparsemaxClassifierCV(device="cuda").fit(Xd, y[:-1])
    with pytest.raises(ValueError, match="Negative values in data passed to `sample_weight`"):
        SparsemaxClassifierCV(device="cuda").fit(Xd, y, -np.ones(y.size))
    with pytest.raises(ValueError, match="training fold 0 holds only the class 1"):
        SparsemaxClassifierCV(device="cuda", cv=[(np.flatnonzero(y == 1), np.arange(9))]).fit(
            Xd, y)
    with pytest.raises(ValueError, match="sdca.* CPU only"):
        SparsemaxClassifierCV(device="cuda", solver="sdca", alphas=2).fit(Xd, y)


def test_verbose_prints_a_line_per_fold_and_the_choice_and_the_fits_lines_above_one(capsys):
    X, y = _data(seed=9)
    SparsemaxClassifierCV(alphas=3, cv=3, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.startswith("[SparsemaxClassifierCV]") for line in lines)
    assert "fold 3/3: 3 fits" in lines[2] and "refit on all the data" in lines[3]
    SparsemaxClassifierCV(alphas=3, cv=3, verbose=2).fit(X, y)
    assert re.search(r"^\[SparsemaxClassifier\] (lbfgs|sdca epoch) 1: ", capsys.readouterr().out,
                     re.MULTILINE)
