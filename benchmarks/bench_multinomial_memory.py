"""L1LogisticOBA(multiclass="multinomial"): the memory of the fit, in copies of the weights.

On a model far larger than its data (sparse X of about 20 stored entries a row, restricted
to the columns it uses, 10 or 20 classes, labels in turn), the peak of allocated memory
during one fit (Python's tracemalloc, which sees NumPy's and SciPy's arrays), divided by
the size of the solver variable ((columns + 1) x classes float64 numbers): what the fit
holds beside X, the fitted coef_ included; and divided by what the check before a fit
counts (``MULTINOMIAL_ARRAYS``: arrays of the weights' size and of rows x classes, the
latter the scores, probabilities, residuals and curvature weights). ``max_iter=30`` at four
values of C: the larger C, the more weights OBA's free set holds, and the subspace step's
vectors have the free set's size. The counts are the peak from the first iteration on, on
the small free sets of the smaller Cs, rounded up: a fit that needs less does not exist,
one whose free set grows to most weights needs more.

Writes section "multinomial_memory" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_memory.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_sparsemax_solver_memory import fit_peak, problems  # noqa: E402

from sparsekit.linear_model import L1LogisticOBA  # noqa: E402
from sparsekit.linear_model._l1_logistic import MULTINOMIAL_ARRAYS  # noqa: E402

SHAPES = [(1000, 20_000, 20), (2000, 50_000, 10), (4000, 200_000, 20), (20_000, 50_000, 20)]
CS = (0.1, 1.0, 10.0, 100.0)


def main():
    rows = []
    for X, y, weights, cells in problems(SHAPES):
        n, k = X.shape[0], weights // (8 * (X.shape[1] + 1))
        counted = (MULTINOMIAL_ARRAYS["weights"] * weights
                   + MULTINOMIAL_ARRAYS["rows"] * 8 * n * k)
        for C in CS:
            clf = L1LogisticOBA(C=C, multiclass="multinomial", max_iter=30)
            peak = fit_peak(clf, X, y)
            rows.append(cells + [f"{8 * n * k / 2**20:.2f}", f"{C:g}", int(clf.n_iter_[0]),
                                 f"{np.count_nonzero(clf.coef_) / clf.coef_.size:.1%}",
                                 f"{peak / weights:.2f}", f"{peak / counted:.2f}"])
            print(*rows[-1], flush=True)
    body = f"""{__doc__.split("Writes section")[0].split(chr(10), 2)[2].strip()}
``MULTINOMIAL_ARRAYS`` = {MULTINOMIAL_ARRAYS}.

{_report.markdown_table(["X (rows x used columns)", "X MiB", "weights MiB",
                         "rows x classes MiB", "C", "iterations", "nonzero weights",
                         "peak / weights", "peak / counted"], rows)}
"""
    _report.write_section("multinomial_memory",
                          "L1LogisticOBA: the memory of the multinomial fit", body)


if __name__ == "__main__":
    main()
