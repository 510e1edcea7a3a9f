"""SDCA for the Fenchel-Young datafit: exact dual block coordinate ascent.

Each epoch maximizes the dual over every row's block ``mu_i`` in turn, each update one
projection onto the polytope (derivation in ``sparsekit/_cython/_sparsemax_dual.pyx``). An
epoch costs two passes over ``X`` (scores, update), like one gradient evaluation; on
sparse high-dimensional text the method needs tens of epochs where L-BFGS needs hundreds
of iterations.

The intercept is the weight of a constant feature 1. When it is unpenalized, the penalty
``alpha/2 ||b - b_prev||^2`` that the dual puts on it is a proximal term around the
previous epoch's intercept ``b_prev``, refreshed after every epoch (proximal point on
``b``): at a fixed point the intercept gradient of the objective vanishes.
"""
import numpy as np
import scipy.sparse as sp
from scipy.optimize import OptimizeResult

from .._cython._projections import project_rows
from .._cython._sparsemax_dual import dual_epoch_csr, dual_epoch_dense, shuffle
from ..utils._rows import row_sq_norms
from ._result import CALLBACK_MESSAGE, STOPPED_BY_CALLBACK, Callback

MESSAGES = {
    0: "max|grad| <= tol",
    1: "maximum number of epochs reached",
    7: "no score moved by more than the data's eps",
    8: ("the dual steps round to nothing at this scale of X; standardize X or use "
        "solver='lbfgs'"),
    STOPPED_BY_CALLBACK: CALLBACK_MESSAGE,
}

#: a dual variable (in [0, 1]) that moves by at most this many float64 epsilons in an epoch
#: is at its rounding floor: iris at alpha = 0.1 reaches max|grad| ~1e-15 after ~900 epochs
#: while its duals still move by 1-2 ulps per epoch
DUAL_ULPS = 4

#: the primal objective and gradient (a pass over X, as costly as an epoch) are evaluated
#: after epoch 1; then, while max|grad| exceeds CHECK_DENSE x tol, once the epoch's largest
#: dual change has fallen CHECK_PROGRESS-fold since the last evaluation (max|grad| falls with
#: it, within a factor of 5-10 either way) or ⌈t / CHECK_GAP⌉ epochs after an evaluation
#: after epoch t, whichever comes first; and after every epoch below. SDCA's max|grad| is
#: not monotone: on Bibtex at alpha = 1e-4 it met 1e-6 at epoch 935 on a dip, with spikes
#: to 10-20 times and dips to a quarter of its median of the epochs around; testing every
#: epoch from 100 x tol on stops where a test after every epoch stops (at 10 x tol that
#: fit ran into max_iter = 1000). Far from tol, the evaluations at fixed gaps (epochs 1-8,
#: then gaps of an eighth of the epochs run) cost as much as the epochs on TF-IDF text;
#: with the dual change the fits of the benchmark notes ("the objective on a schedule")
#: take 0.77-0.96x the time of that schedule, at the same epoch but one (4 epochs later).
CHECK_PROGRESS = 4.0
CHECK_GAP = 2
CHECK_DENSE = 100.0


def _max_abs(v):
    """max |v_i| of a nonempty float array without the temporary |v| (a copy of the
    gradient: as large as the model, 164 MB on 58 classes of 353,595 columns)."""
    return float(max(v.max(), -v.min()))


def minimize_sdca(datafit, x0, *, tol, max_iter, rng, callback=None):
    """Minimize a :class:`~sparsekit.losses.FenchelYoungLinear`-style objective by SDCA.

    Each epoch maximizes the dual over every row's block in turn (Shalev-Shwartz & Zhang
    2013, with exact block maximization), each update one projection onto the polytope.

    Parameters
    ----------
    datafit : FenchelYoungLinear
        Uncentered (``center=False``), with ``alpha > 0``; its ``X``, ``Y``, ``sw``,
        ``code``, ``budget``, ``offset``, ``fit_intercept``, ``penalize_intercept`` and
        ``weight_scale`` define the dual, its ``value_grad`` (given the iterate's weights
        too, which the dual holds) the primal objective that is monitored.
    x0 : ndarray
        Primal start in the datafit's solver variable (``to_solver(W, b)``; the iterates
        and the tested gradient are in it too); a nonzero start is warm: the duals start
        at the projections of its scores (the optimality condition
        ``mu_i = proj(W^T x_i + b)``), else at ``Y`` (``W = 0``).
    tol, max_iter : stop when ``max|grad| <= tol`` (tested where the objective is
        evaluated: after epoch 1; then, when it was last evaluated after epoch t with the
        largest dual change δ_t, after the first epoch whose change is at most
        δ_t / ``CHECK_PROGRESS`` or after epoch t + ⌈t / ``CHECK_GAP``⌉, whichever comes
        first; after every epoch once max|grad| is within ``CHECK_DENSE`` x tol; and after
        the last epoch), when no row's
        scores can have moved by more than the machine epsilon of ``X``'s dtype in an epoch
        (dual change x max q_i) or no dual variable by more than ``DUAL_ULPS`` float64
        epsilons (either way a success only if max|grad| fell below sqrt(eps) x its value
        after the first epoch), or after ``max_iter`` epochs.
    rng : numpy Generator for the row order of each epoch.
    callback : callable, optional
        SciPy's convention, after each epoch; the ``OptimizeResult`` holds ``x``, ``nit``,
        ``nfev``, ``change`` (the largest dual change of the epoch) and, after the epochs
        where the objective was evaluated, ``fun`` and ``jac``. ``StopIteration`` stops
        with status 99.

    Returns
    -------
    OptimizeResult with ``x``, ``fun``, ``jac``, ``nit`` (epochs), ``nfev`` (objective
    evaluations), ``status``, ``success`` and ``message``.
    """
    X, Y, sw, objective = datafit.X, datafit.Y, datafit.sw, datafit.value_grad
    alpha, code, budget = datafit.alpha, datafit.code, datafit.budget
    fit_intercept, penalize_intercept = datafit.fit_intercept, datafit.penalize_intercept
    offset, theta0 = datafit.offset, x0
    report = Callback(callback)
    n, d = X.shape
    k = Y.shape[1]
    c = sw.astype(np.float64) / (alpha * float(sw.sum(dtype=np.float64)))
    # a free intercept's constant feature has the entries' scale (the datafit's weight_scale),
    # so the epochs do not depend on the units of X; a penalized one is the feature 1
    rho_sq = datafit.weight_scale ** 2 if not penalize_intercept else 1.0
    q = c * (row_sq_norms(X) + rho_sq * fit_intercept)
    W, b = datafit.from_solver(theta0)
    W = np.array(W, dtype=np.float64, order="C")   # updated in place: not x0's memory
    wb = np.zeros(k) if fit_intercept else None
    offset = np.asarray(offset, dtype=np.float64)
    Ydense = Y.toarray()
    M = Ydense.copy()
    if np.any(theta0):
        scores = np.asarray(X @ W.astype(X.dtype, copy=False), dtype=np.float64) + b + offset
        project_rows(code, scores, M, np.empty(n), budget, np.ones(k), False)
        R = (Ydense - M) * c[:, None]
        W = np.ascontiguousarray(X.T @ R, dtype=np.float64)
        if fit_intercept:  # keep wb = W(mu)'s intercept scores; b + wb is the start's b
            wb = R.sum(axis=0) * rho_sq
            b = np.zeros(k) if penalize_intercept else b - wb
    if sp.issparse(X):
        indices, indptr = X.indices, X.indptr

        def epoch(order):
            return dual_epoch_csr(X.data, indices, indptr, W, b + offset, wb, rho_sq, M, c,
                                  q, order, code, budget)
    else:
        def epoch(order):
            return dual_epoch_dense(X, W, b + offset, wb, rho_sq, M, c, q, order, code,
                                    budget)

    status, it = 1, 0
    resolution = np.finfo(X.dtype).eps  # float32 data: gradients below tol are noise
    # a dual change δ in row i moves that row's scores by q_i δ: the scale of the test
    score_scale = max(float(q.max(initial=0.0)), 1.0)
    checked = f = grad = gmax = change_checked = None
    nfev = 0
    order = np.arange(n, dtype=np.int64)
    for it in range(1, max_iter + 1):
        # the last epoch's iterate and gradient are not needed past here: each is as large
        # as the model, and held while the next are made they would be two more such arrays
        theta = grad = None
        shuffle(order, int(rng.integers(2 ** 63)))
        change = epoch(order)
        theta = datafit.to_solver(W, b + wb if fit_intercept else b)
        if fit_intercept and not penalize_intercept:
            b += wb
        # stalled: converged as far as the data's precision allows, or stuck (scores so
        # large that every dual step rounds away: the gradient has not moved); duals lie
        # in [0, 1], so moves of a few float64 ulps are rounding noise
        stalled = (change * score_scale <= resolution
                   or change <= DUAL_ULPS * np.finfo(float).eps)
        # the objective costs as much as an epoch: far from tol it is evaluated once the
        # dual change promises progress, or after a gap that grows with the epochs run
        due = (checked is None or gmax <= CHECK_DENSE * tol
               or change <= change_checked / CHECK_PROGRESS
               or it >= checked + -(-checked // CHECK_GAP))
        fields = {}
        if due or stalled or it == max_iter:
            f, grad = objective(theta, W)
            nfev += 1
            checked, gmax, change_checked = it, _max_abs(grad), change
            fields = {"fun": f, "jac": grad}
        if report.notify(theta, nit=it, nfev=nfev, change=change, **fields):
            status = STOPPED_BY_CALLBACK
            break
        if checked != it:
            continue
        if gmax <= tol:
            status = 0
            break
        if it == 1:
            gmax_first = gmax
        if stalled:   # the test's scale: a warm start may begin at the optimum
            gmax_first = max(gmax_first, _max_abs(objective(np.zeros_like(theta))[1]))
            nfev += 1
            status = 7 if gmax <= np.sqrt(resolution) * gmax_first else 8
            break
    if checked != it:   # stopped by the callback after an epoch without an evaluation
        f, grad = objective(theta, W)
        nfev += 1
    return OptimizeResult(x=theta, fun=f, jac=grad, nit=it, nfev=nfev, status=status,
                          success=status in (0, 7), message=MESSAGES[status])
