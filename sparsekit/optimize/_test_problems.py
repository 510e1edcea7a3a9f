"""Bound-constrained nonsmooth test problems of Keskar's thesis, Table 3.2.

Every problem is an unconstrained test function from the literature the thesis cites, with
the bounds of the thesis' section 3.3 added (after Karmitsa & Mäkelä 2010):
for 1-based even ``i``, ``l_i = x*_i − 5.5`` and ``u_i = x*_i − 0.5``; otherwise
``[−100, 100]``; ``x*`` the unconstrained minimizer, so it is infeasible by construction.
Starting points are ``U(−2, 2)`` around the midpoint of the bounds. Objectives return
``(f, g)`` with ``g`` a gradient wherever ``f`` is differentiable (a subgradient of the
active piece otherwise), all vectorized in NumPy. In the objectives' docstrings, indices are
1-based and ``Σ_{i<n}``, ``max_{i<n}`` run over ``i = 1, …, n − 1``.

Sources of the formulas:

* Haarala, Miettinen & Mäkelä (2004): Active_Faces, Chained_CB3_1/2, Chained_Crescent_1/2,
  Chained_LQ, Chained_Mifflin_2, MAXQ, MAXHILB, L1HILB, Nonsmooth_Brown.
* Lukšan et al. TEST29 problems 2, 6, 22 (the discrete boundary-value residual of Moré,
  Garbow & Hillstrom, cubic term) and 24, as max-norms of residuals.
* Gürbüzbalaban & Overton (2012): Nesterov's nonsmooth Chebyshev–Rosenbrock functions
  (Nesterov_1, Nesterov_2); Overton (thesis footnote): Nesterov_3.
* Thesis (3.23)–(3.24): Myopic_Decoupled, Myopic_Coupled.
* L1 = ‖x‖₁ (Skajaa 2010), L2 = ‖x‖₂ (Lewis & Overton 2013).
* Modified_Rosenbrock_1/2 (Henao 2014): the thesis gives no formula and the source is
  not at hand; reconstructed as the nonsmooth Rosenbrock ``8|x_{i+1} − x_i²| + (1 − x_i)²``
  of Lewis & Overton, chained over all ``i`` (1) or over disjoint pairs (2).

Not included: Convex_Nonsmooth (the thesis names it after Skajaa 2010 but gives no
formula, and neither the thesis nor its sources at hand define it or its random data).
With the bounds, Nesterov_1 has nonminimizing bound-constrained stationary points: e.g. at
n = 10 a point with f ≈ 1.349, x₆ at its upper bound and every residual
``x_{i+1} − 2x_i² + 1`` but one zero, where decreasing the nonzero one means following the
chain ``x_{i+1} = 2x_i² − 1`` to a last coordinate that is already at its bound (L-BFGS-B
started there cannot decrease f either). For
Chained_Mifflin_2 the unconstrained minimizer has no closed form; the bound recipe uses
``x* = 0`` for it. For TEST29_6/22/24, ``x*`` (the zero of the residual) is computed by a
damped Newton iteration on the tridiagonal system.
"""
from functools import lru_cache
from numbers import Integral

import numpy as np
from scipy.linalg import solve_banded


def _argmax_sub(values):
    k = int(np.argmax(values))
    return k, float(values[k])


# --- Haarala et al. (2004) --------------------------------------------------------------

def active_faces(x):
    """``max(log(|Σ_i x_i| + 1), max_i log(|x_i| + 1))`` (Haarala et al. 2004)."""
    s = x.sum()
    terms = np.log(np.abs(x) + 1.0)
    k, v = _argmax_sub(terms)
    g = np.zeros_like(x)
    fs = np.log(abs(s) + 1.0)
    if fs >= v:
        g[:] = np.sign(s) / (abs(s) + 1.0)
        return fs, g
    g[k] = np.sign(x[k]) / (abs(x[k]) + 1.0)
    return v, g


def _cb3_pieces(x):
    a, b = x[:-1], x[1:]
    return np.stack((a**4 + b**2, (2 - a) ** 2 + (2 - b) ** 2, 2 * np.exp(b - a)))


def _cb3_grads(x):
    a, b = x[:-1], x[1:]
    e = 2 * np.exp(b - a)
    da = np.stack((4 * a**3, -2 * (2 - a), -e))
    db = np.stack((2 * b, -2 * (2 - b), e))
    return da, db


def chained_cb3_1(x):
    """``Σ_{i<n} max(x_i⁴ + x_{i+1}², (2 − x_i)² + (2 − x_{i+1})², 2 exp(x_{i+1} − x_i))``
    (Haarala et al. 2004)."""
    pieces = _cb3_pieces(x)
    k = np.argmax(pieces, axis=0)
    da, db = _cb3_grads(x)
    cols = np.arange(x.size - 1)
    g = np.zeros_like(x)
    g[:-1] += da[k, cols]
    g[1:] += db[k, cols]
    return float(pieces[k, cols].sum()), g


def chained_cb3_2(x):
    """``max(Σ_{i<n} (x_i⁴ + x_{i+1}²), Σ_{i<n} ((2 − x_i)² + (2 − x_{i+1})²),
    Σ_{i<n} 2 exp(x_{i+1} − x_i))`` (Haarala et al. 2004)."""
    sums = _cb3_pieces(x).sum(axis=1)
    k = int(np.argmax(sums))
    da, db = _cb3_grads(x)
    g = np.zeros_like(x)
    g[:-1] += da[k]
    g[1:] += db[k]
    return float(sums[k]), g


def _crescent(x):
    a, b = x[:-1], x[1:]
    p1 = a**2 + (b - 1) ** 2 + b - 1
    p2 = -(a**2) - (b - 1) ** 2 + b + 1
    d1 = (2 * a, 2 * (b - 1) + 1)
    d2 = (-2 * a, -2 * (b - 1) + 1)
    return p1, p2, d1, d2


def chained_crescent_1(x):
    """``max(Σ_{i<n} (x_i² + (x_{i+1} − 1)² + x_{i+1} − 1),
    Σ_{i<n} (−x_i² − (x_{i+1} − 1)² + x_{i+1} + 1))`` (Haarala et al. 2004)."""
    p1, p2, d1, d2 = _crescent(x)
    s1, s2 = p1.sum(), p2.sum()
    da, db = d1 if s1 >= s2 else d2
    g = np.zeros_like(x)
    g[:-1] += da
    g[1:] += db
    return float(max(s1, s2)), g


def chained_crescent_2(x):
    """``Σ_{i<n} max(x_i² + (x_{i+1} − 1)² + x_{i+1} − 1, −x_i² − (x_{i+1} − 1)² + x_{i+1} + 1)``
    (Haarala et al. 2004)."""
    p1, p2, d1, d2 = _crescent(x)
    first = p1 >= p2
    g = np.zeros_like(x)
    g[:-1] += np.where(first, d1[0], d2[0])
    g[1:] += np.where(first, d1[1], d2[1])
    return float(np.maximum(p1, p2).sum()), g


def chained_lq(x):
    """``Σ_{i<n} (−x_i − x_{i+1} + max(0, x_i² + x_{i+1}² − 1))`` (Haarala et al. 2004)."""
    a, b = x[:-1], x[1:]
    q = a**2 + b**2 - 1
    second = q > 0
    g = np.zeros_like(x)
    g[:-1] += -1 + np.where(second, 2 * a, 0.0)
    g[1:] += -1 + np.where(second, 2 * b, 0.0)
    return float((-a - b + np.maximum(q, 0.0)).sum()), g


def chained_mifflin_2(x):
    """``Σ_{i<n} (−x_i + 2 q_i + 1.75 |q_i|)``, ``q_i = x_i² + x_{i+1}² − 1``
    (Haarala et al. 2004)."""
    a, b = x[:-1], x[1:]
    q = a**2 + b**2 - 1
    c = 2 + 1.75 * np.sign(q)
    g = np.zeros_like(x)
    g[:-1] += -1 + 2 * a * c
    g[1:] += 2 * b * c
    return float((-a + 2 * q + 1.75 * np.abs(q)).sum()), g


def maxq(x):
    """``max_i x_i²`` (Haarala et al. 2004)."""
    k = int(np.argmax(x * x))
    g = np.zeros_like(x)
    g[k] = 2 * x[k]
    return float(x[k] ** 2), g


@lru_cache(maxsize=2)
def _hilbert(n):
    i = np.arange(n)
    H = 1.0 / (i[:, None] + i[None, :] + 1.0)
    H.setflags(write=False)
    return H


def maxhilb(x):
    """``max_i |(H x)_i|``, ``H`` the n×n Hilbert matrix ``H_ij = 1/(i + j − 1)``
    (Haarala et al. 2004)."""
    r = _hilbert(x.size) @ x
    k = int(np.argmax(np.abs(r)))
    return float(abs(r[k])), np.sign(r[k]) * _hilbert(x.size)[k]


def l1hilb(x):
    """``Σ_i |(H x)_i| = ‖H x‖₁``, ``H`` the n×n Hilbert matrix (Haarala et al. 2004)."""
    H = _hilbert(x.size)
    r = H @ x
    return float(np.abs(r).sum()), H.T @ np.sign(r)


def nonsmooth_brown(x):
    """``Σ_{i<n} (|x_i|^(x_{i+1}² + 1) + |x_{i+1}|^(x_i² + 1))`` (Haarala et al. 2004)."""
    a, b = x[:-1], x[1:]
    aa, ab = np.abs(a), np.abs(b)
    ea, eb = b**2 + 1, a**2 + 1
    t1, t2 = aa**ea, ab**eb
    with np.errstate(divide="ignore", invalid="ignore"):
        la = np.where(aa > 0, np.log(aa), 0.0)
        lb = np.where(ab > 0, np.log(ab), 0.0)
    g = np.zeros_like(x)
    g[:-1] += ea * aa ** (ea - 1) * np.sign(a) + t2 * lb * 2 * a
    g[1:] += eb * ab ** (eb - 1) * np.sign(b) + t1 * la * 2 * b
    return float((t1 + t2).sum()), g


# --- Lukšan et al. TEST29 ---------------------------------------------------------------

def test29_2(x):
    """``max_i |x_i| = ‖x‖_∞`` (Lukšan et al. TEST29 problem 2)."""
    k = int(np.argmax(np.abs(x)))
    g = np.zeros_like(x)
    g[k] = np.sign(x[k])
    return float(abs(x[k])), g


def _max_residual(x, r, dr):
    """``max_i |r_i|`` for tridiagonal ``r_i(x_{i-1}, x_i, x_{i+1})`` with ∂r_i/∂x_{i±1} = −1."""
    k = int(np.argmax(np.abs(r)))
    sg = np.sign(r[k])
    g = np.zeros_like(x)
    g[k] = sg * dr[k]
    if k > 0:
        g[k - 1] = -sg
    if k + 1 < x.size:
        g[k + 1] = -sg
    return float(abs(r[k])), g


def _neighbours(x, left=0.0, right=0.0):
    xl = np.concatenate(([left], x[:-1]))
    xr = np.concatenate((x[1:], [right]))
    return xl, xr


def _r6(x):
    xl, xr = _neighbours(x)
    return (3 - 2 * x) * x + 1 - xl - xr, 3 - 4 * x


def _r22(x):
    n = x.size
    h = 1.0 / (n + 1)
    t = h * np.arange(1, n + 1)
    xl, xr = _neighbours(x)
    c = x + t + 1
    return 2 * x + 0.5 * h * h * c**3 - xl - xr, 2 + 1.5 * h * h * c**2


def _r24(x):
    n = x.size
    h2 = 1.0 / (n + 1) ** 2
    xl, xr = _neighbours(x, 0.0, 1.0)
    return 2 * x + 10 * h2 * np.sinh(10 * x) - xl - xr, 2 + 100 * h2 * np.cosh(10 * x)


def test29_6(x):
    """``max_i |(3 − 2x_i) x_i + 1 − x_{i−1} − x_{i+1}|``, ``x_0 = x_{n+1} = 0``
    (Lukšan et al. TEST29 problem 6)."""
    return _max_residual(x, *_r6(x))


def test29_22(x):
    """``max_i |2x_i + h² (x_i + ih + 1)³ / 2 − x_{i−1} − x_{i+1}|``, ``h = 1/(n + 1)``,
    ``x_0 = x_{n+1} = 0`` (Lukšan et al. TEST29 problem 22)."""
    return _max_residual(x, *_r22(x))


def test29_24(x):
    """``max_i |2x_i + 10 h² sinh(10 x_i) − x_{i−1} − x_{i+1}|``, ``h = 1/(n + 1)``,
    ``x_0 = 0``, ``x_{n+1} = 1`` (Lukšan et al. TEST29 problem 24)."""
    return _max_residual(x, *_r24(x))


def _newton_zero(residual, x, iters=100):
    """Zero of a tridiagonal residual (off-diagonals −1) by damped Newton."""
    n = x.size
    ab = np.empty((3, n))
    ab[0], ab[2] = -1.0, -1.0
    r, dr = residual(x)
    for _ in range(iters):
        norm = np.abs(r).max()
        if norm < 1e-13:
            break
        ab[1] = dr
        step = solve_banded((1, 1), ab, -r)
        t = 1.0
        while t > 1e-8:
            xn = x + t * step
            rn, drn = residual(xn)
            if np.abs(rn).max() < norm:
                break
            t *= 0.5
        x, r, dr = xn, rn, drn
    return x


# --- Gürbüzbalaban & Overton (2012), Overton ----------------------------------------------

def nesterov_1(x):
    """``(x_1 − 1)²/4 + Σ_{i<n} |x_{i+1} − 2x_i² + 1|`` (Gürbüzbalaban & Overton 2012)."""
    a, b = x[:-1], x[1:]
    r = b - 2 * a**2 + 1
    s = np.sign(r)
    g = np.zeros_like(x)
    g[0] += 0.5 * (x[0] - 1)
    g[:-1] += -4 * a * s
    g[1:] += s
    return float(0.25 * (x[0] - 1) ** 2 + np.abs(r).sum()), g


def nesterov_2(x):
    """``|x_1 − 1|/4 + Σ_{i<n} |x_{i+1} − 2|x_i| + 1|`` (Gürbüzbalaban & Overton 2012)."""
    a, b = x[:-1], x[1:]
    r = b - 2 * np.abs(a) + 1
    s = np.sign(r)
    g = np.zeros_like(x)
    g[0] += 0.25 * np.sign(x[0] - 1)
    g[:-1] += -2 * np.sign(a) * s
    g[1:] += s
    return float(0.25 * abs(x[0] - 1) + np.abs(r).sum()), g


def nesterov_3(x):
    """``max(|x_1|, max_{i<n} |x_i − x_{i+1}|)`` (Overton, thesis footnote)."""
    d = np.abs(np.concatenate(([x[0]], x[:-1] - x[1:])))
    k = int(np.argmax(d))
    g = np.zeros_like(x)
    if k == 0:
        g[0] = np.sign(x[0])
    else:
        s = np.sign(x[k - 1] - x[k])
        g[k - 1], g[k] = s, -s
    return float(d[k]), g


# --- thesis (3.23)-(3.24), Skajaa, Lewis & Overton, Henao ---------------------------------

def _myopic(x, a, b):
    d = a - b
    q = a + 0.1 * b
    return float((np.abs(d) + q * q).sum()), np.sign(d) + 2 * q, -np.sign(d) + 0.2 * q


def myopic_coupled(x):
    """``Σ_{i<n} (|x_i − x_{i+1}| + (x_i + x_{i+1}/10)²)`` (thesis (3.23)–(3.24))."""
    f, ga, gb = _myopic(x, x[:-1], x[1:])
    g = np.zeros_like(x)
    g[:-1] += ga
    g[1:] += gb
    return f, g


def myopic_decoupled(x):
    """``Σ_{j≤n/2} (|x_{2j−1} − x_{2j}| + (x_{2j−1} + x_{2j}/10)²)``, n even
    (thesis (3.23)–(3.24))."""
    f, ga, gb = _myopic(x, x[0::2], x[1::2])
    g = np.empty_like(x)
    g[0::2], g[1::2] = ga, gb
    return f, g


def l1(x):
    """``‖x‖₁ = Σ_i |x_i|`` (Skajaa 2010); ``g = sign(x)``."""
    return float(np.abs(x).sum()), np.sign(x)


def l2(x):
    """``‖x‖₂`` (Lewis & Overton 2013); ``g = x/‖x‖₂``, and ``0`` at ``x = 0``."""
    nrm = float(np.linalg.norm(x))
    return nrm, (x / nrm if nrm > 0 else np.zeros_like(x))


def _rosenbrock_pieces(a, b):
    r = b - a * a
    return 8 * np.abs(r) + (1 - a) ** 2, -16 * a * np.sign(r) - 2 * (1 - a), 8 * np.sign(r)


def modified_rosenbrock_1(x):
    """``Σ_{i<n} (8|x_{i+1} − x_i²| + (1 − x_i)²)`` (Henao 2014, reconstructed as above)."""
    f, ga, gb = _rosenbrock_pieces(x[:-1], x[1:])
    g = np.zeros_like(x)
    g[:-1] += ga
    g[1:] += gb
    return float(f.sum()), g


def modified_rosenbrock_2(x):
    """``Σ_{j≤n/2} (8|x_{2j} − x_{2j−1}²| + (1 − x_{2j−1})²)``, n even
    (Henao 2014, reconstructed as above)."""
    f, ga, gb = _rosenbrock_pieces(x[0::2], x[1::2])
    g = np.empty_like(x)
    g[0::2], g[1::2] = ga, gb
    return float(f.sum()), g


# --- registry -----------------------------------------------------------------------------

def _const(value):
    return lambda n: np.full(n, float(value))


def _zero_of(residual, start):
    return lambda n: _newton_zero(residual, start(n))


#: name -> (objective, unconstrained minimizer as a function of n, dense O(n²) objective?)
PROBLEMS = {
    "Active_Faces": (active_faces, _const(0.0), False),
    "Chained_CB3_1": (chained_cb3_1, _const(1.0), False),
    "Chained_CB3_2": (chained_cb3_2, _const(1.0), False),
    "Chained_Crescent_1": (chained_crescent_1, _const(0.0), False),
    "Chained_Crescent_2": (chained_crescent_2, _const(0.0), False),
    "Chained_LQ": (chained_lq, _const(2.0**-0.5), False),
    "Chained_Mifflin_2": (chained_mifflin_2, _const(0.0), False),
    "L1": (l1, _const(0.0), False),
    "L1HILB": (l1hilb, _const(0.0), True),
    "L2": (l2, _const(0.0), False),
    "MAXHILB": (maxhilb, _const(0.0), True),
    "MAXQ": (maxq, _const(0.0), False),
    "Modified_Rosenbrock_1": (modified_rosenbrock_1, _const(1.0), False),
    "Modified_Rosenbrock_2": (modified_rosenbrock_2, _const(1.0), False),
    "Myopic_Coupled": (myopic_coupled, _const(0.0), False),
    "Myopic_Decoupled": (myopic_decoupled, _const(0.0), False),
    "Nesterov_1": (nesterov_1, _const(1.0), False),
    "Nesterov_2": (nesterov_2, _const(1.0), False),
    "Nesterov_3": (nesterov_3, _const(0.0), False),
    "Nonsmooth_Brown": (nonsmooth_brown, _const(0.0), False),
    "TEST29_2": (test29_2, _const(0.0), False),
    "TEST29_6": (test29_6, _zero_of(_r6, _const(-1.0)), False),
    "TEST29_22": (test29_22, _zero_of(_r22, _const(0.0)), False),
    "TEST29_24": (test29_24, _zero_of(_r24, lambda n: np.arange(1, n + 1) / (n + 1.0)), False),
}


class BoundedProblem:
    """One Table 3.2 problem at dimension ``n`` with the thesis' bounds.

    Attributes
    ----------
    name : str
    n : int
    fun : callable
        ``fun(x) -> (f, g)``.
    x_uncon : ndarray
        Unconstrained minimizer used by the bound recipe.
    lb, ub : ndarray
        Bounds.
    dense : bool
        True for the O(n²) Hilbert-matrix problems.
    """

    def __init__(self, name, n):
        if name not in PROBLEMS:
            raise ValueError(f"unknown problem {name!r}; choose from {sorted(PROBLEMS)}")
        if not (isinstance(n, Integral) and n >= 2 and n % 2 == 0):
            raise ValueError(f"n must be an even integer >= 2, got {n!r}")
        self.name, self.n = name, int(n)
        self.fun, xstar, self.dense = PROBLEMS[name]
        self.x_uncon = xstar(n)
        even = np.arange(n) % 2 == 1  # 1-based even indices
        self.lb = np.where(even, self.x_uncon - 5.5, -100.0)
        self.ub = np.where(even, self.x_uncon - 0.5, 100.0)

    @property
    def bounds(self):
        """``(lo, hi)`` pairs for ``minimize``-style solvers."""
        return list(zip(self.lb, self.ub))

    def starting_points(self, n_starts, random_state=None):
        """``n_starts`` points ``U(−2, 2)`` around the midpoint of the bounds (thesis 3.3.1)."""
        rng = np.random.default_rng(random_state)
        mid = 0.5 * (self.lb + self.ub)
        return mid + rng.uniform(-2.0, 2.0, size=(n_starts, self.n))


def problem_names():
    """Names of the available Table 3.2 problems, in table order."""
    return list(PROBLEMS)
