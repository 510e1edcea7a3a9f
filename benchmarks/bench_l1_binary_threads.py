"""L1LogisticOBA on a binary problem of sparse X with ``n_jobs=2``: wall time and model.

The estimator at its defaults but ``C`` (free intercept, ``tol=1e-8``) on a9a and w8a
(C = 1), on the Debian descriptions as TF-IDF of words and bigrams (section python
against the rest, C = 1 and 10) and on a tall synthetic set (500,000 rows, 2,000 columns,
20 stored entries a row, labels of a sparse teacher, C = 1), fit with ``n_jobs`` 1 and 2
in alternation, five times each: the median wall time of each, their ratio, the
process's CPU seconds over the wall seconds of the two-thread fits, and whether the two
models are the same bit for bit. With two jobs the datafit's walks of X's columns (the
margins, the gradient, the matrix-free Hessian products and their diagonal) run on two
OpenMP threads where a walk reads at least 2**20 stored entries (on a9a and w8a none
does: their rows show what the option costs there); the formed Hessians stay on one, so
the gain follows the share of the fit those walks take: most of Debian's at C = 10, whose
2,800 free columns are solved by matrix-free products, little of the tall set's, which
forms its Hessians of up to 2,000 columns at each iteration. On this 2-core machine two
threads are the most it can show.

Writes section "l1_binary_threads" of doc/benchmarks.md::

    python benchmarks/bench_l1_binary_threads.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_l1_logistic import load  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402

PROBLEMS = [("a9a", 1.0), ("w8a", 1.0), ("debian", 1.0), ("debian", 10.0), ("tall", 1.0)]


def tall(n=500_000, d=2_000, per_row=20, seed=0):
    """A tall sparse X of ``per_row`` uniform entries a row and the labels of a teacher
    with 5% of its weights nonzero (plus noise)."""
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, d, size=(n, per_row))
    X = sp.csr_matrix((rng.uniform(0.0, 1.0, n * per_row), indices.ravel(),
                       np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    X.sum_duplicates()
    teacher = np.where(rng.random(d) < 0.05, rng.standard_normal(d), 0.0)
    margins = X @ teacher
    y = np.where(margins - np.median(margins) + 0.3 * rng.standard_normal(n) > 0, 1, -1)
    return X, y


def fit(X, y, C, n_jobs):
    """(wall seconds, CPU seconds, fitted estimator)."""
    est = L1LogisticOBA(C=C, n_jobs=n_jobs)
    wall, cpu = time.perf_counter(), time.process_time()
    est.fit(X, y)
    return time.perf_counter() - wall, time.process_time() - cpu, est


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rows, data = [], {}
    for name, C in PROBLEMS:
        if name not in data:
            data[name] = tall() if name == "tall" else load(name)
        X, y = data[name]
        fit(X, y, C, 2)                                        # warm-up
        runs = {1: [], 2: []}
        for _ in range(args.rounds):
            for jobs in (1, 2):
                runs[jobs].append(fit(X, y, C, jobs))
        one, two = runs[1][-1][2], runs[2][-1][2]
        same = (np.array_equal(one.coef_, two.coef_)
                and np.array_equal(one.intercept_, two.intercept_))
        t1 = statistics.median(r[0] for r in runs[1])
        t2 = statistics.median(r[0] for r in runs[2])
        use = statistics.median(r[1] / r[0] for r in runs[2])
        rows.append([name, f"{X.shape[0]} x {X.shape[1]}, nnz {X.nnz}", f"{C:g}",
                     str(int(one.n_iter_[0])), f"{t1:.3f}", f"{t2:.3f}", f"{t2 / t1:.2f}x",
                     f"{use:.2f}", "yes" if same else "NO"])
        print(rows[-1], flush=True)
    body = (__doc__.split("\n\n")[1].replace("\n", " ") + "\n\n" + _report.markdown_table(
        ["data", "shape", "C", "OBA iterations", "wall s, n_jobs=1", "wall s, n_jobs=2",
         "n_jobs=2 / n_jobs=1", "CPU / wall, n_jobs=2", "same model"], rows))
    _report.write_section("l1_binary_threads",
                          "L1LogisticOBA on two threads: one binary problem of sparse X",
                          body)


if __name__ == "__main__":
    main()
