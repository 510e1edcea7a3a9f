"""OBA's step when the Newton direction carries nonzero coordinates through zero.

The orthant projection sets the coordinates that the subspace Newton direction d carries
across zero to zero, which undoes the balance d struck among the coordinates, and the
model search then accepts a short step (on Mulan scene at 1000 times the smallest C, 116
of 207 iterations took α < 1, 82 of them α < 0.1). ``minimize_oba(pin_crossings=True)``
(the default) then also minimizes the model with those coordinates pinned at zero and
searches the better direction. For each problem, OBA from w = 0 as the estimator runs it
(without its closing check, one thread), with and without the pinned direction, in turn,
``--repeat`` times, same process, each run capped at ``--cap`` CPU seconds; of each arm's
runs the faster: iterations, CPU seconds to a
relative suboptimality of 1e-3, 1e-6 and 1e-8 against the lower of the two objectives,
seconds in all, and the objective F / (C n) reached. Multinomial (intercepts free): the
first label of Mulan's Bibtex and Delicious training sets (those of ``sparsekit-compare``)
at C = 0.05, 0.2 and 1, tol 1e-8 (the estimator's), digits, Mulan scene (first label),
MNIST and the Debian package descriptions (58 sections) at 10, 100 and 1000 times the
smallest C with a nonzero weight (MNIST and Debian: 10 and 100), tol 1e-6. Binary (no
intercept, the ℓ1 table's problems): a9a, w8a, MNIST (digits 0-4 against 5-9) and
Debian (python or not) at C = 0.1, 1 and 10, tol 1e-6.

Writes section "oba_pinned" of doc/benchmarks.md::

    python benchmarks/bench_oba_pinned.py [--cap 300] [--repeat 2]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import functools
import sys
import time
import warnings

import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
import bench_l1_logistic as binary  # noqa: E402
from bench_multinomial_preconditioner import LEVELS, first_time, traced_solve  # noqa: E402
from bench_multinomial_route import multinomial_problem  # noqa: E402

from sparsekit.linear_model import _l1_solve  # noqa: E402
from sparsekit.losses._logistic_datafit import Logistic  # noqa: E402
from sparsekit.losses._multinomial_datafit import Multinomial  # noqa: E402
from sparsekit.optimize import minimize_oba  # noqa: E402

#: (set, C values, whether they are multiples of the smallest C with a nonzero weight, tol)
MULTINOMIAL = [("bibtex", (0.05, 0.2, 1.0), False, 1e-8),
               ("delicious", (0.05, 0.2, 1.0), False, 1e-8),
               ("digits", (10.0, 100.0, 1000.0), True, 1e-6),
               ("scene", (10.0, 100.0, 1000.0), True, 1e-6),
               ("mnist", (10.0, 100.0), True, 1e-6),
               ("debian", (10.0, 100.0), True, 1e-6)]
BINARY = [("a9a", (0.1, 1.0, 10.0)), ("w8a", (0.1, 1.0, 10.0)), ("mnist", (0.1, 1.0, 10.0)),
          ("debian", (0.1, 1.0, 10.0))]
ARMS = ("not pinned (before)", "pinned (default)")


def run(datafit, C, tol, cap, arm, cg_maxiter):
    """(OptimizeResult, [(CPU seconds, F)] after each iteration) of one arm."""
    _l1_solve.minimize_oba = functools.partial(minimize_oba,
                                                  pin_crossings=arm == ARMS[1])
    try:
        return traced_solve(datafit, C, tol, cap, time.process_time, cg_maxiter)
    finally:
        _l1_solve.minimize_oba = minimize_oba


def compare(rows, label, C_cell, tol, make_datafit, C, cap, cg_maxiter, repeat):
    results = {}
    for _ in range(repeat):   # the arms in turn; each keeps its faster run
        for arm in ARMS:
            res, trace = run(make_datafit(), C, tol, cap, arm, cg_maxiter)
            if arm not in results or trace[-1][0] < results[arm][1][-1][0]:
                results[arm] = (res, trace)
    F_star = min(min(F for _, F in trace) for _, trace in results.values())
    for arm, (res, trace) in results.items():
        capped = trace[-1][0] > cap
        rows.append([label, C_cell, f"{tol:g}", arm, f"{res.nit}" + (" (cap)" if capped else ""),
                     *(first_time(trace, F_star, v) for v in LEVELS),
                     f"{trace[-1][0]:.2f}", f"{trace[-1][1]:.12e}"])
        print(" | ".join(rows[-1]), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cap", type=float, default=300.0, help="CPU seconds per run")
    parser.add_argument("--repeat", type=int, default=2, help="runs per arm (the faster kept)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for name, Cs, relative, tol in MULTINOMIAL:
        X, codes, base = multinomial_problem(name, relative)
        K = int(codes.max()) + 1
        for factor in Cs:
            C = factor * base
            compare(rows, f"{name} multinomial ({X.shape[0]} x {X.shape[1]}, K = {K})",
                    f"{factor:g} C_min = {C:.4g}" if relative else f"{C:g}", tol,
                    lambda: Multinomial(X, codes, K, fit_intercept=True), C, args.cap,
                    _l1_solve.MULTINOMIAL_CG_MAXITER, args.repeat)
    for name, Cs in BINARY:
        data = binary.load(name)
        X, signs = sp.csc_matrix(data[0]), data[1]
        for C in Cs:
            compare(rows, f"{name} binary ({X.shape[0]} x {X.shape[1]})", f"{C:g}", 1e-6,
                    lambda: Logistic(X, signs, fit_intercept=False), C, args.cap, 1000,
                    args.repeat)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "C", "tol", "direction", "iterations", "s to 1e-3", "s to 1e-6",
                 "s to 1e-8", "s in all", "F / (C n)"], rows)
            + "\n\n—: not reached within the run; (cap): stopped by the cap.")
    _report.write_section("oba_pinned", "OBA: the Newton direction with crossing coordinates "
                          "pinned at zero", body)


if __name__ == "__main__":
    main()
