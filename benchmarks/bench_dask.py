"""L1LogisticOBA and SparsemaxClassifier on a dask array: one worker against two on this
machine, and the bytes that travel.

A sparse binary problem (``--rows`` rows, 2,000 features, 1% of the entries nonzero, a
planted sparse w; CSR blocks of ``--rows / --blocks`` rows, built and persisted on the
workers before the timing, so that the client never holds X) is fitted by
``L1LogisticOBA(C=0.1, tol=1e-8)`` and by ``SparsemaxClassifier`` (default alpha and tol; the
two classes fit as one weight vector) with ``solver="lbfgs"`` (what ``"auto"`` runs on dask
arrays) and ``"newton-cg"``; ``SparsemaxClassifier(solver="lbfgs")`` also fits label sets of
20 labels on the same rows (a planted sparse model, 0/1 targets; its decision threshold
searched over the partitions' label scores), on a
``distributed.LocalCluster`` of one and of two worker processes (one thread each), and in
memory in this process. Reported: end-to-end fit time, time per solver iteration, the bytes
the client sent (the parameter vectors: inside each task when their copies take at most
1 MB, else scattered once per worker) and gathered (one vector per worker thread, whose
task sums its partitions', and for OBA the partitions' Hessians on the free set when they
formed them, summed in the same tasks, and one matrix per worker thread fits in 64 MB) per
iteration, against the size of X.

Writes section "dask" of doc/benchmarks.md::

    python benchmarks/bench_dask.py [--rows 4000000] [--blocks 16]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.linear_model import L1LogisticOBA, SparsemaxClassifier  # noqa: E402

D, DENSITY, C = 2000, 0.01, 0.1
#: the label sets' labels
LABELS = 20

#: the fits timed, each in memory and on the clusters: (model, whether it fits the label sets)
MODELS = {
    "L1LogisticOBA(C=0.1, tol=1e-8)": (lambda: L1LogisticOBA(C=C, tol=1e-8), False),
    "SparsemaxClassifier(solver='lbfgs')": (lambda: SparsemaxClassifier(solver="lbfgs"), False),
    "SparsemaxClassifier(solver='newton-cg')": (
        lambda: SparsemaxClassifier(solver="newton-cg"), False),
    f"SparsemaxClassifier(solver='lbfgs'), {LABELS} label sets": (
        lambda: SparsemaxClassifier(solver="lbfgs"), True),
}


def _iterations(est):
    """Solver iterations of a fit (OBA's of its one binary problem)."""
    return int(np.max(est.n_iter_))


def block(seed, rows):
    """One CSR partition of the problem, its labels and its label sets (the same on any
    machine)."""
    rng = np.random.default_rng(seed)
    X = sp.random(rows, D, density=DENSITY, format="csr", random_state=rng,
                  data_rvs=rng.standard_normal)
    planted = np.random.default_rng(12345)
    w = np.zeros(D)
    w[planted.choice(D, 50, replace=False)] = 1.0
    y = np.where(X @ w + 0.5 * rng.standard_normal(rows) > 0, 1, 0)
    V = sp.random(D, LABELS, density=0.05, random_state=planted,
                  data_rvs=planted.standard_normal)
    Y = ((X @ V).toarray() + 0.3 * rng.standard_normal((rows, LABELS)) > 0.4).astype(np.int8)
    return X, y, Y


def dask_problem(rows, blocks):
    import dask.array as da
    from dask import delayed

    share = rows // blocks
    parts = [delayed(block, nout=3)(seed, share) for seed in range(blocks)]
    X = da.concatenate([da.from_delayed(p[0], shape=(share, D), dtype=np.float64,
                                        meta=sp.csr_matrix((0, D))) for p in parts])
    y = da.concatenate([da.from_delayed(p[1], shape=(share,), dtype=np.int64)
                        for p in parts])
    Y = da.concatenate([da.from_delayed(p[2], shape=(share, LABELS), dtype=np.int8)
                        for p in parts])
    return X, y, Y


def _nbytes(value):
    """The bytes of an array or a SciPy sparse matrix, else 0."""
    if sp.issparse(value):
        return value.data.nbytes + value.indices.nbytes + value.indptr.nbytes
    return value.nbytes if isinstance(value, np.ndarray) else 0


class Traffic:
    """Bytes through a client's scatter, its tasks' arguments and gather (patched in for
    the measurement)."""

    def __init__(self, client_type):
        self.sent = self.gathered = 0
        self._type = client_type
        self._scatter, self._gather = client_type.scatter, client_type.gather
        self._submit = client_type.submit
        traffic = self

        def submit(client, func, *args, **kwargs):
            traffic.sent += sum(_nbytes(a) for a in args)      # each task carries its copy
            return traffic._submit(client, func, *args, **kwargs)

        def scatter(client, data, *args, **kwargs):
            workers = len(client.scheduler_info()["workers"]) if kwargs.get("broadcast") else 1
            traffic.sent += workers * _nbytes(data)
            return traffic._scatter(client, data, *args, **kwargs)

        def gather(client, futures, *args, **kwargs):
            out = traffic._gather(client, futures, *args, **kwargs)
            for value in (out if isinstance(out, list) else [out]):
                for part in (value if isinstance(value, tuple) else (value,)):
                    traffic.gathered += getattr(part, "nbytes", 8)
            return out
        client_type.scatter, client_type.gather = scatter, gather
        client_type.submit = submit

    def close(self):
        self._type.scatter, self._type.gather = self._scatter, self._gather
        self._type.submit = self._submit


def run_cluster(workers, rows, blocks):
    """``{model: (fitted, seconds, Traffic)}`` of each of MODELS on a LocalCluster of
    ``workers`` processes, the data persisted there once."""
    import distributed

    out = {}
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.wait_for_workers(workers)
        X, y, Y = client.persist(list(dask_problem(rows, blocks)))   # in place, untimed
        distributed.wait([X, y, Y])
        for name, (make, sets) in MODELS.items():
            traffic = Traffic(distributed.Client)
            try:
                t0 = time.perf_counter()
                est = make().fit(X, Y if sets else y)
                seconds = time.perf_counter() - t0
            finally:
                traffic.close()
            out[name] = est, seconds, traffic
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--blocks", type=int, default=16)
    args = parser.parse_args()
    share = args.rows // args.blocks
    parts = [block(seed, share) for seed in range(args.blocks)]
    X = sp.vstack([p[0] for p in parts], format="csr")
    y, Y = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    rows, local, seconds, thresholds = [], {}, {}, {}
    for name, (make, sets) in MODELS.items():
        t0 = time.perf_counter()
        local[name] = make().fit(X, Y if sets else y)
        local_s = time.perf_counter() - t0
        it = _iterations(local[name])
        rows.append([name, "in memory (this process)", f"{local_s:.2f}", it,
                     f"{local_s / it * 1e3:.1f}", "—", "—", ""])
        print(rows[-1], flush=True)
    del X, parts
    for workers in (1, 2):
        for name, (est, spent, traffic) in run_cluster(workers, args.rows, args.blocks).items():
            seconds[name, workers] = spent
            it = _iterations(est)
            ref = local[name].coef_
            gap = float(np.abs(est.coef_ - ref).max() / np.abs(ref).max())
            if hasattr(est, "threshold_"):
                thresholds[workers] = est.threshold_
            rows.append([name, f"LocalCluster, {workers} worker{'s' * (workers > 1)}",
                         f"{spent:.2f}", it, f"{spent / it * 1e3:.1f}",
                         f"{traffic.sent / it / 1e3:.1f}",
                         f"{traffic.gathered / it / 1e3:.1f}", f"{gap:.1e}"])
            print(rows[-1], flush=True)
    rows.sort(key=lambda r: list(MODELS).index(r[0]))
    ratios = "; ".join(f"{name} {seconds[name, 2] / seconds[name, 1]:.2f}x"
                       for name in MODELS)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ")
            + f"\n\nX: {args.rows:,} x {D:,}, {int(args.rows * D * DENSITY):,} nonzeros, "
            f"{x_bytes / 1e6:.0f} MB as CSR, in {args.blocks} partitions.\n\n"
            + _report.markdown_table(
                ["model", "fit", "seconds", "solver iterations", "ms per iteration",
                 "kB sent per iteration", "kB gathered per iteration",
                 "largest coefficient difference from the in-memory fit, relative"], rows)
            + f"\n\nTwo workers against one, end-to-end time: {ratios} (the client, which "
            "runs the solver, and the workers share this machine's two cores). The label "
            "sets' decision threshold, searched over the partitions' label scores: "
            + ", ".join(f"{thresholds[w]:.12g} on {w} worker{'s' * (w > 1)}"
                        for w in sorted(thresholds))
            + f"; {next(e.threshold_ for e in local.values() if hasattr(e, 'threshold_')):.12g}"
            " in memory.")
    _report.write_section("dask", "L1LogisticOBA and SparsemaxClassifier on a Dask cluster",
                          body, packages=("numpy", "scipy", "scikit-learn", "dask",
                                          "distributed"))


if __name__ == "__main__":
    main()
