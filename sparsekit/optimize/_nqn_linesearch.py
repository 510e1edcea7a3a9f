"""Projected weak-Wolfe line search of NQN (thesis Algorithm 4, ModifiedWolfe).

Along the projected path ``x(α) = P(x + α d̄)`` with ``d̄ = T(x, p)`` it looks for α with

* (3.21) sufficient decrease ``f(x(α)) ≤ f(x) + c₁ α ∇f(x)ᵀ d̄``,
* (3.22) curvature ``∇f(x(α))ᵀ T(x(α), d̄) ≥ c₂ ∇f(x)ᵀ d̄``,

by expansion and bisection (Lewis & Overton 2013; Ferry's projected conditions). The
following fixes to the thesis' algorithm are applied: breakpoints use
``(l_i − x_i)/d_i``; ``U_max`` is the largest *finite* breakpoint; when the first trial at
``U_max`` fails (3.21) the search bisects instead of collapsing to α = 0; the bracket stops
at ``U − L < ε_abs + ε_rel L``. Two further safeguards keep the cost per iteration small:
the bracket also stops once ``(U − L)‖d̄‖_∞`` is below the floating-point resolution of
``x`` (bisecting further cannot move the iterate), and once a point with (3.21) is known
at most ``maxls`` trials are made. In both cases the last point that satisfied (3.21),
``α = L > 0``, is returned. Before any decrease is found the search only stops at that
resolution limit (or the evaluation budget), so "no decrease" means none exists at the
resolution of ``x``.
"""
import math

import numpy as np

from .._cython import _nqn_kernels as _k

_EPS = float(np.finfo(float).eps)

#: Line-search outcomes.
WOLFE, DECREASE, FAILED = 0, 1, 2


class LineSearchResult:
    """Outcome of :func:`projected_wolfe`.

    Attributes
    ----------
    status : int
        ``WOLFE`` (both conditions hold), ``DECREASE`` (only (3.21) holds, α = L > 0),
        or ``FAILED`` (no α > 0 with (3.21) down to the resolution of ``x`` or within the
        evaluation budget; ``x`` and ``g`` are then ``None``).
    alpha, x, f, g : float, ndarray, float, ndarray
        Accepted step and the point, value and gradient there.
    nfev : int
        Objective evaluations made.
    trial_grads : list of ndarray
        Gradients at the trial points (kept only for ``FAILED``).
    undefined_beyond : bool
        Whether the bracket's upper end is a trial where f was NaN or infinite: for
        ``DECREASE`` and ``FAILED``, the step was cut where f stops being defined, not
        where it stops decreasing.
    """

    __slots__ = ("status", "alpha", "x", "f", "g", "nfev", "trial_grads", "undefined_beyond")

    def __init__(self, status, alpha, x, f, g, nfev, trial_grads=(), undefined_beyond=False):
        self.status, self.alpha, self.x, self.f, self.g, self.nfev = (
            status, alpha, x, f, g, nfev)
        self.trial_grads = trial_grads
        self.undefined_beyond = undefined_beyond


def projected_wolfe(fun, x, f0, g0, d, lo, hi, c1=1e-8, c2=0.9, eps_abs=1e-16,
                    eps_rel=1e-6, maxls=20, max_evals=None, alpha0=1.0):
    """Run Algorithm 4 from ``x`` along the projected direction ``d = T(x, p)``.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, g)``.
    x, g0 : ndarray
        Current point (feasible) and gradient; ``f0`` its value.
    d : ndarray
        Projected search direction ``T(x, p)``, a descent direction (``g0ᵀd < 0``).
    lo, hi : ndarray
        Bounds (``±inf`` allowed).
    c1, c2 : float
        Wolfe parameters, ``0 < c1 < c2 < 1`` (Table 3.1: 1e-8, 0.9).
    eps_abs, eps_rel : float
        Bracketing tolerances (Table 3.1: 1e-16, 1e-6).
    maxls : int
        Maximum number of trial points once a point satisfying (3.21) is known.
    max_evals : int or None
        Remaining evaluation budget.
    alpha0 : float
        First trial step before capping at ``U_max``.

    Returns
    -------
    LineSearchResult
    """
    slope0 = float(g0 @ d)
    umax = _k.max_breakpoint(x, d, lo, hi)
    dnorm = float(np.max(np.abs(d)))
    xres = _EPS * max(1.0, float(np.max(np.abs(x))))
    budget = math.inf if max_evals is None else max_evals
    lower, upper = 0.0, umax
    alpha = min(alpha0, umax)
    best = None  # (alpha, x, f, g) at alpha = lower
    nfev = 0
    trial_grads = []
    undefined_beyond = False
    while nfev < budget and (best is None or nfev < maxls):
        xt = np.empty_like(x)
        _k.trial_point(x, d, alpha, lo, hi, xt)
        ft, gt = fun(xt)
        nfev += 1
        if best is None:
            trial_grads.append(gt)
        if not (math.isfinite(ft) and ft < f0 + c1 * alpha * slope0):
            upper = alpha
            undefined_beyond = not math.isfinite(ft)
        elif _k.projected_slope(xt, gt, d, lo, hi) < c2 * slope0:
            lower = alpha
            best = (alpha, xt, ft, gt)
        else:
            return LineSearchResult(WOLFE, alpha, xt, ft, gt, nfev)
        if upper < umax or lower == 0.0:
            alpha = 0.5 * (lower + upper)
        else:
            alpha = min(2.0 * lower, upper)
        if upper - lower < eps_abs + eps_rel * lower or (upper - lower) * dnorm <= xres:
            break
    if best is not None:
        return LineSearchResult(DECREASE, *best, nfev, undefined_beyond=undefined_beyond)
    return LineSearchResult(FAILED, 0.0, None, f0, None, nfev, trial_grads, undefined_beyond)
