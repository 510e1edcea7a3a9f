"""Slow, obviously-right references for the projection tests.

- ``brute_force``: exact projection onto {0 <= p <= upper, w.p (==, <=, >=) b} by
  enumerating every active set (each coordinate at 0, at its upper bound, or free; the sum
  constraint tight or not), solving the KKT equations of each and keeping the feasible
  candidate closest to z. The optimum is one of the candidates, so this is exact; O(3^K).
- ``exact_capped``: the capped simplex / active knapsack in rational arithmetic, for scores
  and weights of any scale.
- ``slsqp``: the same problem through scipy.optimize.minimize(method="SLSQP").
- ``numpy_sparsemax``: vectorized Algorithm 1 (sort, cumsum, support size).
"""
import itertools
from fractions import Fraction

import numpy as np
from scipy.optimize import minimize


# (polytope, params) pairs exercised by the JVP and Fenchel-Young tests; six-entry weights
W6 = np.array([1.0, 2.0, 0.5, 3.0, 1.5, 0.8])
POLYTOPE_CASES = [
    ("simplex", {}),
    ("simplex", {"radius": 2.0}),
    ("capped_simplex", {"budget": 2.0}),
    ("capped_simplex", {"budget": 3.0, "weights": W6}),
    ("knapsack", {"budget": 1.5, "weights": W6}),
    ("budget", {"budget": 2.0}),
    ("box", {}),
    ("at_least_one", {}),
    ("at_most_one", {}),
]

# polytope name -> (upper bound, relation of the sum constraint, right-hand side key)
SPECS = {
    "simplex": (np.inf, "eq", "radius"),
    "capped_simplex": (1.0, "eq", "budget"),
    "knapsack": (1.0, "le", "budget"),
    "budget": (1.0, "le", "budget"),
    "box": (1.0, None, None),
    "at_least_one": (1.0, "ge", 1.0),
    "at_most_one": (1.0, "le", 1.0),
}


def _spec(polytope, k, params):
    upper, rel, key = SPECS[polytope]
    w = np.ones(k)
    if params.get("weights") is not None:
        w = np.asarray(params["weights"], dtype=float)
    if key is None:
        b = None
    elif isinstance(key, float):
        b = key
    else:
        b = float(params.get(key, 1.0))
    return upper, rel, b, w


def _feasible(p, upper, rel, b, w, tol=1e-9):
    if (p < -tol).any() or (p > upper + tol).any():
        return False
    if rel is None:
        return True
    s = w @ p
    return {"eq": abs(s - b) <= tol * max(1, abs(b)), "le": s <= b + tol,
            "ge": s >= b - tol}[rel]


def _candidates(z, upper, rel, b, w, assign):
    """The KKT candidates of one active-set assignment (0: at 0, 1: at upper, 2: free).

    Works on floats or on ``fractions.Fraction`` arrays (object dtype) alike: without a sum
    constraint the free coordinates equal z; with it, they are z − τw, τ solving the tight
    sum; a set without free coordinates is a candidate only if its sum already fits.
    """
    free = assign == 2
    base = np.where(assign == 1, upper if upper != np.inf else 0, 0 * z)
    cands = []
    if rel != "eq":
        cands.append(np.where(free, z, base))
    if rel is not None:
        sww = (w[free] ** 2).sum()
        rest = b - w[~free] @ base[~free]
        if sww > 0:
            tau = (w[free] @ z[free] - rest) / sww
            cands.append(np.where(free, z - tau * w, base))
        elif abs(rest) <= (1e-12 if z.dtype == float else 0):
            cands.append(base.copy())
    return cands


def brute_force(z, polytope, **params):
    """Exact projection of one row ``z`` (float64) by active-set enumeration.

    The enumeration runs in floats; the candidates within 1e-9 of the smallest distance are
    then compared in rational arithmetic (exact feasibility and distance), so near-ties
    (a budget of 1e-12, equal entries) are decided exactly rather than by rounding. When
    none is exactly feasible (a budget equal to the rounded float sum of the weights), the
    float best is returned.
    """
    z = np.asarray(z, dtype=float)
    upper, rel, b, w = _spec(polytope, z.size, params)
    states = (0, 2) if np.isinf(upper) else (0, 1, 2)   # 0: at 0, 1: at upper, 2: free
    scored = []
    for assign in itertools.product(states, repeat=z.size):
        assign = np.array(assign)
        for i, p in enumerate(_candidates(z, upper, rel, b, w, assign)):
            if _feasible(p, upper, rel, b, w):
                scored.append((((p - z) ** 2).sum(), assign, i))
    best_d, assign, i = min(scored, key=lambda c: c[0])
    best, best_exact = _candidates(z, upper, rel, b, w, assign)[i], None
    ez, ew = (np.array([Fraction(v) for v in a], dtype=object) for a in (z, w))
    eb = None if b is None else Fraction(b)
    eu = upper if np.isinf(upper) else Fraction(upper)
    for d, assign, i in scored:
        if d > best_d + 1e-9 * max(1.0, best_d):
            continue
        cands = _candidates(ez, eu, rel, eb, ew, assign)
        if i >= len(cands) or not _feasible_exact(cands[i], eu, rel, eb, ew):
            continue  # only feasible within the float tolerance
        p = cands[i]
        dist = ((p - ez) ** 2).sum()
        if best_exact is None or dist < best_exact:
            best, best_exact = p, dist
    return np.array([float(v) for v in best])  # the float best when none is exactly feasible


def exact_capped(z, budget, weights=None):
    """Exact projection onto {0 <= p <= 1, w.p = budget} in rational arithmetic, for any
    scale of scores and weights: the root tau of the non-increasing, piecewise-linear
    g(t) = sum_i w_i clip(z_i - t w_i, 0, 1) (notes/lp_sparsemap.md Prop. 5), read off the
    linear piece between the two breakpoints that bracket the budget."""
    z = [Fraction(float(v)) for v in z]
    w = [Fraction(1)] * len(z) if weights is None else [Fraction(float(v)) for v in weights]
    b = Fraction(float(budget))

    def g(t):
        return sum(wi * min(max(zi - t * wi, 0), 1) for zi, wi in zip(z, w))
    points = sorted({zi / wi for zi, wi in zip(z, w)} | {(zi - 1) / wi for zi, wi in zip(z, w)})
    values = [g(t) for t in points]
    tau = points[0] if b >= values[0] else points[-1]
    for t0, t1, g0, g1 in zip(points, points[1:], values, values[1:]):
        if g0 >= b >= g1:
            tau = t0 if g0 == g1 else t0 + (g0 - b) * (t1 - t0) / (g0 - g1)
            break
    return np.array([float(min(max(zi - tau * wi, 0), 1)) for zi, wi in zip(z, w)])


def _feasible_exact(p, upper, rel, b, w):
    if any(v < 0 or v > upper for v in p):
        return False
    if rel is None:
        return True
    s = w @ p
    return {"eq": s == b, "le": s <= b, "ge": s >= b}[rel]


def slsqp(z, polytope, **params):
    """Projection of one row through a general-purpose QP solver (SLSQP)."""
    z = np.asarray(z, dtype=float)
    k = z.size
    upper, rel, b, w = _spec(polytope, k, params)
    cons = []
    if rel == "eq":
        cons.append({"type": "eq", "fun": lambda p: w @ p - b, "jac": lambda p: w})
    elif rel == "le":
        cons.append({"type": "ineq", "fun": lambda p: b - w @ p, "jac": lambda p: -w})
    elif rel == "ge":
        cons.append({"type": "ineq", "fun": lambda p: w @ p - b, "jac": lambda p: w})
    bounds = [(0, None if np.isinf(upper) else upper)] * k
    x0 = np.full(k, 0.5 if rel != "eq" else b / w.sum())
    res = minimize(lambda p: 0.5 * ((p - z) ** 2).sum(), x0, jac=lambda p: p - z,
                   bounds=bounds, constraints=cons, method="SLSQP",
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.x


def numpy_sparsemax(Z):
    """Vectorized sort-based sparsemax (notes/sparsemax_report.md Algorithm 1), float64."""
    Z = np.asarray(Z, dtype=float)
    Z = Z - Z.max(axis=1, keepdims=True)
    s = -np.sort(-Z, axis=1)
    c = np.cumsum(s, axis=1)
    ks = np.arange(1, Z.shape[1] + 1)
    support = (1 + ks * s > c).sum(axis=1)
    tau = (c[np.arange(Z.shape[0]), support - 1] - 1) / support
    return np.maximum(Z - tau[:, None], 0)


def finite_difference_jvp(f, z, v, eps=1e-6):
    """Central difference (f(z + eps v) - f(z - eps v)) / (2 eps)."""
    return (f(z + eps * v) - f(z - eps * v)) / (2 * eps)
