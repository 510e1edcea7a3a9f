"""The passes of the softmax SGD methods over rows (``optimize._softmax_passes``): the rows
as the drivers read them, the automatic step, the driver each pass takes and how a pass
that may fail keeps the weights."""
import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import sparsekit.optimize._softmax_passes as passes_module
from sparsekit._cython._softmax_sgd import METHODS, softmax_epoch
from sparsekit.optimize._softmax_passes import (AUTO_RATE, AUTO_RATE_EXPLICIT, EpochMean,
                                                SGDRows, SoftmaxPasses, initial_rate)


def _problem(n=300, d=8, K=6, seed=0, density=0.5):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, format="csr", random_state=rng)
    X.data = rng.standard_normal(X.nnz)
    y = rng.integers(0, K, n).astype(np.intp)
    return X, y, K


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [False, True])
def test_rows_of_sparse_and_dense_x(dtype, bias):
    X, _, _ = _problem()
    X.data[:5] = 3e20                                   # float32 squares would overflow
    sparse, dense = SGDRows.of(X, dtype, bias), SGDRows.of(X.toarray(), dtype, bias)
    expected = (X.toarray().astype(dtype).astype(np.float64) ** 2).sum(axis=1) + bias
    for rows in (sparse, dense):
        assert rows.data.dtype == dtype and rows.xsq.dtype == np.float64
        assert np.all(np.isfinite(rows.xsq))
        np.testing.assert_allclose(rows.xsq, expected, rtol=1e-12)
        np.testing.assert_array_equal(sp.csr_matrix(rows.matrix()).toarray(),
                                      X.toarray().astype(dtype))
    assert not sparse.dense and dense.dense
    assert sparse.stored() == X.nnz and dense.stored() == X.shape[0] * X.shape[1]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_of_a_dense_x_of_mostly_zeros_are_its_csr_copy(dtype):
    """Up to SPARSE_COPY_DENSITY nonzero entries the drivers walk the nonzeros of a CSR
    copy (in the rows' dtype, the caller's array untouched); one entry more, the array."""
    from sparsekit.utils._rows import SPARSE_COPY_DENSITY

    rng = np.random.default_rng(3)
    X = np.zeros((20, 10))
    at = rng.permutation(X.size)[:round(SPARSE_COPY_DENSITY * X.size)]
    X.flat[at] = rng.standard_normal(at.size)
    given = np.asfortranarray(X)
    rows = SGDRows.of(given, dtype, True)
    assert not rows.dense and rows.data.dtype == dtype and rows.stored() == at.size
    np.testing.assert_array_equal(rows.matrix().toarray(), X.astype(dtype))
    np.testing.assert_allclose(rows.xsq, (X.astype(dtype).astype(np.float64) ** 2).sum(1) + 1,
                               rtol=1e-12)
    np.testing.assert_array_equal(given, X)
    X.flat[np.setdiff1d(np.arange(X.size), at)[0]] = 1.0
    assert SGDRows.of(X, dtype, True).dense


def test_rows_sum_duplicates_without_touching_the_callers_arrays():
    X = sp.csr_matrix((np.array([1.0, 2.0, 5.0]), np.array([3, 3, 0]), np.array([0, 2, 3])),
                      shape=(2, 4))
    before = (X.data.copy(), X.indices.copy())
    rows = SGDRows.of(X, np.float64, False)
    np.testing.assert_array_equal(rows.xsq, [9.0, 25.0])
    np.testing.assert_array_equal(rows.indices, [3, 0])
    np.testing.assert_array_equal(X.data, before[0])
    np.testing.assert_array_equal(X.indices, before[1])


def test_initial_rate_is_the_methods_rate_over_the_weighted_median_norm():
    xsq = np.array([1.5, 3.0, 5.0, 100.0, 1e6])
    ones = np.ones(5)
    assert initial_rate("implicit", xsq, ones, True) == pytest.approx(AUTO_RATE["implicit"] / 5)
    assert initial_rate("ove", xsq, ones, True) == pytest.approx(AUTO_RATE_EXPLICIT / 5)
    # the same steps w_i eta ||x_i||^2 whatever the weights' common scale
    assert initial_rate("umax", xsq, 7 * ones, True) == pytest.approx(
        initial_rate("umax", xsq, ones, True) / 7)
    # a row of weight 0 is a row left out
    assert initial_rate("nce", xsq, np.array([0, 0, 1, 1, 1.0]), True) == pytest.approx(
        AUTO_RATE["nce"] / 100)
    assert initial_rate("nce", xsq, np.zeros(5), True) == AUTO_RATE["nce"]


def test_initial_rate_leaves_out_the_empty_rows_that_make_no_step():
    # without the intercept an empty row makes no step: were the three empty rows counted,
    # the median would be 0 and the weights' scale (1e30) would go into the step
    xsq = np.array([0.0, 0.0, 0.0, 4.0])
    weights = np.full(4, 1e30)
    assert initial_rate("sgd", xsq, weights, False) == pytest.approx(
        AUTO_RATE_EXPLICIT / 4e30)
    assert initial_rate("sgd", np.zeros(4), weights, False) == AUTO_RATE_EXPLICIT


def test_initial_rate_warns_on_rows_shorter_than_the_intercepts_feature():
    xsq = np.full(10, 1.001)                            # squared norms 0.001, intercept's 1
    with pytest.warns(UserWarning, match="median squared norm of 0.001"):
        initial_rate("sampled_softmax", xsq, np.ones(10), True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        initial_rate("sampled_softmax", xsq - 1.0, np.ones(10), False)


@pytest.mark.parametrize("params", [dict(batch_size=4), dict(alpha=0.1),
                                    dict(shared_classes=True), dict(exclude_true=False)])
def test_threads_where_the_parallel_driver_applies(params):
    assert SoftmaxPasses("ove", n_jobs=2, **params).threads(100_000) == 1
    assert SoftmaxPasses("ove", n_jobs=2).threads(999) == 1        # too few rows to split
    assert SoftmaxPasses("ove", n_jobs=2).threads(100_000) == min(2, os.cpu_count())
    assert SoftmaxPasses("ove", n_jobs=-1).threads(100_000) == os.cpu_count()
    assert SoftmaxPasses("ove", n_jobs=None).threads(100_000) == 1


def test_undo_is_cheaper_says_how_a_pass_keeps_the_weights():
    X, _, K = _problem()
    rows = SGDRows.of(X, np.float64, True)
    small, large = np.zeros((K, 9)), np.zeros((K, 10**5))
    # passes that leave the weights as they were when they fail
    assert SoftmaxPasses("implicit").undo_is_cheaper(large, rows, K) is None
    assert SoftmaxPasses("ove", device="cuda").undo_is_cheaper(large, rows, K) is None
    # the one-thread driver logs what it writes when that is smaller than the weights
    assert SoftmaxPasses("implicit", batch_size=2).undo_is_cheaper(large, rows, K) is True
    assert SoftmaxPasses("ove").undo_is_cheaper(small, rows, K) is False
    # the parallel and the hashed driver keep no log
    many = SGDRows.of(sp.vstack([X] * 10, format="csr"), np.float64, True)
    assert SoftmaxPasses("ove", n_jobs=2).threads(many.xsq.size) == min(2, os.cpu_count())
    if os.cpu_count() > 1:
        assert SoftmaxPasses("ove", n_jobs=2).undo_is_cheaper(np.zeros((K, 10**6)), many,
                                                              K) is False
    hashed = SoftmaxPasses("ove", n_weights=64)
    assert hashed.undo_is_cheaper(np.zeros((1, 10**6)), rows, K) is False


@pytest.mark.parametrize("method", ["sampled_softmax", "implicit", "umax", "ove"])
def test_a_row_of_weight_zero_is_a_row_left_out(method):
    X, y, K = _problem()
    rows = SGDRows.of(X, np.float64, True)
    weights = np.ones(X.shape[0])
    weights[::3] = 0.0
    order = np.arange(X.shape[0], dtype=np.intp)
    passes = SoftmaxPasses(method, n_sampled=3)
    R0, u0 = np.zeros((K, 9)), np.full(X.shape[0], np.log(K))
    status, wall, cpu = passes.run(R0, rows, y, weights, u0, 0.1, order, 7)
    assert status == 0 and wall >= 0.0 and cpu >= 0.0
    R1, u1 = np.zeros((K, 9)), np.full(X.shape[0], np.log(K))
    passes.run(R1, rows, y, np.ones(X.shape[0]), u1, 0.1, order[weights > 0], 7)
    np.testing.assert_array_equal(R0, R1)
    np.testing.assert_array_equal(u0, u1)


def test_ridge_weights_make_the_sampled_penalty_unbiased(monkeypatch):
    X, y, K = _problem()
    y[: X.shape[0] // 2] = 0                                 # a frequent class
    seen = {}

    def spy(*args, **kwargs):
        seen["beta"] = np.array(args[14])
        return softmax_epoch(*args, **kwargs)
    monkeypatch.setattr(passes_module, "softmax_epoch", spy)
    m = 2
    order = np.arange(X.shape[0], dtype=np.intp)
    SoftmaxPasses("umax", n_sampled=m, alpha=0.1).run(
        np.zeros((K, 9)), SGDRows.of(X, np.float64, True), y, np.ones(X.shape[0]),
        np.full(X.shape[0], np.log(K)), 0.1, order, 0)
    c = np.bincount(y, minlength=K) / len(y)
    # beta_k = 1 / P(row k is touched in a step) = 1 / (c_k + (1 - c_k) m / (K - 1)), eq. (6)
    np.testing.assert_allclose(seen["beta"] * (c + (1 - c) * m / (K - 1)), 1.0)


def _by_hand(method, rows, y, R, u, eta, order, seed, alpha, m):
    """The one-thread driver called directly with the ridge's quantities of the pass, its
    lazy scales folded by hand: what :meth:`SoftmaxPasses.run` must do."""
    K = R.shape[0]
    counts = np.bincount(y[order], minlength=K) / len(order)
    beta = 1.0 / (counts + (1.0 - counts) * m / (K - 1))
    gamma = np.ones(K)
    bound_w = np.sqrt(2.0 * np.log(K) / alpha)
    bound_u = np.logaddexp(0.0, np.log(K - 1) + 2.0 * np.sqrt(rows.xsq[order].max()) * bound_w)
    status, _ = softmax_epoch(METHODS[method], rows.data, rows.indices, rows.indptr,
                              rows.dense, rows.n_features, True, y, np.ones(y.size),
                              rows.xsq, R, gamma, np.full(K, -1.0), u, beta, order, m, 1,
                              eta, alpha, 1.0, bound_w, bound_u, seed)
    assert status == 0
    return R * gamma[:, None]


@pytest.mark.parametrize("method", ["implicit", "umax", "sgd"])
def test_a_ridge_pass_folds_its_lazy_scales_into_the_weights(method):
    X, y, K = _problem(n=200)
    rows = SGDRows.of(X, np.float64, True)
    order = np.random.default_rng(1).permutation(X.shape[0]).astype(np.intp)
    R, u = np.zeros((K, 9)), np.full(X.shape[0], np.log(K))
    R[:, 0] = 0.5                                        # a start the ridge shrinks
    expected = _by_hand(method, rows, y, R.copy(), u.copy(), 0.05, order, 3, 0.3, 2)
    status, _, _ = SoftmaxPasses(method, n_sampled=2, alpha=0.3).run(
        R, rows, y, np.ones(X.shape[0]), u, 0.05, order, 3)
    assert status == 0
    np.testing.assert_allclose(R, expected, rtol=1e-12, atol=1e-15)


def test_a_pass_that_overflows_reports_it_and_its_log_gives_the_weights_back():
    X, y, K = _problem()
    rows = SGDRows.of(X * 1e3, np.float64, True)
    R = np.random.default_rng(0).standard_normal((K, 9))
    before, u = R.copy(), np.full(X.shape[0], np.log(K))
    order = np.arange(X.shape[0], dtype=np.intp)
    status, _, _ = SoftmaxPasses("sgd").run(R, rows, y, np.ones(X.shape[0]), u, 1e4, order,
                                            0, undo=True)
    assert status == 1
    np.testing.assert_array_equal(R, before)


def test_parallel_and_hashed_passes_move_the_weights():
    X, y, K = _problem(n=4000, d=20, density=0.3)
    rows = SGDRows.of(X, np.float32, True)
    order = np.arange(X.shape[0], dtype=np.intp)
    for passes, R, slots in [
            (SoftmaxPasses("ove", n_jobs=2), np.zeros((K, 21), np.float32), None),
            (SoftmaxPasses("ove", n_weights=256), np.zeros((1, 256 + K), np.float32),
             np.arange(K, dtype=np.intp))]:
        u = np.full(X.shape[0], np.log(K))
        status, _, _ = passes.run(R, rows, y, np.ones(X.shape[0]), u, 0.1, order, 5,
                                  slots=slots)
        assert status == 0 and np.all(np.isfinite(R)) and np.any(R != 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_epoch_mean_averages_the_weights_from_its_first_epoch_on(dtype):
    """Epochs before ``start`` are left out, the sum is a copy (later changes to the
    weights do not reach it), and the mean keeps the weights' dtype."""
    R = np.zeros((2, 3), dtype=dtype)
    mean = EpochMean(start=2)
    for epoch in range(5):
        R[:] = epoch
        mean.add(epoch, R)
    R[:] = -1
    assert mean.count == 3
    result = mean.mean()
    assert result.dtype == dtype
    np.testing.assert_array_equal(result, np.full((2, 3), 3.0, dtype=dtype))
