"""Slow, obviously-right references for the OBA kernels and solver tests.

Formulas: notes/keskar_thesis_oba_nqn.md §1.2-§1.4, §1.8, §1.9.
"""
import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize


def dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def logistic_terms(m, y, sw):
    """(Σ sᵢ log(1+e^{−yᵢmᵢ}), r, D) with r = ∂/∂m, D = ∂²/∂m², in plain NumPy."""
    z = -y * m
    loss = np.sum(sw * np.logaddexp(0.0, z))
    s = 1.0 / (1.0 + np.exp(-z))  # σ(z), may warn on overflow but is exact in the limit
    return loss, -y * sw * s, sw * s * (1.0 - s)


def min_norm_subgradient(x, grad, mu):
    """(g, ζ, code, optimality) from (2.4), (2.12), (2.5)-(2.7), §1.9, one branch per case."""
    n = x.size
    g, zeta, code = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int8)
    for i in range(n):
        if mu[i] == 0:
            g[i], code[i] = grad[i], 1
        elif x[i] != 0:
            zeta[i] = np.sign(x[i])
            g[i], code[i] = grad[i] + mu[i] * zeta[i], 1
        elif grad[i] + mu[i] < 0:
            g[i], zeta[i], code[i] = grad[i] + mu[i], 1, 2
        elif grad[i] - mu[i] > 0:
            g[i], zeta[i], code[i] = grad[i] - mu[i], -1, 2
    z = x - grad
    opt = np.abs(x - np.sign(z) * np.maximum(np.abs(z) - mu, 0)).max(initial=0.0)
    return g, zeta, code, opt


def shift_to_median(x, mu, size):
    """Each block of ``size`` entries minus the c minimizing Σₖ μₖ |xₖ − c| that is the
    entry of positive weight nearest 0, the positive one on a tie (the minimizers form an
    interval between two such entries: try them all); a block of no weight kept."""
    x = np.array(x, dtype=np.float64)
    for start in range(0, x.size, size):
        v, w = x[start:start + size], mu[start:start + size]
        candidates = v[w > 0]
        if candidates.size == 0:
            continue
        penalty = np.array([w @ np.abs(v - c) for c in candidates])
        best = candidates[penalty == penalty.min()]
        x[start:start + size] = v - min(best, key=lambda c: (abs(c), -c))
    return x


def l1_logistic_objective(X, y, w, b, C, sw=None):
    """LIBLINEAR -s 6 objective ‖w‖₁ + C Σ sᵢ log(1 + exp(−yᵢ(xᵢᵀw + b)))."""
    sw = np.ones(len(y)) if sw is None else sw
    m = dense(X) @ w + b
    return np.abs(w).sum() + C * np.sum(sw * np.logaddexp(0.0, -y * m))


def l1_logistic_lbfgsb(X, y, C, fit_intercept=True, sw=None):
    """Reference minimizer: w = u − v with u, v ≥ 0 and L-BFGS-B at tight tolerances."""
    Xd = dense(X)
    n, d = Xd.shape
    sw = np.ones(n) if sw is None else sw

    def fun(z):
        u, v = z[:d], z[d:2 * d]
        b = z[-1] if fit_intercept else 0.0
        m = Xd @ (u - v) + b
        loss, r, _ = logistic_terms(m, y, sw)
        gw = Xd.T @ r
        grad = np.concatenate([1 + C * gw, 1 - C * gw] + ([[C * r.sum()]] if fit_intercept else []))
        return u.sum() + v.sum() + C * loss, grad

    z0 = np.zeros(2 * d + fit_intercept)
    bounds = [(0, None)] * (2 * d) + [(None, None)] * fit_intercept
    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"ftol": 1e-15, "gtol": 1e-11, "maxiter": 20000, "maxcor": 30})
    w = res.x[:d] - res.x[d:2 * d]
    return w, (res.x[-1] if fit_intercept else 0.0), res.fun
