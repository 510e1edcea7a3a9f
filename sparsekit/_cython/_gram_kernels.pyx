# cython: language_level=3
"""Explicit subspace Hessians of the logistic datafit: Grams ``X_F^T diag(D) X_F`` (plus the
intercept's row and column) over a set F of free columns, formed when a Newton-CG solve
would need more Hessian-vector products than the Gram costs.

Sparse X is walked by rows (CSR): each row's free entries are gathered through a column map
(``colmap[j]`` = position of column j in F, or -1) and their products accumulated into the
dense Gram, four rows of G at a time; ``gram_csr_syrk`` and ``gram_dense_syrk`` instead
gather rows scaled by sqrt(D) into float32 panels accumulated by BLAS ``ssyrk`` into a
float64 Gram (relative error ~1e-7, below the CG's forcing). The multinomial datafit's
subspace Hessians (``mn_*``) are formed the same two ways, from the stored entries
(``mn_gram_csr``, one row of the Hessian at a time) or by BLAS on densified blocks of rows
(``mn_gram_dense``; the rows of a few entries, ``mn_gram_rows_dense``); their block-Jacobi
preconditioner keeps the blocks of one class's entries (``mn_class_blocks_csr``, or by
BLAS ``mn_class_blocks_dense``; factored and applied by ``block_cholesky`` and
``block_solve``). Values may be float32 or float64 (fused ``floating``); index arrays int32
or int64.

A dense X of mostly zeros is copied to CSR in two passes (``dense_row_ends``, then
``dense_compress_rows``) for the kernels of a sparse X, which read only its stored entries.
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport prange
from libc.math cimport fabs, sqrt
from libc.string cimport memset
from scipy.linalg.cython_blas cimport dgemm, dsyrk, ssyrk
from scipy.linalg.cython_lapack cimport dpotrf, dpotrs

from sparsekit._cython._common cimport (PANEL_NUMBERS, bad_cols, bad_csr,
                                        bad_free_entries, gather_panel, index_t)


cdef Py_ssize_t _max_row_length(const index_t[::1] indptr, Py_ssize_t n):
    """The largest number of stored entries in a row of the first ``n`` rows."""
    cdef Py_ssize_t i, width = 1
    for i in range(n):
        width = max(width, indptr[i + 1] - indptr[i])
    return width


cdef inline Py_ssize_t _gather_free(const floating* data, const index_t* indices,
                                    Py_ssize_t begin, Py_ssize_t end, const long long* colmap,
                                    long long* pos, double* val) noexcept nogil:
    """The entries ``begin:end`` of a CSR row in free columns: their positions in F and
    values go to ``pos`` and ``val``; returns how many there are."""
    cdef Py_ssize_t p, t = 0
    cdef long long a
    for p in range(begin, end):  # branch-free: free entries are unpredictable when F is a
        a = colmap[indices[p]]    # fraction of the columns (w8a, ~half: 1.3x faster Gram)
        pos[t] = a
        val[t] = data[p]
        t += a >= 0
    return t


def gram_csr(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
             const double[:] D, const long long[::1] colmap, double[:, ::1] G,
             int n_threads=1):
    """``G += X[:, F]^T diag(D) X[:, F]`` for CSR ``X`` with sorted row indices.

    ``colmap[j]`` is the position of column j in the free set F (increasing in j), or -1
    when j is not free. Each row's free entries are gathered once, then their outer product
    is added to the upper triangle (Σᵢ nnzᵢ(F)²/2 updates), four rows of G per pass over the
    row's entries (2.5× faster than one on a9a and w8a: each loaded entry serves four
    updates); the triangle is mirrored at the end. Used to form the subspace Hessian
    explicitly when that is cheaper than the CG's matrix-free products.

    With ``n_threads`` > 1 the rows are cut into that many consecutive blocks of about as
    many stored entries; the first block's updates go to ``G``, each other's to a k×k
    buffer of its own, and the buffers are added to ``G`` in their order: a fixed sum for
    a given ``n_threads``, which rounds otherwise than one thread's.
    """
    cdef Py_ssize_t n = D.shape[0], k = G.shape[0], t, a, r
    cdef Py_ssize_t T = max(1, min(<Py_ssize_t>n_threads, n))
    if k == 0 or n == 0:
        return
    if indptr.shape[0] < n + 1 or colmap.shape[0] == 0 or G.shape[1] != k:
        raise ValueError("gram_csr: indptr needs D's rows + 1 entries, colmap an entry per "
                         "column of X and G must be square")
    cdef Py_ssize_t width = _max_row_length(indptr, n)
    cdef long long[:, ::1] pos = np.empty((T, width), dtype=np.int64)
    cdef double[:, ::1] val = np.empty((T, width))
    cdef Py_ssize_t[::1] bounds = _row_blocks(indptr, n, T)
    cdef double[:, :, ::1] parts = np.zeros((T - 1, k, k))
    with nogil:
        if T == 1:
            _gram_rows(data, indices, indptr, D, colmap, &G[0, 0], k, 0, n, &pos[0, 0],
                       &val[0, 0])
        else:
            for t in prange(T, num_threads=T, schedule="static", chunksize=1):
                _gram_rows(data, indices, indptr, D, colmap,
                           &G[0, 0] if t == 0 else &parts[t - 1, 0, 0], k, bounds[t],
                           bounds[t + 1], &pos[t, 0], &val[t, 0])
            for t in range(T - 1):
                for a in range(k):
                    for r in range(a, k):
                        G[a, r] += parts[t, a, r]
        _mirror_upper(G, k)


cdef Py_ssize_t[::1] _row_blocks(const index_t[::1] indptr, Py_ssize_t n, Py_ssize_t T):
    """``T + 1`` row bounds cutting the first ``n`` rows of a CSR matrix into ``T``
    consecutive blocks of about as many stored entries (0 and n at the ends)."""
    cdef Py_ssize_t[::1] bounds = np.empty(T + 1, dtype=np.intp)
    cdef Py_ssize_t t, i = 0
    cdef double total = indptr[n] - indptr[0]
    bounds[0] = 0
    for t in range(1, T):
        while i < n and indptr[i] - indptr[0] < total * t / T:
            i += 1
        bounds[t] = i
    bounds[T] = n
    return bounds


cdef void _gram_rows(const floating[::1] data, const index_t[::1] indices,
                     const index_t[::1] indptr, const double[:] D,
                     const long long[::1] colmap, double* G, Py_ssize_t ld,
                     Py_ssize_t begin, Py_ssize_t end, long long* pos,
                     double* val) noexcept nogil:
    """:func:`gram_csr`'s updates of the rows ``begin:end`` to the upper triangle of the
    row-major ``G`` (row stride ``ld``); ``pos`` and ``val`` hold a row's free entries."""
    cdef Py_ssize_t i, p, q, r, t
    cdef double di, d0, d1, d2, d3, v
    cdef double *G0
    cdef double *G1
    cdef double *G2
    cdef double *G3
    cdef long long c
    for i in range(begin, end):
        di = D[i]
        if di == 0.0:
            continue
        t = _gather_free(&data[0], &indices[0], indptr[i], indptr[i + 1], &colmap[0], pos,
                         val)
        p = 0
        while p + 3 < t:  # rows pos[p..p+3] of G: their 4×4 corner, then the rest
            d0, d1, d2, d3 = di * val[p], di * val[p + 1], di * val[p + 2], di * val[p + 3]
            G0, G1 = G + pos[p] * ld, G + pos[p + 1] * ld
            G2, G3 = G + pos[p + 2] * ld, G + pos[p + 3] * ld
            G0[pos[p]] += d0 * val[p]
            G0[pos[p + 1]] += d0 * val[p + 1]
            G1[pos[p + 1]] += d1 * val[p + 1]
            G0[pos[p + 2]] += d0 * val[p + 2]
            G1[pos[p + 2]] += d1 * val[p + 2]
            G2[pos[p + 2]] += d2 * val[p + 2]
            for q in range(p + 3, t):
                c, v = pos[q], val[q]
                G0[c] += d0 * v
                G1[c] += d1 * v
                G2[c] += d2 * v
                G3[c] += d3 * v
            p += 4
        for r in range(p, t):  # the last rows, one at a time
            d0 = di * val[r]
            G0 = G + pos[r] * ld
            for q in range(r, t):
                G0[pos[q]] += d0 * val[q]


def gram_csr_syrk(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, const double[:] D, const long long[:] colmap,
                  bint intercept, double[:, ::1] G, Py_ssize_t block=4096,
                  double sign=1.0, bint accumulate=False, int n_threads=1):
    """``G = [X_F, 1]^T diag(D) [X_F, 1]`` for CSR ``X`` through float32 ``ssyrk``.

    The route for a dense free slice (MNIST: ~30% of its entries are nonzero), where the
    scattered updates of :func:`gram_csr` cost ~0.7 ns each and a BLAS rank-k update
    ~0.03 ns per multiply-add: rows with ``D > 0`` are scaled by √D and gathered, ``block``
    at a time, into a dense float32 panel (the intercept as a last column of √D when
    ``intercept``); each panel's ``ssyrk`` is added to the float64 ``G`` (so float32 sums
    run over at most ``block`` rows: relative error ~1e-7, enough for a Newton direction
    that CG solves to 10%). ``colmap`` is as in :func:`gram_csr`; ``G`` is overwritten, or
    with ``accumulate`` the product times ``sign`` is added to it (an update by the rows
    whose weights changed). With ``n_threads`` > 1 the panels are formed and multiplied
    on that many threads at a time and added to ``G`` in their order (the same sums).
    """
    cdef Py_ssize_t k = G.shape[0], t, r
    cdef const long long[::1] rows = np.flatnonzero(np.asarray(D) > 0)
    cdef Py_ssize_t nr = rows.shape[0], n_panels = (nr + block - 1) // block if k > 0 else 0
    cdef Py_ssize_t T = max(1, min(<Py_ssize_t>n_threads, n_panels)), m
    # a last, unused row takes the entries outside F (a branch-free gather: 1.3x faster
    # where F is a scattered part of the columns); one panel and product per thread
    cdef float[::1, :] panels = np.zeros((k + 1, T * block), dtype=np.float32, order="F")
    cdef float[::1, :] C = np.zeros((max(k, 1), T * max(k, 1)), dtype=np.float32, order="F")
    if not accumulate:
        G[:, :] = 0.0
    with nogil:
        r = 0
        while r < n_panels:
            m = min(T, n_panels - r)
            if m == 1:
                _csr_panel_product(data, indices, indptr, D, colmap, intercept, rows, r, block,
                                   panels, 0, C)
            else:
                for t in prange(m, num_threads=m, schedule="static", chunksize=1):
                    _csr_panel_product(data, indices, indptr, D, colmap, intercept, rows, r + t,
                                       block, panels, t, C)
            _add_products(G, C, m, sign)
            r = r + m
        _mirror_upper(G, G.shape[0])


cdef void _csr_panel_product(const floating[::1] data, const index_t[::1] indices,
                             const index_t[::1] indptr, const double[:] D,
                             const long long[:] colmap, bint intercept,
                             const long long[::1] rows, Py_ssize_t panel, Py_ssize_t block,
                             float[::1, :] panels, Py_ssize_t t,
                             float[::1, :] C) noexcept nogil:
    """:func:`gram_csr_syrk`'s panel ``panel`` (its rows ``rows[panel * block:]``) gathered
    into slot ``t`` of ``panels`` and its product into slot ``t`` of ``C``; the slot is
    left zero."""
    cdef Py_ssize_t k = C.shape[0], u, p, a, i
    cdef Py_ssize_t nf = k - intercept, start = panel * block
    cdef Py_ssize_t used = min(block, rows.shape[0] - start)
    cdef float s
    for u in range(used):
        i = rows[start + u]
        s = <float>sqrt(D[i])
        for p in range(indptr[i], indptr[i + 1]):
            a = colmap[indices[p]]
            panels[a + (a < 0) * (k + 1), t * block + u] = s * <float>data[p]
        if intercept:
            panels[nf, t * block + u] = s
    _panel_syrk(b"N", k, used, &panels[0, t * block], k + 1, &C[0, t * k], k)
    memset(&panels[0, t * block], 0, (k + 1) * used * sizeof(float))


def gram_dense_syrk(const floating[::1, :] X, const long long[:] rows, const double[:] W,
                    const long long[:] cols, bint intercept, double[:, ::1] G,
                    Py_ssize_t block=4096, double sign=1.0, bint accumulate=False,
                    int n_threads=1):
    """``G = [X_F, 1]^T diag(W) [X_F, 1]`` over the listed ``rows`` of a dense ``X``.

    The dense (Fortran-ordered) counterpart of :func:`gram_csr_syrk`: ``block`` rows at a time
    are scaled by √W and gathered, column by column, into a float32 panel whose ``ssyrk``
    is added to the float64 ``G`` (relative error ~1e-7). ``rows`` lists the rows to use
    (their ``W`` must be positive; the others are left out); ``G`` is overwritten, or with
    ``accumulate`` the product times ``sign`` is added to it. With ``n_threads`` > 1 the
    panels are formed and multiplied on that many threads at a time and added to ``G`` in
    their order (the same sums).
    """
    cdef Py_ssize_t k = G.shape[0], nr = rows.shape[0]
    cdef Py_ssize_t n_panels = (nr + block - 1) // block if k > 0 else 0
    cdef Py_ssize_t T = max(1, min(<Py_ssize_t>n_threads, n_panels))
    cdef Py_ssize_t t, m, r
    cdef float[::1, :] panels = np.zeros((block, T * max(k, 1)), dtype=np.float32, order="F")
    cdef float[::1, :] C = np.zeros((max(k, 1), T * max(k, 1)), dtype=np.float32, order="F")
    cdef float[::1] root = np.empty(T * block, dtype=np.float32)
    if not accumulate:
        G[:, :] = 0.0
    with nogil:
        r = 0
        while r < n_panels:
            m = min(T, n_panels - r)
            if m == 1:
                _dense_panel_product(X, rows, W, cols, intercept, r, block, panels, root, 0, C)
            else:
                for t in prange(m, num_threads=m, schedule="static", chunksize=1):
                    _dense_panel_product(X, rows, W, cols, intercept, r + t, block, panels,
                                         root, t, C)
            _add_products(G, C, m, sign)
            r = r + m
        _mirror_upper(G, G.shape[0])


cdef void _dense_panel_product(const floating[::1, :] X, const long long[:] rows,
                               const double[:] W, const long long[:] cols, bint intercept,
                               Py_ssize_t panel, Py_ssize_t block, float[::1, :] panels,
                               float[::1] root, Py_ssize_t t,
                               float[::1, :] C) noexcept nogil:
    """:func:`gram_dense_syrk`'s panel ``panel`` (the listed rows ``rows[panel * block:]``)
    scaled into slot ``t`` of ``panels`` and its product into slot ``t`` of ``C``."""
    cdef Py_ssize_t k = C.shape[0], nf = k - intercept, start = panel * block, a, u, j
    cdef Py_ssize_t used = min(block, rows.shape[0] - start)
    cdef float* sq = &root[t * block]
    for u in range(used):
        sq[u] = <float>sqrt(W[rows[start + u]])
    for a in range(nf):
        j = cols[a]
        for u in range(used):
            panels[u, t * k + a] = sq[u] * <float>X[rows[start + u], j]
    if intercept:
        for u in range(used):
            panels[u, t * k + nf] = sq[u]
    _panel_syrk(b"T", k, used, &panels[0, t * k], block, &C[0, t * k], k)


cdef void _panel_syrk(char* trans, Py_ssize_t k, Py_ssize_t used, float* panel,
                      Py_ssize_t ld_panel, float* C, Py_ssize_t ldc) noexcept nogil:
    """The upper triangle of ``C = P^T P`` by ``ssyrk``, where P is a panel's first ``used``
    rows (``trans = "T"``, a rows × k panel) or columns (``trans = "N"``, a k × rows
    panel)."""
    cdef int kk = <int>k, rows = <int>used, lda = <int>ld_panel, ldcc = <int>ldc
    cdef float one = 1.0, zero = 0.0
    cdef char* uplo = b"U"
    ssyrk(uplo, trans, &kk, &rows, &one, panel, &lda, &zero, C, &ldcc)


cdef void _add_products(double[:, ::1] G, float[::1, :] C, Py_ssize_t m,
                        double sign) noexcept nogil:
    """``G += sign (C_0 + ... + C_{m-1})`` on the upper triangle, the k × k blocks C_t of
    ``C`` added in their order to each entry (a panel's product at a time, as on one
    thread); G's columns among the threads when there are several."""
    cdef Py_ssize_t a, b, t, k = G.shape[0]
    if m == 1:
        for b in range(k):
            for a in range(b + 1):
                G[a, b] += sign * C[a, b]
        return
    for b in prange(k, num_threads=m, schedule="static"):
        for t in range(m):
            for a in range(b + 1):
                G[a, b] += sign * C[a, t * k + b]


cdef void _mirror_upper(double[:, ::1] G, Py_ssize_t rows) noexcept nogil:
    """Copy the upper triangle of the first ``rows`` rows of ``G`` onto the lower one."""
    cdef Py_ssize_t a, b
    for a in range(rows):
        for b in range(a + 1, G.shape[0]):
            G[b, a] = G[a, b]


def gram_csr_cross(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const double[:] D, const long long[::1] colmap,
                   const long long[:] newmap, bint intercept, double[:, ::1] B):
    """The rows of ``[X_F, 1]^T diag(D) [X_F, 1]`` that belong to the columns ``N ⊂ F``.

    ``colmap`` is as in :func:`gram_csr` (position in F of each column of the CSR ``X``, or
    -1); ``newmap[a]`` is the row of ``B`` of the free position ``a``, or -1 when ``a`` is not
    in N. ``B`` (|N| × (|F| + intercept)) is overwritten; each row of X costs
    nnzᵢ(N) · nnzᵢ(F) updates, so a free set that gained few columns is completed at a small
    fraction of a whole Gram.
    """
    cdef Py_ssize_t i, p, q, t, r, nf = B.shape[1] - intercept
    cdef double dv
    cdef double *row
    cdef Py_ssize_t width = _max_row_length(indptr, D.shape[0])
    cdef long long[::1] pos = np.empty(width, dtype=np.int64)
    cdef double[::1] val = np.empty(width)
    B[:, :] = 0.0
    with nogil:
        for i in range(D.shape[0]):
            if D[i] == 0.0:
                continue
            t = _gather_free(&data[0], &indices[0], indptr[i], indptr[i + 1], &colmap[0],
                             &pos[0], &val[0])
            for p in range(t):
                r = newmap[pos[p]]
                if r < 0:
                    continue
                dv = D[i] * val[p]
                row = &B[r, 0]
                for q in range(t):
                    row[pos[q]] += dv * val[q]
                if intercept:
                    row[nf] += dv


def row_stats_csc(const floating[::1] data, const index_t[::1] indices, double[::1] row_nnz,
                  double[::1] row_sq):
    """Per row of a CSC (or any compressed) matrix: the count of stored entries and the sum of
    their squares, in one pass (``row_nnz`` and ``row_sq`` are overwritten)."""
    cdef Py_ssize_t p, i
    cdef double v
    with nogil:
        for i in range(row_nnz.shape[0]):
            row_nnz[i] = 0.0
            row_sq[i] = 0.0
        for p in range(indices.shape[0]):
            i = indices[p]
            v = data[p]
            row_nnz[i] += 1.0
            row_sq[i] += v * v


def row_sq_norms_csr(const floating[::1] data, const index_t[::1] indptr,
                     double[::1] row_sq):
    """Per row of a CSR matrix: the sum of the squares of its stored entries in float64
    (``row_sq`` is overwritten). ``ValueError`` unless ``indptr`` holds n + 1 offsets that
    start at 0 or above, never decrease and end within ``data``."""
    cdef Py_ssize_t p, i, n = row_sq.shape[0]
    cdef double v, total
    if indptr.shape[0] != n + 1 or indptr[0] < 0 or indptr[n] > data.shape[0]:
        raise ValueError("row_sq_norms_csr: indptr does not fit the rows or the data")
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            raise ValueError("row_sq_norms_csr: indptr decreases")
    with nogil:
        for i in range(n):
            total = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                v = data[p]
                total += v * v
            row_sq[i] = total


def column_stats_csr(const floating[::1] data, const index_t[::1] indices,
                     const index_t[::1] indptr, const double[::1] sample_weight,
                     double[::1] squares, double[::1] counts):
    """Per column j of a CSR matrix: ``Σᵢ sᵢ xᵢⱼ²`` and ``Σᵢ sᵢ [xᵢⱼ ≠ 0]`` in float64, in
    one pass over the stored entries (``squares`` and ``counts``, of one entry per column,
    are overwritten; stored zeros count in neither, duplicate entries each).
    ``ValueError`` unless ``indptr`` and ``indices`` describe ``sample_weight``'s rows
    within the columns."""
    cdef Py_ssize_t p, i, j, n = sample_weight.shape[0]
    cdef double v, s
    if (indptr.shape[0] != n + 1 or counts.shape[0] != squares.shape[0]
            or bad_csr(indices, indptr, data.shape[0], squares.shape[0])):
        raise ValueError("column_stats_csr: indptr or indices do not fit the rows, the "
                         "data or the columns")
    with nogil:
        for j in range(squares.shape[0]):
            squares[j] = 0.0
            counts[j] = 0.0
        for i in range(n):
            s = sample_weight[i]
            for p in range(indptr[i], indptr[i + 1]):
                v = data[p]
                if v != 0.0:
                    j = indices[p]
                    squares[j] += s * v * v
                    counts[j] += s


def principal_submatrix(const double[:, ::1] G, const Py_ssize_t[::1] idx):
    """``G[idx][:, idx]`` of a square ``G`` (a formed Hessian cut down to some of its
    coordinates), a new C-ordered array: one pass over the rows ``idx``, where NumPy's
    ``G[np.ix_(idx, idx)]`` goes through its general fancy indexing (doc/benchmarks.md,
    principal_submatrix). Every index must lie in [0, len(G))."""
    cdef Py_ssize_t n = G.shape[0], m = idx.shape[0], a, b
    cdef const double *row
    cdef int bad = 0
    if G.shape[1] != n:
        raise ValueError("principal_submatrix: G must be square")
    result = np.empty((m, m))
    cdef double[:, ::1] out = result
    with nogil:
        for a in range(m):
            if idx[a] < 0 or idx[a] >= n:
                bad = 1
                break
        if not bad:
            for a in range(m):
                row = &G[idx[a], 0]
                for b in range(m):
                    out[a, b] = row[idx[b]]
    if bad:
        raise ValueError(f"principal_submatrix: an index lies outside [0, {n})")
    return result


def take_columns_csc(const floating[::1] data, const index_t[::1] indices,
                     const index_t[::1] indptr, const long long[:] cols, floating[:] out_data,
                     index_t[:] out_indices, index_t[:] out_indptr):
    """Copy the columns ``cols`` of a CSC matrix into preallocated CSC arrays (O(nnz out))."""
    cdef Py_ssize_t k, j, p, t = 0
    with nogil:
        out_indptr[0] = 0
        for k in range(cols.shape[0]):
            j = cols[k]
            for p in range(indptr[j], indptr[j + 1]):
                out_data[t] = data[p]
                out_indices[t] = indices[p]
                t += 1
            out_indptr[k + 1] = t


def take_columns_csr(const floating[::1] data, const index_t[::1] indices,
                     const index_t[::1] indptr, const long long[::1] colmap,
                     floating[::1] out_data, index_t[::1] out_indices, index_t[::1] out_indptr):
    """Copy the columns j with ``colmap[j] >= 0`` of a CSR matrix, renumbered ``colmap[j]``,
    into preallocated CSR arrays (one pass over the rows; a row keeps its order, so its
    columns stay sorted when ``colmap`` increases over the kept ones). Returns the number
    of entries written."""
    cdef Py_ssize_t i, p, j, t = 0, n = indptr.shape[0] - 1, D = colmap.shape[0]
    cdef Py_ssize_t cap = min(out_data.shape[0], out_indices.shape[0])
    cdef long long a
    cdef int bad = 0
    if out_indptr.shape[0] != n + 1 or n < 0:
        raise ValueError("take_columns_csr: out_indptr must have the rows' length + 1")
    if indptr[n] > data.shape[0] or indptr[n] > indices.shape[0]:
        raise ValueError("take_columns_csr: indptr runs past the stored entries")
    with nogil:
        out_indptr[0] = 0
        for i in range(n):
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if j < 0 or j >= D:
                    bad = 1
                    break
                a = colmap[j]
                if a >= 0:
                    if t >= cap:
                        bad = 2
                        break
                    out_data[t] = data[p]
                    out_indices[t] = <index_t>a
                    t = t + 1
            if bad:
                break
            out_indptr[i + 1] = t
    if bad == 1:
        raise ValueError("take_columns_csr: a column index lies outside colmap")
    if bad == 2:
        raise ValueError("take_columns_csr: the output arrays are too short")
    return t


def csr_rows_dense(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const long long[::1] rows,
                   floating[::1, :] out):
    """The rows ``rows`` of a CSR matrix of ``out.shape[1]`` columns into the Fortran array
    ``out`` (a row each): zeros, then each stored entry added (duplicates summed), in one
    pass over those rows (SciPy's ``X[rows].T.toarray()`` makes a slice, a transposed copy
    and the array)."""
    cdef Py_ssize_t i, r, p, j, c, nb = rows.shape[0], m = out.shape[1]
    cdef Py_ssize_t n = indptr.shape[0] - 1
    cdef int bad = 0
    if out.shape[0] != nb:
        raise ValueError("csr_rows_dense: out must have a row for each of rows")
    with nogil:
        for c in range(m):
            memset(&out[0, c], 0, nb * sizeof(floating))
        for i in range(nb):
            r = rows[i]
            if (r < 0 or r >= n or indptr[r + 1] < indptr[r] or indptr[r] < 0
                    or indptr[r + 1] > data.shape[0] or indptr[r + 1] > indices.shape[0]):
                bad = 1
                break
            for p in range(indptr[r], indptr[r + 1]):
                j = indices[p]
                if j < 0 or j >= m:
                    bad = 2
                    break
                out[i, j] += data[p]
            if bad:
                break
    if bad == 1:
        raise ValueError("csr_rows_dense: a row lies outside X or outside its stored entries")
    if bad == 2:
        raise ValueError("csr_rows_dense: a column index lies outside out's columns")


def dense_row_ends(const floating[:, ::1] X, long long[::1] indptr):
    """``indptr[i + 1]``: the count of nonzero entries in rows 0 to i of C-ordered X
    (``indptr[0]`` = 0), the ``indptr`` of its CSR copy (:func:`dense_compress_rows`)."""
    cdef Py_ssize_t i, j, n = X.shape[0], m = X.shape[1]
    cdef long long t = 0
    if indptr.shape[0] != n + 1:
        raise ValueError("dense_row_ends: indptr must have X.shape[0] + 1 entries")
    with nogil:
        indptr[0] = 0
        for i in range(n):
            for j in range(m):
                t += X[i, j] != 0
            indptr[i + 1] = t


def dense_compress_rows(const floating[:, ::1] X, floating[::1] data, index_t[::1] indices):
    """The nonzero entries of C-ordered X, row after row, into ``data`` and their column
    indices into ``indices`` (both of :func:`dense_row_ends`' total length): the data of
    its CSR copy, in one pass (SciPy's conversion makes two index arrays of int64 and
    gathers the entries through them)."""
    cdef Py_ssize_t i, j, t = 0, n = X.shape[0], m = X.shape[1]
    cdef Py_ssize_t size = min(data.shape[0], indices.shape[0])
    cdef floating v
    cdef int bad = 0
    with nogil:
        for i in range(n):
            for j in range(m):
                v = X[i, j]
                if v != 0:
                    if t == size:
                        bad = 1
                        break
                    data[t] = v
                    indices[t] = <index_t>j
                    t += 1
            if bad:
                break
    if bad or t != size:
        raise ValueError("dense_compress_rows: data and indices must hold X's nonzero "
                         "entries exactly")


def mn_gram_csr(const floating[::1] data, const index_t[::1] indices,
                const index_t[::1] indptr, const double[:, ::1] P, const double[:, ::1] Pb,
                const double[::1] sw, const long long[::1] col_start,
                const long long[::1] entry_class, const long long[::1] b_entry,
                double[:, ::1] G, int n_threads=1, Py_ssize_t block_entries=1 << 16):
    """The multinomial subspace Hessian but its intercept × intercept block, for a
    canonical CSR ``X`` of the free columns.

    The entries are (column a, class k) pairs in column-then-class order: column ``a``'s
    are ``col_start[a]:col_start[a + 1]``, of classes ``entry_class``; ``nw`` =
    ``col_start[-1]`` of them, then nb intercept entries (``b_entry[k]`` is class k's, or
    -1 when it is not free; ``Pb`` holds their classes' columns of ``P``, in entry order).
    Row i (weight sᵢ = ``sw[i]``, probabilities pᵢ = ``P[i]``) adds, with uₑ = xᵢₐ pᵢₖ for
    its entries e = (a, k) in its nonzero columns,

        G[e, e'] += sᵢ uₑ ([k = k'] xᵢₐ' − uₑ')   (e ≤ e', weight entries),
        G[e, f]  += sᵢ uₑ ([k = k_f] − pᵢ,k_f)     (f an intercept entry),

    the entries × rows of xᵢxᵢᵀ ⊗ (diag pᵢ − pᵢpᵢᵀ): Σᵢ rᵢ(rᵢ + 1)/2 updates for rᵢ free
    weight entries in row i, and rᵢ runs of nb for the intercepts. The rows are taken in
    blocks of at most ``block_entries`` listed entries (entry, uₑ, xᵢₐ, the row's next
    entry of the same class); within a block, column a's rows of G take, from each row i
    that stores a, the row's entries from a's on, four rows of G per pass (Gustavson's
    order). A row of G then stays in cache while it is summed, where scattering each
    row's rᵢ² updates over G missed the cache once G outgrew it, and a block's rows stay in
    cache while its columns visit them. Columns are shared among ``n_threads``; each row
    of G is summed by one thread in row order, so the count changes no bit. The weight
    rows' upper triangle is then mirrored; ``G[nw:, nw:]`` is left to the caller, and
    ``G`` is added to.
    """
    cdef Py_ssize_t n = P.shape[0], K = P.shape[1], D = col_start.shape[0] - 1
    cdef Py_ssize_t nb = Pb.shape[1], nw, i, q, t, e, e2, e0, end, c, p, f, nk
    cdef Py_ssize_t i0, i1, total, cap, width, j
    cdef double s, x, u, w0, w1, w2, w3
    cdef double *row
    cdef double *g0
    cdef double *g1
    cdef double *g2
    cdef double *g3
    cdef const double* pb
    cdef long long k
    if D < 0 or indptr.shape[0] != n + 1 or sw.shape[0] != n or Pb.shape[0] != n:
        raise ValueError("mn_gram_csr: X, Pb and sw must have P's rows and col_start an "
                         "entry")
    bad = bad_free_entries(col_start, entry_class, K)
    if bad:
        raise ValueError("mn_gram_csr: " + ("col_start must run from 0 to len(entry_class)",
                                            "col_start must be non-decreasing",
                                            "a class index is out of range")[bad - 1])
    nw = col_start[D]
    if G.shape[0] != G.shape[1] or G.shape[0] != nw + nb or b_entry.shape[0] != K:
        raise ValueError("mn_gram_csr: G must be square over the weight and intercept "
                         "entries and b_entry hold K entries")
    if nw + nb >= 1 << 31:
        raise ValueError("mn_gram_csr: more than 2³¹ entries")
    for k in range(K):
        if not (b_entry[k] == -1 or nw <= b_entry[k] < nw + nb):
            raise ValueError("mn_gram_csr: b_entry holds an entry out of range")
    bad = bad_csr(indices, indptr, data.shape[0], D, True)
    if bad:
        raise ValueError("mn_gram_csr: X's " + ("indptr runs past its entries or decreases",
                                                "column indices are out of range",
                                                "column indices must increase along a row"
                                                )[bad - 1])
    cdef long long[::1] counts = np.zeros(n, dtype=np.int64)   # rᵢ, 0 for sᵢ = 0
    width, total = 1, 0
    with nogil:
        for i in range(n):
            if sw[i] != 0.0:
                for q in range(indptr[i], indptr[i + 1]):
                    c = indices[q]
                    counts[i] += col_start[c + 1] - col_start[c]
                width = max(width, counts[i])
                total += counts[i]
    cap = max(width, min(block_entries, total))
    cdef int[::1] ent = np.empty(cap, dtype=np.int32)       # the listed entries' positions,
    cdef double[::1] us = np.empty(cap)                     # uₑ,
    cdef double[::1] xs = np.empty(cap)                     # xᵢₐ
    cdef long long[::1] same = np.empty(cap, dtype=np.int64)  # and the row's next of its class
    cdef long long[::1] last = np.full(K, -1, dtype=np.int64)
    cdef long long[::1] row_end = np.empty(n, dtype=np.int64)
    cdef long long[::1] col_ptr = np.empty(D + 1, dtype=np.int64)
    cdef long long[::1] fill = np.empty(D, dtype=np.int64)
    cdef long long[::1] visit_row = np.empty(cap, dtype=np.int64)   # column c's visits:
    cdef long long[::1] visit_at = np.empty(cap, dtype=np.int64)    # (row, its first entry)
    with nogil:
        i0 = 0
        while i0 < n:
            total, i1 = counts[i0], i0 + 1
            while i1 < n and total + counts[i1] <= cap:
                total += counts[i1]
                i1 += 1
            # list the block's entries, row by row, and each column's visits
            col_ptr[:] = 0
            for i in range(i0, i1):
                if counts[i]:
                    for q in range(indptr[i], indptr[i + 1]):
                        c = indices[q]
                        col_ptr[c + 1] += col_start[c + 1] > col_start[c]
            for c in range(D):
                col_ptr[c + 1] += col_ptr[c]
                fill[c] = col_ptr[c]
            e = 0
            for i in range(i0, i1):
                if counts[i]:
                    e0 = e
                    for q in range(indptr[i], indptr[i + 1]):
                        c, x = indices[q], data[q]
                        if col_start[c + 1] == col_start[c]:
                            continue                    # no free entry, no visit
                        visit_row[fill[c]], visit_at[fill[c]] = i, e
                        fill[c] += 1
                        for t in range(col_start[c], col_start[c + 1]):
                            k = entry_class[t]
                            ent[e], us[e], xs[e], same[e] = <int>t, x * P[i, k], x, -1
                            if last[k] >= 0:
                                same[last[k]] = e
                            last[k] = e
                            e += 1
                    for e2 in range(e0, e):
                        last[entry_class[ent[e2]]] = -1
                row_end[i] = e
            # column c's rows of G, from every row of the block that stores c
            for c in prange(D, num_threads=max(1, n_threads), schedule="dynamic"):
                nk = col_start[c + 1] - col_start[c]
                for p in range(col_ptr[c], col_ptr[c + 1]):
                    i, e0 = visit_row[p], visit_at[p]
                    s, end, pb = sw[i], row_end[i], &Pb[i, 0]
                    for e in range(e0, e0 + nk):        # the column's own corner, e ≤ e'
                        row = &G[ent[e], 0]
                        u = s * us[e]
                        for e2 in range(e, e0 + nk):
                            row[ent[e2]] -= u * us[e2]
                        e2 = e                          # [k = k']: the entries of its class
                        while e2 >= 0:
                            row[ent[e2]] += u * xs[e2]
                            e2 = same[e2]
                        if b_entry[entry_class[ent[e]]] >= 0:
                            row[b_entry[entry_class[ent[e]]]] += u
                    e = e0
                    while e + 4 <= e0 + nk:     # the row's later entries, four rows a pass
                        g0, g1 = &G[ent[e], 0], &G[ent[e + 1], 0]
                        g2, g3 = &G[ent[e + 2], 0], &G[ent[e + 3], 0]
                        w0, w1, w2, w3 = (s * us[e], s * us[e + 1], s * us[e + 2],
                                          s * us[e + 3])
                        for e2 in range(e0 + nk, end):
                            q, u = ent[e2], us[e2]
                            g0[q] -= w0 * u
                            g1[q] -= w1 * u
                            g2[q] -= w2 * u
                            g3[q] -= w3 * u
                        e = e + 4
                    while e < e0 + nk:          # the last rows, one a pass
                        g0, w0 = &G[ent[e], 0], s * us[e]
                        for e2 in range(e0 + nk, end):
                            g0[ent[e2]] -= w0 * us[e2]
                        e = e + 1
                    for e in range(e0, e0 + nk):        # the intercepts
                        row, u = &G[ent[e], 0], s * us[e]
                        for f in range(nb):
                            row[nw + f] -= u * pb[f]
            i0 = i1
        _mirror_upper(G, nw)


def mn_entry_counts(const index_t[::1] indices, const index_t[::1] indptr,
                    const long long[::1] cols, const long long[::1] col_start,
                    double[::1] work):
    """(Σᵢ rᵢ(rᵢ + 1)/2, Σᵢ rᵢ), the update counts of :func:`mn_gram_csr`: rᵢ sums, over
    row i's stored entries in the columns ``cols`` of a CSC matrix, the free weight entries
    of their column a, ``col_start[a + 1] − col_start[a]`` (as in :func:`mn_gram_csr`). One
    pass over those columns; ``work``, one number per row, is overwritten."""
    cdef Py_ssize_t a, p
    cdef double c, pairs = 0.0, total = 0.0
    if col_start.shape[0] != cols.shape[0] + 1:
        raise ValueError("mn_entry_counts: col_start must have len(cols) + 1 entries")
    with nogil:
        work[:] = 0.0
        for a in range(cols.shape[0]):
            c = col_start[a + 1] - col_start[a]
            for p in range(indptr[cols[a]], indptr[cols[a] + 1]):
                work[indices[p]] += c
        for p in range(work.shape[0]):
            pairs += work[p] * (work[p] + 1.0) / 2.0
            total += work[p]
    return pairs, total


def mn_gram_dense(const floating[::1, :] X, Py_ssize_t row0, const long long[::1] entry_col,
                  const long long[::1] entry_class, const double[:, ::1] P,
                  const double[::1] sw, double[::1] work, double[:, ::1] G,
                  double sign=1.0):
    """Add one block of rows to the multinomial subspace Hessian (``sign`` = -1: subtract
    it), for entries sorted by class: BLAS ``dsyrk`` on panels of the block's rows.

    Entry e is (column ``entry_col[e]`` of ``X``, or the intercept when it is -1; class
    ``entry_class[e]``, non-decreasing in e). The block is rows ``row0 .. row0 + nb`` of
    the Fortran-ordered ``X``, with probabilities ``P`` (nb × K) and weights ``sw``
    (nb). With Sₑ,ᵢ = √sᵢ x̃ᵢ,ⱼ₍ₑ₎ √pᵢ,ₖ₍ₑ₎ and Eₑ,ᵢ = √sᵢ x̃ᵢ,ⱼ₍ₑ₎ pᵢ,ₖ₍ₑ₎ (x̃ = 1 for
    the intercept),

        G += sign · (blockdiagₖ(S_k S_kᵀ) − E Eᵀ),

    the rows' Σᵢ sᵢ x̃ᵢx̃ᵢᵀ ⊗ (diag pᵢ − pᵢpᵢᵀ) on the entries: one ``dsyrk`` per class
    and one for E, into G's storage in place. Only G's lower triangle (C order; the upper
    one of its column-major storage) is written (see :func:`symmetric_take`). ``work``
    holds at least (2K + 2m) nb numbers; it is overwritten.
    """
    cdef Py_ssize_t nb = P.shape[0], K = P.shape[1], m = G.shape[0]
    cdef Py_ssize_t e, i, j, k, a, b
    cdef double r, p
    cdef double *Q1
    cdef double *Q2
    cdef double *S
    cdef double *E
    cdef const floating *x
    cdef int n_, k_ = <int>nb, lda = <int>max(nb, 1), ldc = <int>max(m, 1)
    cdef double one = 1.0, plus = sign, minus = -sign
    cdef char* uplo = b"U"
    cdef char* trans = b"T"
    if (sw.shape[0] != nb or G.shape[1] != m or entry_col.shape[0] != m
            or entry_class.shape[0] != m or row0 < 0 or row0 + nb > X.shape[0]
            or work.shape[0] < (2 * K + 2 * m) * nb):
        raise ValueError("mn_gram_dense: inconsistent shapes")
    for e in range(m):
        if not (-1 <= entry_col[e] < X.shape[1] and 0 <= entry_class[e] < K):
            raise ValueError("mn_gram_dense: an entry's column or class is out of range")
        if e and entry_class[e] < entry_class[e - 1]:
            raise ValueError("mn_gram_dense: the entries must be sorted by class")
    if nb == 0 or m == 0:
        return
    Q1, Q2 = &work[0], &work[K * nb]
    S, E = &work[2 * K * nb], &work[(2 * K + m) * nb]
    with nogil:
        for i in range(nb):                         # √(s p) and √s p, classes × rows
            r = sqrt(sw[i])
            for k in range(K):
                p = P[i, k]
                Q1[k * nb + i] = r * sqrt(p)
                Q2[k * nb + i] = r * p
        for e in range(m):                          # entries × rows: what dsyrk reads
            k, j = entry_class[e], entry_col[e]
            if j < 0:
                for i in range(nb):
                    S[e * nb + i] = Q1[k * nb + i]
                    E[e * nb + i] = Q2[k * nb + i]
            else:
                x = &X[row0, j]
                for i in range(nb):
                    S[e * nb + i] = x[i] * Q1[k * nb + i]
                    E[e * nb + i] = x[i] * Q2[k * nb + i]
        a = 0
        while a < m:                                # one class's entries: its diagonal block
            b = a + 1
            while b < m and entry_class[b] == entry_class[a]:
                b += 1
            n_ = <int>(b - a)
            dsyrk(uplo, trans, &n_, &k_, &plus, &S[a * nb], &lda, &one, &G[a, a], &ldc)
            a = b
        n_ = <int>m
        dsyrk(uplo, trans, &n_, &k_, &minus, E, &lda, &one, &G[0, 0], &ldc)


def mn_gram_rows_dense(const floating[::1, :] X, Py_ssize_t row0,
                       const long long[::1] cols, const double[:, ::1] P,
                       const double[::1] sw, const long long[::1] entry_col,
                       const long long[::1] entry_class, double[:, :, ::1] out):
    """Add one block of rows to some rows of the multinomial subspace Hessian: for q
    entries e (column ``entry_col[e]`` of the c free columns ``cols`` of ``X``, or the
    intercept when it is c; class ``entry_class[e]``),

        out[l, e, j] += Σᵢ sᵢ x̃ᵢ,ⱼ₍ₑ₎ pᵢ,ₖ₍ₑ₎ (δₖ₍ₑ₎ₗ − pᵢₗ) x̃ᵢ,ⱼ

    over the rows i = ``row0`` .. ``row0 + nb`` of the Fortran-ordered ``X`` (nb = len(P),
    probabilities ``P``, weights ``sw``), every free column j < c and the intercept j = c
    (x̃ = 1), every class l: by BLAS ``dgemm`` on float64 panels of sub-blocks of the
    rows, one per class. ``out`` is (K, q, c + 1)."""
    cdef Py_ssize_t nb = P.shape[0], K = P.shape[1], c = cols.shape[0]
    cdef Py_ssize_t q = entry_col.shape[0], lo, m, e, i, k, l
    cdef Py_ssize_t sub = max(16, PANEL_NUMBERS // (c + 1 + q))
    cdef double d
    cdef double *Xp
    cdef double *A
    cdef double *M
    cdef const double *x
    cdef int m_, n_ = <int>(c + 1), q_ = <int>q
    cdef double one = 1.0
    cdef char* tr = b"T"
    cdef char* no = b"N"
    if (sw.shape[0] != nb or row0 < 0 or row0 + nb > X.shape[0]
            or entry_class.shape[0] != q or out.shape[0] != K or out.shape[1] != q
            or out.shape[2] != c + 1):
        raise ValueError("mn_gram_rows_dense: inconsistent shapes")
    if bad_cols(cols, X.shape[1]):
        raise ValueError("mn_gram_rows_dense: a column index is out of range")
    for e in range(q):
        if not (0 <= entry_col[e] <= c and 0 <= entry_class[e] < K):
            raise ValueError("mn_gram_rows_dense: an entry's column or class is out of range")
    if nb == 0 or q == 0 or K == 0:
        return
    work = np.empty(min(sub, nb) * (c + 1 + 2 * q))
    cdef double[::1] W = work
    Xp = &W[0]
    lo = 0
    with nogil:
        while lo < nb:
            m = min(sub, nb - lo)
            A, M = Xp + (c + 1) * m, Xp + (c + 1 + q) * m
            if c:
                gather_panel(X, &cols[0], c, row0 + lo, m, Xp, False)
            for i in range(m):
                Xp[c * m + i] = 1.0
            for e in range(q):                      # A[i, e] = sᵢ x̃ᵢ,ⱼ₍ₑ₎ pᵢ,ₖ₍ₑ₎
                k = entry_class[e]
                x = Xp + entry_col[e] * m
                for i in range(m):
                    A[e * m + i] = sw[lo + i] * x[i] * P[lo + i, k]
            m_ = <int>m
            for l in range(K):
                for e in range(q):                  # M[i, e] = A[i, e] (δₖ₍ₑ₎ₗ − pᵢₗ)
                    d = 1.0 if entry_class[e] == l else 0.0
                    for i in range(m):
                        M[e * m + i] = A[e * m + i] * (d - P[lo + i, l])
                # out[l]ᵀ ((c + 1) × q) += Xpᵀ M
                dgemm(tr, no, &n_, &q_, &m_, &one, Xp, &m_, M, &m_, &one, &out[l, 0, 0],
                      &n_)
            lo += m


def mn_moved_rows(const double[:, ::1] P, const double[:, ::1] carried, double rtol):
    """The rows i (ascending) where ``|P[i, k] - carried[i, k]| > rtol * P[i, k]`` for some
    class k, in one pass (a NaN moves nothing)."""
    cdef Py_ssize_t i, k, m = 0, n = P.shape[0], K = P.shape[1]
    if carried.shape[0] != n or carried.shape[1] != K:
        raise ValueError("mn_moved_rows: P and carried must have the same shape")
    out = np.empty(n, dtype=np.int64)
    cdef long long[::1] rows = out
    with nogil:
        for i in range(n):
            for k in range(K):
                if fabs(P[i, k] - carried[i, k]) > rtol * P[i, k]:
                    rows[m] = i
                    m += 1
                    break
    return out[:m]


def symmetric_take(const double[:, ::1] G, const long long[::1] back):
    """The symmetric matrix whose [p, q] entry is G[max(bp, bq), min(bp, bq)] with
    bp = ``back[p]``: the lower triangle of ``G`` (see :func:`mn_gram_dense`) mirrored and
    reordered in one pass."""
    cdef Py_ssize_t m = back.shape[0], p, q, a, b
    if G.shape[0] != m or G.shape[1] != m:
        raise ValueError("symmetric_take: G must be len(back) x len(back)")
    for p in range(m):
        if not 0 <= back[p] < m:
            raise ValueError("symmetric_take: an index is out of range")
    out = np.empty((m, m))
    cdef double[:, ::1] O = out
    with nogil:
        for p in range(m):
            a = back[p]
            for q in range(p + 1):
                b = back[q]
                O[p, q] = G[a, b] if a >= b else G[b, a]
                O[q, p] = O[p, q]
    return out


cdef int _bad_blocks(const long long[::1] offset, const long long[::1] size,
                     Py_ssize_t total) noexcept nogil:
    """0 when the blocks (``size[b]`` square, row-major at ``offset[b]``) lie in ``total``
    numbers without overlapping in order; else 1."""
    cdef Py_ssize_t b, end = 0
    if offset.shape[0] != size.shape[0]:
        return 1
    for b in range(size.shape[0]):
        if size[b] < 0 or offset[b] < end:
            return 1
        end = offset[b] + size[b] * size[b]
    return end > total


cdef inline Py_ssize_t _count_blocks(const index_t* indices, Py_ssize_t begin,
                                     Py_ssize_t end, const long long* col_start,
                                     const long long* entry_block, long long* count,
                                     long long* touched, Py_ssize_t nt) noexcept nogil:
    """Add the stored entries ``begin:end`` of a CSR row (free columns) to ``count``, one
    per free entry of their column, by the entry's block; a block counted for the first time
    is listed in ``touched`` after its ``nt`` first; returns the new length of that list."""
    cdef Py_ssize_t p, e, b
    for p in range(begin, end):
        for e in range(col_start[indices[p]], col_start[indices[p] + 1]):
            b = entry_block[e]
            if count[b] == 0:
                touched[nt] = b
                nt += 1
            count[b] += 1
    return nt


def mn_class_blocks_csr(const floating[::1] data, const index_t[::1] indices,
                        const index_t[::1] indptr, const double[:, ::1] W,
                        const long long[::1] col_start, const long long[::1] entry_class,
                        const long long[::1] entry_block, const long long[::1] entry_pos,
                        const long long[::1] block_offset, const long long[::1] block_size,
                        const long long[::1] block_intercept, double[::1] out,
                        Py_ssize_t chunk_pairs=1 << 18, int n_threads=1):
    """Add to each block b of ``out`` (``block_size[b]`` square, row-major at
    ``block_offset[b]``) Σᵢ Wᵢₖ x̃ x̃ᵀ over the block's entries, all of one class k: the
    diagonal blocks of the multinomial subspace Hessian (``W`` = sᵢ pᵢₖ (1 − pᵢₖ), n × K)
    but the intercepts' own Σᵢ Wᵢₖ, left to the caller.

    ``X`` is a canonical CSR matrix of the free columns; column a's weight entries are
    ``col_start[a]:col_start[a + 1]``, of classes ``entry_class``, in block
    ``entry_block[e]`` at position ``entry_pos[e]``; ``block_intercept[b]`` is the position
    of the block's intercept entry (x̃ = 1 there), or -1. The rows are taken in chunks of
    at most ``chunk_pairs`` (stored entry, free entry) pairs, sorted by block (a counting
    sort), and each block then takes its rows' pairs in turn, so that its part of ``out``
    stays in cache (Σᵢ Σ_b rᵢ_b (rᵢ_b + 1)/2 updates); the blocks are made symmetric at
    the end. ``n_threads`` share a chunk's blocks: the same sums as on one thread.
    """
    cdef Py_ssize_t n = indptr.shape[0] - 1, K = W.shape[1], nblocks = block_size.shape[0]
    cdef Py_ssize_t nw = entry_class.shape[0], i, i0, i1, p, e, q, q2, end, t, nt, b, s
    cdef Py_ssize_t width = 1, r, c, lb, row_pairs
    cdef long long a, k
    cdef double u, x, v
    cdef double *G
    if bad_csr(indices, indptr, data.shape[0], col_start.shape[0] - 1, True):
        raise ValueError("mn_class_blocks_csr: X is not a canonical CSR matrix of "
                         "len(col_start) - 1 columns")
    if W.shape[0] != n or bad_free_entries(col_start, entry_class, K):
        raise ValueError("mn_class_blocks_csr: W must have a row per row of X, and the "
                         "entries classes in [0, K)")
    if (entry_block.shape[0] != nw or entry_pos.shape[0] != nw
            or block_intercept.shape[0] != nblocks
            or _bad_blocks(block_offset, block_size, out.shape[0])):
        raise ValueError("mn_class_blocks_csr: the blocks do not fit the entries or out")
    cdef long long[::1] block_class = np.full(max(nblocks, 1), -1, dtype=np.int64)
    for e in range(nw):
        if not (0 <= entry_block[e] < nblocks and 0 <= entry_pos[e] < block_size[entry_block[e]]):
            raise ValueError("mn_class_blocks_csr: an entry's block or position is out of range")
        b = entry_block[e]
        if block_class[b] >= 0 and block_class[b] != entry_class[e]:
            raise ValueError("mn_class_blocks_csr: a block holds entries of two classes")
        block_class[b] = entry_class[e]
    for b in range(nblocks):
        if block_intercept[b] >= block_size[b]:
            raise ValueError("mn_class_blocks_csr: an intercept position is out of range")
    for i in range(n):   # the buffers hold a chunk: at least its widest row
        t = 0
        for p in range(indptr[i], indptr[i + 1]):
            t += col_start[indices[p] + 1] - col_start[indices[p]]
        width = max(width, t)
    width = max(width, chunk_pairs)
    cdef const index_t* ind = &indices[0] if indices.shape[0] else NULL   # (X may be empty)
    cdef const long long* blk = &entry_block[0] if nw else NULL
    cdef long long[::1] fill = np.zeros(max(nblocks, 1), dtype=np.int64)
    cdef long long[::1] touched = np.empty(max(nblocks, 1), dtype=np.int64)
    cdef long long[::1] begin = np.empty(max(nblocks, 1), dtype=np.int64)
    cdef int threads = max(1, n_threads)
    cdef long long[::1] row = np.empty(width, dtype=np.int64)
    cdef long long[::1] pos = np.empty(width, dtype=np.int64)
    cdef double[::1] value = np.empty(width)
    with nogil:
        i0 = 0
        while i0 < n:
            # the chunk's rows, and how many pairs each touched block gets
            i1, t, nt = i0, 0, 0
            while i1 < n:
                row_pairs = 0
                for p in range(indptr[i1], indptr[i1 + 1]):
                    row_pairs += col_start[indices[p] + 1] - col_start[indices[p]]
                if i1 > i0 and t + row_pairs > width:
                    break
                t += row_pairs
                nt = _count_blocks(ind, indptr[i1], indptr[i1 + 1], &col_start[0], blk,
                                   &fill[0], &touched[0], nt)
                i1 += 1
            q = 0   # fill[b]: where block b's pairs start, then where the next one goes
            for r in range(nt):
                b = touched[r]
                e = fill[b]
                fill[b] = q
                begin[r] = q
                q += e
            for i in range(i0, i1):
                for p in range(indptr[i], indptr[i + 1]):
                    a = indices[p]
                    x = data[p]
                    for e in range(col_start[a], col_start[a + 1]):
                        b = entry_block[e]
                        q = fill[b]
                        row[q] = i
                        pos[q] = entry_pos[e]
                        value[q] = x
                        fill[b] = q + 1
            # each block's pairs, row by row; the blocks among the threads
            for r in prange(nt, num_threads=threads, schedule="dynamic"):
                b = touched[r]
                q = begin[r]
                end = fill[b]
                fill[b] = 0
                k = block_class[b]
                s = block_size[b]
                G = &out[block_offset[b]]
                lb = block_intercept[b]
                while q < end:
                    i = row[q]
                    t = q
                    while t < end and row[t] == i:
                        t = t + 1             # (not +=: in prange, a reduction)
                    u = W[i, k]
                    if u != 0.0:
                        for q2 in range(q, t):
                            v = u * value[q2]
                            c = pos[q2] * s
                            for e in range(q2, t):
                                G[c + pos[e]] += v * value[e]
                            if lb >= 0:
                                G[lb * s + pos[q2]] += v
                    q = t
            i0 = i1
        for b in range(nblocks):
            s = block_size[b]
            G = &out[block_offset[b]]
            for r in range(s):
                for c in range(r + 1, s):
                    G[r * s + c] += G[c * s + r]
                    G[c * s + r] = G[r * s + c]


def mn_class_blocks_dense(const floating[::1, :] X, const long long[::1] entry_col,
                          const long long[::1] entry_class, const long long[::1] block_offset,
                          const long long[::1] block_size, const double[:, ::1] W,
                          double[::1] work, double[::1] out, int n_threads=1):
    """Add to each block b of ``out`` (``block_size[b]`` square, row-major at
    ``block_offset[b]``) Σᵢ Wᵢₖ x̃ x̃ᵀ over the block's entries, all of one class k, for a
    dense X: the counterpart of :func:`mn_class_blocks_csr` (the intercepts' Σᵢ Wᵢₖ
    included), by BLAS ``dsyrk`` on panels of rows.

    The entries are listed in block order (block b holds the next ``block_size[b]`` of
    them): entry e is column ``entry_col[e]`` of the Fortran-ordered ``X`` (-1: the
    intercept, x̃ = 1) of class ``entry_class[e]``. ``W`` is n × K. ``work`` holds a panel
    of rows, the √Wᵢₖ and the entries × rows scaled by them, as many rows at a time as
    it fits (at least one: m + K numbers a row); it is overwritten. The blocks are made
    symmetric at the end. ``n_threads`` share each panel's entries, then its blocks (one
    ``dsyrk`` each, on the calling thread's BLAS): the same sums as on one thread.
    """
    cdef Py_ssize_t n = X.shape[0], K = W.shape[1], m = entry_col.shape[0]
    cdef Py_ssize_t nblocks = block_size.shape[0], b, e, i, j, k, s, r, c, a, start, nb, used
    cdef int threads = max(1, n_threads)
    cdef double *Q
    cdef double *S
    cdef double *G
    cdef const floating *x
    cdef int s_, k_
    cdef double one = 1.0
    cdef char* uplo = b"U"
    cdef char* trans = b"T"
    if W.shape[0] != n or entry_class.shape[0] != m:
        raise ValueError("mn_class_blocks_dense: W must have a row per row of X, and "
                         "entry_class an entry per entry_col")
    if _bad_blocks(block_offset, block_size, out.shape[0]) or np.sum(block_size) != m:
        raise ValueError("mn_class_blocks_dense: the blocks do not fit the entries or out")
    for e in range(m):
        if not (-1 <= entry_col[e] < X.shape[1] and 0 <= entry_class[e] < K):
            raise ValueError("mn_class_blocks_dense: an entry's column or class is out of "
                             "range")
    cdef long long[::1] first = np.zeros(max(nblocks, 1), dtype=np.int64)  # block b's 1st
    a = 0
    for b in range(nblocks):
        first[b] = a
        for e in range(a, a + block_size[b]):
            if entry_class[e] != entry_class[a]:
                raise ValueError("mn_class_blocks_dense: a block holds entries of two "
                                 "classes")
        a += block_size[b]
    if m == 0 or n == 0:
        return
    if work.shape[0] < m + K:
        raise ValueError("mn_class_blocks_dense: work must hold m + K numbers or more")
    nb = min(n, work.shape[0] // (m + K))
    with nogil:
        start = 0
        while start < n:
            used = min(nb, n - start)
            Q, S = &work[0], &work[K * used]
            for i in range(used):
                for k in range(K):
                    Q[k * used + i] = sqrt(W[start + i, k])
            # entries × rows: what dsyrk reads
            for e in prange(m, num_threads=threads, schedule="static"):
                k = entry_class[e]
                j = entry_col[e]
                if j < 0:
                    for i in range(used):
                        S[e * used + i] = Q[k * used + i]
                else:
                    x = &X[start, j]
                    for i in range(used):
                        S[e * used + i] = Q[k * used + i] * x[i]
            k_ = <int>used
            for b in prange(nblocks, num_threads=threads, schedule="dynamic"):
                s_ = <int>block_size[b]
                if s_ > 0:
                    dsyrk(uplo, trans, &s_, &k_, &one, &S[first[b] * used], &k_, &one,
                          &out[block_offset[b]], &s_)
            start += used
        for b in range(nblocks):    # dsyrk wrote the upper triangle of a column-major
            s = block_size[b]       # block: the lower one of the row-major block
            G = &out[block_offset[b]]
            for r in range(s):
                for c in range(r + 1, s):
                    G[r * s + c] = G[c * s + r]


def block_cholesky(double[::1] G, const long long[::1] block_offset,
                   const long long[::1] block_size, double shift):
    """Factor each symmetric block of ``G`` (as :func:`mn_class_blocks_csr` lays them out)
    plus ``shift`` + 1e-12 of its largest diagonal entry on the diagonal, in place, as
    ``dpotrf`` leaves it for :func:`block_solve`. A block that is not positive definite
    after the shift (duplicate columns) is replaced by its diagonal's factor (Jacobi on
    that block); returns how many were."""
    cdef Py_ssize_t b, j, s, fallback = 0
    cdef int ns, info
    cdef double top
    cdef double *A
    cdef char lower = b"L"
    if _bad_blocks(block_offset, block_size, G.shape[0]):
        raise ValueError("block_cholesky: the blocks do not fit G")
    if not shift >= 0.0:
        raise ValueError(f"block_cholesky: shift must be non-negative, got {shift!r}")
    cdef double[::1] diag = np.empty(max(1, np.max(block_size, initial=1)))
    with nogil:
        for b in range(block_size.shape[0]):
            s = block_size[b]
            if s == 0:
                continue
            A = &G[block_offset[b]]
            top = 0.0
            for j in range(s):
                top = max(top, A[j * s + j])
            for j in range(s):
                A[j * s + j] += shift + 1e-12 * top
                diag[j] = A[j * s + j] if A[j * s + j] > 0.0 else 1.0
            ns = <int>s
            dpotrf(&lower, &ns, A, &ns, &info)
            if info != 0:
                fallback += 1
                memset(A, 0, s * s * sizeof(double))
                for j in range(s):
                    A[j * s + j] = sqrt(diag[j])
    return fallback


def block_solve(const double[::1] G, const long long[::1] block_offset,
                const long long[::1] block_size, const long long[::1] order,
                const double[::1] r, double[::1] z):
    """z = M⁻¹ r for the block-diagonal M factored by :func:`block_cholesky`: block b holds
    the entries ``order[start_b:start_b + block_size[b]]`` in position order (``start`` the
    running sum of the sizes)."""
    cdef Py_ssize_t b, j, s, start = 0, m = order.shape[0]
    cdef int ns, one = 1, info
    cdef char lower = b"L"
    if _bad_blocks(block_offset, block_size, G.shape[0]):
        raise ValueError("block_solve: the blocks do not fit G")
    if np.sum(block_size) != m or r.shape[0] != m or z.shape[0] != m:
        raise ValueError("block_solve: order, r and z must hold every entry of the blocks")
    for j in range(m):
        if not 0 <= order[j] < m:
            raise ValueError("block_solve: an index of order is out of range")
    cdef double[::1] tmp = np.empty(max(1, np.max(block_size, initial=1)))
    with nogil:
        for b in range(block_size.shape[0]):
            s = block_size[b]
            if s == 0:
                continue
            for j in range(s):
                tmp[j] = r[order[start + j]]
            ns = <int>s
            dpotrs(&lower, &ns, &one, <double*>&G[block_offset[b]], &ns, &tmp[0], &ns, &info)
            for j in range(s):
                z[order[start + j]] = tmp[j]
            start += s


def mn_class_block_updates(const index_t[::1] indices, const index_t[::1] indptr,
                           const long long[::1] col_start, const long long[::1] entry_block,
                           Py_ssize_t nblocks):
    """Σᵢ Σ_b rᵢ_b (rᵢ_b + 1)/2, the updates :func:`mn_class_blocks_csr` makes for rᵢ_b
    entries of block b in row i (the same arguments); one pass over the rows' entries."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, i, p, e, t, b
    cdef long long a
    cdef double total = 0.0
    if bad_csr(indices, indptr, indices.shape[0], col_start.shape[0] - 1):
        raise ValueError("mn_class_block_updates: X is not a CSR matrix of len(col_start) - 1 "
                         "columns")
    if col_start.shape[0] < 1 or col_start[0] != 0 or \
            col_start[col_start.shape[0] - 1] != entry_block.shape[0]:
        raise ValueError("mn_class_block_updates: col_start does not fit entry_block")
    for e in range(entry_block.shape[0]):
        if not 0 <= entry_block[e] < nblocks:
            raise ValueError("mn_class_block_updates: an entry's block is out of range")
    for e in range(col_start.shape[0] - 1):
        if col_start[e + 1] < col_start[e]:
            raise ValueError("mn_class_block_updates: col_start decreases")
    cdef const index_t* ind = &indices[0] if indices.shape[0] else NULL   # (X may be empty)
    cdef const long long* blk = &entry_block[0] if entry_block.shape[0] else NULL
    cdef long long[::1] count = np.zeros(max(nblocks, 1), dtype=np.int64)
    cdef long long[::1] touched = np.empty(max(nblocks, 1), dtype=np.int64)
    with nogil:
        for i in range(n):
            t = _count_blocks(ind, indptr[i], indptr[i + 1], &col_start[0], blk, &count[0],
                              &touched[0], 0)
            for p in range(t):
                b = touched[p]
                total += count[b] * (count[b] + 1.0) / 2.0
                count[b] = 0
    return total


def block_take(const double[::1] G, const long long[::1] block_offset,
               const long long[::1] block_size, const unsigned char[::1] kept,
               double[::1] out):
    """The blocks of ``G`` (as :func:`mn_class_blocks_csr` lays them out) cut down to their
    rows and columns with ``kept`` (one flag per entry, in block order), one after another in
    ``out``; blocks that keep nothing are left out."""
    cdef Py_ssize_t b, i, j, s, start = 0, at = 0, total = 0, k
    cdef const double* A
    if _bad_blocks(block_offset, block_size, G.shape[0]):
        raise ValueError("block_take: the blocks do not fit G")
    if np.sum(block_size) != kept.shape[0]:
        raise ValueError("block_take: kept must hold a flag per entry of the blocks")
    for b in range(block_size.shape[0]):
        k = 0
        for i in range(start, start + block_size[b]):
            k += kept[i] != 0
        total += k * k
        start += block_size[b]
    if out.shape[0] != total:
        raise ValueError(f"block_take: out must hold {total} numbers, got {out.shape[0]}")
    start = 0
    with nogil:
        for b in range(block_size.shape[0]):
            s = block_size[b]
            A = &G[block_offset[b]]
            for i in range(s):
                if kept[start + i]:
                    for j in range(s):
                        if kept[start + j]:
                            out[at] = A[i * s + j]
                            at += 1
            start += s
