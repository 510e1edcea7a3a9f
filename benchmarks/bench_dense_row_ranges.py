"""Dense X read on each column's row range: OBA on the thesis' Synthetic matrices.

The binary datafit records, for a dense X, the rows [lo, hi) between each column's first and
last nonzero, and its products (margins, gradient, Hessian products, Jacobi diagonal) read
only those; the thesis' Synthetic X is an upper-triangular Cholesky factor, so they read
half of it (LIBLINEAR skips the same zeros through its sparse copy). Same fits with the
ranges set to every row (the products before), in alternating order, CPU seconds, best of
``--repeat``, with the iterations both ways and the largest coefficient difference; and
the time of one Hessian product on all columns, both ways. Writes section "dense_row_ranges" of doc/benchmarks.md::

    python benchmarks/bench_dense_row_ranges.py [--repeat 5]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit._cython import _oba_kernels as K  # noqa: E402
from sparsekit.datasets import make_thesis_synthetic  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402
from sparsekit.losses import _logistic_datafit  # noqa: E402

SIZES = (2000, 5000)
PROBLEMS = [(1.0, 1e-4), (1.0, 1e-6), (10.0, 1e-4), (10.0, 1e-6)]


class _EveryRow:
    """While active, every binary datafit reads all rows of every column (the old products)."""

    def __init__(self):
        self.active = False
        self._init = _logistic_datafit._LinearDatafit.__init__
        outer = self

        def init(datafit, *args, **kwargs):
            outer._init(datafit, *args, **kwargs)
            if outer.active:
                datafit._rows = (None, None)

        _logistic_datafit._LinearDatafit.__init__ = init


def product_time(X, ranges, repeat):
    """Best CPU seconds of one Hessian product on all columns."""
    n, p = X.shape
    cols = np.arange(p, dtype=np.int64)
    D, v, tmp, out = np.full(n, 0.2), np.ones(p), np.empty(n), np.empty(p)
    best = np.inf
    for _ in range(max(repeat, 5)):
        t = time.process_time()
        K.hessp_dense(X, cols, D, v, False, tmp, out, *ranges)
        best = min(best, time.process_time() - t)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    switch = _EveryRow()
    rows = []
    for size in SIZES:
        X, y = make_thesis_synthetic(size, random_state=0)
        X = np.asfortranarray(X)
        lo, hi = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        t = time.process_time()
        K.column_row_ranges(X, lo, hi)
        scan = time.process_time() - t
        read = float((hi - lo).sum()) / X.size
        full = product_time(X, (None, None), args.repeat)
        ranged = product_time(X, (lo, hi), args.repeat)
        rows.append([f"Synthetic-{size}", "one Hessian product", "", f"{full * 1e3:.2f} ms",
                     f"{ranged * 1e3:.2f} ms", f"{ranged / full:.2f}", "",
                     f"reads {read:.0%} of X; ranges found in {scan * 1e3:.1f} ms"])
        print(" | ".join(rows[-1]), flush=True)
        for C, tol in PROBLEMS:
            times, coefs = {True: [], False: []}, {}
            for _ in range(args.repeat):
                for every_row in (True, False):
                    switch.active = every_row
                    t = time.process_time()
                    est = L1LogisticOBA(C=C, tol=tol, fit_intercept=False,
                                        max_iter=2000).fit(X, y)
                    times[every_row].append(time.process_time() - t)
                    coefs[every_row] = (est.coef_.ravel().copy(), int(est.n_iter_[0]))
            switch.active = False
            before, after = min(times[True]), min(times[False])
            diff = float(np.abs(coefs[True][0] - coefs[False][0]).max())
            rows.append([f"Synthetic-{size}", f"{C:g}", f"{tol:g}", f"{before:.3f} s",
                         f"{after:.3f} s", f"{after / before:.2f}",
                         f"{coefs[True][1]} / {coefs[False][1]}", f"largest Δcoef {diff:.1e}"])
            print(" | ".join(rows[-1]), flush=True)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ").split(" Writes")[0]
            + "\n\n" + _report.markdown_table(
                ["data", "C", "tol", "every row", "row ranges", "ratio", "iterations",
                 "notes"], rows))
    _report.write_section("dense_row_ranges", "Dense X read on each column's row range", body)


if __name__ == "__main__":
    main()
