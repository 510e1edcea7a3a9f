"""Multinomial ℓ1 logistic regression with many classes: formed Hessians or matrix-free ones.

OBA's multinomial datafit forms the subspace Hessian when its cost rule says a formed
Hessian pays (about 150 matrix-free products' worth, measured where the products walk
columns: Mulan scene, MNIST). Where the products walk the rows of the free columns (sparse
X, 32 classes or more) they cost 2-6 times less, and a formed Hessian is now worth 40 of
them, priced as they walk (``Multinomial.formed_worth_rows``,
``Multinomial._row_product_cost``); before, the rule priced them as column walks. For
each problem, OBA from w = 0 (intercepts free, the estimator's solve without its closing
check, one thread) with the Hessians of row-walking products formed by the column rule
(as before), never formed, and formed by the rule on row-walking products (the default),
in turn, same process, each run capped at ``--cap`` CPU seconds: iterations, Hessians
formed, the CPU seconds to a relative suboptimality of 1e-3, 1e-6 and 1e-8 against the
lowest of the three objectives, the seconds in all and the objective F / (C n) reached.
Data: the first label of Mulan's Bibtex and Delicious training sets (rows without a label
dropped; those of ``sparsekit-compare``) at C = 0.05, 0.2 and 1, tol 1e-8 (the
estimator's), and the Debian package descriptions (TF-IDF of words and word pairs, 58
sections) at 10, 100 and 1000 times the smallest C with a nonzero weight, tol 1e-6.

Writes section "multinomial_route" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_route.py [--cap 400]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_compare import load as load_compare  # noqa: E402
from bench_l1_multinomial import load, smallest_C  # noqa: E402
from bench_multinomial_preconditioner import LEVELS, first_time, traced_solve  # noqa: E402

from sparsekit.losses._multinomial_datafit import Multinomial  # noqa: E402

#: (set, C values, whether they are multiples of the smallest C with a nonzero weight, tol)
PROBLEMS = [("bibtex", (0.05, 0.2, 1.0), False, 1e-8),
            ("delicious", (0.05, 0.2, 1.0), False, 1e-8),
            ("debian", (10.0, 100.0, 1000.0), True, 1e-6)]
ARMS = ("column rule (before)", "never formed", "row-walk rule (default)")


def run(X, codes, C, tol, cap, arm):
    """(OptimizeResult, [(CPU seconds, F)] after each iteration, Hessians formed)."""
    datafit = Multinomial(X, codes, codes.max() + 1, fit_intercept=True)
    if arm == ARMS[0]:   # a row-walking product priced as the column walk
        datafit._row_product_cost = lambda H: (datafit._product_cost(H) * datafit.formed_worth
                                               / datafit.formed_worth_rows)
    elif arm == ARMS[1]:
        datafit.formed_worth_rows = 0.0
    count, gram = [0], datafit._gram

    def counting(*args, **kwargs):
        count[0] += 1
        return gram(*args, **kwargs)

    datafit._gram = counting
    return (*traced_solve(datafit, C, tol, cap, time.process_time), count[0])


def multinomial_problem(name, relative):
    """(X, class codes 0..K-1, the unit of C): the smallest C with a nonzero weight where
    ``relative``, else 1 (Bibtex and Delicious: the first label, as ``sparsekit-compare``)."""
    if relative:
        X, y = load(name)
        base = smallest_C(X, y, 1.0)
    else:
        data = load_compare(name)
        X, y, base = data.X, data.y, 1.0
    return X, np.searchsorted(np.unique(y), y), base


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cap", type=float, default=400.0, help="CPU seconds per run")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for name, Cs, relative, tol in PROBLEMS:
        X, codes, base = multinomial_problem(name, relative)
        for factor in Cs:
            C = factor * base
            results = {arm: run(X, codes, C, tol, args.cap, arm) for arm in ARMS}
            F_star = min(min(F for _, F in trace) for _, trace, _ in results.values())
            for label, (res, trace, formed) in results.items():
                capped = trace[-1][0] > args.cap
                rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, K = {codes.max() + 1})",
                             f"{factor:g} C_min = {C:.4g}" if relative else f"{C:g}",
                             f"{tol:g}", label,
                             f"{res.nit}" + (" (cap)" if capped else ""), str(formed),
                             *(first_time(trace, F_star, v) for v in LEVELS),
                             f"{trace[-1][0]:.1f}", f"{trace[-1][1]:.12e}"])
                print(" | ".join(rows[-1]), flush=True)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "C", "tol", "Hessians of row-walking products", "iterations",
                 "Hessians formed", "s to 1e-3", "s to 1e-6", "s to 1e-8", "s in all",
                 "F / (C n)"], rows)
            + "\n\n—: not reached within the run; (cap): stopped by the cap.")
    _report.write_section("multinomial_route",
                          "Multinomial ℓ1 logistic regression, many classes: formed or "
                          "matrix-free Hessians", body)


if __name__ == "__main__":
    main()
