"""L1LogisticOBA on a tall sparse X in memory: its rows walked for the margins, the gradient
and the Hessian products, or its columns.

The problem of bench_dask.py (``--rows`` rows, 2,000 features, 1% of the entries nonzero, a
planted sparse w) fitted at C = 0.1, tol 1e-8, in this process, from CSR and from CSC input,
with the estimator's route (past ``Logistic.row_walk_rows`` rows its margins, gradient and
matrix-free Hessian products walk the rows of a CSR copy) and with the columns walked as
below that size (``row_walk_rows`` set above the number of rows). Process CPU seconds of
each fit (one thread; the CSR copy of a CSC input included), the two routes alternated,
``--rounds`` rounds, the median reported; and the largest coefficient difference between
the routes. The peer, in the same run: LIBLINEAR ``-s 6 -B 1 -R`` (the same objective, the
intercept unpenalized) at its default ``-e 0.01`` and at ``-e 1e-4`` (scikit-learn's ``tol``
for its ``liblinear`` solver), on the same rows (its problem built untimed), with its
objective's relative gap to OBA's. Then the multinomial fit (``multiclass="multinomial"``,
C = 0.1, the estimator's tol) of ``--multinomial-rows`` of those rows labelled with 5 classes
(the argmax of a planted sparse W plus Gumbel noise), CSR input, one fit each way: with
fewer than 32 classes its scores, gradient and Hessian products walk the rows only where the
(n, K) arrays take 16 MB or more (``Multinomial.row_walk_tall_bytes``; set above that size
for the columns).

Writes section "tall" of doc/benchmarks.md::

    python benchmarks/bench_tall.py [--rows 4194304] [--rounds 3]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp
from bench_dask import C, D, block

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402
from sparsekit.losses._logistic_datafit import Logistic  # noqa: E402
from sparsekit.losses._multinomial_datafit import Multinomial  # noqa: E402


def fit(X, y, walk_rows):
    """(CPU seconds, fitted estimator) with the rows walked or not."""
    default = Logistic.row_walk_rows
    Logistic.row_walk_rows = default if walk_rows else X.shape[0] + 1
    try:
        start = time.process_time()
        est = L1LogisticOBA(C=C, tol=1e-8).fit(X, y)
        return time.process_time() - start, est
    finally:
        Logistic.row_walk_rows = default


def objective(X, y, coef, intercept):
    """LIBLINEAR's -s 6 objective ‖w‖₁ + C Σ log(1 + exp(−yᵢ (wᵀxᵢ + b))), y in {0, 1}."""
    margins = (2.0 * y - 1.0) * (X @ coef + intercept)
    return float(np.abs(coef).sum() + C * np.logaddexp(0.0, -margins).sum())


def liblinear(X, y, tol):
    """(CPU seconds, coef, intercept) of LIBLINEAR -s 6 -B 1 -R at ``-e tol``."""
    from liblinear import liblinearutil

    prob = liblinearutil.problem(np.where(y == 1, 1.0, -1.0), X)
    param = liblinearutil.parameter(f"-s 6 -B 1 -R -q -c {C} -e {tol}")
    start = time.process_time()
    model = liblinearutil.train(prob, param)
    seconds = time.process_time() - start
    W = np.ctypeslib.as_array(model.w, shape=(X.shape[1] + 1,))
    sign = 1.0 if model.get_labels()[0] == 1 else -1.0
    return seconds, sign * W[:-1], sign * W[-1]


def multinomial(X, y, walk_rows):
    """(CPU seconds, fitted estimator) of the multinomial fit, rows walked or not."""
    default = Multinomial.row_walk_tall_bytes
    Multinomial.row_walk_tall_bytes = default if walk_rows else 1 << 62
    try:
        start = time.process_time()
        est = L1LogisticOBA(C=C, multiclass="multinomial").fit(X, y)
        return time.process_time() - start, est
    finally:
        Multinomial.row_walk_tall_bytes = default


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1 << 22)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--multinomial-rows", type=int, default=1 << 20)
    args = parser.parse_args()
    blocks = 16
    parts = [block(seed, args.rows // blocks) for seed in range(blocks)]
    X = sp.vstack([p[0] for p in parts], format="csr")
    y = np.concatenate([p[1] for p in parts])
    del parts
    layouts = {"CSR": X, "CSC": X.tocsc()}
    rows, peers = [], []
    for name, Z in layouts.items():
        times = {True: [], False: []}
        fits = {}
        for _ in range(args.rounds):
            for walk_rows in (True, False):
                seconds, fits[walk_rows] = fit(Z, y, walk_rows)
                times[walk_rows].append(seconds)
        by_rows, by_cols = (float(np.median(times[w])) for w in (True, False))
        gap = float(np.abs(fits[True].coef_ - fits[False].coef_).max()
                    / np.abs(fits[False].coef_).max())
        rows.append([name, f"{by_rows:.2f}", f"{by_cols:.2f}", f"{by_cols / by_rows:.2f}x",
                     f"{int(fits[True].n_iter_[0])} / {int(fits[False].n_iter_[0])}",
                     f"{gap:.1e}"])
        print(rows[-1], flush=True)
        if name == "CSR":
            est = fits[True]
            best = objective(X, y, est.coef_.ravel(), float(est.intercept_[0]))
            for tol in (1e-2, 1e-4):
                seconds, coef, intercept = liblinear(X, y, tol)
                gap = objective(X, y, coef, intercept) / best - 1.0
                peers.append([f"LIBLINEAR -e {tol:g}", f"{seconds:.2f}",
                              f"{seconds / by_rows:.2f}x", f"{gap:.1e}"])
                print(peers[-1], flush=True)
    Xm = X[:args.multinomial_rows]
    rng = np.random.default_rng(1)
    W = np.zeros((D, 5))
    W[rng.choice(D, 60, replace=False)] = 2.0 * rng.standard_normal((60, 5))
    ym = np.argmax(Xm @ W + rng.gumbel(size=(Xm.shape[0], 5)), axis=1)
    fits, seconds = {}, {}
    for walk_rows in (True, False):
        seconds[walk_rows], fits[walk_rows] = multinomial(Xm, ym, walk_rows)
        print(walk_rows, seconds[walk_rows], flush=True)
    gap = float(np.abs(fits[True].coef_ - fits[False].coef_).max()
                / np.abs(fits[False].coef_).max())
    multi = [[f"{Xm.shape[0]:,} x {D:,}, 5 classes", f"{seconds[True]:.2f}",
              f"{seconds[False]:.2f}", f"{seconds[False] / seconds[True]:.2f}x",
              f"{int(fits[True].n_iter_[0])} / {int(fits[False].n_iter_[0])}", f"{gap:.1e}"]]
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ")
            + f"\n\nX: {X.shape[0]:,} x {D:,}, {X.nnz:,} nonzeros "
            f"({(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 1e6:.0f} MB as CSR); "
            f"row_walk_rows = {Logistic.row_walk_rows:,}.\n\n"
            + _report.markdown_table(
                ["input", "rows walked (s)", "columns walked (s)", "speed-up",
                 "OBA iterations (rows / columns)",
                 "largest coefficient difference, relative"], rows)
            + "\n\nThe peer on the CSR rows (\"/ OBA\": its time over OBA's with the rows "
            "walked; the objective's gap relative to OBA's, tol 1e-8):\n\n"
            + _report.markdown_table(["solver", "CPU seconds", "/ OBA",
                                      "objective gap to OBA's, relative"], peers)
            + "\n\nThe multinomial fit:\n\n"
            + _report.markdown_table(
                ["rows", "rows walked (s)", "columns walked (s)", "speed-up",
                 "OBA iterations (rows / columns)",
                 "largest coefficient difference, relative"], multi))
    _report.write_section("tall", "L1LogisticOBA on a tall sparse X: rows or columns walked",
                          body)


if __name__ == "__main__":
    main()
