"""SparsemaxClassifier on raw tables whose columns are in different units.

``alpha="scale"`` and the solvers' scale read X's squared norms, which one column in other
units (an identifier, a timestamp, an income beside standardized features; a measurement
in thousands beside ratios) can make on its own. Their sums now count a column whose
nonzero entries have a mean square above 1000 times the median column's as if its entries
were of that size. Two tables:

- the columns' units: for each data set the largest mean square of a column's nonzero
  entries over the median column's, whether the cap applies, and ``alpha_`` of
  ``"scale"`` with it;
- the fits at the defaults, ``SparsemaxClassifier()`` (``random_state=0``: SDCA's row
  order) against ``LogisticRegression()`` (its defaults too: lbfgs, ``C=1``,
  ``max_iter=100``), on a stratified 70/30 split (seed 0):
  iterations / test accuracy / fit seconds (median of 3 fits, one thread; "warned": a
  ConvergenceWarning).

Data: scikit-learn's wine and breast cancer tables as given and standardized (the scaler
fit on the training rows), digits as given (0-16), a9a (one-hot, sparse), and
make_classification (5000 rows, 10 standardized features, 5 informative) beside a row
number, a Unix timestamp or an income in dollars (lognormal, uninformative), and 20
features of 5 classes in units 1e-2 to 1e4. In the first table only (no fits): 20000
Debian package descriptions as TF-IDF, alone and beside 6 standardized numbers, where the
columns' sums of squares span thousands of times (rare words) but their entries do not.

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the
same script run on an earlier commit's checkout) beside this run's. Writes section
"sparsemax_mixed_units" of doc/benchmarks.md::

    python benchmarks/bench_sparsemax_mixed_units.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import (load_breast_cancer, load_digits, load_wine,
                              make_classification)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import SparsemaxClassifier  # noqa: E402
from sparsekit.datasets import load_a9a  # noqa: E402

REPEAT = 3


def column_only_sets():
    """``(name, X, y)`` of the first table only."""
    X, y = _report.debian_sample(20000)
    yield "debian 20000 docs, TF-IDF", X, y
    numbers = np.random.default_rng(0).standard_normal((X.shape[0], 6))
    yield "debian 20000 docs, TF-IDF and 6 standardized numbers", \
        sp.hstack([X, sp.csr_matrix(numbers)]).tocsr(), y


def data_sets():
    """``(name, X, y, standardize)``: standardize fits a scaler on the training rows."""
    for name, load in (("wine", load_wine), ("breast cancer", load_breast_cancer)):
        X, y = load(return_X_y=True)
        yield f"{name} (as given)", X, y, False
        yield f"{name} (standardized)", X, y, True
    yield "digits (0-16)", *load_digits(return_X_y=True), False
    yield "a9a (one-hot, sparse)", *load_a9a(), False
    X, y = make_classification(5000, 10, n_informative=5, random_state=0)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    extra = {"a row number": np.arange(5000.0),
             "a Unix timestamp": 1.7e9 + rng.uniform(0, 3e7, 5000),
             "an income in dollars": 5e4 * rng.lognormal(0.0, 0.5, 5000)}
    yield "10 standardized features", X, y, False
    for what, column in extra.items():
        yield f"10 standardized features and {what}", np.column_stack([X, column]), y, False
    X, y = make_classification(5000, 20, n_informative=8, n_classes=5, random_state=1)
    yield "20 features in units 1e-2 to 1e4, 5 classes", \
        X * 10 ** rng.uniform(-2, 4, 20), y, False


def _split(X, y, standardize):
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                        stratify=y)
    if standardize:
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    return X_train, X_test, y_train, y_test


def _fit(make, X_train, y_train, X_test, y_test):
    """Median fit seconds of REPEAT fits, the last fit's test accuracy, iterations and
    whether it warned."""
    times = []
    for _ in range(REPEAT):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            start = time.perf_counter()
            model = make().fit(X_train, y_train)
            times.append(time.perf_counter() - start)
    return {"accuracy": float(model.score(X_test, y_test)),
            "iterations": int(np.max(model.n_iter_)), "seconds": statistics.median(times),
            "warned": any(issubclass(w.category, ConvergenceWarning) for w in caught),
            "alpha": float(getattr(model, "alpha_", np.nan))}


def _units(X):
    """The largest mean square of a column's nonzero entries over the median column's."""
    if sp.issparse(X):
        X = sp.csc_matrix(X)
        squares, counts = np.asarray(X.multiply(X).sum(axis=0)).ravel(), np.diff(X.indptr)
    else:
        squares, counts = np.sum(np.square(X), axis=0), np.count_nonzero(X, axis=0)
    means = squares[counts > 0] / counts[counts > 0]
    return float(means.max() / np.median(means))


def measure():
    rows = []
    for name, X, y, standardize in data_sets():
        X_train, X_test, y_train, y_test = _split(X, y, standardize)
        row = {"data": name, "shape": list(X_train.shape), "units": _units(X_train),
               "sparsemax": _fit(lambda: SparsemaxClassifier(random_state=0), X_train,
                                 y_train, X_test, y_test),
               "logistic": _fit(LogisticRegression, X_train, y_train, X_test, y_test)}
        print(row, flush=True)
        rows.append(row)
    for name, X, y in column_only_sets():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            alpha = SparsemaxClassifier(max_iter=1).fit(X, y).alpha_   # set before solving
        row = {"data": name, "shape": list(X.shape), "units": _units(X),
               "sparsemax": {"alpha": float(alpha)}, "logistic": None}
        print(row, flush=True)
        rows.append(row)
    return rows


def _ms_cell(fit):
    return _report.fit_cell(fit, "ms")


def main():
    warnings.simplefilter("ignore", UserWarning)
    results, earlier = _report.beside_before(__doc__.split("\n")[0],
                                             lambda: {"rows": measure()})
    rows = results["rows"]
    before = {r["data"]: r for r in earlier["rows"]} if earlier else {}
    label = f"commit {earlier['commit']}" if earlier else None
    shares = [[r["data"], f"{r['shape'][0]} x {r['shape'][1]}", f"{r['units']:.3g}",
               "yes" if r["units"] > 1000 else "no", f"{r['sparsemax']['alpha']:.3g}"]
              + ([f"{before[r['data']]['sparsemax']['alpha']:.3g}"] if r["data"] in before
                 else [""] if earlier else [])
              for r in rows]
    fits = [[r["data"], _ms_cell(r["logistic"]), _ms_cell(r["sparsemax"])]
            + ([_ms_cell(before[r["data"]]["sparsemax"]) if r["data"] in before else ""]
               if earlier else [])
            for r in rows if r["logistic"] is not None]
    body = (
        "The largest mean square of a column's nonzero entries over the median column's "
        "(on the training rows of the fits below), whether it passes the cap of 1000, and "
        "`alpha_` of "
        "`alpha=\"scale\"`" + (f" (this commit; {label})" if label else "") + ":\n\n"
        + _report.markdown_table(
            ["data", "rows x columns", "largest / median column entries", "capped",
             "alpha_"] + ([f"alpha_, {label}"] if label else []), shares)
        + "\n\nIterations (epochs for SDCA, which `solver=\"auto\"` picks on a9a) / test "
        "accuracy / fit time at the defaults (SparsemaxClassifier with `random_state=0`), "
        "stratified 70/30 split "
        f"(seed 0), median of {REPEAT} fits on one thread; \"warned\": a "
        "ConvergenceWarning. LogisticRegression at its defaults too (lbfgs, C=1, "
        "max_iter=100).\n\n"
        + _report.markdown_table(
            ["data", "LogisticRegression()", "SparsemaxClassifier()"]
            + ([f"SparsemaxClassifier(), {label}"] if label else []), fits))
    _report.write_section("sparsemax_mixed_units",
                          "SparsemaxClassifier on raw tables of columns in other units",
                          body)


if __name__ == "__main__":
    main()
