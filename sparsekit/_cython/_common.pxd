# Helpers shared by the Cython kernels (cimport them; the inline bodies live here).
#
# index_t    the index type of SciPy's CSR/CSC arrays (int32 or int64), so that kernels take
#            indices and indptr as SciPy gives them, without an int64 copy.
# weight_t   float32 or float64 model weights read as they are stored (a second fused type
#            beside the data's ``floating``, so that the two may differ).
# sparse_dot sum_p data[p] x[indices[p]] over p < m (x[p] when ``indices`` is NULL: a
#            dense row) in four interleaved partial sums: one sum is a chain of dependent
#            additions (1.4x faster on MNIST and w8a).
# row_max    the largest of n >= 1 values, in double (a plain loop: short rows).
# log1pexp   log(1 + e^t) without overflow.
# sigmoid    1 / (1 + e^-t) without overflow.
# bad_csr    0 when a CSR matrix's indptr (n + 1 entries) starts at 0 or above, never
#            decreases and ends within ``nnz`` stored entries, and its column indices there
#            lie in [0, n_cols) (and increase along each row, with ``sorted``); else which
#            of these fails (1 indptr, 2 a column index, 3 the order).
# bad_free_entries
#            0 when ``start`` runs from 0 to len(classes) without decreasing and every class
#            is in [0, K); else which of these fails (1, 2, 3): the free (column, class)
#            entries of the multinomial kernels.
# splitmix64_next
#            the next 64 random bits of a splitmix64 generator whose state is ``s[0]``.
# random_below
#            a uniform integer in [0, n) for n < 2**32 (multiply-shift on the top 32 bits of
#            splitmix64_next; bias below n / 2**32).
# SPARSE_SHARE, SPARSE_MIN_K
#            a row of k class entries (a dual change, a gradient row) is scattered over
#            its nonzero entries only when fewer than k / SPARSE_SHARE of them are nonzero
#            (a gather/scatter costs a few times a vectorized entry), and whole below
#            SPARSE_MIN_K classes.
# SK_PREFETCH, SK_PREFETCH_READ, SK_PREFETCH_W
#            software prefetch of the cache line at p, for writing, for reading, and in
#            exclusive state (x86 PREFETCHW); no-ops where the compiler has no builtin.
# prefetch_span
#            read-only prefetch of every cache line of ``nbytes`` bytes at ``p``.
# ROW_AHEAD  kernels that, for each stored entry of a sparse X, read or update the row of
#            a (rows or columns) x K matrix at the entry's index prefetch the row of the
#            entry this many places further on in X's storage: where that matrix outgrows
#            the caches each access waits on memory (57 classes on Debian TF-IDF rows:
#            1.7-2.6x faster kernels at 16, no gain beyond).
# bad_cols   whether a list of column indices holds one outside [0, n_cols).
# gather_panel
#            a float64 panel (nb × nc, column-major) of rows lo .. lo + nb of the listed
#            columns of a Fortran-ordered X (entries squared with ``square``): what the
#            dense kernels hand to BLAS (float32 entries are exact in it).
# PANEL_NUMBERS
#            the numbers such a panel holds (256 KB: in the L2 cache with what it meets).
# CACHED_BYTES
#            the size below which such a matrix is taken to stay in the caches (a quarter
#            of a 32 MiB L3): the kernels skip the prefetches there, which cost more than
#            they save (scores of 17,970 rows x 10 classes, 1.4 MB: 23% slower with them).
from cython cimport floating
from libc.math cimport exp, log1p
from libc.stdint cimport int32_t, int64_t, uint64_t

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SK_PREFETCH(p) __builtin_prefetch((const void*)(p), 1, 3)
    #define SK_PREFETCH_READ(p) __builtin_prefetch((const void*)(p), 0, 3)
    #if defined(__x86_64__) || defined(__i386__)
    /* PREFETCHW: the line in exclusive state (a NOP on x86 CPUs without it) */
    #define SK_PREFETCH_W(p) __asm__ volatile("prefetchw (%0)" :: "r"((const void*)(p)))
    #else
    #define SK_PREFETCH_W(p) __builtin_prefetch((const void*)(p), 1, 3)
    #endif
    #else
    #define SK_PREFETCH(p) ((void)(p))
    #define SK_PREFETCH_READ(p) ((void)(p))
    #define SK_PREFETCH_W(p) ((void)(p))
    #endif
    """
    void SK_PREFETCH(const void* p) noexcept nogil
    void SK_PREFETCH_READ(const void* p) noexcept nogil
    void SK_PREFETCH_W(const void* p) noexcept nogil

cdef enum:
    SPARSE_SHARE = 4
    SPARSE_MIN_K = 8
    ROW_AHEAD = 16
    CACHED_BYTES = 1 << 23
    PANEL_NUMBERS = 1 << 15

ctypedef fused index_t:
    int32_t
    int64_t

ctypedef fused weight_t:
    float
    double


cdef inline double sparse_dot(const floating* data, const index_t* indices, const weight_t* x,
                              Py_ssize_t m) noexcept nogil:
    cdef double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0
    cdef Py_ssize_t p = 0
    if indices == NULL:
        while p + 3 < m:
            s0 += data[p] * x[p]
            s1 += data[p + 1] * x[p + 1]
            s2 += data[p + 2] * x[p + 2]
            s3 += data[p + 3] * x[p + 3]
            p += 4
        while p < m:
            s0 += data[p] * x[p]
            p += 1
        return (s0 + s1) + (s2 + s3)
    while p + 3 < m:
        s0 += data[p] * x[indices[p]]
        s1 += data[p + 1] * x[indices[p + 1]]
        s2 += data[p + 2] * x[indices[p + 2]]
        s3 += data[p + 3] * x[indices[p + 3]]
        p += 4
    while p < m:
        s0 += data[p] * x[indices[p]]
        p += 1
    return (s0 + s1) + (s2 + s3)


cdef inline uint64_t splitmix64_next(uint64_t* s) noexcept nogil:
    s[0] += <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t z = s[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline Py_ssize_t random_below(uint64_t* s, Py_ssize_t n) noexcept nogil:
    return <Py_ssize_t>(((splitmix64_next(s) >> 32) * <uint64_t>n) >> 32)


cdef inline double row_max(const floating* a, Py_ssize_t n) noexcept nogil:
    """The largest of ``a[0], ..., a[n - 1]`` (n >= 1), in double."""
    cdef double top = a[0]
    cdef Py_ssize_t j
    for j in range(1, n):
        if a[j] > top:
            top = a[j]
    return top


cdef inline double log1pexp(double t) noexcept nogil:
    if t > 0.0:
        return t + log1p(exp(-t))
    return log1p(exp(t))


cdef inline double sigmoid(double t) noexcept nogil:
    cdef double e
    if t >= 0.0:
        return 1.0 / (1.0 + exp(-t))
    e = exp(t)
    return e / (1.0 + e)


cdef inline void prefetch_span(const void* p, Py_ssize_t nbytes) noexcept nogil:
    # a loop counted in lines: GCC (-O3 -fwrapv, Python's flags) dropped the prefetches of
    # ``for off in range(0, nbytes, 64)``, whose end it cannot prove under wrapping
    cdef const char* c = <const char*>p
    cdef Py_ssize_t line
    if nbytes <= 0:
        return
    for line in range((nbytes + 63) >> 6):
        SK_PREFETCH_READ(c + (line << 6))
    SK_PREFETCH_READ(c + nbytes - 1)


cdef inline int bad_csr(const index_t[::1] indices, const index_t[::1] indptr,
                        Py_ssize_t nnz, Py_ssize_t n_cols, bint sorted=False) noexcept nogil:
    cdef Py_ssize_t i, p, n = indptr.shape[0] - 1
    if n < 0 or indptr[0] < 0 or indptr[n] > nnz or indptr[n] > indices.shape[0]:
        return 1
    for i in range(n):
        if indptr[i + 1] < indptr[i]:
            return 1
    for p in range(indptr[0], indptr[n]):
        if indices[p] < 0 or indices[p] >= n_cols:
            return 2
    if sorted:
        for i in range(n):
            for p in range(indptr[i] + 1, indptr[i + 1]):
                if indices[p] <= indices[p - 1]:
                    return 3
    return 0


cdef inline int bad_free_entries(const long long[::1] start, const long long[::1] classes,
                                 Py_ssize_t K) noexcept nogil:
    cdef Py_ssize_t j, t
    if start.shape[0] < 1 or start[0] != 0 or start[start.shape[0] - 1] != classes.shape[0]:
        return 1
    for j in range(start.shape[0] - 1):
        if start[j + 1] < start[j]:
            return 2
    for t in range(classes.shape[0]):
        if classes[t] < 0 or classes[t] >= K:
            return 3
    return 0


cdef inline void gather_panel(const floating[::1, :] X, const long long* cols, Py_ssize_t nc,
                              Py_ssize_t lo, Py_ssize_t nb, double* panel,
                              bint square) noexcept nogil:
    cdef Py_ssize_t c, i
    cdef const floating* x
    cdef double* o
    for c in range(nc):
        x = &X[lo, cols[c]]
        o = panel + c * nb
        if square:
            for i in range(nb):
                o[i] = <double>x[i] * <double>x[i]
        else:
            for i in range(nb):
                o[i] = x[i]


cdef inline bint bad_cols(const long long[::1] cols, Py_ssize_t n_cols) noexcept nogil:
    cdef Py_ssize_t c
    for c in range(cols.shape[0]):
        if cols[c] < 0 or cols[c] >= n_cols:
            return True
    return False
