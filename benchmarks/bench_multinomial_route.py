"""Multinomial ℓ1 logistic regression with many classes: formed Hessians or matrix-free ones.

OBA's multinomial datafit forms the subspace Hessian when its cost rule says a formed
Hessian pays (about 150 matrix-free products' worth, measured where the products walk
columns: Mulan scene, MNIST). Where the products walk the rows of the free columns (sparse
X, 32 classes or more) they cost 2-6 times less, and the Hessian now stays matrix-free
there (``Multinomial.formed_row_walks = False``), its CG preconditioned by the class
blocks. For each problem, ``L1LogisticOBA(multiclass="multinomial")`` at its defaults
(intercepts, tol 1e-8, one thread) with the Hessians of row-walking products formed where
the rule says so (as before) and left matrix-free (the default), in turn, same process:
CPU seconds, iterations, Hessians formed, nonzero weights and the objective
F = C Σᵢ NLL + ‖W‖₁. Data: the first label of Mulan's Bibtex and Delicious training sets
(rows without a label dropped; those of ``sparsekit-compare``) and the Debian package
descriptions (TF-IDF of words and word pairs, 58 sections) at C a multiple of the
smallest C with a nonzero weight.

Writes section "multinomial_route" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_route.py [--repeat 1]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_compare import load as load_compare  # noqa: E402
from bench_l1_multinomial import load, objective, smallest_C  # noqa: E402

from sparsekit.linear_model import L1LogisticOBA  # noqa: E402
from sparsekit.losses._multinomial_datafit import Multinomial  # noqa: E402

#: (set, C values, whether they are multiples of the smallest C with a nonzero weight)
PROBLEMS = [("bibtex", (0.05, 0.2, 1.0), False), ("delicious", (0.05, 0.2, 1.0), False),
            ("debian", (10.0, 100.0), True)]
ARMS = (("formed where the rule says", True), ("matrix-free (default)", False))


def fit(X, y, C, formed):
    """(CPU seconds, estimator, Hessians formed) of one fit."""
    Multinomial.formed_row_walks = formed
    count = [0]
    gram = Multinomial._gram

    def counting(self, *args, **kwargs):
        count[0] += 1
        return gram(self, *args, **kwargs)

    Multinomial._gram = counting
    try:
        start = time.process_time()
        est = L1LogisticOBA(C=C, multiclass="multinomial").fit(X, y)
        return time.process_time() - start, est, count[0]
    finally:
        Multinomial._gram = gram
        Multinomial.formed_row_walks = False


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=1, help="fits per arm (median time)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    L1LogisticOBA(C=1.0, multiclass="multinomial").fit(
        np.eye(40)[np.arange(200) % 40], np.arange(200) % 40)   # imports, first calls
    rows = []
    for name, Cs, relative in PROBLEMS:
        if relative:
            X, y = load(name)
            base = smallest_C(X, y, 1.0)
        else:
            data = load_compare(name)
            X, y, base = data.X, data.y, 1.0
        for factor in Cs:
            C = factor * base
            out = {}
            for label, formed in ARMS:
                runs = [fit(X, y, C, formed) for _ in range(args.repeat)]
                seconds = float(np.median([r[0] for r in runs]))
                _, est, grams = runs[-1]
                F = objective(X, y, est.coef_, est.intercept_, C, 1.0)
                out[label] = (seconds, est, grams, F)
            F_best = min(v[3] for v in out.values())
            before = out[ARMS[0][0]][0]
            for label, (seconds, est, grams, F) in out.items():
                rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, K = {est.classes_.size})",
                             f"{factor:g} C_min" if relative else f"{C:g}", label,
                             f"{seconds:.2f}", f"{seconds / before:.2f}",
                             str(int(est.n_iter_[0])), str(grams),
                             str(int(np.count_nonzero(est.coef_))), f"{F:.10f}",
                             f"{(F - F_best) / abs(F_best):.1e}"])
                print(" | ".join(rows[-1]), flush=True)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "C", "Hessians of row-walking products", "CPU s", "time / formed",
                 "iterations", "Hessians formed", "nonzero weights", "F",
                 "F rel. above the lower"], rows))
    _report.write_section("multinomial_route",
                          "Multinomial ℓ1 logistic regression, many classes: formed or "
                          "matrix-free Hessians", body)


if __name__ == "__main__":
    main()
