"""The multinomial datafit of L1LogisticOBA(multiclass="multinomial"): kernels, derivatives,
the Hessian on free sets and the duality gap, against slow NumPy references."""
import ctypes
import mmap

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp, softmax

from sparsekit._cython import _gram_kernels
from sparsekit._cython import _oba_kernels as K
from sparsekit.losses._duality import relative_duality_gap
from sparsekit.losses._multinomial_datafit import Multinomial
from sparsekit.losses._ridge_datafit import Ridge


def _problem(seed=0, n=40, D=7, Kc=4, density=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    X[rng.random((n, D)) > density] = 0.0
    X[3] = 0.0                                  # an empty row
    X[:, 2] = 0.0                               # an empty column
    y = rng.integers(0, Kc, n)
    y[:Kc] = np.arange(Kc)
    sw = rng.uniform(0.2, 2.0, n)
    return X, y, sw, rng


def _objective(X, y, sw, W, b, l2):
    Z = X @ W + b
    return float(sw @ (logsumexp(Z, axis=1) - Z[np.arange(len(y)), y])) / len(y) \
        + 0.5 * l2 * float((W * W).sum())


@pytest.mark.parametrize("layout", ["dense", "dense by BLAS", "csc", "csc by loops"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_multinomial_kernels_are_the_matrix_products(layout, dtype, n_threads):
    X, _, _, rng = _problem()
    X = X.astype(dtype)
    cols = np.array([0, 2, 5, 6], dtype=np.int64)
    Wc = rng.normal(size=(4, 3))
    b = rng.normal(size=3)
    R = rng.normal(size=(X.shape[0], 3))
    Z = np.empty((X.shape[0], 3))
    out = np.empty((4, 3))
    Xd = X.astype(np.float64)
    sq = np.empty_like(out)
    if layout.startswith("dense"):           # 3 classes: the AVX2 kernels where they run
        F, simd = np.asfortranarray(X), layout == "dense"
        K.mn_margins_dense(F, Wc, cols, b, Z, n_threads, simd)
        K.mn_rmatmat_dense(F, R, cols, out, False, n_threads, simd)
        K.mn_rmatmat_dense(F, R, cols, sq, True, n_threads, simd)
    else:                           # threads: blocks of rows of Z, found in each column
        S, simd = sp.csc_matrix(X), layout == "csc"
        K.mn_margins_csc(S.data, S.indices, S.indptr, Wc, cols, b, Z, n_threads, simd)
        K.mn_rmatmat_csc(S.data, S.indices, S.indptr, R, cols, out, False, n_threads, simd)
        K.mn_rmatmat_csc(S.data, S.indices, S.indptr, R, cols, sq, True, n_threads, simd)
    np.testing.assert_allclose(Z, Xd[:, cols] @ Wc + b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out, Xd[:, cols].T @ R, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(sq, (Xd[:, cols] ** 2).T @ R, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="len\\(cols\\)"):
        K.mn_rmatmat_dense(np.asfortranarray(X), R, cols, np.empty((3, 3)))
    with pytest.raises(ValueError, match="mn_margins_csc"):
        S = sp.csc_matrix(X)
        K.mn_margins_csc(S.data, S.indices, S.indptr, Wc[:2], cols, b, Z)


@pytest.mark.parametrize("simd", [True, False])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_multinomial_csc_kernels_prefetching_rows_ahead(n_threads, simd):
    """The column-walking kernels prefetch the row ROW_AHEAD stored entries ahead (the
    thread's own rows of Z only; the AVX2 kernels the rows of R): on thousands of entries,
    columns listed out of storage order, repeated and empty, the sums are still the
    products'."""
    rng = np.random.default_rng(3)
    dense = sp.random(500, 60, density=0.2, random_state=3).toarray()
    dense[:, 7] = 0.0
    S = sp.csc_matrix(dense)
    cols = np.array([59, 3, 7, 3, 40, *range(10, 30)], dtype=np.int64)
    Wc, b = rng.normal(size=(cols.size, 9)), rng.normal(size=9)
    R, Z = rng.normal(size=(500, 9)), np.empty((500, 9))
    out = np.empty((cols.size, 9))
    K.mn_margins_csc(S.data, S.indices, S.indptr, Wc, cols, b, Z, n_threads, simd)
    K.mn_rmatmat_csc(S.data, S.indices, S.indptr, R, cols, out, False, n_threads, simd)
    Xd = S.toarray()
    np.testing.assert_allclose(Z, Xd[:, cols] @ Wc + b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out, Xd[:, cols].T @ R, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("simd", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_cols", [1, 45, 600])
def test_dense_kernels_over_many_blocks_of_rows_and_chunks_of_columns(dtype, n_cols, simd):
    """The dense kernels multiply float64 panels of fixed blocks of rows (the listed
    columns, in chunks of 32 for Xᵀ R) by BLAS, or (``simd``, 6 classes) read blocks of
    rows of 8 columns at a time by the AVX2 kernels: on row counts that are no multiple of
    a block, columns listed out of order and repeated, and huge or tiny float32 entries
    (exact in float64), the products are NumPy's; 1 and 3 threads give the same bits."""
    rng = np.random.default_rng(7)
    n, D, Kc = 5003, 640, 6
    X = rng.normal(size=(n, D)).astype(dtype)
    X[:, 5] *= 1e30 if dtype == np.float32 else 1e200
    X[:, 6] *= 1e-30
    X[17] = 0.0
    cols = rng.choice(D, n_cols, replace=n_cols > 500).astype(np.int64)
    cols[0] = 5
    F, Xd = np.asfortranarray(X), X.astype(np.float64)[:, cols]
    Wc, b, R = rng.normal(size=(n_cols, Kc)), rng.normal(size=Kc), rng.normal(size=(n, Kc))
    got = {}
    for n_threads in (1, 3):
        Z, out, sq = np.empty((n, Kc)), np.empty((n_cols, Kc)), np.empty((n_cols, Kc))
        K.mn_margins_dense(F, Wc, cols, b, Z, n_threads, simd)
        K.mn_rmatmat_dense(F, R, cols, out, False, n_threads, simd)
        with np.errstate(over="ignore"):
            K.mn_rmatmat_dense(F, R, cols, sq, True, n_threads, simd)
        got[n_threads] = Z, out, sq
    for a, c in zip(got[1], got[3]):
        np.testing.assert_array_equal(a, c)
    Z, out, sq = got[1]
    np.testing.assert_allclose(Z, Xd @ Wc + b, rtol=1e-10, atol=1e-12 * np.abs(Xd).max())
    np.testing.assert_allclose(out, Xd.T @ R, rtol=1e-10, atol=1e-12 * np.abs(Xd).max())
    finite = np.abs(Xd).max(axis=0) < 1e100
    np.testing.assert_allclose(sq[finite], (Xd[:, finite] ** 2).T @ R, rtol=1e-10)


@pytest.mark.skipif(not K.simd_available(), reason="no AVX2/FMA kernels on this CPU")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_simd_dense_kernels_for_every_count_of_classes_rows_and_columns(dtype):
    """The AVX2 kernels keep the K <= 12 classes in 1-3 vectors of four, rows (X W) or
    columns (Xᵀ R) 8 or 4 at a time and then one at a time: for every K from 1 to 13 (13:
    BLAS), row counts around the blocks (1, 5, 9, 1,031) and column counts around the
    chunks (1, 3, 13), X W and Xᵀ R equal NumPy's, whichever the route, and 1 and 3
    threads give the same bits. The lanes of a row of R read past its K numbers (the next
    row's, here NaN) never reach the result."""
    rng = np.random.default_rng(11)
    for n, n_cols, Kc in [(n, c, k) for n in (1, 5, 9, 1031) for c in (1, 3, 13)
                          for k in range(1, 14)]:
        X = rng.normal(size=(n, 17)).astype(dtype)
        cols = rng.choice(17, n_cols).astype(np.int64)    # repeats too
        F, Xd = np.asfortranarray(X), X.astype(np.float64)[:, cols]
        Wc, b = rng.normal(size=(n_cols, Kc)), rng.normal(size=Kc)
        R = rng.normal(size=(n, Kc))
        R[1::2, 0] = np.nan               # read past the even rows: NaN lanes
        got = []
        for n_threads, simd in ((1, True), (3, True), (1, False)):
            Z, out = np.empty((n, Kc)), np.empty((n_cols, Kc))
            K.mn_margins_dense(F, Wc, cols, b, Z, n_threads, simd)
            K.mn_rmatmat_dense(F, R, cols, out, False, n_threads, simd)
            got.append((Z, out))
        for a, c in zip(got[0], got[1]):
            np.testing.assert_array_equal(a, c)
        for Z, out in (got[0], got[2]):
            np.testing.assert_allclose(Z, Xd @ Wc + b, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(out, Xd.T @ R, rtol=1e-12, atol=1e-12)
            assert np.isfinite(out[:, 1:]).all()


@pytest.mark.skipif(not K.simd_available(), reason="no AVX2/FMA kernels on this CPU")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_simd_csc_kernels_for_every_count_of_classes_rows_and_columns(dtype, index):
    """The AVX2 kernels of a sparse X by columns keep the K <= 12 classes in 1-3 vectors
    of four: X W in blocks of 1,024 rows of each thread's rows (where the columns store 8
    entries a block or more: the loops' bits on 1 and 5 rows), Xᵀ R (and its square) with
    two sums per column. For every K from 1 to 13 (13: the loops), row counts around the
    blocks (1, 5, 1,023, 2,049), columns listed out of order, repeated and empty, int32
    or int64 indices, X W and Xᵀ R equal NumPy's whichever the route, and 1 and 3 threads
    give the same bits. The lanes of a row of R read past its K numbers (the next row's,
    here NaN) never reach the result, nor does a read past R's last row, which every
    column but the empty one stores."""
    rng = np.random.default_rng(12)
    for n, Kc in [(n, k) for n in (1, 5, 1023, 2049) for k in range(1, 14)]:
        X = sp.random(n, 9, density=0.3, random_state=rng, format="csc").toarray()
        X[-1, :] = rng.normal(size=9)
        X[:, 4] = 0.0
        X = X.astype(dtype)
        S = sp.csc_matrix(X)
        S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
        cols = np.array([8, 4, 0, 3, 3, 7, 1], dtype=np.int64)
        Xd = X.astype(np.float64)[:, cols]
        Wc, b = rng.normal(size=(cols.size, Kc)), rng.normal(size=Kc)
        R = rng.normal(size=(n, Kc))
        R[::2, 0] = np.nan                # read past the odd rows: NaN lanes
        got = []
        for n_threads, simd in ((1, True), (3, True), (1, False)):
            Z, out, sq = (np.empty((n, Kc)), np.empty((cols.size, Kc)),
                          np.empty((cols.size, Kc)))
            K.mn_margins_csc(S.data, S.indices, S.indptr, Wc, cols, b, Z, n_threads, simd)
            K.mn_rmatmat_csc(S.data, S.indices, S.indptr, R, cols, out, False, n_threads,
                             simd)
            K.mn_rmatmat_csc(S.data, S.indices, S.indptr, R, cols, sq, True, n_threads,
                             simd)
            got.append((Z, out, sq))
        for a, c in zip(got[0], got[1]):
            np.testing.assert_array_equal(a, c)
        if n <= 5:                         # short columns: X W by the loops
            np.testing.assert_array_equal(got[0][0], got[2][0])
        Sc = sp.csc_matrix(Xd)             # its products skip the zeros, as the kernels
        for Z, out, sq in (got[0], got[2]):
            np.testing.assert_allclose(Z, Xd @ Wc + b, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(out, Sc.T @ R, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(sq, Sc.multiply(Sc).T @ R, rtol=1e-12, atol=1e-12)
            assert np.isfinite(out[:, 1:]).all() and np.isfinite(sq[:, 1:]).all()


def test_product_kernels_refuse_columns_and_shapes_they_cannot_read():
    X = np.asfortranarray(np.ones((10, 4)))
    S = sp.csc_matrix(X)
    Z, out = np.empty((10, 2)), np.empty((1, 2))
    for bad in (-1, 4):
        cols = np.array([bad], dtype=np.int64)
        with pytest.raises(ValueError, match="column index is out of range"):
            K.mn_margins_dense(X, np.ones((1, 2)), cols, np.zeros(2), Z)
        with pytest.raises(ValueError, match="column index is out of range"):
            K.mn_rmatmat_dense(X, np.ones((10, 2)), cols, out)
        with pytest.raises(ValueError, match="column index is out of range"):
            K.mn_margins_csc(S.data, S.indices, S.indptr, np.ones((1, 2)), cols, np.zeros(2),
                             Z)
        with pytest.raises(ValueError, match="column index is out of range"):
            K.mn_rmatmat_csc(S.data, S.indices, S.indptr, np.ones((10, 2)), cols, out)
    if K.simd_available():        # X W by blocks of rows needs each column's rows sorted
        rows = np.arange(2049, dtype=np.int32)[::-1].copy()
        with pytest.raises(ValueError, match="sorted"):
            K.mn_margins_csc(np.ones(2049), rows, np.array([0, 2049], dtype=np.int32),
                             np.ones((1, 2)), np.zeros(1, dtype=np.int64), np.zeros(2),
                             np.empty((2049, 2)), 2)
    cols = np.array([1], dtype=np.int64)
    with pytest.raises(ValueError, match="X's rows"):
        K.mn_margins_dense(X, np.ones((1, 2)), cols, np.zeros(2), Z[:9])
    with pytest.raises(ValueError, match="X's rows"):
        K.mn_rmatmat_dense(X, np.ones((9, 2)), cols, out)
    empty = np.asfortranarray(np.ones((0, 4)))
    out[:] = np.nan
    K.mn_rmatmat_dense(empty, np.ones((0, 2)), cols, out)
    np.testing.assert_array_equal(out, 0.0)
    Z0 = np.empty((10, 2))
    K.mn_margins_dense(X, np.ones((0, 2)), np.empty(0, dtype=np.int64), np.arange(2.0), Z0)
    np.testing.assert_array_equal(Z0, np.tile(np.arange(2.0), (10, 1)))


def _free_entries(rng, D, Kc, size):
    """Sorted free weight entries j K + k, none of feature 4: (feature, start over
    features, classes)."""
    pool = np.setdiff1d(np.arange(D * Kc), np.arange(4 * Kc, 5 * Kc))
    free = np.sort(rng.choice(pool, size, replace=False))
    features, classes = free // Kc, free % Kc
    start = np.zeros(D + 1, dtype=np.int64)
    np.cumsum(np.bincount(features, minlength=D), out=start[1:])
    return features, start, classes.astype(np.int64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_free_entry_kernels_are_the_products_on_the_free_entries(dtype, index):
    """mn_margins_free_csr and mn_rmatmat_free_csr (the rows of a CSR X, each stored entry
    touching its column's free classes) against dense products; an empty row, a column
    without free entries; the threads and the blocks of partial sums change no bit."""
    X, _, _, rng = _problem(7, n=9000, D=30, Kc=5, density=0.2)
    Kc = 45
    S = sp.csr_matrix(X.astype(dtype))
    S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
    features, start, classes = _free_entries(rng, 30, Kc, 200)
    assert start[5] == start[4]
    v, b = rng.normal(size=classes.size), rng.normal(size=Kc)
    V = np.zeros((30, Kc))
    V[features, classes] = v
    R = rng.normal(size=(9000, Kc))
    Xd = S.toarray().astype(np.float64)
    results = []
    for n_threads in (1, 3):
        Z, out, sq = np.empty((9000, Kc)), np.empty(classes.size), np.empty(classes.size)
        blocks = K.free_chunks(9000, classes.size)
        assert blocks == 2                              # 9000 rows: 4,096 rows a block
        K.mn_margins_free_csr(S.data, S.indices, S.indptr, start, classes, v, b, Z,
                              n_threads)
        K.mn_rmatmat_free_csr(S.data, S.indices, S.indptr, R, start, classes, out,
                              np.empty((blocks, classes.size)), False, n_threads)
        K.mn_rmatmat_free_csr(S.data, S.indices, S.indptr, R, start, classes, sq,
                              np.empty((blocks, classes.size)), True, n_threads)
        np.testing.assert_allclose(Z, Xd @ V + b, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(out, (Xd.T @ R)[features, classes], rtol=1e-11,
                                   atol=1e-11)
        np.testing.assert_allclose(sq, ((Xd ** 2).T @ R)[features, classes], rtol=1e-11,
                                   atol=1e-11)
        results.append((Z, out, sq))
    for a, c in zip(*results):
        np.testing.assert_array_equal(a, c)


def test_free_chunks_depend_on_rows_and_sums_only():
    """Up to 16 blocks of at least 4,096 rows and 2²⁴ partial sums in all; one at least."""
    assert K.free_chunks(9000, 10) == 2 and K.free_chunks(4095, 10) == 1
    assert K.free_chunks(100, 10) == 1 and K.free_chunks(0, 0) == 1
    assert K.free_chunks(10 ** 6, 10) == 16 and K.free_chunks(10 ** 6, 1 << 23) == 2
    assert K.free_chunks(10 ** 6, 1 << 25) == 1


def test_free_entry_kernels_refuse_inconsistent_entries():
    S = sp.csr_matrix(np.eye(3))
    start, classes = np.array([0, 1, 1, 2]), np.array([0, 1])
    R, v, b = np.ones((3, 2)), np.ones(2), np.zeros(2)
    bad_entries = [(np.array([1, 1, 1, 2]), classes, "from 0"),
                   (np.array([0, 2, 1, 2]), classes, "non-decreasing"),
                   (start, np.array([0, 2]), "out of range"),
                   (start[:1], classes, "from 0")]
    for st, cl, message in bad_entries:
        with pytest.raises(ValueError, match=message):
            K.mn_margins_free_csr(S.data, S.indices, S.indptr, st, cl, v, b,
                                  np.empty((3, 2)))
        with pytest.raises(ValueError, match=message):
            K.mn_rmatmat_free_csr(S.data, S.indices, S.indptr, R, st, cl, np.empty(2),
                                  np.empty((1, 2)))
    with pytest.raises(ValueError, match="n rows"):
        K.mn_margins_free_csr(S.data, S.indices, S.indptr, start, classes, v, b,
                              np.empty((4, 2)))
    with pytest.raises(ValueError, match="runs past"):
        K.mn_rmatmat_free_csr(S.data[:2], S.indices[:2], S.indptr, R, start, classes,
                              np.empty(2), np.empty((1, 2)))
    with pytest.raises(ValueError, match="decreases"):      # row 0 would read 3 entries
        K.mn_margins_free_csr(S.data, S.indices, np.array([0, 3, 1, 3], dtype=np.int32),
                              start, classes, v, b, np.empty((3, 2)))
    with pytest.raises(ValueError, match="column index"):
        K.mn_rmatmat_free_csr(S.data, np.array([0, 3, 2], dtype=np.int32), S.indptr, R,
                              start, classes, np.empty(2), np.empty((1, 2)))
    with pytest.raises(ValueError, match="v must match"):
        K.mn_margins_free_csr(S.data, S.indices, S.indptr, start, classes, v[:1], b,
                              np.empty((3, 2)))
    for out, work in ((np.empty(3), np.empty((1, 2))), (np.empty(2), np.empty((1, 3))),
                      (np.empty(2), np.empty((0, 2)))):
        with pytest.raises(ValueError, match="work"):
            K.mn_rmatmat_free_csr(S.data, S.indices, S.indptr, R, start, classes, out, work)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("intercepts", [False, True])
def test_fused_free_entry_product_is_the_three_kernels_in_turn(dtype, index, intercepts):
    """mn_hessp_free_csr (one pass over the rows) against mn_margins_free_csr, mn_curvature
    and mn_rmatmat_free_csr in turn and the column sums of their R, and against the dense
    formula; an empty row, a column without free entries, a zero weight, probabilities
    0 and 1; the threads change no bit."""
    X, _, _, rng = _problem(11, n=9000, D=30, Kc=5, density=0.2)
    Kc = 45
    S = sp.csr_matrix(X.astype(dtype))
    S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
    features, start, classes = _free_entries(rng, 30, Kc, 200)
    v, vb = rng.normal(size=classes.size), rng.normal(size=Kc)
    Z = rng.normal(scale=3.0, size=(9000, Kc))
    Z[5, 0] = 800.0                                     # p = 1 and 0 in that row
    P = softmax(Z, axis=1)
    sw = rng.uniform(0.0, 2.0, 9000)
    sw[6] = 0.0
    U = np.empty((9000, Kc))
    K.mn_margins_free_csr(S.data, S.indices, S.indptr, start, classes, v, vb, U)
    K.mn_curvature(P, U, sw)
    blocks = K.free_chunks(9000, classes.size + Kc)
    want = np.empty(classes.size)
    K.mn_rmatmat_free_csr(S.data, S.indices, S.indptr, U, start, classes, want,
                          np.empty((blocks, classes.size)))
    V = np.zeros((30, Kc))
    V[features, classes] = v
    Xd = S.toarray().astype(np.float64)
    U_dense = Xd @ V + vb
    R_dense = sw[:, None] * (P * U_dense - P * (P * U_dense).sum(axis=1, keepdims=True))
    results = []
    for n_threads in (1, 3):
        out, out_b = np.empty(classes.size), np.full(Kc, np.nan)
        K.mn_hessp_free_csr(S.data, S.indices, S.indptr, start, classes, v, vb, P, sw, out,
                            out_b, np.empty((blocks, classes.size + Kc)),
                            np.empty((blocks, Kc)), intercepts, n_threads)
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(out, (Xd.T @ R_dense)[features, classes], rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(out_b, U.sum(axis=0) if intercepts else 0.0,
                                   rtol=1e-12, atol=1e-14)
        results.append((out, out_b))
    for a, c in zip(*results):
        np.testing.assert_array_equal(a, c)


@pytest.mark.skipif(not K.simd_available(), reason="no AVX2/FMA kernels on this CPU")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_fused_every_class_product_is_the_three_column_kernels_in_one_pass(dtype, index):
    """mn_hessp_csr (the AVX2 kernel: one pass over the rows, every class of each column)
    against the dense formula and the column kernels in turn, for K = 1..12 on row counts
    around its blocks (1, 5, 9,000), an empty row, an empty column, a zero weight,
    probabilities 0 and 1 and a last row with entries (P's, read from a padded copy); the
    threads change no bit; 13 classes, a column outside Vc and bad shapes are refused."""
    rng = np.random.default_rng(13)
    for n, Kc in [(n, k) for n in (1, 5, 9000) for k in range(1, 13)]:
        X, _, _, _ = _problem(Kc, n=max(n, 6), D=11, Kc=2, density=0.3)
        X = X[:n]
        X[-1, :3] = 1.5
        S = sp.csr_matrix(X.astype(dtype))
        S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
        Vc, vb = rng.normal(size=(11, Kc)), rng.normal(size=Kc)
        Z = rng.normal(scale=3.0, size=(n, Kc))
        Z[0, 0] = 800.0                                 # p = 1 and 0 in that row
        P = softmax(Z, axis=1)
        sw = rng.uniform(0.0, 2.0, n)
        sw[n // 2] = 0.0
        Xd = S.toarray().astype(np.float64)
        U = Xd @ Vc + vb
        R = sw[:, None] * (P * U - P * (P * U).sum(axis=1, keepdims=True))
        width = 12 * 4 * -(-Kc // 4)
        results = []
        for n_threads in (1, 3):
            out, out_b = np.full((11, Kc), np.nan), np.full(Kc, np.nan)
            K.mn_hessp_csr(S.data, S.indices, S.indptr, Vc, vb, P, sw, out, out_b,
                           np.empty((K.free_chunks(n, width), width)), n_threads)
            np.testing.assert_allclose(out, Xd.T @ R, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(out_b, R.sum(axis=0), rtol=1e-10, atol=1e-12)
            results.append((out, out_b))
        for a, c in zip(*results):
            np.testing.assert_array_equal(a, c)
    S = sp.csr_matrix(np.eye(3))
    P, sw = np.full((3, 2), 0.5), np.ones(3)

    def call(indices=S.indices, indptr=S.indptr, Vc=np.ones((3, 2)), vb=np.zeros(2), P=P,
             sw=sw, out=None, work=None):
        K.mn_hessp_csr(S.data, indices, indptr, Vc, vb, P, sw,
                       np.empty((Vc.shape[0], P.shape[1])) if out is None else out,
                       np.empty(P.shape[1]), np.empty((1, 16)) if work is None else work)

    call()
    for kwargs, message in [(dict(indices=np.array([0, 3, 2], dtype=np.int32)), "column"),
                            (dict(indptr=np.array([0, 2, 1, 3], dtype=np.int32)), "indptr"),
                            (dict(P=np.full((3, 13), 1 / 13), vb=np.zeros(13),
                                  Vc=np.ones((3, 13))), "1 to 12 classes"),
                            (dict(P=P[:2], sw=sw[:2]), "n rows"),
                            (dict(vb=np.zeros(3)), "vb"), (dict(sw=sw[:2]), "sw"),
                            (dict(out=np.empty((2, 2))), "out"),
                            (dict(work=np.empty((1, 12))), "work"),
                            (dict(work=np.empty((0, 16))), "work")]:
        with pytest.raises(ValueError, match=message):
            call(**kwargs)


def _before_a_guard_page(a):
    """A C-ordered copy of ``a`` whose buffer ends where a page begins that no one may read
    (a read past ``a`` is a segmentation fault), or None where that cannot be arranged."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        page = mmap.PAGESIZE
        size = -(-a.nbytes // page) * page
        mm = mmap.mmap(-1, size + page)
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        if libc.mprotect(ctypes.c_void_p(base + size), ctypes.c_size_t(page), 0) != 0:
            return None
    except (OSError, AttributeError, ValueError):
        return None
    out = np.frombuffer(mm, dtype=a.dtype, count=a.size,
                        offset=size - a.nbytes).reshape(a.shape)
    out[...] = a
    return out


@pytest.mark.skipif(not K.simd_available(), reason="no AVX2/FMA kernels on this CPU")
def test_simd_kernels_read_no_number_past_the_rows_they_are_given():
    """The AVX2 kernels read 4 ⌈K/4⌉ numbers of each row of R (or P): where that runs past
    the buffer (the last row; with K = 1 the last three) they read a padded copy. R and P
    end before a page no one may read, for every K and a few row counts."""
    rng = np.random.default_rng(5)
    cols = np.arange(3, dtype=np.int64)
    for n in (1, 2, 3, 4, 7):
        X = rng.normal(size=(n, 3))
        X[:, 1] = 0.0
        Xf, S, C = np.asfortranarray(X), sp.csr_matrix(X), sp.csc_matrix(X)
        for Kc in range(1, 13):
            R = _before_a_guard_page(rng.normal(size=(n, Kc)))
            P = _before_a_guard_page(softmax(rng.normal(size=(n, Kc)), axis=1))
            if R is None or P is None:
                pytest.skip("no guard page here (mmap/mprotect)")
            for kernel, A in [(K.mn_rmatmat_dense, Xf), (K.mn_rmatmat_csc, None)]:
                out = np.empty((3, Kc))
                if A is None:
                    kernel(C.data, C.indices, C.indptr, R, cols, out)
                else:
                    kernel(A, R, cols, out)
                np.testing.assert_allclose(out, X.T @ R, rtol=1e-12, atol=1e-12)
            V, vb, sw = rng.normal(size=(3, Kc)), rng.normal(size=Kc), np.ones(n)
            out, out_b = np.empty((3, Kc)), np.empty(Kc)
            width = 4 * 4 * -(-Kc // 4)
            K.mn_hessp_csr(S.data, S.indices, S.indptr, V, vb, P, sw, out, out_b,
                           np.empty((K.free_chunks(n, width), width)))
            U = X @ V + vb
            Rh = P * U - P * (P * U).sum(axis=1, keepdims=True)
            np.testing.assert_allclose(out, X.T @ Rh, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(out_b, Rh.sum(axis=0), rtol=1e-10, atol=1e-12)


def test_fused_free_entry_product_refuses_inconsistent_arrays():
    S = sp.csr_matrix(np.eye(3))
    start, classes = np.array([0, 1, 1, 2]), np.array([0, 1])
    P, sw, v, vb = np.full((3, 2), 0.5), np.ones(3), np.ones(2), np.zeros(2)

    def call(st=start, cl=classes, indices=S.indices, v=v, vb=vb, P=P, sw=sw, out=None,
             out_b=None, work=None, row=None):
        K.mn_hessp_free_csr(S.data, indices, S.indptr, st, cl, v, vb, P, sw,
                            np.empty(2) if out is None else out,
                            np.empty(2) if out_b is None else out_b,
                            np.empty((1, 4)) if work is None else work,
                            np.empty((1, 2)) if row is None else row)

    call()
    for kwargs, message in [(dict(st=np.array([1, 1, 1, 2])), "from 0"),
                            (dict(cl=np.array([0, 2])), "out of range"),
                            (dict(indices=np.array([0, 3, 2], dtype=np.int32)), "column"),
                            (dict(P=P[:2]), "n rows"),
                            (dict(v=v[:1]), "v and out"), (dict(vb=np.zeros(3)), "vb"),
                            (dict(sw=sw[:2]), "sw"), (dict(out=np.empty(3)), "v and out"),
                            (dict(out_b=np.empty(1)), "out_b"),
                            (dict(work=np.empty((1, 3))), "work"),
                            (dict(work=np.empty((0, 4)), row=np.empty((0, 2))), "work"),
                            (dict(row=np.empty((2, 2))), "row"),
                            (dict(row=np.empty((1, 3))), "row")]:
        with pytest.raises(ValueError, match=message):
            call(**kwargs)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_free_entry_column_kernels_are_the_products_on_the_free_entries(dtype, index):
    """mn_margins_free_csc and mn_rmatmat_free_csc (the listed columns of a CSC X, each
    stored entry touching its column's free classes) against dense products: all columns
    listed (one of them with no free entry, one empty) or some of them, in any order; the
    threads change no bit."""
    X, _, _, rng = _problem(8, n=900, D=30, Kc=5, density=0.2)
    X[:, 7] = 0.0                                   # an empty column
    Kc = 45
    S = sp.csc_matrix(X.astype(dtype))
    S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
    features, start, classes = _free_entries(rng, 30, Kc, 200)
    assert start[5] == start[4] and start[8] > start[7]
    v, b = rng.normal(size=classes.size), rng.normal(size=Kc)
    R = rng.normal(size=(900, Kc))
    Xd = S.toarray().astype(np.float64)
    order = np.r_[20:30, 0:20]                      # listed out of order, with their entries
    counts = np.diff(start)
    picks = [(np.arange(30), start, np.arange(classes.size)),
             (order, np.r_[0, np.cumsum(counts[order])],
              np.concatenate([np.arange(start[j], start[j + 1]) for j in order])),
             (np.array([3, 9, 12]), np.r_[0, np.cumsum(counts[[3, 9, 12]])],
              np.concatenate([np.arange(start[j], start[j + 1]) for j in (3, 9, 12)]))]
    for cols, st, at in picks:
        cl, vals = classes[at], v[at]
        V = np.zeros((30, Kc))
        V[features[at], cl] = vals
        results = []
        for n_threads in (1, 3):
            Z, out, sq = np.empty((900, Kc)), np.empty(at.size), np.empty(at.size)
            K.mn_margins_free_csc(S.data, S.indices, S.indptr, cols.astype(np.int64), st, cl,
                                  vals, b, Z, n_threads)
            K.mn_rmatmat_free_csc(S.data, S.indices, S.indptr, R, cols.astype(np.int64), st,
                                  cl, out, False, n_threads)
            K.mn_rmatmat_free_csc(S.data, S.indices, S.indptr, R, cols.astype(np.int64), st,
                                  cl, sq, True, n_threads)
            np.testing.assert_allclose(Z, Xd @ V + b, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(out, (Xd.T @ R)[features[at], cl], rtol=1e-11,
                                       atol=1e-11)
            np.testing.assert_allclose(sq, ((Xd ** 2).T @ R)[features[at], cl], rtol=1e-11,
                                       atol=1e-11)
            results.append((Z, out, sq))
        for a, c in zip(*results):
            np.testing.assert_array_equal(a, c)


def test_products_walk_the_free_entries_where_they_are_few_of_their_columns_classes():
    """On a sparse X walked by columns, a matrix-free product touches only the free entries
    where they are at most half of their columns' classes and the columns are too short for
    the AVX2 kernel's blocks of rows; the same products as over every class."""
    rng = np.random.default_rng(22)
    X = sp.random(3000, 2000, density=0.002, random_state=22, format="csr")   # short
    for n_classes in (3, 20):
        f = Multinomial(X, rng.integers(0, n_classes, 3000), n_classes, fit_intercept=True)
        x = rng.normal(scale=0.3, size=f.n_params)
        f.value_grad(x)
        cols = np.arange(0, 2000, 3)
        one = cols * n_classes + 1                                # a class of each column
        every = (cols[:, None] * n_classes + np.arange(n_classes)).ravel()
        for free, by_entries in ((one, True), (every, False)):
            free = np.r_[free, f.n_features * n_classes]          # and an intercept
            op = f._matrix_free(free)
            assert not op.walks_rows and not op._by_rows and op._by_entries == by_entries
            v = rng.normal(size=free.size)
            got, diagonal = op(v), op.diagonal().copy()
            op._by_entries, op._diag = not by_entries, None
            np.testing.assert_allclose(op(v), got, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(op.diagonal(), diagonal, rtol=1e-12, atol=1e-15)
    if K.simd_available(3):                 # long columns: the AVX2 kernel's blocks
        X = sp.random(3000, 20, density=0.5, random_state=22, format="csr")
        f = Multinomial(X, rng.integers(0, 3, 3000), 3)
        f.value_grad(np.zeros(f.n_params))
        op = f._matrix_free(np.array([0, 3, 6]))                 # a class of 3 columns
        assert not op.walks_rows and not op._by_rows and not op._by_entries


def test_free_entry_column_kernels_refuse_inconsistent_entries():
    S = sp.csc_matrix(np.eye(3))
    cols, start, classes = np.arange(3), np.array([0, 1, 1, 2]), np.array([0, 1])
    R, v, b = np.ones((3, 2)), np.ones(2), np.zeros(2)
    bad = [(cols, np.array([1, 1, 1, 2]), classes, v, "from 0"),
           (cols, np.array([0, 2, 1, 2]), classes, v, "non-decreasing"),
           (cols, start, np.array([0, 2]), v, "out of range"),
           (cols, start[:3], classes, v, r"len\(cols\) \+ 1"),
           (cols, start, classes, v[:1], "values match"),
           (np.array([0, 1, 3]), start, classes, v, "column index")]
    for c, st, cl, vals, message in bad:
        with pytest.raises(ValueError, match=message):
            K.mn_margins_free_csc(S.data, S.indices, S.indptr, c, st, cl, vals, b,
                                  np.empty((3, 2)))
        with pytest.raises(ValueError, match=message):
            K.mn_rmatmat_free_csc(S.data, S.indices, S.indptr, R, c, st, cl, vals.copy())
    with pytest.raises(ValueError, match=r"b must be \(K,\)"):
        K.mn_margins_free_csc(S.data, S.indices, S.indptr, cols, start, classes, v, b[:1],
                              np.empty((3, 2)))
    with pytest.raises(ValueError, match="column index"):
        K.margins_csc_blocked(S.indptr, np.array([0, 3]), 3, 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_row_walking_rmatmat_is_the_transposed_product(dtype, index):
    """mn_rmatmat_csr against Xᵀ R: one block of rows (no partial sums) or several, an empty
    row and an empty column; the threads change no bit; refusals."""
    X, _, _, rng = _problem(12, n=9000, D=30, Kc=5, density=0.2)
    S = sp.csr_matrix(X.astype(dtype))
    S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
    R = rng.normal(size=(9000, 33))
    want = S.toarray().astype(np.float64).T @ R
    for blocks in (1, 2, 5):
        results = []
        for n_threads in (1, 3):
            out = np.full((30, 33), np.nan)
            K.mn_rmatmat_csr(S.data, S.indices, S.indptr, R, out,
                             np.empty((blocks - 1, out.size)), n_threads)
            np.testing.assert_allclose(out, want, rtol=1e-11, atol=1e-11)
            results.append(out)
        np.testing.assert_array_equal(*results)
    out, work = np.empty((30, 33)), np.empty((1, 30 * 33))
    with pytest.raises(ValueError, match="len\\(out\\)"):
        K.mn_rmatmat_csr(S.data, S.indices, S.indptr, R, out[:20], work)
    with pytest.raises(ValueError, match="R must be"):
        K.mn_rmatmat_csr(S.data, S.indices, S.indptr, R[:-1], out, work)
    with pytest.raises(ValueError, match="R must be"):
        K.mn_rmatmat_csr(S.data, S.indices, S.indptr, R, np.empty((30, 5)), work)
    with pytest.raises(ValueError, match="R must be"):
        K.mn_rmatmat_csr(S.data, S.indices, S.indptr, R, out, np.empty((1, 30 * 33 - 1)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("intercept", [False, True])
def test_value_and_gradient_walking_rows_are_those_walking_columns(dtype, intercept,
                                                                    monkeypatch):
    """With many classes the scores walk the rows of X over the nonzero weights where that
    pays, and on a tall X the gradient's Xᵀ R the rows of X (one block or several): the same
    value and gradient as the column walks and the formula, at a sparse W (zero features,
    zero classes), at W = 0 and at a dense W, on 1 and 3 threads (the same bits)."""
    X, y, sw, rng = _problem(13, n=300, D=12, Kc=40, density=0.3)
    y = rng.integers(0, 40, 300)
    S = sp.csr_matrix(X.astype(dtype))
    calls = {"mn_margins_free_csr": 0, "mn_rmatmat_csr": 0}
    for name in calls:
        def counted(*args, _kernel=getattr(K, name), _name=name):
            calls[_name] += 1
            return _kernel(*args)
        monkeypatch.setattr(K, name, counted)
    rows = [Multinomial(S, y, 40, sw, intercept, n_threads=t) for t in (1, 3)]
    tall = Multinomial(sp.vstack([S] * 30).tocsr(), np.tile(y, 30), 40, np.tile(sw, 30),
                       intercept)                       # the gradient in 2 blocks of rows
    assert K.free_chunks(tall.n_samples, 12 * 40) == 2
    cols = Multinomial(S, y, 40, sw, intercept)
    cols.row_walk_classes = np.inf
    assert rows[0]._gradient_walks_rows() and not cols._walks_x_rows()
    wide = Multinomial(S, y, 40, sw, intercept)
    wide.row_walk_tall = 26                             # 300 rows < 26 × 12: columns
    assert wide._walks_x_rows() and not wide._gradient_walks_rows()
    wide.row_walk_weights = 12 * 40 - 1                 # W no longer fits: columns
    assert not wide._walks_x_rows()
    for density, scores_by_rows in ((0.05, True), (0.0, False), (1.0, False)):
        x = rng.normal(scale=0.3, size=rows[0].n_params)
        x[:rows[0].n_features * 40][rng.random(12 * 40) > density] = 0.0
        x[3 * 40:4 * 40] = 0.0                          # a feature without weights
        before = dict(calls)
        f1, g1 = rows[0].value_grad(x)
        assert calls["mn_margins_free_csr"] - before["mn_margins_free_csr"] == scores_by_rows
        assert calls["mn_rmatmat_csr"] - before["mn_rmatmat_csr"] == 1
        fc, gc = cols.value_grad(x)
        assert f1 == pytest.approx(fc, rel=1e-13)
        np.testing.assert_allclose(g1, gc, rtol=1e-11, atol=1e-15)
        f3, g3 = rows[1].value_grad(x)
        assert f1 == f3 and np.array_equal(g1, g3)
        f4, g4 = tall.value_grad(x)                     # 30 copies: the same mean terms
        assert f4 == pytest.approx(f1, rel=1e-12)
        np.testing.assert_allclose(g4, gc, rtol=1e-10, atol=1e-14)
        W, b = rows[0].split(x)
        assert f1 == pytest.approx(_objective(X.astype(dtype).astype(np.float64), y, sw, W,
                                              b, 0.0), rel=1e-6 if dtype == np.float32
                                   else 1e-12)
        D = rows[0]._diagonal_weights()
        assert D is rows[0]._diagonal_weights()         # once per point
        np.testing.assert_array_equal(D, rows[0]._P * (1 - rows[0]._P) * rows[0]._sw[:, None])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_csr_rows_dense_is_scipys_array_of_those_rows(dtype, index):
    """csr_rows_dense writes the listed rows of a CSR X (in any order, repeated, empty,
    with duplicate entries summed) into a Fortran array, overwriting what it held, as
    SciPy's toarray; rows or columns outside X are refused."""
    X, _, _, rng = _problem(5, n=60, D=9)
    S = sp.csr_matrix(X.astype(dtype))
    dup = sp.csr_matrix((np.ones(3, dtype=dtype), np.array([2, 2, 5], dtype=index),
                         np.array([0, 3], dtype=index)), shape=(1, 9))
    S = sp.vstack([S, dup], format="csr")       # row 60: duplicates, not summed by vstack
    S.indices, S.indptr = S.indices.astype(index), S.indptr.astype(index)
    for rows in (np.arange(61), np.array([60, 3, 3, 17, 0]), np.array([], dtype=np.int64)):
        rows = rows.astype(np.int64)
        out = np.asfortranarray(np.full((rows.size, 9), 7.0, dtype=dtype))
        _gram_kernels.csr_rows_dense(S.data, S.indices, S.indptr, rows, out)
        np.testing.assert_array_equal(out, S.toarray()[rows])
    assert out.flags.f_contiguous
    with pytest.raises(ValueError, match="a row for each"):
        _gram_kernels.csr_rows_dense(S.data, S.indices, S.indptr, np.arange(3),
                                     np.asfortranarray(np.empty((2, 9), dtype=dtype)))
    for bad in (-1, 61):
        with pytest.raises(ValueError, match="row lies outside"):
            _gram_kernels.csr_rows_dense(S.data, S.indices, S.indptr,
                                         np.array([0, bad]),
                                         np.asfortranarray(np.empty((2, 9), dtype=dtype)))
    with pytest.raises(ValueError, match="column index lies outside"):
        _gram_kernels.csr_rows_dense(S.data, S.indices, S.indptr, np.arange(61),
                                     np.asfortranarray(np.empty((61, 8), dtype=dtype)))


def test_take_columns_csr_renumbers_the_kept_columns_and_refuses_bad_input():
    X, _, _, rng = _problem(3, n=50, D=9)
    S = sp.csr_matrix(X)
    cols = np.array([1, 4, 5, 8])
    colmap = np.full(9, -1, dtype=np.int64)
    colmap[cols] = np.arange(4)
    nnz = S[:, cols].nnz
    data, indices, indptr = np.empty(nnz), np.empty(nnz, np.int32), np.empty(51, np.int32)
    assert _gram_kernels.take_columns_csr(S.data, S.indices, S.indptr, colmap, data,
                                          indices, indptr) == nnz
    T = sp.csr_matrix((data, indices, indptr), shape=(50, 4))
    assert T.has_sorted_indices
    np.testing.assert_array_equal(T.toarray(), X[:, cols])
    with pytest.raises(ValueError, match="too short"):
        _gram_kernels.take_columns_csr(S.data, S.indices, S.indptr, colmap, data[:-1],
                                       indices, indptr)
    with pytest.raises(ValueError, match="outside colmap"):
        _gram_kernels.take_columns_csr(S.data, S.indices, S.indptr, colmap[:8], data,
                                       indices, indptr)
    with pytest.raises(ValueError, match="out_indptr"):
        _gram_kernels.take_columns_csr(S.data, S.indices, S.indptr, colmap, data, indices,
                                       indptr[:-1])


def test_row_walk_is_chosen_for_many_classes_each_column_freeing_few():
    """The products walk the rows where K is large and the free entries are few classes of
    each column, the columns otherwise; both give the same products, the caller's CSR
    is used as it is."""
    rng = np.random.default_rng(4)
    X = sp.random(400, 60, density=0.1, random_state=4, format="csr")
    y = rng.integers(0, 40, 400)
    f = Multinomial(X, y, 40, fit_intercept=True)
    f.max_explicit = 0
    x = np.zeros(f.n_params)
    few = np.sort(rng.choice(60 * 40, 150, replace=False))       # ~2.5 of 40 a column
    many = np.arange(0, 20 * 40)                                  # every class of 20
    assert f.hessp(x, few).walks_rows and f._csr() is X
    assert f.hessp(x, many).walks_rows is False
    small = Multinomial(X, rng.integers(0, 10, 400), 10, fit_intercept=True)
    small.max_explicit = 0
    assert small.hessp(np.zeros(small.n_params), np.arange(0, 600, 37)).walks_rows is False
    H = f.hessp(x, few)
    v = rng.normal(size=few.size)
    f.row_walk_classes = np.inf
    C = f.hessp(x, few)
    assert C.walks_rows is False
    np.testing.assert_allclose(H(v), C(v), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(H.diagonal(), C.diagonal(), rtol=1e-12, atol=1e-15)


def test_few_classes_walk_rows_where_the_scores_outgrow_the_cache():
    """With fewer than ``row_walk_classes`` classes the rows are walked only on tall X
    (``row_walk_tall_bytes``): there the scores, the gradient and the products walk them,
    every class of every column free included, with the column walks' values."""
    rng = np.random.default_rng(5)
    X = sp.random(2400, 30, density=0.2, random_state=5, format="csr")
    y = rng.integers(0, 5, 2400)
    rows, cols = (Multinomial(X, y, 5, fit_intercept=True) for _ in range(2))
    assert not rows._walks_x_rows()                  # 2400 x 5 numbers: in cache
    rows.row_walk_tall_bytes = 8 * 2400 * 5
    assert rows._walks_x_rows() and rows._gradient_walks_rows()
    rows.max_explicit = cols.max_explicit = 0
    x = rng.normal(scale=0.3, size=rows.n_params)
    (f1, g1), (f2, g2) = rows.value_grad(x), cols.value_grad(x)
    assert f1 == pytest.approx(f2, rel=1e-13)
    np.testing.assert_allclose(g1, g2, rtol=1e-11, atol=1e-15)
    free = np.arange(rows.n_params)                  # every entry, the intercepts too
    H, C = rows.hessp(x, free), cols.hessp(x, free)
    assert H.walks_rows and not C.walks_rows
    v = rng.normal(size=free.size)
    np.testing.assert_allclose(H(v), C(v), rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(H.diagonal(), C.diagonal(), rtol=1e-11, atol=1e-15)


@pytest.mark.parametrize("K_classes", [1, 2, 7, 58])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_row_kernels_are_the_softmax_terms(K_classes, n_threads):
    """mn_softmax (probabilities, per-row NLL, gradient residuals) and mn_curvature against
    SciPy on scores with ties, huge and tiny logits (±700: exp overflows without the
    shift), a zero weight; the same bits on 1 and 3 threads."""
    rng = np.random.default_rng(K_classes)
    n = 50
    Z = rng.normal(scale=3.0, size=(n, K_classes))
    Z[0] = 0.0                                      # all tied
    Z[1, 0] = 700.0
    Z[2] = -700.0 + np.arange(K_classes)
    Z[3, -1] = 1e-300
    y = rng.integers(0, K_classes, n)
    sw = rng.uniform(0.0, 2.0, n)
    sw[4] = 0.0
    P, nll, R = np.empty_like(Z), np.empty(n), np.empty_like(Z)
    K.mn_softmax(Z, y, sw, P, nll, R, n_threads)
    expected = softmax(Z, axis=1)
    np.testing.assert_allclose(P, expected, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(nll, logsumexp(Z, axis=1) - Z[np.arange(n), y],
                               rtol=1e-13, atol=1e-13)
    onehot = np.eye(K_classes)[y]
    np.testing.assert_allclose(R, sw[:, None] * (expected - onehot), rtol=1e-13, atol=1e-15)
    P1, nll1 = np.empty_like(Z), np.empty(n)
    K.mn_softmax(Z, y, sw, P1, nll1, None, 1)           # no residuals asked
    np.testing.assert_array_equal(P1, P)
    np.testing.assert_array_equal(nll1, nll)
    U = rng.normal(size=Z.shape)
    got = U.copy()
    K.mn_curvature(P, got, sw, n_threads)
    want = sw[:, None] * (P * U - P * (P * U).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    one = U.copy()
    K.mn_curvature(P, one, sw, 1)
    np.testing.assert_array_equal(one, got)
    with pytest.raises(ValueError, match="mn_softmax"):
        K.mn_softmax(Z, y[:-1], sw, P, nll, R, 1)
    with pytest.raises(ValueError, match="mn_curvature"):
        K.mn_curvature(P[:-1], U, sw, 1)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_threads_give_the_same_values_gradients_and_hessian_products(sparse, dtype):
    """n_threads splits rows (X V) or columns (Xᵀ R) among threads: every entry is summed
    in the same order as on one thread, so the results are identical."""
    X, y, sw, rng = _problem(5, n=301, D=40, Kc=5, density=0.3)
    X = (sp.csr_matrix(X) if sparse else X).astype(dtype)
    one, three = (Multinomial(X, y, 5, sw, True, n_threads=t) for t in (1, 3))
    x = rng.normal(scale=0.3, size=one.n_params)
    x[rng.random(x.size) < 0.6] = 0.0
    for a, b in zip(one.value_grad(x), three.value_grad(x)):
        np.testing.assert_array_equal(a, b)
    free = np.sort(rng.choice(one.n_params, 90, replace=False))
    v = rng.normal(size=free.size)
    H1, H3 = one.hessp(x, free), three.hessp(x, free)
    np.testing.assert_array_equal(H1(v), H3(v))
    np.testing.assert_array_equal(H1.diagonal(), H3.diagonal())


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("l2", [0.0, 0.3])
def test_value_and_gradient_match_the_formula_and_finite_differences(sparse, intercept, l2):
    X, y, sw, rng = _problem(1)
    f = Ridge(Multinomial(sp.csr_matrix(X) if sparse else X, y, 4, sw, intercept), l2)
    x = rng.normal(scale=0.5, size=f.n_params)
    x[:7] = 0.0                                   # features 0, 1 without weights
    W, b = f.split(x)
    value, grad = f.value_grad(x)
    assert value == pytest.approx(_objective(X, y, sw, W, b, l2), rel=1e-12)
    assert f.value(x) == pytest.approx(value, rel=1e-14)
    P = softmax(X @ W + b, axis=1)
    P[np.arange(len(y)), y] -= 1.0
    R = P * (sw / len(y))[:, None]
    expected = np.concatenate([(X.T @ R + l2 * W).ravel(), R.sum(0) if intercept else []])
    np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-13)
    e = rng.normal(size=f.n_params)
    h = 1e-6
    fd = (f.value(x + h * e) - f.value(x - h * e)) / (2 * h)
    assert fd == pytest.approx(grad @ e, rel=1e-6)


def _route(datafit, route):
    """Force :meth:`Multinomial.hessp`'s route on this datafit."""
    if route == "formed":
        datafit.formed_worth = np.inf
    elif route in ("matrix-free", "row walk"):
        datafit.max_explicit = 0
        datafit.row_walk_classes = 0 if route == "row walk" else np.inf
        datafit.row_walk_ratio = 0.0
    return datafit


@pytest.mark.parametrize("route", ["formed", "matrix-free", "row walk"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hessian_on_a_free_set_is_the_block_hessian(sparse, dtype, route):
    """The product, the diagonal, a restricted operator and a quadratic form against the formed
    Σᵢ sᵢ/n (x̃ᵢ x̃ᵢᵀ) ⊗ (diag pᵢ − pᵢ pᵢᵀ) + λ I on W, on a free set that holds some
    classes of some features and two intercepts, whichever route hessp takes."""
    X, y, sw, rng = _problem(2)
    X = X.astype(dtype)
    l2 = 0.2
    f = Ridge(_route(Multinomial(sp.csr_matrix(X) if sparse else X, y, 4, sw, True), route),
              l2)
    x = rng.normal(scale=0.5, size=f.n_params)
    f.value_grad(x)
    W, b = f.split(x)
    Xd = X.astype(np.float64)
    P = softmax(Xd @ W + b, axis=1)
    Xt = np.c_[Xd, np.ones(len(y))]
    H = sum((sw[i] / len(y)) * np.kron(np.outer(Xt[i], Xt[i]),
                                        np.diag(P[i]) - np.outer(P[i], P[i]))
            for i in range(len(y)))
    H[np.arange(28), np.arange(28)] += l2            # the 7 x 4 weights, not intercepts
    free = np.array([0, 1, 5, 9, 10, 11, 20, 27, 28, 30])
    op = f.hessp(x, free)
    v = rng.normal(size=free.size)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-7)
    assert getattr(op, "is_explicit", False) == (route == "formed")
    if route != "formed":
        assert (op._H.walks_rows) == (sparse and route == "row walk")
    np.testing.assert_allclose(op(v), H[np.ix_(free, free)] @ v, **tol)
    np.testing.assert_allclose(op.diagonal(), np.diag(H)[free], **tol)
    keep = np.ones(free.size, dtype=bool)
    keep[[1, 8]] = False
    sub = op.restrict(keep)
    np.testing.assert_allclose(sub(v[keep]), H[np.ix_(free[keep], free[keep])] @ v[keep], **tol)
    at = np.array([0, 2, 3, 8, 9])          # entries of three features and both intercepts
    c = v[at]
    np.testing.assert_allclose(op.quadratic_form(at, c), c @ H[np.ix_(free[at], free[at])] @ c,
                               **tol)
    if route == "matrix-free" and sparse:   # the free entries alone or every class's
        for H_op in (op._H, sub._H):
            by_entries, by_rows = H_op._by_entries, H_op._by_rows
            w = rng.normal(size=H_op.shape[0])
            got, diagonal = H_op(w), H_op.diagonal().copy()
            H_op._by_entries, H_op._by_rows, H_op._diag = not by_entries, False, None
            np.testing.assert_allclose(H_op(w), got, **tol)
            np.testing.assert_allclose(H_op.diagonal(), diagonal, **tol)
            H_op._by_entries, H_op._by_rows, H_op._diag = by_entries, by_rows, None
    if route == "matrix-free" and sparse and K.simd_available():   # rows of X or columns
        for H_op in (op._H, sub._H):
            by_rows, by_entries = H_op._by_rows, H_op._by_entries
            H_op._by_rows, H_op._by_entries = not by_rows, False
            w = rng.normal(size=H_op.shape[0])
            got = H_op(w)
            H_op._by_rows, H_op._by_entries = by_rows, by_entries
            np.testing.assert_allclose(got, H_op(w), **tol)


@pytest.mark.parametrize("layout", ["dense", "csr", "csr, sparse route"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("intercept", [False, True])
def test_formed_hessian_is_the_matrix_free_operator(layout, dtype, intercept):
    """Formed from blocks of 7 rows or all at once (dense route) or from the stored entries
    row by row (sparse route), on free sets with whole features, single classes, a class
    with no free entry, some intercepts or all, with huge margins (probabilities 0 and 1),
    an empty row and a row of weight 0, the intercepts alone: the matrix whose columns are
    the matrix-free products, symmetric."""
    X, y, sw, rng = _problem(3, n=61, D=9, Kc=5, density=0.4)
    sw[10] = 0.0
    X = (X if layout == "dense" else sp.csr_matrix(X)).astype(dtype)
    f = Multinomial(X, y, 5, sw, intercept)
    x = rng.normal(scale=0.4, size=f.n_params)
    x[7] = 300.0                                  # feature 1, class 2: p = 0 or 1 on its rows
    f.value_grad(x)
    nw = 45
    for free in (np.arange(f.n_params),
                 np.array([5, 6, 7, 8, 9, 12, 33]),           # class 3 has no free entry
                 np.r_[np.arange(10, 15), np.arange(nw, f.n_params)],
                 np.r_[np.arange(0, nw, 2), np.arange(nw + 1, f.n_params, 2)],
                 *[np.arange(nw, f.n_params)] * intercept):   # no weight entry free
        op = f._matrix_free(free)
        dense = np.column_stack([op(e) for e in np.eye(free.size)])
        for block in (7, None):
            G = f._gram(op, block=block,
                        route="sparse" if layout.endswith("route") else "dense")
            np.testing.assert_array_equal(G, G.T)
            np.testing.assert_allclose(G, dense, rtol=1e-12, atol=1e-15)


def test_sparse_route_counts_its_updates_and_is_chosen_where_columns_are_mostly_zeros():
    """The update count of the sparse route is Σᵢ rᵢ(rᵢ + 1)/2 for rᵢ the free weight
    entries in row i's stored columns; a wide sparse X (a text corpus) takes that route,
    a sparse X whose free columns are half nonzeros the dense one."""
    rng = np.random.default_rng(7)
    for density, route in ((0.005, "sparse"), (0.5, "dense")):
        X = sp.random(3000, 400, density=density, random_state=rng, format="csr")
        y = rng.integers(0, 6, 3000)
        f = Multinomial(X, y, 6, fit_intercept=True)
        f.value_grad(rng.normal(scale=0.1, size=f.n_params))
        free = np.sort(rng.choice(f.n_params, 300, replace=False))
        op = f._matrix_free(free)
        per_column = np.bincount(op._row, minlength=op._cols.size)
        r = (f.X[:, op._cols] != 0).astype(float) @ per_column
        pairs, entries = _gram_kernels.mn_entry_counts(
            f.X.indices, f.X.indptr, op._cols, op._col_start, np.empty(3000))
        assert pairs == pytest.approx(float(r @ (r + 1)) / 2, rel=1e-12)
        assert entries == pytest.approx(float(r.sum()), rel=1e-12)
        costs = f._gram_costs(op)
        assert min(costs, key=costs.get) == route
        np.testing.assert_allclose(f._gram(op), f._gram(op, route=route), rtol=0, atol=0)


def _sparse_route_reference(Xd, P, sw, col_start, classes, b_classes):
    """The sparse route's matrix from its formula: Σᵢ sᵢ (x̃ᵢx̃ᵢᵀ ⊗ (diag pᵢ − pᵢpᵢᵀ)) on
    the free entries (column a's classes ``classes[col_start[a]:col_start[a + 1]]``, then
    intercepts of ``b_classes``), with the intercept × intercept block zero."""
    cols = np.repeat(np.arange(col_start.size - 1), np.diff(col_start))
    n, nw = Xd.shape[0], cols.size
    Xe = np.c_[Xd[:, cols], np.ones((n, b_classes.size))]      # x̃ of each entry, per row
    ke = np.r_[classes, b_classes]
    G = np.einsum("i,ia,ib,iab->ab", sw, Xe, Xe,
                  (ke[:, None] == ke[None, :])[None] * P[:, ke][:, :, None]
                  - P[:, ke][:, :, None] * P[:, ke][:, None, :])
    G[nw:, nw:] = 0.0
    return G


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_route_kernel_is_its_formula_in_blocks_and_threads(dtype):
    """Against the formula, on rows in blocks of any size (one entry: every row alone,
    rows longer than a block), on 1 and 3 threads bitwise the same: columns with one free
    class and with all, a class with no free entry, an empty row, a row of weight 0, some
    intercepts free, a column with no free entry, int32 and int64 indices."""
    rng = np.random.default_rng(11)
    n, D, K = 40, 7, 5
    rows = np.ones(n)
    rows[3] = 0.0                                                  # an empty row
    X = sp.csr_matrix(sp.diags(rows) @ sp.random(n, D, density=0.45, random_state=rng,
                                                 format="csr"), dtype=dtype)
    X.eliminate_zeros()
    X.sort_indices()
    assert X.indptr[4] == X.indptr[3] and X.dtype == dtype
    P = softmax(rng.normal(size=(n, K)), axis=1)
    sw = rng.uniform(0.5, 2.0, n)
    sw[5] = 0.0
    col_start = np.array([0, 1, 3, 3 + K, 3 + K, 5 + K, 6 + K, 8 + K])   # column 3: none
    classes = np.r_[2, 0, 4, np.arange(K), 0, 2, 4, 0, 1]          # class 3: column 2 only
    b_classes = np.array([1, 3])
    nw, nb = classes.size, b_classes.size
    b_entry = np.full(K, -1)
    b_entry[b_classes] = nw + np.arange(nb)
    want = _sparse_route_reference(X.toarray().astype(np.float64), P, sw, col_start, classes,
                                   b_classes)
    results = []
    for block, threads, index in ((1 << 16, 1, np.int32), (1, 1, np.int64), (9, 3, np.int32),
                                  (1 << 16, 3, np.int64)):
        G = np.zeros((nw + nb, nw + nb))
        _gram_kernels.mn_gram_csr(X.data, X.indices.astype(index), X.indptr.astype(index), P,
                                  np.ascontiguousarray(P[:, b_classes]), sw, col_start,
                                  classes, b_entry, G, threads, block)
        tol = 1e-13 if dtype == np.float64 else 1e-6
        np.testing.assert_allclose(G, want, rtol=tol, atol=tol)
        np.testing.assert_array_equal(G, G.T)
        results.append(G)
    np.testing.assert_array_equal(results[0], results[3])       # threads change no bit


def test_sparse_route_kernel_refuses_inconsistent_inputs():
    X = sp.csr_matrix(np.eye(3))
    P, sw = np.full((3, 2), 0.5), np.ones(3)
    col_start, classes = np.array([0, 1, 2, 3]), np.array([0, 1, 0])
    b_entry = np.array([3, 4])

    def call(data=X.data, indices=X.indices, indptr=X.indptr, Pb=P, sw=sw,
             col_start=col_start, classes=classes, b_entry=b_entry, G=None):
        G = np.zeros((5, 5)) if G is None else G
        _gram_kernels.mn_gram_csr(data, indices, indptr, P, Pb, sw, col_start, classes,
                                  b_entry, G)
    call()
    for bad, message in (({"G": np.zeros((4, 4))}, "square"),
                         ({"b_entry": np.array([3])}, "b_entry"),
                         ({"b_entry": np.array([3, 5])}, "out of range"),
                         ({"classes": np.array([0, 2, 0])}, "out of range"),
                         ({"col_start": np.array([0, 2, 1, 3])}, "non-decreasing"),
                         ({"col_start": np.array([0, 1, 2])}, "run from 0"),
                         ({"sw": np.ones(2)}, "rows"), ({"Pb": P[:2]}, "rows"),
                         ({"indptr": np.array([0, 2, 1, 3], dtype=np.int32)}, "indptr"),
                         ({"data": X.data[:2]}, "indptr"),
                         ({"indices": np.array([0, 3, 2], dtype=np.int32)}, "column"),
                         ({"indices": np.array([1, 0], dtype=np.int32),
                           "indptr": np.array([0, 2, 2, 2], dtype=np.int32)}, "increase")):
        with pytest.raises(ValueError, match=f"mn_gram_csr.*{message}"):
            call(**bad)


def test_dense_route_kernel_is_its_formula_and_refuses_inconsistent_inputs():
    """One block of rows (from row 2 of X, entries sorted by class, an intercept entry):
    the lower triangle of blockdiagₖ(S_k S_kᵀ) − E Eᵀ added to G; shapes, ranges and the
    class order are checked before anything is written."""
    rng = np.random.default_rng(5)
    X = np.asfortranarray(rng.normal(size=(9, 4)))
    P = softmax(rng.normal(size=(6, 3)), axis=1)
    sw = rng.uniform(0.5, 2.0, 6)
    cols, classes = np.array([0, 3, -1, 1, 3]), np.array([0, 0, 1, 2, 2])
    G0 = rng.normal(size=(5, 5))
    G = G0.copy()
    _gram_kernels.mn_gram_dense(X, 2, cols, classes, P, sw, np.empty(100), G)
    xt = np.column_stack([X[2:8], np.ones(6)])[:, cols]            # rows × entries
    S = xt * np.sqrt(sw[:, None] * P[:, classes])
    E = xt * np.sqrt(sw)[:, None] * P[:, classes]
    want = np.where(classes[:, None] == classes[None, :], S.T @ S, 0.0) - E.T @ E
    lower = np.tril(np.ones((5, 5), dtype=bool))
    np.testing.assert_allclose(G[lower], (G0 + want)[lower], rtol=1e-13)
    np.testing.assert_array_equal(G[~lower], G0[~lower])
    back = np.array([4, 0, 2, 1, 3])
    np.testing.assert_array_equal(_gram_kernels.symmetric_take(np.tril(G), back),
                                  np.tril(G)[np.ix_(back, back)] + np.triu(G.T, 1)[
                                      np.ix_(back, back)])
    good = {"row0": 2, "cols": cols, "classes": classes, "sw": sw, "work": np.empty(100),
            "G": np.zeros((5, 5))}
    for bad in ({"row0": 4}, {"cols": np.array([0, 4, -1, 1, 3])},
                {"classes": np.array([0, 1, 0, 2, 2])}, {"classes": np.array([0, 0, 1, 2, 3])},
                {"sw": np.ones(5)}, {"work": np.empty(95)}, {"G": np.zeros((4, 4))}):
        args = {**good, **bad}
        G = args["G"]
        with pytest.raises(ValueError, match="mn_gram_dense"):
            _gram_kernels.mn_gram_dense(X, args["row0"], args["cols"], args["classes"], P,
                                        args["sw"], args["work"], G)
        assert not G.any()
    with pytest.raises(ValueError, match="symmetric_take"):
        _gram_kernels.symmetric_take(np.zeros((5, 5)), np.array([0, 1, 2, 3, 5]))



@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_free", [0, 3, 700])
def test_hessian_rows_kernel_is_its_formula_over_many_sub_blocks(dtype, n_free):
    """Rows of the Hessian of a few entries (the intercept's among them) over rows 3 ..
    3 + nb of X, in sub-blocks of rows that fit a panel (700 free columns: 16 rows each),
    added to ``out``; no free column at all leaves the intercept's only; inconsistent inputs
    are refused before anything is written."""
    rng = np.random.default_rng(11)
    n, D, Kc, nb = 3000, 900, 4, 2990
    X = np.asfortranarray(rng.normal(size=(n, D)).astype(dtype))
    X[10:20] = 0.0
    cols = np.sort(rng.choice(D, n_free, replace=False)).astype(np.int64)
    P = softmax(50.0 * rng.normal(size=(nb, Kc)), axis=1)           # many p near 0 and 1
    sw = rng.uniform(0.5, 2.0, nb)
    entry_col = np.array([n_free, 0, n_free - 1, n_free, 1][: 2 if n_free == 0 else 5])
    entry_class = rng.integers(0, Kc, entry_col.size).astype(np.int64)
    out0 = rng.normal(size=(Kc, entry_col.size, n_free + 1))
    out = out0.copy()
    _gram_kernels.mn_gram_rows_dense(X, 3, cols, P, sw, entry_col, entry_class, out)
    xt = np.column_stack([X[3:3 + nb, cols].astype(np.float64), np.ones(nb)])
    A = sw[:, None] * xt[:, entry_col] * P[:, entry_class]              # rows × entries
    want = np.stack([xt.T @ (A * ((entry_class == l) - P[:, [l]])) for l in range(Kc)])
    np.testing.assert_allclose(out, out0 + want.transpose(0, 2, 1), rtol=1e-10,
                               atol=1e-10 * np.abs(want).max())
    good = {"row0": 3, "cols": cols, "sw": sw, "entry_col": entry_col,
            "entry_class": entry_class, "out": np.zeros_like(out0)}
    for bad in ({"row0": 11}, {"row0": -1}, {"cols": np.append(cols[1:], D)},
                {"entry_col": entry_col + n_free + 1}, {"entry_class": entry_class + Kc},
                {"sw": sw[1:]}, {"out": np.zeros((Kc, entry_col.size, n_free + 2))}):
        args = {**good, **bad}
        target = args["out"]
        with pytest.raises(ValueError, match="mn_gram_rows_dense"):
            _gram_kernels.mn_gram_rows_dense(X, args["row0"], args["cols"], P, args["sw"],
                                             args["entry_col"], args["entry_class"], target)
        assert not target.any()

@pytest.mark.skipif(not K.simd_available(), reason="no AVX2/FMA kernels on this CPU")
def test_matrix_free_products_walk_the_rows_of_x_where_the_free_columns_hold_its_entries():
    """With at most 12 classes a matrix-free product on a sparse X takes one pass over its
    rows where the free columns hold half of its entries or more and its weights' table is
    small (``row_product_numbers``), the columns otherwise; the same products either way."""
    rng = np.random.default_rng(21)
    X = sp.random(400, 30, density=0.3, random_state=21, format="csr")
    y = rng.integers(0, 5, 400)
    f = Multinomial(X, y, 5, fit_intercept=True)
    x = rng.normal(scale=0.3, size=f.n_params)
    f.value_grad(x)
    Xd = X.toarray()
    W, b = f.split(x)
    P = softmax(Xd @ W + b, axis=1)
    Xt = np.c_[Xd, np.ones(400)]
    H = sum(np.kron(np.outer(Xt[i], Xt[i]), np.diag(P[i]) - np.outer(P[i], P[i]))
            for i in range(400)) / 400
    most = np.concatenate([np.arange(0, 100, 2), np.arange(150), [150, 152]])
    few = np.array([0, 3, 6, 151])
    for free, by_rows in ((np.unique(most), True), (few, False)):
        op = f._matrix_free(free)
        assert op._by_rows == by_rows
        v = rng.normal(size=free.size)
        np.testing.assert_allclose(op(v), H[np.ix_(free, free)] @ v, rtol=1e-10, atol=1e-12)
    f.row_product_numbers = 30 * 8 - 1         # 30 features x 5 classes padded to 8
    assert not f._matrix_free(np.unique(most))._by_rows


def test_hessp_forms_the_hessian_when_that_is_cheaper():
    """Tall data with a small free set: formed; the same free set on 3 rows, or more free
    entries than max_explicit: matrix-free (each product costs a pass over 3 rows)."""
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(2000, 30)), rng.integers(0, 3, 2000)
    free = np.arange(0, 90, 3)
    tall = Multinomial(X, y, 3, fit_intercept=True)
    assert tall.hessp(np.zeros(tall.n_params), free).is_explicit
    short = Multinomial(X[:3], np.arange(3), 3, fit_intercept=True)
    assert not hasattr(short.hessp(np.zeros(short.n_params), np.arange(93)), "is_explicit")
    tall.max_explicit = free.size - 1
    assert not hasattr(tall.hessp(np.zeros(tall.n_params), free), "is_explicit")


@pytest.mark.parametrize("sparse", [False, True])
def test_hessp_forms_after_a_matrix_free_hessian_took_many_products(sparse):
    """A free set whose Hessian costs more to form than ``formed_worth`` products is
    matrix-free, until a matrix-free Hessian of the fit took so many products (an
    ill-conditioned one) that ``formed_worth_seen`` times them pay for forming: then it is
    formed, for the rest of the fit, on a dense X; a sparse X keeps its rule (its CG has the
    class-block preconditioner)."""
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(300, 300)), rng.integers(0, 5, 300)
    f = Multinomial(sp.csr_matrix(X) if sparse else X, y, 5, fit_intercept=False)
    x, free = np.zeros(f.n_params), np.arange(0, 1500)
    H = f.hessp(x, free)
    assert not hasattr(H, "is_explicit")
    costs = f._gram_costs(H)
    formed = min(costs.values()) + 100 * 2.0 * free.size ** 2
    assert formed > f.formed_worth * f._product_cost(H)
    many = int(formed / (f.formed_worth_seen * f._product_cost(H))) + 1
    for _ in range(many):                      # the products of that Hessian's CG runs
        H(rng.normal(size=free.size))
    assert hasattr(f.hessp(x, free), "is_explicit") is not sparse
    assert hasattr(f.hessp(x, free), "is_explicit") is not sparse     # the next one too


def test_hessp_prices_a_row_walking_hessian_by_row_walking_products():
    """Many classes on a tall sparse X: the products walk rows, and the Hessian is formed
    where forming it (and 100 CG products on it) costs at most ``formed_worth_rows``
    row-walking products, matrix-free otherwise; with few classes the products walk
    columns and the column rule decides."""
    rng = np.random.default_rng(5)
    X = sp.random(4000, 60, density=0.1, random_state=5, format="csr")
    free = np.sort(rng.choice(60 * 40, 60, replace=False))
    many = Multinomial(X, rng.integers(0, 40, 4000), 40, fit_intercept=True)
    x = np.zeros(many.n_params)
    H = many._matrix_free(free)
    assert H.walks_rows
    pairs = float(many._col_nnz[H._cols] @ np.diff(H._col_start))
    entries = float(many._col_nnz[H._cols].sum())
    row = many._row_product_cost(H)
    assert row == 5.0 * (pairs + entries) + 7.0 * 4000 * 40 < many._product_cost(H)
    formed = min(many._gram_costs(H).values()) + 200.0 * free.size ** 2
    for worth, explicit in ((0.99 * formed / row, False), (1.01 * formed / row, True)):
        many.formed_worth_rows = worth
        G = many.hessp(x, free)
        assert getattr(G, "is_explicit", False) == explicit
        assert explicit or G.walks_rows
    v = rng.normal(size=free.size)
    np.testing.assert_allclose(G(v), H(v), rtol=1e-10, atol=1e-14)
    few = Multinomial(X, rng.integers(0, 10, 4000), 10, fit_intercept=True)
    few.formed_worth_rows = 0.0
    assert few.hessp(np.zeros(few.n_params), np.arange(0, 600, 10)).is_explicit


def test_lipschitz_bound_and_null_intercept():
    X, y, sw, rng = _problem(3)
    f = Ridge(Multinomial(X, y, 4, sw, True), 0.1)
    x = rng.normal(size=f.n_params)
    f.value_grad(x)
    H = np.array([f.hessp(x, np.arange(f.n_params))(e) for e in np.eye(f.n_params)])
    assert np.linalg.eigvalsh(0.5 * (H + H.T)).max() <= f.lipschitz()
    b = f.null_intercept()
    x0 = np.r_[np.zeros(28), b]
    _, g = f.value_grad(x0)
    np.testing.assert_allclose(g[28:], 0.0, atol=1e-14)


def test_labels_and_weights_of_the_wrong_shape_are_refused():
    X, y, sw, _ = _problem()
    with pytest.raises(ValueError, match="class indices"):
        Multinomial(X, y + 4, 4)
    with pytest.raises(ValueError, match="sample_weight"):
        Multinomial(X, y, 4, sw[:3])


def _gap_reference(X, y, sample_weight, C, W, b, l1_ratio):
    """(F − D(Θ)) / F from its formula on X: Θᵢ = C sᵢ α (e_{yᵢ} − pᵢ), α scaling Θ into
    ‖Xᵀ Θ‖_∞ ≤ 1 for r = 1; D = Σᵢ C sᵢ (H(qᵢ) + qᵢ·b − b_{yᵢ}) − g*(Xᵀ Θ) with
    qᵢ = α pᵢ + (1 − α) e_{yᵢ} and g* = Σ (|·| − r)₊² / (2 (1 − r))."""
    n = X.shape[0]
    rows = np.arange(n)
    Z = X @ W + b
    P = softmax(Z, axis=1)
    primal = (C * float(sample_weight @ (logsumexp(Z, axis=1) - Z[rows, y]))
              + l1_ratio * np.abs(W).sum() + 0.5 * (1 - l1_ratio) * float((W * W).sum()))
    E = np.eye(W.shape[1])[y]
    G = X.T @ ((E - P) * (C * sample_weight)[:, None])
    alpha = 1.0 / max(1.0, np.abs(G).max()) if l1_ratio == 1.0 else 1.0
    conj = 0.0 if l1_ratio == 1.0 else float(
        (np.maximum(np.abs(G) - l1_ratio, 0) ** 2).sum()) / (2 * (1 - l1_ratio))
    Q = alpha * P + (1 - alpha) * E
    H = -(Q * np.log(np.where(Q > 0, Q, 1.0))).sum(axis=1)
    return (primal - C * float(sample_weight @ (H + Q @ b - b[y])) + conj) / primal


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
@pytest.mark.parametrize("C", [0.05, 5.0])
def test_duality_gap_is_its_formula_at_any_point(l1_ratio, C):
    """The gap from the datafit's gradient and dual terms equals the formula on X, at a
    point off the optimum (C = 5: Θ scaled into the dual's feasible set)."""
    X, y, sw, rng = _problem(5)
    f = Multinomial(sp.csr_matrix(X), y, 4, sw, True)
    x = rng.normal(scale=0.3, size=f.n_params)
    W, b = f.split(x)
    got = relative_duality_gap(f, x, C, l1_ratio, 1.0 - l1_ratio)
    np.testing.assert_allclose(got, _gap_reference(X, y, sw, C, W, b, l1_ratio), rtol=1e-10)
    assert got > 0


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_duality_gap_bounds_the_suboptimality(l1_ratio):
    """At a point off the optimum the gap is at least the true relative excess; at the
    optimum (a converged fit) it vanishes."""
    from sparsekit import L1LogisticOBA

    X, y, sw, _ = _problem(4, n=80)
    est = L1LogisticOBA(C=2.0, multiclass="multinomial", l1_ratio=l1_ratio, tol=1e-12,
                        fit_intercept=True).fit(X, y, sample_weight=sw)
    W, b = est.coef_.T, est.intercept_
    sw_unit = sw / sw.mean()
    C = 2.0 * sw.mean()
    gap = _gap_reference(X, y, sw_unit, C, W, b, l1_ratio)
    assert -1e-12 <= gap < 1e-8 and abs(gap - est.duality_gap_[0]) < 1e-12

    def F(W):
        Z = X @ W + b
        return (C * float(sw_unit @ (logsumexp(Z, 1) - Z[np.arange(len(y)), y]))
                + l1_ratio * np.abs(W).sum() + 0.5 * (1 - l1_ratio) * (W * W).sum())
    W1 = 1.3 * W
    assert _gap_reference(X, y, sw_unit, C, W1, b, l1_ratio) >= \
        (F(W1) - F(W)) / F(W1) - 1e-12


def _assembled(blocks, m):
    """The block-diagonal matrix of (G, offset, size, order), entries in operator order."""
    G, offset, size, order = blocks
    M, start = np.zeros((m, m)), 0
    for b, s in enumerate(size):
        entries = order[start:start + s]
        M[np.ix_(entries, entries)] = G[offset[b]:offset[b] + s * s].reshape(s, s)
        start += s
    return M


def _class_block_problem(seed, dtype=np.float64, index=np.int32, intercept=True):
    """A problem whose Hessians have class blocks; ``index`` None: a dense X."""
    rng = np.random.default_rng(seed)
    n, D, Kc = 50, 9, 5
    X = sp.random(n, D, density=0.4, random_state=seed, format="csr", dtype=dtype).toarray()
    X[4] = 0.0                                              # an empty row
    if index is not None:
        X = sp.csr_matrix(X)
        X.indices, X.indptr = X.indices.astype(index), X.indptr.astype(index)
    y = rng.integers(0, Kc, n)
    f = Multinomial(X, y, Kc, rng.uniform(0.2, 2.0, n), intercept)
    f.max_explicit, f.block_after, f.block_worth = 0, 0, np.inf
    x = rng.normal(scale=0.7, size=f.n_params)
    f.value_grad(x)
    free = np.sort(rng.choice(f.n_params, size=int(0.6 * f.n_params), replace=False))
    return f, x, free, rng


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64, None, "panels32", "panels64"],
                         ids=["csr32", "csr64", "dense", "csr32-panels", "csr64-panels"])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("budget", [1 << 22, 30])
def test_class_blocks_are_the_hessian_on_pairs_of_one_class(dtype, index, intercept, budget,
                                                            monkeypatch):
    """The preconditioner's blocks hold the Hessian's entries between free entries of one
    class (all of them with an ample budget; within chunks of consecutive features when the
    budget cuts a class), nothing else, for a sparse or a dense X, a sparse X's from its
    stored entries or from panels of densified rows (here of 4 rows, the last of 2); its
    solve is that of the shifted blocks."""
    panels = index in ("panels32", "panels64")
    f, x, free, rng = _class_block_problem(
        7, dtype, {"panels32": np.int32, "panels64": np.int64}.get(index, index), intercept)
    f.block_budget = budget
    H = f.hessp(x, free)
    if panels:      # the panels always predicted faster; none of the entries' kernel
        f.block_route_ns = {"entries": (1e9, 1e9), "panels": (0.0, 0.0)}
        f.block_panel_numbers = 4 * H._cols.size
        monkeypatch.setattr(_gram_kernels, "mn_class_blocks_csr", None)
    m = free.size
    full = np.column_stack([H(e) for e in np.eye(m)])
    blocks = H._class_blocks()
    M = _assembled(blocks, m)
    classes = np.where(free < f.n_features * f.n_classes, free % f.n_classes,
                       free - f.n_features * f.n_classes)
    same = classes[:, None] == classes[None, :]
    inside = _assembled((np.ones_like(blocks[0]), *blocks[1:]), m) > 0
    assert not np.any(inside & ~same)
    if budget == 1 << 22:
        assert np.array_equal(inside, same)
    else:
        assert blocks[2].max() ** 2 <= budget < np.sum(same)
    tol = dict(rtol=1e-10, atol=1e-13) if dtype == np.float64 else dict(rtol=2e-5, atol=1e-8)
    np.testing.assert_allclose(M[inside], full[inside], **tol)
    reg, r = 1e-3, rng.normal(size=m)
    shifted = M.copy()
    _, offset, size, order = blocks
    start = 0
    for b, s in enumerate(size):
        entries = order[start:start + s]
        start += s
        top = M[entries, entries].max()
        shifted[entries, entries] += reg + 1e-12 * top
    np.testing.assert_allclose(H.preconditioner(reg)(r), np.linalg.solve(shifted, r),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("density, columns, panels", [(0.8, 60, True), (0.005, 600, False)],
                         ids=["pixels", "text"])
def test_a_sparse_xs_class_blocks_take_the_route_predicted_faster(density, columns, panels,
                                                                  monkeypatch):
    """Rows dense in their free columns (pixels) form their class blocks on densified
    panels by BLAS; rows of a few stored entries among many columns (text) from those
    entries: the same blocks either way, and on two threads."""
    rng = np.random.default_rng(0)
    X = sp.random(2000, columns, density=density, random_state=1, format="csr")
    f = Multinomial(X, rng.integers(0, 3, 2000), 3, np.ones(2000), True)
    f.max_explicit, f.block_after, f.block_worth = 0, 0, np.inf
    x = rng.normal(scale=0.1, size=f.n_params)
    f.value_grad(x)
    free = np.arange(f.n_params)
    H = f.hessp(x, free)
    chosen = H._class_blocks()
    routes = {True: "mn_class_blocks_dense", False: "mn_class_blocks_csr"}
    monkeypatch.setattr(_gram_kernels, routes[panels], None)    # now the other route
    other = f.hessp(x, free)
    other._panels_pay = lambda counts, size: not panels
    np.testing.assert_allclose(_assembled(other._class_blocks(), free.size),
                               _assembled(chosen, free.size), rtol=1e-10, atol=1e-14)
    counts = H._class_block_counts(*_entry_blocks(H, chosen))
    assert H._panels_pay(counts, chosen[2]) is panels
    monkeypatch.undo()
    f.n_threads = 2                                     # the panels' threads: the same bits
    np.testing.assert_array_equal(f.hessp(x, free)._class_blocks()[0], chosen[0])


def _entry_blocks(H, blocks):
    """(each weight entry's block, the blocks' sizes) of ``blocks`` on ``H``'s entries."""
    _, _, size, order = blocks
    block = np.empty(order.size, dtype=np.int64)
    block[order] = np.repeat(np.arange(size.size), size)
    return block[:H._w_entries.size], size


def test_class_blocks_follow_restriction_and_come_only_when_they_pay():
    """A restricted operator cuts its parent's blocks down (no second formation) to those of
    a fresh operator on the kept entries; the blocks come only after a Hessian with
    ``block_after`` products or more or one with blocks itself, and when they cost at most
    ``block_worth`` products (formed for every Hessian: ``block_age`` 0)."""
    f, x, free, rng = _class_block_problem(3)
    f.block_age = 0
    H = f.hessp(x, free)
    H.preconditioner(0.0)
    keep = rng.random(free.size) < 0.7
    sub = H.restrict(keep)
    assert sub._blocks is not None                      # taken, not formed
    fresh = f.hessp(x, free[keep])
    np.testing.assert_allclose(_assembled(sub._class_blocks(), keep.sum()),
                               _assembled(fresh._class_blocks(), keep.sum()), rtol=1e-12,
                               atol=1e-15)
    assert H.restrict(np.zeros(free.size, dtype=bool))._class_blocks() is None

    f.block_after = 3
    f.hessp(x, free)
    H = f.hessp(x, free)                                # the last Hessian made no products
    assert H.preconditioner(0.0) is None
    for _ in range(3):
        H(rng.normal(size=free.size))
    H = f.hessp(x, free)
    assert H.preconditioner(0.0) is not None
    H = f.hessp(x, free)                                # no products, but blocks last time
    assert H.preconditioner(0.0) is not None
    for _ in range(3):
        H(rng.normal(size=free.size))
    f.block_worth = 0.0
    assert f.hessp(x, free).preconditioner(0.0) is None
    f.block_worth = np.inf                              # neither products nor blocks last
    assert f.hessp(x, free).preconditioner(0.0) is None
    # the elastic net's operator shifts the blocks by its λ
    f.block_worth, f.block_after = np.inf, 0
    ridge = Ridge(f, 0.5)
    op = ridge.hessp(x, free)
    r = rng.normal(size=free.size)
    np.testing.assert_allclose(op.preconditioner(0.1)(r), op._H.preconditioner(0.6)(r))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("index", [np.int32, None], ids=["csr", "dense"])
def test_class_blocks_are_carried_cut_and_padded_until_too_old_or_too_many_joined(dtype,
                                                                                   intercept,
                                                                                   index):
    """The blocks formed at one point serve the next Hessians at other points: cut to the
    entries still free, each entry that joined a block of one holding its diagonal there;
    formed anew at the current point after ``block_age`` Hessians, or when more than
    ``block_join`` of the free entries joined; only blocks that cost more than
    ``block_worth`` products are carried, those that cost less are formed anew."""
    f, x, free, rng = _class_block_problem(5, dtype, index, intercept)
    f.block_age, f.block_join = 3, 0.2
    m = free.size
    H = f.hessp(x, free)
    H._class_blocks()
    assert f._carried_blocks is None                    # cheap enough for one Hessian
    f.block_worth = H.block_cost / 1.5                  # 1.5 Hessians' worth: carried
    first = _assembled(f.hessp(x, free)._class_blocks(), m)
    assert f._carried_blocks is not None
    others = np.setdiff1d(np.arange(f.n_params), free)
    left, joined = rng.choice(m, 4, replace=False), rng.choice(others, 2, replace=False)
    later = np.union1d(np.delete(free, left), joined)
    x2 = x + rng.normal(scale=0.3, size=x.size)
    H = f.hessp(x2, later)
    M = _assembled(H._class_blocks(), later.size)
    stay = np.isin(later, free)
    old = np.searchsorted(free, later[stay])
    np.testing.assert_array_equal(M[np.ix_(stay, stay)], first[np.ix_(old, old)])
    new = np.flatnonzero(~stay)
    np.testing.assert_allclose(M[new, new], H.diagonal()[new], rtol=1e-12)
    carried = M.copy()
    M[np.ix_(stay, stay)] = 0.0
    M[new, new] = 0.0
    assert not np.any(M)                                # nothing else: no coupling
    solve = H.preconditioner(0.0)
    r = rng.normal(size=later.size)
    assert np.all(np.isfinite(solve(r)))

    def fresh_blocks(x, entries):
        g = Multinomial(f.X, f.y, f.n_classes, f._sw * f.n_samples, intercept)
        g.max_explicit, g.block_after, g.block_worth = 0, 0, np.inf
        return _assembled(g.hessp(x, entries)._class_blocks(), entries.size)

    assert not np.allclose(carried, fresh_blocks(x2, later))   # those of x, not x2
    f.hessp(x2, later)._class_blocks()                  # the third Hessian since: carried
    x3 = x2 + rng.normal(scale=0.3, size=x.size)
    np.testing.assert_allclose(_assembled(f.hessp(x3, later)._class_blocks(), later.size),
                               fresh_blocks(x3, later), rtol=1e-12, atol=1e-15)
    many = np.union1d(later, rng.choice(np.setdiff1d(np.arange(f.n_params), later), 10,
                                        replace=False))
    x4 = x3 + rng.normal(scale=0.3, size=x.size)
    np.testing.assert_allclose(_assembled(f.hessp(x4, many)._class_blocks(), many.size),
                               fresh_blocks(x4, many), rtol=1e-12, atol=1e-15)


def test_stored_entry_class_blocks_are_the_same_on_threads_and_in_chunks():
    """mn_class_blocks_csr: the blocks of a chunk shared among threads give the same bits as
    one thread, and chunks of a few pairs the same blocks as one chunk."""
    rng = np.random.default_rng(4)
    X = sp.random(300, 12, density=0.4, random_state=4, format="csr")
    K = 4
    col_start = np.arange(13, dtype=np.int64) * K            # every class of every column
    classes, feature = np.tile(np.arange(K), 12), np.repeat(np.arange(12), K)
    block = np.where(feature < 6, classes, classes + K)      # a block per class and half
    pos = feature % 6
    size = np.full(2 * K, 6)
    offset, icpt = np.arange(2 * K) * 36, np.full(2 * K, -1)
    W = rng.random((300, K))

    def blocks(chunk_pairs, threads):
        out = np.zeros(2 * K * 36)
        _gram_kernels.mn_class_blocks_csr(X.data, X.indices, X.indptr, W, col_start,
                                          classes, block, pos, offset, size, icpt, out,
                                          chunk_pairs, threads)
        return out
    one = blocks(1 << 18, 1)
    for chunk_pairs in (7, 100):
        np.testing.assert_allclose(blocks(chunk_pairs, 1), one, rtol=1e-13)
        np.testing.assert_array_equal(blocks(chunk_pairs, 3), blocks(chunk_pairs, 1))
    np.testing.assert_array_equal(blocks(1 << 18, 3), one)
    A = X.toarray()
    for k in range(K):
        for half in range(2):
            cols = slice(6 * half, 6 * half + 6)
            np.testing.assert_allclose(one[offset[k + K * half]:][:36].reshape(6, 6),
                                       A[:, cols].T @ (W[:, [k]] * A[:, cols]), rtol=1e-12)


def test_class_block_kernels_refuse_inconsistent_inputs_and_fall_back_to_the_diagonal():
    X = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0], [4.0, 0.0]]))
    W = np.full((3, 2), 0.25)
    col_start, classes = np.array([0, 2, 3]), np.array([0, 1, 0])
    block, pos = np.array([0, 1, 0]), np.array([0, 0, 1])
    offset, size, icpt = np.array([0, 4]), np.array([2, 2]), np.array([-1, 1])

    def call(data=X.data, indices=X.indices, indptr=X.indptr, W=W, col_start=col_start,
             classes=classes, block=block, pos=pos, offset=offset, size=size, icpt=icpt,
             out=None):
        out = np.zeros(8) if out is None else out
        _gram_kernels.mn_class_blocks_csr(data, indices, indptr, W, col_start, classes, block,
                                          pos, offset, size, icpt, out)
        return out
    out = call()
    # block 0: class 0, entries (column 0, column 1); block 1: class 1 of column 0, intercept
    np.testing.assert_allclose(out[:4].reshape(2, 2), 0.25 * np.array([[17.0, 2.0],
                                                                        [2.0, 13.0]]))
    np.testing.assert_allclose(out[4:].reshape(2, 2), 0.25 * np.array([[17.0, 5.0],
                                                                        [5.0, 0.0]]))
    assert _gram_kernels.mn_class_block_updates(X.indices, X.indptr, col_start, block, 2) \
        == 3 + 1 + 1 + 1 + 1                    # row 0: 2 in block 0, 1 in 1; rows 1, 2
    for bad, message in (({"W": W[:2]}, "row per row"),
                         ({"classes": np.array([0, 2, 0])}, "classes"),
                         ({"block": np.array([0, 2, 0])}, "out of range"),
                         ({"pos": np.array([0, 0, 2])}, "out of range"),
                         ({"classes": np.array([0, 1, 1])}, "two classes"),
                         ({"icpt": np.array([-1, 2])}, "intercept"),
                         ({"out": np.zeros(7)}, "do not fit"),
                         ({"offset": np.array([0, 3])}, "do not fit"),
                         ({"indptr": np.array([0, 2, 1, 3], dtype=np.int32)}, "canonical"),
                         ({"indices": np.array([1, 0, 1, 0], dtype=np.int32)}, "canonical")):
        with pytest.raises(ValueError, match=f"mn_class_blocks_csr.*{message}"):
            call(**bad)
    empty = sp.csr_matrix((3, 2))                      # no stored entry: blocks stay 0
    assert not call(data=empty.data, indices=empty.indices, indptr=empty.indptr).any()
    assert _gram_kernels.mn_class_block_updates(empty.indices, empty.indptr, col_start,
                                                block, 2) == 0
    none = np.zeros(3, dtype=np.int64)                  # no free weight entry
    assert not call(col_start=none, classes=none[:0], block=none[:0], pos=none[:0],
                    size=np.array([0, 0]), offset=np.array([0, 0]),
                    icpt=np.array([-1, -1])).any()
    assert _gram_kernels.mn_class_block_updates(X.indices, X.indptr, none, none[:0], 2) == 0
    with pytest.raises(ValueError, match="out of range"):
        _gram_kernels.mn_class_block_updates(X.indices, X.indptr, col_start, block, 1)
    with pytest.raises(ValueError, match="col_start"):
        _gram_kernels.mn_class_block_updates(X.indices, X.indptr, col_start[:2], block, 2)

    G = np.array([1.0, 2.0, 2.0, 1.0, 4.0])            # an indefinite block, then a 1 x 1
    assert _gram_kernels.block_cholesky(G, np.array([0, 4]), np.array([2, 1]), 0.0) == 1
    z = np.empty(3)
    _gram_kernels.block_solve(G, np.array([0, 4]), np.array([2, 1]), np.array([2, 0, 1]),
                              np.array([1.0, 2.0, 3.0]), z)
    np.testing.assert_allclose(z, [1.0, 2.0 / 4.0, 3.0], rtol=1e-10)   # r / the diagonal
    for args, message in (((G, np.array([0, 3]), np.array([2, 1]), 0.0), "do not fit"),
                          ((G, np.array([0, 4]), np.array([2, 1]), -1.0), "non-negative")):
        with pytest.raises(ValueError, match=f"block_cholesky.*{message}"):
            _gram_kernels.block_cholesky(*args)
    for order, r, message in ((np.array([2, 0]), np.ones(3), "every entry"),
                              (np.array([3, 0, 1]), np.ones(3), "out of range"),
                              (np.array([2, 0, 1]), np.ones(2), "every entry")):
        with pytest.raises(ValueError, match=f"block_solve.*{message}"):
            _gram_kernels.block_solve(G, np.array([0, 4]), np.array([2, 1]), order, r,
                                      np.empty(3))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_dense_class_block_kernel_sums_its_panels_and_refuses_inconsistent_inputs(dtype):
    """mn_class_blocks_dense: each block's Σᵢ Wᵢₖ x̃ x̃ᵀ (the intercept's Σᵢ Wᵢₖ included),
    the same whatever rows its panels hold, and on threads the same bits; inconsistent
    inputs refused."""
    X = np.asfortranarray([[1.0, 2.0], [0.0, 3.0], [4.0, 0.0]], dtype=dtype)
    W = np.full((3, 2), 0.25)
    # block 0: class 0, columns 0 and 1; block 1: class 1, column 0 and the intercept
    col, classes = np.array([0, 1, 0, -1]), np.array([0, 0, 1, 1])
    offset, size = np.array([0, 4]), np.array([2, 2])

    def call(X=X, col=col, classes=classes, offset=offset, size=size, W=W, work=64,
             out=None, threads=1):
        out = np.zeros(8) if out is None else out
        _gram_kernels.mn_class_blocks_dense(X, col, classes, offset, size, W,
                                            np.full(work, np.nan), out, threads)
        return out
    expected = 0.25 * np.array([17.0, 2.0, 2.0, 13.0, 17.0, 5.0, 5.0, 3.0])
    np.testing.assert_allclose(call(), expected)
    np.testing.assert_allclose(call(work=6), expected)          # a row a panel: m + K
    np.testing.assert_allclose(call(work=13), expected)         # panels of 2 and 1 rows
    rng = np.random.default_rng(0)
    Xr, Wr = np.asfortranarray(rng.normal(size=(700, 6))).astype(dtype), rng.random((700, 3))
    cols, cls = np.array([5, 0, 2, -1, 1, 3, 4]), np.array([0, 0, 0, 1, 1, 2, 2])
    out = call(Xr, cols, cls, np.array([0, 9, 13]), np.array([3, 2, 2]), Wr, work=100,
               out=np.zeros(17))
    Xt = np.column_stack([Xr.astype(np.float64), np.ones(700)])
    for (start, stop), at, k in (((0, 9), [5, 0, 2], 0), ((9, 13), [6, 1], 1),
                                 ((13, 17), [3, 4], 2)):
        A = Xt[:, at]
        np.testing.assert_allclose(out[start:stop].reshape(len(at), len(at)),
                                   A.T @ (Wr[:, [k]] * A), rtol=1e-12)
    for threads in (2, 3, 8):
        np.testing.assert_array_equal(
            call(Xr, cols, cls, np.array([0, 9, 13]), np.array([3, 2, 2]), Wr, work=100,
                 out=np.zeros(17), threads=threads), out)
    for bad, message in (({"W": W[:2]}, "row per row"),
                         ({"classes": np.array([0, 0, 1])}, "entry per entry_col"),
                         ({"classes": np.array([0, 0, 2, 2])}, "out of range"),
                         ({"col": np.array([0, 2, 0, -1])}, "out of range"),
                         ({"col": np.array([0, 1, 0, -2])}, "out of range"),
                         ({"classes": np.array([0, 1, 1, 1])}, "two classes"),
                         ({"out": np.zeros(7)}, "do not fit"),
                         ({"size": np.array([2, 1])}, "do not fit"),
                         ({"work": 5}, "work")):
        with pytest.raises(ValueError, match=f"mn_class_blocks_dense.*{message}"):
            call(**bad)
    assert not call(X=X[:0], W=W[:0]).any()                      # no row: blocks stay 0


def test_block_take_cuts_blocks_to_their_kept_entries_and_refuses_bad_input():
    G = np.arange(1.0, 14.0)                       # a 3 x 3 block, then a 2 x 2
    offset, size = np.array([0, 9]), np.array([3, 2])
    kept = np.array([1, 0, 1, 0, 0], dtype=np.uint8)
    out = np.empty(4)
    _gram_kernels.block_take(G, offset, size, kept, out)
    np.testing.assert_array_equal(out, [1.0, 3.0, 7.0, 9.0])
    for args, message in (((G, offset, size, kept, np.empty(5)), "hold 4"),
                          ((G, offset, size, kept[:4], out), "a flag per entry"),
                          ((G[:12], offset, size, kept, out), "do not fit")):
        with pytest.raises(ValueError, match=f"block_take.*{message}"):
            _gram_kernels.block_take(*args)


def test_rows_given_in_csr_are_read_not_copied():
    """``X_csr``, the caller's CSR layout of the same X, is the one the rows are walked in
    (no copy made); one of another dtype or with duplicates is left for a copy."""
    X = sp.random(40, 12, density=0.3, format="csr", random_state=0)
    y = np.arange(40) % 3
    datafit = Multinomial(X.tocsc(), y, 3, X_csr=X)
    assert datafit._csr() is X
    for other in (X.astype(np.float32), None):
        datafit = Multinomial(X.tocsc(), y, 3, X_csr=other)
        rows = datafit._csr()
        assert rows is not X and rows.dtype == np.float64
        np.testing.assert_array_equal(rows.toarray(), X.toarray())
