# cython: language_level=3
"""Hot loops of NQN (Keskar 2017, thesis chapter 3): box projections, binding sets,
active-set corrections, breakpoints, and compact L-BFGS products restricted to the free set.

Every kernel works on float64 vectors of length ``n``; the limited-memory pairs are stored
coordinate-major, ``S[i, j]`` being coordinate ``i`` of pair slot ``j`` (``n x m``, C order),
so that one pass over the rows of ``S`` and ``Y`` serves all ``m`` pairs at once.
Active-set masks are ``uint8`` arrays: ``1`` for a variable fixed at its bound (in 𝒜),
``0`` for a free variable.
"""
from libc.math cimport fabs, INFINITY
from scipy.linalg.cython_lapack cimport dgesv

ctypedef unsigned char uint8


def project_point(const double[::1] x, const double[::1] lo, const double[::1] hi,
                  double[::1] out):
    """``out = P(x)``, the componentwise median of ``lo``, ``x``, ``hi``."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double v
    with nogil:
        for i in range(n):
            v = x[i]
            if v < lo[i]:
                v = lo[i]
            elif v > hi[i]:
                v = hi[i]
            out[i] = v


def trial_point(const double[::1] x, const double[::1] d, double alpha,
                const double[::1] lo, const double[::1] hi, double[::1] out):
    """``out = P(x + alpha d)``: the projected trial point of Algorithm 4. A coordinate
    whose breakpoint γ_i (as in :func:`max_breakpoint`) is reached, alpha >= γ_i, lands
    on its bound exactly (x + γ_i d can round one ulp short of it, and the next step's
    breakpoint would then be ~1e-17)."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double v
    with nogil:
        for i in range(n):
            if d[i] > 0.0 and alpha >= (hi[i] - x[i]) / d[i]:
                v = hi[i]
            elif d[i] < 0.0 and alpha >= (lo[i] - x[i]) / d[i]:
                v = lo[i]
            else:
                v = x[i] + alpha * d[i]
                if v < lo[i]:
                    v = lo[i]
                elif v > hi[i]:
                    v = hi[i]
            out[i] = v


def project_direction(const double[::1] x, const double[::1] p, const double[::1] lo,
                      const double[::1] hi, double[::1] out):
    """``out = T(x, p)`` of (3.3); returns the number of nonzero entries."""
    cdef Py_ssize_t i, n = x.shape[0], nnz = 0
    cdef double v
    with nogil:
        for i in range(n):
            v = p[i]
            if x[i] <= lo[i] and v < 0.0:
                v = 0.0
            elif x[i] >= hi[i] and v > 0.0:
                v = 0.0
            out[i] = v
            if v != 0.0:
                nnz += 1
    return nnz


def projected_gradient_norm(const double[::1] x, const double[::1] g,
                            const double[::1] lo, const double[::1] hi):
    """``‖T(x, −g)‖_∞``, the first-order measure of (3.5)."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double v, best = 0.0
    with nogil:
        for i in range(n):
            v = -g[i]
            if x[i] <= lo[i] and v < 0.0:
                v = 0.0
            elif x[i] >= hi[i] and v > 0.0:
                v = 0.0
            if fabs(v) > best:
                best = fabs(v)
    return best


def projected_slope(const double[::1] x, const double[::1] g, const double[::1] d,
                    const double[::1] lo, const double[::1] hi):
    """``∇f(x)ᵀ T(x, d)``, the left side of the curvature condition (3.22)."""
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double v, acc = 0.0
    with nogil:
        for i in range(n):
            v = d[i]
            if x[i] <= lo[i] and v < 0.0:
                continue
            if x[i] >= hi[i] and v > 0.0:
                continue
            acc += g[i] * v
    return acc


def binding_mask(const double[::1] x, const double[::1] g, const double[::1] lo,
                 const double[::1] hi, uint8[::1] active):
    """Mark 𝓑(g) of (3.4) in ``active`` (``active |= 𝓑``); returns ``|active|``.

    ``𝓑(g) = {i : x_i = l_i, g_i ≥ 0} ∪ {i : x_i = u_i, g_i ≤ 0}``.
    """
    cdef Py_ssize_t i, n = x.shape[0], count = 0
    with nogil:
        for i in range(n):
            if (x[i] <= lo[i] and g[i] >= 0.0) or (x[i] >= hi[i] and g[i] <= 0.0):
                active[i] = 1
            if active[i]:
                count += 1
    return count


def correction_set(const double[::1] x, const double[::1] p, const double[::1] lo,
                   const double[::1] hi, uint8[::1] active, int[::1] added):
    """One pass of Algorithm 3: add 𝒞 = {i ∈ F̄ \\ 𝒜 : T(x, p)_i ≠ p_i} to ``active``.

    The new indices are written to ``added``; returns how many there are.
    """
    cdef Py_ssize_t i, n = x.shape[0]
    cdef int count = 0
    with nogil:
        for i in range(n):
            if active[i]:
                continue
            if (x[i] <= lo[i] and p[i] < 0.0) or (x[i] >= hi[i] and p[i] > 0.0):
                active[i] = 1
                added[count] = <int>i
                count += 1
    return count


def max_breakpoint(const double[::1] x, const double[::1] d, const double[::1] lo,
                   const double[::1] hi):
    """Largest breakpoint ``U_max = max_i γ_i`` of Algorithm 4 (with its sign fixed).

    ``γ_i = (u_i − x_i)/d_i`` if ``d_i > 0``, ``(l_i − x_i)/d_i`` if ``d_i < 0``, over the
    coordinates that move; a moving coordinate with no bound on its side has γ_i = ∞, so
    ``U_max`` is then ``inf`` (capping the step at the finite breakpoints stopped such a
    coordinate short: a bounded quadratic ended at f = 17 for 4.5, reported a success).
    Returns ``inf`` when no coordinate moves.
    """
    cdef Py_ssize_t i, n = x.shape[0]
    cdef double gam, best = -INFINITY
    with nogil:
        for i in range(n):
            if d[i] > 0.0 and x[i] < hi[i]:
                gam = (hi[i] - x[i]) / d[i]
            elif d[i] < 0.0 and x[i] > lo[i]:
                gam = (lo[i] - x[i]) / d[i]
            else:
                continue
            if gam > best:
                best = gam
    if best == -INFINITY:
        return INFINITY
    return best


def free_products(const double[:, ::1] S, const double[:, ::1] Y, const double[::1] g,
                  const uint8[::1] active, double[::1] sg, double[::1] yg):
    """``sg = S_Fᵀ g_F`` and ``yg = Y_Fᵀ g_F`` over the free variables (active == 0)."""
    cdef Py_ssize_t i, j, n = S.shape[0], m = S.shape[1]
    cdef double gi
    with nogil:
        for j in range(m):
            sg[j] = 0.0
            yg[j] = 0.0
        for i in range(n):
            if active[i]:
                continue
            gi = g[i]
            for j in range(m):
                sg[j] += S[i, j] * gi
                yg[j] += Y[i, j] * gi


def free_step(const double[:, ::1] S, const double[:, ::1] Y, const double[::1] g,
              const uint8[::1] active, const double[::1] zs, const double[::1] zy,
              double theta, double[::1] p):
    """Compact-form subspace step (3.2) on the free set.

    ``p_F = −g_F/θ − (Y_F z_y + θ S_F z_s)/θ²`` and ``p_𝒜 = 0``, where ``z`` solves the
    2m x 2m system built by the caller (Byrd, Lu, Nocedal & Zhu 1995, Woodbury form).
    """
    cdef Py_ssize_t i, j, n = S.shape[0], m = S.shape[1]
    cdef double acc, inv = 1.0 / theta, inv2 = 1.0 / (theta * theta)
    with nogil:
        for i in range(n):
            if active[i]:
                p[i] = 0.0
                continue
            acc = 0.0
            for j in range(m):
                acc += Y[i, j] * zy[j] + theta * S[i, j] * zs[j]
            p[i] = -g[i] * inv - acc * inv2


DEF CHUNK = 16


def pair_products(const double[:, ::1] S, const double[:, ::1] Y, const double[::1] s,
                  const double[::1] y, const uint8[::1] active, double[:, ::1] full,
                  double[:, ::1] free):
    """Inner products of a new pair with the stored ones.

    Rows of ``full`` (and of ``free``, restricted to ``active == 0``) receive
    ``Sᵀs, Sᵀy, Yᵀs, Yᵀy`` (each of length m) and the last column holds
    ``sᵀs, sᵀy, yᵀy`` in rows 0, 1, 2. Columns are processed in blocks of 16 with
    the accumulators on the stack, so the inner loop vectorizes (one pass over ``S`` and
    ``Y`` for m ≤ 16).
    """
    cdef Py_ssize_t i, j, j0, jn, r, n = S.shape[0], m = S.shape[1]
    cdef double si, yi, a, b
    cdef double acc[2][4][CHUNK]
    cdef double tail[2][3]
    cdef int side
    with nogil:
        for side in range(2):
            for r in range(3):
                tail[side][r] = 0.0
        for i in range(n):
            side = 0 if active[i] else 1
            tail[side][0] += s[i] * s[i]
            tail[side][1] += s[i] * y[i]
            tail[side][2] += y[i] * y[i]
        for r in range(3):
            free[r, m] = tail[1][r]
            full[r, m] = tail[0][r] + tail[1][r]
        free[3, m] = 0.0
        full[3, m] = 0.0
        for j0 in range(0, m, CHUNK):
            jn = min(CHUNK, m - j0)
            for side in range(2):
                for r in range(4):
                    for j in range(CHUNK):
                        acc[side][r][j] = 0.0
            for i in range(n):
                side = 0 if active[i] else 1
                si = s[i]
                yi = y[i]
                for j in range(jn):
                    a = S[i, j0 + j]
                    b = Y[i, j0 + j]
                    acc[side][0][j] += a * si
                    acc[side][1][j] += a * yi
                    acc[side][2][j] += b * si
                    acc[side][3][j] += b * yi
            for r in range(4):
                for j in range(jn):
                    free[r, j0 + j] = acc[1][r][j]
                    full[r, j0 + j] = acc[0][r][j] + acc[1][r][j]


def gram_update(const double[:, ::1] S, const double[:, ::1] Y, const int[::1] idx,
                double sign, double[:, ::1] SS, double[:, ::1] SY, double[:, ::1] YY):
    """``SS += sign Σ_{i∈idx} S_i S_iᵀ`` (same for ``SY = Σ S_i Y_iᵀ`` and ``YY``).

    Keeps the free-set Gram blocks ``S_FᵀS_F, S_FᵀY_F, Y_FᵀY_F`` current when variables
    enter (sign +1) or leave (sign −1) the free set, at cost O(m² |idx|).
    """
    cdef Py_ssize_t t, i, j, k, m = S.shape[1], cnt = idx.shape[0]
    cdef double a, b
    with nogil:
        for t in range(cnt):
            i = idx[t]
            for j in range(m):
                a = sign * S[i, j]
                b = sign * Y[i, j]
                for k in range(m):
                    SS[j, k] += a * S[i, k]
                    SY[j, k] += a * Y[i, k]
                    YY[j, k] += b * Y[i, k]


def compact_coefficients(const double[:, ::1] SS, const double[:, ::1] SY,
                         const double[:, ::1] SSf, const double[:, ::1] SYf,
                         const double[:, ::1] YYf, const int[::1] order, double theta,
                         const double[::1] sg, const double[::1] yg, double[::1] zs,
                         double[::1] zy, double[::1, :] A, double[::1] rhs, int[::1] ipiv):
    """Solve ``(M⁻¹ − N/θ) z = W_Fᵀ g_F`` for the compact free-set step (3.2).

    With pairs in time order ``order`` (k of them), ``M⁻¹ = [[−D, Lᵀ], [L, θSᵀS]]`` and
    ``N = W_FᵀW_F``, ``W = [Y, θS]``, the 2k x 2k matrix is

        [[−D − Y_FᵀY_F/θ,  (L − S_FᵀY_F)ᵀ],
         [L − S_FᵀY_F,     θ(SᵀS − S_FᵀS_F)]]

    and the right side ``[Y_Fᵀg_F; θ S_Fᵀg_F]``. Solved by LAPACK ``dgesv`` (``A``
    Fortran-ordered scratch of at least 2k x 2k). ``zy``/``zs`` receive the two halves of
    z at the slots' positions (zero elsewhere). Returns LAPACK's ``info`` (0: success),
    or -1 when the solution is not finite.
    """
    cdef int k = order.shape[0], k2 = 2 * order.shape[0], one = 1, info = 0
    cdef int lda = A.shape[0]
    cdef Py_ssize_t a, b, ja, jb
    cdef double v
    with nogil:
        for a in range(k):
            ja = order[a]
            rhs[a] = yg[ja]
            rhs[k + a] = theta * sg[ja]
            for b in range(k):
                jb = order[b]
                A[a, b] = -YYf[ja, jb] / theta
                v = -SYf[ja, jb]
                if a > b:
                    v += SY[ja, jb]
                A[k + a, b] = v
                A[b, k + a] = v
                A[k + a, k + b] = theta * (SS[ja, jb] - SSf[ja, jb])
            A[a, a] -= SY[ja, ja]
        dgesv(&k2, &one, &A[0, 0], &lda, &ipiv[0], &rhs[0], &k2, &info)
        for a in range(zs.shape[0]):
            zs[a] = 0.0
            zy[a] = 0.0
        if info == 0:
            for a in range(k):
                if not (fabs(rhs[a]) < INFINITY and fabs(rhs[k + a]) < INFINITY):
                    info = -1
                    break
                zy[order[a]] = rhs[a]
                zs[order[a]] = rhs[k + a]
    return info
