"""Multinomial ℓ1 logistic regression on a dense X: its products X W and Xᵀ R.

The two products of every multinomial gradient and matrix-free Hessian product on a dense
X (``mn_margins_dense``: Z = b + X[:, cols] W, ``mn_rmatmat_dense``: Xᵀ R over the listed
columns; BLAS on float64 panels, or with at most 12 classes the AVX2 kernels where the CPU
runs them), one call each, every column listed unless the row says otherwise: milliseconds
(median of 5 after one warm-up call) on 1 and 2 threads (``n_jobs``), BLAS pinned to one
thread. Then ``L1LogisticOBA(multiclass="multinomial")`` fits on dense X (an unpenalized
intercept, tol 1e-8, its default): digits (pixels / 16) and Mulan scene (first label) at
10, 100 and 1000 times the smallest C with a nonzero weight (scene at 1600 too), MNIST
(pixels / 255, a dense float32 array) at 10 and 100 times and at C = 1, and the
``make_classification`` tables of section multinomial_carried at C = 1: wall seconds (median
of 3 where a fit takes under 5 s) and iterations; beside it in the same run scikit-learn's
saga on the same objective (``LogisticRegression(l1_ratio=1, solver="saga")``, tol 1e-4,
max_iter 100, 10 on MNIST, whose epochs take 2 s), its objective as a relative gap to
OBA's, and OBA's objective as a gap to the earlier commit's (negative: lower).

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the
same script run on an earlier commit's build) beside this run's. Writes section
"multinomial_dense_products" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_dense_products.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import warnings

import numpy as np
from bench_l1_multinomial import load, objective, smallest_C
from bench_multinomial_carried import TABLES
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from sparsekit import L1LogisticOBA
from sparsekit._cython import _oba_kernels as K

#: C as multiples of the smallest C with a nonzero weight (None: C = 1, the default)
FACTORS = {"digits": [10, 100, 1000], "scene": [10, 100, 1000, 1600],
           "mnist": [10, 100, None]}
SAGA_EPOCHS = {"mnist": 10}


def dense(name):
    """(X, y) of a data set of bench_l1_multinomial as a dense Fortran array (MNIST in
    float32)."""
    X, y = load(name)
    X = X.toarray() if hasattr(X, "toarray") else X
    return np.asfortranarray(X, dtype=np.float32 if name == "mnist" else np.float64), y


def kernel_cases():
    """(name, X, K, cols) of the kernel table."""
    X, _ = dense("mnist")
    yield "MNIST, 60000 x 784 float32, K = 10", X, 10, None
    busiest = np.sort(np.argsort(-(X != 0).sum(axis=0))[:196])
    yield "MNIST, its 196 busiest columns", X, 10, busiest
    X, _ = make_classification(300_000, 50, n_informative=20, n_classes=5, random_state=0)
    yield "300000 x 50 float32, K = 5", np.asfortranarray(X, dtype=np.float32), 5, None
    rng = np.random.default_rng(0)
    X = np.asfortranarray(rng.normal(size=(20_000, 784)), dtype=np.float32)
    yield "20000 x 784 float32 (normal), K = 58", X, 58, None
    X, _ = dense("digits")
    yield "digits, 1797 x 64 float64, K = 10", X, 10, None


def kernel_rows():
    out = []
    rng = np.random.default_rng(1)
    for name, X, k, cols in kernel_cases():
        cols = np.arange(X.shape[1], dtype=np.int64) if cols is None else cols.astype(np.int64)
        W, b = rng.normal(size=(cols.size, k)), rng.normal(size=k)
        R, Z, G = rng.normal(size=(X.shape[0], k)), np.empty((X.shape[0], k)), \
            np.empty((cols.size, k))
        row = {"case": name}
        for threads in (1, 2):
            row[f"margins_{threads}"] = _report.median_time(
                lambda: K.mn_margins_dense(X, W, cols, b, Z, threads), 5, 1)[0]
            row[f"rmatmat_{threads}"] = _report.median_time(
                lambda: K.mn_rmatmat_dense(X, R, cols, G, False, threads), 5, 1)[0]
        out.append(row)
        print(row, flush=True)
    return out


def fit_cases():
    """(name, X, y, C, saga epochs)."""
    for name, factors in FACTORS.items():
        X, y = dense(name)
        c_min = smallest_C(X, y, 1.0)
        for factor in factors:
            yield (f"{name} {X.shape[0]} x {X.shape[1]} {X.dtype}, "
                   + (f"{factor} C_min" if factor else "C = 1"), X, y,
                   factor * c_min if factor else 1.0, SAGA_EPOCHS.get(name, 100))
    for n, d, k, red, dtype in TABLES:
        X, y = make_classification(n, d, n_informative=min(20, d - 4), n_redundant=red,
                                   n_classes=k, random_state=0)
        yield (f"{n} x {d} {dtype}, {k} classes, {red} redundant, C = 1",
               np.asfortranarray(X, dtype=dtype), y, 1.0, 100)


def fit_rows():
    out = []
    for name, X, y, C, epochs in fit_cases():
        seconds, oba, _ = _report.timed_fit(L1LogisticOBA(multiclass="multinomial", C=C),
                                            X, y)
        X64 = X.astype(np.float64)                      # the objectives in float64
        f_oba = objective(X64, y, oba.coef_, oba.intercept_, C, 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            saga, saga_s = _report.fit_once(lambda: LogisticRegression(
                C=C, l1_ratio=1.0, solver="saga", tol=1e-4, max_iter=epochs), X, y)
        f_saga = objective(X64, y, saga.coef_, saga.intercept_, C, 1.0)
        out.append({"data": name, "oba": seconds, "iterations": int(oba.n_iter_[0]),
                    "objective": f_oba, "saga": saga_s, "saga_epochs": int(saga.n_iter_[0]),
                    "saga_gap": (f_saga - f_oba) / abs(f_oba)})
        print(out[-1], flush=True)
    return out


def main():
    results, earlier = _report.beside_before(__doc__.split("\n\n")[0], lambda: {
        "kernels": kernel_rows(), "fits": fit_rows()})
    then = f" (commit {earlier['commit']})" if earlier else ""
    old_kernels = {r["case"]: r for r in (earlier or {}).get("kernels", [])}
    table = []
    for r in results["kernels"]:
        old = old_kernels.get(r["case"], {})
        cells = [r["case"]]
        for product in ("margins", "rmatmat"):
            for threads in (1, 2):
                key = f"{product}_{threads}"
                cells.append(f"{r[key] * 1e3:.1f}" + (
                    f" ({old[key] * 1e3:.1f}, {old[key] / r[key]:.1f}x)" if key in old else ""))
        table.append(cells)
    body = (f"One call of each product, milliseconds (before{then} and its time over this "
            "run's in parentheses):\n\n" + _report.markdown_table(
                ["X, classes", "X W, 1 thread", "X W, 2 threads", "Xᵀ R, 1 thread",
                 "Xᵀ R, 2 threads"], table))
    old_fits = {r["data"]: r for r in (earlier or {}).get("fits", [])}
    table = []
    for r in results["fits"]:
        old = old_fits.get(r["data"])
        table.append([
            r["data"], f"{r['oba']:.2f} ({r['iterations']})",
            f"{old['oba']:.2f} ({old['iterations']})" if old else "-",
            f"{old['oba'] / r['oba']:.2f}x" if old else "-",
            f"{(r['objective'] - old['objective']) / abs(old['objective']):+.1e}"
            if old else "-",
            f"{r['saga']:.2f} ({r['saga_epochs']})", f"{r['saga_gap']:+.1e}",
            f"{r['oba'] / r['saga']:.2f}x"])
    body += ("\n\nMultinomial fits on dense X (wall seconds, one BLAS thread):\n\n"
             + _report.markdown_table(
                 ["data", "OBA, s (iterations)", f"before{then}", "speed-up",
                  "objective vs before", "saga, s (epochs)", "saga's objective vs OBA's",
                  "OBA / saga"], table))
    _report.write_section("multinomial_dense_products",
                          "Multinomial ℓ1 logistic regression on a dense X: its products",
                          body)


if __name__ == "__main__":
    main()
