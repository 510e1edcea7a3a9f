"""Row kernels: Euclidean projections onto the sparsemax family of polytopes.

Sources: Madsen et al. 2016 (sparsemax, Algorithm 1, eqs. 5 and 8-10) and
Niculae & Martins 2020, appendix D (box, sifting, Pardalos-Kovoor with
the Prop. 6 Jacobian). The simplex projection filters candidates in one pass, then runs
Michelot's iteration (C. Michelot, J. Optim. Theory Appl. 1986) with Condat's algorithm
(L. Condat, "Fast projection onto the simplex and the l1 ball", Math. Program. 2016) as the
fallback: O(K) expected time.
Signatures and contracts are documented in ``_projections.pxd``.

Why one module of ~900 lines: the row kernels are cimported through ``_projections.pxd`` by
the loss and SDCA modules, and every polytope shares the helpers here (row maximum, weights,
clipping sums, the overflow fallback), which gcc inlines into each kernel's row loop; split
over modules they would be calls through a pointer table in the innermost loops.
"""
from libc.float cimport DBL_EPSILON, DBL_MAX, FLT_MIN
from libc.math cimport INFINITY, fabs, isfinite
from libc.stdlib cimport free, malloc

import numpy as np


# --------------------------------------------------------------------------- helpers

cdef enum:
    # Michelot rounds before Condat's algorithm finishes a candidate list (_michelot_tau)
    _MICHELOT_ITERS = 12


# Row maximum with four independent 16-byte vector accumulators (GCC/Clang vector
# extensions), so the compare-select chain does not serialize the pass; inputs are finite.
cdef extern from *:
    """
    #include <string.h>
    #if defined(__GNUC__) || defined(__clang__)
    #define SK_DEFINE_MAX(NAME, T, IT, L)                                               \\
    static T NAME(const T* z, Py_ssize_t k) {                                         \\
        typedef T vt __attribute__((vector_size(16)));                                \\
        typedef IT vi __attribute__((vector_size(16)));                               \\
        vt a[4], y;                                                                   \\
        vi msk;                                                                       \\
        Py_ssize_t i = 0, j;                                                          \\
        T m = z[0];                                                                   \\
        if (k >= 4 * L) {                                                             \\
            for (j = 0; j < 4; j++) memcpy(&a[j], z + j * L, sizeof(vt));             \\
            for (i = 4 * L; i + 4 * L <= k; i += 4 * L) {                            \\
                for (j = 0; j < 4; j++) {                                             \\
                    memcpy(&y, z + i + j * L, sizeof(vt));                            \\
                    msk = y > a[j];                                                   \\
                    a[j] = (vt)(((vi)y & msk) | ((vi)a[j] & ~msk));                   \\
                }                                                                     \\
            }                                                                         \\
            for (j = 0; j < 4 * L; j++) m = a[j / L][j % L] > m ? a[j / L][j % L] : m; \\
        }                                                                             \\
        for (; i < k; i++) m = z[i] > m ? z[i] : m;                                   \\
        return m;                                                                     \\
    }
    #else
    #define SK_DEFINE_MAX(NAME, T, IT, L)                                               \\
    static T NAME(const T* z, Py_ssize_t k) {                                         \\
        Py_ssize_t i;                                                                 \\
        T m = z[0];                                                                   \\
        for (i = 1; i < k; i++) m = z[i] > m ? z[i] : m;                              \\
        return m;                                                                     \\
    }
    #endif
    SK_DEFINE_MAX(sk_row_max_f64, double, long long, 2)
    SK_DEFINE_MAX(sk_row_max_f32, float, int, 4)
    """
    double sk_row_max_f64(const double* z, Py_ssize_t k) noexcept nogil
    float sk_row_max_f32(const float* z, Py_ssize_t k) noexcept nogil


cdef inline floating _row_max(const floating* z, Py_ssize_t k) noexcept nogil:
    if floating is double:
        return sk_row_max_f64(z, k)
    else:
        return sk_row_max_f32(z, k)


cdef inline double _clip01(double x) noexcept nogil:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    return x


cdef inline double _weight(const floating* w, Py_ssize_t i) noexcept nogil:
    if w == NULL:
        return 1.0
    return w[i]


cdef void _insertion_sort(floating* key, Py_ssize_t* idx, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j, ti = 0
    cdef floating t
    for i in range(1, n):
        t = key[i]
        if idx != NULL:
            ti = idx[i]
        j = i
        while j > 0 and key[j - 1] > t:
            key[j] = key[j - 1]
            if idx != NULL:
                idx[j] = idx[j - 1]
            j -= 1
        key[j] = t
        if idx != NULL:
            idx[j] = ti


cdef inline void _swap(floating* key, Py_ssize_t* idx, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    cdef floating t = key[a]
    cdef Py_ssize_t ti
    key[a] = key[b]
    key[b] = t
    if idx != NULL:
        ti = idx[a]
        idx[a] = idx[b]
        idx[b] = ti


cdef void _sift_down(floating* key, Py_ssize_t* idx, Py_ssize_t root,
                     Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t child
    while 2 * root + 1 < n:
        child = 2 * root + 1
        if child + 1 < n and key[child] < key[child + 1]:
            child += 1
        if not key[root] < key[child]:
            return
        _swap(key, idx, root, child)
        root = child


cdef void _heapsort(floating* key, Py_ssize_t* idx, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(key, idx, i, n)
    for i in range(n - 1, 0, -1):
        _swap(key, idx, 0, i)
        _sift_down(key, idx, 0, i)


cdef void _sort(floating* key, Py_ssize_t* idx, Py_ssize_t n) noexcept nogil:
    """Ascending in-place sort of ``key``, moving ``idx`` (may be NULL) along: introsort,
    i.e. quicksort (median of three, Hoare partition, recursion only on the smaller side)
    that hands a range to heapsort after 2 log2(n) levels, so O(n log n) on any input
    (median-of-three quicksort alone is quadratic on crafted rows)."""
    cdef Py_ssize_t levels = 0, m = n
    while m > 1:
        m >>= 1
        levels += 2
    _introsort(key, idx, n, levels)


cdef void _introsort(floating* key, Py_ssize_t* idx, Py_ssize_t n,
                     Py_ssize_t levels) noexcept nogil:
    cdef Py_ssize_t lo, hi, mid, i, j
    cdef floating pivot
    while n > 16:
        if levels == 0:
            _heapsort(key, idx, n)
            return
        levels -= 1
        mid = n // 2
        if key[mid] < key[0]:
            _swap(key, idx, mid, 0)
        if key[n - 1] < key[0]:
            _swap(key, idx, n - 1, 0)
        if key[n - 1] < key[mid]:
            _swap(key, idx, n - 1, mid)
        pivot = key[mid]
        i = -1
        j = n
        while True:
            i += 1
            while key[i] < pivot:
                i += 1
            j -= 1
            while key[j] > pivot:
                j -= 1
            if i >= j:
                break
            _swap(key, idx, i, j)
        # [0, j] <= pivot <= [j + 1, n)
        lo = j + 1
        hi = n - lo
        if lo < hi:
            _introsort(key, idx, lo, levels)
            key += lo
            if idx != NULL:
                idx += lo
            n = hi
        else:
            _introsort(key + lo, NULL if idx == NULL else idx + lo, hi, levels)
            n = lo
    _insertion_sort(key, idx, n)


# --------------------------------------------------------------------------- simplex

cdef double _condat_tau(floating* y, Py_ssize_t k, double a) noexcept nogil:
    """Threshold tau of the projection of y[0:k] onto {p >= 0, sum p = a}, overwriting y.

    Condat (2016), Algorithm 1, with the lists v (y[s:e]) and v~ (y[0:s]) kept in place in
    the buffer (element i is read before position e <= i is written); tau is recomputed
    from a fresh sum over the final support."""
    cdef Py_ssize_t i, j, s = 0, e = 1, wpos, n
    cdef double yi, rho, tot
    rho = y[0] - a
    for i in range(1, k):
        yi = y[i]
        if yi > rho:
            rho += (yi - rho) / (e - s + 1)
            if rho <= yi - a:
                s = e
                rho = yi - a
            y[e] = <floating>yi
            e += 1
    j = s - 1
    while j >= 0:
        yi = y[j]
        if yi > rho:
            s -= 1
            y[s] = <floating>yi
            rho += (yi - rho) / (e - s)
        j -= 1
    while True:
        n = e - s
        wpos = s
        for j in range(s, e):
            yi = y[j]
            if yi > rho:
                y[wpos] = <floating>yi
                wpos += 1
            else:
                n -= 1
                if n > 0:
                    rho += (rho - yi) / n
        if wpos == e or wpos == s:
            break
        e = wpos
    tot = 0.0
    for j in range(s, e):
        tot += y[j]
    return (tot - a) / (e - s)


cdef double _michelot_tau(floating* c, Py_ssize_t n, double zmax, double a) noexcept nogil:
    """Threshold (relative to zmax) from a candidate list c[0:n] of raw values (a superset
    of the support), overwritten: shift by zmax and drop y <= -a, then Michelot's iteration
    tau <- (sum_{y > tau} y - a) / |{y > tau}|, which increases tau to the solution and
    shrinks the list, until the list no longer changes; after _MICHELOT_ITERS rounds
    (adversarial rows) Condat's algorithm finishes the list."""
    cdef Py_ssize_t i, m, it
    cdef double y, tot, tau = -a
    for it in range(_MICHELOT_ITERS):
        m = 0
        for i in range(n):
            y = c[i] - zmax if it == 0 else c[i]
            c[m] = <floating>y
            m += y > tau
        if m == n and it > 0:
            return tau
        n = m
        tot = 0.0
        for i in range(n):
            tot += c[i]
        tau = (tot - a) / n
    return _condat_tau(c, n, a)


cdef inline void _threshold_out(const floating* z, floating* p, Py_ssize_t k, double shift,
                                double tau) noexcept nogil:
    cdef Py_ssize_t i
    cdef floating mf = <floating>shift, tf = <floating>tau, d
    for i in range(k):
        d = (z[i] - mf) - tf
        p[i] = d if d > 0 else 0


cdef double _simplex_project(const floating* z, floating* p, Py_ssize_t k, double a,
                             double* shift) noexcept nogil:
    """Write the projection of z onto {p >= 0, sum p = a} into p; return its threshold
    relative to ``shift[0] = max(z)``, so that p = max((z - shift) - tau, 0).

    1. A vectorized pass finds max(z); a second keeps, branch-free, the candidates
       z_i >= max(z) - a (a superset of the support since tau >= max(z) - a; >= keeps the
       maximum when max(z) - a rounds to it); the buffer is p.
    2. _michelot_tau (Michelot's iteration, then Condat's algorithm) finds tau on the
       candidates shifted by max(z), exact for the support: the fix of
       shifting by the maximum keeps float32 rows offset by 1e6 exact.
    3. p = max((z - max) - tau, 0) in the input precision: exact zeros off the support."""
    cdef Py_ssize_t i, n = 0
    cdef floating zi, zmax
    cdef double thr, tau
    if k == 1:
        shift[0] = z[0]
        p[0] = <floating>a
        return -a
    zmax = _row_max(z, k)
    if k == 2 and fabs(zmax) <= DBL_MAX:
        # two entries (binary labels), in closed form: the other entry z_o is in the
        # support when z_o - max >= -a, and then tau = (z_o - max - a) / 2
        shift[0] = zmax
        thr = (z[0] - zmax) + (z[1] - zmax)     # z_o - max: one of the two terms is 0
        tau = (thr - a) / 2 if thr >= -a else -a
        _threshold_out(z, p, k, zmax, tau)
        return tau
    thr = zmax - a
    for i in range(k):
        zi = z[i]
        p[n] = zi
        n += zi >= thr
    shift[0] = zmax
    tau = _michelot_tau(p, n, zmax, a)
    _threshold_out(z, p, k, zmax, tau)
    return tau


cdef floating simplex_row(const floating* z, floating* p, Py_ssize_t k,
                          double radius) noexcept nogil:
    cdef double zmax, tau = _simplex_project(z, p, k, radius, &zmax)
    return <floating>(zmax + tau)


cdef floating sparsemax_row(const floating* z, floating* p, Py_ssize_t k) noexcept nogil:
    return simplex_row(z, p, k, 1.0)


cdef floating sparsemax_sort_row(const floating* z, floating* p, Py_ssize_t k) noexcept nogil:
    cdef double zmax = _row_max(z, k)
    cdef double csum = 0.0, ssum = 0.0, tau
    cdef Py_ssize_t i, j, support = 1
    for i in range(k):
        p[i] = <floating>(z[i] - zmax)
    _sort(p, <Py_ssize_t*>NULL, k)
    # Algorithm 1 on the descending order z_(j) = p[k - j], early break (prefix property)
    for j in range(1, k + 1):
        csum += p[k - j]
        if 1.0 + j * <double>p[k - j] > csum:
            support = j
            ssum = csum
        else:
            break
    tau = (ssum - 1.0) / support
    _threshold_out(z, p, k, zmax, tau)
    return <floating>(zmax + tau)


cdef double sparsemax_loss_row(const floating* z, const floating* q, floating* p,
                               Py_ssize_t k) noexcept nogil:
    cdef double zmax, loss = 0.0, y, d
    cdef Py_ssize_t i
    _simplex_project(z, p, k, 1.0, &zmax)
    for i in range(k):
        y = z[i] - zmax
        if y < -DBL_MAX:  # -inf: kept finite, so that a zero term below stays 0
            y = -DBL_MAX
        d = q[i] - p[i]
        loss += d * (q[i] + p[i]) - 2.0 * (d * y)
    return 0.5 * loss


# --------------------------------------------------------------------------- capped simplex

cdef double _max_ratio(const floating* z, Py_ssize_t k, const floating* w,
                       double* wmax, double* total) noexcept nogil:
    """max_i z_i / w_i: the largest breakpoint, the reference the capped problems shift to;
    the largest weight into ``wmax`` and their sum into ``total``."""
    cdef Py_ssize_t i
    cdef double r = -INFINITY, wi
    wmax[0] = 1.0 if w == NULL else 0.0
    total[0] = 0.0
    for i in range(k):
        wi = _weight(w, i)
        r = max(r, z[i] / wi)
        wmax[0] = max(wmax[0], wi)
        total[0] += wi
    return r


cdef void _sorted_breakpoints(const floating* z, Py_ssize_t k, const floating* w, double ref,
                              floating* work, Py_ssize_t* iwork) noexcept nogil:
    """The 2K breakpoints (z'_i - 1)/w_i (code 2i) and z'_i/w_i (code 2i + 1) of the
    shifted scores z' = z - w ref, sorted in ``work`` with their codes in ``iwork``."""
    cdef Py_ssize_t i
    cdef double wi, zi
    for i in range(k):
        wi = _weight(w, i)
        zi = z[i] - wi * ref
        work[2 * i] = <floating>((zi - 1.0) / wi)
        work[2 * i + 1] = <floating>(zi / wi)
        iwork[2 * i] = 2 * i
        iwork[2 * i + 1] = 2 * i + 1
    _sort(work, iwork, 2 * k)


cdef double _capped_tau(const floating* z, Py_ssize_t k, double budget, const floating* w,
                        double total, double ref, floating* work, Py_ssize_t* iwork,
                        double* swept) noexcept nogil:
    """tau' with sum_i w_i clip(z'_i - w_i tau', 0, 1) = budget (Prop. 5) for the shifted
    scores z'_i = z_i - w_i ref (tau = ref + tau'), by sorting the 2K breakpoints
    (z'_i - 1)/w_i, z'_i/w_i and sweeping the piecewise-linear sum; refined once with fresh
    sums over the final active sets. Any ref works; the coordinates whose shifted scores
    lie near w_i tau' lose the bits of w_i |tau'| in the shift, which
    :func:`_capped_project` bounds by its choice of ref (unshifted, z_i - 1 rounds to z_i
    past 2^53). Requires 0 <= budget <= sum(w); a budget within 1e-13 relative of sum(w)
    gives p = 1. ``swept`` receives tau' before the refinement: a breakpoint interval's
    point, which stays near the answer even where the refinement, on bits lost in the
    shift, does not."""
    cdef Py_ssize_t i, j, code, m = 2 * k
    cdef double wi, zi, upper, swz = 0.0, sww = 0.0, tnext, tau, lo, hi
    if budget >= total * (1.0 - 1e-13):
        lo = INFINITY
        for i in range(k):
            wi = _weight(w, i)
            lo = min(lo, (z[i] - wi * ref - 1.0) / wi)
        swept[0] = lo - 1.0     # any tau <= min breakpoint; the margin keeps p = 1 exact
        return swept[0]
    if budget <= 0.0:       # above every shifted breakpoint z'_i / w_i: p = 0
        hi = -INFINITY
        for i in range(k):
            wi = _weight(w, i)
            hi = max(hi, (z[i] - wi * ref) / wi)
        swept[0] = hi + 1.0
        return swept[0]
    # breakpoints are computed in double; the floating keys only order the sweep, which
    # runs down from the largest (all p = 0), so that scores far below the top never
    # enter the running sums unless the budget needs them
    _sorted_breakpoints(z, k, w, ref, work, iwork)
    upper = 0.0
    tau = 0.0
    for j in range(m - 1, -1, -1):
        code = iwork[j]
        i = code >> 1
        wi = _weight(w, i)
        zi = z[i] - wi * ref
        if code & 1:        # below z'_i / w_i, p_i leaves 0
            swz += wi * zi
            sww += wi * wi
            hi = zi / wi
        else:               # below (z'_i - 1) / w_i, p_i stays at 1
            upper += wi
            swz -= wi * zi
            sww -= wi * wi
            hi = (zi - 1.0) / wi
        if j > 0:
            code = iwork[j - 1]
            i = code >> 1
            tnext = (z[i] - _weight(w, i) * ref - (1.0 - (code & 1))) / _weight(w, i)
        else:
            tnext = -INFINITY
        # a group of equal breakpoints (both of a coordinate, at float32 keys) is applied
        # whole before the test
        if j == 0 or (tnext < hi and upper + swz - tnext * sww >= budget):
            tau = hi
            if sww > 0.0:
                tau = (upper + swz - budget) / sww
                tau = max(min(tau, hi), tnext)
            break
    swept[0] = tau
    _set_sums(z, k, w, ref, tau, &upper, &swz, &sww)
    if sww > 0.0:
        tau = (upper + swz - budget) / sww
    return tau


cdef inline void _clip_out(const floating* z, floating* p, Py_ssize_t k, double tau,
                           const floating* w, double ref) noexcept nogil:
    """p = clip(z' - w tau', 0, 1) with the shifted z' = z - w ref of :func:`_capped_tau`."""
    cdef Py_ssize_t i
    cdef double wi
    for i in range(k):
        wi = _weight(w, i)
        p[i] = <floating>_clip01((z[i] - wi * ref) - wi * tau)


cdef void _set_sums(const floating* z, Py_ssize_t k, const floating* w, double ref,
                    double tau, double* upper, double* swz, double* sww) noexcept nogil:
    """Fresh sums over the sets at tau' (z' = z - w ref): ``upper`` = sum of w_i with
    p_i = 1, ``swz`` and ``sww`` = sums of w_i z'_i and w_i^2 over the free ones, so that
    tau' = (upper + swz - budget) / sww solves the budget on those sets."""
    cdef Py_ssize_t i
    cdef double wi, zi, d
    upper[0] = swz[0] = sww[0] = 0.0
    for i in range(k):
        wi = _weight(w, i)
        zi = z[i] - wi * ref
        d = zi - wi * tau
        if d >= 1.0:
            upper[0] += wi
        elif d > 0.0:
            swz[0] += wi * zi
            sww[0] += wi * wi


cdef bint _capped_feasible(const floating* z, Py_ssize_t k, double budget,
                           const floating* w, double ref, double tau) noexcept nogil:
    """Whether p = clip(z' - w tau', 0, 1) meets w.p = budget up to the rounding of its
    free coordinates (z' = z - w ref)."""
    cdef Py_ssize_t i
    cdef double wi, d, total = 0.0, free_w = 0.0
    for i in range(k):
        wi = _weight(w, i)
        d = (z[i] - wi * ref) - wi * tau
        total += wi * _clip01(d)
        if d > 0.0 and d < 1.0:
            free_w += wi
    return fabs(total - budget) <= 64.0 * DBL_EPSILON * (budget + free_w)


cdef double _capped_search(const floating* z, Py_ssize_t k, double budget,
                           const floating* w, double ref, const floating* keys) noexcept nogil:
    """tau' by binary search over the 2K breakpoints ``keys`` (sorted by the last
    :func:`_capped_tau` at this ``ref``), each probe summed afresh, then solved on the
    bracketing interval's sets: O(K log K), for the rows whose sweep's running sums lost
    the answer (weights spread over ~1e16, scores ~1e16 where the sets change). Where a
    coordinate's two breakpoints collapse into one (z'_i - 1 rounds to z'_i), its answer
    is that breakpoint, and :func:`_capped_project` moves the frame there."""
    cdef Py_ssize_t i, lo = 0, hi = 2 * k - 1, mid
    cdef double wi, t, upper, swz, sww
    while hi - lo > 1:
        mid = (lo + hi) // 2
        t = 0.0
        for i in range(k):
            wi = _weight(w, i)
            t += wi * _clip01((z[i] - wi * ref) - wi * keys[mid])
        if t >= budget:
            lo = mid
        else:
            hi = mid
    # the sets are fixed inside (keys[lo], keys[hi]): read them at its midpoint
    _set_sums(z, k, w, ref, 0.5 * (<double>keys[lo] + <double>keys[hi]), &upper, &swz, &sww)
    if sww == 0.0:  # no free coordinate: the sum drops through budget at a breakpoint
        return <double>keys[hi] if upper >= budget else <double>keys[lo]   # (a collapsed one)
    return min(max((upper + swz - budget) / sww, <double>keys[lo]), <double>keys[hi])


cdef double _capped_project(const floating* z, floating* p, Py_ssize_t k, double budget,
                            const floating* w, floating* work,
                            Py_ssize_t* iwork) noexcept nogil:
    """The capped projection of z with its sum constraint at ``budget`` active; returns
    tau in the caller's frame (p = clip(z - w tau, 0, 1) up to the shift's rounding).

    First shifted by ref = max z_i / w_i (:func:`_max_ratio`), which keeps the top scores
    exact at any magnitude. When the answer lies far below that (huge scores capped at 1,
    tiny weights: max_i w_i |tau'| above 4096, or 16 for float32 keys, which tie there),
    the coordinates it depends on lost bits in the shift: the sweep is redone with ref
    moved to the answer found while that answer keeps shrinking (each redo gains ~16
    decimal orders). A result that misses the budget by more than rounding is searched
    again (:func:`_capped_search`), in frames moved the same way."""
    cdef double swept, wmax, total, ref = _max_ratio(z, k, w, &wmax, &total)
    cdef double shrinking = INFINITY
    cdef double tau = _capped_tau(z, k, budget, w, total, ref, work, iwork, &swept)
    cdef double limit = 16.0 if floating is float else 4096.0
    cdef int redo
    for redo in range(64):
        if not (fabs(swept) * wmax > limit and ref + swept != ref and fabs(swept) < shrinking):
            break
        shrinking = fabs(swept)
        ref += swept
        tau = _capped_tau(z, k, budget, w, total, ref, work, iwork, &swept)
    if (0.0 < budget < total * (1.0 - 1e-13)
            and not _capped_feasible(z, k, budget, w, ref, tau)):
        # scores over more than 2^53 of the frame (z' - 1 rounds) or weights ~1e16 apart:
        # search the breakpoints, moving the frame to the answer until it stays
        for redo in range(64):
            tau = _capped_search(z, k, budget, w, ref, work)
            if fabs(tau) * wmax <= limit or ref + tau == ref:
                break
            ref += tau
            _sorted_breakpoints(z, k, w, ref, work, iwork)
    _clip_out(z, p, k, tau, w, ref)
    return ref + tau


cdef inline double _clip_sum(const floating* z, floating* p, Py_ssize_t k,
                             const floating* w) noexcept nogil:
    cdef Py_ssize_t i
    cdef double s = 0.0, c
    for i in range(k):
        c = _clip01(z[i])
        p[i] = <floating>c
        s += _weight(w, i) * c
    return s


# --------------------------------------------------------------------------- dispatch

cdef floating project_row(int polytope, const floating* z, floating* p, Py_ssize_t k,
                          double budget, const floating* w, floating* work,
                          Py_ssize_t* iwork) noexcept nogil:
    cdef double tau = 0.0, s
    if polytope == POLYTOPE_SIMPLEX:
        return simplex_row(z, p, k, budget)
    if polytope == POLYTOPE_CAPPED_SIMPLEX:
        return <floating>_capped_project(z, p, k, budget, w, work, iwork)
    if polytope == POLYTOPE_BUDGET or polytope == POLYTOPE_AT_MOST_ONE:
        w = NULL
    s = _clip_sum(z, p, k, w)
    if polytope == POLYTOPE_KNAPSACK or polytope == POLYTOPE_BUDGET:
        if s > budget:  # active: tau > 0, kept so where the sum with ref rounds to 0
            tau = max(_capped_project(z, p, k, budget, w, work, iwork), FLT_MIN)
    elif polytope == POLYTOPE_AT_MOST_ONE:
        if s > 1.0:     # active: tau > 0 (jvp_row's test), also where it rounds to 0
            tau = max(simplex_row(z, p, k, 1.0), FLT_MIN)
    elif polytope == POLYTOPE_AT_LEAST_ONE:
        if s < 1.0:     # active: tau < 0
            tau = min(simplex_row(z, p, k, 1.0), -FLT_MIN)
    return <floating>tau


cdef inline bint _is_free(int polytope, floating pi) noexcept nogil:
    if polytope == POLYTOPE_SIMPLEX:
        return pi > 0
    return pi > 0 and pi < 1


cdef void jvp_row(int polytope, const floating* p, double tau, const floating* v,
                  floating* out, Py_ssize_t k, const floating* w) noexcept nogil:
    cdef Py_ssize_t i
    cdef double swv = 0.0, sww = 0.0, c, wi
    cdef bint active
    if polytope != POLYTOPE_KNAPSACK and polytope != POLYTOPE_CAPPED_SIMPLEX:
        w = NULL
    if polytope == POLYTOPE_SIMPLEX or polytope == POLYTOPE_CAPPED_SIMPLEX:
        active = True
    elif polytope == POLYTOPE_BOX:
        active = False
    else:
        active = tau != 0.0
    for i in range(k):
        if _is_free(polytope, p[i]):
            out[i] = v[i]
            wi = _weight(w, i)
            swv += wi * v[i]
            sww += wi * wi
        else:
            out[i] = 0
    if not active or sww == 0.0:
        return
    c = swv / sww
    for i in range(k):
        if _is_free(polytope, p[i]):
            out[i] = <floating>(v[i] - _weight(w, i) * c)


cdef double fenchel_young_row(int polytope, const floating* z, const floating* y,
                              floating* p, Py_ssize_t k, double budget, const floating* w,
                              floating* work, Py_ssize_t* iwork) noexcept nogil:
    cdef double shift = 0.0, loss = 0.0, t, d
    cdef Py_ssize_t i
    if polytope == POLYTOPE_SIMPLEX:
        _simplex_project(z, p, k, budget, &shift)
    else:
        project_row(polytope, z, p, k, budget, w, work, iwork)
    for i in range(k):
        t = z[i] - shift
        if t < -DBL_MAX:  # -inf: kept finite, so that a zero term below stays 0
            t = -DBL_MAX
        d = y[i] - p[i]
        loss += 0.5 * d * (y[i] + p[i]) - d * t     # halved per term: 2 d t overflows at 1e308
    return loss


# --------------------------------------------------------------------------- Python entry points

# Short rows: two rows at a time in the two lanes of a 16-byte double vector (GCC/Clang
# vector extensions; SSE2 on x86-64, NEON on arm64), Michelot's iteration over the whole row
# from tau = max - a with branch-free masks, until no lane's support changes. Elsewhere
# SK_HAVE_PAIR is 0 and the scalar row kernel is used.
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SK_HAVE_PAIR 1
    typedef double sk_v2d __attribute__((vector_size(16)));
    typedef long long sk_v2l __attribute__((vector_size(16)));
    #define SK_DEFINE_PAIR(NAME, T)                                                     \\
    static void NAME(const T* z, T* p, T* tau, Py_ssize_t k, double a) {              \\
        const T* z1 = z + k;                                                          \\
        sk_v2d mx = {z[0], z1[0]}, y, s, c, cold = {-1.0, -1.0}, t = {-a, -a};        \\
        const sk_v2d one = {1.0, 1.0}, av = {a, a};                                   \\
        sk_v2l m;                                                                     \\
        Py_ssize_t i, it;                                                             \\
        for (i = 1; i < k; i++) {                                                     \\
            y = (sk_v2d){z[i], z1[i]};                                                \\
            m = y > mx;                                                               \\
            mx = (sk_v2d)(((sk_v2l)y & m) | ((sk_v2l)mx & ~m));                       \\
        }                                                                             \\
        for (it = 0; it <= k; it++) {                                                 \\
            s = (sk_v2d){0.0, 0.0};                                                   \\
            c = s;                                                                    \\
            for (i = 0; i < k; i++) {                                                 \\
                y = (sk_v2d){z[i], z1[i]} - mx;                                       \\
                m = y > t;                                                            \\
                s += (sk_v2d)((sk_v2l)y & m);                                         \\
                c += (sk_v2d)((sk_v2l)one & m);                                       \\
            }                                                                         \\
            t = (s - av) / c;                                                         \\
            m = c != cold;                                                            \\
            cold = c;                                                                 \\
            if (!(m[0] | m[1])) break;                                                \\
        }                                                                             \\
        for (i = 0; i < k; i++) {                                                     \\
            y = ((sk_v2d){z[i], z1[i]} - mx) - t;                                     \\
            y = (sk_v2d)((sk_v2l)y & (y > 0.0));                                      \\
            p[i] = (T)y[0];                                                           \\
            p[k + i] = (T)y[1];                                                       \\
        }                                                                             \\
        tau[0] = (T)(mx[0] + t[0]);                                                   \\
        tau[1] = (T)(mx[1] + t[1]);                                                   \\
    }
    #else
    #define SK_HAVE_PAIR 0
    #define SK_DEFINE_PAIR(NAME, T)                                                     \\
    static void NAME(const T* z, T* p, T* tau, Py_ssize_t k, double a) {}
    #endif
    SK_DEFINE_PAIR(sk_simplex_pair_f64, double)
    SK_DEFINE_PAIR(sk_simplex_pair_f32, float)
    #if SK_HAVE_PAIR
    /* float32: four rows in the four lanes of a float vector, the same iteration. */
    typedef float sk_v4f __attribute__((vector_size(16)));
    typedef int sk_v4i __attribute__((vector_size(16)));
    #define SK_LANES4(z, i, k) ((sk_v4f){z[i], z[k + i], z[2 * k + i], z[3 * k + i]})
    static void sk_simplex_quad_f32(const float* z, float* p, float* tau, Py_ssize_t k,
                                    double a) {
        const float af = (float)a;
        sk_v4f mx = SK_LANES4(z, 0, k), y, s, c, cold = {-1.f, -1.f, -1.f, -1.f};
        sk_v4f t = {-af, -af, -af, -af};
        const sk_v4f one = {1.f, 1.f, 1.f, 1.f}, av = {af, af, af, af};
        sk_v4i m;
        Py_ssize_t i, it, r;
        for (i = 1; i < k; i++) {
            y = SK_LANES4(z, i, k);
            m = y > mx;
            mx = (sk_v4f)(((sk_v4i)y & m) | ((sk_v4i)mx & ~m));
        }
        for (it = 0; it <= k; it++) {
            s = (sk_v4f){0.f, 0.f, 0.f, 0.f};
            c = s;
            for (i = 0; i < k; i++) {
                y = SK_LANES4(z, i, k) - mx;
                m = y > t;
                s += (sk_v4f)((sk_v4i)y & m);
                c += (sk_v4f)((sk_v4i)one & m);
            }
            t = (s - av) / c;
            m = c != cold;
            cold = c;
            if (!(m[0] | m[1] | m[2] | m[3])) break;
        }
        for (i = 0; i < k; i++) {
            y = (SK_LANES4(z, i, k) - mx) - t;
            y = (sk_v4f)((sk_v4i)y & (y > 0.f));
            for (r = 0; r < 4; r++) p[r * k + i] = y[r];
        }
        for (r = 0; r < 4; r++) tau[r] = mx[r] + t[r];
    }
    #else
    static void sk_simplex_quad_f32(const float* z, float* p, float* tau, Py_ssize_t k,
                                    double a) {}
    #endif
    """
    int SK_HAVE_PAIR
    void sk_simplex_pair_f64(const double* z, double* p, double* tau, Py_ssize_t k,
                             double a) noexcept nogil
    void sk_simplex_pair_f32(const float* z, float* p, float* tau, Py_ssize_t k,
                             double a) noexcept nogil
    void sk_simplex_quad_f32(const float* z, float* p, float* tau, Py_ssize_t k,
                             double a) noexcept nogil

cdef inline void _redo_overflowed_rows(const floating* Z, floating* P, floating* tau,
                                       Py_ssize_t r, Py_ssize_t m, Py_ssize_t k,
                                       double radius) noexcept nogil:
    """Rows ``r .. r+m-1`` of a batched kernel, whose sums run in the rows' own type, redone
    one at a time (sums in float64) where the threshold overflowed (scores near the
    largest finite value)."""
    cdef Py_ssize_t q
    for q in range(r, r + m):
        if not isfinite(tau[q]):
            tau[q] = simplex_row(Z + q * k, P + q * k, k, radius)


cdef void simplex_rows(const floating* Z, floating* P, floating* tau, Py_ssize_t n,
                       Py_ssize_t k, double radius) noexcept nogil:
    cdef Py_ssize_t r = 0
    if SK_HAVE_PAIR and 2 <= k <= SIMPLEX_PAIR_MAX_K:
        if floating is float:
            while r + 4 <= n:
                sk_simplex_quad_f32(Z + r * k, P + r * k, tau + r, k, radius)
                _redo_overflowed_rows(Z, P, tau, r, 4, k, radius)
                r += 4
        while r + 2 <= n:
            if floating is double:
                sk_simplex_pair_f64(Z + r * k, P + r * k, tau + r, k, radius)
            else:
                sk_simplex_pair_f32(Z + r * k, P + r * k, tau + r, k, radius)
            _redo_overflowed_rows(Z, P, tau, r, 2, k, radius)
            r += 2
    while r < n:
        tau[r] = simplex_row(Z + r * k, P + r * k, k, radius)
        r += 1



def sparsemax_rows(const floating[:, ::1] Z, floating[:, ::1] P, floating[::1] tau,
                   bint sort=False):
    """Row-wise sparsemax of ``Z`` into ``P`` (thresholds into ``tau``), pivot or sort."""
    cdef Py_ssize_t r, n = Z.shape[0], k = Z.shape[1]
    with nogil:
        if not sort:
            if n > 0 and k > 0:
                simplex_rows(&Z[0, 0], &P[0, 0], &tau[0], n, k, 1.0)
        else:
            for r in range(n):
                tau[r] = sparsemax_sort_row(&Z[r, 0], &P[r, 0], k)


cdef int _alloc_work(int polytope, Py_ssize_t k, floating** work, Py_ssize_t** iwork) except -1:
    if polytope == POLYTOPE_CAPPED_SIMPLEX or polytope == POLYTOPE_KNAPSACK \
            or polytope == POLYTOPE_BUDGET:
        work[0] = <floating*>malloc(2 * k * sizeof(floating))
        iwork[0] = <Py_ssize_t*>malloc(2 * k * sizeof(Py_ssize_t))
        if work[0] == NULL or iwork[0] == NULL:
            free(work[0])
            free(iwork[0])
            raise MemoryError()
    return 0


def project_rows(int polytope, const floating[:, ::1] Z, floating[:, ::1] P,
                 floating[::1] tau, double budget, const floating[::1] w, bint weighted):
    """Row-wise projection of ``Z`` onto ``polytope`` into ``P``; thresholds into ``tau``."""
    cdef Py_ssize_t r, n = Z.shape[0], k = Z.shape[1]
    cdef floating* work = NULL
    cdef Py_ssize_t* iwork = NULL
    cdef const floating* wp = &w[0] if weighted else NULL
    if polytope == POLYTOPE_SIMPLEX:
        if n > 0 and k > 0:
            with nogil:
                simplex_rows(&Z[0, 0], &P[0, 0], &tau[0], n, k, budget)
        return
    _alloc_work(polytope, k, &work, &iwork)
    with nogil:
        for r in range(n):
            tau[r] = project_row(polytope, &Z[r, 0], &P[r, 0], k, budget, wp, work, iwork)
    free(work)
    free(iwork)


def jvp_rows(int polytope, const floating[:, ::1] P, const floating[::1] tau,
             const floating[:, ::1] V, floating[:, ::1] out, const floating[::1] w,
             bint weighted):
    """Row-wise Jacobian-vector products J(z_r) v_r from projections ``P`` and ``tau``."""
    cdef Py_ssize_t r, n = P.shape[0], k = P.shape[1]
    cdef const floating* wp = &w[0] if weighted else NULL
    with nogil:
        for r in range(n):
            jvp_row(polytope, &P[r, 0], tau[r], &V[r, 0], &out[r, 0], k, wp)


def fenchel_young_rows(int polytope, const floating[:, ::1] Z, const floating[:, ::1] Y,
                       floating[:, ::1] P, double[::1] loss, double budget,
                       const floating[::1] w, bint weighted):
    """Row-wise Fenchel-Young losses of (``Z``, ``Y``); projections written into ``P``."""
    cdef Py_ssize_t r, n = Z.shape[0], k = Z.shape[1]
    cdef floating* work = NULL
    cdef Py_ssize_t* iwork = NULL
    cdef const floating* wp = &w[0] if weighted else NULL
    _alloc_work(polytope, k, &work, &iwork)
    with nogil:
        for r in range(n):
            loss[r] = fenchel_young_row(polytope, &Z[r, 0], &Y[r, 0], &P[r, 0], k, budget,
                                        wp, work, iwork)
    free(work)
    free(iwork)


POLYTOPE_CODES = {
    "simplex": POLYTOPE_SIMPLEX,
    "budget": POLYTOPE_BUDGET,
    "knapsack": POLYTOPE_KNAPSACK,
    "capped_simplex": POLYTOPE_CAPPED_SIMPLEX,
    "box": POLYTOPE_BOX,
    "at_least_one": POLYTOPE_AT_LEAST_ONE,
    "at_most_one": POLYTOPE_AT_MOST_ONE,
}
