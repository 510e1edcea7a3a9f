"""Dual block coordinate ascent for the SparsemaxClassifier objective (``solver="sdca"``).

The primal ``(1/S) sum_i s_i L(W^T x_i + b; y_i) + (alpha/2) ||W||^2`` with the Fenchel-Young
loss of a polytope C, ``L(z; y) = max_{mu in C} [z.(mu - y) - 1/2 ||mu||^2] + 1/2 ||y||^2``
(Blondel et al. 2020; Madsen et al. 2016, eq. 9, on the simplex), has the dual
variables ``mu_i in C`` with ``W(mu) = (1/(alpha S)) sum_i s_i x_i (y_i - mu_i)^T``. The dual
restricted to one block ``mu_i`` is ``z.mu - 1/2 ||mu||^2 - (q_i/2) ||mu - mu_i||^2`` (up to
constants), so its exact maximizer is one projection (stochastic dual coordinate ascent,
Shalev-Shwartz & Zhang 2013, with the conjugate of the Fenchel-Young loss)::

    mu_i <- proj_C((z_i + q_i mu_i) / (1 + q_i)),   z_i = W^T x_i + b,
    q_i = s_i ||x_i||^2 / (alpha S),   W -= (s_i / (alpha S)) x_i (mu_i_new - mu_i_old)^T.

The intercept enters through a constant feature of value ``rho`` (then ``||x_i||^2`` in
``q_i`` counts ``rho^2``) whose weight's scores are ``wb`` (``rho`` times the weight, so an
update moves them by ``rho^2`` times the change of a feature-1 weight), on top of a fixed
offset ``b``: the caller folds ``wb`` into ``b`` between epochs when the intercept is
unpenalized (a proximal-point step on ``b`` of strength ``alpha / rho^2``).

``W`` (d, K), ``b`` and the duals ``M`` (n, K) are float64; ``X`` is float32 or float64,
CSR (walked through ``indptr/indices/data``) or dense C-contiguous.
"""
from cython cimport floating
from libc.math cimport fabs
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc

from ._projections cimport POLYTOPE_BOX, project_row

from sparsekit._cython._common cimport (CACHED_BYTES, SK_PREFETCH_READ, SK_PREFETCH_W,
                                        SPARSE_MIN_K, SPARSE_SHARE, index_t, prefetch_span,
                                        random_below, sparse_dot)


cdef double _block_step(const floating* vals, const index_t* idx, Py_ssize_t nnz,
                        double c, double q, double* W, const double* b, double* wb,
                        double intercept_sq, double* mu, Py_ssize_t k, int polytope,
                        double budget, double* z, double* p, double* work,
                        Py_ssize_t* iwork) noexcept nogil:
    """One exact block update of row ``(vals, idx)`` (``idx`` NULL: dense, j = t).

    ``wb`` (NULL: no intercept) are the scores of the intercept feature, whose squared
    value is ``intercept_sq``; ``iwork`` (k entries or more) lists the moved entries of
    mu_i after the projection. Returns
    ``max_j |mu_new_j - mu_old_j|``."""
    cdef Py_ssize_t t, j, m, col, changed = 0
    cdef double v, z0, z1, y0, y1, d0, d1, change = 0.0
    cdef double* wrow
    for j in range(k):
        z[j] = b[j] if wb == NULL else b[j] + wb[j]
    if k == 1:  # one output (two classes as one box output)
        z[0] += sparse_dot(vals, idx, W, nnz)
        if polytope == POLYTOPE_BOX:   # clipped inline: mu_i <- clip(.., 0, 1)
            d1 = min(max((z[0] + q * mu[0]) / (1.0 + q), 0.0), 1.0)
            v = d1 - mu[0]
            if v == 0.0:
                return 0.0
            mu[0] = d1
            if wb != NULL:
                wb[0] -= c * intercept_sq * v
            d0 = c * v
            for t in range(nnz):
                W[t if idx == NULL else idx[t]] -= vals[t] * d0
            return fabs(v)
    elif k == 2:  # two classes sum in registers (through z each entry waits for a store),
        # the even and odd entries apart: four short chains of dependent additions
        z0, z1, y0, y1 = z[0], z[1], 0.0, 0.0
        for t in range(0, nnz - 1, 2):
            col = t if idx == NULL else idx[t]
            v = vals[t]
            wrow = W + 2 * col
            z0 += v * wrow[0]
            z1 += v * wrow[1]
            col = t + 1 if idx == NULL else idx[t + 1]
            v = vals[t + 1]
            wrow = W + 2 * col
            y0 += v * wrow[0]
            y1 += v * wrow[1]
        if nnz % 2:
            col = nnz - 1 if idx == NULL else idx[nnz - 1]
            v = vals[nnz - 1]
            wrow = W + 2 * col
            z0 += v * wrow[0]
            z1 += v * wrow[1]
        z[0], z[1] = z0 + y0, z1 + y1
    else:
        for t in range(nnz):
            col = t if idx == NULL else idx[t]
            v = vals[t]
            wrow = W + col * k
            for j in range(k):
                z[j] += v * wrow[j]
    v = 1.0 / (1.0 + q)
    for j in range(k):
        z[j] = (z[j] + q * mu[j]) * v
    project_row(polytope, z, p, k, budget, <double*> NULL, work, iwork)
    for j in range(k):  # p becomes the change of mu_i
        v = p[j] - mu[j]
        mu[j] = p[j]
        p[j] = v
        change = max(change, fabs(v))
    if change == 0.0:
        return 0.0
    if k >= SPARSE_MIN_K:  # iwork lists the entries that moved
        for j in range(k):
            if p[j] != 0.0:
                iwork[changed] = j
                changed += 1
    if changed == 0 or changed * SPARSE_SHARE > k:  # whole rows: contiguous, vectorized
        if wb != NULL:
            for j in range(k):
                wb[j] -= c * intercept_sq * p[j]
        if k == 2:   # as the scores: the two weighted changes in registers
            d0, d1 = c * p[0], c * p[1]
            for t in range(nnz):
                col = t if idx == NULL else idx[t]
                v = vals[t]
                wrow = W + 2 * col
                wrow[0] -= v * d0
                wrow[1] -= v * d1
            return change
        for t in range(nnz):
            col = t if idx == NULL else idx[t]
            v = c * vals[t]
            wrow = W + col * k
            for j in range(k):
                wrow[j] -= v * p[j]
    else:   # the projections are sparse: few entries of mu_i move (the same sums)
        if wb != NULL:
            for m in range(changed):
                wb[iwork[m]] -= c * intercept_sq * p[iwork[m]]
        for t in range(nnz):
            col = t if idx == NULL else idx[t]
            v = c * vals[t]
            wrow = W + col * k
            for m in range(changed):
                j = iwork[m]
                wrow[j] -= v * p[j]
    return change


cdef enum:
    # the entries of the next row whose rows of W are prefetched (the rows of longer ones
    # would leave the caches before their turn: rows of 3,000 entries ran 25% slower)
    FAR_ROWS = 128


cdef double _epoch(const floating* data, const index_t* indices, const index_t* indptr,
                   Py_ssize_t d, double[:, ::1] W, const double[::1] b, double[::1] wb,
                   double intercept_sq, double[:, ::1] M, const double[::1] c,
                   const double[::1] q, const int64_t[::1] order, int polytope,
                   double budget) except -1:
    """Block updates over the rows ``order``: CSR rows, or dense rows of length ``d``
    when ``indptr`` is NULL. Returns the largest change of a dual entry."""
    cdef Py_ssize_t k = W.shape[1], r, i, start, nnz, t, nxt
    cdef double change = 0.0
    # W larger than the caches (many classes on many columns): each entry of a row reads a
    # row of W that misses them, so the rows of the next row's entries are asked for ahead
    cdef bint far_rows = indptr != NULL and d * k * sizeof(double) > CACHED_BYTES
    cdef double* wbp = NULL if wb is None else &wb[0]
    cdef const index_t* idx = NULL
    cdef double* buf = <double*> malloc(4 * k * sizeof(double))
    cdef Py_ssize_t* iwork = <Py_ssize_t*> malloc(2 * k * sizeof(Py_ssize_t))
    if buf == NULL or iwork == NULL:
        free(buf)
        free(iwork)
        raise MemoryError()
    with nogil:
        for r in range(order.shape[0]):
            i = order[r]
            # rows come in random order: the next rows' entries (~14 per row on a9a) would
            # miss the caches at each visit (benchmarks section sdca_checks)
            if r + 2 < order.shape[0]:
                SK_PREFETCH_READ(&c[order[r + 2]])
                SK_PREFETCH_READ(&q[order[r + 2]])
                SK_PREFETCH_W(&M[order[r + 2], 0])
                if indptr != NULL:
                    SK_PREFETCH_READ(&indptr[order[r + 2]])
            if r + 1 < order.shape[0] and indptr != NULL:
                start = indptr[order[r + 1]]
                SK_PREFETCH_READ(indices + start)
                SK_PREFETCH_READ(indices + start + 16)
                SK_PREFETCH_READ(data + start)
                SK_PREFETCH_READ(data + start + 8)
            if far_rows:   # indptr three rows ahead, indices two, the rows of W one
                if r + 3 < order.shape[0]:
                    SK_PREFETCH_READ(&indptr[order[r + 3]])
                if r + 2 < order.shape[0]:
                    nxt = order[r + 2]
                    prefetch_span(indices + indptr[nxt],
                                  (indptr[nxt + 1] - indptr[nxt]) * sizeof(index_t))
                if r + 1 < order.shape[0]:
                    nxt = order[r + 1]
                    for t in range(indptr[nxt], min(indptr[nxt + 1], indptr[nxt] + FAR_ROWS)):
                        prefetch_span(&W[indices[t], 0], k * sizeof(double))
            if c[i] == 0:
                continue
            if indptr == NULL:
                start, nnz = i * d, d
            else:
                start, nnz = indptr[i], indptr[i + 1] - indptr[i]
                idx = indices + start
            change = max(change, _block_step(
                data + start, idx, nnz, c[i], q[i], &W[0, 0], &b[0], wbp, intercept_sq,
                &M[i, 0], k, polytope, budget, buf, buf + k, buf + 2 * k, iwork))
    free(buf)
    free(iwork)
    return change


def dual_epoch_csr(const floating[::1] data, const index_t[::1] indices,
                   const index_t[::1] indptr, double[:, ::1] W, const double[::1] b,
                   double[::1] wb, double intercept_sq, double[:, ::1] M,
                   const double[::1] c, const double[::1] q, const int64_t[::1] order,
                   int polytope, double budget):
    """One pass of exact block updates over the rows ``order`` of CSR ``X``.

    ``c_i = s_i / (alpha S)`` and ``q_i = c_i (||x_i||^2 + intercept_sq)``; rows with
    ``c_i == 0`` are skipped. ``wb``: the intercept feature's scores (None: no intercept),
    ``intercept_sq`` that feature's squared value. Updates ``W``, ``wb`` and ``M`` in place;
    returns the largest change of a dual entry.
    """
    return _epoch(&data[0], &indices[0], &indptr[0], W.shape[0], W, b, wb, intercept_sq, M,
                  c, q, order, polytope, budget)


def dual_epoch_dense(const floating[:, ::1] X, double[:, ::1] W, const double[::1] b,
                     double[::1] wb, double intercept_sq, double[:, ::1] M,
                     const double[::1] c, const double[::1] q, const int64_t[::1] order,
                     int polytope, double budget):
    """Same as :func:`dual_epoch_csr` for dense C-contiguous ``X``."""
    return _epoch(&X[0, 0], <const int32_t*> NULL, <const int32_t*> NULL, X.shape[1], W, b,
                  wb, intercept_sq, M, c, q, order, polytope, budget)


def shuffle(int64_t[::1] order, uint64_t seed):
    """Shuffle ``order`` in place (Fisher-Yates) with splitmix64 seeded by ``seed``: an
    epoch's row order, at a few nanoseconds a row (NumPy's permutation costs as much as a
    fifth of a9a's epoch). Fewer than 2**32 entries."""
    cdef Py_ssize_t i, j
    cdef int64_t t
    cdef uint64_t state = seed
    if order.shape[0] >= 2 ** 32:
        raise ValueError("shuffle takes fewer than 2**32 entries")
    with nogil:
        for i in range(order.shape[0] - 1, 0, -1):
            j = random_below(&state, i + 1)
            t = order[i]
            order[i] = order[j]
            order[j] = t
