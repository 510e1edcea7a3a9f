"""L1LogisticOBA: scikit-learn API, objective, multiclass, warm starts and warnings (the
path: test_l1_path.py; the advice of its warnings: test_l1_advice.py)."""
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import _oba_reference as ref
from _interrupting import FirstIteration
from sparsekit.datasets import make_thesis_synthetic
from sparsekit.linear_model import L1LogisticOBA, l1_logistic_path
from sparsekit.losses._logistic_datafit import Logistic

DATA = Path(os.environ.get("SPARSEKIT_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "datasets"))


def _binary(seed=0, n=150, d=20, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.4] = 0
    y = (X[:, 0] - 2 * X[:, 1] + 0.5 * rng.standard_normal(n) + 0.5 > 0).astype(int)
    return (sp.csr_matrix(X) if sparse else X), y


def _with_duplicates(X, layout):
    """X in ``layout`` ("csr"/"csc") with every entry stored twice, as two exact halves."""
    coo = sp.coo_matrix(X)
    rows, cols, halves = np.tile(coo.row, 2), np.tile(coo.col, 2), np.tile(0.5 * coo.data, 2)
    major, minor, fmt = (rows, cols, sp.csr_matrix) if layout == "csr" else (cols, rows,
                                                                             sp.csc_matrix)
    order = np.lexsort((minor, major))
    indptr = np.searchsorted(major[order], np.arange(X.shape[layout == "csc"] + 1))
    dup = fmt((halves[order], minor[order], indptr), shape=X.shape)
    assert dup.format == layout and not dup.has_canonical_format
    assert dup.nnz == 2 * coo.nnz
    return dup


@pytest.mark.parametrize("sparse", [False, True])
def test_objective_is_liblinear_s6_with_free_intercept(sparse):
    X, y = _binary(sparse=sparse)
    C = 0.3
    est = L1LogisticOBA(C=C, tol=1e-10).fit(X, y)
    y_pm = np.where(y == 1, 1.0, -1.0)
    w_ref, b_ref, F_ref = ref.l1_logistic_lbfgsb(X, y_pm, C, fit_intercept=True)
    F = ref.l1_logistic_objective(X, y_pm, est.coef_.ravel(), est.intercept_[0], C)
    assert F <= F_ref * (1 + 1e-9)
    np.testing.assert_allclose(est.intercept_[0], b_ref, atol=1e-4)
    assert est.optimality_[0] <= 1e-10
    assert np.count_nonzero(est.coef_) < X.shape[1]  # sparse solution


def test_dense_sparse_float32_agree():
    X, y = _binary(1)
    a = L1LogisticOBA(C=2.0, tol=1e-10).fit(X, y)
    b = L1LogisticOBA(C=2.0, tol=1e-10).fit(sp.csc_matrix(X), y)
    c = L1LogisticOBA(C=2.0, tol=1e-9).fit(X.astype(np.float32), y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
    np.testing.assert_allclose(a.coef_, c.coef_, atol=1e-4)


def test_dense_triangular_x_is_read_on_each_columns_rows():
    """The thesis' Synthetic X is upper triangular: a dense datafit reads column j on rows
    0..j only, and the fits equal those on the same data as CSC (per-column and all-column
    products, with and without the intercept)."""
    X, y = make_thesis_synthetic(120, random_state=0)
    lo, hi = Logistic(X, y)._rows
    np.testing.assert_array_equal(lo, 0)
    np.testing.assert_array_equal(hi, np.arange(1, 121))
    for C, fit_intercept in ((0.05, True), (1.0, False), (10.0, True)):
        a = L1LogisticOBA(C=C, tol=1e-10, fit_intercept=fit_intercept).fit(X, y)
        b = L1LogisticOBA(C=C, tol=1e-10, fit_intercept=fit_intercept).fit(sp.csc_matrix(X), y)
        np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-8)
        np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
def test_value_grad_at_the_same_point_returns_the_remembered_values(sparse, monkeypatch):
    """The fit's closing duality-gap check asks value_grad at the solver's last point: it
    is answered from memory (no pass over X), as a copy, and a new point is computed."""
    X, y = _binary(2, sparse=sparse)
    datafit = Logistic(sp.csc_matrix(X) if sparse else X, np.where(y == 1, 1.0, -1.0),
                       fit_intercept=True)
    x = np.linspace(-0.3, 0.4, datafit.n_params)
    f, g = datafit.value_grad(x)
    passes = []
    original = datafit._margins
    monkeypatch.setattr(datafit, "_margins", lambda *a: passes.append(1) or original(*a))
    f2, g2 = datafit.value_grad(x.copy())
    assert passes == [] and f2 == f and g2 is not g
    np.testing.assert_array_equal(g2, g)
    g2[:] = 0.0
    np.testing.assert_array_equal(datafit.value_grad(x)[1], g)
    x[0] += 1e-3
    assert datafit.value_grad(x)[0] != f and passes == [1]


@pytest.fixture
def handed(monkeypatch):
    """The ``X_csr`` each datafit the estimator builds is handed, in order."""
    import sparsekit.linear_model._l1_problems as module
    seen = []

    class Spy(module.Logistic):
        def __init__(self, *args, X_csr=None, **kwargs):
            seen.append(X_csr)
            super().__init__(*args, X_csr=X_csr, **kwargs)

    monkeypatch.setattr(module, "Logistic", Spy)
    return seen


def test_csr_input_serves_the_explicit_hessians(handed):
    """A CSR input reaches the datafit, whose explicit Hessians walk rows, instead of being
    rebuilt from the CSC copy; the fit is bitwise that of the CSC input."""
    import sparsekit.linear_model._l1_problems as module
    X, y = _binary(4, n=300, d=40, sparse=True)
    a = L1LogisticOBA(C=3.0, tol=1e-10).fit(X, y)
    b = L1LogisticOBA(C=3.0, tol=1e-10).fit(X.tocsc(), y)
    l1_logistic_path(X, y, [1.0])
    assert handed[0] is X and handed[1] is None and handed[2] is X
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_[0] == b.n_iter_[0]
    datafit = module.Logistic(X.tocsc(), np.where(y == 1, 1.0, -1.0), X_csr=X)
    assert datafit._csr() is X
    mismatched = module.Logistic(X.tocsc(), np.where(y == 1, 1.0, -1.0),
                                 X_csr=X.astype(np.float32))
    assert mismatched._csr().dtype == np.float64


def test_one_vs_rest_shares_one_csr_copy_of_a_csc_input(handed, monkeypatch):
    """A one-vs-rest fit of a CSC input (with duplicates) hands every binary problem the same
    canonical CSR copy, not one copy each, and fits as the CSR input does; a binary fit or a
    matrix too wide for row walks makes no copy up front."""
    import sparsekit.linear_model._l1_problems as module
    rng = np.random.default_rng(6)
    X = rng.standard_normal((240, 12))
    X[rng.random(X.shape) < 0.5] = 0
    y = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((240, 3)), axis=1)
    dup = _with_duplicates(X, "csc")
    a = L1LogisticOBA(C=3.0, tol=1e-10, n_jobs=2).fit(dup, y)
    assert len(handed) == 3 and handed[0] is handed[1] is handed[2]
    assert handed[0].format == "csr" and handed[0].has_canonical_format
    np.testing.assert_array_equal(handed[0].toarray(), X)
    b = L1LogisticOBA(C=3.0, tol=1e-10).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    handed.clear()
    L1LogisticOBA(C=3.0, tol=1e-10).fit(sp.csc_matrix(X), y == 0)
    monkeypatch.setattr(module.Logistic, "max_walk_columns", 8)
    L1LogisticOBA(C=3.0, tol=1e-10).fit(sp.csc_matrix(X), y)
    assert handed == [None] * 4


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_tall_data_walk_rows_for_products_margins_and_gradients(monkeypatch, layout, dtype):
    """Past ``row_walk_rows`` rows the margins, the gradient and the matrix-free Hessian
    products walk the rows of a CSR copy (their column walks miss the cache on tall X):
    the same fits as the column walks', to rounding, with an intercept and weights."""
    import sparsekit.losses._logistic_datafit as module
    from sparsekit._cython import _oba_kernels as K

    X, y = _binary(7, n=400, d=40)
    X = getattr(sp, f"{layout}_matrix")(X.astype(dtype))
    w = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    columns = [L1LogisticOBA(C=C, tol=1e-10).fit(X, y, sample_weight=w)
               for C in (0.3, 30.0)]
    walked = []
    for name in ("hessp_csr", "margins_csr", "rmatvec_csr"):
        kernel = getattr(K, name)
        monkeypatch.setattr(K, name, lambda *a, _k=kernel, _n=name: walked.append(_n) or _k(*a))
    monkeypatch.setattr(module.Logistic, "row_walk_rows", 100)
    monkeypatch.setattr(module.Logistic, "max_explicit", 0)     # every product matrix-free
    for C, by_columns in zip((0.3, 30.0), columns):
        by_rows = L1LogisticOBA(C=C, tol=1e-10).fit(X, y, sample_weight=w)
        tol = 1e-4 if dtype == np.float32 else 1e-7
        np.testing.assert_allclose(by_rows.coef_, by_columns.coef_, rtol=tol, atol=tol)
        np.testing.assert_allclose(by_rows.intercept_, by_columns.intercept_, rtol=tol,
                                   atol=tol)
    assert {"hessp_csr", "margins_csr", "rmatvec_csr"} <= set(walked)


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_duplicate_entries_are_summed(layout):
    """A sparse input with duplicate entries (legal in scipy, left alone by scikit-learn's
    validation) is the matrix of their sums: the same fit, iterate for iterate, as the
    canonical input (the row-walking Gram kernels would otherwise count cross terms once)."""
    X, y = _binary(5, n=300, d=30)
    dup = _with_duplicates(X, layout)
    a = L1LogisticOBA(C=10.0, tol=1e-10).fit(sp.csr_matrix(X), y)
    b = L1LogisticOBA(C=10.0, tol=1e-10).fit(dup, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_[0] == b.n_iter_[0]


def test_multiclass_ovr_matches_binary_fits_and_probabilities():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((240, 10))
    y = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((240, 3)), axis=1)
    labels = np.array(["a", "b", "c"])[y]
    est = L1LogisticOBA(C=1.0, tol=1e-9, n_jobs=2).fit(X, labels)
    assert est.coef_.shape == (3, 10) and est.n_iter_.shape == (3,)
    for k, lab in enumerate(est.classes_):
        one = L1LogisticOBA(C=1.0, tol=1e-9).fit(X, labels == lab)
        np.testing.assert_allclose(est.coef_[k], one.coef_[0], atol=1e-8)
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert (est.predict(X) == labels).mean() > 0.8
    np.testing.assert_array_equal(est.classes_[P.argmax(axis=1)], est.predict(X))


def test_the_solves_hold_blas_to_one_thread_and_give_its_threads_back(monkeypatch):
    """Every OBA solve runs BLAS on one thread (its BLAS calls are small and alternate with
    its own kernels and the other problems' threads: BLAS's own threads made dense fits
    up to 3.2 times slower); the count set before the fit is the count after it, also when
    one-vs-rest problems overlap in joblib's threads."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from sparsekit.linear_model import _l1_solve

    def blas_threads():
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    seen = []
    solve = _l1_solve.minimize_oba

    def recorded(*args, **kwargs):
        seen.append(blas_threads())
        return solve(*args, **kwargs)
    monkeypatch.setattr(_l1_solve, "minimize_oba", recorded)
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((300, 8)), np.arange(300) % 3
    with threadpool_limits(2, user_api="blas"):
        if blas_threads() != {2}:
            pytest.skip("BLAS does not run two threads here")
        for multiclass, n_jobs, solves in (("ovr", 2, 3), ("ovr", 1, 3),
                                           ("multinomial", 2, 1)):
            seen.clear()
            L1LogisticOBA(n_jobs=n_jobs, multiclass=multiclass).fit(X, y)
            assert seen == [{1}] * solves and blas_threads() == {2}
        seen.clear()
        l1_logistic_path(X, y % 2, Cs=[0.1, 1.0])
        assert seen == [{1}] * 2 and blas_threads() == {2}


def test_n_jobs_spreads_one_vs_rest_problems_and_solves_one_problem_without_a_pool(
        monkeypatch):
    """With n_jobs=2 the one-vs-rest problems go to joblib's threads; a single problem is
    solved without joblib's pool (~10 ms, a small fit's whole time), in a thread of its own
    (a binary or a multinomial one: their kernels then run OpenMP threads; see openmp_call
    and the forked-child test in test_common), in the calling thread with one job."""
    import threading

    from sparsekit.linear_model import _l1_logistic

    threads = []
    for name in ("fit_binary", "fit_multinomial"):
        solve = getattr(_l1_logistic, name)

        def recorded(*args, _solve=solve, **kwargs):
            threads.append(threading.current_thread().name)
            return _solve(*args, **kwargs)
        monkeypatch.setattr(_l1_logistic, name, recorded)
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((90, 5)), np.arange(90) % 3
    main = threading.main_thread().name
    for multiclass, y_fit, n_jobs, expected in (
            ("ovr", y % 2, 2, ["sparsekit-openmp"]), ("ovr", y % 2, 1, [main]),
            ("multinomial", y, 2, ["sparsekit-openmp"]), ("multinomial", y, 1, [main]),
            ("ovr", y, 1, [main] * 3)):
        threads.clear()
        L1LogisticOBA(n_jobs=n_jobs, multiclass=multiclass).fit(X, y_fit)
        assert threads == expected
    threads.clear()
    L1LogisticOBA(n_jobs=2).fit(X, y)
    assert len(threads) == 3 and main not in threads and "sparsekit-openmp" not in threads
    error = ValueError("raised in the fit's thread")

    def failing(*args, **kwargs):
        raise error
    monkeypatch.setattr(_l1_logistic, "fit_multinomial", failing)
    with pytest.raises(ValueError) as raised:
        L1LogisticOBA(n_jobs=2, multiclass="multinomial").fit(X, y)
    assert raised.value is error


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_n_jobs_runs_a_binary_problems_kernels_on_threads_with_the_same_fit(monkeypatch,
                                                                           fit_intercept):
    """A binary fit's datafit walks a sparse X's columns on n_jobs threads (one-vs-rest
    problems, which run in threads of their own, on one each): the same model, bit for
    bit, as with one job, the matrix-free Hessian products among its kernels; on one
    thread where a walk reads fewer than ``thread_min_entries`` entries (all of them
    here at the default)."""
    from sparsekit.linear_model import _l1_problems
    from sparsekit.losses import _logistic_datafit
    from sparsekit.utils._threads import cpu_threads

    made, products = [], []

    class Spied(_l1_problems.Logistic):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self.n_threads)
    monkeypatch.setattr(_l1_problems, "Logistic", Spied)
    given = _logistic_datafit.K.hessp_csc
    monkeypatch.setattr(_logistic_datafit.K, "hessp_csc",
                        lambda *args: products.append(args[-1]) or given(*args))
    rng = np.random.default_rng(5)
    X = sp.random(300, 6000, density=0.01, random_state=rng, format="csr")
    y = np.where(X @ rng.standard_normal(6000) + 0.1 * rng.standard_normal(300) > 0, 1, 0)
    one = L1LogisticOBA(C=100.0, tol=1e-10, fit_intercept=fit_intercept).fit(X, y)
    L1LogisticOBA(C=100.0, tol=1e-10, fit_intercept=fit_intercept, n_jobs=2).fit(X, y)
    assert made == [1, cpu_threads(2)] and set(products) == {1}
    made.clear(), products.clear()
    monkeypatch.setattr(_logistic_datafit._LinearDatafit, "thread_min_entries", 1)
    two = L1LogisticOBA(C=100.0, tol=1e-10, fit_intercept=fit_intercept, n_jobs=2).fit(X, y)
    assert made == [cpu_threads(2)] and set(products) == {cpu_threads(2)}
    np.testing.assert_array_equal(two.coef_, one.coef_)
    np.testing.assert_array_equal(two.intercept_, one.intercept_)
    made.clear()
    L1LogisticOBA(n_jobs=2).fit(X, np.arange(300) % 3)
    assert made == [1, 1, 1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("route", ["panel_gram", "matrix_free"])
def test_n_jobs_runs_a_binary_fits_dense_kernels_on_threads(monkeypatch, dtype, route):
    """On a dense X the margins, the gradient, the float32-panel Grams and, on the
    matrix-free route (no Gram formed: ``max_explicit`` 0), the Hessian products and their
    diagonal run on n_jobs threads where they read at least ``thread_min_entries`` entries:
    the model of one job (float32 X bit for bit; float64 goes through BLAS, whose rounding
    may differ where a thread's rows start)."""
    from sparsekit.losses import _logistic_datafit, _panel_gram
    from sparsekit.utils._threads import cpu_threads

    calls = {}
    for name in ("margins_dense", "rmatvec_dense", "hessp_dense", "hess_diag_dense"):
        def spy(*args, _given=getattr(_logistic_datafit.K, name), _name=name):
            calls.setdefault(_name, set()).add(args[-1])
            return _given(*args)
        monkeypatch.setattr(_logistic_datafit.K, name, spy)
    given_syrk = _panel_gram.GK.gram_dense_syrk
    monkeypatch.setattr(_panel_gram.GK, "gram_dense_syrk", lambda *a, **kw: calls.setdefault(
        "gram_dense_syrk", set()).add(kw["n_threads"]) or given_syrk(*a, **kw))
    if route == "matrix_free":
        monkeypatch.setattr(_logistic_datafit._LinearDatafit, "max_explicit", 0)
    rng = np.random.default_rng(6)
    X = rng.standard_normal((4000, 120))
    y = (X[:, :60] @ rng.standard_normal(60) + rng.standard_normal(4000) > 0).astype(int)
    X = np.asfortranarray(X.astype(dtype))
    one = L1LogisticOBA(C=1.0, tol=1e-10).fit(X, y)
    assert set(calls) == {"margins_dense", "rmatvec_dense"} | (
        {"gram_dense_syrk"} if route == "panel_gram" else {"hessp_dense", "hess_diag_dense"})
    assert set().union(*calls.values()) == {1}
    calls.clear()
    monkeypatch.setattr(_logistic_datafit._LinearDatafit, "thread_min_entries", 1)
    two = L1LogisticOBA(C=1.0, tol=1e-10, n_jobs=2).fit(X, y)
    # (the margins at w = 0 read no entry, on one thread)
    assert all(cpu_threads(2) in threads <= {1, cpu_threads(2)}
               for threads in calls.values()), calls
    if dtype == np.float32:
        np.testing.assert_array_equal(two.coef_, one.coef_)
        np.testing.assert_array_equal(two.intercept_, one.intercept_)
    else:
        np.testing.assert_allclose(two.coef_, one.coef_, rtol=0, atol=1e-7)
        np.testing.assert_allclose(two.intercept_, one.intercept_, rtol=0, atol=1e-7)


def test_n_jobs_forms_a_sparse_xs_large_grams_on_threads(monkeypatch):
    """A sparse X's Grams of scattered updates run on n_jobs threads from
    ``gram_thread_min_updates`` updates on (one below, and always with one job): the
    model of one job up to the rounding of the Grams' other grouping."""
    from sparsekit.losses import _logistic_datafit
    from sparsekit.utils._threads import cpu_threads

    threads = []
    given = _logistic_datafit.GK.gram_csr
    monkeypatch.setattr(_logistic_datafit.GK, "gram_csr",
                        lambda *args: threads.append(args[-1]) or given(*args))
    rng = np.random.default_rng(7)
    X = sp.random(3000, 80, density=0.2, format="csr", random_state=rng)
    y = (X @ rng.standard_normal(80) + 0.3 * rng.standard_normal(3000) > 0).astype(int)
    one = L1LogisticOBA(C=1.0, tol=1e-10).fit(X, y)
    assert threads and set(threads) == {1}
    threads.clear()
    L1LogisticOBA(C=1.0, tol=1e-10, n_jobs=2).fit(X, y)
    assert threads and set(threads) == {1}      # below the threshold: one thread
    threads.clear()
    monkeypatch.setattr(_logistic_datafit._LinearDatafit, "gram_thread_min_updates", 1)
    two = L1LogisticOBA(C=1.0, tol=1e-10, n_jobs=2).fit(X, y)
    assert threads and set(threads) == {cpu_threads(2)}
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=0, atol=1e-7)
    np.testing.assert_allclose(two.intercept_, one.intercept_, rtol=0, atol=1e-7)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_an_interrupted_fit_ends_the_solves_it_left_in_other_threads(monkeypatch, multiclass):
    """An interrupt of the calling thread (a KeyboardInterrupt in a notebook; here a signal
    whose handler raises) while the solves run in joblib's threads, or a multinomial one on
    OpenMP threads from a thread of its own, ends those solves at their next iteration,
    where they would otherwise run on to their end after the caller gave up on them; the
    estimator is left as it was."""
    from sparsekit.linear_model import _l1_logistic

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: a fit solves its problems in the calling thread")
    first = FirstIteration()
    given = _l1_logistic.L1LogisticOBA._iteration_callback

    def slowed(self, *args, **kwargs):   # each iteration 20 ms longer; the first interrupts
        check, close = given(self, *args, **kwargs)
        return first.slowed(check), close
    monkeypatch.setattr(_l1_logistic.L1LogisticOBA, "_iteration_callback", slowed)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((400, 30)), np.arange(400) % 6
    est = L1LogisticOBA(C=10.0, tol=1e-12, n_jobs=2, multiclass=multiclass)
    made, ended = first.interrupt(lambda: est.fit(X, y))
    # the first iteration of each thread that was solving, and at most one more each
    at_most = 2 * (2 if multiclass == "ovr" else 1)
    assert made == ended <= at_most
    assert not hasattr(est, "coef_")
    monkeypatch.undo()
    uninterrupted = []
    monkeypatch.setattr(_l1_logistic.L1LogisticOBA, "_iteration_callback",
                        lambda self, *args, **kwargs: (lambda x: uninterrupted.append(x),
                                                       lambda: None))
    est.fit(X, y)
    assert len(uninterrupted) > 2 * at_most


@pytest.mark.parametrize("backend", ["loky", "multiprocessing", "threading"])
def test_one_vs_rest_problems_share_the_data_in_threads_whatever_joblibs_backend(backend):
    """The one-vs-rest solves run in threads of this process under any joblib backend (a
    process would be sent a copy of X for each problem; the multiprocessing backend cannot
    hand back results as they end), with the same model."""
    from joblib import parallel_config

    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((200, 6)), np.arange(200) % 3
    expected = L1LogisticOBA(n_jobs=1).fit(X, y).coef_
    with parallel_config(backend=backend):
        np.testing.assert_array_equal(L1LogisticOBA(n_jobs=2).fit(X, y).coef_, expected)


def test_class_weight_equals_sample_weight_and_sparse_coef():
    X, y = _binary(3)
    a = L1LogisticOBA(class_weight={0: 1.0, 1: 3.0}, tol=1e-10).fit(X, y)
    b = L1LogisticOBA(tol=1e-10).fit(X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
    s = L1LogisticOBA(tol=1e-10, sparse_coef=True).fit(sp.csr_matrix(X), y)
    assert sp.issparse(s.coef_)
    np.testing.assert_allclose(s.coef_.toarray(), L1LogisticOBA(tol=1e-10).fit(X, y).coef_,
                               atol=1e-9)
    np.testing.assert_allclose(s.decision_function(X), s.densify().decision_function(X))
    np.testing.assert_allclose(s.sparsify().decision_function(sp.csr_matrix(X)),
                               s.densify().decision_function(sp.csr_matrix(X)))


@pytest.mark.parametrize("sparse", [False, True])
def test_balanced_class_weight_counts_sample_weight_as_repeated_rows(sparse):
    """'balanced' weighs classes by their sample-weight mass (as scikit-learn does), so
    integer weights still equal repeated rows."""
    X, y = _binary(6, n=80, d=6, sparse=sparse)
    counts = np.random.default_rng(0).integers(1, 4, len(y))
    rows = np.repeat(np.arange(len(y)), counts)
    est = L1LogisticOBA(C=0.5, class_weight="balanced", tol=1e-12)
    a = est.fit(X, y, sample_weight=counts).coef_.copy()
    np.testing.assert_allclose(est.fit(X[rows], y[rows]).coef_, a, atol=1e-9)


@pytest.mark.parametrize("scale", [1e-6, 1e4])
def test_scaling_sample_weight_and_C_together_changes_nothing(scale):
    """The stop is measured on the weighted mean loss: weights times ``scale`` with C over
    ``scale`` is the same problem, solved to the same point (also along a path)."""
    X, y = _binary(9, n=300, d=30)
    ref_fit = L1LogisticOBA(C=0.5).fit(X, y)
    fit = L1LogisticOBA(C=0.5 / scale).fit(X, y, sample_weight=np.full(len(y), scale))
    np.testing.assert_allclose(fit.coef_, ref_fit.coef_, atol=1e-9)
    np.testing.assert_allclose(fit.intercept_, ref_fit.intercept_, atol=1e-9)
    path = l1_logistic_path(X, y, Cs=4)
    scaled = l1_logistic_path(X, y, Cs=4, sample_weight=np.full(len(y), scale))
    np.testing.assert_allclose(scaled[1] * scale, path[1], rtol=1e-12)
    np.testing.assert_allclose(scaled[0], path[0], atol=1e-9)
    with pytest.raises(ValueError, match="every sample has weight 0"):
        L1LogisticOBA(class_weight={0: 0.0, 1: 0.0}).fit(X, y)


def test_features_whose_squares_overflow_are_rejected():
    X, y = _binary(7)
    with pytest.raises(ValueError, match="rescale the features"):
        L1LogisticOBA().fit(X * 1e155, y)
    L1LogisticOBA().fit((X * 1e20).astype(np.float32), y)   # float32 data is fine


def test_warm_start_uses_fewer_iterations():
    X, y = _binary(4, n=300, d=40)
    est = L1LogisticOBA(C=1.0, tol=1e-9, warm_start=True).fit(X, y)
    cold_iter = est.n_iter_[0]
    est.set_params(C=1.1).fit(X, y)
    cold = L1LogisticOBA(C=1.1, tol=1e-9).fit(X, y)
    assert est.n_iter_[0] < cold.n_iter_[0] or est.n_iter_[0] < cold_iter
    np.testing.assert_allclose(est.coef_, cold.coef_, atol=1e-7)


def _with_raw_column(kind, n=2000, seed=0):
    """Three classes on standardized columns beside one raw column: zip codes (10,000 to
    99,999: entries far above the others', so ∇f's rounding error in their coefficient
    exceeds tol) or a timestamp (about 1.7e9, spread 3e7: nearly constant, far from 0)."""
    from sklearn.datasets import make_classification
    X, y = make_classification(n, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=seed)
    rng = np.random.default_rng(seed)
    raw = (rng.integers(10_000, 100_000, n).astype(float) if kind == "zip"
           else 1.7e9 + rng.uniform(0, 3e7, n))
    return np.column_stack([X, raw]), y


@pytest.mark.parametrize("kind", ["zip", "timestamp"])
def test_multinomial_class_weights_keep_zero_as_their_median(kind):
    """A feature's K class weights shifted together leave the probabilities as they were:
    the fit keeps the shift of least ℓ1 norm, 0 a median of each feature's weights. Beside
    a raw zip-code column the Newton steps' rounding moved them off it (a weight of 1e-12
    for 0) and the fit stalled above tol (31 iterations and a warning)."""
    X, y = _with_raw_column(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = L1LogisticOBA(multiclass="multinomial").fit(X, y)
    assert est.n_iter_[0] < 20
    W = est.coef_
    assert ((W > 0).sum(axis=0) <= 1).all() and ((W < 0).sum(axis=0) <= 1).all()


def test_multinomial_fits_hold_a_zero_weight_in_every_feature(monkeypatch):
    """With an even K the penalty is flat between a feature's two middle class weights when
    it has as many positive as negative ones: of the models of the same objective the fit
    has the one with a zero there (make_classification, 4 classes: 23 nonzero weights where
    the solver blind to the shift ended at 29 of 32, with every feature's four weights
    nonzero or most of them), with the same probabilities."""
    import sparsekit.linear_model._l1_solve as l1
    from sklearn.datasets import make_classification
    from sparsekit.optimize import minimize_oba

    X, y = make_classification(2000, 8, n_informative=5, n_redundant=0, n_classes=4,
                               random_state=0)
    est = L1LogisticOBA(multiclass="multinomial").fit(X, y)
    monkeypatch.setattr(l1, "minimize_oba", lambda *args, **kwargs: minimize_oba(
        *args, **{**kwargs, "shift_invariant": None}))
    blind = L1LogisticOBA(multiclass="multinomial").fit(X, y)
    assert (est.coef_ == 0).any(axis=0).all() and not (blind.coef_ == 0).any(axis=0).all()
    assert np.count_nonzero(est.coef_) < np.count_nonzero(blind.coef_)
    np.testing.assert_allclose(_objective(est, X, y), _objective(blind, X, y), rtol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X), blind.predict_proba(X), atol=1e-6)


@pytest.mark.parametrize("path", [False, True])
def test_a_fit_at_the_rounding_floor_stops_and_says_why(path):
    """Where tol lies below the gradient's rounding (1e-14 beside zip codes, whose fits
    reach 1e-13) the solve stalls (it ran 500 iterations, 2.5 s, and advised raising
    max_iter): the fit stops within a few dozen iterations at the objective a longer solve
    reaches, and the warning says to standardize or raise tol."""
    X, y = _with_raw_column("zip")
    match = r"(stopped for the multinomial problem|stopped for C=1).*StandardScaler\) or raise tol"
    with pytest.warns(ConvergenceWarning, match=match) as record:
        if path:
            coefs, _, n_iter = l1_logistic_path(X, y, Cs=[1.0], multiclass="multinomial",
                                                tol=1e-14)
        else:
            est = L1LogisticOBA(multiclass="multinomial", tol=1e-14).fit(X, y)
            n_iter = est.n_iter_
    assert len(record) == 1 and "max_iter" not in str(record[0].message)
    assert n_iter[0] < 60
    if not path:
        long = L1LogisticOBA(multiclass="multinomial", max_iter=200, tol=0.0)
        with pytest.warns(ConvergenceWarning, match="stopped"):
            long.fit(X, y)
        assert long.n_iter_[0] < 60          # tol=0 stalls too
        np.testing.assert_array_equal(est.predict(X), long.predict(X))


def _objective(est, X, y):
    """C Σ loss + ‖W‖₁ of a fitted one-vs-rest or multinomial model on X as given."""
    scores = X @ est.coef_.T + est.intercept_
    codes = np.searchsorted(est.classes_, y)
    if est.multiclass == "multinomial":
        top = scores.max(axis=1, keepdims=True)
        log_z = top[:, 0] + np.log(np.exp(scores - top).sum(axis=1))
        loss = (log_z - scores[np.arange(len(y)), codes]).sum()
    else:
        signs = np.where(codes[:, None] == np.arange(scores.shape[1]), 1.0, -1.0)
        loss = np.logaddexp(0.0, -signs * scores).sum()
    return est.C * loss + np.abs(est.coef_).sum()


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_columns_far_from_zero_are_centered_for_the_solve(multiclass, dtype):
    """A dense column whose mean lies beyond 10 standard deviations (a raw timestamp) is
    centered before a fit with an intercept, the same problem: the model is that of a fit
    on X centered by hand with its intercepts moved back, X is left as it was, and the fit
    converges in a few dozen iterations without a warning (before: the one-vs-rest fits
    met tol 2.9e-4 above the minimum of F, the multinomial one stalled there)."""
    X, y = _with_raw_column("timestamp")
    X[:, 0] = 1e6 + X[:, 0]                          # an informative column far from 0
    X = X.astype(dtype)
    given = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = L1LogisticOBA(multiclass=multiclass).fit(X, y)
    np.testing.assert_array_equal(X, given)
    assert est.coef_.dtype == est.intercept_.dtype == dtype
    assert est.n_iter_.sum() < 80
    shift = X.astype(np.float64).mean(axis=0)
    by_hand = L1LogisticOBA(multiclass=multiclass).fit((X - shift).astype(dtype), y)
    by_hand.intercept_ = by_hand.intercept_ - by_hand.coef_ @ shift
    if multiclass == "multinomial":
        by_hand.intercept_ -= by_hand.intercept_.mean()
    assert _objective(est, X.astype(np.float64), y) == pytest.approx(
        _objective(by_hand, X.astype(np.float64), y), rel=1e-6 if dtype == np.float32 else 1e-9)
    np.testing.assert_allclose(est.coef_, by_hand.coef_, rtol=1e-3, atol=1e-5)
    assert np.mean(est.predict(X) == by_hand.predict(X)) >= 0.998   # near-ties may flip


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_centered_fits_warm_start_paths_and_weights(multiclass):
    """Centered columns in a warm start (from the model of X as given), in a path (its
    intercepts those of X as given) and with sample weights (centered by their weighted
    mean: integer weights fit as repeated rows)."""
    X, y = _with_raw_column("timestamp")
    cold = L1LogisticOBA(C=0.5, multiclass=multiclass).fit(X, y)
    warm = L1LogisticOBA(C=1.0, multiclass=multiclass, warm_start=True).fit(X, y)
    first = warm.n_iter_.sum()
    warm.set_params(C=0.5).fit(X, y)
    assert warm.n_iter_.sum() < first
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-6)
    np.testing.assert_allclose(warm.intercept_, cold.intercept_, atol=1e-4)
    if multiclass == "ovr":
        coefs, _, _ = l1_logistic_path(X, (y == 1).astype(int), Cs=[0.5])
        binary = L1LogisticOBA(C=0.5).fit(X, (y == 1).astype(int))
        np.testing.assert_allclose(coefs[0, :-1], binary.coef_[0], atol=1e-6)
        np.testing.assert_allclose(coefs[0, -1], binary.intercept_[0], atol=1e-4)
    else:
        coefs, _, _ = l1_logistic_path(X, y, Cs=[0.5], multiclass="multinomial")
        np.testing.assert_allclose(coefs[0, :, :-1], cold.coef_, atol=1e-6)
        np.testing.assert_allclose(coefs[0, :, -1], cold.intercept_, atol=1e-4)
    counts = np.random.default_rng(0).integers(1, 4, y.size)   # weights as repeated rows
    weighted = L1LogisticOBA(C=0.5, multiclass=multiclass).fit(X, y, sample_weight=counts)
    rows = np.repeat(np.arange(y.size), counts)
    repeated = L1LogisticOBA(C=0.5, multiclass=multiclass).fit(X[rows], y[rows])
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-6)
    np.testing.assert_allclose(weighted.intercept_, repeated.intercept_, atol=1e-4)


def test_convergence_warning_and_bad_input():
    X, y = _binary(5)
    with pytest.warns(ConvergenceWarning):
        L1LogisticOBA(max_iter=1, tol=1e-14).fit(X, y)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        L1LogisticOBA().fit(bad, y)
    with pytest.raises(ValueError):
        L1LogisticOBA(C=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="class"):
        L1LogisticOBA().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="sample_weight"):
        L1LogisticOBA().fit(X, y, sample_weight=-np.ones(len(y)))
    for weight in (-1.0, np.nan):
        with pytest.raises(ValueError, match="class_weight must be finite and non-negative"):
            L1LogisticOBA(class_weight={0: 1.0, 1: weight}).fit(X, y)
    with pytest.raises(ValueError, match="too large"):
        L1LogisticOBA(C=1e307).fit(X, y)
    with pytest.raises(ValueError, match="too large"):
        L1LogisticOBA().fit(X, y, sample_weight=np.full(len(y), 1e307))
    with pytest.raises(ValueError, match="too small: .* overflows; use a larger C"):
        L1LogisticOBA(C=1e-20).fit(X, y, sample_weight=np.full(len(y), 1e-300))
    with pytest.raises(ValueError, match="too small: .* overflows; use a larger C"):
        L1LogisticOBA(C=1e-300).fit(X, y, sample_weight=np.full(len(y), 1e-300))  # 0 product
    est = L1LogisticOBA().fit(X, y)
    pickle.loads(pickle.dumps(est)).predict(X)
    with pytest.raises(ValueError):
        est.predict(X[:, :5])


@pytest.mark.skipif(not (DATA / "libsvm" / "a9a.xz").exists(), reason="datasets absent")
def test_a9a_subset_against_liblinear():
    import lzma

    from sklearn.datasets import load_svmlight_file

    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    X, y = load_svmlight_file(lzma.open(DATA / "libsvm" / "a9a.xz"), n_features=123)
    X, y = X[:3000], y[:3000]
    est = L1LogisticOBA(C=1.0, fit_intercept=False, tol=1e-9).fit(X, y)
    model = liblinearutil.train(y, X, "-s 6 -B -1 -e 1e-10 -q -c 1")
    w_ll = np.array([model.w[i] for i in range(123)]) * (1 if model.get_labels()[0] == 1 else -1)
    F = ref.l1_logistic_objective(X, y, est.coef_.ravel(), 0.0, 1.0)
    F_ll = ref.l1_logistic_objective(X, y, w_ll, 0.0, 1.0)
    assert F <= F_ll * (1 + 1e-6)


@pytest.mark.skipif(not (DATA / "libsvm" / "a9a.xz").exists(), reason="datasets absent")
def test_tight_tol_keeps_the_proven_lipschitz_bound():
    """Near the optimum the ISTA descent test fails by rounding (~1e-14 |F|) whatever L is:
    the datafit's proven bound must not be doubled (it once reached 4096x, 261 function
    values, with a false 'below the curvature' warning)."""
    import lzma
    import warnings

    from sklearn.datasets import load_svmlight_file

    from sparsekit.optimize import minimize_oba

    X, y = load_svmlight_file(lzma.open(DATA / "libsvm" / "a9a.xz"), n_features=123)
    X, y = X[:4000], y[:4000]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        L1LogisticOBA(C=0.01, tol=1e-9, fit_intercept=False).fit(X, y)
        datafit = Logistic(X.tocsc(), y)
        res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(123), 1 / (0.01 * 4000),
                           lipschitz=datafit.lipschitz, tol=1e-9)
    assert res.success and res.lipschitz == datafit.lipschitz()


def test_huge_features_keep_the_float32_panels_finite():
    """Features near 1e20 pass the float64 input check but overflow the float32 Gram panels
    (inf Hessians: the CSR fit once ended at F = 1467 against 1185): the float64 routes
    take over, and the label in the warning reads 1, not np.int64(1)."""
    import warnings

    from sklearn.datasets import make_classification

    X, y = make_classification(400, 100, n_informative=30, random_state=0)
    X[:, :5] *= 1e20
    fits = []
    for Z in (X, sp.csr_matrix(X)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fits.append(L1LogisticOBA(C=10, max_iter=300).fit(Z, y))
        assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
        assert all("np.int64" not in str(w.message) for w in caught)
    F = [ref.l1_logistic_objective(X, 2.0 * y - 1, e.coef_.ravel(), e.intercept_[0], 10.0)
         for e in fits]
    np.testing.assert_allclose(F[1], F[0], rtol=1e-9)


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_sparse_input_with_mixed_index_types(layout):
    """int32 indices with an int64 indptr (kept by scikit-learn's validation) fit and predict
    as the uniform matrix does, instead of failing in a kernel's buffer check."""
    X, y = _binary(6)
    A = sp.csr_matrix(X) if layout == "csr" else sp.csc_matrix(X)
    mixed = A.copy()
    mixed.indptr = mixed.indptr.astype(np.int64)
    assert mixed.indices.dtype != mixed.indptr.dtype
    est = L1LogisticOBA(C=0.5).fit(mixed, y)
    ref_est = L1LogisticOBA(C=0.5).fit(A, y)
    np.testing.assert_allclose(est.coef_, ref_est.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(est.decision_function(mixed), ref_est.decision_function(A),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_sparse_coef_predicts_on_float32_sparse_input(layout):
    X, y = _binary(2)
    X32 = sp.csr_matrix(X, dtype=np.float32).asformat(layout)
    est = L1LogisticOBA(C=1.0).fit(X32, y)
    dense_scores = est.decision_function(X32)
    est.sparsify()
    np.testing.assert_allclose(est.decision_function(X32), dense_scores, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(est.predict(X32), est.predict(X32.toarray()))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_log_probabilities_are_exact_and_finite_for_huge_margins(n_classes):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((90, 4))
    y = np.arange(90) % n_classes
    est = L1LogisticOBA(C=10.0).fit(X, y)
    est.coef_ = est.coef_ * 1e4  # margins of order 1e4: every σ rounds to 0 or 1
    logp = est.predict_log_proba(X)
    assert np.all(np.isfinite(logp)) and np.all(logp <= 0)
    np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X), np.exp(logp), rtol=1e-12)
    est.coef_ = est.coef_ * 1e-4  # moderate margins: the plain formula, for reference
    z = est.decision_function(X)
    sigma = 1.0 / (1.0 + np.exp(-z))
    plain = (np.column_stack([1 - sigma, sigma]) if n_classes == 2
             else sigma / sigma.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(est.predict_log_proba(X), np.log(plain), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_probabilities_where_every_sigma_underflows(multiclass, dtype):
    """Rows whose one-vs-rest margins all lie below -700 (every σ below the smallest normal
    float64, or 0) keep the probabilities of their logarithms; the others' are those of
    the logarithms to rounding, in the model's and X's dtype."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((60, 3)).astype(dtype)
    y = np.arange(60) % 3
    est = L1LogisticOBA(C=1.0, multiclass=multiclass).fit(X, y)
    est.intercept_ = est.intercept_ + np.array([-800.0, -750.0, -705.0], dtype=dtype)
    X[::2] = 0                          # even rows: the intercepts' margins alone
    P, logp = est.predict_proba(X), est.predict_log_proba(X)
    assert P.dtype == logp.dtype == dtype and np.all(np.isfinite(P))
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-6 if dtype == np.float32 else 1e-12)
    np.testing.assert_allclose(P, np.exp(logp), rtol=1e-6 if dtype == np.float32 else 1e-12,
                               atol=1e-44 if dtype == np.float32 else 1e-300)  # subnormals
    np.testing.assert_array_equal(P[::2].argmax(axis=1), 2)
    assert P[0, 2] > 0.99


def test_null_intercept_is_the_weighted_log_odds():
    y = np.array([1.0, 1.0, -1.0, -1.0, -1.0])
    sw = np.array([1.0, 3.0, 1.0, 1.0, 0.0])
    assert Logistic(np.ones((5, 1)), y, sw).null_intercept() == pytest.approx(np.log(4 / 2))
    assert Logistic(np.ones((5, 1)), y, 0 * sw).null_intercept() == 0.0
    assert Logistic(np.ones((5, 1)), np.ones(5)).null_intercept() == pytest.approx(
        np.log(1e12), rel=1e-3)  # one class: clipped, finite


@pytest.mark.parametrize("n_classes", [2, 3])
def test_warm_start_restarts_at_the_previous_solution(n_classes):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 10))
    y = (np.digitize(X[:, 1], [-0.5, 0.5]) if n_classes == 3
         else (X[:, 0] + 1.0 + rng.standard_normal(200) > 0).astype(int))
    est = L1LogisticOBA(C=1.0, warm_start=True).fit(X, y)
    intercept = est.intercept_.copy()
    est.fit(X, y)
    assert np.all(est.n_iter_ == 0)
    np.testing.assert_array_equal(est.intercept_, intercept)


def test_a_refit_that_fails_keeps_the_fitted_model():
    X, y = _binary(3)
    model = L1LogisticOBA(C=0.5).fit(X, y)
    before = model.predict_proba(X)
    with pytest.raises(ValueError, match="Unknown label type"):
        model.fit(X[:, :3], np.linspace(0, 1, X.shape[0]))
    assert model.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(model.predict_proba(X), before)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("sample_weight", [None, "random"])
def test_duality_gap_bounds_the_suboptimality(sparse, sample_weight):
    X, y = _binary(3, sparse=sparse)
    sw = (None if sample_weight is None
          else np.random.default_rng(0).uniform(0.1, 3.0, size=len(y)))
    y_pm = np.where(y == 1, 1.0, -1.0)
    C = 2.0
    tight = L1LogisticOBA(C=C, tol=1e-12, fit_intercept=False).fit(X, y, sample_weight=sw)
    assert 0 <= tight.duality_gap_[0] <= 1e-9
    ones = np.ones(len(y)) if sw is None else sw
    F_star = ref.l1_logistic_objective(X, y_pm, tight.coef_.ravel(), 0.0, C, ones)
    for tol in (1e-2, 1e-4):
        loose = L1LogisticOBA(C=C, tol=tol, fit_intercept=False).fit(X, y, sample_weight=sw)
        F = ref.l1_logistic_objective(X, y_pm, loose.coef_.ravel(), 0.0, C, ones)
        assert (F - F_star) / F <= loose.duality_gap_[0] + 1e-12


def test_a_fit_that_meets_tol_far_from_the_minimum_continues_or_warns(capsys):
    """tol is absolute in the scaled problem: on separable data at C = 1e6 it is met with F
    6% above its minimum (gap 29%); the fit then goes on until the gap is below 1% and
    returns that model, within 1e-5 of the minimum, without a warning. On features scaled
    by 1e-10 (C by 1e10: the same problem) tol was met at w = 0, where neither the gap nor
    the measure falls, with a warning; such X is now solved in units of entries near 1,
    and the fit is the one of X at C = 10 (1e10 times its weights); the elastic net's too
    (which warned)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 30))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    y_pm = np.where(y == 1, 1.0, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = L1LogisticOBA(C=1e6, verbose=1).fit(X, y)
    assert ("the solve went on until the gap was below it or the optimality below 1.00e-10, "
            "lowering F by 5.77e-02" in capsys.readouterr().out)
    tight = L1LogisticOBA(C=1e6, tol=1e-12, max_iter=5000).fit(X, y)
    F, F_star = (ref.l1_logistic_objective(X, y_pm, e.coef_.ravel(), e.intercept_[0], 1e6,
                                           np.ones(len(y))) for e in (est, tight))
    assert est.duality_gap_[0] < 0.05 and (F - F_star) / F_star < 1e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        tiny = L1LogisticOBA(C=10 / 1e-10).fit(X * 1e-10, y)
        unit = L1LogisticOBA(C=10).fit(X, y)
        assert L1LogisticOBA(C=1.0).fit(X, y).duality_gap_[0] < 1e-6
        net = L1LogisticOBA(C=10 / 1e-10, l1_ratio=0.999999).fit(X * 1e-10, y)
    np.testing.assert_allclose(tiny.coef_ * 1e-10, unit.coef_, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(tiny.intercept_, unit.intercept_, rtol=1e-6)
    assert net.duality_gap_[0] < 0.01 and net.n_iter_[0] <= 50


@pytest.mark.parametrize("C", [1e4, 1e6])
def test_a_smaller_tol_never_returns_a_model_of_larger_objective(C):
    """The fit stops at the first iterate that meets tol with a duality gap below 1% or a
    measure below tol / 100, tests that a larger tol passes wherever a smaller one does, on
    iterates that do not depend on tol: F cannot rise as tol falls. A second solve from the
    first point that met tol (the rule before) returned on these separable data a model
    of larger F at tol 1e-7 than at 1e-6 (C = 1e4, by 5.7e-6 of F) and at 1e-10 than at
    1e-9 (C = 1e6, by 3.4e-6)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((200, 30))
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    y_pm = np.where(y == 1, 1.0, -1.0)
    F, iterations = [], []
    for tol in 10.0 ** -np.arange(3, 13):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = L1LogisticOBA(C=C, tol=tol).fit(X, y)
        F.append(ref.l1_logistic_objective(X, y_pm, est.coef_.ravel(), est.intercept_[0], C,
                                           np.ones(len(y))))
        iterations.append(est.n_iter_[0])
    assert np.all(np.diff(F) <= 1e-13 * F[0]) and np.all(np.diff(iterations) >= 0)
    assert F[-1] < F[0]


def test_one_warning_per_kind_for_a_one_vs_rest_fit():
    """A one-vs-rest fit of many classes warns once for each kind of failure, naming how many
    classes and the first five of them, not once per class (21 warnings of ~400 characters
    on a corpus of 53 sections at C = 100, tol 1e-4)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 40))
    y = np.argmax(X @ rng.standard_normal((40, 7)), axis=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        L1LogisticOBA(max_iter=1).fit(X, y)
    assert [str(w.message) for w in caught] == [
        "OBA did not converge for 7 of 7 classes (0, 1, 2, 3, 4 and 2 more) in 1 iterations "
        "(optimality up to 8.51e-02 > tol 1.00e-08); increase max_iter."]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = L1LogisticOBA(C=1e5, tol=1e-4).fit(X, y)
    assert len(caught) == 1 and caught[0].category is ConvergenceWarning
    flat = np.flatnonzero(est.duality_gap_ > 0.05)
    assert flat.size >= 2
    message = str(caught[0].message)
    assert message.startswith(f"OBA met tol 1.00e-04 for {flat.size} of 7 classes "
                              f"({', '.join(map(str, flat))}) with F at least ")
    assert f"by up to {est.duality_gap_.max():.1%}: F is very flat" in message
    with warnings.catch_warnings(record=True) as caught:   # one class: its name alone
        warnings.simplefilter("always")
        L1LogisticOBA(max_iter=1).fit(X, y == 0)
    assert str(caught[0].message).startswith("OBA did not converge for class True in 1 ")


def _long_rows():
    """Standard normal columns, labels from the first, and three rows 1e6 to 1e8 times as
    long as the rest: OBA converges at C = 0.15 only after 423 to 879 (dense float64, on
    the oldest and the newest supported releases) up to more than 5,000 (sparse)
    iterations, the count varying with the rounding (scikit-learn's liblinear,
    intercept_scaling=1e4, ends 22% above the minimum after 100,000)."""
    rng = np.random.default_rng(50)
    X = rng.standard_normal((300, 20))
    y = np.where(X[:, 0] + rng.standard_normal(300) > 0, 1, -1)
    X[[65, 70, 131]] *= np.array([[1e7], [1e6], [1e8]])
    return X, y


def test_a_fit_that_long_rows_hold_back_names_them():
    """A solve that stops at max_iter on rows of very different lengths names the long
    rows instead of only advising more iterations (which, of eleven such problems, helped
    five), in a fit of any layout of X, a path and a cross-validation; the same X with its
    rows scaled converges. Rows of ordinary lengths keep the usual advice."""
    from sklearn.preprocessing import Normalizer
    from sparsekit.linear_model import L1LogisticOBACV
    X, y = _long_rows()
    norms = np.linalg.norm(X, axis=1)
    named = (f"; X[65], X[70] and X[131] are up to {norms.max() / np.median(norms):.1e} "
             "times as long as X's median row: ")
    advice = "(sklearn.preprocessing.Normalizer), or increase max_iter several times over"
    for given in (X, X.astype(np.float32), sp.csc_matrix(X), sp.csr_matrix(X)):
        with pytest.warns(ConvergenceWarning) as record:
            L1LogisticOBA(C=0.15, max_iter=50).fit(given, y)
        message = str(record[0].message)
        assert message.startswith("OBA did not converge for class 1 in 50 iterations")
        assert named in message and advice in message
    with pytest.warns(ConvergenceWarning) as record:
        l1_logistic_path(X, y, Cs=[0.15, 0.3], max_iter=50)
    assert named in str(record[0].message)
    with pytest.warns(ConvergenceWarning) as record:
        L1LogisticOBACV(Cs=[0.15], cv=2, max_iter=50).fit(X, y)
    assert str(record[0].message).startswith("OBA did not converge in 50 iterations for ")
    assert all(named in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        L1LogisticOBA(C=0.15).fit(Normalizer().fit_transform(X), y)
    with pytest.warns(ConvergenceWarning, match=r"tol 1.00e-08\); increase max_iter\.$"):
        L1LogisticOBA(C=0.15, max_iter=2).fit(np.delete(X, [65, 70, 131], axis=0),
                                              np.delete(y, [65, 70, 131]))


def _large_entries():
    """A binary problem whose nonzero entries have a root mean square of about 300 (raw
    pixels, incomes): a solve of it that stops early is advised to scale X."""
    X, y = _binary(3, n=200)
    return 300.0 * X, y


def test_a_fit_on_large_entries_advises_scaling_them():
    """A solve that stops at max_iter (or stalls) on large entries says so and advises
    scaling X's columns, in a fit of any layout, a path and a cross-validation; the same X
    scaled keeps the usual advice."""
    from sparsekit.linear_model import L1LogisticOBACV
    X, y = _large_entries()
    said = "; X's nonzero entries have a root mean square of "
    for given in (X, X.astype(np.float32), sp.csc_matrix(X), sp.csr_matrix(X)):
        with pytest.warns(ConvergenceWarning) as record:
            L1LogisticOBA(max_iter=2).fit(given, y)
        message = str(record[0].message)
        assert said in message and message.endswith(
            "pixels / 255), or increase max_iter several times over (such fits take hundreds "
            "to thousands of iterations, some never converge).")
    for fit in (lambda: l1_logistic_path(X, y, Cs=[1.0, 2.0], max_iter=2),
                lambda: L1LogisticOBACV(Cs=[1.0], cv=2, max_iter=2).fit(X, y),
                lambda: L1LogisticOBA(max_iter=2, multiclass="multinomial").fit(
                    X, np.arange(len(y)) % 3)):
        with pytest.warns(ConvergenceWarning) as record:
            fit()
        assert any(said in str(w.message) for w in record)
    with pytest.warns(ConvergenceWarning, match=r"tol 1.00e-08\); increase max_iter\.$"):
        L1LogisticOBA(max_iter=2).fit(X / 300.0, y)


def test_no_gap_warning_where_tol_exceeds_the_penalty_weight():
    """scikit-learn's test_consistency_path problem at tol 1e-5: F within 2e-10 of its
    minimum, and a gap of up to 73% of F, because tol (1e-5) lets the optimality conditions
    be violated by up to 20 times the penalty weight 1/(C n). The check at tol / 100 shows
    that F is at its minimum: no warning. Below the penalty weight the gap is tight."""
    for seed in range(3):
        rng = np.random.RandomState(seed)
        X = np.concatenate((rng.randn(100, 2) + [1, 1], rng.randn(100, 2)))
        y = np.array([1] * 100 + [-1] * 100)
        for C in np.logspace(0, 4, 10):
            with warnings.catch_warnings():
                warnings.simplefilter("error", ConvergenceWarning)
                L1LogisticOBA(C=C, tol=1e-5, fit_intercept=False).fit(X, y)
                tight = L1LogisticOBA(C=C, tol=0.01 / (C * 200), fit_intercept=False).fit(X, y)
            assert tight.duality_gap_[0] <= 0.05


def test_float32_data_converge_to_a_tight_tol():
    """The model search compares q - q0 term by term: as the difference of two large sums
    it rounded to noise near w*, and alpha halved until the iterates stopped moving."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 15))
    X[rng.random((120, 15)) < 0.4] = 0
    y = (X[:, 0] - 2 * X[:, 1] + 0.7 * rng.standard_normal(120) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = L1LogisticOBA(C=1.0, fit_intercept=False, tol=1e-10, max_iter=300).fit(
            X.astype(np.float32), y)
    assert est.n_iter_[0] < 50 and est.optimality_[0] <= 1e-10


def test_single_class_and_balanced_weights_of_an_empty_class_are_named_errors():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="only one class: 'a'"):
        L1LogisticOBA().fit(X, np.array(["a"] * 20))
    y = np.r_[np.zeros(10), np.ones(10)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # scikit-learn's division by zero leaked
        with pytest.raises(ValueError, match="class 1.0 has none"):
            L1LogisticOBA(class_weight="balanced").fit(
                X, y, sample_weight=np.r_[np.ones(10), np.zeros(10)])


# --- empty columns (hashed features): the solvers see the used columns only


def _multiclass(seed=0, n=150, d=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < 0.5)
    y = np.argmax(X[:, :3] + 0.5 * rng.standard_normal((n, 3)), axis=1)
    return X, y


@pytest.mark.parametrize("kind", ["binary", "ovr", "multinomial", "elastic-net", "sparse_coef",
                                  "no intercept"])
def test_empty_columns_cost_nothing_and_get_zero_weights(kind, monkeypatch):
    import sparsekit.linear_model._l1_problems as module
    from _hashed import spread_columns

    X, y = _binary(sparse=True) if kind == "binary" else _multiclass()
    wide, places = spread_columns(X, 1000)
    params = {"binary": {}, "ovr": {}, "multinomial": {"multiclass": "multinomial"},
              "elastic-net": {"l1_ratio": 0.5}, "sparse_coef": {"sparse_coef": True},
              "no intercept": {"fit_intercept": False}}[kind]
    seen = []
    layouts = module.layouts
    monkeypatch.setattr(module, "layouts", lambda X, *a, **k: (seen.append(X.shape[1]),
                                                                layouts(X, *a, **k))[1])
    est = L1LogisticOBA(C=2.0, **params).fit(wide, y)
    assert seen == [X.shape[1]]                       # the solvers saw the used columns
    ref = L1LogisticOBA(C=2.0, **params).fit(sp.csr_matrix(X), y)
    coef = est.coef_.toarray() if kind == "sparse_coef" else est.coef_
    assert sp.issparse(est.coef_) == (kind == "sparse_coef")
    assert coef.shape == (ref.intercept_.size, 1000)
    np.testing.assert_array_equal(coef[:, places], ref.coef_.toarray() if kind == "sparse_coef"
                                  else ref.coef_)
    assert not np.any(np.delete(coef, places, axis=1))
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    np.testing.assert_array_equal(est.n_iter_, ref.n_iter_)
    np.testing.assert_allclose(est.predict_proba(wide), ref.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("layout", ["csr", "csc", "duplicates"])
def test_sparse_columns_far_from_zero_are_centered_as_dense_ones(multiclass, layout):
    """One-hot columns beside a numeric column 1e6 + x stored in every row (a
    ColumnTransformer's sparse output): that column is centered in the sparse copies the
    solver reads (before: the multinomial fit stopped at max_iter, the one-vs-rest fits
    took 87 iterations), X is left as it was, and the objective is the dense fit's."""
    X, y = _with_raw_column("timestamp", n=1500)
    X[:, -1] = 1e6 + X[:, 0]
    onehot = np.eye(8)[np.random.default_rng(1).integers(0, 8, y.size)]
    dense = np.hstack([onehot, X])
    given = (_with_duplicates(dense, "csr") if layout == "duplicates"
             else sp.csr_matrix(dense).asformat(layout))
    kept = given.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = L1LogisticOBA(multiclass=multiclass).fit(given, y)
    assert est.n_iter_.sum() < 40 * est.n_iter_.size
    assert (given != kept).nnz == 0 and given.format == kept.format
    ref = L1LogisticOBA(multiclass=multiclass).fit(dense, y)
    assert _objective(est, dense, y) == pytest.approx(_objective(ref, dense, y), rel=1e-9)
    np.testing.assert_allclose(est.predict_proba(given), ref.predict_proba(dense), atol=1e-6)
    path = dict(Cs=[0.5], multiclass=multiclass, pos_class=None if multiclass ==
                "multinomial" else 1)
    np.testing.assert_allclose(l1_logistic_path(given, y, **path)[0][..., -1],
                               l1_logistic_path(dense, y, **path)[0][..., -1], rtol=1e-4)


@pytest.mark.parametrize("raw", [False, True])
def test_one_vs_rest_problems_share_one_fortran_copy_of_a_c_ordered_x(raw, monkeypatch):
    """The column kernels read a dense X in Fortran order: a C-ordered X (NumPy's default)
    is copied once for the fit's problems, not once per class (with a column far from 0,
    the centered copy is that one); the model is that of the Fortran-ordered X."""
    import sparsekit.linear_model._l1_problems as module

    X, y = _with_raw_column("timestamp", n=600) if raw else _multiclass()
    X = np.ascontiguousarray(X)
    held, block = [], module.binary_block
    monkeypatch.setattr(module, "binary_block",
                        lambda *a, **kw: held.append(block(*a, **kw)) or held[-1])
    est = L1LogisticOBA(C=0.5).fit(X, y)
    assert len(held) == est.classes_.size
    assert all(d.X is held[0].X for d in held) and held[0].X.flags.f_contiguous
    assert (held[0].offsets is not None) == raw
    again = L1LogisticOBA(C=0.5).fit(np.asfortranarray(X), y)    # (the shifts' last bits)
    np.testing.assert_allclose(est.coef_, again.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.intercept_, again.intercept_, rtol=1e-9)


def test_warm_start_drops_weights_of_columns_now_empty():
    from _hashed import spread_columns

    X, y = _multiclass()
    wide, places = spread_columns(X, 300)
    assert places[0] > 1
    filled = wide.tolil()
    filled[:, 0], filled[:, 1] = 1.0, np.arange(150.0) % 3 == y   # two more used columns
    est = L1LogisticOBA(C=5.0).fit(filled, y)
    assert np.any(est.coef_[:, :2])
    warm = est.set_params(warm_start=True).fit(wide, y)    # starts with columns 0-1's weights
    assert not np.any(warm.coef_[:, :2])
    np.testing.assert_allclose(warm.coef_, L1LogisticOBA(C=5.0).fit(wide, y).coef_, atol=1e-6)


def test_callbacks_see_models_as_wide_as_X():
    from _callbacks import Recorder
    from _hashed import spread_columns

    X, y = _multiclass()
    wide, _ = spread_columns(X, 500)
    recorder = Recorder()      # scores the model of each iteration on the X it was given
    est = L1LogisticOBA(C=2.0, multiclass="multinomial").set_callbacks(recorder).fit(wide, y)
    assert recorder.scores and recorder.scores[-1] == est.score(wide, y)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_an_X_that_stores_no_entry_fits_the_model_of_a_zero_X(multiclass, fit_intercept):
    """No used column at all (and, without an intercept, no parameter): the model of the
    dense zero X, w = 0 and the class frequencies or uniform probabilities; its path says
    that w = 0 is optimal for every C, as on the dense zero X (the multinomial fit without
    an intercept raised ZeroDivisionError, the paths a NumPy reduction error)."""
    y = np.array([0, 1, 2, 0, 1, 2, 0])
    empty = sp.csr_matrix((7, 5))
    est = L1LogisticOBA(multiclass=multiclass, fit_intercept=fit_intercept).fit(empty, y)
    ref = L1LogisticOBA(multiclass=multiclass, fit_intercept=fit_intercept).fit(
        np.zeros((7, 5)), y)
    assert est.coef_.shape == (3, 5) and not np.any(est.coef_)
    np.testing.assert_allclose(est.predict_proba(empty), ref.predict_proba(np.zeros((7, 5))),
                               atol=1e-8)
    for X in (empty, np.zeros((7, 5))):
        with pytest.raises(ValueError, match="w = 0 is optimal for every C"):
            l1_logistic_path(X, y % 2, Cs=3, multiclass=multiclass,
                             fit_intercept=fit_intercept)


@pytest.mark.parametrize("dtype, multiclass", [(np.float64, "ovr"), (np.float32, "multinomial")])
def test_a_dense_coef_larger_than_half_the_memory_is_refused_before_the_fit(
        monkeypatch, dtype, multiclass):
    """Hashed features with many classes: the dense coef_ (classes x columns, in X's dtype)
    would fill the memory at the fit's end; refused at its start, sparse_coef=True fits."""
    import sparsekit.utils._validation as validation
    rng = np.random.default_rng(0)
    X = sp.random(60, 5000, density=0.002, random_state=1, format="csr", dtype=dtype)
    y = rng.integers(0, 3, 60)
    size = 3 * 5000 * np.dtype(dtype).itemsize
    monkeypatch.setattr(validation, "physical_memory", lambda: 2 * size - 2)
    clf = L1LogisticOBA(C=10.0, multiclass=multiclass)
    with pytest.raises(ValueError, match=r"coef_ would take 0.0 GiB as a dense array \(3 rows "
                                         r"x 5,000 columns\), more than half .* "
                                         r"sparse_coef=True"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")
    assert sp.issparse(clf.set_params(sparse_coef=True).fit(X, y).coef_)
    monkeypatch.setattr(validation, "physical_memory", lambda: 2 * size)
    assert clf.set_params(sparse_coef=False).fit(X, y).coef_.shape == (3, 5000)


@pytest.mark.parametrize("n_classes, kw", [(2, {}), (3, {}), (3, {"multiclass": "multinomial"}),
                                          (2, {"sparse_coef": True})])
def test_select_from_model_keeps_exactly_the_features_of_nonzero_weight(n_classes, kw):
    """scikit-learn's SelectFromModel reads ``penalty``: with "l1" its default threshold is
    1e-5, so it keeps the nonzero columns, where "mean" (its default for other models)
    would drop some of them."""
    from sklearn.base import clone
    from sklearn.feature_selection import SelectFromModel
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 30))
    scores = X[:, :8] @ (2.0 ** -np.arange(8)) + 0.3 * rng.standard_normal(300)
    y = np.digitize(scores, np.quantile(scores, np.linspace(0, 1, n_classes + 1)[1:-1]))
    selector = SelectFromModel(L1LogisticOBA(C=0.1, **kw)).fit(X, y)
    coef = selector.estimator_.coef_
    coef = coef.toarray() if sp.issparse(coef) else coef
    nonzero = (coef != 0).any(axis=0)
    assert 0 < nonzero.sum() < X.shape[1]
    assert selector.threshold_ == 1e-5
    np.testing.assert_array_equal(selector.get_support(), nonzero)
    mean_rule = SelectFromModel(L1LogisticOBA(C=0.1, **kw), threshold="mean").fit(X, y)
    assert mean_rule.get_support().sum() < nonzero.sum()   # what it did before
    # a read-only name, not a parameter; the elastic net gets the "mean" rule, as in
    # scikit-learn's LogisticRegression
    assert "penalty" not in L1LogisticOBA().get_params()
    assert clone(L1LogisticOBA(l1_ratio=0.5)).penalty == "elasticnet"
    with pytest.raises(AttributeError):
        L1LogisticOBA().penalty = "l2"


def test_the_float32_panels_check_makes_no_copy_of_x():
    """The check that the float32 Gram panels stay finite reads X's largest magnitude
    without a temporary |X| (a copy of X: MNIST as a dense array took 2.1 times its size
    over the fit, now 1.1, the Fortran copy)."""
    from _memory import peak_allocated

    rng = np.random.default_rng(0)
    X = np.asfortranarray(rng.normal(size=(5000, 200)))
    X[3, 7] = -40.0                                  # the largest magnitude is negative
    for Z in (X, sp.csc_matrix(X)):
        datafit = Logistic(Z, np.where(X[:, 0] > 0, 1.0, -1.0))
        datafit.value_grad(np.zeros(200))
        fits, peak = peak_allocated(datafit._panels_fit_float32)
        assert fits and datafit._max_abs == 40.0
        assert peak < 0.01 * X.nbytes
        datafit._max_abs = None
        X_big = Z * 1e19
        datafit = Logistic(X_big, np.where(X[:, 0] > 0, 1.0, -1.0))
        datafit.value_grad(np.zeros(200))
        assert not datafit._panels_fit_float32()


def test_one_vs_rest_holds_one_coef_not_every_problems_results():
    """Each binary problem writes its row of ``coef_`` when it ends, and its result keeps no
    vectors: the results of every class (the solution and its gradient) and their stack took
    4.3 times ``coef_``'s size at the peak here (the Debian corpus' 58 classes: 795 MB), now
    1.8, the rest a problem's working memory; the same model as each class fitted alone."""
    from _memory import peak_allocated

    rng = np.random.default_rng(0)
    X = sp.random(1000, 20_000, density=0.005, format="csr", random_state=0)
    y = rng.integers(0, 30, 1000)
    est, peak = peak_allocated(lambda: L1LogisticOBA().fit(X, y))
    assert est.coef_.shape == (30, 20_000) and est.n_iter_.shape == (30,)
    assert peak < 2.2 * est.coef_.nbytes
    alone = L1LogisticOBA().fit(X, y == est.classes_[7])
    np.testing.assert_array_equal(est.coef_[7], alone.coef_[0])
    np.testing.assert_array_equal(est.intercept_[7], alone.intercept_[0])


def test_one_vs_rest_with_sparse_coef_never_holds_a_dense_coef():
    """With ``sparse_coef=True`` each problem's row goes into ``coef_`` as its nonzeros: the
    fit formed the dense classes x columns array first, then its CSR copy, the memory that
    sparse_coef is for (hashed features, many classes); the same model as the dense fit."""
    from _memory import peak_allocated

    rng = np.random.default_rng(0)
    X = sp.random(1000, 20_000, density=0.005, format="csr", random_state=0)
    y = rng.integers(0, 100, 1000)
    est, peak = peak_allocated(lambda: L1LogisticOBA(sparse_coef=True).fit(X, y))
    dense = L1LogisticOBA().fit(X, y)
    assert sp.issparse(est.coef_) and peak < 0.5 * dense.coef_.nbytes
    np.testing.assert_array_equal(est.coef_.toarray(), dense.coef_)
    np.testing.assert_array_equal(est.intercept_, dense.intercept_)
    np.testing.assert_allclose(est.predict_proba(X), dense.predict_proba(X), rtol=1e-12)


def test_one_vs_rest_in_a_process_backend_is_the_sequential_fit():
    """Under ``joblib.parallel_backend("loky")`` the problems are solved in other processes:
    their rows of ``coef_`` come back with their results (none is written in place)."""
    from joblib import parallel_backend

    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 6))
    y = rng.integers(0, 3, 120)
    alone = L1LogisticOBA(C=2.0).fit(X, y)
    with parallel_backend("loky", n_jobs=2):
        spread = L1LogisticOBA(C=2.0).fit(X, y)
    np.testing.assert_array_equal(spread.coef_, alone.coef_)
    np.testing.assert_array_equal(spread.intercept_, alone.intercept_)
    np.testing.assert_array_equal(spread.n_iter_, alone.n_iter_)


# --- the path's grid and warm starts, verbose output, warm starts of the estimator


def _dense_binary(seed=0, n=150, d=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] - X[:, 1] + 0.8 + 0.7 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _three_classes(seed=0, n=90, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, 3, n)
    X[:, 0] += y
    X[:, 1] -= 0.5 * y
    return X, y


def test_verbose_reports_each_class_with_its_scaled_objective(capsys):
    """verbose prints one line per one-vs-rest problem, in class order, with the fitted
    iterations, optimality and gap, and F/(C n) = (‖w‖₁ + C Σ sᵢ log(1+e^{−yᵢmᵢ}))/(C Σ sᵢ)
    recomputed here from coef_ and intercept_ (sample weights included)."""
    from sparsekit.linear_model import L1LogisticOBA
    X, y = _three_classes()
    s = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    C = 0.5
    clf = L1LogisticOBA(C=C, verbose=1).fit(X, y, sample_weight=s)
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("[L1LogisticOBA] class")]
    assert len(lines) == 3
    for k, line in enumerate(lines):
        assert line.startswith(f"[L1LogisticOBA] class {k}: {clf.n_iter_[k]} iterations, ")
        y_pm = np.where(y == k, 1.0, -1.0)
        m = X @ clf.coef_[k] + clf.intercept_[k]
        F = np.abs(clf.coef_[k]).sum() + C * np.sum(s * np.logaddexp(0.0, -y_pm * m))
        printed = float(line.split("F/(C n) ")[1].split(",")[0])
        np.testing.assert_allclose(printed, F / (C * s.sum()), rtol=1e-9)
        assert f"optimality {clf.optimality_[k]:.2e}" in line
        assert line.endswith(f"relative duality gap {clf.duality_gap_[k]:.2e}")
    # binary: a single line, named by the positive (larger) label
    L1LogisticOBA(C=C, verbose=1).fit(X, np.where(y == 2, "b", "a"))
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("[L1LogisticOBA] class")]
    assert len(lines) == 1 and lines[0].startswith("[L1LogisticOBA] class 'b': ")


def test_warm_start_from_a_fit_with_another_number_of_classes_is_a_cold_start():
    """A previous coef_ of another shape (3 one-vs-rest rows, then a binary y; or other
    features) cannot be a start: the fit is the cold fit, iterate for iterate."""
    from sparsekit.linear_model import L1LogisticOBA
    X, y = _three_classes()
    y2 = (y == 2).astype(int)
    cold = L1LogisticOBA(C=0.5).fit(X, y2)
    warm = L1LogisticOBA(C=0.5, warm_start=True).fit(X, y)
    warm.fit(X, y2)
    np.testing.assert_array_equal(warm.coef_, cold.coef_)
    np.testing.assert_array_equal(warm.intercept_, cold.intercept_)
    np.testing.assert_array_equal(warm.n_iter_, cold.n_iter_)
    cold = L1LogisticOBA(C=0.5).fit(X[:, :3], y2)
    warm.fit(X[:, :3], y2)
    np.testing.assert_array_equal(warm.coef_, cold.coef_)
    np.testing.assert_array_equal(warm.n_iter_, cold.n_iter_)


@pytest.mark.parametrize("sparse_coef", [False, True])
def test_warm_start_without_intercept_resumes_from_coef(sparse_coef):
    """fit_intercept=False: a second warm fit starts at the first's optimum, so it stops
    at once (0 iterations) with the same coef_ and a zero intercept."""
    from sparsekit.linear_model import L1LogisticOBA
    X, y = _three_classes()
    clf = L1LogisticOBA(C=0.5, fit_intercept=False, warm_start=True, sparse_coef=sparse_coef)
    clf.fit(X, y)
    first = clf.coef_.toarray() if sparse_coef else clf.coef_.copy()
    assert np.all(clf.n_iter_ > 0)
    clf.fit(X, y)
    second = clf.coef_.toarray() if sparse_coef else clf.coef_
    np.testing.assert_array_equal(clf.n_iter_, 0)
    np.testing.assert_array_equal(second, first)
    np.testing.assert_array_equal(clf.intercept_, 0.0)


def test_a_fit_on_free_slices_is_the_fit_on_column_walks(monkeypatch):
    """The matrix-free products on copies of the free columns (see Logistic's
    ``free_slice_min_products``) leave the fit as it was, bit for bit."""
    from sparsekit.losses import _logistic_datafit as LD

    rng = np.random.default_rng(3)
    X = sp.random(400, 900, density=0.02, random_state=4, format="csr")
    y = np.where(X @ rng.standard_normal(900) + 0.1 * rng.standard_normal(400) > 0, 1, -1)
    monkeypatch.setattr(LD.Logistic, "max_explicit", 0)
    used = []
    product = LD._FreeSlice.product
    monkeypatch.setattr(LD._FreeSlice, "product",
                        lambda self, *a: used.append(1) or product(self, *a))
    fits = {}
    for products in (np.inf, 0):
        monkeypatch.setattr(LD.Logistic, "free_slice_min_products", products)
        est = L1LogisticOBA(C=50.0, tol=1e-10).fit(X, y)
        fits[products] = np.r_[est.coef_.ravel(), est.intercept_]
        assert bool(used) == (products == 0)
    np.testing.assert_array_equal(fits[0], fits[np.inf])


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("layout", ["dense", "fortran", "csr", "csc", "float32"])
def test_features_in_other_units_are_the_same_problem(multiclass, layout):
    """X times s at C / s is the problem of X at C, its weights divided by s. OBA's
    constants are absolute (its Hessian regularization, trust radius and stopping measure):
    on digits / 16 times 1e-2 the fit took 6 times the iterations, times 1e-4 it ran to
    max_iter, 40% more nonzero weights. X is now solved in units of entries near 1 (a power
    of two): the fits are those of X, in as many iterations; the user's X is left as it
    was; warm starts, the path and the cross-validation follow."""
    from sklearn.datasets import load_digits

    from sparsekit.linear_model import L1LogisticOBACV
    X, y = load_digits(return_X_y=True)
    X, y = X[:600] / 16.0, y[:600]
    make = {"dense": np.array, "fortran": np.asfortranarray, "csr": sp.csr_matrix,
            "csc": sp.csc_matrix, "float32": lambda A: A.astype(np.float32)}[layout]
    kw = dict(C=10.0, multiclass=multiclass, max_iter=400, tol=1e-11)
    unit = L1LogisticOBA(**kw).fit(make(X), y)
    for s in (1e-4, 2.0**-40, 1e4):
        given = make(X * s)
        kept = given.copy()
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            est = L1LogisticOBA(**{**kw, "C": 10.0 / s}).fit(given, y)
        tol = 1e-3 if layout == "float32" else 1e-5
        np.testing.assert_allclose(est.coef_ * s, unit.coef_, rtol=tol, atol=tol)
        np.testing.assert_allclose(est.intercept_, unit.intercept_, rtol=tol, atol=tol)
        assert est.coef_.dtype == unit.coef_.dtype
        assert np.sum(est.n_iter_) <= 1.5 * np.sum(unit.n_iter_) + 2
        same = (given != kept).nnz == 0 if sp.issparse(given) else np.array_equal(given, kept)
        assert same
        warm = est.set_params(warm_start=True).fit(given, y)      # starts at its solution
        assert np.max(warm.n_iter_) <= 2
    tiny = X * 1e-4
    coefs, Cs, _ = l1_logistic_path(tiny, y == 3, Cs=[1e4, 1e5], max_iter=400, tol=1e-11)
    ref_coefs, _, _ = l1_logistic_path(X, y == 3, Cs=[1.0, 10.0], max_iter=400, tol=1e-11)
    np.testing.assert_allclose(coefs[:, :-1] * 1e-4, ref_coefs[:, :-1], rtol=1e-5, atol=1e-5)
    if layout == "dense" and multiclass == "ovr":
        cv = L1LogisticOBACV(Cs=4, cv=3).fit(tiny, y)
        ref_cv = L1LogisticOBACV(Cs=4, cv=3).fit(X, y)
        np.testing.assert_allclose(cv.Cs_ * 1e-4, ref_cv.Cs_, rtol=1e-12)
        np.testing.assert_allclose(cv.scores_, ref_cv.scores_, rtol=1e-3)


def unit_elastic_net(C, l1_ratio, s):
    """(C, l1_ratio) of X whose elastic net is that of X times s at C (ratio ``l1_ratio``),
    the weights times s: k C and k r with k = 1 / (r + (1 − r) / s) (the ridge weight
    relative to the ℓ1 one changes with the units; k = 1 for the ℓ1 penalty alone)."""
    k = 1.0 / (l1_ratio + (1.0 - l1_ratio) / s)
    return k * C * s, k * l1_ratio


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("layout", ["dense", "csr", "float32"])
def test_elastic_net_features_in_other_units(multiclass, layout):
    """The elastic net of X times s at C / s is one of X (:func:`unit_elastic_net`), its
    weights divided by s. As given, s = 1e-4 ran to max_iter; it is solved as the ℓ1 fits
    are, in units of entries near 1 with the ridge weight following: the fits are those of
    X in as many iterations; warm starts, the path and the cross-validation follow."""
    from sklearn.datasets import load_digits

    from sparsekit.linear_model import L1LogisticOBACV
    X, y = load_digits(return_X_y=True)
    X, y = X[:600] / 16.0, y[:600]
    make = {"dense": np.array, "csr": sp.csr_matrix,
            "float32": lambda A: A.astype(np.float32)}[layout]
    kw = dict(multiclass=multiclass, max_iter=400, tol=1e-11)
    r, C = 0.5, 10.0
    for s in (1e-4, 1e4):
        C_unit, r_unit = unit_elastic_net(C / s, r, s)
        unit = L1LogisticOBA(C=C_unit, l1_ratio=r_unit, **kw).fit(make(X), y)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            est = L1LogisticOBA(C=C / s, l1_ratio=r, **kw).fit(make(X * s), y)
        tol = 1e-3 if layout == "float32" else 1e-5
        np.testing.assert_allclose(est.coef_ * s, unit.coef_, rtol=tol, atol=tol)
        np.testing.assert_allclose(est.intercept_, unit.intercept_, rtol=tol, atol=tol)
        assert np.sum(est.n_iter_) <= 1.5 * np.sum(unit.n_iter_) + 2
        warm = est.set_params(warm_start=True).fit(make(X * s), y)
        assert np.max(warm.n_iter_) <= 2
    s = 1e-4
    C_unit, r_unit = unit_elastic_net(C / s, r, s)
    coefs, _, _ = l1_logistic_path(make(X * s), y == 3, Cs=[C / s, 10 * C / s], l1_ratio=r,
                                   max_iter=400, tol=1e-11)
    ref, _, _ = l1_logistic_path(make(X), y == 3, Cs=[C_unit], l1_ratio=r_unit, max_iter=400,
                                 tol=1e-11)
    np.testing.assert_allclose(coefs[0, :-1] * s, ref[0, :-1], rtol=tol, atol=tol)
    if layout == "dense":
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            cv = L1LogisticOBACV(Cs=[C / s], l1_ratios=[r], cv=3, multiclass=multiclass,
                                 max_iter=400).fit(X * s, y)
        ref_cv = L1LogisticOBACV(Cs=[C_unit], l1_ratios=[r_unit], cv=3,
                                 multiclass=multiclass, max_iter=400).fit(X, y)
        np.testing.assert_allclose(cv.scores_, ref_cv.scores_, rtol=1e-3)
        np.testing.assert_allclose(cv.coef_ * s, ref_cv.coef_, rtol=1e-4, atol=1e-4)


def test_a_column_far_from_0_among_features_in_other_units():
    """A column of years beside standardized ones, all times 1e-5 (C times 1e5): the year
    column centered and X rescaled, the model predicts on X as given as the model of the
    columns in their first units."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 6))
    y = (X[:, 0] - X[:, 5] + 0.3 * rng.standard_normal(300) > 0).astype(int)
    years = X.copy()
    years[:, 5] = 2012 + 5 * X[:, 5]
    small = years * 1e-5
    unit = L1LogisticOBA(C=1.0, tol=1e-11).fit(years, y)
    est = L1LogisticOBA(C=1e5, tol=1e-11).fit(small, y)
    assert est.n_iter_[0] <= 1.5 * unit.n_iter_[0] + 2
    np.testing.assert_allclose(est.decision_function(small), unit.decision_function(years),
                               rtol=1e-6, atol=1e-6)
    for multiclass in ("ovr", "multinomial"):  # a warm start is the solution, both mapped
        labels = y + (np.arange(300) % 3 == 0) if multiclass == "multinomial" else y
        model = L1LogisticOBA(C=1e5, tol=1e-11, multiclass=multiclass).fit(small, labels)
        assert np.max(model.set_params(warm_start=True).fit(small, labels).n_iter_) <= 1
