"""Tests of SparsemaxClassifier(solver="sdca"): the dual block update and the solver."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning

from sparsekit._cython._projections import POLYTOPE_CODES
from sparsekit._cython._sparsemax_dual import dual_epoch_csr, dual_epoch_dense
from sparsekit.linear_model import SparsemaxClassifier
from _sparsemax_problems import make_data as _data, make_datafit as _datafit
from test_sparsemax_classifier import POLYTOPES, _blobs, objective_ref

BUDGET = 2.0


def _polytope_constraints(polytope, k):
    """Bounds and SLSQP constraints describing the polytope, for a generic solver."""
    total = {"type": "eq" if polytope == "simplex" else "ineq"}
    if polytope == "simplex":
        total["fun"] = lambda m: m.sum() - 1.0
    elif polytope in ("budget", "at_most_one"):
        bound = BUDGET if polytope == "budget" else 1.0
        total["fun"] = lambda m: bound - m.sum()
    elif polytope == "at_least_one":
        total["fun"] = lambda m: m.sum() - 1.0
    else:
        total = None
    upper = None if polytope == "simplex" else 1.0
    return [(0.0, upper)] * k, [] if total is None else [total]


def _problem(polytope, n=12, d=5, k=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.4] = 0
    X[3] = 0  # an empty row
    Y = np.eye(k)[rng.integers(0, k, n)]
    if polytope in ("box", "budget", "at_least_one"):
        Y[rng.random(n) < 0.5, 0] = 1
    return X, Y


@pytest.mark.parametrize("polytope", POLYTOPES)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("k", [1, 2, 4])  # one output (box), two: scores in registers
@pytest.mark.parametrize("intercept_sq", [1.0, 2.25])
def test_block_update_maximizes_the_dual_block(polytope, sparse, k, intercept_sq):
    """One update equals the generic maximizer of the dual restricted to its block; the
    intercept feature's value rho (rho^2 = intercept_sq) scales its scores' move."""
    if k == 1 and polytope != "box":
        pytest.skip("one output: the two-class fit's box problem")
    X, Y = _problem(polytope, k=k)
    n, d = X.shape
    k = Y.shape[1]
    rng = np.random.default_rng(1)
    sw = rng.random(n) + 0.5
    alpha = 0.3
    c = sw / (alpha * sw.sum())
    q = c * (np.sum(X**2, axis=1) + intercept_sq)
    M = Y.copy()
    M[:, :] = np.clip(M + 0.3 * rng.random(M.shape), 0, 1)  # any duals, W = W(M)
    if polytope == "simplex":
        M /= M.sum(axis=1, keepdims=True)
    b = rng.standard_normal(k)
    W = np.ascontiguousarray(X.T @ ((Y - M) * c[:, None]))
    wb = ((Y - M) * c[:, None]).sum(axis=0) * intercept_sq
    budget = BUDGET if polytope == "budget" else 1.0
    code = POLYTOPE_CODES[polytope]
    for i in range(n):
        z = X[i] @ W + b + wb
        mu_old = M[i].copy()
        W_old, wb_old = W.copy(), wb.copy()
        order = np.array([i], dtype=np.int64)
        if sparse:
            Xs = sp.csr_matrix(X)
            dual_epoch_csr(Xs.data, Xs.indices, Xs.indptr, W, b, wb, intercept_sq, M, c, q,
                           order, code, budget)
        else:
            dual_epoch_dense(X, W, b, wb, intercept_sq, M, c, q, order, code, budget)

        def neg_block_dual(m):
            return -(z @ m - 0.5 * m @ m - 0.5 * q[i] * np.sum((m - mu_old) ** 2))

        bounds, constraints = _polytope_constraints(polytope, k)
        ref = minimize(neg_block_dual, mu_old, method="SLSQP", bounds=bounds,
                       constraints=constraints, options={"ftol": 1e-14, "maxiter": 500})
        np.testing.assert_allclose(M[i], ref.x, atol=1e-6)
        assert -neg_block_dual(M[i]) >= -ref.fun - 1e-12
        delta = M[i] - mu_old
        np.testing.assert_allclose(W, W_old - c[i] * np.outer(X[i], delta), atol=1e-13)
        np.testing.assert_allclose(wb, wb_old - c[i] * intercept_sq * delta, atol=1e-13)


def _dual_value(M, Y, W, sw, alpha):
    """Dual of the no-intercept objective: mean(-1/2|mu|^2 + 1/2|y|^2) - alpha/2 |W(mu)|^2."""
    per_row = -0.5 * np.sum(M**2, axis=1) + 0.5 * np.sum(Y**2, axis=1)
    return per_row @ sw / sw.sum() - 0.5 * alpha * np.sum(W**2)


@pytest.mark.parametrize("polytope", ["simplex", "box", "at_least_one"])
def test_dual_ascends_and_the_gap_closes(polytope):
    X, Y = _problem(polytope, n=40, d=6, seed=2)
    n, k = Y.shape
    sw = np.random.default_rng(3).random(n) + 0.1
    alpha = 0.05
    c = sw / (alpha * sw.sum())
    q = c * np.sum(X**2, axis=1)
    W, M, b = np.zeros((X.shape[1], k)), Y.copy(), np.zeros(k)
    code = POLYTOPE_CODES[polytope]
    rng = np.random.default_rng(4)
    previous = -np.inf
    for epoch in range(300):
        dual_epoch_dense(X, W, b, None, 1.0, M, c, q, rng.permutation(n).astype(np.int64),
                         code, 1.0)
        np.testing.assert_allclose(W, X.T @ ((Y - M) * c[:, None]), atol=1e-12)
        dual = _dual_value(M, Y, W, sw, alpha)
        assert dual >= previous - 1e-13
        previous = dual
        if epoch % 25 == 24:
            primal = objective_ref(W, b, X, Y, sw, alpha, polytope)
            assert primal >= dual - 1e-13
    assert primal - dual < 1e-10


@pytest.mark.parametrize("polytope", POLYTOPES)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sdca_reaches_the_lbfgs_optimum(polytope, sparse, dtype):
    X, y = _blobs(n=80, d=5, k=4, seed=5)
    X = (np.abs(X) + 2.0).astype(dtype)  # a large feature mean couples W and the bias
    Y = np.eye(4, dtype=int)[y]
    extra = np.random.default_rng(6).random(80) < 0.3
    if polytope == "at_most_one":
        Y[extra] = 0
    elif polytope != "simplex":
        Y[extra, 0] = 1
    Xin = sp.csr_matrix(X) if sparse else X
    kw = dict(alpha=1e-2, tol=1e-9, polytope=polytope, max_iter=20000,
              budget=BUDGET if polytope == "budget" else None)
    sdca = SparsemaxClassifier(solver="sdca", random_state=0, **kw).fit(Xin, Y)
    lbfgs = SparsemaxClassifier(**kw).fit(Xin.astype(np.float64), Y)
    Yt = sdca._encode_targets(Y, sdca._check_budget())[0].toarray()
    X64 = X.astype(np.float64)
    f_lbfgs = objective_ref(lbfgs.coef_.T, lbfgs.intercept_, X64, Yt, np.ones(80), 1e-2,
                            polytope, kw["budget"] or 1.0)
    f_sdca = objective_ref(sdca.coef_.T, sdca.intercept_, X64, Yt, np.ones(80), 1e-2,
                           polytope, kw["budget"] or 1.0)
    assert f_sdca == pytest.approx(f_lbfgs, rel=1e-7 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("fit_intercept,penalize", [(False, False), (True, True)])
def test_sdca_intercept_options(fit_intercept, penalize):
    X, y = _blobs(n=70, seed=7)
    kw = dict(alpha=0.1, tol=1e-10, fit_intercept=fit_intercept,
              penalize_intercept=penalize, max_iter=20000)
    sdca = SparsemaxClassifier(solver="sdca", random_state=1, **kw).fit(X, y)
    ref = SparsemaxClassifier(solver="newton-cg", **kw).fit(X, y)
    np.testing.assert_allclose(sdca.coef_, ref.coef_, atol=1e-7)
    np.testing.assert_allclose(sdca.intercept_, ref.intercept_, atol=1e-7)
    if not fit_intercept:
        np.testing.assert_array_equal(sdca.intercept_, 0)


def test_sdca_sample_weights_warm_start_and_seed():
    X, y = _blobs(n=90, seed=8)
    sw = np.random.default_rng(9).integers(0, 3, 90).astype(float)
    kw = dict(solver="sdca", alpha=0.05, tol=1e-10, max_iter=20000, random_state=3)
    weighted = SparsemaxClassifier(**kw).fit(X, y, sample_weight=sw)
    kept = sw > 0
    dropped = SparsemaxClassifier(**kw).fit(X[kept], y[kept], sample_weight=sw[kept])
    np.testing.assert_allclose(weighted.coef_, dropped.coef_, atol=1e-7)
    again = SparsemaxClassifier(**kw).fit(X, y, sample_weight=sw)
    np.testing.assert_array_equal(again.coef_, weighted.coef_)
    warm = SparsemaxClassifier(warm_start=True, **kw).fit(X, y, sample_weight=sw)
    cold_epochs = warm.n_iter_
    warm.fit(X, y, sample_weight=sw)
    assert 3 * warm.n_iter_ < cold_epochs
    np.testing.assert_allclose(warm.coef_, weighted.coef_, atol=1e-7)
    # a warm start from another problem's solution (other alpha and weights)
    sw2 = np.random.default_rng(10).random(90)
    warm.set_params(alpha=0.5).fit(X, y, sample_weight=sw2)
    cold = SparsemaxClassifier(**{**kw, "alpha": 0.5}).fit(X, y, sample_weight=sw2)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-7)
    np.testing.assert_allclose(warm.intercept_, cold.intercept_, atol=1e-7)


@pytest.mark.parametrize("kwargs,match", [
    ({"positive": True}, "does not support positive or bounds"),
    ({"bounds": (-1, 1)}, "does not support positive or bounds"),
    ({"alpha": 0.0}, "alpha > 0"),
    ({"device": "cuda"}, "CPU only"),
])
def test_sdca_bad_options(kwargs, match):
    X, y = _blobs()
    with pytest.raises(ValueError, match=match):
        SparsemaxClassifier(solver="sdca", **kwargs).fit(X, y)


def test_sdca_stuck_at_a_huge_feature_scale_warns_instead_of_claiming_success():
    """Features of size 1e8 make every dual step round to nothing (the step is about
    1/(c ||x_i||^2) with c = 1/(alpha n)) at a fixed alpha: the stall test used to report
    success after one epoch with the model at W = 0; now the fit warns, while lbfgs still
    solves the problem. (The default alpha="scale" grows with the features' scale.)"""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 5))
    y = np.argmax(X @ rng.standard_normal((5, 3)) + 0.3 * rng.standard_normal((200, 3)), 1)
    with pytest.warns(ConvergenceWarning, match="round to nothing"):
        stuck = SparsemaxClassifier(1e-3, solver="sdca", random_state=0).fit(X * 1e8, y)
    assert stuck.n_iter_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SparsemaxClassifier(1e-3, solver="sdca", random_state=0).fit(X, y)
        assert SparsemaxClassifier(1e-3).fit(X * 1e8, y).score(X * 1e8, y) > 0.8


def test_sdca_with_tol_zero_stops_at_the_rounding_floor():
    """tol = 0 cannot be met by the gradient; the epochs stop, with success, once the duals
    only move by a few ulps (before: every one of max_iter epochs ran, then a warning)."""
    from sklearn.datasets import load_iris
    X, y = load_iris(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = SparsemaxClassifier(alpha=0.1, solver="sdca", tol=0, max_iter=20000,
                                  random_state=0).fit(X, y)
    assert est.n_iter_ < 5000
    tight = SparsemaxClassifier(alpha=0.1, solver="newton-cg", tol=1e-12).fit(X, y)
    np.testing.assert_allclose(est.coef_, tight.coef_, atol=1e-8)


def _epoch_problem(polytope="budget", n=15, d=6, k=4, seed=11):
    """A float32-representable X with empty rows and columns, duals off the optimum and
    W = W(M), intercept weights wb = sum_i c_i (y_i - mu_i)."""
    X, Y = _problem(polytope, n=n, d=d, k=k, seed=seed)
    X[:, 2] = 0  # an empty column
    X = X.astype(np.float32).astype(np.float64)
    rng = np.random.default_rng(seed + 1)
    c = (rng.random(n) + 0.5) / n
    q = c * (np.sum(X**2, axis=1) + 1)
    M = np.clip(Y + 0.4 * rng.standard_normal(Y.shape), 0, 1)
    W = np.ascontiguousarray(X.T @ ((Y - M) * c[:, None]))
    wb = ((Y - M) * c[:, None]).sum(axis=0)
    b = rng.standard_normal(k)
    return X, c, q, M, W, wb, b, POLYTOPE_CODES[polytope]


@pytest.mark.parametrize("polytope", ["simplex", "box", "budget"])
@pytest.mark.parametrize("sparse", [False, True])
def test_epoch_with_few_moving_duals_equals_a_numpy_epoch(polytope, sparse):
    """With many classes a block update moves few dual entries (the projections are
    sparse) and the weight update walks only those; on other rows most entries move and it
    walks whole rows. Both give the epoch written row by row in NumPy."""
    from sparsekit.projections import project

    rng = np.random.default_rng(5)
    n, d, k = 60, 7, 16
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.5] = 0
    X[2] = 0                                        # an empty row
    M = np.eye(k)[rng.integers(0, k, n)]            # duals at one-hot targets ...
    M[::3] = 1.0 / k                                 # ... or spread over every class
    c = (rng.random(n) + 0.5) / n
    q = c * (np.sum(X**2, axis=1) + 1)
    b = np.where(np.arange(k) < 3, 4.0, -4.0) + 0.1 * rng.standard_normal(k)
    W, wb = np.zeros((d, k)), np.zeros(k)
    order = rng.permutation(n).astype(np.int64)
    budget = BUDGET if polytope == "budget" else 1.0
    params = {"budget": budget} if polytope == "budget" else {}
    M_ref, W_ref, wb_ref, moved = M.copy(), W.copy(), wb.copy(), []
    for i in order:
        z = (X[i] @ W_ref + b + wb_ref + q[i] * M_ref[i]) / (1 + q[i])
        delta = project(z[None], polytope, **params)[0] - M_ref[i]
        moved.append(np.count_nonzero(delta))
        M_ref[i] += delta
        W_ref -= c[i] * np.outer(X[i], delta)
        wb_ref -= c[i] * delta
    moved = np.array(moved)
    assert np.any((moved > 0) & (4 * moved <= k)) and np.any(4 * moved > k)  # both walks
    if sparse:
        Xs = sp.csr_matrix(X)
        dual_epoch_csr(Xs.data, Xs.indices, Xs.indptr, W, b, wb, 1.0, M, c, q, order,
                       POLYTOPE_CODES[polytope], budget)
    else:
        dual_epoch_dense(X, W, b, wb, 1.0, M, c, q, order, POLYTOPE_CODES[polytope], budget)
    np.testing.assert_allclose(M, M_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(W, W_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(wb, wb_ref, rtol=0, atol=1e-12)


def test_epoch_returns_the_largest_change_of_any_dual_entry():
    """The return value (SDCA's stopping test) is max |M_new - M_old| over every row of the
    epoch and every class, not the last row's or the last entry's change."""
    X, c, q, M, W, wb, b, code = _epoch_problem()
    order = np.random.default_rng(0).permutation(len(X)).astype(np.int64)
    for sparse in (False, True):
        M1, W1, wb1 = M.copy(), W.copy(), wb.copy()
        if sparse:
            Xs = sp.csr_matrix(X)
            change = dual_epoch_csr(Xs.data, Xs.indices, Xs.indptr, W1, b, wb1, 1.0, M1, c, q,
                                    order, code, BUDGET)
        else:
            change = dual_epoch_dense(X, W1, b, wb1, 1.0, M1, c, q, order, code, BUDGET)
        delta = np.abs(M1 - M)
        i, j = np.unravel_index(np.argmax(delta), delta.shape)
        assert i != order[-1] and j != M.shape[1] - 1  # the case the test is about
        assert change == delta.max() > 0


def test_epoch_skips_rows_of_zero_weight():
    """Rows with c_i = 0 keep their duals and do not count in the returned change; the
    epoch equals one over the other rows only."""
    X, c, q, M, W, wb, b, code = _epoch_problem()
    zero = [1, 4, 9]
    c[zero] = 0.0
    q[zero] = 0.0
    order = np.random.default_rng(1).permutation(len(X)).astype(np.int64)
    M1, W1, wb1 = M.copy(), W.copy(), wb.copy()
    change = dual_epoch_dense(X, W1, b, wb1, 1.0, M1, c, q, order, code, BUDGET)
    kept = order[~np.isin(order, zero)]
    M2, W2, wb2 = M.copy(), W.copy(), wb.copy()
    change2 = dual_epoch_dense(X, W2, b, wb2, 1.0, M2, c, q, kept, code, BUDGET)
    np.testing.assert_array_equal(M1[zero], M[zero])
    np.testing.assert_array_equal(M1, M2)
    np.testing.assert_array_equal(W1, W2)
    np.testing.assert_array_equal(wb1, wb2)
    assert change == change2


def test_epoch_same_for_float32_and_int64_index_inputs():
    """float32 data (exactly representable) and int64 CSR indices give the float64 dense
    result: every product is formed in float64 (a float32 rounding of c_i x_ij would
    leave W off W(M) by ~1e-8 relative)."""
    X, c, q, M, W, wb, b, code = _epoch_problem()
    orders = [np.random.default_rng(s).permutation(len(X)).astype(np.int64) for s in (2, 3)]

    def run(epoch, *data):
        M1, W1, wb1 = M.copy(), W.copy(), wb.copy()
        changes = [epoch(*data, W1, b, wb1, 1.0, M1, c, q, o, code, BUDGET) for o in orders]
        return M1, W1, wb1, changes

    ref = run(dual_epoch_dense, X)
    for dtype in (np.float64, np.float32):
        Xs = sp.csr_matrix(X.astype(dtype))
        runs = [run(dual_epoch_dense, X.astype(dtype))]
        for itype in (np.int32, np.int64):
            runs.append(run(dual_epoch_csr, Xs.data, Xs.indices.astype(itype),
                            Xs.indptr.astype(itype)))
        for got in runs:
            for a, r in zip(got, ref):
                np.testing.assert_allclose(a, r, rtol=1e-14, atol=1e-16)


def test_epoch_on_a_W_beyond_the_caches_equals_the_dense_epoch():
    """With W larger than CACHED_BYTES (8 MiB; here 70,000 columns x 16 classes) the CSR epoch
    prefetches the rows of W of the next row's entries: the same epoch as on the dense
    rows, which reads no such rows."""
    rng = np.random.default_rng(4)
    n, d, k = 60, 70_000, 16
    X = sp.random(n, d, density=0.0005, random_state=4).toarray()
    X[5] = 0.0                                    # an empty row
    Xs = sp.csr_matrix(X)
    y = rng.integers(0, k, n)
    M = np.zeros((n, k))
    M[np.arange(n), y] = 1.0
    W, b = X.T @ M * 0.1, np.zeros(k)
    c = np.full(n, 0.1)
    q = c * ((X ** 2).sum(axis=1) + 1.0)
    code = POLYTOPE_CODES["simplex"]
    got, ref = (M.copy(), W.copy()), (M.copy(), W.copy())
    for seed in (0, 1):
        order = np.random.default_rng(seed).permutation(n).astype(np.int64)
        a = dual_epoch_csr(Xs.data, Xs.indices, Xs.indptr, got[1], b, None, 0.0, got[0], c, q,
                           order, code, 1.0)
        r = dual_epoch_dense(X, ref[1], b, None, 0.0, ref[0], c, q, order, code, 1.0)
        assert a == pytest.approx(r, rel=1e-12)
    assert d * k * 8 > 2**23
    for a, r in zip(got, ref):
        np.testing.assert_allclose(a, r, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("polytope", ["simplex", "box", "at_least_one"])
def test_sdca_one_row_with_a_penalized_intercept_is_solved_in_one_epoch(polytope):
    """With a single row and a penalized intercept (the weight of a constant feature 1),
    the whole dual is one block: its exact update, with q = c (||x||^2 + 1), solves the
    problem in one epoch."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X = np.array([[0.7, -1.2, 0.4]])
    Y = np.array([[0.2, 0.8, 0.0]]) if polytope == "simplex" else np.array([[1, 1, 0]])
    clf = SparsemaxClassifier(solver="sdca", polytope=polytope, alpha=0.3,
                              penalize_intercept=True, tol=1e-10, max_iter=1,
                              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(X, Y)
    ref = SparsemaxClassifier(solver="lbfgs", polytope=polytope, alpha=0.3,
                              penalize_intercept=True, tol=1e-12).fit(X, Y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=1e-6)


def test_sdca_warm_start_keeps_the_start_intercept(monkeypatch):
    """A warm start replaces W by W(mu0) with mu0 = proj(scores of theta0) but keeps the
    start's free intercept: b + wb(mu0) == b0 before any update (epochs stubbed out)."""
    import sparsekit.optimize._sdca as sdca

    monkeypatch.setattr(sdca, "dual_epoch_dense", lambda *args: 0.0)
    X, y, _ = _data(n=20)
    datafit = _datafit(X, y, np.ones(20), fit_intercept=True, penalize=True)
    datafit.penalize_intercept = False    # a free intercept on an uncentered datafit
    datafit.value_grad = lambda th, weights=None: (0.0, np.ones_like(th))
    rng = np.random.default_rng(2)
    theta0 = rng.standard_normal((X.shape[1] + 1) * 3)
    res = sdca.minimize_sdca(datafit, theta0, tol=1e-12, max_iter=1,
                             rng=np.random.default_rng(0))
    np.testing.assert_allclose(res.x[-3:], theta0[-3:], atol=1e-12)


def test_sdca_warm_start_with_a_penalized_intercept_from_another_problem():
    """A penalized intercept is all in wb (the fixed offset b must restart at 0): a warm
    start from another alpha's solution reaches the cold solution."""
    import warnings

    X, y, _ = _data(n=50)
    kw = dict(solver="sdca", penalize_intercept=True, tol=1e-10, max_iter=5000,
              random_state=0)
    warm = SparsemaxClassifier(alpha=1.0, warm_start=True, **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm.set_params(alpha=0.1).fit(X, y)
    cold = SparsemaxClassifier(alpha=0.1, **kw).fit(X, y)
    np.testing.assert_allclose(warm.intercept_, cold.intercept_, atol=1e-7)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-7)


def test_sdca_tests_tol_on_a_schedule_and_reports_every_epoch():
    """The objective (a pass over X, as costly as an epoch) is evaluated after epoch 1; while
    max|grad| > 100 tol, next after the first epoch whose largest dual change is a quarter
    of the one at the last evaluation, or ⌈t/2⌉ epochs after an evaluation after epoch t;
    and after every epoch below. The callback sees every epoch, with fun and jac on the
    evaluated ones."""
    import sparsekit.optimize._sdca as sdca

    X, y, _ = _data(n=60)
    datafit = _datafit(X, y, np.ones(60), fit_intercept=True, penalize=True)
    theta0 = np.zeros((X.shape[1] + 1) * 3)
    seen = []

    def record(intermediate_result):
        r = intermediate_result
        seen.append((r.nit, r.change, np.max(np.abs(r.jac)) if "fun" in r else None))

    tol = 1e-9
    res = sdca.minimize_sdca(datafit, theta0, tol=tol, max_iter=5000,
                             rng=np.random.default_rng(0), callback=record)
    assert res.success and res.status == 0 and np.max(np.abs(res.jac)) <= tol
    assert [nit for nit, _, _ in seen] == list(range(1, res.nit + 1))
    change = {nit: c for nit, c, _ in seen}
    evaluated = [(nit, g) for nit, _, g in seen if g is not None]
    assert res.nfev == len(evaluated) < res.nit / 2   # no stall: no gradient at 0
    assert evaluated[0][0] == 1
    skipped_far = 0
    for (a, g), (b, _) in zip(evaluated, evaluated[1:]):
        if g <= 100 * tol:
            assert b == a + 1
            continue
        due = [t for t in range(a + 1, res.nit + 1)
               if change[t] <= change[a] / 4 or t >= a - (-a // 2)]
        assert b == due[0]
        skipped_far += b - a - 1
    assert skipped_far > 0     # far from tol, epochs pass without an evaluation
    f, grad = datafit.value_grad(res.x)
    # up to rounding: the solver's evaluation is handed W and adds alpha W by BLAS's daxpy,
    # which fuses the multiply-add on AVX-512 machines (OpenBLAS's SkylakeX kernels)
    assert res.fun == f
    np.testing.assert_allclose(res.jac, grad, rtol=1e-7, atol=1e-17)


def test_sdca_stopped_after_an_epoch_without_an_evaluation_returns_its_objective():
    """A callback stop after epoch 10, which the schedule does not evaluate, still returns
    the objective and gradient of the returned x (one more evaluation)."""
    import sparsekit.optimize._sdca as sdca

    X, y, _ = _data(n=60)
    datafit = _datafit(X, y, np.ones(60), fit_intercept=True, penalize=True)
    evaluated = []

    def stop_at_10(intermediate_result):
        evaluated.append("fun" in intermediate_result)
        if intermediate_result.nit == 10:
            assert "fun" not in intermediate_result
            raise StopIteration

    res = sdca.minimize_sdca(datafit, np.zeros((X.shape[1] + 1) * 3), tol=1e-12,
                             max_iter=100, rng=np.random.default_rng(0), callback=stop_at_10)
    # the epochs' evaluations and the returned x's
    assert res.status == 99 and res.nit == 10 and res.nfev == sum(evaluated) + 1
    f, grad = datafit.value_grad(res.x)
    assert res.fun == f
    np.testing.assert_allclose(res.jac, grad, rtol=1e-7, atol=1e-17)   # as above


def test_shuffle_draws_every_row_order_evenly():
    """The epochs' row order: a permutation, the same for the same seed, and each of the
    24 orders of 4 rows about equally often (chi-square, 23 degrees of freedom)."""
    from sparsekit._cython._sparsemax_dual import shuffle

    order = np.arange(1000, dtype=np.int64)
    shuffle(order, 7)
    again = np.arange(1000, dtype=np.int64)
    shuffle(again, 7)
    assert sorted(order) == list(range(1000)) and np.array_equal(order, again)
    shuffle(again, 8)
    assert not np.array_equal(order, again)
    counts = {}
    seeds = np.random.default_rng(0).integers(2 ** 63, size=24000)
    for seed in seeds:
        small = np.arange(4, dtype=np.int64)
        shuffle(small, int(seed))
        counts[tuple(small)] = counts.get(tuple(small), 0) + 1
    assert len(counts) == 24
    observed = np.array(list(counts.values()))
    assert np.sum((observed - 1000) ** 2 / 1000) < 49.7      # the 0.999 quantile
    empty = np.empty(0, dtype=np.int64)
    shuffle(empty, 1)                                          # no rows: nothing to do


def test_max_abs_is_the_largest_magnitude_without_a_temporary():
    from _memory import peak_allocated

    from sparsekit.optimize._sdca import _max_abs

    v = np.random.default_rng(0).normal(size=200_000)
    v[1234] = -9.0
    value, peak = peak_allocated(lambda: _max_abs(v))
    assert value == 9.0 == np.max(np.abs(v)) and isinstance(value, float)
    assert _max_abs(np.array([0.5, 2.0])) == 2.0 and _max_abs(np.zeros(1)) == 0.0
    assert peak < 0.01 * v.nbytes


def test_sdca_holds_three_arrays_of_the_models_size():
    """The weights, the iterate and its gradient, all told: the previous epoch's iterate
    and gradient are let go before the next are made (they were held: four and five such
    arrays, on a corpus of 58 classes and 353,595 columns 156 MiB each), and the objective
    writes the data term's gradient into the gradient it returns (it had a buffer of its
    own)."""
    from _memory import peak_allocated

    import sparsekit.optimize._sdca as sdca

    rng = np.random.default_rng(0)
    n, d, k = 300, 6_000, 20
    X = sp.random(n, d, density=0.02, format="csr", random_state=rng)
    y = np.arange(n) % k
    theta0 = np.zeros((d + 1) * k)

    def fit():   # the datafit made inside: a buffer it keeps counts
        datafit = _datafit(X, y, np.ones(n), fit_intercept=True, penalize=True,
                           weight_scale=2.0)
        return sdca.minimize_sdca(datafit, theta0, tol=1e-10, max_iter=30,
                                  rng=np.random.default_rng(0))

    res, peak = peak_allocated(fit)
    assert res.nit > 3 and res.nfev > 3       # epochs after evaluated epochs
    assert peak < 3.5 * theta0.nbytes
