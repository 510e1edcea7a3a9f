"""OBA's Newton systems on formed Hessians: the CG alone, or a Cholesky solve once it runs long.

Where the multinomial ℓ1 fit forms its subspace Hessian (a dense X, or a sparse one with few
free entries), its CG (Jacobi-preconditioned, to 1% of the gradient, at most 1,000
iterations) runs hundreds of iterations on the ill-conditioned Hessians of nearly separable
classes, at large C, and may stop at its cap short of the 1%. A CG on a formed matrix of at
least ``DIRECT_MIN_SIZE`` rows that is still short of its tolerance and of the trust radius
after ``DIRECT_AFTER`` iterations now solves by a Cholesky factorization (the Newton point,
or where the segment to it from the CG's iterate meets the radius). Each row fits
``L1LogisticOBA(multiclass="multinomial")`` from w = 0 on digits (pixels / 16), Mulan scene
(first label) and MNIST (pixels / 255, CSR), C a multiple of the smallest C with a nonzero
weight, at tol 1e-4 and 1e-6, with the CG alone (``DIRECT_AFTER`` past any cap: the route
before) and with the direct solves: wall seconds (one thread; the median of 3 under a
second), OBA iterations, direct solves, CG iterations on formed Hessians, and the
objective's excess over the lowest any of the row's four runs reached (relative). Second
table: ``L1LogisticOBACV(multiclass="multinomial")`` on scene over 6 C from 0.1 to 31.6
(3 folds), what a user's search over C meets, both ways (wall seconds, one fit each).

Writes section "formed_cg_direct" of doc/benchmarks.md::

    python benchmarks/bench_formed_cg_direct.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import time

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_l1_multinomial import load, objective, smallest_C, warm_up  # noqa: E402

import sparsekit.optimize._cg as cgm  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA, L1LogisticOBACV  # noqa: E402

#: (data set, C as a multiple of the smallest active C, l1_ratio)
ROWS = [("digits", 1000, 1.0), ("digits", 10000, 1.0), ("scene", 100, 1.0),
        ("scene", 1000, 1.0), ("scene", 3000, 1.0), ("scene", 1000, 0.5), ("mnist", 10, 1.0)]
TOLS = (1e-4, 1e-6)
ROUTES = {"CG alone (before)": 10**9, "Cholesky after the CG's DIRECT_AFTER": cgm.DIRECT_AFTER}


class _Kernels:
    """The CG's kernels, with cg_dense counting its iterations into :class:`_Counts`."""

    def __init__(self, kernels):
        self._kernels = kernels

    def __getattr__(self, name):
        return getattr(self._kernels, name)

    def cg_dense(self, *args):
        it, ended = self._kernels.cg_dense(*args)
        _Counts.cg += it
        return it, ended


class _Counts:
    """Direct solves and CG iterations on formed Hessians, counted while in a with block."""

    direct = cg = 0

    def __enter__(self):
        _Counts.direct = _Counts.cg = 0
        self._saved = cgm._direct_step, cgm.K
        direct_step = cgm._direct_step

        def counted(*args):
            _Counts.direct += 1
            return direct_step(*args)

        cgm._direct_step, cgm.K = counted, _Kernels(cgm.K)
        return self

    def __exit__(self, *exc):
        cgm._direct_step, cgm.K = self._saved


def fit(X, y, C, l1_ratio, tol):
    """(seconds, iterations, direct solves, CG iterations, F) of one fit; the median of 3
    seconds under a second (the counts and F of the last)."""
    seconds = []
    while len(seconds) < (1 if seconds and seconds[0] >= 1.0 else 3):
        with _Counts():
            t0 = time.perf_counter()
            model = L1LogisticOBA(C=C, tol=tol, multiclass="multinomial", l1_ratio=l1_ratio,
                                  max_iter=5000).fit(X, y)
            seconds.append(time.perf_counter() - t0)
    return (float(np.median(seconds)), int(model.n_iter_[0]), _Counts.direct, _Counts.cg,
            objective(X, y, model.coef_, model.intercept_, C, l1_ratio))


def cross_validation():
    """The second table's rows: L1LogisticOBACV on scene by each route."""
    X, y = load("scene")
    rows = []
    for route, after in ROUTES.items():
        cgm.DIRECT_AFTER = after
        with _Counts():
            t0 = time.perf_counter()
            model = L1LogisticOBACV(Cs=np.logspace(-1, 1.5, 6), cv=3,
                                    multiclass="multinomial").fit(X, y)
            seconds = time.perf_counter() - t0
        rows.append([f"scene ({X.shape[0]} x {X.shape[1]}, K = {len(np.unique(y))})", route,
                     f"{seconds:.1f}", str(_Counts.direct), str(_Counts.cg),
                     f"{float(np.ravel(model.C_)[0]):.4g}"])
        print(*rows[-1], flush=True)
    cgm.DIRECT_AFTER = ROUTES["Cholesky after the CG's DIRECT_AFTER"]
    return rows


def main():
    warm_up()
    rows = []
    for name, factor, l1_ratio in ROWS:
        X, y = load(name)
        C = factor * smallest_C(X, y, l1_ratio)
        runs = []
        for tol in TOLS:
            for route, after in ROUTES.items():
                cgm.DIRECT_AFTER = after
                runs.append((tol, route, *fit(X, y, C, l1_ratio, tol)))
                print(name, factor, l1_ratio, *runs[-1], flush=True)
        cgm.DIRECT_AFTER = ROUTES["Cholesky after the CG's DIRECT_AFTER"]
        best = min(run[-1] for run in runs)
        for tol, route, seconds, nit, direct, cg, F in runs:
            rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, K = {len(np.unique(y))})",
                         f"{factor} C_min = {C:.4g}", f"{l1_ratio:g}", f"{tol:g}", route,
                         f"{seconds:.3f}", str(nit), str(direct), str(cg),
                         f"{(F - best) / abs(best):.1e}"])
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "C", "l1_ratio", "tol", "Newton systems", "seconds", "iterations",
                 "direct solves", "CG iterations", "F excess"], rows)
            + "\n\nL1LogisticOBACV, 6 C from 0.1 to 31.6, 3 folds:\n\n"
            + _report.markdown_table(
                ["data", "Newton systems", "seconds", "direct solves", "CG iterations",
                 "C chosen"], cross_validation()))
    _report.write_section("formed_cg_direct",
                          "OBA on formed Hessians: the CG, or a Cholesky solve once it runs "
                          "long", body)


if __name__ == "__main__":
    main()
