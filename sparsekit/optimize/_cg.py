"""The conjugate-gradient solve of the second-order solvers (OBA and Newton-CG)."""
import math

import numpy as np
import scipy.linalg

from sparsekit._cython import _oba_kernels as K
from sparsekit.optimize._result import hessian_product

#: On a formed matrix of at least ``DIRECT_MIN_SIZE`` rows, a CG that has neither met its
#: tolerance nor reached the radius after ``DIRECT_AFTER`` iterations solves the system by
#: a Cholesky factorization instead (:func:`_direct_step`): a factorization costs about as
#: much as 40-110 of its iterations (OpenBLAS on one thread, 100 to 3,000 rows), so the
#: solve takes at most about twice the cheaper route's time, where the CG on the
#: ill-conditioned Hessians of nearly separable classes runs hundreds of iterations (up to
#: its cap of 1,000) to its 1%.
DIRECT_AFTER = 100
DIRECT_MIN_SIZE = 200


def steihaug_cg(H, b, reg=0.0, rtol=0.1, maxiter=1000, radius=math.inf, precondition=False,
                radius_norm="euclidean", p0=None, norm=math.inf):
    """Truncated CG for ``(H + reg I) p = -b``, stopped on ``||r|| <= rtol ||b||``.

    The norm of the stopping test is the infinity norm (OBA's, Keskar 2017) or, with
    ``norm=2``, the Euclidean one (the inexact-Newton forcing of Eisenstat & Walker 1996).

    Steihaug's variant (Nocedal & Wright 2006, Algorithm 7.2): a step that leaves the ball
    of ``radius`` (in the Euclidean norm, or with ``radius_norm="diagonal"`` in the scaled
    norm ‖p‖_D = (Σᵢ Dᵢ pᵢ²)^½ of :func:`radius_metric`), or meets curvature
    ``d^T (H + reg I) d <= 1e-16 ||d||^2``, ends on the boundary; with an infinite radius
    it ends at the current iterate (at the first search direction if that iterate is still
    0). Starting at 0 makes every truncated iterate a
    descent direction. A start ``p0`` is used when the model
    ``psi(p) = b^T p + 1/2 p^T (H + reg I) p`` is negative there: CG only lowers ``psi``,
    and ``psi(p) < 0`` implies ``b^T p < 0``, so descent is kept (OBA warm-starts the
    re-solves of its corrective cycle so).

    With ``precondition``, the CG is preconditioned by the operator's
    ``preconditioner(reg)`` (a callable applying M⁻¹ to a residual, or None) if it has one,
    else by ``diag(H) + reg`` (Jacobi) if it has ``diagonal()``; the stopping test stays on
    the plain residual. An operator with ``is_explicit`` true (a formed matrix ``H.matrix``)
    runs the same loop compiled and, with a finite ``radius``, from ``DIRECT_MIN_SIZE`` rows
    on, ends a loop still short of its tolerance and of the radius after ``DIRECT_AFTER``
    iterations by a direct solve (:func:`_direct_step`; one product counted for it).

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
    metric = radius_metric(H, reg, radius_norm) if math.isfinite(radius) else None
    if p0 is not None and p0.size and squared_norm(p0, metric) < radius * radius:
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
        minv = np.ones_like(b) if minv is None else minv
        cap = min(maxiter, DIRECT_AFTER) if b.size >= DIRECT_MIN_SIZE else maxiter
        weights = np.ones_like(b) if metric is None else metric
        it, ended = K.cg_dense(H.matrix, b, bnorm, reg, rtol, cap, radius, minv, weights, p, r)
        if ended == K.CG_MAXITER and cap < maxiter:
            if _direct_step(H.matrix, b, reg, radius, p, r, metric):
                it += 1
            else:  # not positive definite in floating point: the CG goes on, restarted
                it += K.cg_dense(H.matrix, b, bnorm, reg, rtol, maxiter - cap, radius, minv,
                                 weights, p, r)[0]
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
            t = _to_boundary(p, d, radius, metric) if math.isfinite(radius) else float(not p.any())
            return p + t * d, r + t * Hd, it
        a = rz / dHd
        p_next = p + a * d
        if squared_norm(p_next, metric) >= radius * radius:
            t = _to_boundary(p, d, radius, metric)
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


def _direct_step(G, b, reg, radius, p, r, metric=None):
    """Move the CG iterate ``p`` (inside the radius) to the Newton point
    n = −(G + reg I)⁻¹ b by a Cholesky factorization, or, when n lies beyond the radius, to
    where the segment from ``p`` to n meets the boundary: the model
    ψ(q) = bᵀq + ½ qᵀ(G + reg I)q, convex with its minimum at n, decreases all along that
    segment, so the step keeps the CG's descent (a dogleg from the CG iterate; Nocedal &
    Wright 2006, section 4.1). ``r = b + (G + reg I) p`` is updated in place by one product.
    False, with ``p`` and ``r`` unchanged, when the factorization fails (G + reg I is not
    positive definite in floating point).
    """
    A = G.copy()
    A.flat[::A.shape[0] + 1] += reg
    try:
        factor = scipy.linalg.cho_factor(A, overwrite_a=True, check_finite=False)
    except np.linalg.LinAlgError:
        return False
    newton = scipy.linalg.cho_solve(factor, -b, check_finite=False)
    if not np.isfinite(newton).all():
        return False
    if squared_norm(newton, metric) > radius * radius:
        s = newton - p
        newton = p + _to_boundary(p, s, radius, metric) * s
    p[:] = newton
    r[:] = b + G @ p + reg * p
    return True


def radius_metric(H, reg, radius_norm):
    """The weights D of the trust region's norm ‖p‖_D = (Σᵢ Dᵢ pᵢ²)^½ for the operator
    ``H``: None for ``radius_norm="euclidean"``; for ``"diagonal"`` the diagonal of H +
    ``reg`` I (from ``H.diagonal()`` or the formed ``H.matrix``), floored at 1e-12 times
    its largest entry (a coordinate without curvature, or of negative curvature in an
    indefinite H, would otherwise have no bound). That norm is the one of the
    Jacobi-preconditioned CG's iterates (Nocedal & Wright 2006, section 7.2) and does not
    change when coordinates are rescaled: where some coordinates have a tiny curvature,
    the Euclidean radius is met by the first CG step along them alone."""
    if radius_norm == "euclidean":
        return None
    if hasattr(H, "diagonal"):
        diagonal = H.diagonal()
    elif getattr(H, "is_explicit", False):
        diagonal = np.diag(H.matrix)
    else:
        raise TypeError("radius_norm='diagonal' needs a Hessian operator with a diagonal() "
                        "method or a formed matrix (is_explicit and matrix)")
    diagonal = diagonal + reg
    top = float(diagonal.max(initial=0.0))
    return np.maximum(diagonal, 1e-12 * top if top > 0 else 1.0)


def squared_norm(v, metric):
    """‖v‖² in the norm of ``metric`` (None: Euclidean)."""
    return v @ v if metric is None else v @ (metric * v)


def _to_boundary(p, d, radius, metric=None):
    """t >= 0 with ||p + t d|| = radius in the norm of ``metric`` (None: Euclidean)."""
    wd = d if metric is None else metric * d
    pd, dd, pp = p @ wd, d @ wd, squared_norm(p, metric)
    return (-pd + math.sqrt(max(pd * pd + dd * (radius * radius - pp), 0.0))) / dd


def _inf_norm(v):
    return np.abs(v).max(initial=0.0)


def _two_norm(v):
    return float(np.sqrt(v @ v))
