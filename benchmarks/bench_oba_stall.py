"""L1LogisticOBA on raw columns: columns far from 0 centered, the stall exit, the median shift.

Two changes of 2026-12-01 for raw columns beside standardized ones. A column whose mean
lies beyond 10 standard deviations (a raw year or timestamp) is centered for the solve (the
same problem: the intercept absorbs the shift), where the direction that trades its weight
against the intercept was nearly flat and the Newton systems ill-conditioned. And OBA's
stopping measure is absolute, in the units of the gradient, which a column of large entries
scales (zip codes): where the measure cannot reach the default tol 1e-8, a solve in which
for 20 iterations neither the objective decreases beyond its rounding nor the measure falls
below half its least value ends as stalled and says so (it ran to max_iter). A third, of
2026-12-01 (its third session), for the multinomial model: a feature's K class weights
shifted together leave its probabilities unchanged, so the Newton steps cannot see that direction and their
rounding let the weights drift off the sparsest solution (a weight of 1e-12 where the
minimizer has 0), where the optimality measure stalled; every point the solver evaluates
is now first shifted by a median of each feature's class weights, the weight nearest 0
among those that are one (``minimize_oba``'s ``shift_invariant``), which also gives a
feature as many positive as negative weights a zero at the same objective. This script fits ``L1LogisticOBA`` at its defaults (C = 1, tol 1e-8,
max_iter 500; one-vs-rest and multinomial) on tables with one raw column
(``make_classification``, 5,000 rows, 4 classes, seed 0, its last column replaced; two of
them also as CSR beside 20 one-hot columns, whose numeric columns, stored in every row,
are centered as a dense X's since 2026-12-01's second session) and on real tables (digits
/ 16; wine and breast cancer as loaded, raw units), four ways in the same build: as it is
("default"), without the median shift, without the centering (the ratio set to infinity),
and without any of the three (the exit's window also beyond max_iter: the fit before these
changes). Wall seconds (median of 3), OBA iterations (summed over the one-vs-rest
problems), the warning each fit gave, and the objective C Σ loss + ‖W‖₁ of the other
fits minus the default's, relative to it (positive: the default's fit is lower), and each
way's count of nonzero weights in ``coef_``. Writes section
"oba_stall" of doc/benchmarks.md::

    python benchmarks/bench_oba_stall.py

With ``--dask``, the tables with a raw column and the standardized one are fitted from dask
arrays (blocks of 1,250 rows, CSR blocks for the CSR tables) on a
``distributed.LocalCluster`` of two worker processes (one thread each), where the
partitions' columns far from 0 are centered on the workers (2026-12-01, the second session
of the day; before it, dask X was fitted as given), two ways: as it is and without the
centering. Writes section "oba_stall_dask"::

    python benchmarks/bench_oba_stall.py --dask
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, load_digits, load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
import sparsekit.linear_model._l1_solve as l1_solve  # noqa: E402
import sparsekit.utils._centering as centering  # noqa: E402
import sparsekit.optimize._oba as oba  # noqa: E402
from sparsekit import L1LogisticOBA  # noqa: E402
from sparsekit.benchmarks._l1_tables import _multinomial_objective  # noqa: E402


def tables():
    """(name, X, y) of each table."""
    X, y = make_classification(5000, 8, n_informative=5, n_redundant=0, n_classes=4,
                               random_state=0)
    rng = np.random.default_rng(0)
    raw = {"zip code (10,000-99,999)": rng.integers(10_000, 100_000, 5000).astype(float),
           "unix time (1.7e9 + U(0, 3e7))": 1.7e9 + 3e7 * rng.random(5000),
           "unix time, informative (1.7e9 + 1e6 x)": 1.7e9 + 1e6 * X[:, 0],
           "year, informative (2012 + 5 x)": 2012.0 + 5.0 * X[:, 0],
           "informative, offset (1e6 + x)": 1e6 + X[:, 0]}
    for name, column in raw.items():
        yield name, np.column_stack([X[:, 1:], column]), y
    onehot = sp.csr_matrix(np.eye(20)[rng.integers(0, 20, 5000)])
    for name in ("year, informative (2012 + 5 x)", "informative, offset (1e6 + x)"):
        yield (f"20 one-hot + {name}, CSR",
               sp.hstack([onehot, np.column_stack([X[:, 1:], raw[name]])], format="csr"), y)
    yield "standardized (no raw column)", X, y
    digits = load_digits()
    yield "digits / 16", digits.data / 16, digits.target
    for name, loader in (("wine, raw", load_wine), ("breast cancer, raw", load_breast_cancer)):
        data = loader()
        yield name, data.data, data.target


def objective(model, X, y):
    """C Σᵢ loss + r‖W‖₁ + (1 − r)/2 ‖W‖² of a fitted L1LogisticOBA (r its ``l1_ratio``;
    summed over one-vs-rest problems)."""
    codes = np.searchsorted(model.classes_, y)
    W, r = model.coef_, model.l1_ratio
    ridge = 0.5 * (1.0 - r) * np.square(W).sum()
    if model.multiclass == "multinomial" and model.classes_.size > 2:   # r (‖W‖₁ + C/r loss)
        return r * _multinomial_objective(W, model.intercept_, X, codes, model.C / r) + ridge
    scores = X @ W.T + model.intercept_
    positive = (codes[:, None] == (np.arange(scores.shape[1]) if scores.shape[1] > 1 else 1))
    loss = np.logaddexp(0.0, np.where(positive, -scores, scores)).sum()
    return model.C * loss + r * np.abs(W).sum() + ridge


SOLVER = l1_solve.minimize_oba


def _without_shift(*args, **kwargs):
    """``minimize_oba`` blind to the multinomial model's invariant shifts."""
    return SOLVER(*args, **{**kwargs, "shift_invariant": None})


#: (label, centering ratio, stall window, median shift) of each way of fitting
WAYS = (("default", centering.CENTER_RATIO, oba.STALL_ITERATIONS, True),
        ("no median shift", centering.CENTER_RATIO, oba.STALL_ITERATIONS, False),
        ("no centering", np.inf, oba.STALL_ITERATIONS, True),
        ("none", np.inf, 10**9, False))


def configure(ratio, window, shift):
    """Set the centering ``ratio``, the stall ``window`` and the median ``shift``."""
    centering.CENTER_RATIO, oba.STALL_ITERATIONS = ratio, window
    l1_solve.minimize_oba = SOLVER if shift else _without_shift


def fit(X, y, multiclass, way):
    """(seconds, the model, its warning) of a default fit the ``way`` of WAYS."""
    configure(*way[1:])
    times, model, said = [], None, ""
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            start = time.perf_counter()
            model = L1LogisticOBA(multiclass=multiclass).fit(X, y)
            times.append(time.perf_counter() - start)
        said = next((str(w.message) for w in caught
                     if issubclass(w.category, ConvergenceWarning)), "")
        if times[-1] > 5.0:
            break
    said = ("stalled" if said.startswith("OBA stopped") else
            "max_iter" if "did not converge" in said else said[:40] or "none")
    return float(np.median(times)), model, said


def measure(data, ways, place=lambda X, y: (X, y)):
    """The table's rows: each table fitted each of ``ways`` on ``place(X, y)``."""
    table = []
    try:
        for name, X, y in data:
            for multiclass in ("ovr", "multinomial") if len(np.unique(y)) > 2 else ("ovr",):
                runs = [fit(*place(X, y), multiclass, way) for way in ways]
                F = [objective(model, X, y) for _, model, _ in runs]
                row = [name, multiclass]
                for seconds, model, said in runs:
                    row += [f"{seconds:.3f}", str(int(model.n_iter_.sum())), said]
                row += [f"{(f - F[0]) / abs(F[0]):.1e}" for f in F[1:]]
                row += ["/".join(str(np.count_nonzero(model.coef_)) for _, model, _ in runs)]
                table.append(row)
                print(row, flush=True)
    finally:
        configure(*WAYS[0][1:])
    header = ["table", "model"]
    for label, *_ in ways:
        header += [f"s ({label})", f"iterations ({label})", f"warning ({label})"]
    header += [f"F({label}) - F(default), relative" for label, *_ in ways[1:]]
    header += ["nonzeros (" + "/".join(label for label, *_ in ways) + ")"]
    return _report.markdown_table(header, table)


def on_dask():
    """Section "oba_stall_dask": the raw-column tables from dask arrays on a cluster."""
    import dask.array as da
    import distributed

    def place(X, y):             # CSR blocks of CSR X
        return (da.from_array(X, chunks=(1250, -1), asarray=not sp.issparse(X)),
                da.from_array(y, chunks=1250))

    raw = [t for t in tables() if not t[0].startswith(("digits", "wine", "breast"))]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        table = measure(raw, WAYS[:3:2], place)
    prose = " ".join(__doc__.split("\n\n")[3].split()).split(" Writes")[0]
    _report.write_section("oba_stall_dask", "L1LogisticOBA on raw columns of a dask array",
                          prose + " Otherwise as in section *oba_stall*.\n\n" + table)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dask", action="store_true",
                        help="fit dask arrays on a LocalCluster (section oba_stall_dask)")
    if parser.parse_args().dask:
        on_dask()
        return
    body = (" ".join(__doc__.split("\n\n")[1].split()).split(" Writes")[0]
            + "\n\n" + measure(tables(), WAYS))
    _report.write_section("oba_stall", "L1LogisticOBA on raw columns: centering, the stall "
                          "exit and the median shift", body)


if __name__ == "__main__":
    main()
