"""Damped truncated (semismooth) Newton-CG for smooth or piecewise-quadratic objectives."""
import numpy as np
from scipy.optimize import OptimizeResult

from ._cg import steihaug_cg
from ._result import (CALLBACK_MESSAGE, STOPPED_BY_CALLBACK, Callback, checked_f_grad,
                      checked_operator, returned_pair)

MESSAGES = {
    0: "max|grad| <= tol",
    1: "maximum number of iterations reached",
    2: "line search failed (the objective does not decrease)",
    7: "relative reduction of the objective below 64 eps",
    STOPPED_BY_CALLBACK: CALLBACK_MESSAGE,
}

#: sufficient-decrease constant of the Armijo test (Nocedal & Wright 2006, eq. 3.4)
_ARMIJO_C1 = 1e-4
#: a Newton system is given up after this many hundredfold increases of the damping
_DAMPING_TRIALS = 8
#: CG steps per Newton system at most (scikit-learn's newton-cg inner cap): a truncated
#: step is still a descent direction, and on ill-conditioned sparse problems the exact
#: solve can take thousands of products
_MAX_CG = 200


def minimize_newton_cg(fun, x0, hessp_at, *, tol=1e-6, max_iter=1000, callback=None):
    """Minimize ``fun`` by damped truncated Newton with CG and Armijo backtracking.

    Each step approximately solves ``(H + c ||g|| I) d = -g`` by CG, stopped once the
    residual is below ``min(0.5, sqrt(||g||)) ||g||`` (the forcing term of Eisenstat &
    Walker 1996, Euclidean norms), then backtracks by halving.
    The Levenberg-Marquardt damping ``c ||g||`` keeps the step bounded where the
    (generalized) Hessian is nearly singular, such as along an unpenalized intercept that
    no active row constrains, and vanishes with ``g``, keeping the fast local rate
    (Li, Fukushima, Qi & Yamashita 2004); ``c`` shrinks tenfold after a full step, grows
    tenfold after a step below 1/4 and a hundredfold after a failed line search.

    Read more in the :ref:`User Guide <newton_cg>`.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, grad)``.
    x0 : ndarray of shape (n,)
        Starting point (not modified).
    hessp_at : callable
        ``hessp_at(x) -> (hessp, n_active)``: the (generalized) Hessian-vector product at
        ``x`` and a count reported to the callback (the active rows of a piecewise
        quadratic loss, for instance).
    tol : float, default=1e-6
        Stop when ``max|grad| <= tol`` (L-BFGS-B's ``gtol`` rule).
    max_iter : int, default=1000
        Maximum number of Newton steps.
    callback : callable, optional
        SciPy's convention: ``callback(intermediate_result)`` receives an
        ``OptimizeResult`` with ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``ncg`` (CG
        steps of the last system) and ``n_active``; any other callable receives ``xk``.
        Raising ``StopIteration`` stops the solver with status 99.

    Returns
    -------
    OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``status`` (0: ``max|grad| <= tol``,
        1: ``max_iter`` reached, 2: no decrease found, 7: the objective's relative decrease
        fell below 64 machine epsilons, or no decrease was found where the Newton step
        promised less than that, 99: stopped by the callback), ``success``
        (status 0 or 7) and ``message``.

    References
    ----------
    Nocedal, J. & Wright, S. J. (2006). Numerical Optimization, 2nd ed., Algorithm 7.1
    (line-search Newton-CG).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.optimize import minimize_newton_cg
    >>> A = np.array([[3.0, 1.0], [1.0, 2.0]])
    >>> fun = lambda x: (0.5 * x @ A @ x - x.sum(), A @ x - 1.0)
    >>> res = minimize_newton_cg(fun, np.zeros(2), lambda x: ((lambda v: A @ v), 2),
    ...                          tol=1e-10)
    >>> res.success, np.round(res.x, 6)
    (True, array([0.2, 0.4]))
    """
    report = Callback(callback)
    x = np.array(x0, dtype=np.float64, copy=True).ravel()
    fun = checked_f_grad(fun, x.size, "fun")
    if not callable(hessp_at):
        raise TypeError(f"hessp_at must be callable, got {type(hessp_at).__name__}")
    f, g = fun(x)
    if not (np.isfinite(f) and np.all(np.isfinite(g))):
        raise ValueError("fun(x0) is not finite")
    nfev, damping, status, it = 1, 1e-3, 1, 0
    for it in range(1, max_iter + 1):
        gmax = np.max(np.abs(g))
        if gmax <= tol:
            status, it = 0, it - 1
            break
        hessp, n_active = _hessp_at(hessp_at, x)
        gnorm = np.linalg.norm(g)
        promised = None
        for _ in range(_DAMPING_TRIALS):
            direction, _, n_cg = steihaug_cg(hessp, g, reg=damping * gnorm,
                                             rtol=min(0.5, np.sqrt(gnorm)),
                                             maxiter=min(2 * g.size, _MAX_CG), norm=2)
            slope = g @ direction
            promised = -slope if promised is None else promised
            step, f_new, g_new, n_eval = _armijo(fun, x, f, slope, direction)
            nfev += n_eval
            if step is not None:
                break
            damping *= 100.0
        else:
            # no step lowered f: where the least damped Newton step promised less than the
            # objective's resolution (64 eps of it), f cannot tell a better point
            status = 7 if promised <= 64 * np.finfo(float).eps * max(abs(f), 1.0) else 2
            break
        damping = max(damping / 10, 1e-8) if step == 1.0 else damping * 10 ** (step < 0.25)
        x = x + step * direction
        decrease, f, g = f - f_new, f_new, np.array(g_new, dtype=np.float64)
        if report.notify(x, fun=f, jac=g, nit=it, nfev=nfev, ncg=n_cg, n_active=n_active):
            status = STOPPED_BY_CALLBACK
            break
        if np.max(np.abs(g)) <= tol:     # tested here too, so the last step may converge
            status = 0
            break
        if decrease <= 64 * np.finfo(float).eps * max(abs(f), 1.0):
            status = 7
            break
    return OptimizeResult(x=x, fun=f, jac=g, nit=it, nfev=nfev, status=status,
                          success=status in (0, 7), message=MESSAGES[status])


def _hessp_at(hessp_at, x):
    """``hessp_at(x)``'s pair, its operator checked (a clear error naming it otherwise)."""
    hessp, n_active = returned_pair(hessp_at(x), "hessp_at(x)", "(hessp, n_active)")
    return checked_operator(hessp, "hessp_at(x)[0]"), n_active


def _armijo(fun, x, f, slope, direction, max_halvings=20):
    """Largest step ``2^-j`` with sufficient decrease, ``fun`` there and the number of
    evaluations; Nones (and the count) when ``max_halvings`` halvings find none."""
    step = 1.0
    for n_eval in range(1, max_halvings + 1):
        f_new, g_new = fun(x + step * direction)
        if f_new <= f + _ARMIJO_C1 * step * slope:
            return step, f_new, g_new, n_eval
        step *= 0.5
    return None, None, None, max_halvings
