"""Conventions every estimator follows alike (scikit-learn's, where it has one)."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from _callbacks import Recorder
from sparsekit import (ExtremeSoftmaxSGD, L1LogisticOBA, L1LogisticOBACV, SparsemaxClassifier,
                       SparsemaxClassifierCV)
from sparsekit.linear_model import _extreme_softmax, _sparsemax

#: every configuration that should pass scikit-learn's checks; the L1LogisticOBAs after the first
#: and the cross-validated estimators solve to a tight tol, as the sample-weight equivalence
#: check compares predict_proba to 1e-7 relative, finer than the default tol promises (it
#: gives a cross-validated estimator the same folds either way: the same C or alpha is chosen,
#: and the refits at the default tol differ by 2e-8 (L1LogisticOBACV, C = 1538) and 5e-4
#: (SparsemaxClassifierCV, the flat intercept valley of a sparse X's SDCA fit))
CHECKED = [
    SparsemaxClassifier(), SparsemaxClassifier(solver="nqn"),
    SparsemaxClassifier(solver="newton-cg"), SparsemaxClassifier(solver="sdca", random_state=0),
    L1LogisticOBA(), L1LogisticOBA(sparse_coef=True, C=0.5, tol=1e-10),
    L1LogisticOBA(multiclass="multinomial", tol=1e-10), L1LogisticOBA(l1_ratio=0.5, tol=1e-10),
    *[ExtremeSoftmaxSGD(method, random_state=0)
      for method in ("sampled_softmax", "implicit", "umax", "ove")],
    ExtremeSoftmaxSGD(n_weights=2**10, random_state=0),
    L1LogisticOBACV(Cs=4, cv=3, tol=1e-12),
    SparsemaxClassifierCV(alphas=3, cv=3, tol=1e-12),
]

#: what scikit-learn's checks expect of a single fit that a cross-validated one cannot give
CV_EXPECTED_FAILURES = {
    "check_non_transformer_estimators_n_iter":
        "n_iter_ holds the path's solves, and those at C below C_min start at the optimum "
        "(0 iterations)",
}

#: the sparsemax label checks; the sample-weight ones pass at SparsemaxClassifierCV's tight tol
SPARSEMAX_CV_EXPECTED_FAILURES = {
    name: why for name, why in _sparsemax.EXPECTED_FAILED_CHECKS.items()
    if not name.startswith("check_sample_weight_equivalence")}

#: scikit-learn's class-weight check fits make_blobs' unscaled rows (squared norms ~800):
#: learning_rate="auto" scales the steps to them, so the intercept (a constant feature 1)
#: moves ~800 times more slowly than the weights, and 20 epochs of the methods with the
#: smaller steps leave the share predicted as the heavy class at 0.54-0.78 (0.87 needed;
#: sampled softmax, the default, 0.90 and 1.0)
ESGD_CLASS_WEIGHT_FAILURE = {
    "check_class_weight_classifiers":
        "unscaled rows: the intercept learns ~800 times more slowly than the weights"}


def _expected_failures(estimator):
    if isinstance(estimator, ExtremeSoftmaxSGD) and estimator.method in ("implicit", "umax",
                                                                          "ove"):
        return {**_extreme_softmax.EXPECTED_FAILED_CHECKS, **ESGD_CLASS_WEIGHT_FAILURE}
    if isinstance(estimator, L1LogisticOBA) and estimator.sparse_coef:
        return {"check_class_weight_balanced_linear_classifier":
                "the check compares coef_ with assert_allclose, which takes no sparse matrix"}
    return {SparsemaxClassifier: _sparsemax.EXPECTED_FAILED_CHECKS,
            ExtremeSoftmaxSGD: _extreme_softmax.EXPECTED_FAILED_CHECKS,
            L1LogisticOBACV: CV_EXPECTED_FAILURES,
            SparsemaxClassifierCV: SPARSEMAX_CV_EXPECTED_FAILURES}.get(type(estimator), {})


@pytest.mark.parametrize("estimator", CHECKED, ids=repr)
def test_a_fit_leaves_nothing_for_the_cyclic_garbage_collector(iris, estimator):
    """What a fit makes is freed once nothing refers to it, not when Python's cyclic
    garbage collector next runs (at a time that depends on the count of objects made, not
    on their bytes): a multinomial datafit referred back to by its carried Gram kept its
    arrays alive after each fit, 2.3 arrays of the weights' size more per fit in a loop."""
    from _memory import left_for_the_collector

    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert not left_for_the_collector(lambda: clone(estimator).fit(X, y))


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
    "L1LogisticOBACV": lambda: L1LogisticOBACV(Cs=3, cv=3),
    "SparsemaxClassifierCV": lambda: SparsemaxClassifierCV(alphas=3, cv=3),
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


# --- scikit-learn's callbacks (sklearn.callback): set_callbacks, ProgressBar, propagation


#: estimator, the name of its tasks one level below the fit, and of those below them
CALLBACK_CASES = {
    "SparsemaxClassifier(lbfgs)": (lambda: SparsemaxClassifier(alpha=1e-2), "lbfgs iteration",
                                   None),
    "SparsemaxClassifier(newton-cg)": (lambda: SparsemaxClassifier(alpha=1e-2,
                                                                   solver="newton-cg"),
                                       "newton-cg iteration", None),
    "SparsemaxClassifier(sdca)": (lambda: SparsemaxClassifier(alpha=1e-2, solver="sdca",
                                                              random_state=0),
                                  "sdca iteration", None),
    "L1LogisticOBA": (lambda: L1LogisticOBA(), "binary problem", "OBA iteration"),
    "L1LogisticOBA(binary)": (lambda: L1LogisticOBA(), "binary problem", "OBA iteration"),
    "L1LogisticOBA(multinomial)": (lambda: L1LogisticOBA(multiclass="multinomial", C=10.0),
                                   "multinomial problem", "OBA iteration"),
    "ExtremeSoftmaxSGD": (lambda: ExtremeSoftmaxSGD(n_epochs=4, random_state=0), "epoch",
                          None),
}


@pytest.mark.parametrize("name", CALLBACK_CASES)
def test_callbacks_see_one_subtask_per_iteration_and_can_stop_the_fit(iris, name):
    X, y = iris
    if name == "L1LogisticOBA(binary)":
        X, y = X[y < 2], y[y < 2]
    make, subtask, iteration = CALLBACK_CASES[name]
    recorder = Recorder()
    est = make().set_callbacks(recorder).fit(X, y)
    assert recorder.ended[-1] == ("fit", 0) and recorder.setups == recorder.teardowns == 1
    assert {task for task, depth in recorder.ended if depth == 1} == {subtask}
    assert {task for task, depth in recorder.ended if depth == 2} == (
        {iteration} if iteration else set())
    problems = [task for task, depth in recorder.ended if depth == 1]
    iterations = [task for task, depth in recorder.ended if depth == 2]
    if subtask == "epoch":
        assert len(problems) == est.n_iter_
    elif iteration is None:            # the solvers' bridge ends one empty task at the end
        assert len(problems) == est.n_iter_ + 1
    else:                              # OBA: each problem's iterations and an empty one
        assert len(problems) == len(est.n_iter_)
        assert len(iterations) == int(np.sum(est.n_iter_)) + len(est.n_iter_)
    if name != "L1LogisticOBA":        # the model as it stood after each iteration predicts
        assert recorder.scores and 0.3 < recorder.scores[-1] <= 1.0
        np.testing.assert_allclose(recorder.scores[-1], est.score(X, y), atol=0.05)
    else:                              # one-vs-rest: no whole model during a problem
        assert not recorder.scores
    plain = make().fit(X, y)           # callbacks do not change the fit
    np.testing.assert_array_equal(est.coef_, plain.coef_)
    if name != "L1LogisticOBA":
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)  # a requested stop is no failure
            stopped = make().set_callbacks(Recorder(stop_after=2)).fit(X, y)
        assert np.all(stopped.n_iter_ == 2)


class _Metadata:
    """A FitCallback keeping the metadata of each task that ends with the data shown."""

    def setup(self, estimator, context):
        self.kept = []

    def teardown(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context, *, metadata=None):
        pass

    def on_fit_task_end(self, estimator, context, *, X=None, metadata=None):
        if X is not None:
            self.kept.append((context.task_name, metadata))
        return False


#: every estimator's fit, as its callbacks see it
FITS = {**{name: make for name, (make, _, _) in CALLBACK_CASES.items()},
        "L1LogisticOBACV": lambda: L1LogisticOBACV(Cs=3, cv=3),
        "SparsemaxClassifierCV": lambda: SparsemaxClassifierCV(alphas=3, cv=3)}


@pytest.mark.parametrize("name", FITS)
def test_callbacks_are_given_the_sample_weights_passed_to_fit(iris, name):
    """At the fit's end and at each of its tasks' (iterations, epochs, problems, folds):
    scikit-learn's ScoringMonitor weighs its scores of the model at each iteration by them.
    Not those times ``class_weight`` (nor rescaled), as L1LogisticOBA and ExtremeSoftmaxSGD
    passed at the fit's end, and not nothing, as every estimator passed at its tasks'."""
    X, y = iris
    if name == "L1LogisticOBA(binary)":
        X, y = X[y < 2], y[y < 2]
    make = FITS[name]
    weights = np.arange(y.size) % 3 + 1.0
    kept = _Metadata()
    make().set_params(class_weight={0: 5.0}).set_callbacks(kept).fit(X, y, weights)
    assert kept.kept[-1][0] == "fit" and len(kept.kept) > 1
    for task, metadata in kept.kept:
        np.testing.assert_array_equal(metadata["sample_weight"], weights, err_msg=task)
    make().set_callbacks(kept).fit(X, y)
    assert kept.kept and all(metadata is None for _, metadata in kept.kept)


@pytest.mark.parametrize("name", CALLBACK_CASES)
def test_progress_bar_on_every_estimator_and_through_grid_search(iris, name):
    pytest.importorskip("rich")
    from sklearn.callback import ProgressBar
    from sklearn.model_selection import GridSearchCV

    X, y = iris
    make = CALLBACK_CASES[name][0]
    assert make().set_callbacks(ProgressBar()).fit(X, y).score(X, y) > 0.6
    search = GridSearchCV(make(), {"fit_intercept": [True, False]}, cv=2)
    search.set_callbacks(ProgressBar()).fit(X, y)
    assert search.best_estimator_.score(X, y) > 0.6
    recorder = Recorder()        # an auto-propagated callback would need the protocol's
    search = GridSearchCV(make().set_callbacks(recorder), {"fit_intercept": [True]}, cv=2)
    search.fit(X, y)              # a callback set on the estimator goes with its clones
    assert search.best_estimator_ is not None


#: estimators whose ``n_jobs`` runs OpenMP threads in the compiled kernels, and whether
#: they do so on a binary problem of sparse X
OPENMP_FITS = {
    "L1LogisticOBA(multinomial)": (lambda: L1LogisticOBA(C=10.0, multiclass="multinomial",
                                                         n_jobs=2), None),
    "L1LogisticOBA(binary, sparse X)": (lambda: L1LogisticOBA(C=10.0, n_jobs=2), "sparse"),
    "L1LogisticOBA(binary, dense X)": (lambda: L1LogisticOBA(C=10.0, n_jobs=2), "dense"),
    "ExtremeSoftmaxSGD": (lambda: ExtremeSoftmaxSGD(n_epochs=3, random_state=0, n_jobs=2),
                          None),
}


def _openmp_fit(name, X, y):
    make, binary = OPENMP_FITS[name]     # None, or the binary problem's X: "sparse", "dense"
    if binary:
        X, y = (sp.csr_matrix(X) if binary == "sparse" else X), y % 2
    return make().fit(X, y), X, y


def _fit_in_child(name, X, y, queue):
    estimator, X, y = _openmp_fit(name, X, y)
    queue.put(estimator.score(X, y))


@pytest.mark.parametrize("name", OPENMP_FITS)
def test_a_forked_child_fits_in_parallel_after_the_parent_did(name, monkeypatch):
    # GNU OpenMP keeps a thread pool that a forked child does not inherit: a child of a
    # process that ran a parallel region must still finish its own parallel fit
    # (multiprocessing's "fork" start method; a Process, not a Pool's daemon worker, in
    # which joblib's effective_n_jobs, hence the kernels, would run one thread). 3000 rows:
    # ExtremeSoftmaxSGD's epochs take a thread per 1000 rows; the binary datafit's walks
    # of so few entries take threads from 1 entry here.
    import multiprocessing

    from sparsekit.losses._logistic_datafit import Logistic

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    monkeypatch.setattr(Logistic, "thread_min_entries", 1)     # the child inherits it
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    y = np.argmax(X[:, :3], axis=1)
    estimator, X_fit, y_fit = _openmp_fit(name, X, y)
    if isinstance(estimator, ExtremeSoftmaxSGD):
        assert estimator._passes().threads(len(y)) == 2          # the parent ran parallel epochs
    expected = estimator.score(X_fit, y_fit)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_fit_in_child, args=(name, X, y, queue))
    child.start()
    try:
        # (parallel SGD epochs interleave their threads' updates: nearly the same model)
        assert queue.get(timeout=60) == pytest.approx(expected, abs=0.02)
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("n", [6, 60])
def test_labels_of_mixed_types_are_a_named_error(name, n):
    """None among strings, or ints among strings: scikit-learn's check says "Unknown label
    type: unknown" for a few rows and NumPy's sort "'<' not supported between instances of
    'NoneType' and 'str'" for more; the error names the types, also where a string comes
    first (a stratified splitter then sorts the labels: SparsemaxClassifierCV ended with
    NumPy's message). Numbers of several types keep scikit-learn's message (continuous
    labels)."""
    X = np.random.default_rng(0).standard_normal((n, 3))
    for labels, kinds in [([None, "a", "b"], "NoneType, str"), ([1, "a", "b"], "int, str"),
                          (["a", "b", None], "NoneType, str"), (["a", "b", 1], "int, str")]:
        y = np.array(labels * (n // 3), dtype=object)
        with pytest.raises(ValueError, match=f"y mixes labels of types {kinds}: give every"):
            ESTIMATORS[name]().fit(X, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        ESTIMATORS[name]().fit(X, np.array([1, 2.5, 3] * (n // 3), dtype=object))


@pytest.mark.parametrize("name", ESTIMATORS)
def test_a_class_weight_key_that_is_no_class_is_named(iris, name):
    """A class_weight key that is no class, or a weight that is no number, is named, where
    scikit-learn's compute_class_weight listed every class as "not in class_weight"; a key
    equal to a class names it (1.0 the class 1), as there."""
    X, y = iris
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    for class_weight, says in (({"setosa": 2, "rose": 1}, "names 'rose', not a class of y "
                                                          "\\(its classes: 'setosa', "),
                               ({0: 2}, "names 0, not a class"),
                               ({"setosa": "heavy"}, "class_weight\\['setosa'\\] must be a "
                                                     "number, got 'heavy'")):
        with pytest.raises(ValueError, match=says):
            ESTIMATORS[name]().set_params(class_weight=class_weight).fit(X, labels)
    seeded = {"random_state": 0} if "random_state" in ESTIMATORS[name]().get_params() else {}
    weighted = ESTIMATORS[name]().set_params(class_weight={1.0: 3}, **seeded).fit(X, y)
    named = ESTIMATORS[name]().set_params(class_weight={1: 3}, **seeded).fit(X, y)
    np.testing.assert_array_equal(weighted.coef_, named.coef_)


@pytest.mark.parametrize("y", [
    np.array(["b", "a", "ç", "b", "a"]), np.array([3, -1, 7, -1, 3]),
    np.array([1.0, -0.0, 0.0, 2.0, 1.0]), np.array([True, False, True, True, False]),
    np.array(["x", "y", "x"], dtype=object), np.array([2**40, 1, 2**40], dtype=np.int64),
], ids=["str", "int", "float", "bool", "object", "int64"])
def test_labels_are_encoded_as_numpy_sorts_them(y):
    # classes_ sorted and every label's code into it, as np.unique(return_inverse=True)
    estimator = SparsemaxClassifier()
    codes = estimator._encode_labels(y)
    classes, inverse = np.unique(y, return_inverse=True)
    np.testing.assert_array_equal(estimator.classes_, classes)
    np.testing.assert_array_equal(codes, inverse)
    np.testing.assert_array_equal(estimator.classes_[codes], y)


#: each estimator's parameters the random sweep draws from: the defaults' neighbours and
#: the edges of what the constraints allow (conflicting draws must raise a ValueError)
SWEPT = {
    SparsemaxClassifier: {
        "alpha": [0.0, 1e-12, "scale", 1e12], "polytope": ["simplex", "box", "at_least_one"],
        "solver": ["auto", "lbfgs", "nqn", "newton-cg", "sdca"], "positive": [False, True],
        "class_weight": [None, "balanced"], "max_iter": [1, 50], "tol": [0.0, 1e-4]},
    L1LogisticOBA: {
        "C": [1e-300, 1e-3, 1.0, 1e300], "multiclass": ["ovr", "multinomial"],
        "l1_ratio": [0.01, 0.5, 1.0], "max_iter": [0, 1, 50], "tol": [0.0, 1e-8, 0.5],
        "fit_intercept": [False, True], "sparse_coef": [False, True],
        "class_weight": [None, "balanced"]},
    ExtremeSoftmaxSGD: {
        "method": ["sampled_softmax", "implicit", "umax", "ove", "sgd", "nce"],
        "n_epochs": [1, 2], "learning_rate": ["auto", 1e-6, 1e3], "alpha": [0.0, 1.0],
        "batch_size": [1, 4], "n_sampled": [1, 5], "class_weight": [None, "balanced"]},
    L1LogisticOBACV: {"Cs": [2], "cv": [2], "multiclass": ["ovr", "multinomial"]},
    SparsemaxClassifierCV: {"alphas": [2], "cv": [2], "solver": ["auto", "sdca"]},
}


def _hostile_case(rng, cls):
    """A random small problem with what users pass by mistake or by chance: one row, one
    class, a column of labels, empty rows and columns, huge, tiny or non-finite entries,
    integer or boolean X, every sparse and dense layout, zero, tiny, huge, negative or NaN
    weights; and random parameters (SWEPT)."""
    n, d = rng.choice([1, 2, 6, 20, 41, 41]), rng.choice([1, 2, 7])
    k = rng.choice([1, 2, 2, 3, 5])
    X = rng.standard_normal((n, d)) * rng.choice([1.0, 1.0, 1e150, 1e-300, 0.0])
    X[rng.random((n, d)) < 0.5] = 0.0
    if rng.random() < 0.1:
        X.flat[rng.integers(X.size)] = rng.choice([np.nan, np.inf])
    with np.errstate(all="ignore"):
        X = X.astype(rng.choice([np.float64, np.float32, np.int64, np.bool_]))
    X = {"C": X, "F": np.asfortranarray(X), "list": X.tolist(), "csr": sp.csr_matrix(X),
         "csc": sp.csc_matrix(X), "coo": sp.coo_matrix(X)}[rng.choice(
             ["C", "F", "list", "csr", "csc", "coo"])]
    y = rng.integers(k, size=n)
    y[:min(k, n)] = np.arange(min(k, n))
    y = [y, y - 3, np.array(["no", "yes", "x", "y", "z"])[y], y.reshape(-1, 1)][
        rng.integers(4)]
    sample_weight = [None, None, None, None, rng.integers(0, 3, n).astype(float),
                     np.full(n, 1e-300), np.full(n, 1e300), -np.ones(n),
                     np.full(n, np.nan)][rng.integers(9)]
    params = {key: values[rng.integers(len(values))]     # cv always: 2 folds
              for key, values in SWEPT[cls].items() if key == "cv" or rng.random() < 0.5}
    return X, y, sample_weight, params


@pytest.mark.parametrize("cls", SWEPT, ids=lambda cls: cls.__name__)
def test_random_hostile_input_fits_a_sane_model_or_raises_a_value_error(cls):
    """Seeded random problems (:func:`_hostile_case`): every fit ends in a ValueError
    (InvalidParameterError is one) or a model whose predictions are labels of classes_,
    whose probabilities on the simplex rows sum to 1, whose scores are finite for finite
    entries, which predicts the same after pickling and names a wrong feature count. A
    sweep of this kind found a column of labels scored against every prediction by
    SparsemaxClassifierCV and a ZeroDivisionError for C times tiny weights."""
    rng = np.random.default_rng(sum(map(ord, cls.__name__)))
    for trial in range(60):
        X, y, sample_weight, params = _hostile_case(rng, cls)
        est = cls(**params)
        case = f"trial {trial}: {params}, X {np.shape(X)}, y {np.shape(y)}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est.fit(X, y, sample_weight=sample_weight)
            except ValueError:
                continue
            except Exception as exc:           # noqa: BLE001 (the assertion names it)
                raise AssertionError(f"{case}: {type(exc).__name__}: {exc}") from exc
            predicted = est.predict(X)
            assert np.isin(predicted, est.classes_).all(), case
            proba = est.predict_proba(X)
            if getattr(est, "polytope", "simplex") == "simplex":
                np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-4, err_msg=case)
            dense = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
            if np.isfinite(dense).all() and np.abs(dense).max(initial=0.0) < 1e100:
                assert np.isfinite(est.decision_function(X)).all(), case
                assert np.isfinite(proba).all(), case
            copy = pickle.loads(pickle.dumps(est))
            np.testing.assert_array_equal(copy.predict(X), predicted, err_msg=case)
            with pytest.raises(ValueError, match="features"):
                est.predict(np.zeros((2, np.shape(X)[1] + 1)))


@pytest.mark.parametrize("Estimator, chosen", [(L1LogisticOBACV, "C_"),
                                               (SparsemaxClassifierCV, "alpha_")])
def test_cv_folds_in_processes_under_joblibs_multiprocessing_backend(Estimator, chosen):
    """Under a backend that cannot hand back results as they end (multiprocessing's), the
    folds' paths come back at its end: the same choice and model as on one process."""
    from joblib import parallel_config

    X, y = load_iris(return_X_y=True)
    expected = Estimator(cv=3).fit(X, y)
    with parallel_config(backend="multiprocessing"):
        est = Estimator(cv=3, n_jobs=2).fit(X, y)
    assert getattr(est, chosen) == getattr(expected, chosen)
    np.testing.assert_allclose(est.coef_, expected.coef_, rtol=1e-12, atol=1e-12)
