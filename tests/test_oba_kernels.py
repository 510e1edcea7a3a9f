"""The OBA Cython kernels against plain NumPy references (random and adversarial inputs)."""
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import _oba_reference as ref
from sparsekit._cython import _oba_kernels as K
from sparsekit._cython import _gram_kernels as GK


def _matrix(rng, n, d, dtype, density=0.3, empty_row=True):
    X = sp.random(n, d, density=density, random_state=rng, format="csr", dtype=np.float64)
    X = X.astype(dtype)
    if empty_row:  # an empty row and an empty column
        X = X.tolil()
        X[0, :] = 0
        X[:, 1] = 0
        X = X.tocsr()
        X.eliminate_zeros()
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_margins_and_rmatvec_all_layouts(dtype, index_dtype):
    rng = np.random.default_rng(0)
    X = _matrix(rng, 30, 12, dtype)
    Xd = X.toarray().astype(np.float64)
    w = rng.standard_normal(12)
    w[[2, 5]] = 0.0
    cols = np.flatnonzero(w).astype(np.int64)
    r = rng.standard_normal(30)
    expect_m, expect_g = Xd @ w + 0.7, Xd.T @ r
    tol = 1e-5 if dtype == np.float32 else 1e-12

    csc, csr = X.tocsc(), X.tocsr()
    for M in (csc, csr):
        M.indices = M.indices.astype(index_dtype)
        M.indptr = M.indptr.astype(index_dtype)
    out = np.empty(30)
    K.margins_csc(csc.data, csc.indices, csc.indptr, w, cols, 0.7, out)
    np.testing.assert_allclose(out, expect_m, rtol=tol, atol=tol)
    K.margins_csr(csr.data, csr.indices, csr.indptr, w, 0.7, out)
    np.testing.assert_allclose(out, expect_m, rtol=tol, atol=tol)
    K.margins_dense(np.asfortranarray(X.toarray()), w, cols, 0.7, out)
    np.testing.assert_allclose(out, expect_m, rtol=tol, atol=tol)

    g = np.empty(12)
    K.rmatvec_csc(csc.data, csc.indices, csc.indptr, r, g)
    np.testing.assert_allclose(g, expect_g, rtol=tol, atol=tol)
    K.rmatvec_csr(csr.data, csr.indices, csr.indptr, r, g)
    np.testing.assert_allclose(g, expect_g, rtol=tol, atol=tol)
    K.rmatvec_dense(np.asfortranarray(X.toarray()), r, g)
    np.testing.assert_allclose(g, expect_g, rtol=tol, atol=tol)


def _blocky_matrix(rng, n, d, dtype, index_dtype):
    """A canonical CSC matrix with empty rows and columns, a dense column, entries on the
    rows where thread blocks begin (t n // T for the counts tested) and a column stored in
    one row only."""
    X = sp.random(n, d, density=0.2, random_state=rng, format="lil", dtype=np.float64)
    if n:
        X[:, 0] = rng.standard_normal((n, 1))            # dense
        X[:, 1] = 0                                         # empty
        X[n // 2, 2] = 3.0
        for T in (2, 3, 7):
            X[[t * n // T for t in range(T)], 3] = 1.5      # block starts
        X[0, :] = 0                                         # an empty row
    X = X.tocsc().astype(dtype)
    X.eliminate_zeros()
    X.sort_indices()
    X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("n", [0, 1, 5, 97])
def test_threaded_column_walks_give_the_same_sums(dtype, index_dtype, n):
    """margins_csc, margins_csr, rmatvec_csc, hessp_csc and hess_diag_csc on 2, 3, 7 and
    64 threads (more than the rows) give the numbers of one thread, bit for bit (each row,
    or column, sums its terms in the same order), which are the NumPy products."""
    rng = np.random.default_rng(n)
    d = 9
    X = _blocky_matrix(rng, n, d, dtype, index_dtype)
    R = X.tocsr()
    Xd = X.toarray().astype(np.float64)
    w, r, D = rng.standard_normal(d), rng.standard_normal(n), rng.uniform(0.0, 2.0, n)
    w[[4, 6]] = 0.0
    cols = np.array([0, 1, 2, 3, 5, 8], dtype=np.int64)          # the free columns
    v = rng.standard_normal(cols.size + 1)
    tol = 1e-5 if dtype == np.float32 else 1e-12

    def run(T):
        m, m_rows, g = np.empty(n), np.empty(n), np.empty(d)
        hv, hv1, diag = np.empty(cols.size), np.empty(cols.size + 1), np.empty(cols.size + 1)
        K.margins_csc(X.data, X.indices, X.indptr, w, np.flatnonzero(w).astype(np.int64),
                      0.3, m, T)
        K.margins_csr(R.data, R.indices, R.indptr, w, 0.3, m_rows, T)
        K.rmatvec_csc(X.data, X.indices, X.indptr, r, g, T)
        K.hessp_csc(X.data, X.indices, X.indptr, cols, D, v[:-1], False, np.empty(n), hv, T)
        K.hessp_csc(X.data, X.indices, X.indptr, cols, D, v, True, np.empty(n), hv1, T)
        K.hess_diag_csc(X.data, X.indices, X.indptr, cols, D, True, diag, T)
        return m, m_rows, g, hv, hv1, diag
    one = run(1)
    XF1 = np.hstack([Xd[:, cols], np.ones((n, 1))])
    XF = Xd[:, cols]
    expected = (Xd @ w + 0.3, Xd @ w + 0.3, Xd.T @ r, XF.T @ (D * (XF @ v[:-1])),
                XF1.T @ (D * (XF1 @ v)), np.r_[(XF ** 2).T @ D, D.sum()])
    for got, want in zip(one, expected):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    for T in (2, 3, 7, 64):
        for got, want in zip(run(T), one):
            np.testing.assert_array_equal(got, want)


def _free_slice(X, cols):
    n = X.shape[0]
    nnz = int(np.diff(X.indptr)[cols].sum())
    sptr, sdata, sind = np.empty(n + 1, np.int64), np.empty(nnz, X.dtype), np.empty(nnz, np.int32)
    assert K.free_slice_csr(X.data, X.indices, X.indptr, cols, sptr, sdata, sind) == nnz
    return sdata, sind, sptr


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("n", [0, 1, 5, 97, 400])
def test_free_slice_products_are_the_column_walks_bit_for_bit(dtype, index_dtype, n):
    """hessp_free_slice on free_slice_csr's copy gives hessp_csc's numbers bit for bit: with
    and without the intercept, zero weights, columns of every length modulo 4 (the partial
    sums' tails), empty rows and columns, and on a sub-slice (the others' weights zero)."""
    rng = np.random.default_rng(n)
    X = _blocky_matrix(rng, n, 40, dtype, index_dtype).tolil()
    for j in range(4, 14):                 # columns of 0 ... 9 entries
        X[:, j] = 0.0
        X[rng.choice(n, min(n, j - 4), replace=False), j] = rng.standard_normal(min(n, j - 4))
    X = sp.csc_matrix(X, dtype=dtype)
    X.eliminate_zeros()
    X.sort_indices()
    X.indices, X.indptr = X.indices.astype(index_dtype), X.indptr.astype(index_dtype)
    D = rng.uniform(0.0, 2.0, n)
    D[::7] = 0.0
    for cols in (np.arange(40), np.sort(rng.choice(40, 17, replace=False)), np.array([1]),
                 np.array([], dtype=np.int64)):
        cols = cols.astype(np.int64)
        sdata, sind, sptr = _free_slice(X, cols)
        acc = np.empty(4 * cols.size)
        for s in (0.0, 0.7):
            v = rng.standard_normal(cols.size)
            v[rng.random(cols.size) < 0.2] = 0.0
            want = np.empty(cols.size + 1)
            K.hessp_csc(X.data, X.indices, X.indptr, cols, D, np.r_[v, s], True, np.empty(n),
                        want)
            got = np.empty(cols.size)
            total = K.hessp_free_slice(sdata, sind, sptr, D, v, s, acc, got)
            np.testing.assert_array_equal(np.r_[got, total], want)
            keep = np.flatnonzero(rng.random(cols.size) < 0.6)   # a sub-slice
            sub = np.empty(keep.size + 1)
            K.hessp_csc(X.data, X.indices, X.indptr, cols[keep], D, np.r_[v[keep], s], True,
                        np.empty(n), sub)
            full = np.zeros(cols.size)
            full[keep] = v[keep]
            total = K.hessp_free_slice(sdata, sind, sptr, D, full, s, acc, got)
            np.testing.assert_array_equal(np.r_[got[keep], total], sub)
        XF = X.toarray().astype(np.float64)[:, cols]
        np.testing.assert_allclose(got[keep], (XF.T @ (D * (XF @ full + 0.7)))[keep],
                                   rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-12)


def test_free_slice_kernels_refuse_what_would_overrun_them():
    X = sp.random(30, 8, density=0.4, random_state=0, format="csc")
    X.sort_indices()
    cols = np.array([1, 4, 6], dtype=np.int64)
    sdata, sind, sptr = _free_slice(X, cols)
    for bad_cols in ([4, 1], [1, 8], [-1, 2], [3, 3]):
        with pytest.raises(ValueError, match="free_slice_csr"):
            K.free_slice_csr(X.data, X.indices, X.indptr, np.array(bad_cols, dtype=np.int64),
                             sptr, sdata, sind)
    with pytest.raises(ValueError, match="room"):
        K.free_slice_csr(X.data, X.indices, X.indptr, cols, sptr, sdata[:-1], sind)
    with pytest.raises(ValueError, match="row index"):
        K.free_slice_csr(X.data, X.indices, X.indptr, cols, np.empty(20, np.int64), sdata,
                         sind)
    acc, out, D = np.empty(12), np.empty(3), np.ones(30)
    for args in ((D[:-1], np.ones(3), acc, out), (D, np.ones(2), acc, out),
                 (D, np.ones(3), acc[:-1], out)):
        with pytest.raises(ValueError, match="do not match"):
            K.hessp_free_slice(sdata, sind, sptr, args[0], args[1], 0.0, args[2], args[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [0, 1, 97, 2000])
def test_threaded_dense_kernels_match_one_thread(dtype, n):
    """margins_dense, rmatvec_dense, hessp_dense and hess_diag_dense on 2, 3, 7 and 64
    threads against one thread and NumPy, on a dense X with columns read on row ranges
    (zeros above and below, one column of zeros, one full), for free sets of a fifth
    (one ``daxpy``/``ddot`` per column) and of most columns (``dgemv`` passes). The plain
    loops (float32 X, the diagonal) sum in one thread's order; float64 X goes through
    BLAS, whose grouping of a call's rows may differ where a thread's block starts (the
    same numbers on OpenBLAS where every column starts at row 0)."""
    rng = np.random.default_rng(n)
    p = 150                               # three blocks of 64 columns for Xᵀ r
    X = rng.standard_normal((n, p))
    for j in range(2, p, 3):              # row ranges: zeros above and below
        a, b = np.sort(rng.integers(0, n + 1, 2))
        X[:a, j], X[b:, j] = 0.0, 0.0
    X[:, 4] = 0.0
    X = np.asfortranarray(X.astype(dtype))
    lo, hi = np.empty(p, np.int64), np.empty(p, np.int64)
    K.column_row_ranges(X, lo, hi)
    Xd = X.astype(np.float64)
    r, D = rng.standard_normal(n), rng.uniform(0.0, 2.0, n)
    exact = dtype == np.float32
    for size in (30, 140):
        cols = np.sort(rng.choice(p, size, replace=False)).astype(np.int64)
        w = np.zeros(p)
        w[cols] = rng.standard_normal(size)
        v = rng.standard_normal(size + 1)

        def run(T):
            m, g = np.empty(n), np.empty(p)
            hv, diag = np.empty(size + 1), np.empty(size + 1)
            K.margins_dense(X, w, cols, 0.3, m, lo, hi, T)
            K.rmatvec_dense(X, r, g, lo, hi, T)
            K.hessp_dense(X, cols, D, v, True, np.empty(n), hv, lo, hi, T)
            K.hess_diag_dense(X, cols, D, True, diag, lo, hi, T)
            return m, g, hv, diag
        one = run(1)
        XF1 = np.hstack([Xd[:, cols], np.ones((n, 1))])
        expected = (Xd @ w + 0.3, Xd.T @ r, XF1.T @ (D * (XF1 @ v)),
                    np.r_[(Xd[:, cols] ** 2).T @ D, D.sum()])
        for got, want in zip(one, expected):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * max(n, 1))
        for T in (2, 3, 7, 64):
            for q, (got, want) in enumerate(zip(run(T), one)):
                if exact or q == 3:
                    np.testing.assert_array_equal(got, want)
                else:
                    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * max(n, 1))


def test_logistic_pointwise_is_stable_for_huge_margins():
    m = np.array([-1e4, -800.0, -40.0, -1.0, 0.0, 1.0, 40.0, 800.0, 1e4, 3.0])
    y = np.array([1, 1, -1, 1, -1, -1, 1, -1, -1, 1], dtype=float)
    sw = np.linspace(0.5, 2.0, m.size)
    r, D = np.empty_like(m), np.empty_like(m)
    loss = K.logistic_pointwise(m, y, sw, r, D)
    with np.errstate(over="ignore"):
        expect_loss, expect_r, expect_D = ref.logistic_terms(m, y, sw)
    assert np.isfinite(loss) and np.all(np.isfinite(r)) and np.all(np.isfinite(D))
    np.testing.assert_allclose(loss, expect_loss, rtol=1e-14)
    np.testing.assert_allclose(r, expect_r, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(D, expect_D, rtol=1e-9, atol=1e-300)
    assert np.all(D >= 0)


@pytest.mark.parametrize("n", [0, 1, 1000])
def test_logistic_pointwise_on_threads_gives_the_sums_of_one(n):
    """The loss, r and D on 2, 3, 7 and 64 threads: one thread's numbers bit for bit (the
    terms summed in the samples' order), huge margins and zero weights included."""
    rng = np.random.default_rng(n)
    m = rng.standard_normal(n) * 10.0
    m[::7] = 1e4 * np.sign(m[::7])
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    sw = rng.uniform(0.0, 2.0, n)
    sw[::5] = 0.0

    def run(T):
        r, D = np.empty(n), np.empty(n)
        return K.logistic_pointwise(m, y, sw, r, D, T), r, D
    one = run(1)
    for T in (2, 3, 7, 64):
        for got, want in zip(run(T), one):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_logistic_dual_terms_is_its_formula_at_every_margin(alpha):
    """Σ sᵢ (H(tᵢ) − tᵢ yᵢ b), tᵢ = α σ(−yᵢ mᵢ), against SciPy's expit and xlogy on
    moderate margins and the limits at huge ones (t → 0 or α: H → 0 or H(α))."""
    from scipy.special import expit, xlogy
    rng = np.random.default_rng(3)
    m = np.concatenate([rng.standard_normal(40) * 5, [-1e4, -800.0, 0.0, 800.0, 1e4]])
    y = np.where(rng.random(m.size) < 0.5, 1.0, -1.0)
    sw = rng.uniform(0.0, 2.0, m.size)
    for b in (0.0, -1.7):
        t = alpha * expit(-y * m)
        expect = float(sw @ (-xlogy(t, t) - xlogy(1 - t, 1 - t) - t * y * b))
        got = K.logistic_dual_terms(m, y, sw, alpha, b)
        assert np.isfinite(got)
        np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-14)
    # where σ(−ym) is within rounding of 1 and α = 1, 1 − t comes from σ(ym), not 1 − t
    tiny = K.logistic_dual_terms(np.array([-40.0]), np.array([1.0]), np.ones(1), 1.0, 0.0)
    e = np.exp(-40.0)
    np.testing.assert_allclose(tiny, e * (40.0 + 1.0), rtol=1e-6)   # H(1 − e) ≈ e (1 − log e)
    with pytest.raises(ValueError, match="same length"):
        K.logistic_dual_terms(m, y[:-1], sw, alpha, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        K.logistic_dual_terms(m, y, sw, 1.5, 0.0)


def test_quadratic_pointwise():
    rng = np.random.default_rng(1)
    m, y, sw = rng.standard_normal((3, 20))
    sw = np.abs(sw)
    r, D = np.empty(20), np.empty(20)
    loss = K.quadratic_pointwise(m, y, sw, r, D)
    np.testing.assert_allclose(loss, 0.5 * np.sum(sw * (m - y) ** 2))
    np.testing.assert_allclose(r, sw * (m - y))
    np.testing.assert_allclose(D, sw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("intercept", [False, True])
@pytest.mark.parametrize("cols", [[0, 1, 3, 4, 8, 14], list(range(15))],
                         ids=["some-columns", "all-columns"])
def test_subspace_hessian_products_and_gram(dtype, intercept, cols):
    rng = np.random.default_rng(2)
    X = _matrix(rng, 40, 15, dtype).tocsc()
    cols = np.array(cols, dtype=np.int64)
    k = cols.size
    D = rng.uniform(0, 0.25, 40)
    D[3] = 0.0
    A = np.hstack([X.toarray()[:, cols].astype(np.float64)]
                  + ([np.ones((40, 1))] if intercept else []))
    H = A.T @ (D[:, None] * A)
    v = rng.standard_normal(H.shape[0])
    v[1] = 0.0  # a skipped column
    tol = 1e-5 if dtype == np.float32 else 1e-12

    ind = np.zeros(k + 1, dtype=X.indptr.dtype)
    np.cumsum(np.diff(X.indptr)[cols], out=ind[1:])
    data = np.empty(ind[-1], dtype=dtype)
    idx = np.empty(ind[-1], dtype=X.indices.dtype)
    GK.take_columns_csc(X.data, X.indices, X.indptr, cols, data, idx, ind)
    np.testing.assert_array_equal(sp.csc_matrix((data, idx, ind), shape=(40, k)).toarray(),
                                  X.toarray()[:, cols])

    # the kernels read the listed columns of the whole matrix, CSC and dense (BLAS path)
    out, tmp = np.empty(H.shape[0]), np.empty(40)
    K.hessp_csc(X.data, X.indices, X.indptr, cols, D, v, intercept, tmp, out)
    np.testing.assert_allclose(out, H @ v, rtol=tol, atol=tol)
    Xd = np.asfortranarray(X.toarray())
    out[:] = np.nan
    K.hessp_dense(Xd, cols, D, v, intercept, tmp, out)
    np.testing.assert_allclose(out, H @ v, rtol=tol, atol=tol)

    K.hess_diag_csc(X.data, X.indices, X.indptr, cols, D, intercept, out)
    np.testing.assert_allclose(out, np.diag(H), rtol=tol, atol=tol)
    K.hess_diag_dense(Xd, cols, D, intercept, out)
    np.testing.assert_allclose(out, np.diag(H), rtol=tol, atol=tol)

    # the row walks of a CSR copy: v zero off the listed columns, the product read on them
    # (row 3 has D = 0, row 8 is empty)
    Xr = X.tolil()
    Xr[8, :] = 0
    Xr = Xr.tocsr()
    Xr.eliminate_zeros()
    Ar = A.copy()
    Ar[8, :k] = 0.0
    Hr = Ar.T @ (D[:, None] * Ar)
    full, out_full = np.zeros(15), np.full(15, np.nan)
    full[cols] = v[:k]
    s = K.hessp_csr(Xr.data, Xr.indices, Xr.indptr, D, full, v[k] if intercept else 0.0,
                    out_full)
    got = np.append(out_full[cols], s) if intercept else out_full[cols]
    np.testing.assert_allclose(got, Hr @ v, rtol=tol, atol=tol)
    K.rmatvec_csr(Xr.data, Xr.indices, Xr.indptr, D, out_full, True)
    np.testing.assert_allclose(out_full[cols], np.diag(Hr)[:k], rtol=tol, atol=tol)

    colmap = np.full(15, -1, dtype=np.int64)
    colmap[cols] = np.arange(k)
    R = X.tocsr()
    R.sort_indices()
    G = np.zeros((k, k))
    GK.gram_csr(R.data, R.indices, R.indptr, D, colmap, G)
    np.testing.assert_allclose(G, H[:k, :k], rtol=tol, atol=tol)

    # the float32 BLAS route, panels of 7 rows (a partial last panel, a row with D = 0, empty
    # rows), intercept included; float32 sums: relative error ~1e-7 of the largest entry
    R.data[R.indptr[5]:R.indptr[7]] = 0.0
    R.eliminate_zeros()
    A[5:7, :k] = 0.0
    H = A.T @ (D[:, None] * A)
    G = np.full(H.shape, np.nan)
    GK.gram_csr_syrk(R.data, R.indices, R.indptr, D, colmap, intercept, G, 7)
    np.testing.assert_allclose(G, H, rtol=0, atol=1e-6 * np.abs(H).max())
    np.testing.assert_array_equal(G, G.T)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_products_all_columns_and_permuted_list(dtype):
    """margins_dense/hessp_dense: dgemv path (at least half the columns, any order) and the
    per-column path (fewer columns) agree with NumPy."""
    rng = np.random.default_rng(4)
    Xd = np.asfortranarray(rng.standard_normal((25, 7)).astype(dtype))
    w = rng.standard_normal(7)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    out = np.empty(25)
    for cols in (np.arange(7), np.array([6, 2, 0, 1, 5, 4, 3])):
        K.margins_dense(Xd, w, cols.astype(np.int64), -0.3, out)
        np.testing.assert_allclose(out, Xd.astype(np.float64) @ w - 0.3, rtol=tol, atol=tol)
    w_few = np.zeros(7)
    w_few[[1, 5]] = [0.5, -2.0]
    K.margins_dense(Xd, w_few, np.array([1, 5], dtype=np.int64), 0.0, out)
    np.testing.assert_allclose(out, Xd.astype(np.float64) @ w_few, rtol=tol, atol=tol)
    D, v = rng.uniform(0, 1, 25), rng.standard_normal(7)
    perm = np.array([6, 2, 0, 1, 5, 4, 3], dtype=np.int64)  # not the gemv path: per column
    A = Xd.astype(np.float64)[:, perm]
    out7, tmp = np.empty(7), np.empty(25)
    K.hessp_dense(Xd, perm, D, v, False, tmp, out7)
    np.testing.assert_allclose(out7, A.T @ (D * (A @ v)), rtol=tol, atol=tol)
    few = np.array([5, 2], dtype=np.int64)  # per-column daxpy/ddot path
    A2 = Xd.astype(np.float64)[:, few]
    out2 = np.empty(2)
    K.hessp_dense(Xd, few, D, v[:2].copy(), False, tmp, out2)
    np.testing.assert_allclose(out2, A2.T @ (D * (A2 @ v[:2])), rtol=tol, atol=tol)


def _enveloped(rng, n, p, dtype):
    """A dense Fortran X whose columns have zero runs at both ends of every length: upper
    triangular on the left, banded, then columns of zeros, single entries at the first and
    last row, and full columns (more than one 64-column block of the BLAS route)."""
    X = rng.standard_normal((n, p))
    for j in range(p):
        kind = j % 6
        if kind == 0:
            X[min(j, n):, j] = 0.0          # upper triangular
        elif kind == 1:
            X[:j % n, j] = 0.0              # zeros on top
            X[min(j % n + 5, n):, j] = 0.0  # a band of five rows
        elif kind == 2:
            X[:, j] = 0.0
        elif kind == 3:
            X[1:, j] = 0.0                  # the first row only
        elif kind == 4:
            X[:-1, j] = 0.0                 # the last row only
    if n > 3 and p > 5:
        X[3, 5] = 0.0  # a zero inside a column's range
    return np.asfortranarray(X.astype(dtype))


def _ranges_reference(X):
    lo, hi = np.zeros(X.shape[1], dtype=np.int64), np.zeros(X.shape[1], dtype=np.int64)
    for j in range(X.shape[1]):
        nz = np.flatnonzero(X[:, j])
        if nz.size:
            lo[j], hi[j] = nz[0], nz[-1] + 1
    return lo, hi


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(40, 150), (150, 40), (1, 7), (9, 1)])
def test_dense_kernels_read_only_each_columns_row_range(dtype, shape):
    """column_row_ranges finds every column's first and last nonzero; the dense products,
    gradient and Jacobi diagonal given those ranges equal NumPy's on the whole matrix, on
    the BLAS routes (all columns: blocks of 64 with their own row spans) and the per-column
    ones (a few columns, any order), with and without the intercept."""
    rng = np.random.default_rng(21)
    n, p = shape
    X = _enveloped(rng, n, p, dtype)
    X64 = X.astype(np.float64)
    lo, hi = np.empty(p, dtype=np.int64), np.empty(p, dtype=np.int64)
    lo[:], hi[:] = -7, -7
    K.column_row_ranges(X, lo, hi)
    expect_lo, expect_hi = _ranges_reference(X)
    np.testing.assert_array_equal(lo, expect_lo)
    np.testing.assert_array_equal(hi, expect_hi)
    tol = dict(rtol=1e-12, atol=1e-12)
    w, r, D = rng.standard_normal(p), rng.standard_normal(n), rng.uniform(0.1, 1.0, n)
    few = rng.permutation(p)[:max(1, p // 3)].astype(np.int64)
    w_few = np.zeros(p)
    w_few[few] = w[few]
    out = np.full(n, np.nan)
    for cols, ww in ((np.arange(p, dtype=np.int64), w), (few, w_few)):
        K.margins_dense(X, ww, cols, 0.5, out, lo, hi)
        np.testing.assert_allclose(out, X64 @ ww + 0.5, **tol)
    g = np.full(p, np.nan)
    K.rmatvec_dense(X, r, g, lo, hi)
    np.testing.assert_allclose(g, X64.T @ r, **tol)
    for cols in (np.arange(p, dtype=np.int64), few):
        for intercept in (False, True):
            A = np.hstack([X64[:, cols]] + ([np.ones((n, 1))] if intercept else []))
            H = A.T @ (D[:, None] * A)
            v = rng.standard_normal(H.shape[0])
            h, tmp = np.full(H.shape[0], np.nan), np.empty(n)
            K.hessp_dense(X, cols, D, v, intercept, tmp, h, lo, hi)
            np.testing.assert_allclose(h, H @ v, **tol)
            h[:] = np.nan
            K.hess_diag_dense(X, cols, D, intercept, h, lo, hi)
            np.testing.assert_allclose(h, np.diag(H), **tol)


def test_dense_kernels_refuse_bad_row_ranges():
    X = np.asfortranarray(np.ones((5, 3)))
    out, g, w = np.empty(5), np.empty(3), np.ones(3)
    cols = np.arange(3, dtype=np.int64)
    ok = np.zeros(3, dtype=np.int64), np.full(3, 5, dtype=np.int64)
    bad = {"one of the two": (ok[0], None),
           "wrong shape": (np.zeros(2, dtype=np.int64), np.full(2, 5, dtype=np.int64)),
           "past the rows": (ok[0], np.array([5, 6, 5], dtype=np.int64)),
           "negative": (np.array([0, -1, 0], dtype=np.int64), ok[1]),
           "lo above hi": (np.array([0, 4, 0], dtype=np.int64), np.array([5, 3, 5],
                                                                         dtype=np.int64))}
    for name, (lo, hi) in bad.items():
        with pytest.raises(ValueError):
            K.margins_dense(X, w, cols, 0.0, out, lo, hi)
        with pytest.raises(ValueError):
            K.rmatvec_dense(X, out, g, lo, hi)
        with pytest.raises(ValueError):
            K.hessp_dense(X, cols, out, w, False, np.empty(5), g, lo, hi)
        with pytest.raises(ValueError):
            K.hess_diag_dense(X, cols, out, False, g, lo, hi)
    with pytest.raises(ValueError, match="shape"):
        K.column_row_ranges(X, np.empty(2, dtype=np.int64), np.empty(3, dtype=np.int64))


def test_subgradient_sets_with_ties_and_unpenalized():
    x = np.array([0.0, 0.0, 0.0, 0.0, 1.5, -2.0, 0.0, 0.3])
    grad = np.array([0.5, -0.5, 0.7, -0.9, 0.2, 0.1, 3.0, -1.0])
    mu = np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.0, 0.0])  # ties |grad| = mu at 0, 1
    g, zeta, code = np.empty(8), np.empty(8), np.empty(8, dtype=np.int8)
    opt = K.subgradient_and_sets(x, grad, mu, g, zeta, code)
    eg, ez, ec, eopt = ref.min_norm_subgradient(x, grad, mu)
    np.testing.assert_allclose(g, eg)
    np.testing.assert_array_equal(zeta[mu > 0], ez[mu > 0])
    np.testing.assert_array_equal(code, ec)
    assert code[0] == 0 and code[1] == 0  # |∇f| = μ belongs to 𝒜 (thesis ≤)
    np.testing.assert_allclose(opt, eopt)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 40),
              elements=st.floats(-5, 5, allow_subnormal=False)),
       arrays(np.float64, 40, elements=st.floats(-5, 5, allow_subnormal=False)),
       st.floats(0.0, 2.0))
def test_subgradient_and_soft_threshold_properties(x, grad, m):
    n = x.size
    grad = grad[:n]
    x = np.where(np.abs(x) < 1, 0.0, x)  # many exact zeros
    mu = np.full(n, m)
    g, zeta, code = np.empty(n), np.empty(n), np.empty(n, dtype=np.int8)
    opt = K.subgradient_and_sets(x, grad, mu, g, zeta, code)
    eg, _, ec, eopt = ref.min_norm_subgradient(x, grad, mu)
    np.testing.assert_allclose(g, eg, atol=1e-12)
    np.testing.assert_array_equal(code, ec)
    np.testing.assert_allclose(opt, eopt, atol=1e-12)
    out = np.empty(n)
    K.ista_point(x, grad, mu, 1.0, out)
    np.testing.assert_allclose(out, np.sign(x - grad) * np.maximum(np.abs(x - grad) - m, 0))
    np.testing.assert_allclose(np.abs(x - out).max(initial=0.0), opt, atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 20_001])
def test_ista_point_and_weighted_l1_are_their_formulas(n):
    """The proximal-gradient point and the three sums of the ISTA model against NumPy
    (blocks of 4096 terms summed apart: lengths around and over one block), with exact
    zeros, unpenalized coordinates and a threshold met exactly; the sums the same, bit for
    bit, when the point is not written."""
    rng = np.random.default_rng(n)
    x, grad = rng.normal(size=n), rng.normal(size=n)
    mu = rng.uniform(0.0, 1.0, n)
    x[::3] = 0.0
    mu[::5] = 0.0
    L = 2.5
    if n:
        grad[0], mu[0] = -1.25, 0.5                       # |x − g/L| = μ/L exactly
    out = np.full(n, np.nan)
    gs, ss, pen = K.ista_point(x, grad, mu, L, out)
    z = x - grad / L
    expected = np.sign(z) * np.maximum(np.abs(z) - mu / L, 0.0)
    np.testing.assert_array_equal(out, expected)
    s = expected - x
    scale = max(1.0, n)
    assert gs == pytest.approx(grad @ s, abs=1e-13 * scale)
    assert ss == pytest.approx(s @ s, abs=1e-13 * scale)
    assert pen == pytest.approx(mu @ np.abs(expected), abs=1e-13 * scale)
    assert K.ista_point(x, grad, mu, L) == (gs, ss, pen)      # the sums alone, not written
    assert K.weighted_l1(mu, x) == pytest.approx(mu @ np.abs(x), abs=1e-13 * scale)
    with pytest.raises(ValueError, match="L must be positive"):
        K.ista_point(x, grad, mu, 0.0, out)
    with pytest.raises(ValueError, match="same length"):
        K.weighted_l1(mu, np.zeros(n + 1))


def _trial_reference(x, grad, zeta, mu, free, d, alpha):
    """model_trial by NumPy: the projection of (2.13) and the sums, exactly (fsum)."""
    u = x[free] + alpha * d
    xn = np.where((mu[free] != 0) & (u * zeta[free] <= 0), 0.0, u)
    crossed = np.flatnonzero((xn == 0) & (u != 0))
    step = math.fsum(grad[free] * (xn - x[free]))
    penalty = math.fsum(mu[free] * (np.abs(xn) - np.abs(x[free])))
    return xn, crossed, step, penalty


@pytest.mark.parametrize("n, m", [(7, 7), (50, 20), (3 * 4096 + 5, 2 * 4096 + 3)])
def test_model_trial_is_the_projected_trial_and_its_model_terms(n, m):
    """Against NumPy: P(x_F + αd) with (2.13)'s signs (zero for ζ = 0 where penalized,
    unpenalized coordinates kept), the crossings (set to zero from a nonzero x_F + αd:
    not a landing exactly at zero), ∇f_Fᵀδ and the penalty's change, summed in blocks
    beyond 4,096 terms; coordinates at zero, steps landing at zero, ζ = 0."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).round(1)
    x[rng.random(n) < 0.3] = 0.0
    grad, mu = 1e3 * rng.standard_normal(n), rng.random(n)
    mu[rng.random(n) < 0.2] = 0.0                           # unpenalized
    zeta = np.sign(x)
    zeta[x == 0] = rng.choice([-1.0, 0.0, 1.0], size=np.count_nonzero(x == 0))
    free = np.sort(rng.choice(n, m, replace=False)).astype(np.int64)
    d = rng.standard_normal(m).round(1)
    land = np.flatnonzero(x[free] != 0)[:max(1, m // 4)]
    d[land] = -2.0 * x[free[land]]                          # at α = 1/2: exactly at zero
    counts = []
    for alpha in (1.0, 0.5, 2.0 ** -30):
        xn, crossed = np.full(m, np.nan), np.full(m, -1, dtype=np.int64)
        step, penalty, c = K.model_trial(x, grad, zeta, mu, free, d, alpha, xn, crossed)
        want_xn, want_crossed, want_step, want_penalty = _trial_reference(
            x, grad, zeta, mu, free, d, alpha)
        np.testing.assert_array_equal(xn, want_xn)
        np.testing.assert_array_equal(crossed[:c], want_crossed)
        scale = np.abs(grad[free] * (xn - x[free])).sum() + np.abs(mu).sum() * 10
        assert step == pytest.approx(want_step, abs=1e-13 * scale)
        assert penalty == pytest.approx(want_penalty, abs=1e-13 * scale)
        counts.append(c)
    landed = (x[free] != 0) & (x[free] + 0.5 * d == 0)    # at zero, not crossed, at α = 1/2
    assert counts[0] > 0 and landed.any()


def test_model_trial_refuses_bad_indices_and_lengths():
    x, free = np.ones(4), np.array([0, 4], dtype=np.int64)
    d, xn, crossed = np.ones(2), np.empty(2), np.empty(2, dtype=np.int64)
    with pytest.raises(IndexError, match=r"free\[1\] = 4 is outside \[0, 4\)"):
        K.model_trial(x, x, x, x, free, d, 1.0, xn, crossed)
    with pytest.raises(IndexError, match=r"free\[0\] = -1"):
        K.model_trial(x, x, x, x, np.array([-1, 0], dtype=np.int64), d, 1.0, xn, crossed)
    with pytest.raises(ValueError, match="same length"):
        K.model_trial(x, x[:3], x, x, free[:1], d[:1], 1.0, xn[:1], crossed[:1])
    with pytest.raises(ValueError, match="same length"):
        K.model_trial(x, x, x, x, free[:1], d, 1.0, xn[:1], crossed[:1])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9), st.integers(1, 6), st.data())
def test_shift_to_median_is_the_weighted_median_nearest_zero(size, blocks, data):
    """Against trying every entry of positive weight; values and weights exact in binary
    (sums exact, so ties are ties): repeated values, zeros, blocks of one sign, unpenalized
    entries and blocks."""
    values = st.sampled_from([0.0, 0.0, 1.0, 2.0, 2.0, -1.0, -3.0, 0.5, 7.25, -0.25])
    x = data.draw(arrays(np.float64, size * blocks, elements=values))
    mu = data.draw(arrays(np.float64, size * blocks,
                          elements=st.sampled_from([0.0, 0.5, 1.0, 1.0, 1.0, 2.0])))
    expected = ref.shift_to_median(x, mu, size)
    shifted = x.copy()
    count = K.shift_to_median(shifted, mu, size)
    np.testing.assert_array_equal(shifted, expected)
    moved = [not np.array_equal(x[s:s + size], shifted[s:s + size])
             for s in range(0, x.size, size)]
    assert count == sum(moved)
    again = shifted.copy()
    assert K.shift_to_median(again, mu, size) == 0      # 0 is now a median of every block
    np.testing.assert_array_equal(again, shifted)


def test_shift_to_median_ties_equal_weights_that_do_not_sum_exactly():
    """Weights of 1 / (C n) (a fit's μ): three of them and half of six need not be the same
    double, but a block of three positive and three negative entries is balanced and one
    of two positive and four negative is not."""
    m = 1 / (0.7 * 2407)
    assert (m + m) + m != 0.5 * (((((m + m) + m) + m) + m) + m)
    mu = np.full(6, m)
    balanced = np.array([0.3, -0.2, 0.5, -0.7, 0.9, -0.1])
    shifted = balanced.copy()
    assert K.shift_to_median(shifted, mu, 6) == 1
    np.testing.assert_array_equal(shifted, balanced + 0.1)        # -0.1 is nearer 0 than 0.3
    with_zero = np.array([0.3, 0.0, 0.5, -0.7, 0.9, -0.1])   # 0 a median: kept
    kept = with_zero.copy()
    assert K.shift_to_median(kept, mu, 6) == 0
    np.testing.assert_array_equal(kept, with_zero)
    heavy = np.array([-0.3, -0.2, 0.5, -0.7, 0.9, -0.1])     # four negative: the medians
    shifted = heavy.copy()                                   # are [-0.2, -0.1]
    assert K.shift_to_median(shifted, mu, 6) == 1
    np.testing.assert_array_equal(shifted, heavy + 0.1)


def test_shift_to_median_keeps_differences_and_lowers_the_penalty():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(7 * 40) + rng.choice([-5.0, 0.0, 5.0], 7 * 40)
    mu = rng.uniform(0.1, 2.0, x.size)
    shifted = x.copy()
    K.shift_to_median(shifted, mu, 7)
    np.testing.assert_allclose(np.diff(shifted.reshape(40, 7)), np.diff(x.reshape(40, 7)),
                               atol=1e-14)
    assert mu @ np.abs(shifted) < mu @ np.abs(x)
    moved = (shifted != x).reshape(40, 7).any(axis=1)
    assert moved.sum() > 10 and (shifted.reshape(40, 7)[moved] == 0.0).any(axis=1).all()
    for size in (0, 3, -7):
        with pytest.raises(ValueError, match="positive divisor"):
            K.shift_to_median(x.copy(), mu, size)
    with pytest.raises(ValueError, match="same length"):
        K.shift_to_median(x.copy(), mu[:-1], 7)


@settings(max_examples=80, deadline=None)
@given(arrays(np.float64, st.integers(1, 60),
              elements=st.sampled_from([0.0, 1.0, 2.0, 2.0, 3.0, -1.0, 7.5])),
       st.integers(0, 70))
def test_top_k_selects_the_largest_with_ties(key, k):
    idx = np.arange(key.size, dtype=np.int64)
    orig = key.copy()
    K.top_k(key, idx, k)
    np.testing.assert_array_equal(orig[idx], key)  # a permutation of (key, idx) pairs
    np.testing.assert_array_equal(np.sort(idx), np.arange(key.size))
    if 0 < k < key.size:
        assert key[:k].min() >= key[k:].max()


# ------------------------------------------------------------------ mutation-review additions
def _wide_rows(rng, n, d, dtype, index_dtype, fmt):
    """A sparse matrix whose rows/columns hold 0 to ~d entries (every remainder mod 4)."""
    X = sp.random(n, d, density=0.45, random_state=np.random.RandomState(3), format="csr")
    X.data = rng.standard_normal(X.nnz)
    X = X.astype(dtype).asformat(fmt)
    X.indices = X.indices.astype(index_dtype)
    X.indptr = X.indptr.astype(index_dtype)
    return X


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_float32_data_is_accumulated_in_float64(index_dtype):
    """float32 values with float64 vectors: every product, sum and Hessian kernel (CSC, CSR,
    dense; per-column and all-column routes) equals the float64 product on the upcast data to
    ~1e-13 (a cast or accumulator to float32 anywhere would give ~1e-7)."""
    rng = np.random.default_rng(11)
    n, d = 50, 16
    csc = _wide_rows(rng, n, d, np.float32, index_dtype, "csc")
    csr = csc.tocsr()
    csr.indices, csr.indptr = csr.indices.astype(index_dtype), csr.indptr.astype(index_dtype)
    csr.sort_indices()
    Xd = np.asfortranarray(csc.toarray())  # float32
    X64 = Xd.astype(np.float64)
    tol = dict(rtol=1e-13, atol=1e-13)
    w, r = rng.standard_normal(d), rng.standard_normal(n)
    few = np.array([1, 4, 9], dtype=np.int64)
    w_few = np.zeros(d)
    w_few[few] = w[few]
    out = np.empty(n)
    for cols, ww in ((np.arange(d, dtype=np.int64), w), (few, w_few)):
        K.margins_csc(csc.data, csc.indices, csc.indptr, ww, cols, 0.25, out)
        np.testing.assert_allclose(out, X64 @ ww + 0.25, **tol)
        K.margins_dense(Xd, ww, cols, 0.25, out)
        np.testing.assert_allclose(out, X64 @ ww + 0.25, **tol)
    K.margins_csr(csr.data, csr.indices, csr.indptr, w, 0.25, out)
    np.testing.assert_allclose(out, X64 @ w + 0.25, **tol)
    g = np.empty(d)
    for call in (lambda: K.rmatvec_csc(csc.data, csc.indices, csc.indptr, r, g),
                 lambda: K.rmatvec_csr(csr.data, csr.indices, csr.indptr, r, g),
                 lambda: K.rmatvec_dense(Xd, r, g)):
        g[:] = np.nan
        call()
        np.testing.assert_allclose(g, X64.T @ r, **tol)

    D = rng.uniform(0.1, 1.0, n)
    shuffled = np.array([7, 0, 12, 3, 15, 5, 2, 9, 11], dtype=np.int64)
    for cols in (np.arange(d, dtype=np.int64), few, shuffled):
        for intercept in (False, True):
            A = np.hstack([X64[:, cols]] + ([np.ones((n, 1))] if intercept else []))
            H = A.T @ (D[:, None] * A)
            v = rng.standard_normal(H.shape[0])
            h, tmp = np.empty(H.shape[0]), np.empty(n)
            K.hessp_csc(csc.data, csc.indices, csc.indptr, cols, D, v, intercept, tmp, h)
            np.testing.assert_allclose(h, H @ v, **tol)
            K.hessp_dense(Xd, cols, D, v, intercept, tmp, h)
            np.testing.assert_allclose(h, H @ v, **tol)
            K.hess_diag_csc(csc.data, csc.indices, csc.indptr, cols, D, intercept, h)
            np.testing.assert_allclose(h, np.diag(H), **tol)
            K.hess_diag_dense(Xd, cols, D, intercept, h)
            np.testing.assert_allclose(h, np.diag(H), **tol)
    colmap = np.full(d, -1, dtype=np.int64)
    colmap[few] = np.arange(few.size)
    G = np.zeros((few.size, few.size))
    GK.gram_csr(csr.data, csr.indices, csr.indptr, D, colmap, G)
    np.testing.assert_allclose(G, X64[:, few].T @ (D[:, None] * X64[:, few]), **tol)


def test_strided_vectors():
    """Non-contiguous weight vectors (views with a step) give the same products: the dense
    margins take their per-column route instead of handing the strided w to BLAS."""
    rng = np.random.default_rng(12)
    X = np.asfortranarray(rng.standard_normal((20, 6)))
    big = rng.standard_normal(12)
    w = big[::2]  # stride 16 bytes
    out = np.empty(20)
    K.margins_dense(X, w, np.arange(6, dtype=np.int64), 0.5, out)
    np.testing.assert_allclose(out, X @ w + 0.5, rtol=1e-13, atol=1e-13)
    csc = sp.csc_matrix(X)
    K.margins_csc(csc.data, csc.indices, csc.indptr, w, np.arange(6, dtype=np.int64), 0.5, out)
    np.testing.assert_allclose(out, X @ w + 0.5, rtol=1e-13, atol=1e-13)
    g = np.empty(6)
    K.rmatvec_csr(sp.csr_matrix(X).data, sp.csr_matrix(X).indices, sp.csr_matrix(X).indptr,
                  out[::-1], g)
    np.testing.assert_allclose(g, X.T @ out[::-1], rtol=1e-13, atol=1e-13)


def test_cg_dense_reports_how_it_ended():
    """cg_dense returns its products and its exit: the tolerance met (the residual below
    it), the radius or a nonpositive curvature (p on the boundary), or out of iterations
    (neither), with r = b + (G + reg I) p in every case."""
    rng = np.random.default_rng(3)
    A = rng.standard_normal((30, 30))
    spd = A @ A.T + 0.1 * np.eye(30)
    ill = spd + np.diag(np.logspace(0, 9, 30))
    b = rng.standard_normal(30)
    ones = np.ones(30)
    cases = [(spd, 1e6, 200, K.CG_CONVERGED), (spd, 1e-3, 200, K.CG_BOUNDARY),
             (A + A.T, 1e6, 200, K.CG_BOUNDARY), (ill, 1e6, 3, K.CG_MAXITER),
             (np.zeros((30, 30)), 1.0, 200, K.CG_BOUNDARY)]   # zero curvature: no division
    for G, radius, maxiter, expected in cases:
        p, r = np.zeros(30), b.copy()
        bnorm = np.abs(b).max()
        it, ended = K.cg_dense(G, b, bnorm, 0.0, 1e-8, maxiter, radius, ones, ones, p, r)
        assert ended == expected and 1 <= it <= maxiter
        np.testing.assert_allclose(r, b + G @ p, atol=1e-8 * np.abs(b).max())
        if expected == K.CG_CONVERGED:
            assert np.abs(r).max() <= 1e-8 * bnorm
        elif expected == K.CG_BOUNDARY:
            assert np.linalg.norm(p) == pytest.approx(radius, rel=1e-12)
        else:
            assert it == maxiter and np.abs(r).max() > 1e-8 * bnorm
            assert np.linalg.norm(p) < radius
    p, r = np.zeros(0), np.zeros(0)
    assert K.cg_dense(np.zeros((0, 0)), p, 0.0, 0.0, 0.1, 10, 1.0, p, p, p, r) \
        == (0, K.CG_CONVERGED)
