"""L1LogisticOBA on dask arrays of dense rows in small partitions: the Hessian products'
round trips.

On a dask array each matrix-free Hessian product of OBA's conjugate gradient is a round
trip to the workers (the partitions' products, summed on their workers and on the
client), where in memory it is a pass over the free columns. The partitions' datafits price that round trip (measured
when the fit starts) into their choice between forming the Hessian on the free set and
matrix-free products: a formed Hessian is gathered once, summed on the client, and the
products are made there. Dense real data in small partitions (Mulan scene's training rows,
its first label; scikit-learn's digits, standardized, one-vs-rest and multinomial) are
fitted by ``L1LogisticOBA(C)`` at its default tol in memory and on a
``distributed.LocalCluster`` of two worker processes (one thread each), with the round
trip priced and, for comparison, priced at nothing (as before this rule: the route of the
in-memory fit). Reported: wall seconds of each fit, OBA iterations (summed over the
one-vs-rest problems), the matrix-free products sent to the workers, and the objective's
relative difference from the in-memory fit's. Then ``L1LogisticOBACV(Cs=5, cv=3)`` on the
scene rows, in memory and on the cluster, its three folds' paths driven one after another
(``n_jobs=None``) or at once (``n_jobs=3``: three threads of the client).

Writes section "dask_dense" of doc/benchmarks.md::

    python benchmarks/bench_dask_dense.py [--Cs 0.1 1]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
from functools import partial

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.linear_model import L1LogisticOBA, L1LogisticOBACV  # noqa: E402
from sparsekit.losses import _dask_datafit  # noqa: E402


def problems():
    """(name, X, y, multiclass, rows per partition) of the fits."""
    from sklearn.datasets import load_digits
    from sklearn.preprocessing import StandardScaler

    from sparsekit.datasets import load_mulan

    X, Y = load_mulan("scene", subset="train")[:2]
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    Y = np.asarray(Y.toarray() if hasattr(Y, "toarray") else Y)
    digits = load_digits()
    Xd = StandardScaler().fit_transform(digits.data)
    return [("scene (first label)", X, Y[:, 0].astype(int), "ovr", 300),
            ("digits one-vs-rest", Xd, digits.target, "ovr", 450),
            ("digits multinomial", Xd, digits.target, "multinomial", 450)]


def objective(model, X, y, C):
    """C x the summed logistic loss (binary or multinomial) + ||W||_1 of a fit (the sum of
    the one-vs-rest problems' for several classes)."""
    S = model.decision_function(X)
    if model.multiclass == "multinomial" and model.classes_.size > 2:
        rows = np.arange(len(y)), np.searchsorted(model.classes_, y)
        return C * float((np.logaddexp.reduce(S, axis=1) - S[rows]).sum()) + float(
            np.abs(model.coef_).sum())
    S = S.reshape(len(y), -1)
    signs = (np.where(y == model.classes_[1], 1.0, -1.0)[:, None] if S.shape[1] == 1
             else np.where(y[:, None] == model.classes_[None, :], 1.0, -1.0))
    return C * float(np.logaddexp(0.0, -signs * S).sum()) + float(np.abs(model.coef_).sum())


class ProductCount:
    """Counts the matrix-free Hessian products the client sends to the workers."""

    def __init__(self):
        self.count = 0
        self._product = _dask_datafit._DaskHessian.__call__
        counter = self

        def counted(H, v):
            counter.count += 1
            return counter._product(H, v)
        _dask_datafit._DaskHessian.__call__ = counted

    def close(self):
        _dask_datafit._DaskHessian.__call__ = self._product


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--Cs", type=float, nargs="+", default=[0.1, 1.0])
    args = parser.parse_args()
    import dask.array as da
    import distributed

    rows, cv_rows = [], []
    unit = _dask_datafit.DaskDatafit.UNIT_SECONDS
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        fits = problems()
        for name, X, y, multiclass, chunk in fits:
            Xd = client.persist(da.from_array(X, chunks=(chunk, -1)))
            yd = client.persist(da.from_array(y, chunks=chunk))
            shape = f"{X.shape[0]:,} x {X.shape[1]} in {len(Xd.chunks[0])} partitions"
            for C in args.Cs:
                def make():
                    return L1LogisticOBA(C=C, multiclass=multiclass)
                local, local_s = _report.fit_once(make, X, y)
                F = objective(local, X, y, C)
                rows.append([name, shape, C, "in memory (this process)", f"{local_s:.3f}",
                             int(np.sum(local.n_iter_)), "—", ""])
                print(rows[-1], flush=True)
                for arm, seconds_per_unit in (("LocalCluster, round trip priced", unit),
                                              ("LocalCluster, round trip not priced",
                                               np.inf)):
                    _dask_datafit.DaskDatafit.UNIT_SECONDS = seconds_per_unit
                    counter = ProductCount()
                    try:
                        est, spent = _report.fit_once(make, Xd, yd)
                    finally:
                        counter.close()
                        _dask_datafit.DaskDatafit.UNIT_SECONDS = unit
                    rows.append([name, shape, C, arm, f"{spent:.3f}", int(np.sum(est.n_iter_)),
                                 counter.count, f"{(objective(est, X, y, C) - F) / F:.1e}"])
                    print(rows[-1], flush=True)
        name, X, y, _, chunk = fits[0]
        Xd = client.persist(da.from_array(X, chunks=(chunk, -1)))
        yd = client.persist(da.from_array(y, chunks=chunk))

        def make_cv(n_jobs=None):
            return L1LogisticOBACV(Cs=5, cv=3, n_jobs=n_jobs)
        local, local_s = _report.fit_once(make_cv, X, y)
        cv_rows = [[name, "in memory (this process)", f"{local_s:.2f}", f"{local.C_:.6g}"]]
        for n_jobs in (None, 3):              # the folds' paths one after another, or at once
            est, spent = _report.fit_once(partial(make_cv, n_jobs), Xd, yd)
            cv_rows.append([name, f"LocalCluster, round trip priced, n_jobs={n_jobs}",
                            f"{spent:.2f}", f"{est.C_:.6g}"])
        print(cv_rows, flush=True)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "X", "C", "fit", "seconds", "OBA iterations",
                 "matrix-free products sent to the workers",
                 "objective's relative difference from the in-memory fit"], rows)
            + "\n\n" + _report.markdown_table(
                ["L1LogisticOBACV(Cs=5, cv=3)", "fit", "seconds", "C_"], cv_rows))
    _report.write_section("dask_dense", "L1LogisticOBA on dask arrays of dense rows: the "
                          "Hessian products' round trips", body,
                          packages=("numpy", "scipy", "scikit-learn", "dask", "distributed"))


if __name__ == "__main__":
    main()
