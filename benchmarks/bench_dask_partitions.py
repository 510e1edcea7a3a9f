"""Fits on dask arrays in many partitions per worker: one task per worker thread.

A fit on a dask array asks the workers for the loss and its gradient (and for OBA the
Hessian on the free set and its products) once per evaluation; each worker thread's
partitions answer in one task, which sums their results, so an evaluation costs a round
trip whatever the number of partitions. Wide sparse rows (20,000 Debian package
descriptions as TF-IDF words, the most common section against the rest) are split into 4,
16 and 64 row partitions on a ``distributed.LocalCluster`` of two worker processes (one
thread each) and fitted by ``L1LogisticOBA(C)`` at its default tol and by
``SparsemaxClassifier(solver="lbfgs")`` (what ``"auto"`` runs on dask arrays), and in
memory. Reported: wall seconds of each fit, solver iterations, milliseconds per gradient
evaluation and per matrix-free Hessian product sent to the workers (OBA), and how far the
fit is from the in-memory one: for OBA the objective's relative difference, for
SparsemaxClassifier the coefficients' largest difference relative to their largest
entry.

Writes section "dask_partitions" of doc/benchmarks.md::

    python benchmarks/bench_dask_partitions.py [--docs 20000] [--Cs 1 10] [--parts 4 16 64]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import collections
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.linear_model import L1LogisticOBA, SparsemaxClassifier  # noqa: E402
from sparsekit.losses import _dask_datafit  # noqa: E402


class CallTimes:
    """Wall seconds and calls of methods of the dask datafits during a fit."""

    METHODS = ((_dask_datafit.DaskDatafit, "value_grad", "gradient"),
               (_dask_datafit.DaskFenchelYoung, "_summed_data_term", "gradient"),
               (_dask_datafit._DaskHessian, "__call__", "product"))

    def __init__(self):
        self.seconds, self.calls = collections.Counter(), collections.Counter()
        self._saved = []
        for owner, name, kind in self.METHODS:
            self._saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, self._timed(getattr(owner, name), kind))

    def _timed(self, method, kind):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds[kind] += time.perf_counter() - start
                self.calls[kind] += 1
        return timed

    def ms(self, kind):
        """Milliseconds per call of ``kind`` ("—" when none was made)."""
        calls = self.calls[kind]
        return f"{1e3 * self.seconds[kind] / calls:.1f} ({calls})" if calls else "—"

    def close(self):
        for owner, name, method in self._saved:
            setattr(owner, name, method)


def sparse_dask(client, X, rows):
    """A dask array of the CSR matrix X in blocks of ``rows`` rows, scattered to the
    workers."""
    import dask.array as da

    starts = range(0, X.shape[0], rows)
    blocks = client.scatter([X[i:i + rows] for i in starts])
    return da.concatenate([
        da.from_delayed(block, shape=(min(rows, X.shape[0] - i), X.shape[1]),
                        dtype=X.dtype, meta=sp.csr_matrix((0, X.shape[1])))
        for i, block in zip(starts, blocks)], axis=0)


def distance(est, local, X, y):
    """The relative difference of the binary l1-logistic objective C sum log(1 + e^-yXw) +
    ||w||_1 between two fits, else of their coefficients (largest entry)."""
    if isinstance(est, L1LogisticOBA):
        signs = np.where(y == est.classes_[1], 1.0, -1.0)

        def objective(model):
            margins = signs * model.decision_function(X)
            return (model.C * np.logaddexp(0.0, -margins).sum()
                    + np.abs(model.coef_).sum())
        return f"{(objective(est) - objective(local)) / objective(local):.1e}"
    return f"{np.abs(est.coef_ - local.coef_).max() / np.abs(local.coef_).max():.1e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20000)
    parser.add_argument("--Cs", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--parts", type=int, nargs="+", default=[4, 16, 64])
    args = parser.parse_args()
    import dask.array as da
    import distributed

    X, section = _report.debian_sample(args.docs)
    X = X.tocsr()
    top = collections.Counter(section).most_common(1)[0][0]
    y = (section == top).astype(int)
    shape = f"{X.shape[0]:,} x {X.shape[1]:,} ({X.nnz:,} nonzeros)"
    models = [(f"L1LogisticOBA(C={C:g})", lambda C=C: L1LogisticOBA(C=C)) for C in args.Cs]
    models.append(('SparsemaxClassifier(solver="lbfgs")',
                   lambda: SparsemaxClassifier(solver="lbfgs")))
    rows = []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        for name, make in models:
            local, spent = _report.fit_once(make, X, y)
            rows.append([name, "in memory (this process)", f"{spent:.2f}",
                         int(np.max(local.n_iter_)), "—", "—", ""])
            print(rows[-1], flush=True)
            for parts in args.parts:
                chunk = -(-X.shape[0] // parts)
                Xd = sparse_dask(client, X, chunk)
                yd = client.persist(da.from_array(y, chunks=chunk))
                times = CallTimes()
                try:
                    est, spent = _report.fit_once(make, Xd, yd)
                finally:
                    times.close()
                difference = distance(est, local, X, y)
                rows.append([name, f"LocalCluster, {len(Xd.chunks[0])} partitions",
                             f"{spent:.2f}", int(np.max(est.n_iter_)), times.ms("gradient"),
                             times.ms("product"), difference])
                print(rows[-1], flush=True)
                del Xd, yd
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ")
            + f" X: {shape}.\n\n"
            + _report.markdown_table(
                ["model", "fit", "seconds", "iterations",
                 "ms per gradient evaluation (calls)",
                 "ms per matrix-free Hessian product (calls)",
                 "difference from the in-memory fit"], rows))
    _report.write_section("dask_partitions", "Fits on dask arrays in many partitions per "
                          "worker", body,
                          packages=("numpy", "scipy", "scikit-learn", "dask", "distributed"))


if __name__ == "__main__":
    main()
