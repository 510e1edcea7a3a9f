"""The multinomial CG's class blocks on a sparse X: from its stored entries or by BLAS panels.

Where OBA's matrix-free Newton steps on the multinomial problem precondition their CG by the
Hessian's class blocks, a sparse X's blocks are formed from its stored entries
(``mn_class_blocks_csr``: one update per pair of a row's free entries of one class, after
sorting the pairs by block) or by BLAS ``dsyrk`` on panels of rows of its free columns
densified a panel at a time (``csr_rows_dense``, ``mn_class_blocks_dense``), whichever
``Multinomial.block_route_ns`` predicts faster; which Hessians get blocks, and which carry
them, does not depend on the route. First table: each formation of a fit (MNIST, pixels /
255, at the estimator's default C = 1; Mulan Bibtex and Delicious, first label, at C = 1;
``max_iter`` 25, 40 and 40), the blocks formed both ways at the same point (wall seconds of
each, one after the other, on one thread and on two, ``n_jobs=2``'s), the predicted seconds
of each on one thread, the route taken and one matrix-free product's seconds. Second table:
MNIST's fit at the default C and tol from w = 0 (the estimator's solve without its closing
check), with every formation from the stored entries (the route before) and with the route
predicted faster, then on two threads (``n_jobs=2``: the products' threads) with the blocks
formed on one thread (as before) and on both; Delicious' at C = 1 on two threads, the blocks
on one thread and on both. One after the other in one process.

Writes section "multinomial_class_blocks" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_class_blocks.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_compare import load as load_compare  # noqa: E402
from bench_l1_multinomial import load  # noqa: E402
from bench_multinomial_preconditioner import traced_solve  # noqa: E402

from sparsekit.linear_model._l1_solve import MULTINOMIAL_CG_MAXITER, oba_solve  # noqa: E402
from sparsekit.losses import _multinomial_datafit as MD  # noqa: E402

#: block_route_ns values that force one route
FORCED = {"entries": {"entries": (0.0, 0.0), "panels": (1e9, 1e9)},
          "panels": {"entries": (1e9, 1e9), "panels": (0.0, 0.0)}}
FITS = [("mnist", 25), ("bibtex", 40), ("delicious", 40)]


def data(name):
    """(CSR X, class codes)."""
    if name == "mnist":
        X, y = load("mnist")
    else:
        d = load_compare(name)
        X, y = d.X_l1, d.y
    return sp.csr_matrix(X), np.searchsorted(np.unique(y), y)


def counts_and_size(H, blocks):
    """(:meth:`_class_block_counts`, the blocks' sizes) of ``blocks`` on ``H``'s entries."""
    _, _, size, order = blocks
    block = np.empty(order.size, dtype=np.int64)
    block[order] = np.repeat(np.arange(size.size), size)
    return H._class_block_counts(block[:H._w_entries.size], size), size


class _Timed(MD._MultinomialHessian):
    """The operator, forming each set of new class blocks both ways and recording it."""

    rows = []
    name = ""

    def _new_class_blocks(self):
        f, seconds = self._f, {}
        saved = f.block_route_ns
        for route, threads in (("entries", 2), ("entries", 1), ("panels", 2), ("panels", 1)):
            f.block_route_ns, f.n_threads = FORCED[route], threads
            start = time.perf_counter()
            blocks, carry = super()._new_class_blocks()
            seconds[route, threads] = time.perf_counter() - start
            f.block_route_ns, f.n_threads = saved, 1
            if blocks is None:
                return blocks, carry
        counts, size = counts_and_size(self, blocks)
        taken = "panels" if self._panels_pay(counts, size) else "entries"
        start = time.perf_counter()
        self(np.ones(self.shape[0]))
        product = time.perf_counter() - start
        guess = [1e-9 * ns for ns in self._route_times(counts, size)]
        _Timed.rows.append([
            _Timed.name, f"{self.shape[0]:,}", f"{self._cols.size:,}",
            f"{seconds['entries', 1]:.3f}", f"{seconds['panels', 1]:.3f}",
            f"{seconds['entries', 1] / seconds['panels', 1]:.2f}",
            f"{seconds['entries', 2]:.3f}", f"{seconds['panels', 2]:.3f}",
            f"{guess[0]:.3f}", f"{guess[1]:.3f}", taken, f"{product:.4f}"])
        print(" | ".join(_Timed.rows[-1]), flush=True)
        return blocks, carry


def formations():
    """The first table's rows."""
    for name, max_iter in FITS:
        X, codes = data(name)
        f = MD.Multinomial(X, codes, codes.max() + 1, fit_intercept=True)
        f._matrix_free = lambda free, f=f: _Timed(f, np.asarray(free, dtype=np.int64))
        _Timed.name = f"{name} ({X.shape[0]} x {X.shape[1]}, K = {codes.max() + 1})"
        oba_solve(f, 1.0, 1e-8, max_iter, None, 0, 1.0, MULTINOMIAL_CG_MAXITER)
    return _Timed.rows


class _Counting(MD._MultinomialHessian):
    """The operator, counting the class blocks formed; ``block_threads`` 1: the blocks
    formed on one thread whatever the datafit's."""

    formed = 0
    block_threads = None

    def _new_class_blocks(self):
        f = self._f
        threads = f.n_threads
        f.n_threads = _Counting.block_threads or threads
        try:
            blocks, carry = super()._new_class_blocks()
        finally:
            f.n_threads = threads
        _Counting.formed += blocks is not None
        return blocks, carry


def fits():
    """The second table's rows: MNIST at C = 1, tol 1e-8, by each rule; Delicious at C = 1
    on two threads."""
    rows = []
    for name, label, routes, threads, block_threads in (
            ("mnist", "stored entries (before)", FORCED["entries"], 1, None),
            ("mnist", "route predicted faster", None, 1, None),
            ("mnist", "route predicted faster, formed on one thread", None, 2, 1),
            ("mnist", "route predicted faster", None, 2, None),
            ("delicious", "route predicted faster, formed on one thread", None, 2, 1),
            ("delicious", "route predicted faster", None, 2, None)):
        X, codes = data(name)
        f = MD.Multinomial(X, codes, codes.max() + 1, fit_intercept=True, n_threads=threads)
        f._matrix_free = lambda free, f=f: _Counting(f, np.asarray(free, dtype=np.int64))
        if routes is not None:
            f.block_route_ns = routes
        _Counting.formed, _Counting.block_threads = 0, block_threads
        res, trace = traced_solve(f, 1.0, 1e-8, np.inf)
        rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, K = {codes.max() + 1})", label,
                     str(threads), str(res.nit), str(res.nhessp), str(_Counting.formed),
                     f"{trace[-1][0]:.1f}", f"{res.fun:.10e}"])
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main():
    first = formations()
    second = fits()
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "free entries", "free columns", "entries s", "panels s",
                 "entries / panels", "entries s, 2 threads", "panels s, 2 threads",
                 "predicted entries s", "predicted panels s", "route taken",
                 "one product s"], first)
            + "\n\nThe fits at C = 1, tol 1e-8:\n\n"
            + _report.markdown_table(
                ["data", "class blocks", "threads", "iterations", "Hessian products",
                 "class blocks formed", "seconds", "F / (C n)"], second))
    _report.write_section("multinomial_class_blocks",
                          "Multinomial ℓ1 logistic regression: a sparse X's class blocks",
                          body)


if __name__ == "__main__":
    main()
