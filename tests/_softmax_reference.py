"""Slow, obviously-right references for the ExtremeSoftmaxSGD kernels (tests only).

- ``SplitMix`` / ``sample_classes``: the C sampler re-written in Python integers, so a
  reference epoch sees exactly the same classes as ``softmax_epoch``.
- ``prox_problem`` / ``solve_prox``: the full Implicit SGD proximal problem
  (notes/unbiased_softmax_umax_isgd.md §1.7) over (u, w_y, w_k...) in R^{1+(m+1)D}, solved by
  a generic trust-region Newton method from a start whose exponents are <= 0 (§F.3.5).
- ``reference_epoch``: one pass of every method on dense data with full weights (no lazy
  scaling), coefficients written from the formulas of the notes.
- ``bouchard_*``: the Bouchard (2007) bound of notes/one_vs_each.md §1.5.
- ``hash_map`` / ``hashed_epoch``: the hashed weights' (class, feature) -> (entry, sign) map
  in Python integers, and one pass of an explicit method on the table through it.
"""
import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

MASK = (1 << 64) - 1


class SplitMix:
    """splitmix64 with the multiply-shift integer draw of ``_softmax_sgd._randint``."""

    def __init__(self, seed):
        self.s = seed & MASK

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def randint(self, n):
        return ((self.next() >> 32) * n) >> 32


def sample_classes(rng, K, y, m, exclude=True):
    """Floyd's m distinct draws from {0..K-2}, then skip y (same as the C sampler); from
    {0..K-1}, y not skipped, when not ``exclude``."""
    out = []
    n = K - 1 if exclude else K
    for jj in range(n - m, n):
        t = rng.randint(jj + 1)
        out.append(jj if t in out else t)
    return [k + 1 if k >= y and exclude else k for k in out]


def shared_classes(rng, K, shared, y, m, exclude=True):
    """The batch's set ``shared`` for an example of class y: y, if there, swapped for a class
    outside the set drawn by rejection (same as the C sampler)."""
    out = list(shared)
    if exclude and y in out:
        c = rng.randint(K)
        while c in shared:
            c = rng.randint(K)
        out[out.index(y)] = c
    return out


def prox_problem(x, wt, u0, eta_data, eta, alpha, beta, c):
    """Objective, gradient and Hessian of the Implicit SGD proximal problem.

    theta = (u, w_0, ..., w_m) with w_0 the true class; ``wt`` holds the old rows (m+1, D).
    P = 2 eta_data [u + e^{-u} + c sum_k e^{x.(w_k - w_0) - u}] + eta alpha sum_j beta_j ||w_j||^2
        + (u - u0)^2 + sum_j ||w_j - wt_j||^2
    """
    mm, D = wt.shape

    def fun(theta):
        u = theta[0]
        W = theta[1:].reshape(mm, D)
        s = W[1:] @ x - W[0] @ x - u
        e = c * np.exp(s)
        f = (2 * eta_data * (u + np.exp(-u) + e.sum()) + eta * alpha * np.sum(beta[:, None] * W**2)
             + (u - u0) ** 2 + np.sum((W - wt) ** 2))
        g = np.zeros_like(theta)
        g[0] = 2 * eta_data * (1 - np.exp(-u) - e.sum()) + 2 * (u - u0)
        GW = 2 * eta * alpha * beta[:, None] * W + 2 * (W - wt)
        GW[1:] += 2 * eta_data * e[:, None] * x
        GW[0] -= 2 * eta_data * e.sum() * x
        g[1:] = GW.ravel()
        # Hessian: the exponential terms are e_k * (a_k a_k^T) with a_k = d s_k / d theta
        n = theta.size
        H = np.zeros((n, n))
        H[0, 0] = 2 * eta_data * np.exp(-u) + 2
        H[1:, 1:] += np.diag(np.repeat(2 * eta * alpha * beta + 2, D))
        for k in range(1, mm):
            a = np.zeros(n)
            a[0] = -1.0
            a[1 + k * D:1 + (k + 1) * D] = x
            a[1:1 + D] = -x
            H += 2 * eta_data * e[k - 1] * np.outer(a, a)
        return f, g, H

    return fun


def solve_prox(x, wt, u0, eta_data, eta, alpha, beta, c):
    """Generic-optimizer solution (u, W) of ``prox_problem`` (trust-exact, then Newton polish)."""
    mm, D = wt.shape
    fun = prox_problem(x, wt, u0, eta_data, eta, alpha, beta, c)
    q = x @ x
    W0 = wt.copy()
    s = W0[1:] @ x - W0[0] @ x - u0
    if q > 0:                       # start with every exponent <= 0 (App. F.3.5)
        W0[1:] -= np.maximum(s, 0.0)[:, None] * x / q
    theta0 = np.concatenate([[u0], W0.ravel()])
    res = minimize(lambda t: fun(t)[0], theta0, jac=lambda t: fun(t)[1],
                   hess=lambda t: fun(t)[2], method="trust-exact",
                   options={"gtol": 1e-12, "maxiter": 2000})
    theta = res.x
    for _ in range(20):             # Newton polish below the trust-region's f-resolution
        _, g, H = fun(theta)
        step = np.linalg.solve(H, g)
        theta = theta - step
        if np.abs(step).max() <= 1e-15 * max(1.0, np.abs(theta).max()):
            break
    res.x, res.jac = theta, fun(theta)[1]
    return theta[0], theta[1:].reshape(mm, D), res


def _explicit_coef(method, z, u, c, delta):
    """(-step/eta) multipliers of x (true class first), the reset u and d loss / d u."""
    s = z[1:] - z[0]
    if method in ("umax", "sgd"):
        if method == "umax":
            bound = np.logaddexp(0.0, logsumexp(s))
            if u < bound - delta:
                u = bound
        e = c * np.exp(s - u)
        return np.concatenate([[e.sum()], -e]), u, 1 - np.exp(-u) - e.sum()
    if method == "ove":
        g = c * expit(s)
        return np.concatenate([[g.sum()], -g]), u, 0.0
    logits = np.concatenate([[z[0]], z[1:] + np.log(c)])
    if method == "sampled_softmax":
        p = np.exp(logits - logsumexp(logits))
        return np.concatenate([[1 - p[0]], -p[1:]]), u, 0.0
    # NCE with uniform noise over the K-1 wrong classes: logit z_j - log(m Q) = z_j + log c
    return np.concatenate([[expit(-(z[0] + np.log(c)))], -expit(logits[1:])]), u, 0.0


def reference_epoch(method, X, y, W, u, order, seed, m, batch_size, eta, alpha, delta,
                    sample_weight=None, exclude=True, shared=False):
    """One pass of ``method`` on dense X (bias folded into X by the caller).

    Returns the new (W, u); W is (K, D) with the ridge shrink w <- (w + step)/rho, the U-max
    projections when alpha > 0, and the implicit step from ``solve_prox``. ``shared``: one
    class set per batch (``shared_classes``).
    """
    W = W.astype(np.float64).copy()
    u = u.astype(np.float64).copy()
    N, D = X.shape
    K = W.shape[0]
    c = (K - 1) / m
    sw = np.ones(N) if sample_weight is None else sample_weight
    counts = np.bincount(y, minlength=K) / N
    beta = 1.0 / (counts + (1 - counts) * m / (K - 1))
    bound_w = np.sqrt(2 * np.log(K) / alpha) if alpha > 0 else np.inf
    bx = np.sqrt((X**2).sum(1).max())
    bound_u = np.logaddexp(0.0, np.log(K - 1) + 2 * bx * bound_w) if alpha > 0 else np.inf
    rng = SplitMix(seed)
    for start in range(0, len(order), batch_size):
        batch = order[start:start + batch_size]
        nb = len(batch)
        touched, steps = [], []
        for e, i in enumerate(batch):
            if not shared:
                T = [y[i]] + sample_classes(rng, K, y[i], m, exclude)
            else:
                if e == 0:
                    S = sample_classes(rng, K, y[i], m, exclude=False)
                T = [y[i]] + shared_classes(rng, K, S, y[i], m, exclude)
            x = X[i]
            z = W[T] @ x
            eta_i = eta * sw[i] / nb
            if method == "implicit":
                unew, Wn, _ = solve_prox(x, W[T], u[i], eta_i, eta, alpha, beta[T], c)
                rho = 1 + eta * alpha * beta[T]
                coef = (Wn - W[T] / rho[:, None]) @ x / (x @ x) if x @ x > 0 else 0 * rho
                u[i] = unew
            else:
                coef, u[i], du = _explicit_coef(method, z, u[i], c, delta)
                coef = eta_i * coef
                if method in ("umax", "sgd"):
                    u[i] = min(max(u[i] - eta_i * du, 0.0), bound_u)
            touched += T
            steps += [(T[j], coef[j], i) for j in range(len(T))]
        cnt = np.bincount(touched, minlength=K)
        rho_row = 1 + eta * alpha * beta * cnt / nb
        for k in set(touched):
            W[k] /= rho_row[k]
        for k, a, i in steps:
            W[k] += (a if method == "implicit" else a / rho_row[k]) * X[i]
        if method == "umax" and alpha > 0:
            for k in set(touched):
                nrm = np.linalg.norm(W[k])
                if nrm > bound_w:
                    W[k] *= bound_w / nrm
    return W, u


def bouchard_log_bound(scores, y, a):
    """Per-example Bouchard bound f_y - a - sum_m log(1 + e^{f_m - a}) (eq. 12)."""
    return (scores[np.arange(len(y)), y] - a
            - np.logaddexp(0.0, scores - a[:, None]).sum(axis=1))


def bouchard_optimal_a(scores):
    """Per-row optimal a: the root of sum_m sigma(f_m - a) = 1 (notes §1.5, [derived]),
    by vectorised bisection (the left side decreases in a)."""
    lo = scores.min(axis=1) - 1.0
    hi = scores.max(axis=1) + np.log(scores.shape[1]) + 1.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        big = expit(scores - mid[:, None]).sum(axis=1) > 1.0
        lo = np.where(big, mid, lo)
        hi = np.where(big, hi, mid)
    return 0.5 * (lo + hi)


def kernel_epoch(method, X, y, W, u, order, seed, m, batch_size, eta, alpha, delta,
                 sample_weight=None, sparse=False, dtype=np.float64, norms="eager",
                 **options):
    """Run the Cython ``softmax_epoch`` on the same inputs as ``reference_epoch``.

    ``norms``: U-max's row norms passed in ("eager"), left to the driver ("lazy": -1), or
    wrong on purpose ("zero")."""
    import scipy.sparse as sp

    from sparsekit._cython._softmax_sgd import METHODS, softmax_epoch

    N, D = X.shape
    K = W.shape[0]
    sw = np.ones(N) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    counts = np.bincount(y, minlength=K) / N
    beta = 1.0 / (counts + (1 - counts) * m / (K - 1))
    xsq = (X**2).sum(1)
    bound_w = np.sqrt(2 * np.log(K) / alpha) if alpha > 0 else np.inf
    bound_u = (np.logaddexp(0.0, np.log(K - 1) + 2 * np.sqrt(xsq.max()) * bound_w)
               if alpha > 0 else np.inf)
    R = np.array(W, dtype=dtype, order="C", copy=True)
    gamma = np.ones(K)
    sqn = {"eager": (R.astype(np.float64) ** 2).sum(1), "lazy": np.full(K, -1.0),
           "zero": np.zeros(K)}[norms]
    u = np.asarray(u, dtype=np.float64).copy()
    if sparse:
        Xs = sp.csr_matrix(X.astype(dtype))
        data, ind, ptr = Xs.data, Xs.indices.astype(np.intp), Xs.indptr.astype(np.intp)
        dense = False
    else:
        data = np.ascontiguousarray(X, dtype=dtype).ravel()
        ind = ptr = np.zeros(1, dtype=np.intp)
        dense = True
    status, resets = softmax_epoch(
        METHODS[method], data, ind, ptr, dense, D, False, np.asarray(y, dtype=np.intp), sw,
        xsq, R, gamma, sqn, u, beta, np.asarray(order, dtype=np.intp), m, batch_size, eta,
        alpha, delta, bound_w, bound_u, seed, **options)
    return gamma[:, None] * R.astype(np.float64), u, status, resets


def _fmix(z):
    """MurmurHash3's 64-bit finalizer (``_softmax_sgd._fmix``)."""
    z ^= z >> 33
    z = (z * 0xFF51AFD7ED558CCD) & MASK
    z ^= z >> 33
    z = (z * 0xC4CEB9FE1A85EC53) & MASK
    return z ^ (z >> 33)


def hash_map(n_features, slots, n):
    """(entry, sign) of every (class, feature) pair of hashed weights, each (K, D): the
    weight of class k and feature j is ``sign[k, j] * table[entry[k, j]]``."""
    K = len(slots)
    entry = np.empty((K, n_features), dtype=np.int64)
    sign = np.empty((K, n_features))
    for j in range(n_features):
        h = _fmix(j ^ 0x2545F491)
        base, a = (h * n) >> 64, -1.0 if h & 1 else 1.0
        for k, c in enumerate(slots):
            entry[k, j] = (base + c % n) % n
            sign[k, j] = a * (-1.0 if _fmix(int(c) ^ 0x5851F42D) & 1 else 1.0)
    return entry, sign


def decode(table, n, slots, n_features, bias):
    """The (K, D) weights and (K,) intercepts that hashed weights stand for."""
    entry, sign = hash_map(n_features, slots, n)
    intercept = table[n + np.asarray(slots)] if bias else np.zeros(len(slots))
    return sign * table[entry], intercept


def hashed_epoch(method, X, y, table, n, slots, u, order, seed, m, eta, delta, bias):
    """One pass of an explicit ``method`` (batch 1, no ridge) on hashed weights: the scores
    of the drawn classes through the map, then each class's step added to its entries."""
    table = np.asarray(table, dtype=np.float64).copy()
    u = np.asarray(u, dtype=np.float64).copy()
    entry, sign = hash_map(X.shape[1], slots, n)
    K = len(slots)
    c = (K - 1) / m
    rng = SplitMix(seed)
    for i in order:
        T = [y[i]] + sample_classes(rng, K, y[i], m)
        x = X[i]
        z = np.array([(sign[k] * table[entry[k]]) @ x
                      + (table[n + slots[k]] if bias else 0.0) for k in T])
        coef, u[i], du = _explicit_coef(method, z, u[i], c, delta)
        coef = eta * coef
        if method in ("umax", "sgd"):
            u[i] = max(u[i] - eta * du, 0.0)
        for k, a in zip(T, coef):
            for j in np.flatnonzero(x):
                table[entry[k, j]] += a * sign[k, j] * x[j]
            if bias:
                table[n + slots[k]] += a
    return table, u
