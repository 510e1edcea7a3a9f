"""The conjugate-gradient solve of the second-order solvers (OBA and Newton-CG)."""
import math

import numpy as np

from sparsekit._cython import _oba_kernels as K
from sparsekit.optimize._result import hessian_product


def steihaug_cg(H, b, reg=0.0, rtol=0.1, maxiter=1000, radius=math.inf, precondition=False,
                p0=None, norm=math.inf):
    """Truncated CG for ``(H + reg I) p = -b``, stopped on ``||r|| <= rtol ||b||``.

    The norm of the stopping test is the infinity norm (OBA's, Keskar 2017) or, with
    ``norm=2``, the Euclidean one (the inexact-Newton forcing of Eisenstat & Walker 1996).

    Steihaug's variant (Nocedal & Wright 2006, Algorithm 7.2): a step that leaves the ball
    of ``radius``, or meets curvature ``d^T (H + reg I) d <= 1e-16 ||d||^2``, ends on the
    boundary; with an infinite radius it ends at the current iterate (at the first search
    direction if that iterate is still 0). Starting at 0 makes every truncated iterate a
    descent direction. A start ``p0`` is used when the model
    ``psi(p) = b^T p + 1/2 p^T (H + reg I) p`` is negative there: CG only lowers ``psi``,
    and ``psi(p) < 0`` implies ``b^T p < 0``, so descent is kept (OBA warm-starts the
    re-solves of its corrective cycle so).

    With ``precondition``, the CG is preconditioned by the operator's
    ``preconditioner(reg)`` (a callable applying M⁻¹ to a residual, or None) if it has one,
    else by ``diag(H) + reg`` (Jacobi) if it has ``diagonal()``; the stopping test stays on
    the plain residual. An operator with ``is_explicit`` true (a formed matrix ``H.matrix``)
    runs the same loop compiled.

    Returns ``(p, r, n_products)`` with the residual ``r = b + (H + reg I) p`` kept up to
    date by the recurrence, also for a step to the boundary: callers read
    ``(H + reg I) p = r - b`` from it instead of making another product.
    """
    measure = _inf_norm if norm == math.inf else _two_norm
    p = np.zeros_like(b)
    bnorm = measure(b)
    if bnorm == 0.0:
        return p, b.copy(), 0
    r, it0 = b.copy(), 0
    if p0 is not None and p0.size and p0 @ p0 < radius * radius:
        Hp = hessian_product(H, p0) + reg * p0
        it0 = 1
        if b @ p0 + 0.5 * (p0 @ Hp) < 0.0:
            p, r = p0.copy(), b + Hp
            if measure(r) <= rtol * bnorm:
                return p, r, it0
    minv = solve = None
    if precondition and hasattr(H, "preconditioner"):
        solve = H.preconditioner(reg)
    if precondition and solve is None and hasattr(H, "diagonal"):
        minv = 1.0 / (H.diagonal() + reg)
        solve = lambda r: minv * r  # noqa: E731
    if getattr(H, "is_explicit", False) and math.isfinite(radius) and norm == math.inf:
        it = K.cg_dense(H.matrix, b, bnorm, reg, rtol, maxiter, radius,
                        np.ones_like(b) if minv is None else minv, p, r)
        H.count_products(it)
        return p, r, it0 + it
    z = r if solve is None else solve(r)
    d = -z
    rz = r @ z
    for it in range(it0 + 1, it0 + maxiter + 1):
        Hd = hessian_product(H, d) + reg * d
        dd = d @ d
        dHd = d @ Hd
        if dHd <= 1e-16 * dd:
            t = _to_boundary(p, d, radius) if math.isfinite(radius) else float(not p.any())
            return p + t * d, r + t * Hd, it
        a = rz / dHd
        p_next = p + a * d
        if p_next @ p_next >= radius * radius:
            t = _to_boundary(p, d, radius)
            return p + t * d, r + t * Hd, it
        p = p_next
        r += a * Hd
        if measure(r) <= rtol * bnorm:
            return p, r, it
        z = r if solve is None else solve(r)
        rz_next = r @ z
        d = -z + (rz_next / rz) * d
        rz = rz_next
    return p, r, it0 + maxiter


def _to_boundary(p, d, radius):
    """t >= 0 with ||p + t d||_2 = radius."""
    pd, dd, pp = p @ d, d @ d, p @ p
    return (-pd + math.sqrt(max(pd * pd + dd * (radius * radius - pp), 0.0))) / dd


def _inf_norm(v):
    return np.abs(v).max(initial=0.0)


def _two_norm(v):
    return float(np.sqrt(v @ v))
