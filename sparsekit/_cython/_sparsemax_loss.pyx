"""Fused loss and gradient of the SparsemaxClassifier objective.

One pass over the rows of ``X`` computes the scores ``s_i = W^T x_i + b``, the projection
``p_i`` of ``s_i`` onto the polytope, the weighted Fenchel-Young loss
``sw_i * (1/2 ||y_i - s_i||^2 - 1/2 ||p_i - s_i||^2)`` and the gradient contributions
``x_i g_i^T`` with ``g_i = sw_i (p_i - y_i)`` (Madsen et al. 2016, eqs. 6, 9 and 11;
Blondel et al. 2020). Rows whose gradient is exactly zero (``p_i == y_i``,
frequent with sparsemax) are skipped in the gradient accumulation.

Dense ``X`` is processed in row blocks small enough to stay in cache between the two BLAS
products (scores, then gradient), so ``X`` is read from memory once per evaluation; with up
to GEMV_MAX_K outputs the products are matrix-vector ones (GEMV, one per output), which the
BLAS runs faster than a GEMM with so few rows. CSR ``X`` is walked natively through
``indptr/indices/data``. On the simplex, the rows of a block (of 2 to SIMPLEX_PAIR_MAX_K
classes for CSR ``X``) are scored first, then projected together by the two-row SIMD kernel
of :func:`simplex_rows`.

Targets ``Y`` arrive as CSR arrays (``yptr, yind, ydat``); each row is expanded into a
K-buffer before the projection. ``W`` has shape (n_features, n_classes), C-contiguous.
"""
from cython cimport floating
from libc.float cimport DBL_MAX
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport free, malloc
from scipy.linalg.cython_blas cimport dgemm, dgemv, sgemm, sgemv

from ._projections cimport (POLYTOPE_BOX, POLYTOPE_SIMPLEX, SIMPLEX_PAIR_MAX_K,
                           fenchel_young_row, simplex_rows)

from sparsekit._cython._common cimport (CACHED_BYTES, ROW_AHEAD, SPARSE_MIN_K, SPARSE_SHARE,
                                        index_t, prefetch_span, row_max, sparse_dot)


cdef inline void _gemm(char* transb, int m, int n, int kk, const floating* a, int lda,
                       const floating* b, int ldb, floating beta, floating* c,
                       int ldc) noexcept nogil:
    """C = A op(B) + beta C in column-major BLAS terms (A never transposed)."""
    cdef char* transa = b"N"
    cdef floating one = 1.0
    if floating is double:
        dgemm(transa, transb, &m, &n, &kk, &one, <double*> a, &lda, <double*> b, &ldb,
              &beta, c, &ldc)
    else:
        sgemm(transa, transb, &m, &n, &kk, &one, <float*> a, &lda, <float*> b, &ldb,
              &beta, c, &ldc)


cdef inline void _gemv(char* trans, int m, int n, const floating* a, int lda,
                       const floating* x, int incx, floating beta, floating* y,
                       int incy) noexcept nogil:
    """y = op(A) x + beta y in column-major BLAS terms."""
    cdef floating one = 1.0
    if floating is double:
        dgemv(trans, &m, &n, &one, <double*> a, &lda, <double*> x, &incx, &beta, y, &incy)
    else:
        sgemv(trans, &m, &n, &one, <float*> a, &lda, <float*> x, &incx, &beta, y, &incy)


cdef inline double _row_loss_grad(int polytope, floating* s, const floating* b,
                                  const int64_t* yind, const floating* ydat,
                                  Py_ssize_t ystart, Py_ssize_t yend, floating sw,
                                  Py_ssize_t k, double budget, floating* y, floating* p,
                                  floating* work, Py_ssize_t* iwork, Py_ssize_t* nz,
                                  Py_ssize_t* n_nonzero) noexcept nogil:
    """Add ``b`` to the scores ``s``, overwrite them with ``sw (p - y)``, return ``sw * loss``;
    the classes of its nonzero entries into ``nz`` (k entries), their count into
    ``n_nonzero``."""
    cdef Py_ssize_t j, t, m = 0
    cdef double loss
    cdef floating g
    n_nonzero[0] = 0
    if sw == 0:
        for j in range(k):
            s[j] = 0
        return 0.0
    for j in range(k):
        s[j] += b[j]
        y[j] = 0
    for t in range(ystart, yend):
        y[yind[t]] += ydat[t]
    loss = fenchel_young_row(polytope, s, y, p, k, budget, <floating*> NULL, work, iwork)
    for j in range(k):   # branch-free list of the nonzero entries
        g = sw * (p[j] - y[j])
        s[j] = g
        nz[m] = j
        m += g != 0
    n_nonzero[0] = m
    return sw * loss


cdef enum:
    # up to this many outputs, the dense products are one GEMV per output: the BLAS's
    # GEMM with so few rows runs slower (2-3x at one output; even from 8 on)
    GEMV_MAX_K = 7

cdef enum:
    # a CSR block's rows are scored before their projections are computed together: at
    # most CSR_BLOCK_ROWS rows and, on average, CSR_BLOCK_ENTRIES stored entries (the
    # scatter after the projections reads them again: still in cache)
    CSR_BLOCK_ROWS = 64
    CSR_BLOCK_ENTRIES = 1024

#: ``GEMV_MAX_K`` for Python: the largest number of outputs whose dense products are GEMVs
GEMV_MAX_OUTPUTS = GEMV_MAX_K


cdef inline double _box_output(double z, double target, double sw,
                               floating* g) noexcept nogil:
    """One output on the box [0, 1] (a two-class fit) at the score ``z`` (intercept
    added), without buffers: writes ``g = sw (p - target)``, ``p = clip(z, 0, 1)``, and
    returns ``sw`` times the loss, as the row kernel computes it: ``1/2 (y - p)(y + p) -
    (y - p) z`` (no square of a huge score; -inf kept finite so that a zero term stays 0)."""
    cdef double p = min(max(z, 0.0), 1.0), d = target - p
    if z < -DBL_MAX:
        z = -DBL_MAX
    g[0] = <floating> (sw * (p - target))
    return sw * (0.5 * d * (target + p) - d * z)


cdef inline double _simplex_block(floating* S, floating* P, floating* tau, Py_ssize_t m,
                                  Py_ssize_t k, const floating* b, const int64_t* yptr,
                                  const int64_t* yind, const floating* ydat,
                                  const floating* sw, double radius, floating* y,
                                  floating* grad_b, bint* nonzero) noexcept nogil:
    """The ``m`` rows of a block on the simplex (of ``radius``), their scores ``S`` (m x k)
    without the intercept ``b``, ``yptr`` and ``sw`` from the block's first row: ``S``
    overwritten with each row's ``sw (p - y)`` (added to ``grad_b``; ``nonzero`` set if
    any entry is), the projections ``P`` of the rows computed together (thresholds into
    ``tau``: :func:`simplex_rows`, two rows at a time); returns the sum of ``sw`` times the
    rows' losses, computed as :func:`fenchel_young_row` does (on ``z - max z``)."""
    cdef Py_ssize_t r, j, t
    cdef double total = 0.0, loss, shift, u, diff
    cdef floating g
    cdef floating* s
    cdef floating* p
    for r in range(m):
        s = S + r * k
        for j in range(k):
            s[j] += b[j]
    simplex_rows(S, P, tau, m, k, radius)
    for r in range(m):
        s = S + r * k
        p = P + r * k
        if sw[r] == 0:
            for j in range(k):
                s[j] = 0
            continue
        for j in range(k):
            y[j] = 0
        for t in range(yptr[r], yptr[r + 1]):
            y[yind[t]] += ydat[t]
        shift = row_max(s, k)
        loss = 0.0
        for j in range(k):
            u = s[j] - shift
            if u < -DBL_MAX:      # -inf: kept finite, so that a zero term stays 0
                u = -DBL_MAX
            diff = y[j] - p[j]
            loss += 0.5 * diff * (y[j] + p[j]) - diff * u
        total += sw[r] * loss
        for j in range(k):
            g = sw[r] * (p[j] - y[j])
            s[j] = g
            grad_b[j] += g
            nonzero[0] |= g != 0
    return total


cdef inline Py_ssize_t _nonzero_entries(const floating* g, Py_ssize_t k,
                                        Py_ssize_t* nz) noexcept nogil:
    """List the nonzero entries of ``g`` into ``nz`` (branch-free); return their count."""
    cdef Py_ssize_t j, m = 0
    for j in range(k):
        nz[m] = j
        m += g[j] != 0
    return m


cdef inline void _scatter_row(const floating* data, const index_t* indices,
                              Py_ssize_t start, Py_ssize_t end, const floating* g,
                              Py_ssize_t k, const Py_ssize_t* nz, Py_ssize_t m,
                              floating* grad_W) noexcept nogil:
    """``grad_W[j] += x_j g`` over the CSR row of entries ``start:end``, the ``m`` nonzero
    entries of ``g`` listed in ``nz``: two classes in registers, as in :func:`_row_scores`;
    from SPARSE_MIN_K classes with at most k / SPARSE_SHARE of them nonzero (sparse
    projections) over those only; nothing for a zero ``g``."""
    cdef Py_ssize_t j, t, q
    cdef floating v, g0, g1
    cdef floating* grow
    if m == 0:
        return
    if k == 2:
        g0, g1 = g[0], g[1]
        for t in range(start, end):
            v = data[t]
            grow = grad_W + 2 * indices[t]
            grow[0] += v * g0
            grow[1] += v * g1
        return
    if k >= SPARSE_MIN_K and m * SPARSE_SHARE <= k:
        # few classes moved: the same sums, over the nonzero terms only
        for t in range(start, end):
            v = data[t]
            grow = grad_W + k * indices[t]
            for q in range(m):
                j = nz[q]
                grow[j] += v * g[j]
        return
    for t in range(start, end):
        v = data[t]
        grow = grad_W + k * indices[t]
        for j in range(k):
            grow[j] += v * g[j]


cdef inline void _row_scores(const floating* data, const index_t* indices, Py_ssize_t start,
                             Py_ssize_t end, const floating* W, Py_ssize_t k,
                             floating* s, Py_ssize_t nnz, const floating* G) noexcept nogil:
    """``s = W^T x`` for the CSR row of entries ``start:end``. Two classes (binary labels)
    sum in registers: through ``s`` each entry waits for the previous one's store
    (benchmarks section sdca_checks); the sums are the same, in the same order. With more
    classes the rows of W and G (the gradient, updated next) of the entry ``ROW_AHEAD``
    further on among the first ``nnz`` stored are prefetched (``nnz`` 0: none)."""
    cdef Py_ssize_t t, j, ahead
    cdef floating v, s0 = 0, s1 = 0
    cdef const floating* wrow
    if k == 1:   # one output (two classes as one box output)
        s[0] = <floating> sparse_dot(data + start, indices + start, W, end - start)
        return
    if k == 2:
        for t in range(start, end):
            v = data[t]
            wrow = W + 2 * indices[t]
            s0 += v * wrow[0]
            s1 += v * wrow[1]
        s[0], s[1] = s0, s1
        return
    for j in range(k):
        s[j] = 0
    for t in range(start, end):
        if t + ROW_AHEAD < nnz:
            ahead = k * indices[t + ROW_AHEAD]
            prefetch_span(W + ahead, k * sizeof(floating))
            prefetch_span(G + ahead, k * sizeof(floating))
        v = data[t]
        wrow = W + k * indices[t]
        for j in range(k):
            s[j] += v * wrow[j]


def loss_grad_dense(const floating[:, ::1] X, const floating[:, ::1] W,
                    const floating[::1] b, const int64_t[::1] yptr, const int64_t[::1] yind,
                    const floating[::1] ydat, const floating[::1] sw, int polytope,
                    double budget, floating[:, ::1] grad_W, floating[::1] grad_b,
                    Py_ssize_t block):
    """Weighted loss sum and gradients for dense ``X`` (n, d), C-contiguous.

    Returns ``sum_i sw_i L_i``; writes ``grad_W = sum_i sw_i x_i (p_i - y_i)^T`` (d, k) and
    ``grad_b = sum_i sw_i (p_i - y_i)`` (k,). ``block`` rows are processed per BLAS call.
    """
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], k = W.shape[1]
    cdef Py_ssize_t start, m, r, i, j, row_nonzero
    cdef double total = 0.0, target
    cdef bint block_nonzero
    cdef floating* S
    cdef floating* srow
    cdef floating* P
    cdef Py_ssize_t* iwork
    if block < 1:
        block = 1
    if block > n:
        block = n
    # one allocation: scores (block * k), then y (k), p (k) and work (2k), then the block's
    # projections (block * k) and thresholds (block) on the simplex; iwork: the
    # projections' work (2k), then the rows' nonzero classes (k)
    S = <floating*> malloc((2 * block * k + block + 4 * k) * sizeof(floating))
    iwork = <Py_ssize_t*> malloc(3 * k * sizeof(Py_ssize_t))
    if S == NULL or iwork == NULL:
        free(S)
        free(iwork)
        raise MemoryError()
    P = S + block * k + 4 * k
    with nogil:
        for j in range(d):
            for r in range(k):
                grad_W[j, r] = 0
        for r in range(k):
            grad_b[r] = 0
        start = 0
        while start < n:
            m = min(block, n - start)
            if k <= GEMV_MAX_K:      # the block's rows times each column of W
                for j in range(k):
                    _gemv(b"T", <int> d, <int> m, &X[start, 0], <int> d, &W[0, j], <int> k,
                          0.0, S + j, <int> k)
            else:
                _gemm(b"N", <int> k, <int> m, <int> d, &W[0, 0], <int> k, &X[start, 0],
                      <int> d, 0.0, S, <int> k)
            block_nonzero = False
            if polytope == POLYTOPE_SIMPLEX and k >= 2:     # the rows projected together
                total += _simplex_block(S, P, P + block * k, m, k, &b[0], &yptr[start],
                                        &yind[0], &ydat[0], &sw[start], budget,
                                        S + block * k, &grad_b[0], &block_nonzero)
            elif k == 1 and polytope == POLYTOPE_BOX:       # a two-class fit: inline
                for r in range(m):
                    i = start + r
                    if sw[i] == 0:
                        S[r] = 0
                        continue
                    target = 0
                    for j in range(yptr[i], yptr[i + 1]):
                        target += ydat[j]
                    total += _box_output(S[r] + b[0], target, sw[i], S + r)
                    grad_b[0] += S[r]
                    block_nonzero |= S[r] != 0
            else:
                for r in range(m):
                    i = start + r
                    srow = S + r * k
                    total += _row_loss_grad(polytope, srow, &b[0], &yind[0], &ydat[0],
                                            yptr[i], yptr[i + 1], sw[i], k, budget,
                                            S + block * k, S + block * k + k,
                                            S + block * k + 2 * k, iwork, iwork + 2 * k,
                                            &row_nonzero)
                    if row_nonzero:
                        block_nonzero = True
                        for j in range(k):
                            grad_b[j] += srow[j]
            if block_nonzero and k <= GEMV_MAX_K:
                for j in range(k):
                    _gemv(b"N", <int> d, <int> m, &X[start, 0], <int> d, S + j, <int> k,
                          1.0, &grad_W[0, j], <int> k)
            elif block_nonzero:
                _gemm(b"T", <int> k, <int> d, <int> m, S, <int> k, &X[start, 0], <int> d,
                      1.0, &grad_W[0, 0], <int> k)
            start += m
    free(S)
    free(iwork)
    return total


def loss_grad_csr(const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, const floating[:, ::1] W,
                  const floating[::1] b, const int64_t[::1] yptr, const int64_t[::1] yind,
                  const floating[::1] ydat, const floating[::1] sw, int polytope,
                  double budget, floating[:, ::1] grad_W, floating[::1] grad_b):
    """Same as :func:`loss_grad_dense` for CSR ``X`` given by ``data, indices, indptr``.
    A row's gradient ``sw_i (p_i - y_i)`` with few nonzero classes (sparse projections)
    is scattered over those only (:func:`_scatter_row`). Rows of 2 to SIMPLEX_PAIR_MAX_K
    classes on the simplex are scored a block at a time (2 to CSR_BLOCK_ROWS rows of about
    CSR_BLOCK_ENTRIES stored entries), then projected together (:func:`_simplex_block`)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, d = W.shape[0], k = W.shape[1]
    cdef Py_ssize_t i, j, t, r, m, start, row_nonzero
    # the stored entries whose rows of W and grad_W are prefetched: none for a cached W
    cdef Py_ssize_t ahead_nnz = 0
    cdef double total = 0.0, target
    cdef floating g0
    cdef bint nonzero
    cdef bint blocked = polytope == POLYTOPE_SIMPLEX and 2 <= k <= SIMPLEX_PAIR_MAX_K
    cdef Py_ssize_t rows = 1
    cdef floating* s
    cdef floating* y
    cdef floating* P
    cdef Py_ssize_t* iwork
    cdef Py_ssize_t* nz
    if blocked:
        rows = CSR_BLOCK_ENTRIES * n // max(1, <Py_ssize_t> indptr[n]) if n > 0 else 1
        rows = max(2, min(CSR_BLOCK_ROWS, rows))
    # one allocation: scores (rows * k), then y (k), p (k) and work (2k), then a block's
    # projections (rows * k) and thresholds (rows); iwork: the projections' work (2k), then
    # a row's nonzero classes (k)
    s = <floating*> malloc((2 * rows * k + rows + 4 * k) * sizeof(floating))
    iwork = <Py_ssize_t*> malloc(3 * k * sizeof(Py_ssize_t))
    if s == NULL or iwork == NULL:
        free(s)
        free(iwork)
        raise MemoryError()
    y = s + rows * k
    P = y + 4 * k
    nz = iwork + 2 * k
    if n > 0 and d * k * sizeof(floating) > CACHED_BYTES:
        ahead_nnz = indptr[n]
    with nogil:
        for j in range(d):
            for t in range(k):
                grad_W[j, t] = 0
        for t in range(k):
            grad_b[t] = 0
        start = 0
        while start < n:      # a block of rows, or one row
            m = min(rows, n - start)
            for r in range(m):
                i = start + r
                _row_scores(&data[0], &indices[0], indptr[i], indptr[i + 1], &W[0, 0], k,
                            s + r * k, ahead_nnz, &grad_W[0, 0])
            if k == 1 and polytope == POLYTOPE_BOX:     # a two-class fit: inline
                if sw[start] != 0:
                    target = 0
                    for t in range(yptr[start], yptr[start + 1]):
                        target += ydat[t]
                    total += _box_output(s[0] + b[0], target, sw[start], &g0)
                    if g0 != 0:
                        grad_b[0] += g0
                        for t in range(indptr[start], indptr[start + 1]):
                            grad_W[indices[t], 0] += data[t] * g0
                start += 1
                continue
            if blocked:
                nonzero = False
                total += _simplex_block(s, P, P + rows * k, m, k, &b[0], &yptr[start],
                                        &yind[0], &ydat[0], &sw[start], budget, y,
                                        &grad_b[0], &nonzero)
                for r in range(m if nonzero else 0):   # (their intercepts are added)
                    i = start + r
                    _scatter_row(&data[0], &indices[0], indptr[i], indptr[i + 1], s + r * k,
                                 k, nz, _nonzero_entries(s + r * k, k, nz), &grad_W[0, 0])
                start += m
                continue
            i = start
            start += 1
            total += _row_loss_grad(polytope, s, &b[0], &yind[0], &ydat[0], yptr[i],
                                    yptr[i + 1], sw[i], k, budget, y, y + k, y + 2 * k,
                                    iwork, nz, &row_nonzero)
            if row_nonzero == 0:
                continue
            if k >= SPARSE_MIN_K and row_nonzero * SPARSE_SHARE <= k:
                for j in range(row_nonzero):
                    grad_b[nz[j]] += s[nz[j]]
            else:
                for j in range(k):
                    grad_b[j] += s[j]
            _scatter_row(&data[0], &indices[0], indptr[i], indptr[i + 1], s, k, nz,
                         row_nonzero, &grad_W[0, 0])
    free(s)
    free(iwork)
    return total
