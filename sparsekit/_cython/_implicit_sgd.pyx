# cython: language_level=3
"""Implicit SGD's proximal step for the double-sum softmax objective (Fagan & Iyengar 2018,
section 3.2 and Appendix F): the inner solves of the epoch driver's ``method="implicit"``.

For the touched classes T = (y, k_1..k_m) with scores z_j and ridge shrink factors rho_j,
the step is the minimizer of 2 eta l_iC + ||theta - theta~||^2. For m = 1 the monotone g(u)
of eq. (16) is bracketed (App. F.1) and solved by safeguarded Halley steps; for m > 1 the
(m+2)-variable problem reduces to one monotone scalar equation in v = u + eta q Lambda /
rho_y (derivation in ``_implicit_multi``). All scalars are float64; nothing here touches
the weights: the driver applies ``w_j = w~_j / rho_j + coef_j x``.
"""
import numpy as np

from libc.math cimport exp, fabs, fmax, isfinite, log

from sparsekit._cython._common cimport log1pexp, row_max
from sparsekit._cython._lambertw cimport _wexp_from

ctypedef double (*resid_fn)(double, void*, double*) noexcept nogil   # f(x); f', f'' out


cdef inline void _lam(double t, double kappa, double logkappa, double* lam, double* dlam,
                      double* d2lam, double* w) noexcept nogil:
    """lam = W(kappa e^t)/kappa (-> e^t as kappa -> 0) and its first two derivatives in t,
    lam/(1 + W) and lam/(1 + W)^3 (``logkappa`` = log(kappa)); ``w`` holds the previous W
    value on entry (0: none) and the new one on exit."""
    cdef double r
    if kappa > 0.0:
        w[0] = _wexp_from(t + logkappa, w[0])
        lam[0] = w[0] / kappa
        r = 1.0 / (1.0 + w[0])
        dlam[0] = lam[0] * r
        d2lam[0] = dlam[0] * r * r
    else:
        lam[0] = exp(t)
        dlam[0] = lam[0]
        d2lam[0] = lam[0]


cdef inline double _halley(double f, const double* d) noexcept nogil:
    """Halley's step for f(x) = 0 from f and ``d`` = (f', f''): the Newton step f/f' divided
    by 1 - f f''/(2 f'^2), or the Newton step itself where that factor is not above 1/2."""
    cdef double n = f / d[0], h = 1.0 - 0.5 * n * d[1] / d[0]
    return n / h if h > 0.5 else n


cdef double _root(resid_fn f, void* ctx, double lo, double hi, double x0) noexcept nogil:
    """Root of an increasing f on [lo, hi] (f(lo) <= 0 <= f(hi)): Halley steps kept in the
    bracket, with a bisection whenever a step would leave it, is not finite, or does not at
    least halve the previous step (so the bracket shrinks geometrically in the worst case).
    When the steps have converged (a step under 1e-15 relative) the last point evaluated is
    returned, so the caller can use what ``f`` left in ``ctx`` for it."""
    cdef double x = x0, fx, dx, dxold = hi - lo
    cdef double d[2]
    cdef int it
    if not (x > lo and x < hi):
        x = 0.5 * (lo + hi)
    for it in range(400):
        fx = f(x, ctx, d)
        if fx == 0.0:
            return x
        if fx < 0.0:
            lo = x
        else:
            hi = x
        dx = _halley(fx, d)
        if isfinite(d[0]) and fabs(dx) <= 1e-15 * (1.0 + fabs(x)):   # converged
            return x
        if not (x - dx > lo and x - dx < hi) or fabs(2.0 * dx) > fabs(dxold):
            dx = x - 0.5 * (lo + hi)
        dxold = dx
        x -= dx
        if hi - lo <= 4e-16 * (1.0 + fabs(x)):
            return x
    return x


cdef double _root_above(resid_fn f, void* ctx, double lo, double bound,
                        double x0) noexcept nogil:
    """Root of an increasing f with f(lo) < 0 and a proven upper ``bound`` (f(bound) >= 0 in
    exact arithmetic), searched from ``x0``: the bound is evaluated only when the root is
    found there, and the bracket widened should rounding have left f(bound) < 0."""
    cdef double x = lo, hi = bound, start = lo
    cdef double d[2]
    cdef int it
    for it in range(200):
        x = _root(f, ctx, lo, hi, x0)
        if hi - x > 1e-9 * (1.0 + fabs(hi)) or f(hi, ctx, d) >= 0.0:
            return x
        lo = hi
        hi += 1.0 + (hi - start)
    return x


cdef struct OneCtx:
    double s        # s~ = z^_k - z^_y
    double u0       # u~
    double eta      # data learning rate (eta * sample weight)
    double logc     # log((K-1)/m)
    double kappa    # eta q (1/rho_k + 1/rho_y)
    double logkappa
    double at       # u of the last evaluation,
    double lam      # its lambda
    double w        # last W value (warm start of the next Lambert-W)


cdef double _g_one(double u, void* p, double* dg) noexcept nogil:
    """Eq. (16) simplified, divided by 2: g(u) = eta(1 - e^{-u} - lam(u)) + u - u~, where
    lam(u) = a(u)/(2 eta q) = W(kappa c e^{s~-u})/kappa (eq. (14)); g' and g'' to ``dg``."""
    cdef OneCtx* c = <OneCtx*>p
    cdef double lam, dlam, d2lam, eu = exp(-u)
    _lam(c.logc + c.s - u, c.kappa, c.logkappa, &lam, &dlam, &d2lam, &c.w)
    c.at = u
    c.lam = lam
    dg[0] = c.eta * eu + 1.0 + c.eta * dlam
    dg[1] = -c.eta * (eu + d2lam)
    return c.eta * (1.0 - eu - lam) + u - c.u0


cdef double _implicit_one(double s, double u0, double eta, double logc, double kappa,
                          double* lam_out) noexcept nogil:
    """n = m = 1 Implicit SGD (App. F.1): returns u*, writes lambda* (a* = 2 eta q lambda*)."""
    cdef OneCtx c
    cdef double g0, u, x0
    cdef double d[2]
    c.s = s
    c.u0 = u0
    c.eta = eta
    c.logc = logc
    c.kappa = kappa
    c.logkappa = log(kappa) if kappa > 0.0 else 0.0
    c.w = 0.0
    g0 = _g_one(u0, &c, d)
    if g0 == 0.0:
        lam_out[0] = c.lam
        return u0
    x0 = u0 - _halley(g0, d)
    if g0 < 0.0:    # u~ < u* <= log(1 + c e^{s~}) (the a = 0 bound)
        u = _root_above(_g_one, &c, u0, fmax(u0, log1pexp(logc + s)), x0)
    else:           # g(0) = -u~ - eta lam(0) <= 0, so 0 <= u* <= u~ (u* > 0 by eq. (17))
        u = _root(_g_one, &c, 0.0, u0, x0)
    if u != c.at:
        _g_one(u, &c, d)
    lam_out[0] = c.lam
    return u


cdef struct MultiCtx:
    int m
    double* shat    # s^_k, k < m
    double* kappa   # eta q / rho_k
    double* logkappa
    double* lam     # lambda_k(v), written on each evaluation
    double* w       # last W values (warm starts)
    double kappa_y  # eta q / rho_y
    double logc
    double eta
    double u0
    double at       # v of the last evaluation
    double u        # u(v) of the last evaluation


cdef double _h_multi(double v, void* p, double* dh) noexcept nogil:
    """h(v) = eta(1 - e^{-u(v)} - Lambda(v)) + u(v) - u~, u(v) = v - kappa_y Lambda(v);
    h' and h'' to ``dh``."""
    cdef MultiCtx* c = <MultiCtx*>p
    cdef double big = 0.0, dbig = 0.0, d2big = 0.0, l, dl, d2l, u, du, d2u, eu
    cdef int k
    for k in range(c.m):
        _lam(c.logc + c.shat[k] - v, c.kappa[k], c.logkappa[k], &l, &dl, &d2l, &c.w[k])
        c.lam[k] = l
        big += l
        dbig -= dl
        d2big += d2l
    u = v - c.kappa_y * big
    du = 1.0 - c.kappa_y * dbig
    d2u = -c.kappa_y * d2big
    c.at = v
    c.u = u
    eu = exp(-u)
    dh[0] = (c.eta * eu + 1.0) * du - c.eta * dbig
    dh[1] = (c.eta * eu + 1.0) * d2u - c.eta * (eu * du * du + d2big)
    return c.eta * (1.0 - eu - big) + u - c.u0


cdef double _implicit_multi(int m, double* shat, double* kappa, double kappa_y, double u0,
                            double eta, double logc, double* lam) noexcept nogil:
    """One datapoint, m classes (App. F.3 with n = 1), with ridge.

    Writing z_j = x.w_j, the step minimises over (u, z_y, z_k)
        2 eta [u + e^{-u} + c sum_k e^{z_k - z_y - u}] + (u - u~)^2 + sum_j rho_j/q (z_j - z^_j)^2
    (the part of w_j orthogonal to x is shrunk by 1/rho_j in closed form). Stationarity gives
    lambda_k = c e^{z_k - z_y - u}, z_k = z^_k - kappa_k lambda_k, z_y = z^_y + kappa_y Lambda,
    hence lambda_k = W(kappa_k c e^{s^_k - v})/kappa_k with v = u + kappa_y Lambda, and the
    u-equation becomes the increasing scalar equation h(v) = 0 of ``_h_multi``.
    Returns u*, writes lambda*_k to ``lam[:m]`` (``lam[m:3m]`` is scratch: the W values
    that warm-start the next evaluation, and log kappa_k). The search starts with a Halley
    step from v = u~ in the bracket that the sign of h(u~) picks, as for m = 1: h(0) <= 0
    <= h(u~), or h(u~) < 0 <= h(V) with V = U + kappa_y((U-u~)/eta + 1) >= v*, where
    U = max(u~, log(1 + c sum_k e^{s^_k})) >= u*.
    """
    cdef MultiCtx c
    cdef double mx, acc, upper, v, h0, x0
    cdef double d[2]
    cdef int k
    c.m = m
    c.shat = shat
    c.kappa = kappa
    c.lam = lam
    c.w = lam + m
    c.logkappa = lam + 2 * m
    for k in range(m):
        c.w[k] = 0.0
        c.logkappa[k] = log(kappa[k]) if kappa[k] > 0.0 else 0.0
    c.kappa_y = kappa_y
    c.logc = logc
    c.eta = eta
    c.u0 = u0
    h0 = _h_multi(u0, &c, d)
    if h0 == 0.0:
        return c.u
    x0 = u0 - _halley(h0, d)
    if h0 > 0.0:
        v = _root(_h_multi, &c, 0.0, u0, x0)
    else:
        mx = row_max(shat, m)
        acc = 0.0
        for k in range(m):
            acc += exp(shat[k] - mx)
        upper = log1pexp(logc + mx + log(acc))
        if upper < u0:
            upper = u0
        v = _root_above(_h_multi, &c, u0, upper + kappa_y * (
            1.0 + ((upper - u0) / eta if eta > 0.0 else 0.0)), x0)
    if v != c.at:
        _h_multi(v, &c, d)
    return c.u



cdef int _implicit_coefficients(int m, const double* z, const double* rho, double u0,
                                double eta, double q, double logc, double* coef,
                                double* unew, double* work) noexcept nogil:
    """Implicit step from scores z (rows already shrunk by 1/rho inside: z^ = z / rho)."""
    cdef double lam, tot = 0.0, kappa_y = eta * q / rho[0]
    cdef double* shat = work
    cdef double* kap = work + m
    cdef double* lams = work + 2 * m      # m lambdas, m warm-start W values, m log(kappa)
    cdef int k
    if m == 1:
        unew[0] = _implicit_one(z[1] / rho[1] - z[0] / rho[0], u0, eta, logc,
                                eta * q * (1.0 / rho[1] + 1.0 / rho[0]), &lam)
        coef[1] = -eta * lam / rho[1]
        coef[0] = eta * lam / rho[0]
    else:
        for k in range(m):
            shat[k] = z[k + 1] / rho[k + 1] - z[0] / rho[0]
            kap[k] = eta * q / rho[k + 1]
        unew[0] = _implicit_multi(m, shat, kap, kappa_y, u0, eta, logc, lams)
        for k in range(m):
            coef[k + 1] = -eta * lams[k] / rho[k + 1]
            tot += lams[k]
        coef[0] = eta * tot / rho[0]
    for k in range(m + 1):
        if not isfinite(coef[k]):
            return 1
    return 0 if isfinite(unew[0]) else 1


def implicit_step(double[::1] z, double[::1] rho, double u0, double eta, double q,
                  double c, bint scalar_u=True):
    """One Implicit SGD step on precomputed quantities (for tests and reference use).

    Parameters
    ----------
    z : ndarray of shape (m + 1,)
        Scores ``x.w~_j`` of the true class (index 0) and the m sampled classes.
    rho : ndarray of shape (m + 1,)
        Ridge shrink factors ``1 + eta alpha beta_j``.
    u0, eta, q, c : float
        Old ``u_i``, learning rate, ``||x||^2`` and class weight ``(K-1)/m``.
    scalar_u : bool
        For m == 1, use the bracketed g(u) of App. F.1 (True) or the general v-equation.

    Returns
    -------
    u : float
        New ``u_i``.
    coef : ndarray of shape (m + 1,)
        ``w_j = w~_j / rho_j + coef_j x``.
    """
    cdef int m = z.shape[0] - 1
    cdef double unew
    coef = np.zeros(m + 1)
    work = np.zeros(5 * max(m, 1))
    cdef double[::1] cv = coef
    cdef double[::1] wv = work
    if m < 1 or rho.shape[0] != m + 1:
        raise ValueError("need m >= 1 sampled classes and len(rho) == len(z)")
    if m == 1 and not scalar_u:
        wv[0] = z[1] / rho[1] - z[0] / rho[0]
        wv[1] = eta * q / rho[1]
        unew = _implicit_multi(1, &wv[0], &wv[1], eta * q / rho[0], u0, eta, log(c), &wv[2])
        cv[1] = -eta * wv[2] / rho[1]
        cv[0] = eta * wv[2] / rho[0]
        return unew, coef
    if _implicit_coefficients(m, &z[0], &rho[0], u0, eta, q, log(c), &cv[0], &unew, &wv[0]):
        raise FloatingPointError("non-finite implicit step")
    return unew, coef
