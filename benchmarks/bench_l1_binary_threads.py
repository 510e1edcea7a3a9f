"""L1LogisticOBA on one binary problem with ``n_jobs=2``: wall time and model.

The estimator at its defaults but ``C`` (free intercept, ``tol=1e-8``) on sparse X: a9a and
w8a (C = 1), the Debian descriptions as TF-IDF of words and bigrams (section python against
the rest, C = 1 and 10), a tall synthetic set (500,000 rows, 2,000 columns, 20 stored
entries a row, labels of a sparse teacher, C = 1), MNIST (digits 0-4 against 5-9, pixels /
255, CSR, C = 1); and on dense X: the thesis' Synthetic 5000 x 5000 (float64, C = 1), the
same MNIST as a float32 array (C = 1) and a tall table (1,000,000 x 50 float32, labels of a
dense teacher, C = 1). Each is fit with ``n_jobs`` 1 and 2 in alternation, five times each:
the median wall time of each, their ratio, the process's CPU seconds over the wall seconds
of the two-thread fits, and whether the two models are the same bit for bit (else the
largest difference of a weight). With two jobs the margins, the gradient, the matrix-free
Hessian products and their diagonal run on two OpenMP threads where a call reads at least
2**20 entries of X (on a9a and w8a none does: their rows show what the option costs
there), and so do the Grams formed in float32 panels (MNIST's, the tall table's) and the
Grams formed by scattered updates of a sparse X from 2**24 updates on (the tall sparse
set's, formed at each iteration, and Debian's larger ones; a9a's and w8a's stay on one):
each thread adds a block of rows, so those Grams, and the model, differ from one thread's
by rounding. On this 2-core machine two threads are the most it can show.

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
from sparsekit.datasets import load_mnist  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402

PROBLEMS = [("a9a", 1.0), ("w8a", 1.0), ("debian", 1.0), ("debian", 10.0), ("tall", 1.0),
            ("mnist", 1.0), ("synthetic-5000", 1.0), ("mnist-dense", 1.0), ("tall-dense", 1.0)]


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


def tall_dense(n=1_000_000, d=50, seed=0):
    """A tall dense float32 X of standard normal entries and the labels of a dense
    teacher (plus noise)."""
    rng = np.random.default_rng(seed)
    X = np.asfortranarray(rng.standard_normal((n, d), dtype=np.float32))
    margins = X @ rng.standard_normal(d).astype(np.float32)
    y = np.where(margins + rng.standard_normal(n).astype(np.float32) > 0, 1, -1)
    return X, y


def mnist_dense():
    """MNIST's training digits 0-4 against 5-9, pixels / 255 as a Fortran float32 array."""
    X, digits = load_mnist("train", data_home=_report.DATA_HOME)
    return np.asfortranarray(X, dtype=np.float32) / np.float32(255.0), \
        np.where(digits <= 4, 1, -1)


MAKERS = {"tall": tall, "tall-dense": tall_dense, "mnist-dense": mnist_dense}


def shape(X):
    """The table's shape column: rows x columns and the stored entries, or the dtype."""
    rows = f"{X.shape[0]} x {X.shape[1]}"
    return f"{rows}, nnz {X.nnz}" if sp.issparse(X) else f"{rows}, dense {X.dtype}"


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
            data[name] = MAKERS[name]() if name in MAKERS else load(name)
        X, y = data[name]
        fit(X, y, C, 2)                                        # warm-up
        runs = {1: [], 2: []}
        for _ in range(args.rounds):
            for jobs in (1, 2):
                runs[jobs].append(fit(X, y, C, jobs))
        one, two = runs[1][-1][2], runs[2][-1][2]
        gap = max(np.abs(one.coef_ - two.coef_).max(),
                  np.abs(one.intercept_ - two.intercept_).max())
        t1 = statistics.median(r[0] for r in runs[1])
        t2 = statistics.median(r[0] for r in runs[2])
        use = statistics.median(r[1] / r[0] for r in runs[2])
        rows.append([name, shape(X), f"{C:g}", str(int(one.n_iter_[0])), f"{t1:.3f}",
                     f"{t2:.3f}", f"{t2 / t1:.2f}x", f"{use:.2f}",
                     "yes" if gap == 0 else f"no: {gap:.1e}"])
        print(rows[-1], flush=True)
    body = (__doc__.split("\n\n")[1].replace("\n", " ") + "\n\n" + _report.markdown_table(
        ["data", "shape", "C", "OBA iterations", "wall s, n_jobs=1", "wall s, n_jobs=2",
         "n_jobs=2 / n_jobs=1", "CPU / wall, n_jobs=2", "same model"], rows))
    _report.write_section("l1_binary_threads",
                          "L1LogisticOBA on two threads: one binary problem",
                          body)


if __name__ == "__main__":
    main()
