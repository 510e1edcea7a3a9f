"""L1LogisticOBA's matrix-free Hessian products on a copy of the free columns by rows.

The subspace Hessian products of a sparse X that is not walked by rows read the free
columns twice and update an n-vector between (``hessp_csc``). Where the solver lately made
at least ``Logistic.free_slice_min_products`` (16) products per Hessian, the free columns
are now copied by rows (kept for the next Hessians whose free columns it holds; at most
half of X's entries) once the Hessian's products pass ``Logistic.free_slice_after`` (3,
about a copy's cost), and each product then reads a row once (``hessp_free_slice``), with
the same sums in the same order. Each problem is fit with the copies ("copies") and without
them (the first threshold infinite: "column walks", the former code) in alternation, five
times each, on one thread: the median CPU seconds of each, their ratio, the copies made in
the last fit, and whether the two models are the same bit for bit. Problems: the l1
table's settings (no intercept, CSC input, tol 1e-4 and 1e-6) on the Debian descriptions
as TF-IDF of words and bigrams (section python against the rest) at C = 0.1, 1 and 10,
and on a9a and w8a at C = 1; the estimator's defaults (free intercept, tol 1e-8) on Debian
at C = 1 and 10, and one-vs-rest over its 58 sections ("debian, 58 sections") at C = 1.

Writes section "l1_free_slice" of doc/benchmarks.md::

    python benchmarks/bench_l1_free_slice.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_l1_logistic import load  # noqa: E402
from sparsekit.datasets import load_debian  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402
from sparsekit.losses._logistic_datafit import Logistic  # noqa: E402

#: (data, C, tol, fit_intercept)
PROBLEMS = [("a9a", 1.0, 1e-6, False), ("w8a", 1.0, 1e-6, False),
            *[("debian", C, tol, False) for C in (0.1, 1.0, 10.0) for tol in (1e-4, 1e-6)],
            ("debian", 1.0, 1e-8, True), ("debian", 10.0, 1e-8, True),
            ("debian, 58 sections", 1.0, 1e-8, True)]
DEFAULT = Logistic.free_slice_min_products


def fit(X, y, C, tol, intercept, copies):
    """(CPU seconds, fitted estimator, copies made), with or without the free-column
    copies."""
    Logistic.free_slice_min_products = DEFAULT if copies else np.inf
    est = L1LogisticOBA(C=C, tol=tol, fit_intercept=intercept)
    made = []
    copy = Logistic._copy_free_slice
    Logistic._copy_free_slice = lambda self, cols: made.append(1) or copy(self, cols)
    try:
        cpu = time.process_time()
        est.fit(X, y)
        return time.process_time() - cpu, est, len(made)
    finally:
        Logistic._copy_free_slice = copy


def load_problem(name):
    """(CSC X, y): the l1 table's data, or its Debian TF-IDF with the 58 sections."""
    if name != "debian, 58 sections":
        X, y = load(name)
        return X.tocsc(), y
    X, _ = load("debian")
    return X.tocsc(), np.asarray(load_debian(data_home=_report.DATA_HOME).section)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows, data = [], {}
    for name, C, tol, intercept in PROBLEMS:
        if name not in data:
            data[name] = load_problem(name)
        X, y = data[name]
        fit(X, y, C, tol, intercept, True)                     # warm-up
        runs = {False: [], True: []}
        for _ in range(args.rounds):
            for copies in (False, True):
                runs[copies].append(fit(X, y, C, tol, intercept, copies))
        walks, copied = runs[False][-1][1], runs[True][-1][1]
        same = (np.array_equal(walks.coef_, copied.coef_)
                and np.array_equal(walks.intercept_, copied.intercept_))
        t0 = statistics.median(r[0] for r in runs[False])
        t1 = statistics.median(r[0] for r in runs[True])
        rows.append([name, f"{C:g}", f"{tol:g}", "yes" if intercept else "no",
                     str(int(np.sum(copied.n_iter_))), f"{t0:.3f}", f"{t1:.3f}",
                     f"{t1 / t0:.2f}x", str(runs[True][-1][2]), "yes" if same else "no"])
        print(rows[-1], flush=True)
    Logistic.free_slice_min_products = DEFAULT
    body = (__doc__.split("\n\n")[1].replace("\n", " ") + "\n\n" + _report.markdown_table(
        ["data", "C", "tol", "intercept", "OBA iterations (all problems)", "CPU s, column walks",
         "CPU s, copies", "copies / column walks", "copies made", "same model"], rows))
    _report.write_section("l1_free_slice",
                          "L1LogisticOBA: matrix-free products on a copy of the free columns",
                          body)


if __name__ == "__main__":
    main()
