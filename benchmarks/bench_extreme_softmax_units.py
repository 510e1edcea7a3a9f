"""ExtremeSoftmaxSGD on raw tables whose columns are in other units.

Its steps follow the rows' norms (``learning_rate="auto"`` divides by the median squared
row norm), so on a raw table one column in other units (an identifier, a timestamp, an
income beside standardized features; wine's proline beside ratios) set the steps alone
and the other columns' weights barely moved. ``fit`` now runs its passes, where some
column's nonzero entries have a mean square over 1000 times the median column's, on X
with each column of larger entries than the median column's divided by their root mean
square over the median's. One table: test accuracy / test log loss / fit milliseconds at
the defaults, the accuracy and log loss the mean over ``random_state`` 0, 1, 2 and the
time the median of those fits (one thread), of

- ``ExtremeSoftmaxSGD()`` on X as given, this commit (and ``--before``: the same script
  run in a checkout of an earlier commit);
- ``ExtremeSoftmaxSGD()`` after ``StandardScaler`` (fit on the training rows): what a
  user who scales gets;
- a stream: ``ExtremeSoftmaxSGD().partial_fit`` on the training rows in 10 chunks, twice
  over (20 calls, as fit's 20 epochs), this commit and ``--before``;
- ``LogisticRegression()`` at its defaults (lbfgs, ``C=1``, ``max_iter=100``; "warned":
  a ConvergenceWarning) and ``SGDClassifier(loss="log_loss")`` (the same seeds), on X
  as given.

Data: the raw tables of ``bench_sparsemax_mixed_units.py`` (wine and breast cancer as
given and standardized, digits 0-16, a9a, make_classification's standardized features
alone and beside a row number, a Unix timestamp or an income; 20 features in units 1e-2
to 1e4) and Mulan's emotions (72 audio features as published, its train/test split,
the first label), with the largest mean square of a column's nonzero entries over the
median column's on the training rows.

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows beside
this run's. Writes section "esgd_units" of doc/benchmarks.md::

    python benchmarks/bench_extreme_softmax_units.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.metrics import log_loss
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from bench_sparsemax_mixed_units import _split, _units, data_sets

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import ExtremeSoftmaxSGD  # noqa: E402
from sparsekit.datasets import load_mulan  # noqa: E402
from sparsekit.linear_model import first_label  # noqa: E402

SEEDS = (0, 1, 2)
CHUNKS, PASSES = 10, 2


def split_sets():
    """``(name, X_train, X_test, y_train, y_test)``."""
    for name, X, y, standardize in data_sets():
        yield name, *_split(X, y, standardize)
    (X, Y), (Xt, Yt) = load_mulan("emotions", "train"), load_mulan("emotions", "test")
    yield "emotions (first label)", X, Xt, first_label(Y), first_label(Yt)


def _fits(makes, X_train, X_test, y_train, y_test):
    """Mean test accuracy and log loss of the fits of ``makes`` (one per seed), median fit
    seconds, and whether any fit warned (ConvergenceWarning)."""
    accuracy, loss, seconds, warned = [], [], [], False
    for make in makes:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            start = time.perf_counter()
            model = make().fit(X_train, y_train)
            seconds.append(time.perf_counter() - start)
        warned |= any(issubclass(w.category, ConvergenceWarning) for w in caught)
        accuracy.append(model.score(X_test, y_test))
        loss.append(log_loss(y_test, model.predict_proba(X_test), labels=model.classes_))
    return {"accuracy": float(np.mean(accuracy)), "log_loss": float(np.mean(loss)),
            "seconds": statistics.median(seconds), "warned": warned}


class _Streamed:
    """``ExtremeSoftmaxSGD(random_state=seed)`` fit by ``partial_fit`` on ``CHUNKS`` row
    chunks, ``PASSES`` times over."""

    def __init__(self, seed):
        self.model = ExtremeSoftmaxSGD(random_state=seed)

    def fit(self, X, y):
        classes = np.unique(y)
        for _ in range(PASSES):
            for rows in np.array_split(np.arange(X.shape[0]), CHUNKS):
                self.model.partial_fit(X[rows], y[rows], classes=classes)
        return self.model


def measure():
    rows = []
    for name, X_train, X_test, y_train, y_test in split_sets():
        split = (X_train, X_test, y_train, y_test)
        row = {"data": name, "shape": list(X_train.shape), "classes": len(np.unique(y_train)),
               "units": _units(X_train),
               "esgd": _fits([lambda s=s: ExtremeSoftmaxSGD(random_state=s) for s in SEEDS],
                             *split),
               "esgd_scaled": _fits([lambda s=s: make_pipeline(
                   StandardScaler(with_mean=not hasattr(X_train, "tocsr")),
                   ExtremeSoftmaxSGD(random_state=s)) for s in SEEDS], *split),
               "stream": _fits([lambda s=s: _Streamed(s) for s in SEEDS], *split),
               "logistic": _fits([LogisticRegression], *split),
               "sgd": _fits([lambda s=s: SGDClassifier(loss="log_loss", random_state=s)
                             for s in SEEDS], *split)}
        print(row, flush=True)
        rows.append(row)
    return rows


def _cell(fit):
    return (f"{fit['accuracy']:.4f} / {fit['log_loss']:.3f} / {fit['seconds'] * 1e3:.1f} ms"
            + (", warned" if fit["warned"] else ""))


def main():
    warnings.simplefilter("ignore", UserWarning)
    results, earlier = _report.beside_before(__doc__.split("\n")[0],
                                             lambda: {"rows": measure()})
    before = {r["data"]: r for r in earlier["rows"]} if earlier else {}
    label = f"commit {earlier['commit']}" if earlier else None
    rows = [[r["data"], f"{r['shape'][0]} x {r['shape'][1]}, {r['classes']}",
             f"{r['units']:.3g}"]
            + ([_cell(before[r["data"]]["esgd"]) if r["data"] in before else ""]
               if earlier else [])
            + [_cell(r["esgd"]), _cell(r["esgd_scaled"])]
            + ([_cell(before[r["data"]]["stream"]) if r["data"] in before
                and "stream" in before[r["data"]] else ""] if earlier else [])
            + [_cell(r["stream"]), _cell(r["logistic"]), _cell(r["sgd"])]
            for r in results["rows"]]
    body = (
        "Test accuracy / test log loss / fit time at the defaults: the accuracy and log loss "
        f"the mean over random_state {', '.join(map(str, SEEDS))} (one fit for "
        "LogisticRegression), the time the median of those fits, one thread. \"largest / "
        "median\": the largest mean square of a column's nonzero entries over the median "
        "column's on the training rows (above 1000 the passes run on divided columns). "
        f"\"partial_fit stream\": ExtremeSoftmaxSGD() fed the training rows in {CHUNKS} "
        f"chunks, {PASSES} times over. "
        "Splits: stratified 70/30 (seed 0), emotions' own; \"warned\": a "
        "ConvergenceWarning.\n\n"
        + _report.markdown_table(
            ["data", "training rows x columns, classes", "largest / median"]
            + ([f"ExtremeSoftmaxSGD(), {label}"] if label else [])
            + ["ExtremeSoftmaxSGD()", "StandardScaler + ExtremeSoftmaxSGD()"]
            + ([f"partial_fit stream, {label}"] if label else [])
            + ["partial_fit stream", "LogisticRegression()",
               "SGDClassifier(loss=\"log_loss\")"], rows))
    _report.write_section("esgd_units", "ExtremeSoftmaxSGD on raw tables of columns in "
                          "other units", body)


if __name__ == "__main__":
    main()
