"""NQN: nonsmooth bound-constrained limited-memory quasi-Newton (Keskar 2017, chapter 3).

Solves ``min f(x) s.t. l ≤ x ≤ u`` for continuous, possibly nonsmooth and nonconvex ``f``
that is differentiable at the iterates (Keskar 2017, thesis chapter 3). Each iteration
(Algorithm 5):

1. predicts the active set 𝒜 (Variant 1: 𝓑(∇f); 2: 𝓑(g̃) ∪ 𝓑(∇f) with the
   ε-minimum-norm subgradient g̃ over the last ``M`` gradients (3.9); 3: Algorithm 3
   started from 𝓑(∇f), the default; 4: Algorithm 3 started from (3.9));
2. computes the L-BFGS subspace step (3.2) on the free variables with the compact
   representation and ``B⁰ = θI``, ``θ = max(c, min(‖∇f‖_∞, 1e8 c))``, where the thesis has
   ``c = 1`` and here ``c = max(1, ‖∇f(x⁰)‖_∞ / 1e8)``, so that an objective scaled by a
   huge factor takes the steps of the unscaled one;
3. runs the projected weak-Wolfe line search (Algorithm 4, with the fixes listed in its module);
4. stores ``(s, y)`` unless ``sᵀy ≤ ε_skip ‖s‖‖y‖``.

Termination flags follow the thesis' reference code; see :data:`MESSAGES`.
Changes that make the method cheaper and more reliable than the thesis' version:

* an optional stall test (flag 9; ``stall_tol = 0``, off, by default): the run ends when
  the last ``stall_iter`` iterations together decreased f by at most ``stall_tol`` times
  the decrease since the start, ``f_{k−w} − f_k ≤ τ (f(x⁰) − f_k)``. On nonsmooth problems
  NQN converges linearly and ends, without this test, only when the line search fails at
  the resolution of x or the relative decrease falls below ``ftol``, after spending most
  of its evaluations on the last digits of f. The test measures accuracy relative to the
  initial gap, as the thesis' benchmark protocol does (it uses τ = 1e-8), not
  stationarity: from a start far from the solution the first steps make the total
  decrease huge, and the test can hold far from any stationary point. A stall is
  therefore reported with ``success=False``;
* the first trial step is ``min(1, 2 α_prev)`` instead of 1 (``step0="previous"``;
  ``"unit"`` gives the thesis' choice): with θ from the gradient norm the L-BFGS steps of
  late nonsmooth iterations are far too long, and bisecting down from 1 cost the authors'
  code 15–19 evaluations per iteration;
* the first trial of the first iteration moves the largest coordinate by exactly 1, as
  L-BFGS-B's first step has unit length, and after a memory reset by at most 1: with θ
  clipped to a band a steep objective (``1e50 (x − 1)²``) would otherwise send the first
  trial 1e42 away, and a flat one (``1e-8 (x − 1)²``) move it by 1e-8. When ``‖∇f(x⁰)‖_∞``
  is in [1, 1e8] this is the thesis' step;
* a line search that finds no decrease along a direction whose predicted decrease
  ``−∇fᵀd̄`` (unit step) is at most ``ftol · max(|f|, 1)`` ends the run with flag 7: f
  cannot be reduced by the relative amount ``ftol`` asks for;
* where f is NaN or infinite beyond the iterate (the line search's step cut short where f
  stops being defined, not where it stops decreasing, the curvature condition unmet),
  the decrease below ``ftol`` that follows ends the run with flag 5, not a success: the
  steps shrink at the edge of f's domain, not at a minimum;
* when the direction is not a descent direction, the step is not finite, or the line
  search finds no decrease down to the resolution of x, the L-BFGS memory is discarded
  and the iteration is retried, first along the projected gradient (the variant's own
  prediction of the binding set, no gradient sample), then along the ε-minimum-norm
  subgradient of the gradients at the last M iterates and at the failed trial points (a
  gradient-sampling step); only a third failure in a row ends the run (``restart=True``,
  the default; ``restart=False`` gives the thesis' behaviour).
"""
import math
import warnings
from collections import deque
from collections.abc import Mapping
from numbers import Real

import numpy as np
from scipy.optimize import OptimizeResult, OptimizeWarning

from .._cython import _nqn_kernels as _k
from ._eps_subgradient import min_norm_subgradient
from ._nqn_linesearch import FAILED, WOLFE, projected_wolfe
from ._nqn_memory import FreeSetLBFGS
from ._bounds import parse_bounds
from ._result import (CALLBACK_MESSAGE, STOPPED_BY_CALLBACK, Callback, gradient_array,
                      objective_value, returned_pair)

#: Termination flags (0–7 as in the authors' code, 9 for a stall, 99 for a callback stop,
#: with SciPy's status and message).
MESSAGES = {
    0: "CONVERGENCE: NORM OF PROJECTED GRADIENT <= GTOL",
    1: "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT",
    2: "STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT",
    3: "ABNORMAL: NO FEASIBLE DESCENT DIRECTION AT A NON-STATIONARY POINT",
    4: "ABNORMAL: LINE SEARCH FOUND NO DECREASE",
    5: "ABNORMAL: NaN OR INF IN FUNCTION OR GRADIENT",
    6: "ABNORMAL: NUMERICAL ERROR IN THE SUBSPACE STEP",
    7: "CONVERGENCE: REL_REDUCTION_OF_F <= FTOL",
    STOPPED_BY_CALLBACK: CALLBACK_MESSAGE,
    9: "STOP: DECREASE OVER STALL_ITER ITERATIONS <= STALL_TOL * TOTAL DECREASE",
}

_DEFAULTS = {
    "maxcor": 10,
    "ftol": 2.220446049250313e-09,
    "gtol": 1e-5,
    "maxfun": 15000,
    "maxiter": 15000,
    "maxls": 20,
    "variant": 3,
    "sample_size": 20,
    "c1": 1e-8,
    "c2": 0.9,
    "eps_abs": 1e-16,
    "eps_rel": 1e-6,
    "eps_skip": 1e-8,
    "theta": "thesis",
    "step0": "previous",
    "restart": True,
    "stall_iter": 10,
    "stall_tol": 0.0,
    "eps": 1e-8,
    "disp": False,
}


def _parse_options(options, keywords):
    """The checked options: ``options`` and ``keywords``, which are the options as keywords
    too and what :func:`scipy.optimize.minimize` passes to a callable ``method``: its
    options one by one, ``tol`` (``ftol`` and ``gtol`` where not given, as ``minimize``
    sets them for L-BFGS-B), ``hess`` and ``hessp`` (unused: a warning, as ``minimize``
    gives for L-BFGS-B) and ``constraints`` (an error unless empty)."""
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
    options = dict(options or {})
    for key in ("hess", "hessp"):
        if keywords.pop(key, None) is not None:
            warnings.warn(f"NQN does not use Hessian information ({key}): ignored",
                          RuntimeWarning, stacklevel=3)
    if keywords.pop("constraints", None):
        raise ValueError("NQN takes bounds only, not constraints")
    tol = keywords.pop("tol", None)
    for key, value in keywords.items():
        if key in options:
            raise TypeError(f"option {key!r} given twice, in options and as a keyword")
        options[key] = value
    if tol is not None:
        options.setdefault("ftol", tol)
        options.setdefault("gtol", tol)
    opts = dict(_DEFAULTS)
    for key, value in options.items():
        if key not in opts:
            warnings.warn(f"Unknown solver options: {key}", OptimizeWarning, stacklevel=3)
            continue
        opts[key] = value
    if opts["variant"] not in (1, 2, 3, 4):
        raise ValueError(f"variant must be 1, 2, 3 or 4, got {opts['variant']!r}")
    if opts["theta"] not in ("thesis", "code", "scaled"):
        raise ValueError(f"theta must be 'thesis', 'code' or 'scaled', got {opts['theta']!r}")
    if not 0.0 < opts["c1"] < opts["c2"] < 1.0:
        raise ValueError("the Wolfe parameters need 0 < c1 < c2 < 1")
    if not opts["stall_tol"] >= 0.0:
        raise ValueError(f"stall_tol must be >= 0, got {opts['stall_tol']!r}")
    for key in ("maxcor", "maxfun", "maxiter", "maxls", "sample_size", "stall_iter"):
        value = opts[key]
        # SciPy compares the counts with maxiter and maxfun: any real limit is taken
        # (maxiter=100.1 stops after 101 iterations); the sizes must be whole numbers
        limit = key in ("maxiter", "maxfun")
        if (isinstance(value, bool) or not isinstance(value, Real)
                or not (limit and math.isfinite(value) or float(value).is_integer())
                or value < (0 if key == "maxiter" else 1)):  # maxiter=0: x0 evaluated only
            raise ValueError(f"{key} must be a positive {'number' if limit else 'integer'}"
                             f", got {value!r}")
        opts[key] = math.ceil(value)
    for key in ("gtol", "ftol", "eps_abs", "eps_rel", "eps_skip"):
        if not opts[key] >= 0.0:
            raise ValueError(f"{key} must be >= 0, got {opts[key]!r}")
    if not opts["eps"] > 0.0:   # eps=0 skipped every difference: g = 0, a false success
        raise ValueError(f"eps must be > 0, got {opts['eps']!r}")
    if opts["step0"] not in ("previous", "unit"):
        raise ValueError(f"step0 must be 'previous' or 'unit', got {opts['step0']!r}")
    return opts


class _Objective:
    """``x -> (f, g)`` with evaluation counts, from ``fun`` and ``jac`` as in SciPy."""

    def __init__(self, fun, jac, args, eps, lo, hi):
        args = args if isinstance(args, tuple) else (args,)  # as scipy.optimize.minimize
        self.fun, self.jac, self.args, self.eps = fun, jac, args, eps
        self.lo, self.hi = lo, hi
        self.nfev = self.njev = 0
        # calls of fun per point: 1 + n with finite differences (the line search's
        # budget is in points, maxfun in calls)
        self.evals_per_point = 1 if jac is True or callable(jac) else 1 + lo.size

    def _value(self, x):
        self.nfev += 1
        return objective_value(self.fun(x.copy(), *self.args), "fun")

    def _forward_difference(self, x, f):
        """One-sided differences with every point inside the bounds: forward, else
        backward, else the wider side shortened to fit; 0 for a fixed variable (lo == hi)."""
        g = np.zeros_like(x)
        for i in range(x.size):
            h = self.eps * max(1.0, abs(x[i]))
            up, down = self.hi[i] - x[i], x[i] - self.lo[i]
            if h > up:
                h = -h if down >= h else (up if up >= down else -down)
            if h == 0.0:
                continue
            xi = x.copy()
            xi[i] += h
            g[i] = (self._value(xi) - f) / h
        return g

    def __call__(self, x):
        # the user's functions get copies, as from SciPy: one that edits its argument in
        # place must not move the iterate
        if self.jac is True:
            self.nfev += 1
            f, g = returned_pair(self.fun(x.copy(), *self.args), "with jac=True, fun",
                                 "(f(x), gradient)")
            f = objective_value(f, "fun")
        elif callable(self.jac):
            f = self._value(x)
            g = self.jac(x.copy(), *self.args)
        else:
            f = self._value(x)
            g = self._forward_difference(x, f) if math.isfinite(f) else np.full_like(x, np.nan)
        self.njev += 1
        # a copy: the solver's updates must not reach the user's array
        g = np.array(gradient_array(g, "jac" if callable(self.jac) else "fun").reshape(-1))
        if g.shape != x.shape:
            raise ValueError(f"the gradient has shape {g.shape}, expected {x.shape}")
        return f, g


def _theta(g, kind, mem, scale=1.0):
    """θ of ``B⁰ = θI``; the thesis' choice clips ‖g‖_∞ to ``[scale, 1e8 scale]``."""
    if kind == "code":
        return max(1.0, float(np.linalg.norm(g)))
    if kind == "scaled" and len(mem):
        return mem.last_curvature()
    return max(scale, min(float(np.max(np.abs(g))), 1e8 * scale))


def minimize_nqn(fun, x0, args=(), jac=None, bounds=None, callback=None, options=None,
                 **keywords):
    """Minimize a (possibly nonsmooth) function subject to bounds with NQN.

    Read more in the :ref:`User Guide <nqn>`.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> float``, or ``-> (float, ndarray)`` when ``jac is True``.
    x0 : array_like of shape (n,)
        Starting point; it is projected onto the box.
    args : tuple
        Extra arguments for ``fun`` and ``jac``.
    jac : bool, callable or None
        ``True``: ``fun`` returns ``(f, g)``; callable: ``jac(x, *args) -> g``;
        ``None``/``False``: forward differences (``n + 1`` evaluations per gradient).
    bounds : sequence of (lo, hi), scipy.optimize.Bounds or None
        ``None`` entries mean no bound.
    callback : callable or None
        ``callback(xk)`` after each iteration, or ``callback(intermediate_result=res)``
        with an ``OptimizeResult`` holding ``x, fun, jac, nit`` when its only parameter
        is named ``intermediate_result`` (positional or keyword-only), as in SciPy.
        Raising ``StopIteration`` ends the run with SciPy's status 99 and message.
    options : dict or None
        ``maxcor`` (m, 10), ``ftol`` (2.2e-9), ``gtol`` (1e-5, on ‖T(x, −∇f)‖_∞),
        ``maxfun`` (15000), ``maxiter`` (15000), ``maxls`` (20), ``variant`` (3),
        ``sample_size`` (M, 20), ``c1`` (1e-8), ``c2`` (0.9), ``eps_abs`` (1e-16),
        ``eps_rel`` (1e-6), ``eps_skip`` (1e-8), ``theta`` (``"thesis"``:
        max(1, min(‖g‖_∞, 1e8)); ``"code"``: max(1, ‖g‖₂); ``"scaled"``: yᵀy/sᵀy of the
        newest pair), ``step0`` (``"previous"``: first trial min(1, 2α_prev);
        ``"unit"``: 1), ``restart`` (True), ``stall_iter`` (w, 10) and ``stall_tol``
        (τ, 0: off; the thesis protocol uses 1e-8): stop with flag 9, not a success, when
        ``f_{k−w} − f_k ≤ τ (f(x⁰) − f_k)``, ``eps`` (finite-difference step, 1e-8),
        ``disp`` (False). ``maxls`` bounds the trials once a decrease is found.
        Table 3.1 of the thesis uses m = M = 20. Unknown keys raise an
        ``OptimizeWarning`` and are ignored, as in SciPy.
    **keywords
        The options as keywords, and what :func:`scipy.optimize.minimize` passes to a
        callable ``method``, so that ``minimize(fun, x0, method=minimize_nqn, jac=...,
        bounds=..., tol=..., options={...})`` runs NQN: ``tol`` sets ``ftol`` and ``gtol``
        where they are not given (as ``minimize`` sets them for L-BFGS-B), ``hess`` and
        ``hessp`` are ignored with a ``RuntimeWarning`` (NQN builds its own curvature
        pairs), and ``constraints`` other than none raise a ValueError (bounds only).

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x, fun, jac, nit, nfev, njev, status`` (see :data:`MESSAGES`), ``success``
        (status 0 or 7: the stopping rules of L-BFGS-B), ``message``, ``nrestart``
        (memory resets after a failed step)
        and ``active`` (boolean mask of the binding set 𝓑(∇f) (3.4) at ``x``).

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 3 (NQN).
    .. [2] Byrd, R. H., Lu, P., Nocedal, J. & Zhu, C. (1995). A limited memory algorithm for
       bound constrained optimization. SIAM J. Sci. Comput. 16(5) (L-BFGS-B, the interface).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import rosen, rosen_der
    >>> from sparsekit.optimize import minimize_nqn
    >>> res = minimize_nqn(rosen, np.zeros(4), jac=rosen_der, bounds=[(0, 0.5)] * 4)
    >>> res.success, res.x.round(4)
    (True, array([0.5   , 0.2622, 0.078 , 0.0061]))
    >>> res = minimize_nqn(lambda x: abs(x[0] - 1) + 2 * abs(x[1]), [3.0, 2.0])  # nonsmooth
    >>> (res.x + 0.0).round(4)
    array([ 1., -0.])
    """
    opts = _parse_options(options, keywords)
    report = Callback(callback)
    x = np.array(x0, dtype=float).reshape(-1)
    n = x.size
    if n == 0:
        raise ValueError("x0 must not be empty")
    if not np.isfinite(x).all():
        raise ValueError("x0 must be finite")
    lo, hi = parse_bounds(bounds, n)
    _k.project_point(x.copy(), lo, hi, x)
    obj = _Objective(fun, jac, args, float(opts["eps"]), lo, hi)
    f, g = obj(x)
    f_start = f
    # the band [1, 1e8] of the thesis' θ, moved up with a steeper objective (f scaled by
    # c > 1e8 / ‖∇f(x⁰)‖_∞ takes the steps it takes unscaled)
    theta_scale = max(1.0, float(np.max(np.abs(g), initial=0.0)) / 1e8)
    recent = deque([f], maxlen=opts["stall_iter"] + 1)
    mem = FreeSetLBFGS(n, opts["maxcor"])
    sample = deque([g], maxlen=opts["sample_size"])
    g_step = g
    active = np.zeros(n, dtype=np.uint8)
    added = np.empty(n, dtype=np.intc)
    p, d = np.empty(n), np.empty(n)
    nit = nrestart = 0
    alpha_prev = 1.0
    retry, trials = 0, []
    status = None
    while status is None:
        if not (math.isfinite(f) and np.isfinite(g).all()):
            status = 5
            break
        if _k.projected_gradient_norm(x, g, lo, hi) <= opts["gtol"]:
            status = 0
            break
        if nit >= opts["maxiter"]:
            status = 1
            break
        if obj.nfev >= opts["maxfun"]:
            status = 2
            break
        flag = _direction(x, g, g_step, lo, hi, mem, sample if retry == 0 else None, active,
                          added, p, d, opts, theta_scale)
        if flag is None:
            alpha0 = min(1.0, 2.0 * alpha_prev) if opts["step0"] == "previous" else 1.0
            if not len(mem):    # L-BFGS-B's first step has unit length (here in max norm);
                # after a memory reset the step may be shorter, never longer
                alpha0 = (1.0 if nit == 0 else min(alpha0, 1.0)) / float(np.max(np.abs(d)))
            ls = projected_wolfe(obj, x, f, g_step, d, lo, hi, opts["c1"], opts["c2"],
                                 opts["eps_abs"], opts["eps_rel"], opts["maxls"],
                                 max(1, (opts["maxfun"] - obj.nfev) // obj.evals_per_point),
                                 alpha0)
            if ls.status == FAILED:
                flag = 2 if obj.nfev >= opts["maxfun"] else 4
                trials.extend(ls.trial_grads)
                if flag == 4 and -float(g_step @ d) <= opts["ftol"] * max(abs(f), 1.0):
                    # the model's decrease for the full step is below ftol
                    status = 5 if ls.undefined_beyond else 7
                    break
        if flag is not None:
            if flag == 2 or not opts["restart"] or retry == 2:
                status = flag
                break
            retry += 1
            nrestart += 1
            mem.reset()
            g_step = g if retry == 1 else _fallback_gradient(g, sample, trials)
            continue
        retry, trials = 0, []
        g_step = ls.g
        alpha_prev = ls.alpha if len(mem) else 1.0
        s, y = ls.x - x, ls.g - g
        f_old = f
        x, f, g = ls.x, ls.f, ls.g
        nit += 1
        if not np.isfinite(g).all():
            status = 5
            break
        if float(s @ y) > opts["eps_skip"] * np.linalg.norm(s) * np.linalg.norm(y):
            mem.push(s, y)
        sample.append(g)
        if opts["disp"]:
            print(f"NQN it {nit:5d}  f {f: .10e}  nfev {obj.nfev:7d}  |A| {int(active.sum())}")
        if report.notify(x, fun=f, jac=g, nit=nit, nfev=obj.nfev):
            status = STOPPED_BY_CALLBACK
            break
        recent.append(f)
        if f_old - f <= opts["ftol"] * max(abs(f_old), abs(f), 1.0):
            status = 5 if ls.undefined_beyond and ls.status != WOLFE else 7
        elif len(recent) == recent.maxlen and recent[0] - f <= opts["stall_tol"] * (f_start - f):
            status = 9
    active[:] = 0
    _k.binding_mask(x, g, lo, hi, active)
    return OptimizeResult(
        x=x, fun=f, jac=g, nit=nit, nfev=obj.nfev, njev=obj.njev, status=status,
        success=status in (0, 7), message=MESSAGES[status], nrestart=nrestart,
        active=active.astype(bool))


def _fallback_gradient(g, sample, trials):
    """Minimum-norm element of the recent gradients and the failed trials' gradients.

    Used for the retry after a failed step: near a kink −∇f(x) can fail to be a
    descent direction at the resolution of x, while the ε-minimum-norm subgradient
    (3.7)–(3.8) over gradients sampled around x is the steepest-descent direction of
    the ε-subdifferential (the gradient-sampling direction).
    """
    G = [*sample, *(t for t in trials if t is not None and np.isfinite(t).all())]
    if len(G) < 2:
        return g
    return min_norm_subgradient(np.asarray(G))[0]


def _direction(x, g, g_step, lo, hi, mem, sample, active, added, p, d, opts,
               theta_scale=1.0):
    """Active set, subspace step and projected direction ``d = T(x, p)``.

    ``g_step`` is the gradient the quadratic model uses: ``∇f(x)``, or after a failed
    step the fallback of :func:`_fallback_gradient`; ``sample`` (None: not used) holds
    the gradients for the ε-MNSG prediction of Variants 2 and 4; ``theta_scale`` moves θ's
    band (see :func:`_theta`). Returns ``None`` on success, else
    the termination flag 3 (no feasible descent direction) or 6 (numerical failure).
    Variants as in Keskar (2017), section 3.2.6.
    """
    variant = opts["variant"]
    active[:] = 0
    if variant in (2, 4) and sample is not None and len(sample) > 1:
        g_tilde, _ = min_norm_subgradient(np.asarray(sample))
        _k.binding_mask(x, g_tilde, lo, hi, active)
    _k.binding_mask(x, g, lo, hi, active)
    if g_step is not g:
        _k.binding_mask(x, g_step, lo, hi, active)
    mem.sync(active)
    theta = _theta(g_step, opts["theta"], mem, theta_scale)
    try:
        mem.step(g_step, theta, p)
        if variant in (3, 4):
            while True:
                count = _k.correction_set(x, p, lo, hi, active, added)
                if count == 0:
                    break
                mem.fix(added[:count])
                mem.step(g_step, theta, p)
    except np.linalg.LinAlgError:
        return 6
    nnz = _k.project_direction(x, p, lo, hi, d)
    with np.errstate(over="ignore", invalid="ignore"):    # an overflow is flag 6, below
        slope = float(g_step @ d)
    if not (math.isfinite(slope) and np.isfinite(d).all()):
        return 6
    if nnz == 0 or slope >= 0.0:
        return 3
    return None


def fmin_nqn(func, x0, fprime=None, args=(), approx_grad=0, bounds=None, m=10,
             factr=1e7, pgtol=1e-5, epsilon=1e-8, iprint=-1, maxfun=15000, maxiter=15000,
             disp=None, callback=None, maxls=20, variant=3, sample_size=20):
    """NQN with the calling convention of :func:`scipy.optimize.fmin_l_bfgs_b`.

    Parameters
    ----------
    func : callable
        ``func(x, *args)``; returns ``(f, g)`` unless ``fprime`` is given or
        ``approx_grad`` is true.
    x0 : ndarray of shape (n,)
        Starting point (projected onto the bounds).
    fprime : callable, default=None
        ``fprime(x, *args)``, the gradient of ``func`` (then ``func`` returns f only).
    args : tuple, default=()
        Extra arguments of ``func`` and ``fprime``.
    approx_grad : bool, default=False
        Approximate the gradient by forward differences of step ``epsilon`` (then
        ``func`` returns f only).
    bounds : sequence of (min, max) pairs, default=None
        Bounds of each variable; None on a side (or ``bounds=None``) for no bound.
    m : int, default=10
        Number of L-BFGS correction pairs kept.
    factr : float, default=1e7
        Stop when the relative decrease of f falls below ``factr`` times the machine
        epsilon (``ftol = factr · eps``, as in ``fmin_l_bfgs_b``).
    pgtol : float, default=1e-5
        Stop when the largest component of the projected gradient is at most ``pgtol``.
    epsilon : float, default=1e-8
        Finite-difference step, with ``approx_grad``.
    iprint : int, default=-1
        Print one line per iteration when positive and ``disp`` is None.
    maxfun : int, default=15000
        Maximum number of function evaluations.
    maxiter : int, default=15000
        Maximum number of iterations.
    disp : int, default=None
        Print one line per iteration when positive (overrides ``iprint``).
    callback : callable, default=None
        Called after each iteration with the current ``x``, as in SciPy.
    maxls : int, default=20
        Maximum number of line-search trials once a decrease is found.
    variant : int, default=3
        NQN's active-set variant (1–4).
    sample_size : int, default=20
        Gradient-sample size M.

    Returns
    -------
    x : ndarray
        Estimated minimizer.
    f : float
        Value at ``x``.
    d : dict
        ``warnflag`` (0 converged, 1 too many evaluations or iterations, 2 other),
        ``grad``, ``funcalls``, ``nit``, ``task`` (message) and ``status`` (NQN flag).

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 3 (NQN).
    .. [2] Byrd, R. H., Lu, P., Nocedal, J. & Zhu, C. (1995). A limited memory algorithm for
       bound constrained optimization. SIAM J. Sci. Comput. 16(5) (L-BFGS-B, the interface).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import rosen, rosen_der
    >>> from sparsekit.optimize import fmin_nqn
    >>> x, f, info = fmin_nqn(rosen, np.zeros(3), fprime=rosen_der, bounds=[(-1, 0.5)] * 3)
    >>> x.round(4), info["warnflag"]
    (array([0.5   , 0.2574, 0.0663]), 0)
    """
    if fprime is not None:
        jac = fprime
    elif approx_grad:
        jac = None
    else:
        jac = True
    verbose = iprint if disp is None else disp
    res = minimize_nqn(
        func, x0, args=args, jac=jac, bounds=bounds, callback=callback,
        options={"maxcor": m, "ftol": factr * np.finfo(float).eps, "gtol": pgtol,
                 "eps": epsilon, "maxfun": maxfun, "maxiter": maxiter, "maxls": maxls,
                 "variant": variant, "sample_size": sample_size,
                 "disp": bool(verbose is not None and verbose > 0)})
    warnflag = 0 if res.success else 1 if res.status in (1, 2) else 2
    d = {"grad": res.jac, "task": res.message, "funcalls": res.nfev, "nit": res.nit,
         "warnflag": warnflag, "status": res.status}
    return res.x, res.fun, d
