"""OBA: the orthant-based adaptive second-order method for min f(x) + μ Σᵢ wᵢ|xᵢ|.

Keskar (2017), thesis chapter 2 (Algorithms 1 and 2), with the choices stated below where
the thesis and its reference code disagree. Each outer iteration:

1. minimum-norm subgradient g (2.4), orthant signs ζ (2.12), sets 𝒜/ℱ/𝒰 (2.5)-(2.7);
2. the τ coordinates of 𝒰 with the largest |gᵢ| join the free set, τ doubling after an
   iteration without corrections, all of 𝒰 at the start when its violations are
   about equal (``tau0_flat``, ours);
3. Newton-CG on the free set, (∇²f_FF + 10⁻⁸ I) d = −g_F, stopped at
   ‖H d + g‖_∞ ≤ 0.1 ‖g_F‖_∞ (optionally tighter on a formed Hessian), repeated
   while some newly freed coordinate moves against its orthant sign (the corrective cycle
   (2.11), with the thesis' sign test); the Steihaug
   radius follows the ratio of actual to predicted reduction (``adaptive_radius``, ours);
4. projected backtracking on the piecewise-quadratic model q (2.2), with the
   curvature term from the CG's residual (no Hessian product per trial); when it shortens
   a step that carries nonzero coordinates through zero, the direction that pins those
   coordinates at zero and minimizes the model over the closed orthant is searched too
   (``pin_crossings``, ours);
5. ISTA globalization (Algorithm 2) with a real Lipschitz constant L: the trial point is
   accepted against the prox-model value Γ (2.14), else it slides back to the ISTA point.

The stopping test is ‖x − S_μ(x − ∇f(x))‖_∞ ≤ tol.
"""
import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import OptimizeResult

from sparsekit._cython import _oba_kernels as K
from sparsekit.optimize._cg import radius_metric, squared_norm, steihaug_cg
from sparsekit.optimize._result import (CALLBACK_MESSAGE, STOPPED_BY_CALLBACK, Callback,
                                        checked_f_grad, checked_hessp, hessian_product,
                                        is_positive_finite)

# relative size of φ's rounding error that the ISTA descent test tolerates before doubling L
_ROUNDING = 1e-11
# iterations in which neither φ falls by more than its rounding nor the optimality measure
# below half its best that end a solve as stalled (status 2): tol is then below the
# rounding error of ∇f, e.g. for a column of large, nearly constant entries (timestamps)
STALL_ITERATIONS = 20

_MESSAGES = {
    0: "Optimization terminated: the optimality measure is below tol.",
    1: "Maximum number of iterations reached.",
    2: f"Stalled: in {STALL_ITERATIONS} iterations neither the objective decreased nor the "
       "optimality measure fell; tol is below the rounding error of the gradient.",
    STOPPED_BY_CALLBACK: CALLBACK_MESSAGE,
}


def _updated_radius(radius, rho, step, max_radius):
    """Trust-region update from ρ = actual / predicted reduction (Nocedal & Wright, Alg. 4.1).

    ρ < 1/4: the model overrated the step, the next radius is a quarter of the step taken;
    ρ > 3/4 with a step on the boundary: the radius doubles, up to ``max_radius``.
    """
    if rho < 0.25:
        return max(0.25 * step, 1e-12)
    if rho > 0.75 and step >= 0.9 * radius:
        return min(2.0 * radius, max_radius)
    return radius


def _estimate_lipschitz(hessp, x, n):
    """2 × a 20-step power-iteration estimate of ‖∇²f(x)‖₂ (used when no L is given)."""
    H = hessp(x, np.arange(n))
    v = np.random.default_rng(0).standard_normal(n)
    lam = 0.0
    for _ in range(20):
        nv = np.linalg.norm(v)
        if nv == 0.0:
            break
        v /= nv
        Hv = hessian_product(H, v)
        lam = float(v @ Hv)
        v = Hv
    if not np.isfinite(lam):
        raise ValueError(f"the Hessian operator's products are not finite at x (the power "
                         f"iteration's estimate of the Hessian's norm is {lam}): check hessp, "
                         f"or give lipschitz")
    return max(2.0 * lam, 1e-12)


def _free_set(code, g, tau):
    """Free set ℱ ∪ 𝒰_F, 𝒰_F = the min(|𝒰|, τ) entries of 𝒰 with the largest |g|.

    Returns the sorted free indices and a mask over them of the newly freed ones (𝒰_F).
    """
    U = np.flatnonzero(code == 2)
    tau_hat = min(U.size, tau)
    if tau_hat < U.size:
        key = np.abs(g[U])
        K.top_k(key, U, tau_hat)
        U = np.sort(U[:tau_hat])
    free_mask = code == 1
    free_mask[U] = True
    free = np.flatnonzero(free_mask)
    new = np.zeros(free.size, dtype=bool)
    new[np.searchsorted(free, U)] = True
    return free, new


def _flat_violations(code, g, contrast):
    """Whether the median violation |gᵢ|, i ∈ 𝒰, is at least ``contrast`` times the largest."""
    v = np.abs(g[code == 2])
    return v.size > 0 and np.median(v) >= contrast * v.max()


def _corrective_cycle(H, hessp, x, g, zeta, free, new, cg_opts, explicit_opts=None):
    """Subspace Newton-CG (2.10) repeated while a new variable leaves its orthant (2.11).

    A newly freed coordinate i violates when d_i ζ_i ≤ 0 (the thesis sgn test, landing at 0
    included); violators join 𝒜 and the operator is restricted. Each pass removes at
    least one coordinate, so the loop ends. A re-solve starts from the previous direction on
    the kept coordinates when that keeps descent (see :func:`_cg`). ``explicit_opts`` (default
    ``cg_opts``) are the CG options for an operator with ``is_explicit`` true. Returns
    (d, (H + reg I) d, free, H, passes, Hessian products).
    """
    explicit_opts = explicit_opts or cg_opts
    loops, ncg, d0 = 0, 0, None
    while True:
        loops += 1
        b = g[free]
        opts = cg_opts if not getattr(H, "is_explicit", False) else explicit_opts
        d, r, it = steihaug_cg(H, b, *opts, p0=d0)
        ncg += it
        violators = new & (d * zeta[free] <= 0.0)
        if not violators.any():
            return d, r - b, free, H, loops, ncg
        keep = ~violators
        free, new, d0 = free[keep], new[keep], d[keep]
        H = H.restrict(keep) if hasattr(H, "restrict") else hessp(x, free)


def _model_search(x, G, zeta, muw, free, d, Hd, H, hess_reg, q0):
    """Largest α ∈ {1, 1/2, ...} with q(P(x + αd)) ≤ q(x), q the model (2.2) with ∇f, and
    ``q0`` = q(x) − f(x), the penalty of x.

    ``Hd`` = (H + hess_reg I) d comes from the CG. The projection P only changes the
    coordinates that cross zero: with δ = αd − c (c supported on those), δᵀ(H + reg I)δ =
    α² dᵀHd − 2α cᵀHd + cᵀ(H + reg I)c, where the last term needs only the crossing columns
    (``H.quadratic_form``, else one product). Returns (x̂ = P(x + αd), α, q(x̂) − f(x),
    q(x) − f(x), Hessian products used).
    """
    xn, crossed = np.empty(free.size), np.empty(free.size, dtype=np.int64)
    dHd, alpha, it = d @ Hd, 1.0, 0
    while True:
        # xn = P(x_F + αd) with q − q0 term by term: q and q0 are large sums whose difference
        # near the solution lies below their rounding, where a test q <= q0 halves alpha to
        # nothing
        step, penalty, n_crossed = K.model_trial(x, G, zeta, muw, free, d, alpha, xn, crossed)
        curvature = alpha * alpha * dHd
        if n_crossed:  # c = αd − δ = x + αd on the crossing coordinates
            at = crossed[:n_crossed]
            c = x[free[at]] + alpha * d[at]
            it += not hasattr(H, "quadratic_form")
            curvature += (_quadratic_form(H, at, c, d.size) + hess_reg * (c @ c)
                          - 2.0 * alpha * (c @ Hd[at]))
        change = step + 0.5 * curvature + penalty
        if change <= 0.0 or alpha < 1e-12:
            break
        alpha *= 0.5
    x_hat = x.copy()
    x_hat[free] = xn
    return x_hat, alpha, q0 + change, q0, it


def _pinned_step(H, hessp, x, g, zeta, free, d, new, cg_opts, explicit_opts, max_passes=10):
    """The subspace Newton direction with the coordinates that d carries through zero
    pinned there (ours, not in the thesis).

    When d moves nonzero coordinates of ℱ across zero, the projection P sets them to zero
    and undoes the balance the Newton direction struck among the coordinates, so the model
    search may accept only a tiny α. Here the model is minimized over the closed orthant
    instead, by an active-set loop: the coordinates C that d crosses (xᵢ(xᵢ + dᵢ) ≤ 0)
    move to zero, δ_C = −x_C, and the model is minimized over the others,
    (H + reg I)_RR δ_R = −(g_R + H_RC δ_C) (CG, warm-started from the previous pass);
    coordinates of R that δ carries through zero are pinned in turn, newly freed ones
    moving against their orthant sign stay at zero (the corrective cycle's test), and, on a
    formed Hessian (whose systems are solved accurately), a coordinate held at zero is
    released when the model decreases as it moves into its orthant, (g + Hδ)ᵢ ζᵢ < 0. At
    most ``max_passes`` solves. Returns (δ over ``free``, (H + reg I) δ, CG iterations,
    Hessian products), or None when d crosses nothing.
    """
    xF, gF, zF = x[free], g[free], zeta[free]
    pinned = (xF != 0.0) & (xF * (xF + d) <= 0.0)
    if not pinned.any():
        return None
    held = np.zeros(free.size, dtype=bool)   # newly freed coordinates kept at zero
    cg_its = products = 0
    delta = np.zeros(free.size)
    for _ in range(max_passes):
        start = delta
        delta = np.zeros(free.size)
        delta[pinned] = -xF[pinned]
        b = gF + hessian_product(H, delta)
        keep = ~(pinned | held)
        HR = H.restrict(keep) if hasattr(H, "restrict") else hessp(x, free[keep])
        explicit = getattr(HR, "is_explicit", False)
        delta[keep], _, it = steihaug_cg(HR, b[keep], *(explicit_opts if explicit else cg_opts),
                                         p0=start[keep] if start.any() else None)
        cg_its, products = cg_its + it, products + it + 1
        crossing = keep & (xF != 0.0) & (xF * (xF + delta) <= 0.0)
        against = keep & new & (delta * zF <= 0.0)
        if crossing.any() or against.any():
            pinned |= crossing
            held |= against
            continue
        Hdelta = hessian_product(H, delta) + cg_opts[0] * delta
        products += 1
        release = (pinned | held) & ((gF + Hdelta) * zF < 0.0) if explicit else None
        if release is None or not release.any():
            return delta, Hdelta, cg_its, products
        pinned &= ~release
        held &= ~release
    return delta, hessian_product(H, delta) + cg_opts[0] * delta, cg_its, products + 1


def _quadratic_form(H, positions, values, size):
    """cᵀHc for c supported on ``positions`` of the ``size`` coordinates of the operator."""
    if hasattr(H, "quadratic_form"):
        return H.quadratic_form(positions, values)
    c = np.zeros(size)
    c[positions] = values
    return c @ hessian_product(H, c)


def _checked_start(x0, mu, penalty_weights, shift_invariant):
    """``x0`` as a float64 copy and the weighted penalties μwᵢ, both checked."""
    if sp.issparse(x0):
        raise TypeError("x0 must be a dense 1-D array, got a sparse matrix")
    x = np.array(x0, dtype=np.float64, copy=True).ravel()
    n = x.size
    if shift_invariant is not None and not (isinstance(shift_invariant, Integral)
                                            and shift_invariant >= 1 and n % shift_invariant == 0):
        raise ValueError(f"shift_invariant must be None or a positive divisor of x0's size {n}, "
                         f"got {shift_invariant!r}")
    weights = (np.ones(n) if penalty_weights is None
               else np.asarray(penalty_weights, dtype=np.float64).ravel())
    if weights.shape != (n,) or np.any(weights < 0) or not np.all(np.isfinite(weights)):
        raise ValueError("penalty_weights must be finite, non-negative and of the shape of x0")
    if not is_positive_finite(mu):
        raise ValueError(f"mu must be a positive finite number, got {mu!r}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x0 must be finite")
    return x, np.ascontiguousarray(mu * weights)


def _checked_controls(*, max_iter, tol, lipschitz, tau0_max, tau0_flat, eta, cg_rtol,
                      cg_rtol_explicit, cg_maxiter, cg_maxiter_explicit, radius_norm, confirm):
    """Check the solver's controls; returns ``cg_maxiter_explicit`` (``cg_maxiter`` if None)."""
    if not (isinstance(max_iter, Integral) and max_iter >= 0):
        raise ValueError(f"max_iter must be a non-negative integer, got {max_iter!r}")
    if not (np.ndim(tol) == 0 and tol >= 0):
        raise ValueError(f"tol must be a non-negative number, got {tol!r}")
    if lipschitz is not None and not callable(lipschitz) and not is_positive_finite(lipschitz):
        raise ValueError(f"lipschitz must be a positive finite number, a callable or None, "
                         f"got {lipschitz!r}")
    if tau0_max is not None and not (isinstance(tau0_max, Integral) and tau0_max >= 1):
        raise ValueError(f"tau0_max must be a positive integer or None, got {tau0_max!r}")
    if tau0_flat is not None and not (isinstance(tau0_flat, Real) and 0 < tau0_flat <= 1):
        raise ValueError(f"tau0_flat must be a number in (0, 1] or None, got {tau0_flat!r}")
    if not (isinstance(eta, Real) and 0 < eta <= 1):
        raise ValueError(f"eta must be a number in (0, 1], got {eta!r}")
    for name, value in (("cg_rtol", cg_rtol), ("cg_rtol_explicit", cg_rtol_explicit)):
        if value is not None and not (isinstance(value, Real) and 0 < value < 1):
            raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    if radius_norm not in ("euclidean", "diagonal"):
        raise ValueError(f"radius_norm must be 'euclidean' or 'diagonal', got {radius_norm!r}")
    if confirm is not None and not callable(confirm):
        raise ValueError(f"confirm must be a callable or None, got {confirm!r}")
    cg_maxiter_explicit = cg_maxiter if cg_maxiter_explicit is None else cg_maxiter_explicit
    for name, value in (("cg_maxiter", cg_maxiter),
                        ("cg_maxiter_explicit", cg_maxiter_explicit)):
        if not (isinstance(value, Integral) and value >= 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return cg_maxiter_explicit


def _shifter(muw, shift_invariant):
    """The in-place shift of a point's blocks to a weighted median (``shift_invariant``)."""
    if shift_invariant is None:
        return lambda z: None
    return lambda z: K.shift_to_median(z, muw, shift_invariant)


class _Globalization:
    """Algorithm 2's safeguard: the OBA point x̂ is accepted when φ(x̂) lies below the
    prox-model value Γ (2.14) at the ISTA point; else the trial slides back towards the
    ISTA point, which Γ majorizes once L is at least the curvature of f (L doubles until it
    is). L is the given ``lipschitz`` (a callable called once), or twice a power-iteration
    estimate (20 Hessian products), made at the first step: a start that is already optimal
    needs none. Counts the ``f_grad`` calls (``nfev``) and the Hessian products
    (``nhessp``) it makes."""

    def __init__(self, f_grad, hessp, muw, shift, lipschitz, ista_floor):
        self._f_grad, self._hessp, self._muw, self._shift = f_grad, hessp, muw, shift
        self._lipschitz, self._floor = lipschitz, ista_floor
        self._adaptive, self._warned = lipschitz is None, False
        self.L, self.nfev, self.nhessp = None, 0, 0

    def _first_lipschitz(self, x):
        if self._adaptive:
            self.nhessp += 20
            return _estimate_lipschitz(self._hessp, x, x.size)
        L = self._lipschitz() if callable(self._lipschitz) else self._lipschitz
        if not is_positive_finite(L):
            raise ValueError(f"lipschitz() must return a positive finite number, got {L!r}")
        return float(L)

    def step(self, x, f, G, x_hat, phi, slack):
        """The accepted point from x (f, ∇f = G, φ = F(x)) and the OBA point ``x_hat``:
        (point, f, ∇f, its penalty, φ(x̂), ᾱ), ᾱ = 1 for x̂ itself, 0 for the ISTA point;
        ``slack`` is the descent test's allowance for rounding. The ISTA point is written
        only when the trial slides towards it: Γ needs its sums only."""
        if self.L is None:
            self.L = self._first_lipschitz(x)
        muw, phi_hat = self._muw, None
        while True:
            gs, ss, pen_ista = K.ista_point(x, G, muw, self.L)
            gamma = f + gs + 0.5 * self.L * ss + pen_ista
            abar, x_ista = 1.0, None
            trial = x_hat
            while True:
                self._shift(trial)
                f_t, G_t = self._f_grad(trial)
                self.nfev += 1
                pen_t = K.weighted_l1(muw, trial)
                if phi_hat is None:
                    phi_hat = f_t + pen_t
                if f_t + pen_t <= gamma + slack or abar == 0.0:
                    break
                G_t = None    # released before the next trial's gradient is made
                if x_ista is None:
                    x_ista = np.empty(x.size)
                    K.ista_point(x, G, muw, self.L, x_ista)
                abar *= 0.5
                if abar < self._floor:
                    abar = 0.0
                    trial = x_ista
                else:
                    trial = x_ista + abar * (x_hat - x_ista)
            excess = f_t + pen_t - gamma
            # at or near the optimum the test fails by rounding (~1e-14 |φ|), whatever L:
            # x_ista is then kept, and L is doubled only for an excess above that
            if abar > 0.0 or excess <= max(slack, _ROUNDING * abs(phi)):
                break
            if not (self._adaptive or self._warned) and math.isfinite(f_t):
                warnings.warn(f"lipschitz={self.L:.6g} is below the curvature of f: the ISTA "
                              "point failed the descent test; doubling it", RuntimeWarning,
                              stacklevel=3)
                self._warned = True
            self.L *= 2.0  # L was too small: Γ did not majorize φ(x_ista)
            if not math.isfinite(self.L):  # only when f_grad is not finite at any step length
                break
        return trial, f_t, G_t, pen_t, phi_hat, abar


def minimize_oba(f_grad, hessp, x0, mu, *, penalty_weights=None, lipschitz=None, tol=1e-6,
                 max_iter=500, eta=0.01, tau0_max=None, tau0_flat=1 / 3, tau_growth=0.0,
                 tau_boost=1, cg_rtol=0.1, cg_rtol_explicit=None, cg_maxiter=1000,
                 cg_maxiter_explicit=None, hess_reg=1e-8, reg_decay=False, cg_radius=1e3,
                 radius_norm="euclidean", adaptive_radius=True, precondition=True,
                 pin_crossings=True, ista_floor=1e-4, shift_invariant=None, confirm=None,
                 callback=None, verbose=0):
    """Minimize ``f(x) + μ Σᵢ wᵢ |xᵢ|`` by OBA (Keskar 2017, Algorithms 1 and 2).

    Read more in the :ref:`User Guide <oba>`.

    Parameters
    ----------
    f_grad : callable
        ``f_grad(x) -> (f(x), ∇f(x))`` for the smooth convex part f.
    hessp : callable
        ``hessp(x, free) -> H`` where ``free`` is a sorted integer index array and ``H(v)``
        returns ∇²f(x)[free][:, free] @ v (an operator, where SciPy's ``hessp(x, p)``
        returns the product itself). If ``H`` has a method ``restrict(keep)`` (boolean
        mask over its coordinates) it is used to shrink the operator during the corrective
        cycle (the thesis' reference code caches a column slice); otherwise ``hessp`` is called
        again. ``hessp`` is always called at the point of the latest ``f_grad`` call.
    x0 : array-like of shape (n,)
        Starting point (the thesis starts at 0).
    mu : float
        Penalty strength μ > 0.
    penalty_weights : array-like of shape (n,), optional
        Non-negative weights wᵢ (default 1). Coordinates with wᵢ = 0 are unpenalized: always
        free, never projected (e.g. an intercept).
    lipschitz : float or callable, optional
        Upper bound L on the Lipschitz constant of ∇f for the ISTA globalization (Algorithm 2;
        the theory needs L ≥ the true constant); a callable is called once, at the
        first ISTA step (a start that is already optimal costs no bound). If None, twice a
        power-iteration estimate at the first iterate. Either is doubled whenever the ISTA
        point fails the descent test (a given bound then with a RuntimeWarning: it was below
        the true constant, and keeping it would let φ increase).
    tol : float, default=1e-6
        Stop when ‖x − S_μw(x − ∇f(x))‖_∞ ≤ tol (the semismooth measure). The default
        1e-6 is the one the thesis' reference code documents; the 1e-8 it uses is
        :class:`~sparsekit.linear_model.L1LogisticOBA`'s.
    max_iter : int, default=500
        Maximum number of outer iterations.
    eta : float, default=0.01
        Initial free fraction: τ⁰ = max(1, ⌊η · #penalized⌋, nnz(x0)) (the last term
        is ours, for warm starts).
    tau0_max : int, optional
        Cap on the ⌊η · #penalized⌋ term of τ⁰ (ours; None: the thesis' 1% of the columns).
        On wide data whose solution is far sparser than 1% of its columns, the first
        iterations otherwise free thousands of variables that the corrective cycles and the
        following iterations remove again; τ's doubling recovers a larger support in a few
        iterations.
    tau0_flat : float or None, default=1/3
        If the median violation ``|gᵢ|`` over 𝒰 at x0 is at least ``tau0_flat`` times the largest
        (a flat profile, where ranking the violators says little), the first free set is all
        of 𝒰 (ours; None: always the thesis' τ⁰). Where every coordinate violates about
        equally, the first subspace Newton steps on the top 1% fit the data with a few
        coordinates and the later ones must undo that; where the violations differ by
        orders of magnitude, ranking them pays.
    tau_growth : float, default=0.0
        τ doubles after an iteration whose corrective cycle removed at most
        ``tau_growth · τ̂`` variables. 0 is the thesis rule (double only without corrections);
        a positive value lets the free set grow faster on problems with many nonzeros.
    tau_boost : int, default=1
        Extra factor on that growth after an iteration whose corrective cycle removed nothing
        (1: the thesis' doubling; 2: τ quadruples, ours: fewer iterations spent growing the
        free set when w* is dense).
    cg_rtol : float, default=0.1
        CG stopping ratio on the ∞-norm residual, as in the thesis and its reference code.
    cg_rtol_explicit : float, optional
        CG stopping ratio when ``H`` is a formed matrix (``H.is_explicit``; default
        ``cg_rtol``). Its products then cost ``O(|F|²)`` against the Gram's ``O(n|F|²)`` formation,
        so solving the Newton system more exactly is nearly free and saves outer iterations
        (ours, not in the thesis).
    cg_maxiter : int, default=1000
        CG iteration cap, as in the thesis' reference code.
    cg_maxiter_explicit : int, optional
        CG iteration cap when ``H`` is a formed matrix (default ``cg_maxiter``): a solver
        that caps the matrix-free CG low, where each product costs a pass over the data,
        can still solve a formed system to ``cg_rtol_explicit``. On a formed matrix of 200
        rows or more, a CG still short of that after 100 iterations (the ill-conditioned
        Hessians of nearly separable classes) ends by a Cholesky solve instead: the Newton
        step, or where the segment to it from the CG's iterate meets the trust radius.
    hess_reg : float, default=1e-8
        Hessian regularization: CG solves (∇²f_FF + hess_reg I) d = −g_F, as in the thesis.
    reg_decay : bool, default=False
        Use min(hess_reg, optimality measure) as the Hessian regularization, so that it
        vanishes near the solution (the regularized Newton methods' μₖ ∝ ‖gₖ‖ choice; not in
        the thesis). With the fixed 10⁻⁸, directions of smaller curvature only move by a
        fraction of their Newton step each iteration, and weakly regularized, nearly separable
        problems crawl in their last digits.
    cg_radius : float, default=1e3
        Steihaug radius of the CG (the largest, with ``adaptive_radius``), as in the thesis.
    radius_norm : {"euclidean", "diagonal"}, default="euclidean"
        The norm in which the radius is measured: the Euclidean one (the thesis), or
        ‖d‖_D = (Σᵢ Dᵢ dᵢ²)^½ with D the diagonal of ∇²f_FF + ``hess_reg`` I (a scaled,
        elliptical trust region, Nocedal & Wright 2006, section 4.5, in the norm of the
        Jacobi-preconditioned CG's iterates, section 7.2 [2]_; ours, not in the thesis),
        which needs an ``H`` with ``diagonal()`` or a formed matrix. It does not change
        when coordinates are rescaled, and where a few coordinates have a tiny curvature
        (weights of words that occur in a few documents of one class) the Euclidean radius
        is met by the first CG step along those coordinates alone, so that the steps move
        little else; ``cg_radius`` is then in the units of √f.
    adaptive_radius : bool, default=True
        Update the CG's Steihaug radius as a trust region (Nocedal & Wright, Algorithm 4.1):
        with ρ = (φ(x) − φ(x̂)) / (q(x) − q(x̂)) at the OBA point x̂, the radius becomes a
        quarter of the step when ρ < 1/4 and doubles (up to ``cg_radius``) when ρ > 3/4 and
        the step reached it. Not in the thesis (which keeps 10³): on nearly separable
        data the subspace Hessian has directions of tiny curvature, so CG steps reach the
        fixed radius, the true objective rises where the model predicted a fall and
        Algorithm 2 slides back towards the short ISTA step.
    precondition : bool, default=True
        Precondition the CG by the Hessian diagonal when ``H`` offers ``diagonal()`` (not
        in the thesis, whose CG is plain; the stopping rule is unchanged).
    pin_crossings : bool, default=True
        When the model search shortens a step that carries nonzero free coordinates across
        zero, also try the direction that pins those coordinates at zero and minimizes the
        model over the others, pinning again what that direction crosses and, on a formed
        Hessian, releasing what the model pushes back into its orthant (at most 10 solves:
        the model's minimizer over the closed orthant), and keep whichever step gives the
        lower model value (ours, not in the thesis). The projection sets crossing
        coordinates to zero and undoes the balance the Newton direction struck among the
        coordinates; the pinned direction accounts for it. On weakly regularized
        multinomial problems the first iterations' steps cross many coordinates and the
        model search otherwise accepts only small fractions of them.
    ista_floor : float, default=1e-4
        Backtracking floor ε on the step towards the OBA point.
    shift_invariant : int, optional
        The size K of blocks of consecutive coordinates along which f is invariant to a
        common shift, f(x + c 1_B) = f(x) for every block B and every c (``n`` a multiple
        of K), as a softmax model's K class weights of a feature and its K intercepts are.
        Every point where f is evaluated is first shifted, block by block, by a weighted
        median of the block's coordinates (weights μwᵢ), the coordinate nearest 0 among
        those that are one: the shift lowers the penalty as far as any can and leaves an
        exact zero in the block; f and ∇f are the same there. A block with a zero that is a
        median, or no weight, is left alone. The Hessian is singular along these directions
        and the Newton steps, blind to them, leave a block's coordinates drifting by
        rounding off the sparsest solution, where the objective cannot see the difference:
        a coordinate that should be zero stays at a tiny nonzero value and the optimality
        measure stalls (ours, not in the thesis). At a minimizer 0 is a median of every
        block, so a shift moves a solution only where the penalty is flat, to another with
        the same objective and one zero more (a block of K/2 positive and K/2 negative
        coordinates, K even).
    confirm : callable, optional
        ``confirm(state) -> bool``, asked at each iterate whose optimality measure is at
        most ``tol`` (``state`` an ``OptimizeResult`` holding ``x``, a view of the iterate
        to copy if kept, ``fun``, ``optimality`` and ``nit``): the solve stops there only
        when it returns True, and otherwise goes on, for a test that the measure cannot
        make, such as a duality gap (ours). The iterates do not depend on ``tol``: with a
        test that passes at a larger ``tol`` wherever it passes at a smaller one (a gap
        below a fixed share of F, or a measure below ``tol`` / 100), a smaller ``tol``
        stops at the same iterate or a later one, whose F is not larger.
    callback : callable, optional
        Called after each iteration with a copy of ``x``, or, when its only parameter is
        named ``intermediate_result``, with an ``OptimizeResult`` holding ``x``, ``fun``,
        ``jac``, ``nit`` and ``nfev`` (SciPy's convention). Raising ``StopIteration`` stops
        the solver with status 99.
    verbose : int, default=0
        Print one line per iteration when > 0.

    Returns
    -------
    OptimizeResult
        ``x``, ``fun`` (F = f + μ‖x‖₁ weighted), ``jac`` (∇f), ``optimality`` (the measure),
        ``success``, ``status`` (0: converged, 1: ``max_iter`` reached, 2: stalled, as
        neither F decreased by more than its rounding nor the measure fell below half its
        least value in 20 iterations, where tol is below the rounding error of ∇f; 99: stopped
        by the callback), ``message``, ``nit``, ``nfev`` (``f_grad`` calls), ``ncg``
        (CG iterations), ``nhessp`` (Hessian products), ``corrective_loops`` (passes of the
        corrective cycle, one entry per iteration; 1 = no correction), ``n_ista`` (iterations
        that fell back to the ISTA point), ``lipschitz`` (None when no ISTA step was made).

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 2 (OBA, Algorithms 1 and 2).
    .. [2] Nocedal, J., & Wright, S. J. (2006). Numerical Optimization (2nd ed.). Springer,
       sections 4.5 (scaled trust regions) and 7.2 (Steihaug's CG, preconditioned).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.optimize import minimize_oba
    >>> A = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> c = np.array([1.0, -0.05])
    >>> f_grad = lambda x: (0.5 * x @ A @ x - c @ x, A @ x - c)
    >>> hessp = lambda x, free: (lambda v: A[np.ix_(free, free)] @ v)
    >>> res = minimize_oba(f_grad, hessp, np.zeros(2), mu=0.1)
    >>> res.success, res.x.round(4)
    (True, array([ 0.5, -0.2]))
    """
    x, muw = _checked_start(x0, mu, penalty_weights, shift_invariant)
    n = x.size
    cg_maxiter_explicit = _checked_controls(
        max_iter=max_iter, tol=tol, lipschitz=lipschitz, tau0_max=tau0_max,
        tau0_flat=tau0_flat, eta=eta, cg_rtol=cg_rtol, cg_rtol_explicit=cg_rtol_explicit,
        cg_maxiter=cg_maxiter, cg_maxiter_explicit=cg_maxiter_explicit,
        radius_norm=radius_norm, confirm=confirm)
    f_grad = checked_f_grad(f_grad, n, "f_grad")
    hessp = checked_hessp(hessp, "hessp")
    report = Callback(callback)

    def confirmed(x, fun, opt, nit):
        return confirm is None or bool(confirm(OptimizeResult(x=x, fun=fun, optimality=opt,
                                                              nit=nit)))
    shift = _shifter(muw, shift_invariant)
    shift(x)
    # τ⁰ = η · #penalized up to tau0_max, and at least the support of a warm start (a
    # path restarts near the previous solution: doubling up to its support would waste time)
    tau = int(eta * np.count_nonzero(muw))
    if tau0_max is not None:
        tau = min(tau, tau0_max)
    tau = max(1, tau, np.count_nonzero(x[muw > 0]))

    f, G = f_grad(x)
    if not (np.isfinite(f) and np.all(np.isfinite(G))):
        raise ValueError("f_grad(x0) is not finite")
    pen = K.weighted_l1(muw, x)   # the penalty of x, carried from each step's trial
    ncg, nhessp, n_ista = 0, 0, 0
    globalization = _Globalization(f_grad, hessp, muw, shift, lipschitz, ista_floor)
    g, zeta = np.empty(n), np.empty(n)
    code = np.empty(n, dtype=np.int8)
    corrective = []
    status, k = 1, 0
    slack = 0.0
    radius = cg_radius
    best_phi = best_opt = math.inf
    since = 0   # iterations since φ or the optimality measure last made progress
    for k in range(max_iter + 1):
        opt = K.subgradient_and_sets(x, G, muw, g, zeta, code)
        phi = f + pen
        if verbose > 0:
            print(f"OBA it {k:4d}  F={phi:.12e}  opt={opt:.3e}  tau={tau}")
        if opt <= tol and confirmed(x, phi, opt, k):
            status = 0
            break
        since += 1
        if phi < best_phi - 1e-14 * abs(phi) or opt < 0.5 * best_opt:
            since = 0
        best_phi, best_opt = min(best_phi, phi), min(best_opt, opt)
        if since >= STALL_ITERATIONS:
            status = 2
            break
        if k == max_iter:
            break
        if k == 0 and tau0_flat is not None and _flat_violations(code, g, tau0_flat):
            tau = max(tau, int(np.count_nonzero(code == 2)))
        slack = 1e-14 * abs(phi)

        free, new = _free_set(code, g, tau)
        H = hessp(x, free)
        reg = min(hess_reg, opt) if reg_decay else hess_reg
        cg_opts = (reg, cg_rtol, cg_maxiter, radius, precondition, radius_norm)
        explicit_opts = (reg, cg_rtol_explicit or cg_rtol, cg_maxiter_explicit, radius,
                         precondition, radius_norm)
        n_new = np.count_nonzero(new)
        newly = free[new]
        d, Hd, free_c, H, loops, it = _corrective_cycle(H, hessp, x, g, zeta, free, new,
                                                        cg_opts, explicit_opts)
        ncg += it
        nhessp += it
        corrective.append(loops)
        if free.size - free_c.size <= tau_growth * n_new:
            tau = min(tau * 2 * (tau_boost if free.size == free_c.size else 1), n)
        free = free_c
        x_hat, alpha, q_hat, q_0, it = _model_search(x, G, zeta, muw, free, d, Hd, H, reg,
                                                      pen)
        nhessp += it
        pinned = (_pinned_step(H, hessp, x, g, zeta, free, d, np.isin(free, newly), cg_opts,
                               explicit_opts) if pin_crossings and alpha < 1.0 else None)
        if pinned is not None:
            delta, Hdelta, it, products = pinned
            ncg += it
            nhessp += products
            search = _model_search(x, G, zeta, muw, free, delta, Hdelta, H, reg, pen)
            nhessp += search[4]
            if search[2] < q_hat:
                x_hat, alpha, q_hat = search[:3]

        # 5. ISTA globalization (Algorithm 2) with Γ of (2.14)
        trial, f_t, G_t, pen_t, phi_hat, abar = globalization.step(x, f, G, x_hat, phi, slack)
        if not (np.isfinite(f_t) and np.all(np.isfinite(G_t))):
            raise FloatingPointError(f"f_grad is not finite at iteration {k + 1}, even at the "
                                     "ISTA point")
        n_ista += abar < 1.0
        if adaptive_radius and q_0 - q_hat > 10.0 * slack:
            step = math.sqrt(squared_norm(x_hat[free] - x[free],
                                          radius_metric(H, reg, radius_norm)))
            radius = _updated_radius(radius, (phi - phi_hat) / (q_0 - q_hat), step, cg_radius)
        x, f, G, pen = trial, f_t, G_t, pen_t
        if report.notify(x, fun=f + pen, jac=G, nit=k + 1, nfev=1 + globalization.nfev):
            k += 1
            opt = K.subgradient_and_sets(x, G, muw, g, zeta, code)
            status = 0 if opt <= tol and confirmed(x, f + pen, opt, k) else STOPPED_BY_CALLBACK
            break

    return OptimizeResult(
        x=x, fun=f + pen, jac=G, optimality=opt, success=status == 0,
        status=status, message=_MESSAGES[status], nit=k, nfev=1 + globalization.nfev,
        ncg=ncg, nhessp=nhessp + globalization.nhessp,
        corrective_loops=np.asarray(corrective, dtype=np.int64), n_ista=int(n_ista),
        lipschitz=globalization.L)
