"""L1LogisticOBA(multiclass="multinomial"): the memory of the fit, in copies of the weights.

On a model far larger than its data (sparse X of about 20 stored entries a row, restricted
to the columns it uses, 10 or 20 classes, labels in turn), the peak of allocated memory
during one fit (Python's tracemalloc, which sees NumPy's and SciPy's arrays), divided by
the size of the solver variable ((columns + 1) x classes float64 numbers): what the fit
holds beside X, the fitted coef_ included; and divided by what the check before a fit
counts (``MULTINOMIAL_ARRAYS``: arrays of the weights' size and of rows x classes, the
latter the scores, probabilities, residuals and curvature weights). ``max_iter=30`` at four
values of C: the larger C, the more weights OBA's free set holds, and the subspace step's
vectors have the free set's size. Then three models of 45-54 MiB at one C each (``LARGE``),
where the solver's work areas of bounded size (the CG preconditioner's class blocks) weigh
little. The fit's CPU seconds are those of the traced fit (tracemalloc slows NumPy's
allocations), for orientation.

A path (``l1_logistic_path``) holds its solutions beside the solver's arrays, one per C
(the check counts them): on the first two models, 1 to 20 values of C from 1 to 1.6,
``max_iter=15``. Last, what three fits in a row (the first model, C = 1) leave allocated
when each returns, Python's cyclic garbage collector left to its own schedule: coef_ (one
array) and what the collector has not freed yet.

Writes section "multinomial_memory" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_memory.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import gc
import itertools
import sys
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_sparsemax_solver_memory import problems, quiet_peak  # noqa: E402

from sparsekit.linear_model import L1LogisticOBA, l1_logistic_path  # noqa: E402
from sparsekit.linear_model._l1_problems import MULTINOMIAL_ARRAYS  # noqa: E402

SHAPES = [(1000, 20_000, 20), (2000, 50_000, 10), (4000, 200_000, 20), (20_000, 50_000, 20)]
CS = (0.1, 1.0, 10.0, 100.0)
#: (rows, entries a row, columns, classes, C): models of 45-54 MiB, where the bounded work
#: areas (the CG preconditioner's class blocks, up to about 96 MiB) weigh little
LARGE = [(8000, 20, 600_000, 50, 10.0), (8000, 20, 600_000, 50, 1000.0),
         (30_000, 50, 300_000, 20, 100.0)]
PATH_LENGTHS = (1, 4, 10, 20)


def counted(X, weights, kept=0):
    """The bytes the check before a fit counts, with ``kept`` solutions."""
    n, k = X.shape[0], weights // (8 * (X.shape[1] + 1))
    return ((MULTINOMIAL_ARRAYS["weights"] + kept) * weights
            + MULTINOMIAL_ARRAYS["rows"] * 8 * n * k)


def large_problems():
    """:func:`problems`' tuples, and C, for the ``LARGE`` models (entries at uniformly
    drawn columns, a few repeated, restricted to the columns used)."""
    rng = np.random.default_rng(0)
    for n, per_row, d, k, C in LARGE:
        X = sp.csr_matrix((rng.random(n * per_row), (np.repeat(np.arange(n), per_row),
                                                      rng.integers(0, d, n * per_row))),
                          shape=(n, d))
        X.sum_duplicates()
        X = sp.csr_matrix(X[:, np.flatnonzero(X.getnnz(axis=0))])
        weights = (X.shape[1] + 1) * k * 8
        x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
        yield (X, np.arange(n) % k, weights, [f"{n} x {X.shape[1]:,}, {k} classes",
                                              f"{x_bytes / 2**20:.1f}",
                                              f"{weights / 2**20:.1f}"]), (C,)


def main():
    rows, path_rows = [], []
    small = ((problem, CS) for problem in problems(SHAPES))
    for (X, y, weights, cells), Cs in itertools.chain(small, large_problems()):
        n, k = X.shape[0], weights // (8 * (X.shape[1] + 1))
        for C in Cs:
            clf = L1LogisticOBA(C=C, multiclass="multinomial", max_iter=30)
            start = time.process_time()
            _, peak = quiet_peak(lambda: clf.fit(X, y))
            seconds = time.process_time() - start
            rows.append(cells + [f"{8 * n * k / 2**20:.2f}", f"{C:g}", int(clf.n_iter_[0]),
                                 f"{np.count_nonzero(clf.coef_) / clf.coef_.size:.1%}",
                                 f"{peak / weights:.2f}", f"{peak / counted(X, weights):.2f}",
                                 f"{seconds:.1f}"])
            print(*rows[-1], flush=True)
    for X, y, weights, cells in problems(SHAPES[:2]):
        for m in PATH_LENGTHS:
            (_, _, n_iter), peak = quiet_peak(lambda: l1_logistic_path(
                X, y, Cs=np.geomspace(1.0, 1.6, m), multiclass="multinomial", max_iter=15))
            path_rows.append(cells[:1] + [m, int(n_iter.sum()), f"{peak / weights:.2f}",
                                          f"{peak / counted(X, weights, m):.2f}"])
            print(*path_rows[-1], flush=True)
    X, y, weights, cells = next(problems(SHAPES[:1]))
    gc.collect()
    tracemalloc.start()
    left = []
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = L1LogisticOBA(C=1.0, multiclass="multinomial", max_iter=30).fit(X, y)
        left.append(f"{tracemalloc.get_traced_memory()[0] / weights:.2f}")
    tracemalloc.stop()
    print("held after each fit:", *left, flush=True)
    body = f"""{__doc__.split("Writes section")[0].split(chr(10), 2)[2].strip()}
``MULTINOMIAL_ARRAYS`` = {MULTINOMIAL_ARRAYS}.

{_report.markdown_table(["X (rows x used columns)", "X MiB", "weights MiB",
                         "rows x classes MiB", "C", "iterations", "nonzero weights",
                         "peak / weights", "peak / counted", "fit, CPU s (traced)"], rows)}

{_report.markdown_table(["X (rows x used columns)", "values of C", "iterations",
                         "peak / weights", "peak / counted"], path_rows)}

{_report.markdown_table(["X (rows x used columns)", "held after fit 1 / weights", "fit 2",
                         "fit 3"], [cells[:1] + left])}
"""
    _report.write_section("multinomial_memory",
                          "L1LogisticOBA: the memory of the multinomial fit", body)


if __name__ == "__main__":
    main()
