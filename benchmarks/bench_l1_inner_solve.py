"""OBA's subspace Newton systems: a formed Hessian against coordinate-descent sweeps.

LIBLINEAR (newGLMNET) approximately minimizes each Newton model by one or two cycles of
coordinate descent (CD), each a pass over the free columns' entries that reads and updates
the margins: 2 nnz(X_F) entry visits, as many as one matrix-free Hessian product. OBA forms
the subspace Hessian instead, Σᵢ rᵢ(rᵢ + 1)/2 scattered updates for rᵢ free entries in row i,
and solves it by CG to 1% (the residual's ∞-norm against ‖g_F‖∞; the thesis' 10% on
matrix-free products). For each system an OBA fit to tol 1e-4 forms (no intercept, the ℓ1
table's setting), the table gives the free columns, the Gram's updates in units of one CD
sweep (2 nnz(X_F)), the CG iterations on the formed matrix (Jacobi-preconditioned, as in the
fit) and the cyclic CD (Gauss–Seidel) sweeps that bring the same system, from d = 0, to 10%
and to 1%. Writes section "l1_inner_solve" of doc/benchmarks.md::

    python benchmarks/bench_l1_inner_solve.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import math
import sys

import numpy as np
import scipy.linalg

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_l1_logistic import load  # noqa: E402

from sparsekit._cython import _oba_kernels as K  # noqa: E402
from sparsekit.linear_model._l1_solve import oba_solve  # noqa: E402
from sparsekit.losses._logistic_datafit import Logistic, _ExplicitHessian  # noqa: E402
from sparsekit.optimize._cg import steihaug_cg  # noqa: E402

PROBLEMS = [("w8a", 0.1), ("w8a", 1.0), ("a9a", 0.1), ("a9a", 1.0)]
MAX_SWEEPS = 40


class _Recording(Logistic):
    """The binary datafit, keeping (x, free, matrix) of every Hessian it forms."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.formed = []

    def hessp(self, x, free):
        H = super().hessp(x, free)
        if H.is_explicit:
            self.formed.append((x.copy(), np.asarray(free).copy(), H.matrix.copy()))
        return H


def sweeps_to(A, b, targets):
    """Cyclic CD (Gauss–Seidel) sweeps on A d = −b from 0 until ‖A d + b‖∞ ≤ t ‖b‖∞, for
    each t of ``targets`` (None: not within MAX_SWEEPS)."""
    lower, upper = np.tril(A), np.triu(A, 1)
    d, bnorm = np.zeros_like(b), np.abs(b).max()
    found = {t: None for t in targets}
    for sweep in range(1, MAX_SWEEPS + 1):
        d = scipy.linalg.solve_triangular(lower, -b - upper @ d, lower=True)
        res = np.abs(A @ d + b).max() / bnorm
        for t in targets:
            if found[t] is None and res <= t:
                found[t] = sweep
        if all(v is not None for v in found.values()):
            break
    return [found[t] for t in targets]


def systems(name, C, tol=1e-4):
    """One row per Hessian that OBA's fit of (name, C) forms."""
    X, y = load(name)
    Xc = X.tocsc()
    datafit = _Recording(Xc, y, X_csr=X)
    res = oba_solve(datafit, C, tol, 2000, None, 0)
    mu = 1.0 / (C * datafit.n_samples)
    muw = mu * datafit.penalty_weights
    rows = []
    for it, (x, free, H) in enumerate(datafit.formed, 1):
        _, G = datafit.value_grad(x)
        n = x.size
        g, zeta, code = np.empty(n), np.empty(n), np.empty(n, dtype=np.int8)
        opt = K.subgradient_and_sets(x, G, muw, g, zeta, code)
        reg = min(1e-8, opt)
        A = H + reg * np.eye(H.shape[0])
        b = g[free]
        row_len = np.diff(X[:, free].tocsr().indptr).astype(np.float64)
        updates = float(row_len @ (row_len + 1.0)) / 2.0
        sweep = 2.0 * row_len.sum()
        _, _, n_cg = steihaug_cg(_ExplicitHessian(H, [0]), b, reg, 0.01, 1000, math.inf, True)
        s10, s1 = sweeps_to(A, b, (0.1, 0.01))
        rows.append([f"{name} ({X.shape[0]} × {X.shape[1]})", f"{C:g}", str(it),
                     str(free.size), f"{updates / sweep:.1f}", str(n_cg),
                     "—" if s10 is None else str(s10), "—" if s1 is None else str(s1)])
        print(" | ".join(rows[-1]), flush=True)
    return rows, res.nit


def _spread(values):
    """"a–b" over the values, "> MAX_SWEEPS" standing for a dash."""
    nums = [float(v) for v in values if v != "—"]
    top = f"> {MAX_SWEEPS}" if "—" in values else f"{max(nums):g}"
    return f"{min(nums):g}–{top}" if nums else top


def main():
    rows, fits = [], []
    for name, C in PROBLEMS:
        r, nit = systems(name, C)
        rows += r
        big = [row for row in r if int(row[3]) >= 50] or r   # past the first, tiny sets
        fits.append(f"{name} at C = {C:g}, {nit} iterations, {len(r)} formed; on the "
                    f"{len(big)} with ≥ 50 free columns the Gram costs {_spread([row[4] for row in big])} "
                    f"sweeps, CD needs {_spread([row[6] for row in big])} sweeps to 10% and "
                    f"{_spread([row[7] for row in big])} to 1%")
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ").split(" Writes")[0]
            + f" OBA's solve without the estimator's closing check; —: more than {MAX_SWEEPS}"
            " sweeps.\n\n" + "\n".join(f"- {f}." for f in fits) + "\n\n"
            + _report.markdown_table(
                ["data", "C", "system", "free columns", "Gram, in CD sweeps",
                 "CG iterations to 1%", "CD sweeps to 10%", "CD sweeps to 1%"], rows))
    _report.write_section("l1_inner_solve", "ℓ1 logistic regression: the subspace Newton "
                          "system, formed Hessian or coordinate descent", body)


if __name__ == "__main__":
    main()
