"""ε-minimum-norm subgradient of NQN (thesis (3.7)–(3.8)).

The Clarke ε-subdifferential's minimum-norm element is approximated from the gradients at
the last ``M`` iterates: with ``G`` the ``l x n`` matrix of those gradients,

    λ* = argmin_{λ ∈ Δ_l} ½‖Gᵀλ‖²,   g̃ = Gᵀλ*,                              (3.8)

Δ_l the probability simplex. The QP is solved on the ``l x l`` Gram matrix in two stages,
with no external QP solver: a few accelerated projected-gradient (FISTA) steps, whose
projection onto Δ_l is the package's own simplex projection (``sparsekit.projections``),
find a good support; a primal active-set method (Wolfe's minimum-norm-point iteration
written in the weights λ) then finishes exactly, solving the KKT system
``[P_SS 1; 1ᵀ 0][μ; ν] = [0; 1]`` on the support S, stepping toward μ and dropping the
first weight to reach zero, or adding the most negative reduced gradient. As in
the thesis' reference code the gradients are divided by ``mean(|G|)`` before
forming the Gram matrix, which keeps its scale near one.
"""
import numpy as np


def _default_projection():
    from ..projections import sparsemax

    return sparsemax


def min_norm_subgradient(G, project=None, tol=1e-12, warm_iter=10, max_iter=200):
    """Minimum-norm element of the convex hull of the rows of ``G`` (QP (3.8)).

    Parameters
    ----------
    G : ndarray of shape (l, n)
        Sampled gradients, one per row.
    project : callable or None
        Row-wise Euclidean projection onto the probability simplex,
        ``project(Z) -> P`` for ``Z`` of shape (r, l); defaults to
        ``sparsekit.projections.sparsemax``.
    tol : float
        Optimality tolerance on ``min_i (Pλ)_i − λᵀPλ ≥ −tol · max(λᵀPλ, max P_ii)``.
    warm_iter : int
        FISTA steps before the active-set stage.
    max_iter : int
        Maximum number of active-set iterations.

    Returns
    -------
    g_tilde : ndarray of shape (n,)
        ``Gᵀλ*``.
    lam : ndarray of shape (l,)
        Simplex weights λ*.
    """
    G = np.asarray(G, dtype=float)
    if G.ndim != 2 or G.shape[0] == 0:
        raise ValueError(f"G must be a non-empty 2-D array, got shape {G.shape}")
    l = G.shape[0]
    if l == 1:
        return G[0].copy(), np.ones(1)
    scale = float(np.mean(np.abs(G)))
    if not np.isfinite(scale) or scale == 0.0:
        return np.zeros(G.shape[1]), np.full(l, 1.0 / l)
    Gs = G / scale
    P = Gs @ Gs.T
    lam = _fista(P, project or _default_projection(), warm_iter)
    lam = _active_set(P, lam, tol, max_iter)
    return (Gs.T @ lam) * scale, lam


def _fista(P, project, iters):
    lip = float(np.linalg.eigvalsh(P)[-1])
    lam = np.full(P.shape[0], 1.0 / P.shape[0])
    if lip <= 0.0:
        return lam
    z, t = lam.copy(), 1.0
    for _ in range(iters):
        new = project((z - P @ z / lip)[None, :])[0]
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        z = new + ((t - 1.0) / t_new) * (new - lam)
        lam, t = new, t_new
    return lam


def _support_minimizer(P, S):
    """Minimizer of ½μᵀP_SSμ subject to 1ᵀμ = 1 (least-squares KKT solution)."""
    k = S.size
    kkt = np.zeros((k + 1, k + 1))
    kkt[:k, :k] = P[np.ix_(S, S)]
    kkt[:k, k] = kkt[k, :k] = 1.0
    rhs = np.zeros(k + 1)
    rhs[k] = 1.0
    return np.linalg.lstsq(kkt, rhs, rcond=None)[0][:k]


def _active_set(P, lam, tol, max_iter):
    """Primal active-set iterations from the feasible ``lam`` (Wolfe's method in λ)."""
    lam = np.where(lam > 0, lam, 0.0)
    lam /= lam.sum()
    ref = max(float(np.max(np.diag(P))), np.finfo(float).tiny)
    for _ in range(max_iter):
        S = np.flatnonzero(lam > 0)
        mu = _support_minimizer(P, S)
        if np.all(mu >= 0):
            lam = np.zeros_like(lam)
            lam[S] = mu / mu.sum()
            grad = P @ lam
            val = float(lam @ grad)
            i = int(np.argmin(grad))
            if grad[i] - val >= -tol * max(val, ref) or lam[i] > 0:
                return lam
            lam[i] = 0.0  # enters the support on the next pass with weight from the KKT solve
            lam[S] *= 1.0 - 1e-12
            lam[i] = 1e-12
            continue
        d = mu - lam[S]
        neg = d < 0
        steps = -lam[S][neg] / d[neg]
        j = int(np.argmin(steps))
        t = min(1.0, float(steps[j]))
        lam[S] += t * d
        lam[S[np.flatnonzero(neg)[j]]] = 0.0
        lam = np.maximum(lam, 0.0)
        lam /= lam.sum()
    return lam
