# cython: language_level=3
"""Lambert W of exp(t) without ever forming exp(t).

``W(e^t)`` is the root ``w > 0`` of ``w + log w = t`` (principal branch). It grows like
``t - log t`` for large ``t`` and like ``e^t`` for very negative ``t``; the Implicit SGD
update of Fagan & Iyengar 2018 (appendix F.1, eq. (14)) needs it for ``t`` anywhere
in ``R`` (logit gaps of +-1e3 and beyond), so the exponential is never evaluated for
``t > 0``. The C-level routine is shared through ``_lambertw.pxd`` with
``_softmax_sgd.pyx``; ``lambertw_exp`` is the vectorised public form.
"""
import numpy as np

from libc.math cimport INFINITY, exp, log, log1p, fabs


cdef double _wexp_from(double t, double w0) noexcept nogil:
    """``W(exp(t))`` with Newton started at ``w0`` when it is close (|f(w0)| < 1, e.g. the
    previous value inside a root search of the Implicit SGD step), else at an asymptotic
    guess. f(w) = w + log w - t is increasing and concave, so the iterates converge from any
    start (a step that would leave w > 0 is halved). Newton converges quadratically, so a
    step below 1e-9 w leaves an error of order 1e-18 w: the iteration stops after it. The
    test is relative because W(e^t) ~ e^t is tiny for very negative t, where an absolute test
    stopped a warm start after one step (up to 80% off at t = -39)."""
    cdef double w, f, x, r = 0.0
    cdef bint known                     # r holds f(w) for the current w
    cdef int it
    if t != t or t == INFINITY:         # W(e^inf) = inf (t - log t would be inf - inf)
        return t
    if t < -40.0:
        x = exp(t)
        return x * (1.0 - x)            # relative error O(e^{2t}) < 1e-34
    known = w0 > 0.0
    if known:
        r = w0 + log(w0) - t
        known = fabs(r) < 1.0
    if known:
        w = w0                          # close: a few quadratic Newton steps
    elif t > 1.0:
        w = t - log(t)                  # asymptotic start, exact at t = 1
    else:
        w = log1p(exp(t))
    for it in range(80):
        # Newton on f(w) = w + log w - t, f'(w) = 1 + 1/w (no product can overflow)
        if not known:
            r = w + log(w) - t
        known = False
        f = r * (w / (1.0 + w))
        if f >= w:
            f = 0.5 * w
        w -= f
        if fabs(f) <= 1e-9 * w:
            return w
    return w


def lambertw_exp(t, w0=None):
    """Principal-branch Lambert W of ``exp(t)``, element-wise, with no overflow for any ``t``.

    Parameters
    ----------
    t : array_like of float
        Log of the argument.
    w0 : array_like of float, default=None
        Starting values of the Newton iteration, broadcast against ``t``, used where close
        (the warm start of the Implicit SGD root search); None or 0 for the default start.

    Returns
    -------
    w : ndarray of float64
        ``W(e^t)``, i.e. the positive root of ``w + log(w) = t``.
    """
    arr = np.asarray(t, dtype=np.float64)
    flat = np.ascontiguousarray(arr).ravel()
    start = np.ascontiguousarray(np.broadcast_to(
        0.0 if w0 is None else np.asarray(w0, dtype=np.float64), arr.shape)).ravel()
    out = np.empty_like(flat)
    cdef double[::1] tv = flat
    cdef const double[::1] wv = start
    cdef double[::1] ov = out
    cdef Py_ssize_t i
    with nogil:
        for i in range(tv.shape[0]):
            ov[i] = _wexp_from(tv[i], wv[i])
    return out.reshape(arr.shape)
