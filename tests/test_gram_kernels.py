"""The Gram kernels (sparsekit._cython._gram_kernels) against plain NumPy references: the
subspace Hessians formed from CSR rows and dense panels, their updates and cross blocks, row
statistics and principal sub-matrices."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit._cython import _gram_kernels as GK
from test_oba_kernels import _matrix


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("intercept", [False, True])
def test_gram_update_and_cross_kernels(dtype, intercept):
    """gram_csr_syrk's signed accumulation and gram_csr_cross (the rows of the Gram that belong
    to some free columns) against NumPy, with an empty row, a zero weight and panels of 7."""
    rng = np.random.default_rng(5)
    R = _matrix(rng, 40, 15, dtype)
    cols = np.array([0, 1, 4, 5, 8, 9, 13], dtype=np.int64)
    k = cols.size
    A = np.hstack([R.toarray()[:, cols].astype(np.float64)]
                  + ([np.ones((40, 1))] if intercept else []))
    D, W = rng.uniform(0, 0.25, 40), rng.uniform(0, 0.25, 40)
    D[3] = W[4] = 0.0
    colmap = np.full(15, -1, dtype=np.int64)
    colmap[cols] = np.arange(k)

    G0 = A.T @ (D[:, None] * A)
    G = G0.copy()
    GK.gram_csr_syrk(R.data, R.indices, R.indptr, W, colmap, intercept, G, 7, sign=-1.0,
                    accumulate=True)
    expected = G0 - A.T @ (W[:, None] * A)
    np.testing.assert_allclose(G, expected, rtol=0, atol=1e-6 * np.abs(G0).max())
    np.testing.assert_array_equal(G, G.T)

    rowmap = np.full(k, -1, dtype=np.int64)
    rowmap[[1, 4]] = [0, 1]  # the free positions 1 and 4 (columns 1, empty, and 8)
    B = np.full((2, k + intercept), np.nan)
    GK.gram_csr_cross(R.data, R.indices, R.indptr, D, colmap, rowmap, intercept, B)
    np.testing.assert_allclose(B, G0[[1, 4]], rtol=1e-12, atol=1e-15)
    assert np.all(B[0] == 0.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("intercept", [False, True])
def test_gram_dense_syrk(dtype, intercept):
    """The dense float32-panel Gram over listed rows (panels of 7, a partial last one, rows
    with zero weight left out), formed and as a signed accumulation, against NumPy."""
    rng = np.random.default_rng(6)
    X = np.asfortranarray(rng.standard_normal((40, 9)).astype(dtype))
    W = rng.uniform(0, 1, 40)
    W[[3, 7]] = 0.0
    rows = np.flatnonzero(W > 0)
    cols = np.array([0, 2, 3, 8], dtype=np.int64)
    A = X[:, cols].astype(np.float64)
    if intercept:
        A = np.hstack([A, np.ones((40, 1))])
    H = A.T @ (W[:, None] * A)
    G = np.full(H.shape, np.nan)
    GK.gram_dense_syrk(X, rows, W, cols, intercept, G, 7)
    np.testing.assert_allclose(G, H, rtol=0, atol=1e-6 * np.abs(H).max())
    np.testing.assert_array_equal(G, G.T)
    GK.gram_dense_syrk(X, rows, W, cols, intercept, G, 7, sign=-1.0, accumulate=True)
    np.testing.assert_allclose(G, 0.0, rtol=0, atol=1e-6 * np.abs(H).max())


def test_gram_csr_every_row_length():
    """The four-rows-at-a-time Gram kernel against NumPy on rows of 0 to 11 free entries
    (every remainder mod 4), with non-free columns interleaved."""
    rng = np.random.default_rng(7)
    n, p = 60, 30
    rows = []
    for i in range(n):
        cols = rng.choice(p, size=i % 12, replace=False)
        rows.append(np.bincount(cols, weights=rng.standard_normal(cols.size), minlength=p))
    X = sp.csr_matrix(np.array(rows))
    X.sort_indices()
    free = np.sort(rng.choice(p, size=20, replace=False))
    colmap = np.full(p, -1, dtype=np.int64)
    colmap[free] = np.arange(free.size)
    D = rng.uniform(0, 1, n)
    G = np.zeros((free.size, free.size))
    GK.gram_csr(X.data, X.indices, X.indptr, D, colmap, G)
    A = X.toarray()[:, free]
    np.testing.assert_allclose(G, A.T @ (D[:, None] * A), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 97])
@pytest.mark.parametrize("threads", [2, 3, 7, 64])
def test_gram_csr_on_threads_adds_the_blocks_sums(n, threads):
    """gram_csr on threads: the rows cut into consecutive blocks of about as many entries
    (more threads than rows, empty rows, rows with no free entry, zero weights, int64
    indices), each block's Gram added to the given G in the blocks' order; against NumPy,
    against one thread (the same sums but for their grouping), and the same G bit for bit
    at each call with the same thread count."""
    rng = np.random.default_rng(8)
    p = 40
    dense = rng.standard_normal((n, p)) * (rng.uniform(size=(n, p)) < 0.3)
    if n > 3:
        dense[1] = 0.0                 # an empty row
        dense[2, :] = 0.0
        dense[2, 39] = 1.5             # a row with no free entry
    X = sp.csr_matrix(dense)
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    free = np.sort(rng.choice(p - 1, size=25, replace=False))
    colmap = np.full(p, -1, dtype=np.int64)
    colmap[free] = np.arange(free.size)
    D = rng.uniform(0, 1, n) * (rng.uniform(size=n) < 0.8)
    M = rng.standard_normal((free.size, free.size))
    M = M + M.T
    one, G, again = M.copy(), M.copy(), M.copy()
    GK.gram_csr(X.data, X.indices, X.indptr, D, colmap, one)
    GK.gram_csr(X.data, X.indices, X.indptr, D, colmap, G, threads)
    GK.gram_csr(X.data, X.indices, X.indptr, D, colmap, again, threads)
    A = dense[:, free]
    np.testing.assert_allclose(G, M + A.T @ (D[:, None] * A), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(G, one, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(G, G.T)
    np.testing.assert_array_equal(G, again)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_stats_and_lipschitz_bound_sparse_equals_dense(dtype):
    """Per-row counts and squared norms in one pass (empty rows included), and the Logistic
    datafit's Lipschitz bound equal from CSR/CSC and dense input."""
    from sparsekit.losses._logistic_datafit import Logistic

    rng = np.random.default_rng(8)
    X = _matrix(rng, 30, 9, dtype)
    X = sp.csc_matrix(X.toarray() * (np.arange(30) % 5 != 0)[:, None])  # empty rows
    row_nnz, row_sq = np.empty(30), np.empty(30)
    GK.row_stats_csc(X.data, X.indices, row_nnz, row_sq)
    Xd = X.toarray().astype(np.float64)
    np.testing.assert_array_equal(row_nnz, (Xd != 0).sum(axis=1))
    np.testing.assert_allclose(row_sq, (Xd ** 2).sum(axis=1), rtol=1e-12)
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    for intercept in (False, True):
        bounds = [Logistic(A, y, fit_intercept=intercept).lipschitz()
                  for A in (X, X.tocsr(), np.asfortranarray(Xd))]
        np.testing.assert_allclose(bounds, bounds[0], rtol=1e-12)
        A1 = np.hstack([Xd, np.ones((30, int(intercept)))])
        assert bounds[0] >= np.linalg.eigvalsh(A1.T @ A1 / 30).max() / 4 - 1e-12


@pytest.mark.parametrize("intercept", [False, True])
def test_gram_csr_cross_every_requested_row(intercept):
    """gram_csr_cross fills every requested row of B, B's first row included (nonempty
    columns only), in any order of N, and leaves no trace of the rows it does not request."""
    rng = np.random.default_rng(13)
    R = _matrix(rng, 40, 15, np.float64)
    cols = np.array([0, 2, 4, 5, 8, 9, 13], dtype=np.int64)
    k = cols.size
    A = np.hstack([R.toarray()[:, cols]] + ([np.ones((40, 1))] if intercept else []))
    D = rng.uniform(0, 0.25, 40)
    D[3] = 0.0
    G0 = A.T @ (D[:, None] * A)
    colmap = np.full(15, -1, dtype=np.int64)
    colmap[cols] = np.arange(k)
    rowmap = np.full(k, -1, dtype=np.int64)
    rowmap[[6, 0, 3]] = [0, 1, 2]
    B = np.full((3, k + intercept), np.nan)
    GK.gram_csr_cross(R.data, R.indices, R.indptr, D, colmap, rowmap, intercept, B)
    np.testing.assert_allclose(B, G0[[6, 0, 3]], rtol=1e-12, atol=1e-15)
    assert np.all(B != 0.0)


def test_gram_csr_adds_to_G_and_take_columns_writes_the_whole_indptr():
    """gram_csr adds X_Fᵀ diag(D) X_F to the G it is given (its contract: ``G +=``), and
    take_columns_csc writes every entry of the output indptr (its first one included)."""
    rng = np.random.default_rng(14)
    R = _matrix(rng, 30, 10, np.float64)
    R.sort_indices()
    free = np.array([0, 2, 3, 7, 9], dtype=np.int64)
    colmap = np.full(10, -1, dtype=np.int64)
    colmap[free] = np.arange(free.size)
    D = rng.uniform(0, 1, 30)
    M = rng.standard_normal((5, 5))
    M = M + M.T
    G = M.copy()
    GK.gram_csr(R.data, R.indices, R.indptr, D, colmap, G)
    A = R.toarray()[:, free]
    np.testing.assert_allclose(G, M + A.T @ (D[:, None] * A), rtol=1e-12, atol=1e-12)

    C = R.tocsc()
    nnz = int(np.diff(C.indptr)[free].sum())
    data, idx = np.full(nnz, np.nan), np.full(nnz, -5, dtype=C.indices.dtype)
    ind = np.full(free.size + 1, 77, dtype=C.indptr.dtype)
    GK.take_columns_csc(C.data, C.indices, C.indptr, free, data, idx, ind)
    T = C[:, free]
    np.testing.assert_array_equal(ind, T.indptr)
    np.testing.assert_array_equal(idx, T.indices)
    np.testing.assert_array_equal(data, T.data)


def test_gram_kernels_when_the_last_row_is_the_longest():
    """gram_csr and gram_csr_cross size their row buffers over every row, the last one
    included (here the only long row: a buffer sized on the others overflows the heap)."""
    rng = np.random.default_rng(15)
    n, p = 12, 400
    dense = np.zeros((n, p))
    for i in range(n - 1):
        dense[i, rng.choice(p, 2, replace=False)] = rng.standard_normal(2)
    dense[-1] = rng.standard_normal(p)
    X = sp.csr_matrix(dense)
    X.sort_indices()
    free = np.arange(0, p, 2, dtype=np.int64)
    colmap = np.full(p, -1, dtype=np.int64)
    colmap[free] = np.arange(free.size)
    D = rng.uniform(0.5, 1, n)
    A = dense[:, free]
    H = A.T @ (D[:, None] * A)
    G = np.zeros((free.size, free.size))
    GK.gram_csr(X.data, X.indices, X.indptr, D, colmap, G)
    np.testing.assert_allclose(G, H, rtol=1e-12, atol=1e-12)
    rowmap = np.full(free.size, -1, dtype=np.int64)
    rowmap[[0, 5]] = [0, 1]
    B = np.full((2, free.size), np.nan)
    GK.gram_csr_cross(X.data, X.indices, X.indptr, D, colmap, rowmap, False, B)
    np.testing.assert_allclose(B, H[[0, 5]], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", [0, 1, 7, 150])
def test_principal_submatrix_is_numpys_and_refuses_bad_indices(size):
    """principal_submatrix(G, idx) is G[np.ix_(idx, idx)] for sorted, unsorted and
    repeated indices (none, one, all), a new C-ordered array; an index outside [0, len(G))
    and a non-square G raise ValueError."""
    rng = np.random.default_rng(size)
    G = rng.standard_normal((size, size))
    picks = [np.arange(size), rng.permutation(size), np.sort(rng.choice(size, size // 2))]
    if size:
        picks += [rng.integers(0, size, 2 * size), np.array([size - 1])]
    for idx in picks:
        idx = idx.astype(np.intp)
        out = GK.principal_submatrix(G, idx)
        assert out.flags.c_contiguous and not np.shares_memory(out, G)
        np.testing.assert_array_equal(out, G[np.ix_(idx, idx)])
    for bad in ([size], [-1]):
        with pytest.raises(ValueError, match="outside"):
            GK.principal_submatrix(G, np.array(bad, dtype=np.intp))
    with pytest.raises(ValueError, match="square"):
        GK.principal_submatrix(np.zeros((3, 4)), np.arange(2, dtype=np.intp))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("intercept", [False, True])
def test_panel_grams_on_threads_give_the_same_sums(dtype, intercept):
    """gram_csr_syrk and gram_dense_syrk on 2, 3, 6 and 64 threads (more than the panels)
    form and update the Gram of one thread bit for bit: each panel's product is the same
    call, and the products are added in the panels' order (panels of 7 over 40 rows, two
    rows of zero weight, an empty row, a partial last panel; no free column at all)."""
    rng = np.random.default_rng(8)
    R = _matrix(rng, 40, 15, dtype)
    X = np.asfortranarray(R.toarray())
    W = rng.uniform(0, 1, 40)
    W[[3, 7]] = 0.0
    rows = np.flatnonzero(W > 0)
    for cols in (np.array([0, 1, 4, 5, 8, 9, 13], dtype=np.int64), np.zeros(0, np.int64)):
        k = cols.size + intercept
        colmap = np.full(15, -1, dtype=np.int64)
        colmap[cols] = np.arange(cols.size)

        def grams(T):
            G_csr, G_dense = np.empty((k, k)), np.empty((k, k))
            GK.gram_csr_syrk(R.data, R.indices, R.indptr, W, colmap, intercept, G_csr, 7,
                             n_threads=T)
            GK.gram_dense_syrk(X, rows, W, cols, intercept, G_dense, 7, n_threads=T)
            updated = G_dense.copy()
            GK.gram_dense_syrk(X, rows[::2], W, cols, intercept, updated, 7, sign=-1.0,
                               accumulate=True, n_threads=T)
            return G_csr, G_dense, updated
        one = grams(1)
        A = np.hstack([X[:, cols].astype(np.float64)] + ([np.ones((40, 1))] * intercept))
        H = A.T @ (W[:, None] * A)
        np.testing.assert_allclose(one[0], H, rtol=0, atol=1e-6 * np.abs(H).max(initial=1.0))
        np.testing.assert_allclose(one[1], H, rtol=0, atol=1e-6 * np.abs(H).max(initial=1.0))
        for T in (2, 3, 6, 64):
            for got, want in zip(grams(T), one):
                np.testing.assert_array_equal(got, want)
