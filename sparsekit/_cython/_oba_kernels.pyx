"""Cython kernels for OBA and its linear-model datafits.

After Keskar (2017), thesis chapter 2: the minimum-norm subgradient (2.4), the index sets
and orthant (2.5)-(2.7), the greedy top-tau selection, soft-thresholding for the ISTA point
and the subspace Hessian-vector products on the free columns.

Design matrices enter as CSC arrays (``data, indices, indptr``), CSR arrays, or a
Fortran-ordered dense array; their values may be float32 or float64 (fused ``floating``).
Every vector the solver owns (weights, gradients, residuals, curvature) is float64.
A column index list ``cols`` lets the margin kernels skip the columns where ``w`` is zero,
and the Hessian kernels work on the free columns of the full matrix in place (no copy).
Dense float64 products go through BLAS (``dgemv`` on blocks of columns, ``daxpy``/``ddot``
per listed column), each column read only on its row range (``column_row_ranges``); float32
dense data, whose vectors are float64, use plain loops. The multinomial model's products
with K columns (``mn_*_dense``) copy blocks of rows of the listed columns into float64
panels, float32 entries exactly, and multiply those by BLAS ``dgemm``; with at most 12
classes, on CPUs with AVX2 and FMA, X W and Xᵀ R read X in place by the kernels of
``_simd.h`` instead, as do those of a sparse X by columns (``mn_*_csc``).
"""
import numpy as np

from cython cimport floating
from cython.parallel cimport parallel, prange, threadid
from libc.math cimport INFINITY, exp, fabs, fmax, log, log1p, sqrt
from libc.stdlib cimport free, malloc, qsort
from scipy.linalg.cython_blas cimport daxpy, ddot, dgemm, dgemv

from sparsekit._cython._common cimport (CACHED_BYTES, PANEL_NUMBERS, ROW_AHEAD,
                                        SK_PREFETCH_READ, SK_PREFETCH_W, bad_cols, bad_csr,
                                        bad_free_entries, gather_panel, index_t, log1pexp,
                                        prefetch_span, sparse_dot, weight_t)


# ---------------------------------------------------------------- margins  m = X w + b
cdef inline void _margins_rows(const floating[::1] data, const index_t[::1] indices,
                               const index_t[::1] indptr, const long long[:] cols,
                               const double[:] v, bint by_column, double b, double* out,
                               Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """``out[lo:hi] = b + X[lo:hi, cols] @ v`` for canonical CSC ``X`` (sorted row indices),
    the weight of column ``cols[k]`` being ``v[cols[k]]`` (``by_column``) or ``v[k]``: each
    column's part in the rows lo..hi-1 (found by bisection), in the order of ``cols``,
    so that a row gets the same sum whatever the block."""
    cdef Py_ssize_t i, j, k, p, end
    cdef double vk
    for i in range(lo, hi):
        out[i] = b
    for k in range(cols.shape[0]):
        j = cols[k]
        vk = v[j] if by_column else v[k]
        if vk == 0.0:
            continue
        end = indptr[j + 1]
        p = indptr[j] if lo == 0 else _first_row_at_least(&indices[0], indptr[j], end, lo)
        while p < end and indices[p] < hi:
            out[indices[p]] += vk * data[p]
            p = p + 1


def margins_csc(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                const double[:] w, const long long[:] cols, double b, double[::1] out,
                int n_threads=1):
    """``out = X[:, cols] @ w[cols] + b`` for canonical CSC ``X`` (only the listed columns
    are read); with ``n_threads`` > 1 each thread takes a block of rows (the same sums)."""
    cdef Py_ssize_t t, n = out.shape[0]
    cdef Py_ssize_t T = max(1, min(n_threads, n))
    with nogil:
        if T == 1:
            _margins_rows(data, indices, indptr, cols, w, True, b, &out[0], 0, n)
        else:
            for t in prange(T, num_threads=T, schedule="static", chunksize=1):
                _margins_rows(data, indices, indptr, cols, w, True, b, &out[0],
                              _block_start(t, T, n), _block_start(t + 1, T, n))


def margins_dense(const floating[::1, :] X, const double[:] w, const long long[:] cols,
                  double b, double[::1] out, const long long[::1] lo=None,
                  const long long[::1] hi=None, int n_threads=1):
    """``out = X[:, cols] @ w[cols] + b`` for a Fortran-ordered dense ``X``.

    ``cols`` must hold every column where ``w`` is nonzero. Column j is read on its rows
    ``lo[j]:hi[j]`` only, which must hold all its nonzeros (:func:`column_row_ranges`;
    default: every row). For float64, ``dgemv`` on blocks of columns when ``cols`` holds at
    least half of the columns (see :func:`hessp_dense`), else one ``daxpy`` per listed column.
    With ``n_threads`` > 1 each thread takes a block of rows (:func:`_dense_block_start`).
    """
    cdef Py_ssize_t t, n = X.shape[0]
    cdef Py_ssize_t T = _dense_threads(n_threads, n)
    cdef bint full = (floating is double and n > 0 and 2 * cols.shape[0] >= X.shape[1]
                      and cols.shape[0] > 0 and w.strides[0] == 8)
    if lo is None or hi is None:
        lo, hi = _every_row(X.shape[0], X.shape[1], lo, hi)
    _check_ranges(lo, hi, X.shape[0], X.shape[1])
    with nogil:
        if T == 1:
            _margins_dense_rows(X, w, cols, b, full, lo, hi, &out[0], 0, n)
        else:
            for t in prange(T, num_threads=T, schedule="static", chunksize=1):
                _margins_dense_rows(X, w, cols, b, full, lo, hi, &out[0],
                                    _dense_block_start(t, T, n), _dense_block_start(t + 1, T, n))


cdef inline void _margins_dense_rows(const floating[::1, :] X, const double[:] w,
                                     const long long[:] cols, double b, bint full,
                                     const long long[::1] lo, const long long[::1] hi,
                                     double* out, Py_ssize_t r0, Py_ssize_t r1) noexcept nogil:
    """Rows r0..r1-1 of :func:`margins_dense` (``full``: by ``dgemv``, w zero outside cols)."""
    cdef Py_ssize_t i, j, k
    for i in range(r0, r1):
        out[i] = b
    if floating is double:
        if full:
            _gemv_ranges(b"N", X, lo, hi, &w[0], out, 0, X.shape[1], r0, r1)
            return
    for k in range(cols.shape[0]):
        j = cols[k]
        _add_column(X, j, max(lo[j], r0), min(hi[j], r1), w[j], out)


cdef inline Py_ssize_t _dense_threads(int n_threads, Py_ssize_t n) noexcept nogil:
    """The threads of a dense kernel's blocks of rows: at most one per 64 rows."""
    return max(1, min(<Py_ssize_t>n_threads, n // 64))


cdef inline Py_ssize_t _dense_block_start(Py_ssize_t t, Py_ssize_t T,
                                          Py_ssize_t n) noexcept nogil:
    """The first row of block ``t`` of ``T`` of a dense X's rows, a multiple of 16: BLAS's
    ``dgemv`` and ``daxpy`` take a call's rows in small groups from its first and the last
    few one by one, so that a row of a column read from row 0 gets the same sum whatever
    the thread count (other rows may round otherwise)."""
    if t >= T:
        return n
    return (t * n // T) // 16 * 16


def column_row_ranges(const floating[::1, :] X, long long[::1] lo, long long[::1] hi):
    """Write the rows ``[lo[j], hi[j])`` that hold the nonzeros of each column j of a
    Fortran-ordered dense ``X`` (0, 0 for a column of zeros).

    Each column is scanned from both ends up to its first and last nonzero. The dense
    kernels read only these rows: a triangular X costs them half the memory traffic.
    """
    cdef Py_ssize_t i, j, n = X.shape[0], p = X.shape[1]
    if lo.shape[0] != p or hi.shape[0] != p:
        raise ValueError(f"lo and hi must have shape ({p},), got ({lo.shape[0]},) and "
                         f"({hi.shape[0]},)")
    with nogil:
        for j in range(p):
            i = 0
            while i < n and X[i, j] == 0:
                i += 1
            if i == n:
                lo[j] = 0
                hi[j] = 0
                continue
            lo[j] = i
            i = n
            while X[i - 1, j] == 0:
                i -= 1
            hi[j] = i


cdef tuple _every_row(Py_ssize_t n, Py_ssize_t p, lo, hi):
    """The default row ranges, every row of every column (``lo`` and ``hi`` both None)."""
    if lo is not None or hi is not None:
        raise ValueError("lo and hi must be given together")
    return np.zeros(p, dtype=np.int64), np.full(p, n, dtype=np.int64)


cdef int _check_ranges(const long long[::1] lo, const long long[::1] hi, Py_ssize_t n,
                       Py_ssize_t p) except -1:
    """Refuse row ranges that are not p pairs 0 <= lo <= hi <= n (a typed pass: the kernels
    run once per CG product)."""
    cdef Py_ssize_t j
    cdef bint bad = False
    if lo.shape[0] != p or hi.shape[0] != p:
        raise ValueError(f"lo and hi must have shape ({p},), got ({lo.shape[0]},) and "
                         f"({hi.shape[0]},)")
    with nogil:
        for j in range(p):
            if lo[j] < 0 or lo[j] > hi[j] or hi[j] > n:
                bad = True
                break
    if bad:
        raise ValueError(f"row ranges must satisfy 0 <= lo <= hi <= {n}")
    return 0


cdef inline void _block_rows(const long long[::1] lo, const long long[::1] hi, Py_ssize_t s,
                             Py_ssize_t e, Py_ssize_t* a, Py_ssize_t* b) noexcept nogil:
    """[a, b): the rows spanned by the nonzero columns s..e-1 (a = b = 0 if none)."""
    cdef Py_ssize_t j
    a[0], b[0] = -1, 0
    for j in range(s, e):
        if hi[j] > lo[j]:
            if a[0] < 0 or lo[j] < a[0]:
                a[0] = lo[j]
            if hi[j] > b[0]:
                b[0] = hi[j]
    if a[0] < 0:
        a[0] = 0


cdef inline void _gemv_ranges(char* trans, const double[::1, :] X, const long long[::1] lo,
                              const long long[::1] hi, const double* v, double* out,
                              Py_ssize_t c0, Py_ssize_t c1, Py_ssize_t r0,
                              Py_ssize_t r1) noexcept nogil:
    """"N": ``out[r0:r1] += X[r0:r1, c0:c1] v[c0:c1]``; "T": ``out[c0:c1] = X[:, c0:c1]^T v``;
    each column read only on its row range.

    Columns go in blocks of 64 from ``c0``, each block by one ``dgemv`` over the rows its
    columns span; consecutive blocks spanning the same rows share one call (a dense X is one
    ``dgemv``). The threaded kernels split the columns at multiples of 64 ("T") or the rows
    of each call ("N"), so that each column's or row's sum is taken as in one call.
    """
    cdef Py_ssize_t s = c0, e, e2, a, b, a2, b2, j
    cdef int m, nc, ld = <int>X.shape[0], one = 1
    cdef double alpha = 1.0, beta = 1.0 if trans[0] == b"N" else 0.0
    while s < c1:
        e = min(s + 64, c1)
        _block_rows(lo, hi, s, e, &a, &b)
        while e < c1:
            e2 = min(e + 64, c1)
            _block_rows(lo, hi, e, e2, &a2, &b2)
            if a2 != a or b2 != b:
                break
            e = e2
        if trans[0] == b"N":
            a, b = max(a, r0), min(b, r1)
        if b > a:
            m, nc = <int>(b - a), <int>(e - s)
            if trans[0] == b"N":
                dgemv(trans, &m, &nc, &alpha, <double*>&X[a, s], &ld, <double*>&v[s], &one,
                      &beta, &out[a], &one)
            else:
                dgemv(trans, &m, &nc, &alpha, <double*>&X[a, s], &ld, <double*>&v[a], &one,
                      &beta, &out[s], &one)
        elif trans[0] != b"N":
            for j in range(s, e):
                out[j] = 0.0
        s = e


cdef inline void _column_sums(const floating[::1, :] X, const long long[::1] lo,
                              const long long[::1] hi, const double* r, double* out,
                              Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """``out[c0:c1] = X[:, c0:c1]^T r``, each column on its row range (``dgemv`` for
    float64 on at least one row)."""
    cdef Py_ssize_t j
    if floating is double:
        if X.shape[0] > 0:
            _gemv_ranges(b"T", X, lo, hi, r, out, c0, c1, 0, X.shape[0])
            return
    for j in range(c0, c1):
        out[j] = _dense_column_dot(X, j, lo, hi, r)


cdef void _all_column_sums(const floating[::1, :] X, const long long[::1] lo,
                           const long long[::1] hi, const double* r, double* out,
                           int n_threads) noexcept nogil:
    """``out = X^T r`` (:func:`_column_sums`) among ``n_threads``: blocks of 64 columns for
    float64 (``dgemv``'s), single columns for float32."""
    cdef Py_ssize_t c, p = X.shape[1], n_blocks = (X.shape[1] + 63) // 64
    cdef Py_ssize_t T = max(1, min(<Py_ssize_t>n_threads, n_blocks if floating is double
                                   else p))
    if T == 1:
        _column_sums(X, lo, hi, r, out, 0, p)
    elif floating is double:
        for c in prange(n_blocks, num_threads=T, schedule="static"):
            _column_sums(X, lo, hi, r, out, 64 * c, min(64 * c + 64, p))
    else:
        for c in prange(p, num_threads=T, schedule="static"):
            out[c] = _dense_column_dot(X, c, lo, hi, r)


cdef inline void _add_column(const floating[::1, :] X, Py_ssize_t j, Py_ssize_t a,
                             Py_ssize_t b, double c, double* out) noexcept nogil:
    """``out[a:b] += c X[a:b, j]`` (``daxpy`` for float64)."""
    cdef Py_ssize_t i
    if b <= a:
        return
    if floating is double:
        _axpy(b - a, c, &X[a, j], out + a)
    else:
        for i in range(a, b):
            out[i] += c * X[i, j]


cdef inline void _axpy(Py_ssize_t n, double a, const double* x, double* y) noexcept nogil:
    """``y += a x`` by BLAS ``daxpy``."""
    cdef int nn = <int>n, one = 1
    daxpy(&nn, &a, <double*>x, &one, y, &one)


cdef inline double _dot(Py_ssize_t n, const double* x, const double* y) noexcept nogil:
    """``x . y`` by BLAS ``ddot``."""
    cdef int nn = <int>n, one = 1
    return ddot(&nn, <double*>x, &one, <double*>y, &one)


def margins_csr(const floating[::1] data, const index_t[::1] indices,
                const index_t[::1] indptr, const double[::1] w, double b, double[:] out,
                int n_threads=1):
    """``out = X @ w + b`` for CSR ``X`` (one gather per row; rows among ``n_threads``)."""
    cdef Py_ssize_t i, start
    with nogil:
        if n_threads <= 1:
            for i in range(out.shape[0]):
                start = indptr[i]
                out[i] = b + sparse_dot(&data[start], &indices[start], &w[0],
                                        indptr[i + 1] - start)
        else:
            for i in prange(out.shape[0], num_threads=n_threads, schedule="guided"):
                start = indptr[i]
                out[i] = b + sparse_dot(&data[start], &indices[start], &w[0],
                                        indptr[i + 1] - start)


# ---------------------------------------------------------------- gradient  g = X^T r
def rmatvec_csc(data, indices, indptr, r, out, int n_threads=1):
    """``out = X.T @ r`` for CSC ``X``: the CSR arrays of ``X.T``, so one gather per column
    by :func:`margins_csr` with no offset (columns among ``n_threads``)."""
    margins_csr(data, indices, indptr, r, 0.0, out, n_threads)


def rmatvec_dense(const floating[::1, :] X, const double[::1] r, double[::1] out,
                  const long long[::1] lo=None, const long long[::1] hi=None,
                  int n_threads=1):
    """``out = X.T @ r`` for a Fortran-ordered dense ``X``, column j read on its rows
    ``lo[j]:hi[j]`` (default: all; ``dgemv`` on blocks of columns for float64); blocks of
    64 columns among ``n_threads`` (the same sums)."""
    if lo is None or hi is None:
        lo, hi = _every_row(X.shape[0], X.shape[1], lo, hi)
    _check_ranges(lo, hi, X.shape[0], X.shape[1])
    if X.shape[1] == 0:
        return
    with nogil:
        _all_column_sums(X, lo, hi, &r[0], &out[0], n_threads)


def rmatvec_csr(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                const double[:] r, double[:] out, bint square=False):
    """``out = X.T @ r`` for CSR ``X`` (one scatter per row); with ``square``, of the
    entries' squares (``r`` the curvature weights: the diagonal of :func:`hessp_csr`'s
    product on every column)."""
    cdef Py_ssize_t i, p
    cdef double ri, a
    with nogil:
        for p in range(out.shape[0]):
            out[p] = 0.0
        for i in range(r.shape[0]):
            ri = r[i]
            if ri != 0.0:
                for p in range(indptr[i], indptr[i + 1]):
                    a = data[p]
                    out[indices[p]] += ri * (a * a if square else a)


# ---------------------------------------------------------------- pointwise losses
def logistic_pointwise(const double[:] m, const double[:] y, const double[:] sw,
                       double[:] r, double[:] D, int n_threads=1):
    """Weighted logistic loss ``sum sw_i log(1 + exp(-y_i m_i))`` and its pointwise terms.

    Writes ``r_i = d loss_i / d m_i = -y_i sw_i sigma(-y_i m_i)`` and
    ``D_i = sw_i sigma(y_i m_i) sigma(-y_i m_i)`` (the Hessian weights).
    One exp and one log1p per sample, on ``e = exp(-|z|) <= 1`` (no overflow). With
    ``n_threads`` > 1 the samples' terms are computed among the threads and summed in
    order on one (the same sum).
    """
    cdef Py_ssize_t i, n = m.shape[0]
    cdef Py_ssize_t T = max(1, min(<Py_ssize_t>n_threads, n))
    cdef double total = 0.0
    cdef double[::1] terms
    if T == 1:
        with nogil:
            for i in range(n):
                total += _logistic_point(-y[i] * m[i], sw[i], y[i], &r[i], &D[i])
        return total
    terms = np.empty(n)
    with nogil:
        for i in prange(n, num_threads=T, schedule="static"):
            terms[i] = _logistic_point(-y[i] * m[i], sw[i], y[i], &r[i], &D[i])
        for i in range(n):
            total += terms[i]
    return total


cdef inline double _logistic_point(double z, double s_w, double y_i, double* r_i,
                                   double* D_i) noexcept nogil:
    """One sample's ``s_w log(1 + exp(z))``, z = -y m, with its ``r_i`` and ``D_i`` written."""
    cdef double e = exp(-fabs(z)), s, loss
    if z > 0.0:
        loss = s_w * (z + log1p(e))
        s = 1.0 / (1.0 + e)          # sigma(z)
    else:
        loss = s_w * log1p(e)
        s = e / (1.0 + e)
    D_i[0] = s_w * s * (1.0 - s) if z < 0.0 else s_w * s * (e / (1.0 + e))
    r_i[0] = -y_i * s_w * s
    return loss


def logistic_dual_terms(const double[::1] m, const double[::1] y, const double[::1] sw,
                        double alpha, double b):
    """``sum sw_i (H(t_i) - t_i y_i b)`` with ``t_i = alpha sigma(-y_i m_i)`` and H the binary
    entropy (0 log 0 = 0): the data part of the logistic dual objective.

    ``log t`` is ``log alpha + log sigma(-y m)`` and ``1 - t`` is
    ``sigma(y m) + (1 - alpha) sigma(-y m)``: both exact where ``t`` is within rounding of 1.
    One exp, one log1p and one log per sample.
    """
    cdef Py_ssize_t i, n = m.shape[0]
    cdef double z, e, lse, s, sc, log_s, t, u, h, log_alpha, total = 0.0
    if y.shape[0] != n or sw.shape[0] != n:
        raise ValueError(f"m, y and sw must have the same length, got {n}, {y.shape[0]}, "
                         f"{sw.shape[0]}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
    if alpha == 0.0:
        return 0.0   # t = 0: H(0) = 0
    log_alpha = log(alpha)
    with nogil:
        for i in range(n):
            z = -y[i] * m[i]
            e = exp(-fabs(z))
            lse = log1p(e)
            if z >= 0.0:   # s = sigma(z), sc = sigma(-z)
                s, sc, log_s = 1.0 / (1.0 + e), e / (1.0 + e), -lse
            else:
                s, sc, log_s = e / (1.0 + e), 1.0 / (1.0 + e), z - lse
            t = alpha * s
            u = sc + (1.0 - alpha) * s
            h = -t * (log_alpha + log_s)
            if u > 0.0:
                h -= u * log(u)
            total += sw[i] * (h - t * y[i] * b)
    return total


def quadratic_pointwise(const double[:] m, const double[:] y, const double[:] sw,
                        double[:] r, double[:] D):
    """Weighted squared loss ``sum sw_i (m_i - y_i)^2 / 2``; ``r_i = sw_i (m_i - y_i)``, ``D_i = sw_i``."""
    cdef Py_ssize_t i
    cdef double e, total = 0.0
    with nogil:
        for i in range(m.shape[0]):
            e = m[i] - y[i]
            total += 0.5 * sw[i] * e * e
            r[i] = sw[i] * e
            D[i] = sw[i]
    return total


# ---------------------------------------------------------------- subspace Hessian products
def hessp_csc(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              const long long[:] cols, const double[:] D, const double[:] v, bint intercept,
              double[::1] tmp, double[:] out, int n_threads=1):
    """``out = [X_F, 1]^T diag(D) [X_F, 1] v`` on the free columns ``F = cols`` of canonical
    CSC ``X``.

    ``v`` holds one entry per listed column, plus a last entry for the intercept column of
    ones when ``intercept`` is true. ``tmp`` is an n-vector work buffer. Costs 2 nnz(X_F);
    the columns are read in place (no slice is copied). With ``n_threads`` > 1, ``X_F v``
    by blocks of rows and ``X_Fᵀ (D ⊙ ·)`` by columns among the threads: the same sums.
    """
    cdef Py_ssize_t i, k, t, nf = cols.shape[0], n = D.shape[0]
    cdef Py_ssize_t T = max(1, min(n_threads, n))
    cdef double s
    with nogil:
        s = v[nf] if intercept else 0.0
        if T == 1:
            _weighted_rows(data, indices, indptr, cols, v, s, D, &tmp[0], 0, n)
            for k in range(nf):
                out[k] = _column_dot(data, indices, indptr, cols[k], &tmp[0])
        else:
            for t in prange(T, num_threads=T, schedule="static", chunksize=1):
                _weighted_rows(data, indices, indptr, cols, v, s, D, &tmp[0],
                               _block_start(t, T, n), _block_start(t + 1, T, n))
            for k in prange(nf, num_threads=T, schedule="guided"):
                out[k] = _column_dot(data, indices, indptr, cols[k], &tmp[0])
        if intercept:
            s = 0.0
            for i in range(n):
                s = s + tmp[i]
            out[nf] = s


cdef inline void _weighted_rows(const floating[::1] data, const index_t[::1] indices,
                                const index_t[::1] indptr, const long long[:] cols,
                                const double[:] v, double s, const double[:] D, double* tmp,
                                Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """``tmp[lo:hi] = D[lo:hi] (s + X[lo:hi, cols] @ v)``, ``v[k]`` the weight of column
    ``cols[k]`` (see :func:`_margins_rows`)."""
    cdef Py_ssize_t i
    _margins_rows(data, indices, indptr, cols, v, False, s, tmp, lo, hi)
    for i in range(lo, hi):
        tmp[i] *= D[i]


cdef inline double _column_dot(const floating[::1] data, const index_t[::1] indices,
                               const index_t[::1] indptr, Py_ssize_t j,
                               const double* r) noexcept nogil:
    """Column j of CSC ``X`` dotted with the n-vector ``r``."""
    cdef Py_ssize_t p = indptr[j]
    return sparse_dot(&data[0] + p, &indices[0] + p, r, indptr[j + 1] - p)


def free_slice_csr(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const long long[::1] cols,
                   long long[::1] sptr, floating[::1] sdata, int[::1] sind):
    """The free columns ``cols`` (increasing) of canonical CSC ``X`` copied by rows, for
    :func:`hessp_free_slice`; returns the entries copied.

    ``sptr`` (n + 1 entries) gets the rows' offsets; ``sdata`` and ``sind`` (at least
    nnz(X_F) entries) the values and, for the entry at position q of the k-th listed column,
    ``4 k + a``: ``a`` the one of the four partial sums that :func:`hessp_csc` adds it to in
    that column's dot product (q mod 4, or 0 for the last q mod 4 entries of the column).
    """
    cdef Py_ssize_t n = sptr.shape[0] - 1, nf = cols.shape[0], k, j, p, start, end, full, i
    cdef long long dst, nnz = 0
    cdef bint bad = n < 0 or bad_cols(cols, indptr.shape[0] - 1) or 4 * nf >= 2**31
    for k in range(nf if not bad else 0):
        j = cols[k]
        bad = (k > 0 and j <= cols[k - 1]) or indptr[j] < 0 or indptr[j + 1] < indptr[j] \
            or indptr[j + 1] > min(data.shape[0], indices.shape[0])
        if bad:
            break
        nnz += indptr[j + 1] - indptr[j]
    if bad or sdata.shape[0] < nnz or sind.shape[0] < nnz:
        raise ValueError("free_slice_csr needs CSC arrays, increasing columns within them, "
                         f"n + 1 = len(sptr) rows and room for the {nnz} entries")
    cdef long long[::1] pos = np.empty(max(n, 1), dtype=np.int64)
    with nogil:
        for i in range(n + 1):
            sptr[i] = 0
        for k in range(nf):
            j = cols[k]
            for p in range(indptr[j], indptr[j + 1]):
                i = indices[p]
                if i < 0 or i >= n:
                    bad = True
                    break
                sptr[i + 1] += 1
    if bad:
        raise ValueError("free_slice_csr: a row index outside [0, n)")
    with nogil:
        for i in range(n):
            sptr[i + 1] += sptr[i]
            pos[i] = sptr[i]
        for k in range(nf):
            j = cols[k]
            start, end = indptr[j], indptr[j + 1]
            full = start + ((end - start) & ~3)
            for p in range(start, end):
                i = indices[p]
                dst = pos[i]
                pos[i] = dst + 1
                sdata[dst] = data[p]
                sind[dst] = <int>(4 * k + (((p - start) & 3) if p < full else 0))
    return nnz


def hessp_free_slice(const floating[::1] sdata, const int[::1] sind, const long long[::1] sptr,
                     const double[::1] D, const double[::1] v, double s, double[::1] acc,
                     double[::1] out):
    """``out = X_Fᵀ diag(D) (X_F v + s)`` on a slice of :func:`free_slice_csr`, in one pass
    over its rows; returns ``Σᵢ Dᵢ (xᵢᵀ v + s)``, the intercept's entry.

    The same sums as :func:`hessp_csc` on those columns, in the same order, bit for bit:
    each row's X_F v adds its entries in column order, skipping zero weights, and each
    column's dot product adds its rows in order into the four partial sums ``sind`` names
    (``acc``: 4 |F| entries). A row is read once from memory while ``v`` and ``acc`` stay in
    cache, where :func:`hessp_csc` reads the columns twice and updates an n-vector between.
    Entries of ``v`` set to zero leave their columns out of X_F v (a sub-slice's product).
    """
    cdef Py_ssize_t n = D.shape[0], nf = out.shape[0], i, p, k, start, end
    cdef double t, vk, total = 0.0
    if sptr.shape[0] != n + 1 or v.shape[0] != nf or acc.shape[0] < 4 * nf \
            or sptr[n] > sdata.shape[0] or sptr[n] > sind.shape[0]:
        raise ValueError("hessp_free_slice: the slice, D, v, acc and out do not match")
    with nogil:
        for k in range(4 * nf):
            acc[k] = 0.0
        for i in range(n):
            t = s
            start, end = sptr[i], sptr[i + 1]
            for p in range(start, end):
                vk = v[sind[p] >> 2]
                if vk != 0.0:
                    t = t + vk * sdata[p]
            t = t * D[i]
            total = total + t
            for p in range(start, end):
                acc[sind[p]] += sdata[p] * t
        for k in range(nf):
            out[k] = (acc[4 * k] + acc[4 * k + 1]) + (acc[4 * k + 2] + acc[4 * k + 3])
    return total


def hessp_csr(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
              const double[::1] D, const double[::1] v, double b, double[::1] out):
    """``out = Xᵀ diag(D) (X v + b)`` for CSR ``X``, in one pass over its rows; returns
    ``Σᵢ Dᵢ (xᵢᵀ v + b)``, the product's intercept entry.

    ``v`` and ``out`` span all the columns: for the subspace product on the free columns F,
    ``v`` is zero off F and ``out`` is read on F. Each row is read once while ``v`` and
    ``out`` stay in cache; :func:`hessp_csc` instead updates an n-vector column by column in
    two passes, which misses the cache at every entry once X is tall (4,194,304 rows: 4.9x
    this kernel's time). Rows with ``D`` 0 are skipped.
    """
    cdef Py_ssize_t i, p, start, m
    cdef double t, s = 0.0
    with nogil:
        for p in range(out.shape[0]):
            out[p] = 0.0
        for i in range(D.shape[0]):
            start = indptr[i]
            m = indptr[i + 1] - start
            if D[i] == 0.0:
                continue
            t = b
            if m > 0:
                t = t + sparse_dot(&data[start], &indices[start], &v[0], m)
            t = t * D[i]
            s += t
            for p in range(start, start + m):
                out[indices[p]] += t * data[p]
    return s


def hessp_dense(const floating[::1, :] X, const long long[:] cols, const double[:] D,
                const double[::1] v, bint intercept, double[::1] tmp, double[::1] out,
                const long long[::1] lo=None, const long long[::1] hi=None,
                int n_threads=1):
    """Dense (Fortran-ordered) version of :func:`hessp_csc` (BLAS for float64); column j is
    read on its rows ``lo[j]:hi[j]`` only (see :func:`margins_dense`).

    For float64, when ``cols`` holds at least half of the columns, ``v`` is scattered into a
    zero vector over all columns and the product is two ``dgemv`` passes over the matrix (the
    streaming ``dgemv`` is about twice as fast per entry as column-wise level-1 calls);
    otherwise one ``daxpy`` and one ``ddot`` per listed column. With ``n_threads`` > 1,
    ``X_F v`` by blocks of rows and ``X_Fᵀ (D ⊙ ·)`` by columns among the threads.
    """
    cdef Py_ssize_t i, k, t, nf = cols.shape[0], n = X.shape[0], p = X.shape[1]
    cdef Py_ssize_t T = _dense_threads(n_threads, n)
    cdef double s
    cdef bint full = floating is double and n > 0 and 2 * nf >= p and nf > 0
    cdef double[::1] vp = np.zeros(p if full else 1)
    cdef double[::1] hp = np.empty(p if full else 1)
    if lo is None or hi is None:
        lo, hi = _every_row(n, p, lo, hi)
    _check_ranges(lo, hi, n, p)
    with nogil:
        s = v[nf] if intercept else 0.0
        if full:
            for k in range(nf):
                vp[cols[k]] = v[k]
        if T == 1:
            _weighted_dense_rows(X, cols, v, vp, s, D, full, lo, hi, &tmp[0], 0, n)
        else:
            for t in prange(T, num_threads=T, schedule="static", chunksize=1):
                _weighted_dense_rows(X, cols, v, vp, s, D, full, lo, hi, &tmp[0],
                                     _dense_block_start(t, T, n),
                                     _dense_block_start(t + 1, T, n))
        if full:
            _all_column_sums(X, lo, hi, &tmp[0], &hp[0], T)
            for k in range(nf):
                out[k] = hp[cols[k]]
        elif T == 1:
            for k in range(nf):
                out[k] = _dense_column_dot(X, cols[k], lo, hi, &tmp[0])
        else:
            for k in prange(nf, num_threads=T, schedule="guided"):
                out[k] = _dense_column_dot(X, cols[k], lo, hi, &tmp[0])
        if intercept:
            s = 0.0
            for i in range(n):
                s += tmp[i]
            out[nf] = s


cdef inline void _weighted_dense_rows(const floating[::1, :] X, const long long[:] cols,
                                      const double[::1] v, const double[::1] vp, double s,
                                      const double[:] D, bint full, const long long[::1] lo,
                                      const long long[::1] hi, double* tmp, Py_ssize_t r0,
                                      Py_ssize_t r1) noexcept nogil:
    """``tmp[r0:r1] = D[r0:r1] (s + X[r0:r1, cols] @ v)`` (``full``: by ``dgemv`` with ``vp``,
    ``v`` scattered over every column)."""
    cdef Py_ssize_t i, j, k
    for i in range(r0, r1):
        tmp[i] = s
    if floating is double and full:
        _gemv_ranges(b"N", X, lo, hi, &vp[0], tmp, 0, X.shape[1], r0, r1)
    else:
        for k in range(cols.shape[0]):
            if v[k] != 0.0:
                j = cols[k]
                _add_column(X, j, max(lo[j], r0), min(hi[j], r1), v[k], tmp)
    for i in range(r0, r1):
        tmp[i] *= D[i]


cdef inline double _dense_column_dot(const floating[::1, :] X, Py_ssize_t j,
                                     const long long[::1] lo, const long long[::1] hi,
                                     const double* r) noexcept nogil:
    """Column j of a dense X dotted with the n-vector r on its row range (``ddot`` for
    float64; for float32 four running sums, every fourth row each, added at the end: one
    sum's chain of additions waits on each one, 4x slower on a 1,000,000-row column)."""
    cdef Py_ssize_t i = lo[j], end = hi[j]
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    if floating is double:
        return _dot(end - i, &X[i, j], r + i) if end > i else 0.0
    while i + 4 <= end:
        s0 += X[i, j] * r[i]
        s1 += X[i + 1, j] * r[i + 1]
        s2 += X[i + 2, j] * r[i + 2]
        s3 += X[i + 3, j] * r[i + 3]
        i = i + 4
    while i < end:
        s0 += X[i, j] * r[i]
        i = i + 1
    return (s0 + s1) + (s2 + s3)


# ---------------------------------------------------------------- sets, subgradient, orthant
def subgradient_and_sets(const double[:] x, const double[:] grad, const double[:] mu,
                         double[:] g, double[:] zeta, signed char[:] code):
    """Minimum-norm subgradient (2.4), orthant signs (2.12) and the sets (2.5)-(2.7).

    ``mu[i]`` is the l1 weight of coordinate i (0: unpenalized, always free).
    ``code[i]`` is 0 for 𝒜 (zero, |grad| <= mu), 1 for ℱ (nonzero or unpenalized),
    2 for 𝒰 (zero, |grad| > mu). Returns the optimality measure
    ``||x - S_mu(x - grad)||_inf`` (the unit-step ISTA residual, OBA's stopping measure).
    """
    cdef Py_ssize_t i
    cdef double xi, gi, mi, z, res, opt = 0.0
    with nogil:
        for i in range(x.shape[0]):
            xi = x[i]
            gi = grad[i]
            mi = mu[i]
            if mi == 0.0:
                g[i] = gi
                zeta[i] = 0.0
                code[i] = 1
            elif xi > 0.0:
                g[i] = gi + mi
                zeta[i] = 1.0
                code[i] = 1
            elif xi < 0.0:
                g[i] = gi - mi
                zeta[i] = -1.0
                code[i] = 1
            elif gi + mi < 0.0:
                g[i] = gi + mi
                zeta[i] = 1.0
                code[i] = 2
            elif gi - mi > 0.0:
                g[i] = gi - mi
                zeta[i] = -1.0
                code[i] = 2
            else:
                g[i] = 0.0
                zeta[i] = 0.0
                code[i] = 0
            # residual x - S_mu(x - grad) = x - clip to [grad - mu, grad + mu] form
            z = xi - gi
            if z > mi:
                res = xi - (z - mi)
            elif z < -mi:
                res = xi - (z + mi)
            else:
                res = xi
            res = fabs(res)
            if res > opt:
                opt = res
    return opt


cdef enum:
    # terms summed into one partial sum before it joins the total (two-level summation:
    # the rounding error grows with the block length plus the number of blocks, not n)
    SUM_BLOCK = 4096


def weighted_l1(const double[::1] w, const double[::1] x):
    """``Σᵢ wᵢ |xᵢ|`` in one pass, summed in blocks."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double total = 0.0, part = 0.0
    if w.shape[0] != n:
        raise ValueError("weighted_l1: w and x must have the same length")
    with nogil:
        for i in range(n):
            part = part + w[i] * fabs(x[i])
            if (i + 1) % SUM_BLOCK == 0:
                total = total + part
                part = 0.0
    return total + part


def ista_point(const double[::1] x, const double[::1] grad, const double[::1] mu,
               double L, double[::1] out=None):
    """The proximal-gradient point ``p = S_{μ/L}(x − ∇f / L)`` (S the soft-thresholding
    operator, ``sign(z) max(|z| − t, 0)``) in one pass, written to ``out`` unless it is
    None; returns ``(∇fᵀs, sᵀs, Σᵢ μᵢ |pᵢ|)`` for ``s = p − x``, the terms of the ISTA
    model Γ (the same with or without ``out``)."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef bint write = out is not None
    cdef double z, t, p, si, gs = 0.0, ss = 0.0, pen = 0.0, gs_p = 0.0, ss_p = 0.0
    cdef double pen_p = 0.0
    if grad.shape[0] != n or mu.shape[0] != n or (write and out.shape[0] != n):
        raise ValueError("ista_point: x, grad, mu and out must have the same length")
    if not L > 0.0:
        raise ValueError(f"ista_point: L must be positive, got {L!r}")
    with nogil:
        for i in range(n):
            z = x[i] - grad[i] / L
            t = mu[i] / L
            if z > t:
                p = z - t
            elif z < -t:
                p = z + t
            else:
                p = 0.0
            if write:
                out[i] = p
            si = p - x[i]
            gs_p = gs_p + grad[i] * si
            ss_p = ss_p + si * si
            pen_p = pen_p + mu[i] * fabs(p)
            if (i + 1) % SUM_BLOCK == 0:
                gs, ss, pen = gs + gs_p, ss + ss_p, pen + pen_p
                gs_p = ss_p = pen_p = 0.0
    return gs + gs_p, ss + ss_p, pen + pen_p


def model_trial(const double[::1] x, const double[::1] grad, const double[::1] zeta,
                const double[::1] mu, const long long[::1] free, const double[::1] d,
                double alpha, double[::1] xn, long long[::1] crossed):
    """One trial of OBA's model search on the coordinates ``free``: ``xn = P(x_F + α d)``
    (the orthant projection of (2.13), unpenalized coordinates kept) in one pass; returns
    ``(∇f_Fᵀ (xn − x_F), Σ μ_F (|xn| − |x_F|), c)`` with the positions (in ``free``) of
    the ``c`` coordinates the projection set to zero written to ``crossed[:c]``."""
    cdef Py_ssize_t j, i, m = free.shape[0], n = x.shape[0], c = 0, bad = -1
    cdef double xi, u, p, gd = 0.0, pen = 0.0, gd_p = 0.0, pen_p = 0.0
    if grad.shape[0] != n or zeta.shape[0] != n or mu.shape[0] != n:
        raise ValueError("model_trial: x, grad, zeta and mu must have the same length")
    if d.shape[0] != m or xn.shape[0] != m or crossed.shape[0] != m:
        raise ValueError("model_trial: free, d, xn and crossed must have the same length")
    with nogil:
        for j in range(m):
            i = free[j]
            if i < 0 or i >= n:
                bad = j
                break
            xi = x[i]
            u = xi + alpha * d[j]
            p = u
            if mu[i] != 0.0 and u * zeta[i] <= 0.0:
                p = 0.0
                if u != 0.0:
                    crossed[c] = j
                    c = c + 1
            xn[j] = p
            gd_p = gd_p + grad[i] * (p - xi)
            pen_p = pen_p + mu[i] * (fabs(p) - fabs(xi))
            if (j + 1) % SUM_BLOCK == 0:
                gd, pen = gd + gd_p, pen + pen_p
                gd_p = pen_p = 0.0
    if bad >= 0:
        raise IndexError(f"model_trial: free[{bad}] = {free[bad]} is outside [0, {n})")
    return gd + gd_p, pen + pen_p, c


ctypedef struct _weighted:
    double value
    double weight
    double above    # the weight of the entries after this one in the sorted order


cdef int _by_value(const void* a, const void* b) noexcept nogil:
    cdef double u = (<const _weighted*> a).value, v = (<const _weighted*> b).value
    return (u > v) - (u < v)


def shift_to_median(double[::1] x, const double[::1] mu, Py_ssize_t size):
    """In place, subtract from each block of ``size`` consecutive entries of ``x`` the
    ``mu``-weighted median of the block nearest 0 among its entries of positive weight: a
    constant c minimizing Σₖ μₖ |xₖ − c| over the block, so that the block holds an exact
    zero where that entry was. A block is left alone where it has a zero entry (of positive
    weight) that is such a median, or no weight. Returns the number of blocks shifted.

    One pass over ``x`` finds the blocks whose positive (or negative) entries outweigh the
    others (each side's weights summed on its own, so that equal weights on as many entries
    tie exactly), and the balanced ones without a zero entry, where every c between the
    largest negative and the smallest positive entry is a median (the sum is flat there)
    and c is the one of the two nearer 0 (the positive one on a tie); only the first kind
    are sorted."""
    cdef Py_ssize_t block, m, k, n = x.shape[0], shifted = 0
    cdef double pos, nonpos, neg, nonneg, acc, side, c, lo, hi
    cdef _weighted* entries
    if mu.shape[0] != n:
        raise ValueError("shift_to_median: x and mu must have the same length")
    if size < 1 or n % size:
        raise ValueError(f"shift_to_median: size must be a positive divisor of len(x) = {n}, "
                         f"got {size}")
    entries = <_weighted*> malloc(size * sizeof(_weighted))
    if entries == NULL:
        raise MemoryError()
    with nogil:
        for block in range(n // size):
            m = block * size
            k = m
            while k < m + size and x[k] == 0.0:   # most blocks of a sparse model: no
                k += 1                            # weight read
            if k == m + size:
                continue
            # the weights of the entries > 0, <= 0, < 0 and >= 0, each summed on its own:
            # with equal weights, two sides of as many entries sum to the same double
            pos = nonpos = neg = nonneg = 0.0
            for k in range(m, m + size):
                if x[k] > 0.0:
                    pos = pos + mu[k]
                    nonneg = nonneg + mu[k]
                elif x[k] < 0.0:
                    neg = neg + mu[k]
                    nonpos = nonpos + mu[k]
                else:
                    nonpos = nonpos + mu[k]
                    nonneg = nonneg + mu[k]
            if pos > nonpos:
                side = 1.0
            elif neg > nonneg:
                side = -1.0
            elif pos == nonpos and neg == nonneg and pos > 0.0:
                # balanced, no zero: the penalty is flat between the largest negative and
                # the smallest positive entry; shift to the one nearer 0
                lo, hi = -INFINITY, INFINITY
                for k in range(m, m + size):
                    if mu[k] > 0.0:
                        if 0.0 < x[k] < hi:
                            hi = x[k]
                        elif lo < x[k] < 0.0:
                            lo = x[k]
                c = hi if hi <= -lo else lo
                for k in range(m, m + size):
                    x[k] = x[k] - c
                shifted += 1
                continue
            else:
                continue
            # the median on the heavy side: the first entry, in ascending side * x, whose
            # weight and those before it reach the weight of those after it
            for k in range(size):
                entries[k].value = side * x[m + k]
                entries[k].weight = mu[m + k]
            qsort(entries, size, sizeof(_weighted), _by_value)
            acc = 0.0
            for k in range(size - 1, -1, -1):
                entries[k].above = acc
                acc = acc + entries[k].weight
            acc = 0.0
            for k in range(size):
                acc = acc + entries[k].weight
                if acc >= entries[k].above:
                    break
            if not entries[k].value > 0.0:   # only a rounding tie: 0 is a median too
                continue
            c = side * entries[k].value
            for k in range(m, m + size):
                x[k] = x[k] - c
            shifted += 1
    free(entries)
    return shifted


# ---------------------------------------------------------------- top-tau selection
cdef inline void _swap(double* a, long long* ia, Py_ssize_t i, Py_ssize_t j) noexcept nogil:
    cdef double t = a[i]
    cdef long long ti = ia[i]
    a[i] = a[j]
    a[j] = t
    ia[i] = ia[j]
    ia[j] = ti


def top_k(double[:] key, long long[:] idx, Py_ssize_t k):
    """Reorder ``key``/``idx`` in place so their first ``k`` entries hold the ``k`` largest keys.

    Iterative quickselect with median-of-three pivots (expected O(len)); ties are kept
    in any order. Used for the greedy choice of 𝒰_F.
    """
    cdef Py_ssize_t lo = 0, hi = key.shape[0] - 1, i, j, mid
    cdef double pivot
    cdef double* a = &key[0] if key.shape[0] > 0 else NULL
    cdef long long* ia = &idx[0] if key.shape[0] > 0 else NULL
    if k <= 0 or k >= key.shape[0]:
        return
    with nogil:
        while hi > lo:
            mid = lo + (hi - lo) // 2
            # median of three, ordered descending: a[lo] >= a[mid] >= a[hi]
            if a[mid] > a[lo]:
                _swap(a, ia, mid, lo)
            if a[hi] > a[lo]:
                _swap(a, ia, hi, lo)
            if a[hi] > a[mid]:
                _swap(a, ia, hi, mid)
            pivot = a[mid]
            i = lo
            j = hi
            while i <= j:
                while a[i] > pivot:
                    i += 1
                while a[j] < pivot:
                    j -= 1
                if i <= j:
                    _swap(a, ia, i, j)
                    i += 1
                    j -= 1
            # now [lo, j] >= pivot >= [i, hi]
            if k - 1 <= j:
                hi = j
            elif k - 1 >= i:
                lo = i
            else:
                break


def hess_diag_csc(const floating[::1] data, const index_t[::1] indices, const index_t[::1] indptr,
                  const long long[:] cols, const double[:] D, bint intercept, double[:] out,
                  int n_threads=1):
    """Diagonal of ``[X_F, 1]^T diag(D) [X_F, 1]``, F = ``cols`` (the CG's Jacobi
    preconditioner); columns among ``n_threads``."""
    cdef Py_ssize_t i, k, nf = cols.shape[0]
    cdef double s
    with nogil:
        if n_threads <= 1:
            for k in range(nf):
                out[k] = _squares_dot(data, indices, indptr, cols[k], D)
        else:
            for k in prange(nf, num_threads=n_threads, schedule="guided"):
                out[k] = _squares_dot(data, indices, indptr, cols[k], D)
        if intercept:
            s = 0.0
            for i in range(D.shape[0]):
                s = s + D[i]
            out[nf] = s


cdef inline double _squares_dot(const floating[::1] data, const index_t[::1] indices,
                                const index_t[::1] indptr, Py_ssize_t j,
                                const double[:] D) noexcept nogil:
    """Σ_p X_pj² D_(row p) over column j's stored entries."""
    cdef Py_ssize_t p
    cdef double a, s = 0.0
    for p in range(indptr[j], indptr[j + 1]):
        a = data[p]
        s += a * a * D[indices[p]]
    return s


def hess_diag_dense(const floating[::1, :] X, const long long[:] cols, const double[::1] D,
                    bint intercept, double[:] out, const long long[::1] lo=None,
                    const long long[::1] hi=None, int n_threads=1):
    """Dense (Fortran-ordered) version of :func:`hess_diag_csc`; column j is read on its rows
    ``lo[j]:hi[j]`` only (see :func:`margins_dense`).

    Eight columns at a time, one pass over the rows they span: the weights D are read once
    per eight columns and the eight sums are independent chains (2.9× faster than a scaled
    copy and a ``ddot`` per column on a 5000 × 5000 matrix). The groups of eight among
    ``n_threads`` (the same sums).
    """
    cdef Py_ssize_t i, k, g, nf = cols.shape[0], n = X.shape[0]
    cdef Py_ssize_t groups = nf // 8 if n > 0 else 0
    cdef Py_ssize_t T = max(1, min(<Py_ssize_t>n_threads, groups))
    cdef double s, x
    if lo is None or hi is None:
        lo, hi = _every_row(n, X.shape[1], lo, hi)
    _check_ranges(lo, hi, n, X.shape[1])
    with nogil:
        if T == 1:
            for g in range(groups):
                _diag_eight(X, cols, 8 * g, D, lo, hi, out)
        else:
            for g in prange(groups, num_threads=T, schedule="static"):
                _diag_eight(X, cols, 8 * g, D, lo, hi, out)
        for k in range(8 * groups, nf):
            s = 0.0
            for i in range(lo[cols[k]], hi[cols[k]]):
                x = X[i, cols[k]]
                s += x * (x * D[i])
            out[k] = s
        if intercept:
            s = 0.0
            for i in range(D.shape[0]):
                s += D[i]
            out[nf] = s


cdef inline void _diag_eight(const floating[::1, :] X, const long long[:] cols, Py_ssize_t k,
                             const double[::1] D, const long long[::1] lo,
                             const long long[::1] hi, double[:] out) noexcept nogil:
    """``out[k:k + 8]``: the columns ``cols[k:k + 8]``' sums of x² D over the rows they span."""
    cdef Py_ssize_t i, c, a = X.shape[0], b = 0
    cdef double d, x
    cdef double acc[8]
    cdef const floating* col[8]
    for c in range(8):
        col[c] = &X[0, cols[k + c]]
        acc[c] = 0.0
        if hi[cols[k + c]] > lo[cols[k + c]]:
            a = min(a, lo[cols[k + c]])
            b = max(b, hi[cols[k + c]])
    for i in range(a, b):
        d = D[i]
        for c in range(8):
            x = col[c][i]
            acc[c] += x * (x * d)  # x (x D): 0, not inf * 0, at huge x
    for c in range(8):
        out[k + c] = acc[c]


cdef enum:
    # how cg_dense ended: its tolerance met; on the boundary of the radius or at
    # nonpositive curvature; out of iterations
    _CG_CONVERGED = 0
    _CG_BOUNDARY = 1
    _CG_MAXITER = 2

CG_CONVERGED, CG_BOUNDARY, CG_MAXITER = _CG_CONVERGED, _CG_BOUNDARY, _CG_MAXITER


def cg_dense(const double[:, ::1] G, const double[::1] b, double bnorm, double reg,
             double rtol, Py_ssize_t maxiter, double radius, const double[::1] minv,
             const double[::1] metric, double[::1] p, double[::1] r):
    """The iterations of :func:`sparsekit.optimize._cg.steihaug_cg` on a formed symmetric
    ``G``.

    Steihaug CG for (G + reg I) p = −b, preconditioned by ``minv`` (1/diagonal, or ones),
    stopped on ‖r‖_∞ ≤ rtol · ``bnorm`` (= ‖b‖_∞), at curvature dᵀ(G + reg I)d ≤ 1e-16 ‖d‖²
    or at the radius of the norm ‖p‖ = (Σᵢ metricᵢ pᵢ²)^½ (ones: the Euclidean norm);
    ``p`` and its residual ``r = b + (G + reg I) p`` are updated in
    place. The same steps as the Python loop, without its ~15 µs of interpreter work per
    iteration (a9a C = 1: 1 051 iterations, 17.6 ms). Returns ``(products, ended)``: the
    number of products with G and how the loop ended (``CG_CONVERGED``, ``CG_BOUNDARY``,
    ``CG_MAXITER``).
    """
    cdef Py_ssize_t k = b.shape[0], it
    cdef int ended = _CG_CONVERGED
    cdef double[::1] d = np.empty(k), z = np.empty(k), Hd = np.empty(k)
    if k == 0:
        return 0, _CG_CONVERGED
    with nogil:
        it = _cg_dense_loop(G, bnorm, reg, rtol, maxiter, radius, minv, metric, p, r, d, z,
                            Hd, &ended)
    return it, ended


cdef Py_ssize_t _cg_dense_loop(const double[:, ::1] G, double bnorm, double reg, double rtol,
                               Py_ssize_t maxiter, double radius, const double[::1] minv,
                               const double[::1] metric, double[::1] p, double[::1] r,
                               double[::1] d, double[::1] z, double[::1] Hd,
                               int *ended) noexcept nogil:
    cdef Py_ssize_t k = p.shape[0], i, it
    cdef double rz = 0.0, rz_next, dHd, dd, a, pp, v, rmax, beta
    cdef int n = <int>k, one = 1
    cdef double alpha = 1.0, zero = 0.0
    for i in range(k):
        z[i] = minv[i] * r[i]
        d[i] = -z[i]
        rz += r[i] * z[i]
    for it in range(1, maxiter + 1):
        # Hd = G d (G is row-major and symmetric: BLAS sees Gᵀ = G) + reg d
        dgemv(b"T", &n, &n, &alpha, <double*>&G[0, 0], &n, &d[0], &one, &zero, &Hd[0], &one)
        dHd = 0.0
        dd = 0.0
        for i in range(k):
            Hd[i] += reg * d[i]
            dHd += d[i] * Hd[i]
            dd += d[i] * d[i]
        if dHd <= 1e-16 * dd:
            _cg_to_boundary(p, d, Hd, r, radius, metric)
            ended[0] = _CG_BOUNDARY
            return it
        a = rz / dHd
        pp = 0.0
        for i in range(k):
            v = p[i] + a * d[i]
            pp += metric[i] * v * v
        if pp >= radius * radius:
            _cg_to_boundary(p, d, Hd, r, radius, metric)
            ended[0] = _CG_BOUNDARY
            return it
        rmax = 0.0
        for i in range(k):
            p[i] += a * d[i]
            r[i] += a * Hd[i]
            rmax = fmax(rmax, fabs(r[i]))
        if rmax <= rtol * bnorm:
            ended[0] = _CG_CONVERGED
            return it
        rz_next = 0.0
        for i in range(k):
            z[i] = minv[i] * r[i]
            rz_next += r[i] * z[i]
        beta = rz_next / rz
        for i in range(k):
            d[i] = -z[i] + beta * d[i]
        rz = rz_next
    ended[0] = _CG_MAXITER
    return maxiter


cdef void _cg_to_boundary(double[::1] p, const double[::1] d, const double[::1] Hd,
                          double[::1] r, double radius, const double[::1] metric) noexcept nogil:
    """p += t d and r += t Hd with t ≥ 0 such that ‖p + t d‖ = radius in the norm of
    ``metric``."""
    cdef Py_ssize_t i
    cdef double pd = 0.0, dd = 0.0, pp = 0.0, t
    for i in range(p.shape[0]):
        pd += metric[i] * p[i] * d[i]
        dd += metric[i] * d[i] * d[i]
        pp += metric[i] * p[i] * p[i]
    t = (-pd + sqrt(fmax(pd * pd + dd * (radius * radius - pp), 0.0))) / dd
    for i in range(p.shape[0]):
        p[i] += t * d[i]
        r[i] += t * Hd[i]


# ---------------------------------------------------------------- multinomial: K columns
# A multinomial model has a row of K class weights per feature: margins Z = X W + b are
# (n, K) and the gradient X^T R is (D, K). ``Wc`` and ``out`` hold the rows of the listed
# columns ``cols`` only (compact), so that a Hessian product on a free set reads only the
# features it frees.

def _check_margin_shapes(name, Wc, cols, b, Z):
    if Wc.shape[0] != cols.shape[0] or Wc.shape[1] != Z.shape[1] or b.shape[0] != Z.shape[1]:
        raise ValueError(f"{name}: Wc must be (len(cols), K) and b (K,) for Z (n, K)")


cdef inline Py_ssize_t _block_start(Py_ssize_t t, Py_ssize_t T, Py_ssize_t n) noexcept nogil:
    """The first of the rows ``0 .. n-1`` in block ``t`` of ``T``: the one split of every
    row-parallel kernel here, so that a row gets the same sums whatever the thread count."""
    return t * n // T


cdef inline void _start_margins(double[:, ::1] Z, const double[::1] b, Py_ssize_t lo,
                                Py_ssize_t hi) noexcept nogil:
    """Rows lo..hi-1 of Z set to b."""
    cdef Py_ssize_t i, k
    for i in range(lo, hi):
        for k in range(Z.shape[1]):
            Z[i, k] = b[k]


cdef inline void _add_scaled(double* z, double x, const double* w,
                             Py_ssize_t K) noexcept nogil:
    """z[0..K) += x w[0..K)."""
    cdef Py_ssize_t k
    for k in range(K):
        z[k] += x * w[k]


cdef inline Py_ssize_t _first_row_at_least(const index_t* rows, Py_ssize_t lo, Py_ssize_t hi,
                                           Py_ssize_t row) noexcept nogil:
    """The first position in ``rows[lo:hi]`` (sorted) holding a row >= ``row`` (or hi)."""
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if rows[mid] < row:
            lo = mid + 1
        else:
            hi = mid
    return lo


def mn_margins_csc(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const double[:, ::1] Wc,
                   const long long[::1] cols, const double[::1] b, double[:, ::1] Z,
                   int n_threads=1, bint simd=True):
    """``Z = b + X[:, cols] @ Wc`` for canonical CSC ``X`` (sorted row indices): row c of
    ``Wc`` is column ``cols[c]``. With ``n_threads`` > 1 each thread takes a block of rows
    and reads its part of every listed column (found by bisection), so that the rows of Z
    get the same sums in the same order as on one thread. Where Z outgrows the caches, the
    row of Z ``ROW_AHEAD`` stored entries further on is prefetched when it is the thread's.
    With ``simd`` and at most 12 classes, the AVX2 kernel where it runs (the same split)
    and the listed columns store SIMD_CSC_ENTRIES entries or more per block of its rows."""
    cdef Py_ssize_t c, j, p, end, t, lo, hi, ahead, K = Z.shape[1], n = Z.shape[0]
    cdef Py_ssize_t T = max(1, n_threads), nnz = indices.shape[0]
    _check_margin_shapes("mn_margins_csc", Wc, cols, b, Z)
    if bad_cols(cols, indptr.shape[0] - 1):
        raise ValueError("mn_margins_csc: a column index is out of range")
    if n and cols.shape[0] and _simd(simd, K) and _long_columns(indptr, cols, n):
        _margins_csc_simd(data, indices, indptr, Wc, cols, b, Z, n_threads)
        return
    if n * K * sizeof(double) <= CACHED_BYTES:
        nnz = 0                             # Z stays in the caches: nothing to prefetch
    with nogil:
        for t in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(t, T, n)
            hi = _block_start(t + 1, T, n)
            _start_margins(Z, b, lo, hi)
            for c in range(cols.shape[0]):
                j = cols[c]
                end = indptr[j + 1]
                p = indptr[j] if lo == 0 else _first_row_at_least(&indices[0], indptr[j],
                                                                   end, lo)
                while p < end and indices[p] < hi:
                    if p + ROW_AHEAD < nnz:
                        ahead = indices[p + ROW_AHEAD]
                        if lo <= ahead < hi:
                            prefetch_span(&Z[0, 0] + ahead * K, K * sizeof(double))
                    _add_scaled(&Z[indices[p], 0], data[p], &Wc[c, 0], K)
                    p = p + 1


def mn_margins_csr(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const weight_t[:, ::1] Wt, const double[::1] b,
                   double[:, ::1] Z, int n_threads=1):
    """``Z = b + X Wt`` for CSR ``X`` of ``len(indptr) - 1`` rows and a dense ``Wt`` of
    shape (n_features, K), float32 or float64 (the model's weights transposed), blocks of
    rows among ``n_threads`` (a row's sums in the same order whatever the count). Where Wt
    outgrows the caches, the row of Wt of the stored entry ``ROW_AHEAD`` places further on
    is prefetched: each stored entry reads a row of K weights, at memory latency otherwise."""
    cdef Py_ssize_t i, k, p, t, lo, hi, n = Z.shape[0], K = Z.shape[1], end
    cdef Py_ssize_t T = max(1, n_threads)
    cdef double x
    cdef double* z
    cdef const weight_t* w
    if indptr.shape[0] != n + 1 or Wt.shape[1] != K or b.shape[0] != K:
        raise ValueError("mn_margins_csr: Z must be (n, K) for X's n rows, Wt (n_features, K) "
                         "and b (K,)")
    _check_csr("mn_margins_csr", bad_csr(indices, indptr, data.shape[0], Wt.shape[0]))
    end = indptr[n] if Wt.shape[0] * K * sizeof(weight_t) > CACHED_BYTES else 0
    with nogil:
        for t in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(t, T, n)
            hi = _block_start(t + 1, T, n)
            _start_margins(Z, b, lo, hi)
            for i in range(lo, hi):
                z = &Z[i, 0]
                for p in range(indptr[i], indptr[i + 1]):
                    if p + ROW_AHEAD < end:
                        prefetch_span(&Wt[indices[p + ROW_AHEAD], 0], K * sizeof(weight_t))
                    x = data[p]
                    w = &Wt[indices[p], 0]
                    for k in range(K):
                        z[k] += x * w[k]


# Dense X: the listed columns of a block of rows are copied into a float64 panel
# (``gather_panel``) and multiplied by BLAS ``dgemm``. The blocks' sizes depend on the
# shapes only, never on the thread count, so that each sum is the same whatever the count;
# ``mn_rmatmat_dense`` gives the threads the columns in chunks of COLUMN_CHUNK.
# With at most SIMD_MAX_CLASSES classes, where the CPU runs AVX2 and FMA, the kernels of
# _simd.h read X in place instead, SIMD_COLUMNS columns at a time: X W by blocks of
# SIMD_MARGIN_ROWS rows among the threads, Xᵀ R by those chunks of columns among the
# threads, each over blocks of SIMD_RMATMAT_ROWS rows (on MNIST's shape at K = 10 in half
# the time of BLAS on the panels; slower than it from 13 classes on).
cdef enum:
    COLUMN_CHUNK = 32
    SIMD_MAX_CLASSES = 12
    SIMD_COLUMNS = 8
    SIMD_MARGIN_ROWS = 256
    SIMD_RMATMAT_ROWS = 1024
    SIMD_CSC_ROWS = 1024
    SIMD_CSC_ENTRIES = 8

cdef extern from "_simd.h" nogil:
    int sk_simd_available()
    void sk_margins_d(const double** xc, Py_ssize_t ch, const double* V, int KV,
                      Py_ssize_t nb, double* Z)
    void sk_margins_f(const float** xc, Py_ssize_t ch, const double* V, int KV,
                      Py_ssize_t nb, double* Z)
    void sk_rmatmat_d(const double** xc, Py_ssize_t ch, const double* R, Py_ssize_t ldr,
                      int KV, Py_ssize_t nb, double* out)
    void sk_rmatmat_f(const float** xc, Py_ssize_t ch, const double* R, Py_ssize_t ldr,
                      int KV, Py_ssize_t nb, double* out)
    int sk_csc_margins(const void* data, int vw, const void* rows, int iw, Py_ssize_t* pos,
                       const Py_ssize_t* end, Py_ssize_t nc, const double* V, int KV,
                       Py_ssize_t lo, Py_ssize_t hi, double* Zb)
    int sk_csc_rmatmat(const void* data, int vw, const void* rows, int iw, Py_ssize_t s,
                       Py_ssize_t e, const double* R, Py_ssize_t ldr, Py_ssize_t tail,
                       const double* R_tail, int KV, int square, Py_ssize_t ahead,
                       double* out)
    int sk_csr_hessp(const void* data, int vw, const void* cols, const void* indptr, int iw,
                     Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t nc, const double* V,
                     const double* vb, const double* P, Py_ssize_t ldp, Py_ssize_t tail,
                     const double* P_tail, const double* sw, int KV, double* out,
                     double* out_b)


def simd_available(Py_ssize_t n_classes=1):
    """Whether the multinomial products with ``n_classes`` classes (at most 12) run the
    AVX2/FMA kernels here (this CPU and the compiler that built the package)."""
    return bool(_simd(True, n_classes))


def margins_csc_blocked(const index_t[::1] indptr, const long long[::1] cols, Py_ssize_t n,
                        Py_ssize_t n_classes):
    """Whether :func:`mn_margins_csc` on these listed columns of a CSC X of ``n`` rows runs
    the AVX2 kernel over blocks of rows (at most 12 classes, this CPU, long columns)."""
    if bad_cols(cols, indptr.shape[0] - 1):
        raise ValueError("margins_csc_blocked: a column index is out of range")
    return bool(n and cols.shape[0] and _simd(True, n_classes)
                and _long_columns(indptr, cols, n))


cdef bint _simd(bint asked, Py_ssize_t K):
    return asked and 0 < K <= SIMD_MAX_CLASSES and sk_simd_available()


cdef tuple _padded_tail(const double[:, ::1] R, Py_ssize_t Kp):
    """``(tail, copy)``: the AVX2 kernels read Kp numbers from the start of each row of an
    (n, K) row-major ``R`` (K < Kp: into the next row, lanes they never return), which runs
    past R's buffer from the row ``tail`` on (the last row; rows n - 3 and n - 2 too for
    K = 1); those rows are read from ``copy`` ((n - tail, Kp), zero past K) instead."""
    cdef Py_ssize_t n = R.shape[0], K = R.shape[1]
    tail = max(0, min(n - 1, n + 1 - (Kp + K - 1) // K))
    copy = np.zeros((n - tail, Kp))
    copy[:, :K] = R[tail:]
    return tail, copy


cdef int _margins_simd(const floating[::1, :] X, const double[:, ::1] Wc,
                       const long long[::1] cols, const double[::1] b, double[:, ::1] Z,
                       int n_threads) except -1:
    """``mn_margins_dense`` by the AVX2 kernel (K <= SIMD_MAX_CLASSES, inputs checked)."""
    cdef Py_ssize_t blk, lo, nb, c0, ch, c, i, k, K = Z.shape[1], n = X.shape[0]
    cdef Py_ssize_t nc = cols.shape[0], B = SIMD_MARGIN_ROWS
    cdef Py_ssize_t n_blocks = (n + B - 1) // B
    cdef int KV = <int>((K + 3) // 4), T = <int>max(1, min(n_threads, n_blocks))
    padded = np.zeros((nc, 4 * KV))          # Wc's rows padded to vectors of four
    padded[:, :K] = Wc
    cdef double[:, ::1] V = padded
    work = np.empty(T * B * 4 * KV)
    cdef double[::1] Wk = work
    columns = np.empty(T * SIMD_COLUMNS, dtype=np.intp)
    cdef Py_ssize_t[::1] ptrs = columns     # each thread's column pointers
    cdef double* Zl
    cdef const floating** xc
    with nogil:
        for blk in prange(n_blocks, num_threads=T, schedule="static"):
            lo = blk * B
            nb = min(B, n - lo)
            Zl = &Wk[0] + threadid() * B * 4 * KV
            xc = <const floating**>&ptrs[threadid() * SIMD_COLUMNS]
            for i in range(nb * 4 * KV):
                Zl[i] = 0.0
            c0 = 0
            while c0 < nc:
                ch = min(<Py_ssize_t>SIMD_COLUMNS, nc - c0)
                for c in range(ch):
                    xc[c] = &X[lo, cols[c0 + c]]
                if floating is double:
                    sk_margins_d(xc, ch, &V[c0, 0], KV, nb, Zl)
                else:
                    sk_margins_f(xc, ch, &V[c0, 0], KV, nb, Zl)
                c0 = c0 + SIMD_COLUMNS
            for i in range(nb):
                for k in range(K):
                    Z[lo + i, k] = b[k] + Zl[i * 4 * KV + k]
    return 0


cdef int _rmatmat_simd(const floating[::1, :] X, const double[:, ::1] R,
                       const long long[::1] cols, double[:, ::1] out,
                       int n_threads) except -1:
    """``mn_rmatmat_dense`` (not squared) by the AVX2 kernel (K <= SIMD_MAX_CLASSES, inputs
    checked, X with a row)."""
    cdef Py_ssize_t ch_i, lo, nb, c0, ch, c, k, K = R.shape[1], n = X.shape[0]
    cdef Py_ssize_t nc = cols.shape[0], B = SIMD_RMATMAT_ROWS
    cdef Py_ssize_t n_chunks = (nc + SIMD_COLUMNS - 1) // SIMD_COLUMNS
    cdef int KV = <int>((K + 3) // 4), T = <int>max(1, min(n_threads, n_chunks))
    sums = np.zeros((nc, 4 * KV))
    cdef double[:, ::1] acc = sums
    cdef Py_ssize_t first
    first, copy = _padded_tail(R, 4 * KV)
    cdef double[:, ::1] R_tail = copy
    columns = np.empty(T * SIMD_COLUMNS, dtype=np.intp)
    cdef Py_ssize_t[::1] ptrs = columns
    cdef const floating** xc
    with nogil:
        for ch_i in prange(n_chunks, num_threads=T, schedule="static"):
            c0 = ch_i * SIMD_COLUMNS
            ch = min(<Py_ssize_t>SIMD_COLUMNS, nc - c0)
            xc = <const floating**>&ptrs[threadid() * SIMD_COLUMNS]
            lo = 0
            while lo < first:
                nb = min(B, first - lo)
                for c in range(ch):
                    xc[c] = &X[lo, cols[c0 + c]]
                if floating is double:
                    sk_rmatmat_d(xc, ch, &R[lo, 0], K, KV, nb, &acc[c0, 0])
                else:
                    sk_rmatmat_f(xc, ch, &R[lo, 0], K, KV, nb, &acc[c0, 0])
                lo = lo + nb
            for c in range(ch):
                xc[c] = &X[first, cols[c0 + c]]
            if floating is double:
                sk_rmatmat_d(xc, ch, &R_tail[0, 0], 4 * KV, KV, n - first, &acc[c0, 0])
            else:
                sk_rmatmat_f(xc, ch, &R_tail[0, 0], 4 * KV, KV, n - first, &acc[c0, 0])
            for c in range(ch):
                for k in range(K):
                    out[c0 + c, k] = acc[c0 + c, k]
    return 0


cdef bint _long_columns(const index_t[::1] indptr, const long long[::1] cols, Py_ssize_t n):
    """Whether the listed columns store SIMD_CSC_ENTRIES entries or more on average in each
    block of SIMD_CSC_ROWS rows: the AVX2 X W visits every listed column in every block,
    which on short columns (a text corpus: Debian's descriptions, 1-2 entries a column and
    block) costs more than their entries (7 ms by the loops, 12 ms by blocks)."""
    cdef Py_ssize_t c, listed = 0, blocks = (n + SIMD_CSC_ROWS - 1) // SIMD_CSC_ROWS
    with nogil:
        for c in range(cols.shape[0]):
            listed += indptr[cols[c] + 1] - indptr[cols[c]]
    return listed >= SIMD_CSC_ENTRIES * blocks * cols.shape[0]


cdef int _margins_csc_simd(const floating[::1] data, const index_t[::1] indices,
                           const index_t[::1] indptr, const double[:, ::1] Wc,
                           const long long[::1] cols, const double[::1] b, double[:, ::1] Z,
                           int n_threads) except -1:
    """``mn_margins_csc`` by the AVX2 kernel (K <= SIMD_MAX_CLASSES, inputs checked, X with
    a row and a listed column): each thread's rows (``_block_start``) in blocks of
    SIMD_CSC_ROWS, their sums in a buffer of padded rows, then written to Z."""
    cdef Py_ssize_t t, c, j, lo, hi, a, e, i, k, K = Z.shape[1], n = Z.shape[0]
    cdef Py_ssize_t nc = cols.shape[0], B = SIMD_CSC_ROWS
    cdef int KV = <int>((K + 3) // 4), T = <int>max(1, min(n_threads, n)), bad = 0, status
    padded = np.zeros((nc, 4 * KV))          # Wc's rows padded to vectors of four
    padded[:, :K] = Wc
    cdef double[:, ::1] V = padded
    work = np.empty(T * B * 4 * KV)
    cdef double[::1] Wk = work
    ends = np.asarray(indptr)[np.asarray(cols) + 1].astype(np.intp)
    cdef Py_ssize_t[::1] end = ends
    places = np.empty(T * nc, dtype=np.intp)
    cdef Py_ssize_t[::1] pos = places        # each thread's place in every listed column
    cdef double* Zb
    cdef Py_ssize_t* P
    with nogil:
        for t in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(t, T, n)
            hi = _block_start(t + 1, T, n)
            P = &pos[t * nc]
            Zb = &Wk[0] + t * B * 4 * KV
            for c in range(nc):
                j = cols[c]
                P[c] = indptr[j] if lo == 0 else _first_row_at_least(&indices[0], indptr[j],
                                                                      end[c], lo)
            a, status = lo, 0
            while a < hi and not status:
                e = min(a + B, hi)
                for i in range((e - a) * 4 * KV):
                    Zb[i] = 0.0
                status = sk_csc_margins(&data[0], sizeof(floating), &indices[0],
                                        sizeof(index_t), P, &end[0], nc, &V[0, 0], KV, a, e,
                                        Zb)
                for i in range(a, e):
                    for k in range(K):
                        Z[i, k] = b[k] + Zb[(i - a) * 4 * KV + k]
                a = e
            bad += status                     # a reduction over the threads
    if bad:
        raise ValueError("mn_margins_csc: X's row indices must be sorted in each column")
    return 0


cdef int _rmatmat_csc_simd(const floating[::1] data, const index_t[::1] indices,
                           const index_t[::1] indptr, const double[:, ::1] R,
                           const long long[::1] cols, double[:, ::1] out, bint square,
                           int n_threads) except -1:
    """``mn_rmatmat_csc`` by the AVX2 kernel (K <= SIMD_MAX_CLASSES, inputs checked, R with
    a row): the columns among the threads."""
    cdef Py_ssize_t c, j, k, K = R.shape[1], n = R.shape[0], nc = cols.shape[0]
    cdef int KV = <int>((K + 3) // 4), T = <int>max(1, min(n_threads, nc))
    cdef Py_ssize_t ahead = ROW_AHEAD if n * K * sizeof(double) > CACHED_BYTES else 0
    cdef Py_ssize_t first
    first, copy = _padded_tail(R, 4 * KV)
    cdef double[:, ::1] R_tail = copy
    work = np.empty(T * 4 * KV)
    cdef double[::1] Wk = work
    cdef double* o
    with nogil:
        for c in prange(nc, num_threads=T, schedule="guided"):
            j = cols[c]
            o = &Wk[0] + threadid() * 4 * KV
            sk_csc_rmatmat(&data[0], sizeof(floating), &indices[0], sizeof(index_t),
                           indptr[j], indptr[j + 1], &R[0, 0], K, first, &R_tail[0, 0], KV,
                           square, ahead, o)
            for k in range(K):
                out[c, k] = o[k]
    return 0


def mn_margins_dense(const floating[::1, :] X, const double[:, ::1] Wc,
                     const long long[::1] cols, const double[::1] b, double[:, ::1] Z,
                     int n_threads=1, bint simd=True):
    """``Z = b + X[:, cols] @ Wc`` for a Fortran-ordered dense ``X``: blocks of rows (a
    float64 panel of the listed columns each, times ``Wc`` by ``dgemm``; with ``simd`` and
    at most 12 classes, the AVX2 kernel where it runs) among ``n_threads``."""
    cdef Py_ssize_t blk, lo, nb, K = Z.shape[1], n = X.shape[0], nc = cols.shape[0]
    cdef Py_ssize_t B = min(max(64, PANEL_NUMBERS // max(nc, 1)), max(n, 1))
    cdef Py_ssize_t n_blocks = (n + B - 1) // B
    cdef int T = <int>max(1, min(n_threads, n_blocks))
    cdef int m_ = <int>K, n_, k_ = <int>nc, ld_panel
    cdef double one = 1.0
    cdef char* no = b"N"
    cdef char* tr = b"T"
    cdef double* panel
    _check_margin_shapes("mn_margins_dense", Wc, cols, b, Z)
    if Z.shape[0] != n:
        raise ValueError("mn_margins_dense: Z must have X's rows")
    if bad_cols(cols, X.shape[1]):
        raise ValueError("mn_margins_dense: a column index is out of range")
    if n and _simd(simd, K):
        _margins_simd(X, Wc, cols, b, Z, n_threads)
        return
    work = np.empty(T * B * max(nc, 1))
    cdef double[::1] W = work
    with nogil:
        for blk in prange(n_blocks, num_threads=T, schedule="static"):
            lo = blk * B
            nb = min(B, n - lo)
            _start_margins(Z, b, lo, lo + nb)
            if nc and K:
                panel = &W[0] + threadid() * B * nc
                gather_panel(X, &cols[0], nc, lo, nb, panel, False)
                n_ = <int>nb
                ld_panel = <int>nb
                # Zᵀ (K × nb, Z's rows) += Wcᵀ (K × nc) · panelᵀ (nc × nb)
                dgemm(no, tr, &m_, &n_, &k_, &one, <double*>&Wc[0, 0], &m_, panel,
                      &ld_panel, &one, &Z[lo, 0], &m_)


def mn_rmatmat_csc(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const double[:, ::1] R,
                   const long long[::1] cols, double[:, ::1] out, bint square=False,
                   int n_threads=1, bint simd=True):
    """``out = X[:, cols].T @ R`` for CSC ``X`` (``square``: of X's entries squared),
    columns split among ``n_threads``.

    Where R outgrows the caches, the row of R ``ROW_AHEAD`` stored entries further on is
    prefetched. With ``simd`` and at most 12 classes, the AVX2 kernel where it runs."""
    cdef Py_ssize_t i, c, j, k, p, K = R.shape[1], nnz = indices.shape[0]
    cdef double x
    cdef double* o
    cdef const double* r
    if out.shape[0] != cols.shape[0] or out.shape[1] != K:
        raise ValueError("mn_rmatmat_csc: out must be (len(cols), K) for R (n, K)")
    if bad_cols(cols, indptr.shape[0] - 1):
        raise ValueError("mn_rmatmat_csc: a column index is out of range")
    if R.shape[0] and cols.shape[0] and _simd(simd, K):
        _rmatmat_csc_simd(data, indices, indptr, R, cols, out, square, n_threads)
        return
    if R.shape[0] * K * sizeof(double) <= CACHED_BYTES:
        nnz = 0                             # R stays in the caches: nothing to prefetch
    with nogil:
        for c in prange(cols.shape[0], num_threads=max(1, n_threads), schedule="guided"):
            j = cols[c]
            o = &out[c, 0]
            for k in range(K):
                o[k] = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                if p + ROW_AHEAD < nnz:
                    prefetch_span(&R[0, 0] + indices[p + ROW_AHEAD] * K, K * sizeof(double))
                i = indices[p]
                x = data[p]
                if square:
                    x = x * x
                r = &R[i, 0]
                for k in range(K):
                    o[k] += x * r[k]


def mn_rmatmat_dense(const floating[::1, :] X, const double[:, ::1] R,
                     const long long[::1] cols, double[:, ::1] out, bint square=False,
                     int n_threads=1, bint simd=True):
    """``out = X[:, cols].T @ R`` for a Fortran-ordered dense ``X`` (``square``: of X's
    entries squared): for each block of rows in turn, the listed columns in chunks among
    ``n_threads`` (a float64 panel each, times the block of ``R`` by ``dgemm``; with
    ``simd``, at most 12 classes and not ``square``, the AVX2 kernel where it runs)."""
    cdef Py_ssize_t blk, lo, nb, ch, c0, K = R.shape[1], n = X.shape[0], nc = cols.shape[0]
    cdef Py_ssize_t B = min(max(64, PANEL_NUMBERS // min(max(nc, 1), COLUMN_CHUNK)),
                            max(n, 1))
    cdef Py_ssize_t n_blocks = (n + B - 1) // B
    cdef Py_ssize_t n_chunks = (nc + COLUMN_CHUNK - 1) // COLUMN_CHUNK
    cdef int T = <int>max(1, min(n_threads, n_chunks))
    cdef int m_ = <int>K, n_, k_, ld_panel
    cdef double one = 1.0, beta
    cdef char* no = b"N"
    cdef double* panel
    if out.shape[0] != nc or out.shape[1] != K:
        raise ValueError("mn_rmatmat_dense: out must be (len(cols), K) for R (n, K)")
    if R.shape[0] != n:
        raise ValueError("mn_rmatmat_dense: R must have X's rows")
    if bad_cols(cols, X.shape[1]):
        raise ValueError("mn_rmatmat_dense: a column index is out of range")
    if n == 0 or nc == 0 or K == 0:
        out[:, :] = 0.0
        return
    if not square and _simd(simd, K):
        _rmatmat_simd(X, R, cols, out, n_threads)
        return
    work = np.empty(T * B * min(nc, COLUMN_CHUNK))
    cdef double[::1] W = work
    panel, blk, lo, nb, beta = NULL, 0, 0, 0, 0.0    # firstprivate in the parallel block
    with nogil, parallel(num_threads=T):
        panel = &W[0] + threadid() * B * min(nc, COLUMN_CHUNK)
        for blk in range(n_blocks):
            lo = blk * B
            nb = min(B, n - lo)
            beta = 0.0 if blk == 0 else 1.0
            for ch in prange(n_chunks, schedule="static"):
                c0 = ch * COLUMN_CHUNK
                n_ = <int>min(COLUMN_CHUNK, nc - c0)
                k_ = <int>nb
                ld_panel = <int>nb
                gather_panel(X, &cols[c0], n_, lo, nb, panel, square)
                # out[c0:]ᵀ (K × chunk) (+)= R[lo:lo + nb]ᵀ (K × nb) · panel (nb × chunk)
                dgemm(no, no, &m_, &n_, &k_, &one, <double*>&R[lo, 0], &m_, panel,
                      &ld_panel, &beta, &out[c0, 0], &m_)


# Free entries by rows. A Hessian product on the free entries of a sparse X walked by
# columns reads (X V) or updates (Xᵀ R) a whole K-row of the (n, K) matrix per stored entry
# of a free column: on the Debian descriptions (58 classes) 2.6 GB per product, at the
# memory system's pace. Walked by rows of a CSR copy, each row of the (n, K) matrix is read
# or written once and each stored entry touches only its column's free classes
# (``start[j]:start[j + 1]`` of the free entries, ``classes`` and values in that order).

def _check_free_entries(name, bad_x, indptr, start, classes, n, K):
    """Raise for inconsistent entries and for ``bad_x`` (:func:`bad_csr`'s code for X)."""
    if indptr.shape[0] != n + 1 or start.shape[0] < 1:
        raise ValueError(f"{name}: X must have the (n, K) matrix's n rows")
    _check_entry_classes(name, start, classes, K)
    _check_csr(name, bad_x)


def _check_entry_classes(name, start, classes, K):
    """Raise for :func:`bad_free_entries`' code of free entries (0: nothing to say)."""
    bad = bad_free_entries(start, classes, K)
    if bad:
        raise ValueError(f"{name}: " + ("start must run from 0 to len(classes)",
                                        "start must be non-decreasing",
                                        "a class is out of range")[bad - 1])


def _check_csr(name, bad):
    """Raise for :func:`bad_csr`'s code ``bad`` of X (0: nothing to say)."""
    if bad:
        raise ValueError(f"{name}: " + ("indptr runs past the stored entries or decreases",
                                        "a column index is out of range")[bad - 1])


def mn_margins_free_csr(const floating[::1] data, const index_t[::1] indices,
                        const index_t[::1] indptr, const long long[::1] start,
                        const long long[::1] classes, const double[::1] v,
                        const double[::1] b, double[:, ::1] Z, int n_threads=1):
    """``Z = b + X V`` for canonical CSR ``X`` of ``len(start) - 1`` columns and ``V``
    supported on free entries: column j's are ``classes[start[j]:start[j + 1]]`` with
    values ``v`` at the same positions. Blocks of rows among ``n_threads`` (a row's sums in
    the same order whatever the count)."""
    cdef Py_ssize_t i, p, t, j, lo, hi, th, n = Z.shape[0], K = Z.shape[1]
    cdef Py_ssize_t T = max(1, n_threads)
    cdef double x
    cdef double* z
    _check_free_entries("mn_margins_free_csr",
                        bad_csr(indices, indptr, data.shape[0], start.shape[0] - 1),
                        indptr, start, classes, n, K)
    if v.shape[0] != classes.shape[0] or b.shape[0] != K:
        raise ValueError("mn_margins_free_csr: v must match classes and b be (K,)")
    with nogil:
        for th in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(th, T, n)
            hi = _block_start(th + 1, T, n)
            _start_margins(Z, b, lo, hi)
            for i in range(lo, hi):
                z = &Z[i, 0]
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    x = data[p]
                    for t in range(start[j], start[j + 1]):
                        z[classes[t]] += x * v[t]


def free_chunks(Py_ssize_t n_rows, Py_ssize_t n_entries):
    """How many blocks of rows :func:`mn_rmatmat_free_csr` (and the other row walks that
    sum a block's ``n_entries`` results apart) cuts X into: up to 16, at least 4,096 rows
    each and 2²⁴ partial sums in all, whatever the thread count (so that the result does
    not depend on it)."""
    return int(max(1, min(16, n_rows // 4096, (1 << 24) // max(n_entries, 1))))


def mn_rmatmat_free_csr(const floating[::1] data, const index_t[::1] indices,
                        const index_t[::1] indptr, const double[:, ::1] R,
                        const long long[::1] start, const long long[::1] classes,
                        double[::1] out, double[:, ::1] work, bint square=False,
                        int n_threads=1):
    """``out[t] = Σᵢ x_ij R[i, classes[t]]`` for the free entries t of each column j
    (``start``, ``classes`` as in :func:`mn_margins_free_csr`; ``square``: of X's entries
    squared) for canonical CSR ``X``. The rows are cut into ``len(work)`` blocks (see
    :func:`free_chunks`) whose partial sums go to the rows of ``work`` and are added in
    block order, among ``n_threads``."""
    cdef Py_ssize_t i, p, t, j, c, lo, hi, n = R.shape[0], K = R.shape[1]
    cdef Py_ssize_t nc = work.shape[0], F = classes.shape[0]
    cdef double x, total
    cdef const double* r
    cdef double* acc
    _check_free_entries("mn_rmatmat_free_csr",
                        bad_csr(indices, indptr, data.shape[0], start.shape[0] - 1),
                        indptr, start, classes, n, K)
    if out.shape[0] != F or work.shape[1] != F or nc < 1:
        raise ValueError("mn_rmatmat_free_csr: out must be (len(classes),) and work "
                         "(blocks, len(classes)) with a block at least")
    with nogil:
        for c in prange(nc, num_threads=max(1, n_threads), schedule="dynamic"):
            acc = &work[c, 0]
            for t in range(F):
                acc[t] = 0.0
            lo = _block_start(c, nc, n)
            hi = _block_start(c + 1, nc, n)
            for i in range(lo, hi):
                r = &R[i, 0]
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    x = data[p]
                    if square:
                        x = x * x
                    for t in range(start[j], start[j + 1]):
                        acc[t] += x * r[classes[t]]
        for t in prange(F, num_threads=max(1, n_threads), schedule="static"):
            total = 0.0
            for c in range(nc):
                total = total + work[c, t]
            out[t] = total


def _check_free_columns(name, indptr, cols, start, classes, values, K):
    """Raise for free entries of listed columns inconsistent with each other or with X."""
    if start.shape[0] != cols.shape[0] + 1 or values.shape[0] != classes.shape[0]:
        raise ValueError(f"{name}: start must be (len(cols) + 1,) and the values match "
                         "classes")
    if bad_cols(cols, indptr.shape[0] - 1):
        raise ValueError(f"{name}: a column index is out of range")
    _check_entry_classes(name, start, classes, K)


def mn_margins_free_csc(const floating[::1] data, const index_t[::1] indices,
                        const index_t[::1] indptr, const long long[::1] cols,
                        const long long[::1] start, const long long[::1] classes,
                        const double[::1] v, const double[::1] b, double[:, ::1] Z,
                        int n_threads=1):
    """``Z = b + X V`` for canonical CSC ``X`` and ``V`` supported on free entries of the
    listed columns: column ``cols[a]``'s are ``classes[start[a]:start[a + 1]]`` with
    values ``v`` at the same positions. :func:`mn_margins_csc` on a compact (len(cols), K)
    array of them without that array, whose size is the listed columns times every
    class, and touching only the free classes. Blocks of rows among ``n_threads``, as
    there (a row's sums in the same order whatever the count)."""
    cdef Py_ssize_t a, j, p, t, end, lo, hi, th, n = Z.shape[0], K = Z.shape[1]
    cdef Py_ssize_t T = max(1, n_threads)
    cdef double x
    cdef double* z
    _check_free_columns("mn_margins_free_csc", indptr, cols, start, classes, v, K)
    if b.shape[0] != K:
        raise ValueError("mn_margins_free_csc: b must be (K,) for Z (n, K)")
    with nogil:
        for th in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(th, T, n)
            hi = _block_start(th + 1, T, n)
            _start_margins(Z, b, lo, hi)
            for a in range(cols.shape[0]):
                if start[a] == start[a + 1]:
                    continue
                j = cols[a]
                end = indptr[j + 1]
                p = indptr[j] if lo == 0 else _first_row_at_least(&indices[0], indptr[j],
                                                                   end, lo)
                while p < end and indices[p] < hi:
                    z = &Z[indices[p], 0]
                    x = data[p]
                    for t in range(start[a], start[a + 1]):
                        z[classes[t]] += x * v[t]
                    p = p + 1


def mn_rmatmat_free_csc(const floating[::1] data, const index_t[::1] indices,
                        const index_t[::1] indptr, const double[:, ::1] R,
                        const long long[::1] cols, const long long[::1] start,
                        const long long[::1] classes, double[::1] out, bint square=False,
                        int n_threads=1):
    """``out[t] = Σᵢ x_ij R[i, classes[t]]`` for the free entries t of each listed column
    j = ``cols[a]`` (``start``, ``classes`` as in :func:`mn_margins_free_csc`; ``square``:
    of X's entries squared) for CSC ``X``: :func:`mn_rmatmat_csc` on the free entries
    only, without its (len(cols), K) result. Columns among ``n_threads``."""
    cdef Py_ssize_t a, i, p, t, j, K = R.shape[1]
    cdef double x
    cdef const double* r
    _check_free_columns("mn_rmatmat_free_csc", indptr, cols, start, classes, out, K)
    with nogil:
        for a in prange(cols.shape[0], num_threads=max(1, n_threads), schedule="guided"):
            for t in range(start[a], start[a + 1]):
                out[t] = 0.0
            j = cols[a]
            for p in range(indptr[j], indptr[j + 1] if start[a] < start[a + 1] else indptr[j]):
                i = indices[p]
                x = data[p]
                if square:
                    x = x * x
                r = &R[i, 0]
                for t in range(start[a], start[a + 1]):
                    out[t] += x * r[classes[t]]


def mn_rmatmat_csr(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, const double[:, ::1] R, double[:, ::1] out,
                   double[:, ::1] work, int n_threads=1):
    """``out = Xᵀ R`` for canonical CSR ``X`` of ``len(out)`` columns, walking its rows: each
    row of R is read once and added, scaled, to the rows of ``out`` of its stored entries
    (the column walk of :func:`mn_rmatmat_csc` reads a row of R per stored entry instead).
    The rows are cut into ``len(work) + 1`` blocks (see :func:`free_chunks`): the first
    block's sums go to ``out``, the others' to the rows of ``work`` ((blocks − 1, out.size),
    possibly empty) and are added in block order, among ``n_threads``."""
    cdef Py_ssize_t i, p, j, k, c, lo, hi, n = R.shape[0], K = R.shape[1]
    cdef Py_ssize_t D = out.shape[0], nc = work.shape[0] + 1, size = D * K
    cdef double x
    cdef const double* r
    cdef double* acc
    cdef double* o
    if bad_csr(indices, indptr, data.shape[0], D):
        raise ValueError("mn_rmatmat_csr: X must be CSR with indices in [0, len(out))")
    if indptr.shape[0] != n + 1 or out.shape[1] != K or (nc > 1 and work.shape[1] != size):
        raise ValueError("mn_rmatmat_csr: R must be (n, K) for X's n rows, out (n_features, "
                         "K) and work (blocks - 1, out.size)")
    with nogil:
        for c in prange(nc, num_threads=max(1, n_threads), schedule="dynamic"):
            acc = &out[0, 0] if c == 0 else &work[c - 1, 0]
            for p in range(size):
                acc[p] = 0.0
            lo = _block_start(c, nc, n)
            hi = _block_start(c + 1, nc, n)
            for i in range(lo, hi):
                r = &R[i, 0]
                for p in range(indptr[i], indptr[i + 1]):
                    x = data[p]
                    o = acc + indices[p] * K
                    for k in range(K):
                        o[k] += x * r[k]
        o = &out[0, 0]
        for c in range(nc - 1):
            acc = &work[c, 0]
            for p in prange(size, num_threads=max(1, n_threads), schedule="static"):
                o[p] += acc[p]


def mn_hessp_free_csr(const floating[::1] data, const index_t[::1] indices,
                      const index_t[::1] indptr, const long long[::1] start,
                      const long long[::1] classes, const double[::1] v,
                      const double[::1] vb, const double[:, ::1] P, const double[::1] sw,
                      double[::1] out, double[::1] out_b, double[:, ::1] work,
                      double[:, ::1] row, bint intercepts=True, int n_threads=1):
    """The multinomial Hessian product on free entries in one pass over the rows of a
    canonical CSR ``X`` (``start``, ``classes`` and the values ``v`` as in
    :func:`mn_margins_free_csr`): for each row, uᵢ = vb + Σⱼ x_ij Vⱼ, then
    rᵢ = sᵢ (pᵢ ∘ uᵢ − pᵢ (pᵢᵀ uᵢ)), then ``out[t] += x_ij rᵢ[classes[t]]`` for the row's free
    entries and, with ``intercepts``, ``out_b += rᵢ`` (else ``out_b`` is set to 0).

    The same sums as :func:`mn_margins_free_csr`, :func:`mn_curvature` and
    :func:`mn_rmatmat_free_csr` in turn, without their (n, K) matrix: uᵢ and rᵢ live in a
    row of ``row`` (K numbers, in cache), so a product reads P once. The rows are cut into
    ``len(work)`` blocks (:func:`free_chunks` of the free entries and the K intercepts) whose
    partial sums go to the rows of ``work`` ((blocks, len(classes) + K)) and are added in block
    order, among ``n_threads``; ``row`` has a row per block.
    """
    cdef Py_ssize_t i, p, t, j, c, k, lo, hi, n = P.shape[0], K = P.shape[1]
    cdef Py_ssize_t nc = work.shape[0], F = classes.shape[0], nnz, a
    cdef double x, mean, s, total
    cdef double* u
    cdef double* acc
    cdef double* acc_b
    cdef const double* pr
    _check_free_entries("mn_hessp_free_csr",
                        bad_csr(indices, indptr, data.shape[0], start.shape[0] - 1),
                        indptr, start, classes, n, K)
    if (v.shape[0] != F or out.shape[0] != F or vb.shape[0] != K or out_b.shape[0] != K
            or sw.shape[0] != n or nc < 1 or work.shape[1] != F + K
            or row.shape[0] != nc or row.shape[1] != K):
        raise ValueError("mn_hessp_free_csr: v and out must match classes, vb and out_b be "
                         "(K,), sw (n,) for P (n, K), work (blocks, len(classes) + K) with a "
                         "block at least and row (blocks, K)")
    nnz = indptr[indptr.shape[0] - 1]    # a valid CSR (checked above): the stored entries
    with nogil:
        for c in prange(nc, num_threads=max(1, n_threads), schedule="dynamic"):
            acc = &work[c, 0]
            acc_b = &work[c, F]
            u = &row[c, 0]
            for t in range(F + K):
                acc[t] = 0.0
            lo = _block_start(c, nc, n)
            hi = _block_start(c + 1, nc, n)
            for i in range(lo, hi):
                for k in range(K):
                    u[k] = vb[k]
                for p in range(indptr[i], indptr[i + 1]):
                    # the column's free entries (v, classes, acc at start[j]) are scattered
                    # over the free set: start 2 ROW_AHEAD entries ahead, they ROW_AHEAD
                    if p + 2 * ROW_AHEAD < nnz:
                        SK_PREFETCH_READ(&start[indices[p + 2 * ROW_AHEAD]])
                    if p + ROW_AHEAD < nnz:
                        a = start[indices[p + ROW_AHEAD]]
                        if a < F:
                            SK_PREFETCH_READ(&v[a])
                            SK_PREFETCH_READ(&classes[a])
                            SK_PREFETCH_W(&acc[a])
                    j = indices[p]
                    x = data[p]
                    for t in range(start[j], start[j + 1]):
                        u[classes[t]] += x * v[t]
                pr = &P[i, 0]
                mean = 0.0
                for k in range(K):
                    mean = mean + pr[k] * u[k]
                s = sw[i]
                for k in range(K):
                    u[k] = s * pr[k] * (u[k] - mean)
                for p in range(indptr[i], indptr[i + 1]):
                    j = indices[p]
                    x = data[p]
                    for t in range(start[j], start[j + 1]):
                        acc[t] += x * u[classes[t]]
                if intercepts:
                    for k in range(K):
                        acc_b[k] += u[k]
        for t in prange(F + K, num_threads=max(1, n_threads), schedule="static"):
            total = 0.0
            for c in range(nc):
                total = total + work[c, t]
            if t < F:
                out[t] = total
            else:
                out_b[t - F] = total


def mn_hessp_csr(const floating[::1] data, const index_t[::1] indices,
                 const index_t[::1] indptr, const double[:, ::1] Vc, const double[::1] vb,
                 const double[:, ::1] P, const double[::1] sw, double[:, ::1] out,
                 double[::1] out_b, double[:, ::1] work, int n_threads=1):
    """The multinomial Hessian product on every class of each column of a CSR ``X``
    (``Vc`` (columns, K) the direction, zero on the entries not free) in one pass over the
    rows, by the AVX2 kernel (at most 12 classes, where :func:`simd_available`): for each
    row uᵢ = vb + Σⱼ x_ij Vcⱼ, then
    rᵢ = sᵢ (pᵢ ∘ uᵢ − pᵢ (pᵢᵀ uᵢ)), then ``out[j] += x_ij rᵢ`` and ``out_b += rᵢ``: the
    products of :func:`mn_margins_csc`, :func:`mn_curvature` and :func:`mn_rmatmat_csc`
    with X read once and no (n, K) matrix. The rows are cut into ``len(work)`` blocks
    (:func:`free_chunks`) whose partial sums, rows of ``work`` ((blocks, (columns + 1) Kp),
    Kp = 4 ⌈K/4⌉), are added in block order, among ``n_threads``: the same bits whatever
    the thread count."""
    cdef Py_ssize_t ch, lo, hi, t, j, k, n = P.shape[0], K = P.shape[1], nc = Vc.shape[0]
    cdef Py_ssize_t nb = work.shape[0], Kp = 4 * ((K + 3) // 4), width = (nc + 1) * Kp
    cdef int KV = <int>(Kp // 4), bad = 0
    cdef double total
    cdef double* acc
    if not _simd(True, K):
        raise ValueError("mn_hessp_csr: the AVX2 kernel takes 1 to 12 classes, on a CPU "
                         "with AVX2 and FMA")
    if (indptr.shape[0] != n + 1 or Vc.shape[1] != K or out.shape[0] != nc
            or out.shape[1] != K or vb.shape[0] != K or out_b.shape[0] != K
            or sw.shape[0] != n or nb < 1 or work.shape[1] != width):
        raise ValueError("mn_hessp_csr: X must have P's n rows, Vc and out be (columns, K), "
                         "vb and out_b (K,), sw (n,) and work (blocks, (columns + 1) Kp) "
                         "with a block at least")
    if n and (indptr[0] < 0 or indptr[n] > data.shape[0] or indptr[n] > indices.shape[0]
              or np.any(np.diff(np.asarray(indptr)) < 0)):
        raise ValueError("mn_hessp_csr: indptr must increase within the stored entries")
    if n == 0:
        out[:, :] = 0.0
        out_b[:] = 0.0
        return
    padded = np.zeros((nc + 1, Kp))       # Vc's rows padded to vectors of four; then vb
    padded[:nc, :K] = Vc
    padded[nc, :K] = vb
    cdef double[:, ::1] V = padded
    cdef Py_ssize_t first
    first, copy = _padded_tail(P, Kp)
    cdef double[:, ::1] P_tail = copy
    with nogil:
        for ch in prange(nb, num_threads=max(1, n_threads), schedule="dynamic"):
            acc = &work[ch, 0]
            for t in range(width):
                acc[t] = 0.0
            lo = _block_start(ch, nb, n)
            hi = _block_start(ch + 1, nb, n)
            t = sk_csr_hessp(&data[0], sizeof(floating), &indices[0], &indptr[0],
                             sizeof(index_t), lo, hi, nc, &V[0, 0], &V[nc, 0], &P[0, 0], K,
                             first, &P_tail[0, 0], &sw[0], KV, acc, acc + nc * Kp)
            bad += t                          # a reduction over the blocks
        if not bad:
            for j in prange(nc + 1, num_threads=max(1, n_threads), schedule="static"):
                for k in range(K):
                    total = 0.0
                    for ch in range(nb):
                        total = total + work[ch, j * Kp + k]
                    if j < nc:
                        out[j, k] = total
                    else:
                        out_b[k] = total
    if bad:
        raise ValueError("mn_hessp_csr: a column index lies outside Vc's rows")


# ---------------------------------------------------------------- softmax terms, row by row
# One or two passes over the (n, K) score matrix instead of NumPy's five to seven (each a
# temporary): on the Debian descriptions (63,436 rows, 58 classes) they took 31 ms per
# Hessian product and 77 ms per gradient. Rows are independent, so blocks of rows among
# ``n_threads`` give the same results as one thread. The softmax leaves its exponentials to
# NumPy (SIMD: 9.7 instead of 17.5 ms on those scores, one thread; 6.1 instead of 9.0 on two).

def mn_softmax(const double[:, ::1] Z, const long long[::1] y, const double[::1] sw,
               double[:, ::1] P, double[::1] nll, double[:, ::1] R=None, int n_threads=1):
    """Row-wise softmax of ``Z`` into ``P``, ``nll[i] = log Σₖ exp zᵢₖ − zᵢ,yᵢ`` and, if ``R``
    is given, the gradient residuals ``R = sw ∘ (P − onehot(y))``.

    Two passes over the rows around NumPy's ``exp`` of the shifted scores in place (its
    SIMD loops: ~10× a scalar ``exp`` per element, within 1 ulp of it)."""
    cdef Py_ssize_t i, k, t, lo, hi, n = Z.shape[0], K = Z.shape[1]
    cdef Py_ssize_t T = max(1, n_threads)
    cdef double top, total, inv
    cdef bint residuals = R is not None
    if (P.shape[0] != n or P.shape[1] != K or y.shape[0] != n or sw.shape[0] != n
            or nll.shape[0] != n or residuals and (R.shape[0] != n or R.shape[1] != K)):
        raise ValueError("mn_softmax: P (and R) must be (n, K) and y, sw, nll (n,) for Z")
    if K == 0:
        raise ValueError("mn_softmax: Z has no class column")
    for i in range(n):
        if not 0 <= y[i] < K:
            raise ValueError("mn_softmax: a label is out of range")
    with nogil:
        for t in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(t, T, n)
            hi = _block_start(t + 1, T, n)
            for i in range(lo, hi):
                top = Z[i, 0]
                for k in range(1, K):
                    top = fmax(top, Z[i, k])
                for k in range(K):
                    P[i, k] = Z[i, k] - top
                nll[i] = top - Z[i, y[i]]
    shifted = np.asarray(P)
    np.exp(shifted, out=shifted)
    with nogil:
        for t in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(t, T, n)
            hi = _block_start(t + 1, T, n)
            for i in range(lo, hi):
                total = 0.0
                for k in range(K):
                    total = total + P[i, k]
                inv = 1.0 / total
                for k in range(K):
                    P[i, k] = P[i, k] * inv
                nll[i] = nll[i] + log(total)
                if residuals:
                    for k in range(K):
                        R[i, k] = sw[i] * P[i, k]
                    R[i, y[i]] = R[i, y[i]] - sw[i]


def mn_curvature(const double[:, ::1] P, double[:, ::1] U, const double[::1] sw,
                 int n_threads=1):
    """``U ← sw ∘ (P ∘ U − P (P ∘ U) 1)`` in place: the rows of (diag pᵢ − pᵢ pᵢᵀ) uᵢ,
    weighted (the middle factor of the multinomial Hessian product)."""
    cdef Py_ssize_t i, k, t, lo, hi, n = U.shape[0], K = U.shape[1]
    cdef Py_ssize_t T = max(1, n_threads)
    cdef double mean
    if P.shape[0] != n or P.shape[1] != K or sw.shape[0] != n:
        raise ValueError("mn_curvature: P and U must be (n, K) and sw (n,)")
    with nogil:
        for t in prange(T, num_threads=T, schedule="static", chunksize=1):
            lo = _block_start(t, T, n)
            hi = _block_start(t + 1, T, n)
            for i in range(lo, hi):
                mean = 0.0
                for k in range(K):
                    mean = mean + P[i, k] * U[i, k]
                for k in range(K):
                    U[i, k] = sw[i] * P[i, k] * (U[i, k] - mean)
