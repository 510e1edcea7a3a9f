"""SparsemaxClassifier: the memory of each solver, in copies of the weights.

On a model far larger than its data (sparse X of 10 to 20 stored entries a row, every
column used, 10 or 20 classes), each solver's peak of allocated memory during one fit
(Python's tracemalloc, which sees NumPy's and SciPy's arrays), divided by the size of the
solver variable ((columns + 1) x classes float64 numbers): what each holds beside X, the
fitted coef_ included. ``max_iter=15``, ``alpha=1e-3``, ``random_state=0``. The counts that
``solver="auto"`` and the check before a fit use (``SOLVER_ARRAYS``) are these, rounded up.

Writes section "sparsemax_solver_memory" of doc/benchmarks.md, or, run with a SciPy before
1.12 (whose L-BFGS-B held more arrays), "sparsemax_solver_memory_old_scipy"::

    python benchmarks/bench_sparsemax_solver_memory.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
sys.path.insert(0, str(_report.REPO / "tests"))
from _memory import peak_allocated  # noqa: E402

from sparsekit.linear_model import SparsemaxClassifier  # noqa: E402
from sparsekit.linear_model._sparsemax_solvers import OLD_LBFGSB, SOLVER_ARRAYS  # noqa: E402

SHAPES = [(1000, 20_000, 20), (2000, 50_000, 10), (4000, 200_000, 20)]
SOLVERS = ("sdca", "newton-cg", "lbfgs", "nqn")


def problems(shapes):
    """For each (rows, columns, classes) of ``shapes``: sparse X of about 20 stored entries
    a row, restricted to the columns it uses, labels in turn, the weights' bytes and the
    table's first cells (the shape, X's MiB, the weights' MiB)."""
    for n, d, k in shapes:
        X = sp.random(n, d, density=20 / d, format="csr", random_state=0)
        X = sp.csr_matrix(X[:, np.flatnonzero(X.getnnz(axis=0))])
        weights = (X.shape[1] + 1) * k * 8
        x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
        yield X, np.arange(n) % k, weights, [f"{n} x {X.shape[1]:,}, {k} classes",
                                             f"{x_bytes / 2**20:.1f}", f"{weights / 2**20:.1f}"]


def quiet_peak(call):
    """``(call(), the peak it allocates)``, its warnings (of max_iter) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return peak_allocated(call)


def main():
    rows = []
    for X, y, weights, cells in problems(SHAPES):
        for solver in SOLVERS:
            clf = SparsemaxClassifier(solver=solver, alpha=1e-3, max_iter=15, random_state=0)
            _, peak = quiet_peak(lambda: clf.fit(X, y))
            rows.append(cells + [solver, clf.n_iter_, f"{peak / weights:.2f}",
                                 SOLVER_ARRAYS[solver]])
            print(*rows[-1], flush=True)
    body = f"""{__doc__.split("Writes section")[0].split(chr(10), 2)[2].strip()}

{_report.markdown_table(["X (rows x used columns)", "X MiB", "weights MiB", "solver",
                         "iterations", "peak / weights", "SOLVER_ARRAYS"], rows)}
"""
    name, title = "sparsemax_solver_memory", "SparsemaxClassifier: the memory of each solver"
    if OLD_LBFGSB:
        name, title = name + "_old_scipy", title + ", SciPy before 1.12"
    _report.write_section(name, title, body)


if __name__ == "__main__":
    main()
