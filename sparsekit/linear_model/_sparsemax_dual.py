"""``solver="sdca"`` of SparsemaxClassifier: exact dual block coordinate ascent.

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
from .._cython._sparsemax_dual import dual_epoch_csr, dual_epoch_dense

#: a dual variable (in [0, 1]) that moves by at most this many float64 epsilons in an epoch
#: is at its rounding floor: iris at alpha = 0.1 reaches max|grad| ~1e-15 after ~900 epochs
#: while its duals still move by 1-2 ulps per epoch
DUAL_ULPS = 4


def dual_coordinate_ascent(X, Y, sw, objective, theta0, *, alpha, code, budget,
                           fit_intercept, penalize_intercept, tol, max_iter, rng, verbose,
                           offset=None):
    """Minimize the SparsemaxClassifier objective from ``theta0 = [W (d, K), b]``.

    Parameters
    ----------
    X : CSR matrix or C-contiguous ndarray of shape (n, d), float32 or float64
    Y : CSR matrix of shape (n, K), targets in the polytope
    sw : ndarray of shape (n,), nonnegative sample weights (zero: row left out)
    objective : callable ``theta -> (f, grad)`` of the primal, uncentered coordinates
    theta0 : ndarray; a nonzero start is warm: the duals start at the projections of its
        scores (the optimality condition ``mu_i = proj(W^T x_i + b)``), else at ``Y``
        (``W = 0``).
    alpha, code, budget, fit_intercept, penalize_intercept
        As in the classifier (``alpha > 0``).
    tol, max_iter : stop when ``max|grad| <= tol``, when no row's scores can have moved by
        more than the machine epsilon of ``X``'s dtype in an epoch (dual change × max q_i)
        or no dual variable by more than ``DUAL_ULPS`` float64 epsilons (either way a
        success only if max|grad| fell below √eps × its value after the first epoch), or
        after ``max_iter`` epochs.
    rng : numpy Generator for the row order of each epoch.
    offset : ndarray of shape (K,), optional
        A fixed, unpenalized term of every row's scores ``W^T x + b + offset`` (not part of
        ``theta``; ``objective`` must include it).

    Returns
    -------
    OptimizeResult with ``x``, ``fun``, ``jac``, ``nit`` (epochs), ``success``, ``message``.
    """
    n, d = X.shape
    k = Y.shape[1]
    c = sw.astype(np.float64) / (alpha * float(sw.sum(dtype=np.float64)))
    sq_norms = (np.asarray(X.multiply(X).sum(axis=1)).ravel() if sp.issparse(X)
                else np.einsum("ij,ij->i", X, X, dtype=np.float64))
    q = c * (sq_norms + fit_intercept)
    W = np.ascontiguousarray(theta0[: d * k].reshape(d, k), dtype=np.float64)
    b = theta0[d * k:].astype(np.float64) if fit_intercept else np.zeros(k)
    wb = np.zeros(k) if fit_intercept else None
    offset = np.zeros(k) if offset is None else np.asarray(offset, dtype=np.float64)
    Ydense = Y.toarray()
    M = Ydense.copy()
    if np.any(theta0):
        scores = np.asarray(X @ W.astype(X.dtype, copy=False), dtype=np.float64) + b + offset
        project_rows(code, scores, M, np.empty(n), budget, np.ones(k), False)
        R = (Ydense - M) * c[:, None]
        W = np.ascontiguousarray(X.T @ R, dtype=np.float64)
        if fit_intercept:  # keep wb = W(mu)'s intercept row; b + wb is the start's b
            wb = R.sum(axis=0)
            b = np.zeros(k) if penalize_intercept else b - wb
    if sp.issparse(X):
        indices, indptr = X.indices, X.indptr

        def epoch(order):
            return dual_epoch_csr(X.data, indices, indptr, W, b + offset, wb, M, c, q,
                                  order, code, budget)
    else:
        def epoch(order):
            return dual_epoch_dense(X, W, b + offset, wb, M, c, q, order, code, budget)

    message, success, it = "maximum number of epochs reached", False, 0
    resolution = np.finfo(X.dtype).eps  # float32 data: gradients below tol are noise
    # a dual change δ in row i moves that row's scores by q_i δ: the scale of the test
    score_scale = max(float(q.max(initial=0.0)), 1.0)
    for it in range(1, max_iter + 1):
        change = epoch(rng.permutation(n).astype(np.int64))
        theta = np.concatenate([W.ravel(), b + wb if fit_intercept else b])
        if fit_intercept and not penalize_intercept:
            b += wb
        f, grad = objective(theta)
        gmax = np.max(np.abs(grad))
        if verbose:
            print(f"[SparsemaxClassifier] sdca epoch {it}: objective {f:.10g}, max|grad| "
                  f"{gmax:.3g}, largest dual change {change:.3g}")
        if gmax <= tol:
            message, success = "max|grad| <= tol", True
            break
        if it == 1:   # the stall test's scale; a warm start may begin at the optimum
            gmax_first = max(gmax, np.max(np.abs(objective(np.zeros_like(theta))[1])))
        if change * score_scale <= resolution or change <= DUAL_ULPS * np.finfo(float).eps:
            # stalled: converged as far as the data's precision allows, or stuck (scores
            # so large that every dual step rounds away: the gradient has not moved); duals
            # lie in [0, 1], so moves of a few float64 ulps are rounding noise
            success = gmax <= np.sqrt(resolution) * gmax_first
            message = ("no score moved by more than the data's eps" if success else
                       "the dual steps round to nothing at this scale of X; standardize X "
                       "or use solver='lbfgs'")
            break
    return OptimizeResult(x=theta, fun=f, jac=grad, nit=it, success=success, message=message)
