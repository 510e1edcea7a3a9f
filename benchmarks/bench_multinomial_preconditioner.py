"""The multinomial CG's preconditioner: the Hessian's class blocks, or its diagonal.

OBA's matrix-free Newton steps on the multinomial problem run CG capped at 20 products per
solve. Where many classes have few samples (the first label of Mulan's Delicious: 352
classes, the many-class set of ``sparsekit-compare``), the Hessian is ill-conditioned inside
each class's block of weights (features that occur together in a class's rows), the
Jacobi-preconditioned CG stops at its cap far from the Newton step, and OBA crawls; so it
does on MNIST at the estimator's default C = 1 (correlated pixels, ~3,100 free entries: too
many to form the Hessian), given as a sparse matrix or as a dense array (as ``fetch_openml``
gives it). The CG takes as preconditioner the blocks that couple one class's
free entries, factored by Cholesky, once a Hessian took 20 products or more, and for every
Hessian after one that had them, while forming the blocks costs at most 20 products; blocks
that cost more, but at most 20 for each of the 5 Hessians they may serve, are carried to the
next Hessians (cut to the entries still free, the joined ones as blocks of one) until 5
Hessians after their formation or until more than 5% of the free entries joined. For each
problem, OBA from w = 0 (intercepts free, the estimator's solve without its closing check)
with the diagonal preconditioner only (``Multinomial.block_worth = 0``), with blocks never
carried (``Multinomial.block_age = 0``) and with the default, same process, each run capped
at ``--cap`` seconds: iterations, Hessian products, class-block formations, the seconds to a
relative suboptimality of 1e-3, 1e-6 and 1e-8 against the lowest of the objectives, and the
objective F / (C n) reached.

Writes section "multinomial_preconditioner" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_preconditioner.py [--cap 200]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_compare import load as load_compare  # noqa: E402
from bench_l1_multinomial import load, smallest_C  # noqa: E402

from sparsekit.linear_model._l1_solve import MULTINOMIAL_CG_MAXITER, oba_solve  # noqa: E402
from sparsekit.losses import _multinomial_datafit as MD  # noqa: E402

#: (set, C as a multiple of the smallest C with a nonzero weight or None for C = 1, tol)
PROBLEMS = [("delicious", None, 1e-8), ("bibtex", None, 1e-8), ("debian", 100, 1e-6),
            ("mnist", 100, 1e-6), ("mnist", None, 1e-8), ("mnist array", None, 1e-8)]
#: the preconditioners compared: (label, Multinomial attributes)
WAYS = [("diagonal", {"block_worth": 0.0}), ("class blocks, never carried", {"block_age": 0}),
        ("class blocks, carried", {})]
LEVELS = (1e-3, 1e-6, 1e-8)


class _Counting(MD._MultinomialHessian):
    """The operator, counting the class blocks formed and those carried to it."""

    formed = carried = 0

    def _new_class_blocks(self):
        blocks, carry = super()._new_class_blocks()
        _Counting.formed += blocks is not None
        return blocks, carry

    def _carried_class_blocks(self):
        blocks = super()._carried_class_blocks()
        _Counting.carried += blocks is not None
        return blocks


def run(X, codes, C, tol, cap, settings):
    """(OptimizeResult or None, [(seconds, F)] after each iteration, "formations (Hessians
    carried to)") with the datafit's attributes ``settings``."""
    datafit = MD.Multinomial(X, codes, codes.max() + 1, fit_intercept=True)
    datafit._matrix_free = lambda free: _Counting(datafit, np.asarray(free, dtype=np.int64))
    for name, value in settings.items():
        setattr(datafit, name, value)
    _Counting.formed = _Counting.carried = 0
    res, trace = traced_solve(datafit, C, tol, cap)
    return res, trace, f"{_Counting.formed} ({_Counting.carried})"


def traced_solve(datafit, C, tol, cap, clock=time.perf_counter,
                 cg_maxiter=MULTINOMIAL_CG_MAXITER):
    """(OptimizeResult, [(seconds, F)] after each iteration) of the estimator's solve from
    w = 0, stopped once it has run ``cap`` seconds of ``clock`` (``cg_maxiter``: the
    multinomial fits' CG cap, or the binary ones' 1000)."""
    trace, t0 = [], clock()

    def record(intermediate_result):
        trace.append((clock() - t0, float(intermediate_result.fun)))
        if trace[-1][0] > cap:
            raise StopIteration

    res = oba_solve(datafit, C, tol, 100_000, None, 0, 1.0, cg_maxiter, record)
    return res, trace


def first_time(trace, F_star, level):
    hits = [t for t, F in trace if F - F_star <= level * abs(F_star)]
    return f"{hits[0]:.1f}" if hits else "—"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cap", type=float, default=200.0, help="seconds per run")
    args = parser.parse_args()
    rows = []
    for name, factor, tol in PROBLEMS:
        if name == "mnist array":
            X, y = load("mnist")
            X = np.asfortranarray(X.toarray())
        elif factor is None and name != "mnist":
            data = load_compare(name)
            X, y = data.X_l1, data.y
        else:
            X, y = load(name)
        codes = np.searchsorted(np.unique(y), y)
        C = factor * smallest_C(X, y, 1.0) if factor else 1.0
        results = {label: run(X, codes, C, tol, args.cap, settings)
                   for label, settings in WAYS}
        F_star = min(min(F for _, F in trace) for _, trace, _ in results.values())
        for label, (res, trace, formed) in results.items():
            capped = trace[-1][0] > args.cap
            rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, K = {codes.max() + 1})",
                         f"{C:.4g}", f"{tol:g}", label,
                         f"{res.nit}" + (" (cap)" if capped else ""), str(res.nhessp),
                         formed, *(first_time(trace, F_star, v) for v in LEVELS),
                         f"{trace[-1][0]:.1f}", f"{trace[-1][1]:.10e}"])
            print(" | ".join(rows[-1]), flush=True)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "C", "tol", "preconditioner", "iterations", "Hessian products",
                 "class blocks formed (carried to)", "s to 1e-3", "s to 1e-6", "s to 1e-8",
                 "s in all", "F / (C n)"], rows)
            + "\n\n—: not reached within the run; (cap): stopped by the cap; carried to: the "
            "Hessians that took blocks formed for an earlier one.")
    _report.write_section("multinomial_preconditioner",
                          "Multinomial ℓ1 logistic regression: the CG's preconditioner",
                          body)


if __name__ == "__main__":
    main()
