# cython: language_level=3
"""Epoch drivers for ExtremeSoftmaxSGD: per-step work O((m+1) nnz(x)), independent of K.

Objective (per-example form of Fagan & Iyengar 2018, eqs. (5)-(6), i.e. the
paper's f divided by N so that the learning rate is per example):

    f(u, W) = 1/N sum_i [ u_i + e^{-u_i} (1 + sum_{k != y_i} e^{s_ik}) - 1 ] + alpha/2 ||W||^2,
    s_ik = x_i.(w_k - w_{y_i}),

whose minimum over u_i >= 0 is the mean softmax NLL. One step draws a datapoint i and m
distinct classes C (uniform, without replacement, never y_i) and uses the unbiased estimate

    l_iC = u_i + e^{-u_i} + c sum_{k in C} e^{s_ik - u_i} + alpha/2 sum_{j in C+y_i} beta_j ||w_j||^2,

with c = (K-1)/m and beta_j = 1/P(class j is touched) (eq. (6)). Methods:

- IMPLICIT: the proximal step argmin 2 eta l_iC + ||theta - theta~||^2 (section 3.2). For m = 1 the
  monotone g(u) of eq. (16) is bracketed (App. F.1) and solved by safeguarded Newton; for
  m > 1 the (m+2)-variable problem is reduced to one monotone scalar equation in
  v = u + eta q Lambda / rho_y (derivation in ``_implicit_sgd._implicit_multi``). Ridge enters through
  rho_j = 1 + eta alpha beta_j (F.3 eq. (20), with its rho corrected to this form).
- UMAX: vanilla SGD on l_iC after the u-reset u_i <- log(1 + sum_C e^{s_ik}) whenever
  u_i < that - delta (section 3.1), then u in [0, B_u] and row norms <= B_W when alpha > 0.
- SGD: the same step without the reset (the unstable baseline of section 2.2).
- OVE: c sum_C softplus(s_ik) (Titsias 2016, eq. (15); (N/b)(K-1)/M of the sum form is
  (1/b)(K-1)/M here because the objective is a mean).
- SAMPLED_SOFTMAX: softmax cross-entropy over {y} + C with logits z_k + log c (IS).
- NCE: logistic loss of z_y + log c against z_k + log c (uniform noise, self-normalised).

Ridge is applied as a proximal shrink of the touched rows, w_j <- (w_j + step)/rho_j, through
lazy scaling w_j = gamma_j r_j, so data updates stay sparse.

``softmax_epoch_parallel`` runs the steps with batch size 1 and no ridge on several threads
at once, each over its own part of the epoch's order, writing the shared weights without
locks (Hogwild, Recht et al. 2011): two threads that touch one row at the same time may
lose one of the two updates, which sparse rows and many classes make rare.

With ``n_weights`` > 0, ``softmax_epoch_parallel`` and ``hashed_scores`` keep the weights in
a table of ``n_weights`` entries shared by the (class, feature) pairs through a hash
(Weinberger et al. 2009) instead of the K x D matrix; the steps are the same.

Why one module of ~1400 lines: the class sampler, the sparse-row primitives, the undo log,
the prefetch schedule and the walk over the epoch's rows are all called once or more per
example from the driver's loop, and gcc inlines them there; in other modules they would be
indirect calls through Cython's pointer tables. The Implicit SGD inner solves, called once
per step and costly on their own, live in ``_implicit_sgd.pyx``.
"""
import numpy as np

from cython cimport floating
from libc.float cimport DBL_MIN, FLT_MAX, FLT_MIN
from libc.math cimport exp, log, sqrt, fabs, isfinite
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport malloc, calloc, free, realloc

from cython.parallel cimport prange

from sparsekit._cython._common cimport (SK_PREFETCH, SK_PREFETCH_READ, SK_PREFETCH_W,
                                        index_t, prefetch_span, random_below, sigmoid,
                                        splitmix64_next)
from sparsekit._cython._implicit_sgd cimport _implicit_coefficients

cdef extern from *:
    """
    #if defined(__SSE__) || defined(_M_X64)
    #include <xmmintrin.h>
    /* MXCSR flush-to-zero (0x8000) and denormals-are-zero (0x0040); returns the old state */
    static inline unsigned int sk_flush_denormals(void) {
        unsigned int saved = _mm_getcsr();
        _mm_setcsr(saved | 0x8040);
        return saved;
    }
    static inline void sk_restore_denormals(unsigned int saved) { _mm_setcsr(saved); }
    #else
    static inline unsigned int sk_flush_denormals(void) { return 0; }
    static inline void sk_restore_denormals(unsigned int saved) { (void)saved; }
    #endif
    /* the flag that stops every thread of a parallel pass: relaxed atomic load and store */
    #if defined(__GNUC__) || defined(__clang__)
    static inline int sk_flag_get(int* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
    static inline void sk_flag_set(int* p) { __atomic_store_n(p, 1, __ATOMIC_RELAXED); }
    #else
    static inline int sk_flag_get(int* p) { return *(volatile int*)p; }
    static inline void sk_flag_set(int* p) { *(volatile int*)p = 1; }
    #endif
    #include <unistd.h>
    /* the core's level-2 cache in bytes as the C library reports it, else 1 MiB */
    static long sk_l2_cache_bytes(void) {
    #ifdef _SC_LEVEL2_CACHE_SIZE
        long size = sysconf(_SC_LEVEL2_CACHE_SIZE);
        if (size > 0) return size;
    #endif
        return 1L << 20;
    }
    """
    unsigned int sk_flush_denormals() noexcept nogil
    void sk_restore_denormals(unsigned int saved) noexcept nogil
    int sk_flag_get(int* p) noexcept nogil
    void sk_flag_set(int* p) noexcept nogil
    long sk_l2_cache_bytes() noexcept nogil

#: Weights larger than the core's L2 cache take spread write-intent prefetches: a burst of a
#: step's prefetches stalls the core once its lines come from L3 or DRAM.
L2_CACHE_BYTES = sk_l2_cache_bytes()


def spreads_prefetches(Py_ssize_t weight_bytes):
    """Whether :func:`softmax_epoch` spreads its prefetches (``write_intent=None``) for
    weights of ``weight_bytes`` bytes: when they exceed the L2 cache."""
    return weight_bytes > L2_CACHE_BYTES

cdef enum:
    LOOKAHEAD = 2       # batches between drawing a step's classes and running it
    PARTS = 4           # points of a step at which a later step's weights are asked for
    SCAN_DRAWS = 16     # up to this many classes a step, duplicate draws are found by a scan
    WALK_BLOCK = 256    # examples copied at a time, in walk order, into contiguous buffers
    WALK_LONG_ROW = 1024  # rows with more entries are read in place, not copied

cdef enum:
    IMPLICIT = 0
    UMAX = 1
    OVE = 2
    SGD = 3
    SAMPLED_SOFTMAX = 4
    NCE = 5

METHODS = {"implicit": IMPLICIT, "umax": UMAX, "ove": OVE, "sgd": SGD,
           "sampled_softmax": SAMPLED_SOFTMAX, "nce": NCE}


# ----------------------------------------------------------------------------------------
# Class sampling; random numbers from splitmix64 (one 64-bit state, _common.pxd).

cdef inline bint _insert(Py_ssize_t* table, Py_ssize_t mask, Py_ssize_t v) noexcept nogil:
    """Add v >= 0 to an open-addressing set of mask + 1 slots (free: -1, linear probing,
    Fibonacci hashing); False if v was already there."""
    cdef Py_ssize_t h = <Py_ssize_t>((<uint64_t>v * <uint64_t>0x9E3779B97F4A7C15) >> 32) & mask
    while table[h] != -1:
        if table[h] == v:
            return False
        h = (h + 1) & mask
    table[h] = v
    return True


cdef Py_ssize_t _draw_table_size(int m) noexcept nogil:
    """Slots of the duplicate table for m draws (a power of two >= 2m), 0 when m is small
    enough for a scan."""
    cdef Py_ssize_t size = 1
    if m <= SCAN_DRAWS:
        return 0
    while size < 2 * m:
        size *= 2
    return size


cdef void _sample_classes(uint64_t* s, Py_ssize_t K, Py_ssize_t y, int m, bint exclude,
                          Py_ssize_t* out, Py_ssize_t* table,
                          Py_ssize_t table_size) noexcept nogil:
    """m distinct classes uniform from {0..K-1} minus {y} (Floyd's algorithm); from all of
    {0..K-1} when not ``exclude`` (the Implicit SGD code published with Fagan & Iyengar 2018). Duplicates
    are found by a scan for m <= SCAN_DRAWS, else in ``table`` (``_draw_table_size(m)``
    slots): O(m) per draw set either way, and the same classes."""
    cdef Py_ssize_t jj, t, q, cnt = 0, n = K - 1 if exclude else K
    cdef bint dup
    if table_size:
        for q in range(table_size):
            table[q] = -1
    for jj in range(n - m, n):
        t = random_below(s, jj + 1)
        if table_size:
            dup = not _insert(table, table_size - 1, t)
            if dup:
                _insert(table, table_size - 1, jj)     # jj > every earlier draw: new
        else:
            dup = False
            for q in range(cnt):
                if out[q] == t:
                    dup = True
                    break
        out[cnt] = jj if dup else t
        cnt += 1
    if not exclude:
        return
    for q in range(m):
        if out[q] >= y:
            out[q] += 1


def sample_classes(const Py_ssize_t[::1] labels, Py_ssize_t K, int m, bint exclude_true,
                   uint64_t seed):
    """The classes :func:`softmax_epoch` draws from ``seed`` (without shared classes) for
    examples of the ``labels`` given in visit order: an (N, m + 1) int64 array, each row the
    example's class then its m sampled classes (what the GPU epochs consume)."""
    cdef Py_ssize_t N = labels.shape[0], t, q
    if m < 1 or m > (K - 1 if exclude_true else K):
        raise ValueError(f"sample_classes: need 1 <= m <= the classes to draw from, got m={m}, "
                         f"K={K}")
    out_arr = np.empty((N, m + 1), dtype=np.int64)
    cdef int64_t[:, ::1] out = out_arr
    cdef uint64_t state = seed
    cdef Py_ssize_t table_size = _draw_table_size(m)
    cdef Py_ssize_t* table = <Py_ssize_t*>malloc((table_size + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* drawn = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    if table == NULL or drawn == NULL:
        free(table); free(drawn)
        raise MemoryError()
    with nogil:
        for t in range(N):
            out[t, 0] = labels[t]
            _sample_classes(&state, K, labels[t], m, exclude_true, drawn, table, table_size)
            for q in range(m):
                out[t, q + 1] = drawn[q]
    free(table)
    free(drawn)
    return out_arr


cdef void _draw_classes(uint64_t* s, Py_ssize_t K, Py_ssize_t y, int m, bint exclude,
                        Py_ssize_t* shared, bint new_set, Py_ssize_t* out, Py_ssize_t* table,
                        Py_ssize_t table_size) noexcept nogil:
    """The m classes of one example: a draw of its own (``shared`` NULL), or the set of
    its batch (``shared``, drawn uniform among all K when ``new_set``) with the example's
    class, if the set holds it and ``exclude``, swapped for a class outside the set drawn
    uniformly. Either way the example's classes are a uniform m-subset of the K - 1 wrong
    ones: a set T arises as itself (probability 1/C(K,m)) or from one of its m neighbours
    holding y (m / (C(K,m) (K-m))), in all 1/C(K-1,m). Sharing (as TensorFlow's samplers
    in the published baselines) correlates the examples of a batch only."""
    cdef Py_ssize_t q, c
    if shared == NULL:
        _sample_classes(s, K, y, m, exclude, out, table, table_size)
        return
    if new_set:
        _sample_classes(s, K, y, m, False, shared, table, table_size)
    for q in range(m):
        out[q] = shared[q]
    if not exclude:
        return
    for q in range(m):
        if out[q] == y:
            c = y
            while _holds(shared, m, c):      # K / (K - m) draws on average
                c = random_below(s, K)
            out[q] = c
            return


cdef inline bint _holds(const Py_ssize_t* cls, int m, Py_ssize_t c) noexcept nogil:
    cdef int q
    for q in range(m):
        if cls[q] == c:
            return True
    return False


cdef inline int _rows_asked(bint sliced, const Py_ssize_t* cls, const Py_ssize_t* shared,
                            int m) noexcept nogil:
    """How many of an example's rows ``cls[0..m]`` (its class, then its m sampled classes)
    to ask for by its features: with the batch's ``shared`` rows asked for in slices
    (``_prefetch_slice``) the class's row only, unless the example's class is in the set
    (its sampled classes then differ from the set: ``_draw_classes``)."""
    return 1 if sliced and not _holds(shared, m, cls[0]) else m + 1


# ----------------------------------------------------------------------------------------
# Sparse / dense row primitives. A row is (xd, xi, nnz): values, feature indices (NULL for
# a dense row, whose indices are 0..nnz-1), count. ``bias`` adds a constant feature 1 at
# column D of the weight row.

cdef inline double _dot(const floating* w, const floating* xd, const index_t* xi,
                        Py_ssize_t nnz, bint bias, Py_ssize_t D) noexcept nogil:
    cdef double acc = 0.0
    cdef Py_ssize_t p
    if xi == NULL:
        for p in range(nnz):
            acc += xd[p] * w[p]
    else:
        for p in range(nnz):
            acc += xd[p] * w[xi[p]]
    if bias:
        acc += w[D]
    return acc


cdef inline bint _beyond_float(double a, double xsq) noexcept nogil:
    """Whether the step ``a x`` (``xsq = ||x||^2``) can write an entry beyond float32's
    range, |a| ||x|| > FLT_MAX: a finite double coefficient that float32 weights cannot
    hold (with entries never read again, nothing else would see it)."""
    return a * a * xsq > <double>FLT_MAX * <double>FLT_MAX


cdef inline double _sqnorm(const floating* w, Py_ssize_t n) noexcept nogil:
    cdef double acc = 0.0
    cdef Py_ssize_t p
    for p in range(n):
        acc += <double>w[p] * w[p]
    return acc


cdef inline void _axpy(floating* w, double a, const floating* xd, const index_t* xi,
                       Py_ssize_t nnz, bint bias, Py_ssize_t D) noexcept nogil:
    cdef Py_ssize_t p
    cdef floating af = <floating>a
    if xi == NULL:
        for p in range(nnz):
            w[p] += af * xd[p]
    else:
        for p in range(nnz):
            w[xi[p]] += af * xd[p]
    if bias:
        w[D] += af


cdef struct Undo:
    # the entries of R a pass overwrote, oldest first: their offsets and old values
    Py_ssize_t* where
    double* old
    Py_ssize_t size, cap


cdef bint _undo_reserve(Undo* u, Py_ssize_t extra) noexcept nogil:
    """Room for ``extra`` more entries in the log; False when memory ran out."""
    cdef Py_ssize_t cap
    cdef void* p
    if u.size + extra <= u.cap:
        return True
    cap = max(2 * u.cap, u.size + extra, <Py_ssize_t>4096)
    p = realloc(u.where, cap * sizeof(Py_ssize_t))
    if p == NULL:
        return False
    u.where = <Py_ssize_t*>p
    p = realloc(u.old, cap * sizeof(double))
    if p == NULL:
        return False
    u.old = <double*>p
    u.cap = cap
    return True


cdef inline void _undo_entries(Undo* u, Py_ssize_t base, const floating* w, const index_t* xi,
                               Py_ssize_t nnz, bint bias, Py_ssize_t D) noexcept nogil:
    """Log the entries of row ``w`` (offset ``base`` in R) that ``_axpy`` is about to write
    (room reserved by the caller)."""
    cdef Py_ssize_t p, q
    for p in range(nnz):
        q = p if xi == NULL else xi[p]
        u.where[u.size] = base + q
        u.old[u.size] = w[q]
        u.size += 1
    if bias:
        u.where[u.size] = base + D
        u.old[u.size] = w[D]
        u.size += 1


cdef void _undo_restore(const Undo* u, floating* R0) noexcept nogil:
    """Put back every logged entry, newest first (an entry written twice ends at its oldest
    value)."""
    cdef Py_ssize_t t
    for t in range(u.size - 1, -1, -1):
        R0[u.where[t]] = <floating>u.old[t]


cdef inline void _prefetch_rows(floating* R, Py_ssize_t stride, const Py_ssize_t* cls,
                                int mm, const index_t* xi, Py_ssize_t nnz, bint bias,
                                Py_ssize_t D) noexcept nogil:
    """Ask at once for the weight entries a later step will touch (x's features, NULL
    ``xi``: every line of a dense row, and the bias entry) in the rows of classes
    ``cls[0..mm-1]``: the pipeline for weights that fit in the core's L2 cache."""
    cdef Py_ssize_t step = 64 // sizeof(floating)
    cdef Py_ssize_t j, p
    cdef floating* w
    for j in range(mm):
        w = R + cls[j] * stride
        if xi == NULL:
            p = 0
            while p < nnz:
                SK_PREFETCH(w + p)
                p += step
        else:
            for p in range(nnz):
                SK_PREFETCH(w + xi[p])
        if bias:
            SK_PREFETCH(w + D)


cdef inline void _prefetch_part(floating* R, Py_ssize_t stride, const Py_ssize_t* cls,
                                int mm, const index_t* xi, Py_ssize_t nnz, bint bias,
                                Py_ssize_t D, int part) noexcept nogil:
    """Ask for part ``part`` (of PARTS) of the weight entries a later step will touch:
    the features of x (``xi``, NULL for a dense row: its cache lines) and the bias entry in
    the rows of classes ``cls[0..mm-1]``, taken row after row.

    For a weight matrix larger than the core's L2 cache: the step's requests are spread
    over PARTS points of an earlier step and made as write-intent prefetches, which this
    machine issues in program order; a burst of ~2 nnz(x) lines from L3 or DRAM,
    or plain prefetches run ahead out of order, left the later step waiting for lines it
    had asked for (doc/benchmarks.md, extreme_softmax section 2). Results do not depend
    on it.
    """
    cdef Py_ssize_t step = 64 // sizeof(floating)
    cdef Py_ssize_t n = ((nnz + step - 1) // step if xi == NULL else nnz) + bias
    cdef Py_ssize_t lo = part * mm * n // PARTS, hi = (part + 1) * mm * n // PARTS
    cdef Py_ssize_t j, p, q, end
    cdef floating* w
    if n == 0:
        return
    j = lo // n
    p = lo - j * n
    while lo < hi:
        w = R + cls[j] * stride
        end = n if hi - lo >= n - p else p + (hi - lo)
        lo += end - p
        q = end if end < n - bias else n - bias     # feature units; then the bias entry
        while p < q:
            SK_PREFETCH_W(w + (xi[p] if xi != NULL else step * p))
            p += 1
        if p < end:
            SK_PREFETCH_W(w + D)
        j += 1
        p = 0


cdef inline void _prefetch_slice(floating* R, Py_ssize_t stride, const Py_ssize_t* rows,
                                 int m, Py_ssize_t e, Py_ssize_t b) noexcept nogil:
    """Ask for slice ``e`` of ``b`` of the cache lines of the rows ``rows[0..m-1]``: the
    rows a batch of ``b`` examples shares, a few lines at each of its examples. Those
    examples touch nearly every line of a shared row between them; each example asking
    for its own features of the row made b times as many requests, most of them for lines
    already asked for."""
    cdef Py_ssize_t lines = (stride * sizeof(floating) + 63) // 64
    cdef Py_ssize_t lo = e * lines // b, hi = (e + 1) * lines // b, q
    cdef int j
    cdef const char* w
    for j in range(m):
        w = <const char*>(R + rows[j] * stride)
        for q in range(lo, hi):
            SK_PREFETCH_W(w + 64 * q)


# ----------------------------------------------------------------------------------------
# Step coefficients: for the touched classes T = (y, k_1..k_m) with scores z_j = x.w_j,
# coef_j is the multiplier of x in the data update of w_j (-eta dl/dz_j for the explicit
# methods), and du the update of u. ``u`` is the already-reset u_i for U-max.

cdef int _explicit_coefficients(int method, int m, const double* z, double u, double eta,
                                double logc, double* coef, double* du) noexcept nogil:
    """Coefficients of the explicit methods; returns 1 on a non-finite value."""
    cdef double c = exp(logc), tot = 0.0, g, mx, acc
    cdef int k
    du[0] = 0.0
    if method == UMAX or method == SGD:
        for k in range(1, m + 1):
            g = c * exp(z[k] - z[0] - u)
            coef[k] = -eta * g
            tot += g
        coef[0] = eta * tot
        du[0] = -eta * (1.0 - exp(-u) - tot)
    elif method == OVE:
        for k in range(1, m + 1):
            g = c * sigmoid(z[k] - z[0])
            coef[k] = -eta * g
            tot += g
        coef[0] = eta * tot
    elif method == SAMPLED_SOFTMAX:
        mx = z[0]
        for k in range(1, m + 1):
            if z[k] + logc > mx:
                mx = z[k] + logc
        acc = exp(z[0] - mx)
        for k in range(1, m + 1):
            acc += exp(z[k] + logc - mx)
        coef[0] = eta * (1.0 - exp(z[0] - mx) / acc)
        for k in range(1, m + 1):
            coef[k] = -eta * exp(z[k] + logc - mx) / acc
    else:  # NCE
        coef[0] = eta * sigmoid(-(z[0] + logc))
        for k in range(1, m + 1):
            coef[k] = -eta * sigmoid(z[k] + logc)
    for k in range(m + 1):
        if not isfinite(coef[k]):
            return 1
    return 0 if isfinite(du[0]) else 1


cdef double _umax_reset(int m, const double* z, double u, double delta,
                        bint* reset) noexcept nogil:
    """u <- log(1 + sum_C e^{s_k}) if u < that - delta (Algorithm 1, over the sampled set)."""
    cdef double mx = 0.0, acc, bound
    cdef int k
    for k in range(1, m + 1):
        if z[k] - z[0] > mx:
            mx = z[k] - z[0]
    acc = exp(-mx)
    for k in range(1, m + 1):
        acc += exp(z[k] - z[0] - mx)
    bound = mx + log(acc)
    reset[0] = u < bound - delta
    return bound if reset[0] else u


# ----------------------------------------------------------------------------------------
# Hashed weights: a table of n entries instead of the K x D matrix (Weinberger et al.
# 2009; Vowpal Wabbit). Feature j has a base H(j) in [0, n) and a sign a_j, class slot c
# an offset c mod n and a sign b_c; the weight of (c, j) is a_j b_c T[(H(j) + c) mod n].
# A feature's classes are consecutive entries, so scoring every class of a row reads
# nnz(x) contiguous spans; in a step, the m + 1 classes' entries are scattered as in the
# dense matrix. Intercepts are not hashed: one per class slot, after the table.

cdef extern from *:
    """
    #include <stdint.h>
    /* floor(h n / 2^64) (Lemire's multiply-shift): a uniform h onto [0, n) */
    static inline int64_t sk_fastrange(uint64_t h, int64_t n) {
    #if defined(__SIZEOF_INT128__)
        return (int64_t)(((unsigned __int128)h * (unsigned __int128)(uint64_t)n) >> 64);
    #else
        return (int64_t)((h >> 11) % (uint64_t)n);
    #endif
    }
    """
    int64_t sk_fastrange(uint64_t h, int64_t n) noexcept nogil

cdef enum:
    FEATURE_SALT = 0x2545F491
    CLASS_SALT = 0x5851F42D


cdef inline uint64_t _fmix(uint64_t z) noexcept nogil:
    """MurmurHash3's 64-bit finalizer: every input bit reaches every output bit."""
    z ^= z >> 33
    z *= <uint64_t>0xFF51AFD7ED558CCD
    z ^= z >> 33
    z *= <uint64_t>0xC4CEB9FE1A85EC53
    z ^= z >> 33
    return z


cdef inline double _class_sign(Py_ssize_t slot) noexcept nogil:
    return -1.0 if _fmix(<uint64_t>slot ^ CLASS_SALT) & 1 else 1.0


cdef inline void _hash_row(const floating* xd, const index_t* xi, Py_ssize_t nnz,
                           Py_ssize_t n, floating* xs, Py_ssize_t* base) noexcept nogil:
    """The row's hashed form: ``base[p] = H(j)`` and ``xs[p] = a_j x_j`` for its p-th
    entry (feature ``xi[p]``, or p for a dense row)."""
    cdef Py_ssize_t p
    cdef uint64_t h
    for p in range(nnz):
        h = _fmix(<uint64_t>(xi[p] if xi != NULL else p) ^ FEATURE_SALT)
        base[p] = sk_fastrange(h, n)
        xs[p] = -xd[p] if h & 1 else xd[p]


cdef inline double _hdot(const floating* T, Py_ssize_t n, Py_ssize_t off,
                         const floating* xs, const Py_ssize_t* base,
                         Py_ssize_t nnz) noexcept nogil:
    """sum_p xs[p] T[(base[p] + off) mod n], for 0 <= off < n."""
    cdef double acc = 0.0
    cdef Py_ssize_t p, idx
    for p in range(nnz):
        idx = base[p] + off
        if idx >= n:
            idx -= n
        acc += xs[p] * T[idx]
    return acc


cdef inline void _haxpy(floating* T, Py_ssize_t n, Py_ssize_t off, double a,
                        const floating* xs, const Py_ssize_t* base,
                        Py_ssize_t nnz) noexcept nogil:
    """T[(base[p] + off) mod n] += a xs[p] for every entry p."""
    cdef Py_ssize_t p, idx
    cdef floating af = <floating>a
    for p in range(nnz):
        idx = base[p] + off
        if idx >= n:
            idx -= n
        T[idx] += af * xs[p]


cdef inline void _prefetch_hashed(floating* T, Py_ssize_t n, const Py_ssize_t* slots,
                                  const Py_ssize_t* cls, int mm, const Py_ssize_t* base,
                                  Py_ssize_t nnz, bint bias, int part) noexcept nogil:
    """Ask for part ``part`` of PARTS (all of them for ``part`` < 0) of the table entries
    a later step touches: ``nnz`` entries for each of its classes ``cls[0..mm-1]``, and
    their intercepts, as write-intent prefetches (the dense rows' ``_prefetch_part``)."""
    cdef Py_ssize_t total = mm * (nnz + bias)
    cdef Py_ssize_t lo = 0 if part < 0 else part * total // PARTS
    cdef Py_ssize_t hi = total if part < 0 else (part + 1) * total // PARTS
    cdef Py_ssize_t j, p, idx, off, width = nnz + bias
    if width == 0:
        return
    j = lo // width
    p = lo - j * width
    while lo < hi:
        off = slots[cls[j]] % n
        while p < width and lo < hi:
            if p < nnz:
                idx = base[p] + off
                SK_PREFETCH_W(T + (idx - n if idx >= n else idx))
            else:
                SK_PREFETCH_W(T + n + slots[cls[j]])
            p += 1
            lo += 1
        j += 1
        p = 0


# ----------------------------------------------------------------------------------------
# The walk: the epoch's rows and per-example scalars copied, a block of examples at a time,
# into buffers in the order the epoch visits them. A shuffled walk over X read in place
# waited on its scattered rows although they were prefetched steps ahead; copying a block
# is a burst of independent loads, and the steps then read consecutive memory
# (doc/benchmarks.md, extreme_softmax section 2). A row longer than WALK_LONG_ROW entries
# is one long span already and is read in place, so the buffers hold at most
# 2 block WALK_LONG_ROW entries (8 MiB for float64 values and int64 indices at the
# default block) and never more than two blocks' rows of X.

cdef struct Walk:
    Py_ssize_t block        # examples per block (a power of two); the buffers hold two
    int shift               # log2(block): positions map to slots without a division
    Py_ssize_t copied       # walk positions [0, copied) are in the buffers
    Py_ssize_t* example     # per position modulo 2 blocks: the row of X,
    Py_ssize_t* label       # its class, weight, ||x||^2 (+1 with bias),
    double* weight
    double* xsq
    Py_ssize_t* offset      # and where its entries start in its block's row buffers
                            # (-1 - indptr[row] for a row read in place)
    Py_ssize_t* nnz
    void* data[2]           # each block's rows: values (floating) and indices (index_t)
    void* indices[2]
    Py_ssize_t capacity[2]  # entries the row buffers of each block hold


cdef int _walk_init(Walk* g, Py_ssize_t block) noexcept nogil:
    """Allocate the per-example buffers of two blocks of at least ``block`` examples (rounded
    up to a power of two); -1 when out of memory."""
    g.shift = 0
    while (<Py_ssize_t>1 << g.shift) < block:
        g.shift += 1
    g.block = <Py_ssize_t>1 << g.shift
    cdef Py_ssize_t n = 2 * g.block
    g.copied = 0
    g.example = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    g.label = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    g.weight = <double*>malloc(n * sizeof(double))
    g.xsq = <double*>malloc(n * sizeof(double))
    g.offset = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    g.nnz = <Py_ssize_t*>malloc(n * sizeof(Py_ssize_t))
    g.data[0] = g.data[1] = g.indices[0] = g.indices[1] = NULL
    g.capacity[0] = g.capacity[1] = 0
    if (g.example == NULL or g.label == NULL or g.weight == NULL or g.xsq == NULL
            or g.offset == NULL or g.nnz == NULL):
        return -1
    return 0


cdef void _walk_free(Walk* g) noexcept nogil:
    free(g.example); free(g.label); free(g.weight); free(g.xsq); free(g.offset)
    free(g.nnz); free(g.data[0]); free(g.data[1]); free(g.indices[0]); free(g.indices[1])


cdef int _walk_copy(Walk* g, Py_ssize_t upto, const Py_ssize_t* order, Py_ssize_t N,
                    const floating* data, const index_t* indices, const index_t* indptr,
                    bint dense, const Py_ssize_t* y, const double* sample_weight,
                    const double* xsq) noexcept nogil:
    """Copy whole blocks of the walk ``order`` until positions [0, min(upto, N)) are in the
    buffers (a dense X's rows are used in place); -1 when out of memory. A block
    overwrites the one two blocks before it, which the caller has finished with."""
    cdef Py_ssize_t t, t0, t1, q, i, lo, p, total, h
    cdef floating* gd
    cdef index_t* gi
    while g.copied < upto and g.copied < N:
        t0 = g.copied
        t1 = t0 + g.block if N - t0 > g.block else N
        h = (t0 >> g.shift) & 1
        total = 0
        for t in range(t0, t1):
            q = t & (2 * g.block - 1)
            i = order[t]
            g.example[q] = i
            g.label[q] = y[i]
            g.weight[q] = sample_weight[i]
            g.xsq[q] = xsq[i]
            if not dense:
                g.nnz[q] = indptr[i + 1] - indptr[i]
                if g.nnz[q] > WALK_LONG_ROW:
                    g.offset[q] = -1 - indptr[i]
                else:
                    g.offset[q] = total
                    total += g.nnz[q]
        if total > g.capacity[h]:
            free(g.data[h]); free(g.indices[h])
            g.capacity[h] = total if total > 2 * g.capacity[h] else 2 * g.capacity[h]
            g.data[h] = malloc(g.capacity[h] * sizeof(floating))
            g.indices[h] = malloc(g.capacity[h] * sizeof(index_t))
            if g.data[h] == NULL or g.indices[h] == NULL:
                return -1
        if not dense:
            gd = <floating*>g.data[h]
            gi = <index_t*>g.indices[h]
            for t in range(t0, t1):
                q = t & (2 * g.block - 1)
                if g.offset[q] < 0:
                    continue
                lo = indptr[g.example[q]] - g.offset[q]
                for p in range(g.offset[q], g.offset[q] + g.nnz[q]):
                    gd[p] = data[lo + p]
                    gi[p] = indices[lo + p]
        g.copied = t1
    return 0


cdef inline Py_ssize_t _walk_row(const Walk* g, Py_ssize_t t, const floating* data,
                                 const index_t* indices, bint dense, Py_ssize_t D,
                                 const floating** xd, const index_t** xi) noexcept nogil:
    """Point (``xd``, ``xi``) at the row of walk position ``t`` (copied, or in X's
    ``data`` and ``indices``; ``xi`` NULL for a dense row); return its nnz."""
    cdef Py_ssize_t q = t & (2 * g.block - 1), h = (t >> g.shift) & 1
    if dense:
        xd[0] = &data[g.example[q] * D]
        xi[0] = NULL
        return D
    if g.offset[q] < 0:
        xd[0] = &data[-1 - g.offset[q]]
        xi[0] = &indices[-1 - g.offset[q]]
    else:
        xd[0] = (<const floating*>g.data[h]) + g.offset[q]
        xi[0] = (<const index_t*>g.indices[h]) + g.offset[q]
    return g.nnz[q]


cdef inline int _step(int method, int m, const double* z, const double* rho, double* u,
                      double eta, double q, double logc, double delta, double bound_u,
                      double* coef, double* work, Py_ssize_t* n_resets) noexcept nogil:
    """One example's step coefficients ``coef[0..m]`` from its scores ``z`` and its ``u``
    (updated in place: the proximal u of Implicit SGD, U-max's reset and the double-sum
    methods' clipped step); ``q`` is ||x||^2, ``rho`` Implicit SGD's ridge factors. Returns
    1 on a non-finite value."""
    cdef double unew, du
    cdef bint reset
    cdef int status
    if method == IMPLICIT:
        status = _implicit_coefficients(m, z, rho, u[0], eta, q, logc, coef, &unew, work)
        u[0] = unew
        return status
    if method == UMAX:
        u[0] = _umax_reset(m, z, u[0], delta, &reset)
        n_resets[0] += reset
    status = _explicit_coefficients(method, m, z, u[0], eta, logc, coef, &du)
    if method == UMAX or method == SGD:
        unew = u[0] + du
        u[0] = 0.0 if unew < 0.0 else (bound_u if unew > bound_u else unew)
    return status


# ----------------------------------------------------------------------------------------
# Epoch driver.

def softmax_epoch(int method, const floating[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, bint dense, Py_ssize_t n_features, bint bias,
                  const Py_ssize_t[::1] y, const double[::1] sample_weight,
                  const double[::1] xsq, floating[:, ::1] R, double[::1] gamma,
                  double[::1] sqn, double[::1] u, const double[::1] beta,
                  const Py_ssize_t[::1] order, int n_sampled, int batch_size, double eta,
                  double alpha, double delta, double bound_w, double bound_u, uint64_t seed,
                  write_intent=None, bint exclude_true=True,
                  bint shared_classes=False, bint undo=False):
    """One pass over the rows listed in ``order``; updates R, gamma, sqn, u in place.

    ``W = gamma[:, None] * R`` (lazy ridge scaling). Rows are CSR (``data``, ``indices``,
    ``indptr``; int32 or int64 indices) or, when ``dense``, a C-ordered (N, D) array
    flattened into ``data``.
    ``xsq`` holds ``||x_i||^2`` (+1 with ``bias``). ``sqn`` tracks ``||r_k||^2`` and is only
    used by U-max with ``alpha > 0`` (row projection onto ``||w_k|| <= bound_w``); a
    negative entry means "not known yet": the row's norm is computed when the row is first
    touched, so a pass over a few rows (``partial_fit``) does not read all K of them.
    ``write_intent`` spreads the weight prefetches over the step two ahead as
    write-intent prefetches instead of asking for them at the draw; it changes the speed
    only, never the results. None (the default) spreads them when R is larger than the
    core's L2 cache (:func:`spreads_prefetches`). With
    ``exclude_true=False`` the classes are drawn among all K (the true class too, weight
    still (K-1)/m), as the code published with Fagan & Iyengar 2018 did; a draw of the true
    class then moves u only. With ``shared_classes`` the examples of a batch share one
    draw of classes (``_draw_classes``): each example's classes are still uniform among its
    wrong ones, and the batch reads m sampled rows instead of up to b m (asked for in
    slices over the batch when its nonzeros outnumber a row's lines). Subnormal numbers
    are flushed to zero during the pass (x86 FTZ/DAZ, restored on return): with large K,
    OVE's updates of sampled rows underflow float32, and every subnormal operand or result
    costs a microcode assist. With ``undo``, every entry of R the pass writes is logged first,
    and a pass that fails (status != 0) puts R back as it was: what ``partial_fit`` needs to
    leave a model unchanged after an overflow, at the cost of the entries it writes
    (O((m+1) nnz) each step) instead of a copy of R.

    Returns
    -------
    status : int
        0 on success, 1 if a non-finite value appeared (the pass stops there).
    n_resets : int
        Number of U-max u-resets.
    """
    cdef Py_ssize_t K = R.shape[0], N = order.shape[0], D = n_features
    cdef int m = n_sampled, mm = n_sampled + 1, b = batch_size
    cdef Py_ssize_t start, nb, e, i, j, k, t, nnz, n_resets = 0
    cdef int status = 0
    cdef uint64_t state = seed
    cdef double logc = log((K - 1.0) / m), eta_i, a, d, nrm, scale
    cdef bint ridge = alpha > 0.0     # without ridge gamma stays 1: never read it (O(K) state)
    cdef bint track = method == UMAX and ridge
    cdef bint spread
    cdef double tiny = FLT_MIN if floating is float else DBL_MIN
    if b < 1 or m < 1 or m > (K - 1 if exclude_true else K) or R.shape[1] < D + bias:
        raise ValueError(f"softmax_epoch: need batch_size >= 1, 1 <= n_sampled <= the classes "
                         f"to draw from and R of width >= n_features + bias (got {b}, {m}, "
                         f"K={K}, R width {R.shape[1]}, n_features {D}, bias {bias})")
    cdef Py_ssize_t n_rows = data.shape[0] // D if dense and D else indptr.shape[0] - 1
    if dense and D == 0:
        n_rows = y.shape[0]
    if (y.shape[0] != n_rows or sample_weight.shape[0] != n_rows or xsq.shape[0] != n_rows
            or u.shape[0] != n_rows or ridge and (gamma.shape[0] != K or beta.shape[0] != K)
            or track and sqn.shape[0] != K):
        raise ValueError(f"softmax_epoch: y, sample_weight, xsq and u need one entry per row "
                         f"of X ({n_rows}), and gamma, beta (with alpha > 0) and sqn (U-max "
                         f"with alpha > 0) one per class ({K})")
    # A batch sharing its classes touches nearly every line of a shared row when its
    # examples' nonzeros outnumber the row's lines: ask for the rows in slices then.
    cdef bint intent = (spreads_prefetches(R.shape[0] * R.shape[1] * sizeof(floating))
                        if write_intent is None else bool(write_intent))
    cdef Py_ssize_t row_lines = (R.shape[1] * sizeof(floating) + 63) // 64
    cdef bint sliced = (intent and shared_classes and b > 1 and n_rows > 0
                        and (dense or b * (indptr[n_rows] - indptr[0]) >= n_rows * row_lines))
    cdef const floating* xd
    cdef const index_t* xi
    cdef const floating* data_p = &data[0] if data.shape[0] else NULL
    cdef const index_t* indices_p = &indices[0] if indices.shape[0] else NULL
    cdef const index_t* indptr_p = &indptr[0] if indptr.shape[0] else NULL
    cdef floating* w
    cdef floating* R0 = &R[0, 0]
    cdef Py_ssize_t stride = R.shape[1], ahead = LOOKAHEAD * b, pnnz = 0
    cdef int pmm = mm
    cdef const floating* pxd
    cdef const index_t* pxi = NULL
    cdef Py_ssize_t* cls_ahead
    # classes of the examples in flight: the current batch and LOOKAHEAD batches after it
    cdef Py_ssize_t ring = (LOOKAHEAD + 1) * b, drawn = 0
    cdef Py_ssize_t* ringbuf = <Py_ssize_t*>malloc(ring * mm * sizeof(Py_ssize_t))
    cdef Py_ssize_t* cls
    cdef Py_ssize_t* pos = <Py_ssize_t*>malloc(b * sizeof(Py_ssize_t))
    cdef double* coef = <double*>malloc(b * mm * sizeof(double))
    cdef double* z = <double*>malloc(mm * sizeof(double))
    cdef double* rho = <double*>malloc(mm * sizeof(double))
    cdef double* work = <double*>malloc(5 * mm * sizeof(double))
    cdef int* cnt = <int*>calloc(K, sizeof(int))
    cdef double* rowrho = <double*>malloc(K * sizeof(double))
    cdef Py_ssize_t table_size = _draw_table_size(m)
    cdef Py_ssize_t* table = <Py_ssize_t*>malloc((table_size + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t* shared = <Py_ssize_t*>malloc(m * sizeof(Py_ssize_t))
    cdef Walk walk
    cdef Undo written
    written.where, written.old, written.size, written.cap = NULL, NULL, 0, 0
    cdef int walk_failed = _walk_init(&walk, max(<Py_ssize_t>WALK_BLOCK, (LOOKAHEAD + 2) * b))
    if (ringbuf == NULL or pos == NULL or coef == NULL or z == NULL or rho == NULL
            or work == NULL or cnt == NULL or rowrho == NULL or table == NULL or shared == NULL
            or walk_failed):
        free(ringbuf); free(pos); free(coef); free(z); free(rho); free(work); free(cnt)
        free(rowrho); free(table); free(shared); _walk_free(&walk)
        raise MemoryError()
    cdef unsigned int fp_state = sk_flush_denormals()
    try:
        with nogil:
            start = 0
            while start < N and status == 0:
                nb = b if N - start >= b else N - start
                # the walk is copied up to the examples whose u is asked for below
                status = _walk_copy(&walk, start + (LOOKAHEAD + 2) * b, &order[0], N, data_p,
                                    indices_p, indptr_p, dense, &y[0], &sample_weight[0],
                                    &xsq[0])
                if status:
                    break
                # A pipeline of prefetches in which every address was itself asked for one
                # batch earlier: classes are drawn LOOKAHEAD batches ahead (in example order,
                # so results do not depend on LOOKAHEAD); their weight entries are asked for
                # at the draw (``_prefetch_rows``) or, for weights larger than the core's L2
                # cache (``write_intent``), in PARTS parts while the example LOOKAHEAD batches
                # earlier is processed (``_prefetch_part``: before and after its dots, after
                # its coefficients, after its update). Rows and per-example scalars are in the
                # walk's buffers by then; u, and a dense row (read in place), are asked for
                # one batch after the draw. With ``sliced``, the rows that the batch
                # LOOKAHEAD ahead shares (``shared``: it is the last batch drawn) are asked
                # for in slices instead, one at each example of the current batch.
                while drawn < start + nb + LOOKAHEAD * b and drawn < N:
                    t = (drawn % ring) * mm
                    ringbuf[t] = walk.label[drawn & (2 * walk.block - 1)]
                    _draw_classes(&state, K, ringbuf[t], m, exclude_true,
                                  shared if shared_classes else NULL, drawn % b == 0,
                                  &ringbuf[t + 1], table, table_size)
                    if not intent:
                        nnz = _walk_row(&walk, drawn, data_p, indices_p, dense, D, &xd, &xi)
                        _prefetch_rows(R0, stride, &ringbuf[t], mm, xi, nnz, bias, D)
                    if ridge:
                        for j in range(mm):
                            SK_PREFETCH(&gamma[ringbuf[t + j]])
                            SK_PREFETCH_READ(&beta[ringbuf[t + j]])
                    drawn += 1
                for e in range(drawn, drawn + b):
                    if e >= N:
                        break
                    if dense:
                        nnz = _walk_row(&walk, e, data_p, indices_p, dense, D, &xd, &xi)
                        prefetch_span(xd, nnz * sizeof(floating))
                    SK_PREFETCH(&u[walk.example[e & (2 * walk.block - 1)]])
                cls = &ringbuf[(start % ring) * mm]     # contiguous: start is a multiple of b
                cls_ahead = &ringbuf[((start + ahead) % ring) * mm]
                # 1) coefficients from the current weights
                for e in range(nb):
                    spread = intent and start + e + ahead < N
                    if spread:     # the row of the step whose weights are asked for
                        pnnz = _walk_row(&walk, start + e + ahead, data_p, indices_p, dense,
                                         D, &pxd, &pxi)
                        pmm = _rows_asked(sliced, &cls_ahead[e * mm], shared, m)
                        _prefetch_part(R0, stride, &cls_ahead[e * mm], pmm, pxi, pnnz, bias,
                                       D, 0)
                        if sliced:
                            _prefetch_slice(R0, stride, shared, m, e, b)
                    pos[e] = (start + e) & (2 * walk.block - 1)
                    i = walk.example[pos[e]]
                    nnz = _walk_row(&walk, start + e, data_p, indices_p, dense, D, &xd, &xi)
                    for j in range(mm):
                        k = cls[e * mm + j]
                        z[j] = _dot(&R[k, 0], xd, xi, nnz, bias, D)
                        if ridge:
                            z[j] *= gamma[k]
                    if spread:
                        _prefetch_part(R0, stride, &cls_ahead[e * mm], pmm, pxi, pnnz, bias,
                                       D, 1)
                    eta_i = eta * walk.weight[pos[e]] / nb
                    if method == IMPLICIT:
                        for j in range(mm):
                            rho[j] = (1.0 + eta * alpha * beta[cls[e * mm + j]] if ridge
                                      else 1.0)
                    status = _step(method, m, z, rho, &u[i], eta_i, walk.xsq[pos[e]], logc,
                                   delta, bound_u, &coef[e * mm], work, &n_resets)
                    if status:
                        break
                    if spread:
                        _prefetch_part(R0, stride, &cls_ahead[e * mm], pmm, pxi, pnnz, bias,
                                       D, 2)
                if status:
                    break
                # 2) proximal ridge shrink of the touched rows: w_j <- (w_j + step_j) / rho_j
                if ridge:
                    for t in range(nb * mm):
                        cnt[cls[t]] += 1
                    for t in range(nb * mm):
                        k = cls[t]
                        if cnt[k] > 0:
                            if track and sqn[k] < 0.0:
                                sqn[k] = _sqnorm(&R[k, 0], stride)
                            rowrho[k] = 1.0 + eta * alpha * beta[k] * cnt[k] / nb
                            gamma[k] /= rowrho[k]
                            cnt[k] = 0
                        if method != IMPLICIT:
                            coef[t] /= rowrho[k]
                # 3) sparse data updates r_k += coef / gamma_k * x
                for e in range(nb):
                    nnz = _walk_row(&walk, start + e, data_p, indices_p, dense, D, &xd, &xi)
                    if undo and not _undo_reserve(&written, mm * (nnz + 1)):
                        status = -1
                        break
                    for j in range(mm):
                        t = e * mm + j
                        k = cls[t]
                        a = coef[t] / gamma[k] if ridge else coef[t]
                        if fabs(a) < tiny:     # 0 or subnormal in R's type: zero under DAZ
                            continue
                        if floating is float:
                            if _beyond_float(a, walk.xsq[pos[e]]):
                                status = 1
                                break
                        w = &R[k, 0]
                        if track:
                            d = _dot(w, xd, xi, nnz, bias, D)
                            sqn[k] += 2.0 * a * d + a * a * walk.xsq[pos[e]]
                        if undo:
                            _undo_entries(&written, k * stride, w, xi, nnz, bias, D)
                        _axpy(w, a, xd, xi, nnz, bias, D)
                    if status:
                        break
                    if intent and start + e + ahead < N:
                        pnnz = _walk_row(&walk, start + e + ahead, data_p, indices_p, dense,
                                         D, &pxd, &pxi)
                        pmm = _rows_asked(sliced, &cls_ahead[e * mm], shared, m)
                        _prefetch_part(R0, stride, &cls_ahead[e * mm], pmm, pxi, pnnz, bias,
                                       D, 3)
                if status:
                    break
                # 4) U-max row projection, and folding of tiny scales back into R
                if ridge:
                    for t in range(nb * mm):
                        k = cls[t]
                        if track:
                            nrm = gamma[k] * sqrt(sqn[k] if sqn[k] > 0.0 else 0.0)
                            if nrm > bound_w:
                                gamma[k] *= bound_w / nrm
                        if gamma[k] < 1e-6:
                            scale = gamma[k]
                            w = &R[k, 0]
                            if undo:
                                if not _undo_reserve(&written, stride):
                                    status = -1
                                    break
                                _undo_entries(&written, k * stride, w, <index_t*>NULL, stride,
                                              False, 0)
                            for j in range(R.shape[1]):
                                w[j] = <floating>(w[j] * scale)
                            sqn[k] *= scale * scale
                            gamma[k] = 1.0
                start += nb
            if status and undo:
                _undo_restore(&written, R0)
    finally:
        sk_restore_denormals(fp_state)
        free(ringbuf); free(pos); free(coef); free(z); free(rho); free(work); free(cnt)
        free(rowrho); free(table); free(shared); _walk_free(&walk)
        free(written.where); free(written.old)
    if status == -1:
        raise MemoryError()
    return status, n_resets


cdef inline void _prefetch_ahead(floating* R0, Py_ssize_t stride, Py_ssize_t n_weights,
                                 const Py_ssize_t* slots, const Py_ssize_t* cls, int mm,
                                 const index_t* xi, const Py_ssize_t* base, Py_ssize_t nnz,
                                 bint bias, Py_ssize_t D, int part) noexcept nogil:
    """Part ``part`` of a later step's write-intent prefetches: by its row's hashed
    ``base`` (``n_weights`` > 0) or its features ``xi`` (NULL for a dense row)."""
    if n_weights > 0:
        _prefetch_hashed(R0, n_weights, slots, cls, mm, base, nnz, bias, part)
    else:
        _prefetch_part(R0, stride, cls, mm, xi, nnz, bias, D, part)


cdef int _hogwild_part(int method, const floating* data, const index_t* indices,
                       const index_t* indptr, bint dense, Py_ssize_t D, bint bias,
                       const Py_ssize_t* y, const double* sample_weight, const double* xsq,
                       floating* R0, Py_ssize_t K, Py_ssize_t stride, double* u,
                       const Py_ssize_t* order, Py_ssize_t N, int m, double eta,
                       double delta, double bound_u, uint64_t seed, bint intent,
                       Py_ssize_t n_weights, const Py_ssize_t* slots,
                       int* failed, Py_ssize_t* n_resets) noexcept nogil:
    """The steps of ``order[0:N]`` (one thread's part) with batch size 1 and no ridge: 0, 1
    after a non-finite value (the other threads stop at their next step), -1 without
    memory. As in :func:`softmax_epoch`, the part's rows are copied ahead into a walk of
    its own; the classes of a step are drawn, in step order, LOOKAHEAD steps before it
    runs, and its weight entries asked for then, or, with ``intent`` (weights larger than
    the L2 cache), in PARTS write-intent parts spread over the step LOOKAHEAD steps before
    it. With ``n_weights`` > 0 the weights are hashed (``R0``: the table, then one
    intercept per class slot; ``slots``: each class's slot); a row is hashed when its
    classes are drawn."""
    cdef int mm = m + 1, j, status = 0, ring = LOOKAHEAD + 1
    cdef uint64_t state = seed
    cdef Py_ssize_t t, q, i, nnz, resets = 0, drawn = 0, slot, off, width = 0
    cdef Py_ssize_t table_size = _draw_table_size(m)
    cdef double logc = log((K - 1.0) / m), a, sign
    cdef double tiny = FLT_MIN if floating is float else DBL_MIN
    cdef bint spread, hashed = n_weights > 0
    cdef const floating* xd
    cdef const index_t* xi
    cdef const floating* pxd
    cdef const index_t* pxi = NULL
    cdef Py_ssize_t pnnz = 0
    cdef const Py_ssize_t* pbase = NULL
    cdef Py_ssize_t* cls
    cdef Py_ssize_t* cls_ahead
    cdef floating* hxs = NULL          # hashed rows of the steps in flight, a ring of them
    cdef Py_ssize_t* hbase = NULL
    cdef Py_ssize_t* hnnz = NULL
    cdef Walk walk
    cdef int walk_failed = _walk_init(&walk, max(<Py_ssize_t>WALK_BLOCK, LOOKAHEAD + 2))
    cdef Py_ssize_t* ringbuf = <Py_ssize_t*>malloc(ring * mm * sizeof(Py_ssize_t))
    cdef Py_ssize_t* table = <Py_ssize_t*>malloc((table_size + 1) * sizeof(Py_ssize_t))
    cdef double* z = <double*>malloc(mm * sizeof(double))
    cdef double* rho = <double*>malloc(mm * sizeof(double))
    cdef double* coef = <double*>malloc(mm * sizeof(double))
    cdef double* work = <double*>malloc(5 * mm * sizeof(double))
    if hashed:          # room for the longest row of the part
        width = D if dense else 0
        for t in range(N if not dense else 0):
            nnz = indptr[order[t] + 1] - indptr[order[t]]
            width = nnz if nnz > width else width
        width = width if width > 0 else 1
        hxs = <floating*>malloc(ring * width * sizeof(floating))
        hbase = <Py_ssize_t*>malloc(ring * width * sizeof(Py_ssize_t))
        hnnz = <Py_ssize_t*>malloc(ring * sizeof(Py_ssize_t))
    if (walk_failed or ringbuf == NULL or table == NULL or z == NULL or rho == NULL
            or coef == NULL or work == NULL
            or hashed and (hxs == NULL or hbase == NULL or hnnz == NULL)):
        _walk_free(&walk)
        free(ringbuf); free(table); free(z); free(rho); free(coef); free(work)
        free(hxs); free(hbase); free(hnnz)
        return -1
    for j in range(mm):
        rho[j] = 1.0
    for t in range(N):
        if sk_flag_get(failed):
            break
        if _walk_copy(&walk, t + LOOKAHEAD + 2, order, N, data, indices, indptr, dense, y,
                      sample_weight, xsq):
            status = -1
            break
        while drawn < N and drawn <= t + LOOKAHEAD:     # draw ahead, ask for the rows
            q = drawn % ring
            cls = &ringbuf[q * mm]
            cls[0] = walk.label[drawn & (2 * walk.block - 1)]
            _sample_classes(&state, K, cls[0], m, True, &cls[1], table, table_size)
            nnz = _walk_row(&walk, drawn, data, indices, dense, D, &xd, &xi)
            if hashed:
                hnnz[q] = nnz
                _hash_row(xd, xi, nnz, n_weights, &hxs[q * width], &hbase[q * width])
                if not intent:
                    _prefetch_hashed(R0, n_weights, slots, cls, mm, &hbase[q * width], nnz,
                                     bias, -1)
            elif not intent:
                _prefetch_rows(R0, stride, cls, mm, xi, nnz, bias, D)
            SK_PREFETCH(&u[walk.example[drawn & (2 * walk.block - 1)]])
            drawn += 1
        cls = &ringbuf[(t % ring) * mm]
        spread = intent and t + LOOKAHEAD < N
        if spread:          # the step whose weights are asked for, in PARTS parts
            q = (t + LOOKAHEAD) % ring
            cls_ahead = &ringbuf[q * mm]
            if hashed:
                pnnz = hnnz[q]
                pbase = &hbase[q * width]
            else:
                pnnz = _walk_row(&walk, t + LOOKAHEAD, data, indices, dense, D, &pxd, &pxi)
            _prefetch_ahead(R0, stride, n_weights, slots, cls_ahead, mm, pxi, pbase, pnnz,
                            bias, D, 0)
        q = t & (2 * walk.block - 1)
        i = walk.example[q]
        if hashed:
            xd = &hxs[(t % ring) * width]
            nnz = hnnz[t % ring]
            for j in range(mm):
                slot = slots[cls[j]]
                z[j] = _class_sign(slot) * _hdot(R0, n_weights, slot % n_weights, xd,
                                                 &hbase[(t % ring) * width], nnz)
                if bias:
                    z[j] += R0[n_weights + slot]
        else:
            nnz = _walk_row(&walk, t, data, indices, dense, D, &xd, &xi)
            for j in range(mm):
                z[j] = _dot(&R0[cls[j] * stride], xd, xi, nnz, bias, D)
        if spread:
            _prefetch_ahead(R0, stride, n_weights, slots, cls_ahead, mm, pxi, pbase, pnnz,
                            bias, D, 1)
        status = _step(method, m, z, rho, &u[i], eta * walk.weight[q], walk.xsq[q], logc,
                       delta, bound_u, coef, work, &resets)
        if status:
            sk_flag_set(failed)
            break
        if spread:
            _prefetch_ahead(R0, stride, n_weights, slots, cls_ahead, mm, pxi, pbase, pnnz,
                            bias, D, 2)
        for j in range(mm):
            a = coef[j]
            if fabs(a) < tiny:
                continue
            if floating is float:
                if _beyond_float(a, walk.xsq[q]):
                    status = 1
                    break
            if hashed:
                slot = slots[cls[j]]
                _haxpy(R0, n_weights, slot % n_weights, a * _class_sign(slot), xd,
                       &hbase[(t % ring) * width], nnz)
                if bias:
                    R0[n_weights + slot] += <floating>a
            else:
                _axpy(&R0[cls[j] * stride], a, xd, xi, nnz, bias, D)
        if status:
            sk_flag_set(failed)
            break
        if spread:
            _prefetch_ahead(R0, stride, n_weights, slots, cls_ahead, mm, pxi, pbase, pnnz,
                            bias, D, 3)
    n_resets[0] = resets
    _walk_free(&walk)
    free(ringbuf); free(table); free(z); free(rho); free(coef); free(work)
    free(hxs); free(hbase); free(hnnz)
    return status


def softmax_epoch_parallel(int method, const floating[::1] data, const index_t[::1] indices,
                           const index_t[::1] indptr, bint dense, Py_ssize_t n_features,
                           bint bias, const Py_ssize_t[::1] y,
                           const double[::1] sample_weight, const double[::1] xsq,
                           floating[:, ::1] R, double[::1] u, const Py_ssize_t[::1] order,
                           int n_sampled, double eta, double delta, double bound_u,
                           uint64_t seed, int n_threads, Py_ssize_t n_weights=0,
                           const Py_ssize_t[::1] slots=None):
    """One pass over ``order`` on ``n_threads`` threads with lock-free (Hogwild) updates.

    The order is cut into ``n_threads`` contiguous parts, one per thread, each with its
    own class sampler (splitmix64 seeded from ``seed`` and the part); every step is that
    of :func:`softmax_epoch` with ``batch_size=1``, ``alpha=0``, classes drawn among the
    wrong ones and no undo log. The weights are written without locks: an update can be
    lost when two threads write one entry of R at once, so results vary from run to run
    (``n_threads=1`` is deterministic and equals :func:`softmax_epoch` drawing from the
    part's seed). u_i is written by the thread that owns example i only.

    With ``n_weights`` > 0 the weights are hashed: R has one row, a table of
    ``n_weights`` entries followed by one intercept per class slot, and class k's weight
    of feature j is ``a_j b_c T[(H(j) + c) mod n_weights]`` with c = ``slots[k]``
    (:func:`hashed_scores` scores with the same map); K is ``len(slots)``.

    Returns
    -------
    status : int
        0 on success, 1 if a non-finite value appeared (every thread stops there).
    n_resets : int
        Number of U-max u-resets.
    """
    cdef Py_ssize_t K = R.shape[0], N = order.shape[0], D = n_features
    cdef int m = n_sampled, part, T = max(1, n_threads)
    cdef bint hashed = n_weights > 0
    if hashed:
        K = _check_slots(slots, R.shape[0], R.shape[1], n_weights, bias)
    if m < 1 or m > K - 1 or not hashed and R.shape[1] < D + bias:
        raise ValueError(f"softmax_epoch_parallel: need 1 <= n_sampled <= K - 1 and R of "
                         f"width >= n_features + bias (got {m}, K={K}, R width "
                         f"{R.shape[1]}, n_features {D}, bias {bias})")
    cdef Py_ssize_t n_rows = data.shape[0] // D if dense and D else indptr.shape[0] - 1
    if dense and D == 0:
        n_rows = y.shape[0]
    if (y.shape[0] != n_rows or sample_weight.shape[0] != n_rows or xsq.shape[0] != n_rows
            or u.shape[0] != n_rows):
        raise ValueError(f"softmax_epoch_parallel: y, sample_weight, xsq and u need one "
                         f"entry per row of X ({n_rows})")
    statuses = np.zeros(T, dtype=np.intc)
    resets = np.zeros(T, dtype=np.intp)
    seeds = np.empty(T, dtype=np.uint64)
    cdef uint64_t mix = seed
    for part in range(T):
        seeds[part] = splitmix64_next(&mix)
    cdef int[::1] st = statuses
    cdef Py_ssize_t[::1] rs = resets
    cdef uint64_t[::1] sd = seeds
    cdef int failed = 0
    cdef const floating* data_p = &data[0] if data.shape[0] else NULL
    cdef const index_t* indices_p = &indices[0] if indices.shape[0] else NULL
    cdef const index_t* indptr_p = &indptr[0] if indptr.shape[0] else NULL
    cdef const Py_ssize_t* slots_p = &slots[0] if hashed else NULL
    cdef unsigned int fp_state
    cdef bint intent = spreads_prefetches(R.shape[0] * R.shape[1] * sizeof(floating))
    if N == 0:
        return 0, 0
    with nogil:
        for part in prange(T, num_threads=T, schedule="static", chunksize=1):
            fp_state = sk_flush_denormals()     # per thread: MXCSR is thread-local
            st[part] = _hogwild_part(method, data_p, indices_p, indptr_p, dense, D, bias,
                                     &y[0], &sample_weight[0], &xsq[0], &R[0, 0], K,
                                     R.shape[1], &u[0], &order[part * N // T],
                                     (part + 1) * N // T - part * N // T, m, eta, delta,
                                     bound_u, sd[part], intent, n_weights, slots_p, &failed,
                                     &rs[part])
            sk_restore_denormals(fp_state)
    if (statuses == -1).any():
        raise MemoryError()
    return int(statuses.max()), int(resets.sum())


def scale_flush(floating[:, :] R, double factor):
    """R *= factor in place, in R's precision, in one pass without the GIL: the results
    below R's smallest normal number set to 0 (subnormal weights would slow every later
    product, as the drivers' FTZ/DAZ keeps them out of the passes); NaN kept."""
    cdef Py_ssize_t i, j, n = R.shape[1]
    cdef floating f = <floating>factor
    cdef floating tiny = FLT_MIN if floating is float else DBL_MIN
    cdef floating v
    cdef floating *row
    cdef bint contiguous = R.strides[1] == sizeof(floating)
    with nogil:
        for i in range(R.shape[0]):
            if contiguous and n > 0:      # the weights' rows: a loop the compiler vectorizes
                row = &R[i, 0]
                for j in range(n):
                    v = row[j] * f
                    row[j] = 0 if fabs(v) < tiny else v
            else:
                for j in range(n):
                    v = R[i, j] * f
                    R[i, j] = 0 if fabs(v) < tiny else v


def _check_slots(slots, Py_ssize_t rows, Py_ssize_t width, Py_ssize_t n_weights, bint bias):
    """The number of classes of hashed weights (one row: the table, then one intercept per
    slot), or a ValueError when the slots do not address that row."""
    if slots is None or rows != 1:
        raise ValueError("hashed weights need slots and R of one row")
    slots = np.asarray(slots)
    if slots.size < 2 or slots.min() < 0 or width < n_weights + (slots.max() + 1 if bias else 0):
        raise ValueError(f"hashed weights: need >= 2 class slots in [0, {width - n_weights}) "
                         f"(R holds {width} = n_weights {n_weights} + intercepts)")
    return slots.size


def hashed_scores(const double[::1] data, const index_t[::1] indices,
                  const index_t[::1] indptr, bint dense, Py_ssize_t n_features, bint bias,
                  const floating[::1] weights, Py_ssize_t n_weights,
                  const Py_ssize_t[::1] slots, int n_threads=1):
    """Scores of every class for each row of X under hashed weights, float64.

    ``weights`` is the one row of :func:`softmax_epoch_parallel`'s hashed R: a table of
    ``n_weights`` entries, then one intercept per class slot; class k's slot is
    ``slots[k]``. X is CSR (``data``, ``indices``, ``indptr``) or, when ``dense``, a
    C-ordered (n, ``n_features``) array flattened into ``data``. Each row reads its
    nnz features' spans of consecutive classes; rows are shared among ``n_threads``
    threads.

    Returns
    -------
    scores : ndarray of shape (n_rows, len(slots))
    """
    cdef Py_ssize_t K = _check_slots(slots, 1, weights.shape[0], n_weights, bias)
    cdef Py_ssize_t D = n_features, n = n_weights
    if n < 1:
        raise ValueError(f"hashed_scores: need n_weights >= 1, got {n}")
    cdef Py_ssize_t rows = data.shape[0] // D if dense and D else indptr.shape[0] - 1
    if dense and D == 0:
        raise ValueError("hashed_scores: a dense X needs n_features >= 1")
    out = np.empty((rows, K))
    cdef double[:, ::1] S = out
    offsets = np.empty(K, dtype=np.intp)
    signs = np.empty(K)
    cdef Py_ssize_t[::1] off = offsets
    cdef double[::1] sgn = signs
    cdef Py_ssize_t i, k, p, lo, hi, idx, base
    cdef uint64_t h
    cdef double xv
    cdef const floating* T = &weights[0]
    if rows == 0:
        return out
    with nogil:
        for k in range(K):          # each class's offset and sign, once per call
            off[k] = slots[k] % n
            sgn[k] = _class_sign(slots[k])
        for i in prange(rows, num_threads=max(1, n_threads), schedule="static"):
            for k in range(K):
                S[i, k] = T[n + slots[k]] if bias else 0.0
            lo = i * D if dense else indptr[i]
            hi = lo + D if dense else indptr[i + 1]
            for p in range(lo, hi):
                h = _fmix(<uint64_t>(p - lo if dense else indices[p]) ^ FEATURE_SALT)
                base = sk_fastrange(h, n)
                xv = -data[p] if h & 1 else data[p]
                for k in range(K):
                    idx = base + off[k]
                    if idx >= n:
                        idx = idx - n
                    S[i, k] += xv * sgn[k] * T[idx]
    return out


def sampled_gradient(int method, const double[:, ::1] X, const Py_ssize_t[::1] y,
                     const double[:, ::1] W, const double[::1] u, const double[::1] beta,
                     int n_sampled, double alpha, double delta, Py_ssize_t n_draws,
                     uint64_t seed, Py_ssize_t shared_batch=0):
    """Mean of ``n_draws`` one-example stochastic gradients (dense X, for Monte-Carlo tests).

    Each draw takes i uniform and m classes exactly as ``softmax_epoch`` does (with
    ``shared_batch`` > 0, consecutive groups of that many draws share one class set, as a
    batch does with ``shared_classes``), and uses the same coefficient code with unit
    learning rate. The ridge part is the unbiased ``alpha beta_j w_j`` on touched rows.
    U-max gradients are taken after the u-reset.

    Returns
    -------
    grad_W : ndarray of shape (K, D)
    grad_u : ndarray of shape (N,)
    """
    cdef Py_ssize_t N = X.shape[0], D = X.shape[1], K = W.shape[0]
    cdef int m = n_sampled, mm = n_sampled + 1
    cdef Py_ssize_t r, i, j, k, p
    cdef uint64_t state = seed
    cdef double logc = log((K - 1.0) / m), du, uu
    cdef bint reset
    gW = np.zeros((K, D))
    gu = np.zeros(N)
    cdef double[:, ::1] G = gW
    cdef double[::1] Gu = gu
    cls = np.zeros(mm, dtype=np.intp)
    cdef Py_ssize_t table_size = _draw_table_size(m)
    cdef Py_ssize_t[::1] table = np.empty(table_size + 1, dtype=np.intp)
    cdef Py_ssize_t[::1] shared = np.empty(mm, dtype=np.intp)
    zz = np.zeros(mm)
    cc = np.zeros(mm)
    cdef Py_ssize_t[::1] T = cls
    cdef double[::1] z = zz
    cdef double[::1] coef = cc
    if method == IMPLICIT:
        raise ValueError("implicit steps are proximal, not gradient steps")
    with nogil:
        for r in range(n_draws):
            i = random_below(&state, N)
            T[0] = y[i]
            _draw_classes(&state, K, y[i], m, True, &shared[0] if shared_batch > 0 else NULL,
                          shared_batch > 0 and r % shared_batch == 0, &T[1], &table[0],
                          table_size)
            for j in range(mm):
                z[j] = 0.0
                for p in range(D):
                    z[j] += X[i, p] * W[T[j], p]
            uu = u[i]
            if method == UMAX:
                uu = _umax_reset(m, &z[0], uu, delta, &reset)
            _explicit_coefficients(method, m, &z[0], uu, 1.0, logc, &coef[0], &du)
            Gu[i] -= du
            for j in range(mm):
                k = T[j]
                for p in range(D):
                    G[k, p] += alpha * beta[k] * W[k, p] - coef[j] * X[i, p]
    gW /= n_draws
    gu /= n_draws
    return gW, gu
