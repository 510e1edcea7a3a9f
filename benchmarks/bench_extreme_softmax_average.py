"""ExtremeSoftmaxSGD's iterate averaging (``average``) against the last weights.

``average=True`` makes fit's model the mean of the weights at the ends of its last
``ceil(n_epochs / 4)`` epochs (the last 5 of the default 20); ``"auto"`` (the default)
averages with at most 100 classes. Two tables, one thread, ``random_state=0``:

- few classes (2 to 100): test accuracy / test log loss / fit seconds of
  ExtremeSoftmaxSGD's default method (sampled softmax) and Implicit SGD with
  ``average=False`` and ``True``, beside LogisticRegression (lbfgs, ``max_iter=1000``:
  the maximum-likelihood fit the SGD methods estimate) and SGDClassifier
  (``loss="log_loss"``, without and with its own ``average=True``) in the same run. Data:
  make_classification (20,000 x 50, 20 informative, one cluster a class, 5 to 100
  classes; 70/30 split), scikit-learn's digits / 16 (70/30), MNIST's first 20,000
  training images / 255 (14,000 / 6,000), a9a / a9a.t, w8a (70/30), Mulan's scene and
  emotions (their split, first label), and 20,000 Debian package descriptions as TF-IDF
  (58 archive sections; 70/30);
- many classes: the development splits of ``bench_extreme_softmax_dev.py`` (80/20 of
  the training split of each set of ``bench_fasttext.py``): development accuracy of the
  two methods with ``average=False`` and ``True``;
- a stream: ``partial_fit`` on the training rows of three few-class sets in 10 chunks,
  twice over, at a constant step (``lr_decay=1.0``) and at the default decay: test
  accuracy with ``average=False`` and ``True`` (the mean of the weights after each call).

Writes section "esgd_average" of doc/benchmarks.md::

    python benchmarks/bench_extreme_softmax_average.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits, make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_extreme_softmax_dev import development_split  # noqa: E402
from bench_fasttext import SETS  # noqa: E402
from sparsekit.datasets import load_libsvm, load_mnist, load_mulan  # noqa: E402
from sparsekit.linear_model import ExtremeSoftmaxSGD, first_label  # noqa: E402

METHODS = ("sampled_softmax", "implicit")
STREAMED = ("make_classification, 5 classes", "make_classification, 10 classes",
            "a9a / a9a.t")


def few_class_sets():
    """``(name, X_train, X_test, y_train, y_test)`` of 2 to 100 classes."""
    for K in (5, 10, 20, 100):
        X, y = make_classification(20000, 50, n_informative=20, n_classes=K,
                                   n_clusters_per_class=1, random_state=0)
        yield (f"make_classification, {K} classes", *train_test_split(
            X, y, test_size=0.3, random_state=0))
    X, y = load_digits(return_X_y=True)
    yield "digits / 16", *train_test_split(X / 16, y, test_size=0.3, random_state=0)
    X, y = load_mnist("train")
    X = np.asarray(X[:20000], dtype=np.float64) / 255
    yield "MNIST 20,000 / 255", X[:14000], X[14000:], y[:14000], y[14000:20000]
    (X, y), (Xt, yt) = load_libsvm("a9a"), load_libsvm("a9a.t")
    yield "a9a / a9a.t", X, Xt, y, yt
    X, y = load_libsvm("w8a")
    yield "w8a", *train_test_split(X, y, test_size=0.3, random_state=0)
    for name in ("scene", "emotions"):
        (X, Y), (Xt, Yt) = load_mulan(name, "train"), load_mulan(name, "test")
        yield f"{name} (first label)", X, Xt, first_label(Y), first_label(Yt)
    X, y = _report.debian_sample(20000)
    yield "Debian 20,000 docs, TF-IDF, 58 sections", *train_test_split(
        X, y, test_size=0.3, random_state=0)


def _scored(make, X_train, X_test, y_train, y_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = make().fit(X_train, y_train)
        seconds = time.perf_counter() - start
        proba = model.predict_proba(X_test)
    return {"accuracy": float(model.score(X_test, y_test)), "seconds": seconds,
            "log_loss": float(log_loss(y_test, proba, labels=model.classes_))}


def few_classes():
    rows = []
    for name, X_train, X_test, y_train, y_test in few_class_sets():
        keep = np.isin(y_test, y_train)
        X_test, y_test = X_test[keep], y_test[keep]
        fits = {"LogisticRegression": lambda: LogisticRegression(max_iter=1000)}
        for average in (False, True):
            fits[f"SGDClassifier average={average}"] = (
                lambda a=average: SGDClassifier(loss="log_loss", average=a, random_state=0))
            for method in METHODS:
                fits[f"{method} average={average}"] = (
                    lambda m=method, a=average: ExtremeSoftmaxSGD(m, average=a,
                                                                  random_state=0))
        row = {"data": name, "shape": list(X_train.shape),
               "classes": int(len(np.unique(y_train))),
               "fits": {key: _scored(make, X_train, X_test, y_train, y_test)
                        for key, make in fits.items()}}
        print(row, flush=True)
        rows.append(row)
    return rows


def many_classes():
    rows = []
    for name in SETS:
        Xf, yf, Xd, yd = development_split(name)
        row = {"data": name, "classes": int(len(np.unique(yf))), "fits": {}}
        for method in METHODS:
            for average in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    est = ExtremeSoftmaxSGD(method, average=average,
                                            random_state=0).fit(Xf, yf)
                    seconds = time.perf_counter() - start
                row["fits"][f"{method} average={average}"] = {
                    "accuracy": float(est.score(Xd, yd)), "seconds": seconds}
        print(row, flush=True)
        rows.append(row)
    return rows


def streams():
    rows = []
    for name, X_train, X_test, y_train, y_test in few_class_sets():
        if name not in STREAMED:
            continue
        classes = np.unique(y_train)
        row = {"data": name, "fits": {}}
        for decay in (1.0, 0.9):
            for average in (False, True):
                est = ExtremeSoftmaxSGD(average=average, lr_decay=decay, random_state=0)
                for _ in range(2):
                    for chunk in np.array_split(np.arange(X_train.shape[0]), 10):
                        est.partial_fit(X_train[chunk], y_train[chunk], classes=classes)
                row["fits"][f"lr_decay={decay} average={average}"] = float(
                    est.score(X_test, y_test))
        print(row, flush=True)
        rows.append(row)
    return rows


def _gain(row, method):
    """The change of accuracy that ``average=True`` made to ``method``'s fit."""
    fits = row["fits"]
    return fits[f"{method} average=True"]["accuracy"] - fits[f"{method} average=False"]["accuracy"]


def _cell(fit):
    return f"{fit['accuracy']:.4f} / {fit['log_loss']:.3f} / {fit['seconds']:.2f} s"


def main():
    few, many, streamed = few_classes(), many_classes(), streams()
    columns = ["LogisticRegression", "SGDClassifier average=False",
               "SGDClassifier average=True"] + [f"{m} average={a}" for m in METHODS
                                                for a in (False, True)]
    table = [[r["data"], f"{r['shape'][0]} x {r['shape'][1]}", str(r["classes"])]
             + [_cell(r["fits"][c]) for c in columns] for r in few]
    gains = [_gain(r, m) for r in few for m in METHODS]
    keys = [f"{m} average={a}" for m in METHODS for a in (False, True)]
    stream_keys = [f"lr_decay={d} average={a}" for d in (1.0, 0.9) for a in (False, True)]
    many_table = [[r["data"], str(r["classes"])]
                  + [f"{r['fits'][k]['accuracy']:.4f} / {r['fits'][k]['seconds']:.2f} s"
                     for k in keys]
                  + [" / ".join(f"{_gain(r, m):+.4f}" for m in METHODS)]
                  for r in many]
    many_gains = [_gain(r, m) for r in many for m in METHODS]
    body = (
        "Few classes: test accuracy / test log loss / fit seconds, one fit each (one "
        "thread, `random_state=0`). ExtremeSoftmaxSGD at its defaults but `method` and "
        "`average` (`average=\"auto\"` is `True` on every row of this table); "
        "LogisticRegression with `max_iter=1000`; SGDClassifier with `loss=\"log_loss\"`.\n\n"
        + _report.markdown_table(["data", "training rows x columns", "classes"] + columns,
                                 table)
        + f"\n\nAveraging's change of test accuracy over these {len(gains)} fits: "
        f"{min(gains):+.4f} to {max(gains):+.4f} (mean {np.mean(gains):+.4f}).\n\n"
        "Many classes: development accuracy / fit seconds on the development splits of "
        "section extreme_softmax_dev (`average=\"auto\"` is `False` on every row).\n\n"
        + _report.markdown_table(["data", "classes"] + keys
                                 + ["averaging's change (sampled / implicit)"], many_table)
        + f"\n\nAveraging's change of development accuracy over these {len(many_gains)} "
        f"fits: {min(many_gains):+.4f} to {max(many_gains):+.4f} "
        f"(mean {np.mean(many_gains):+.4f}).\n\n"
        "A stream: `partial_fit` on the training rows in 10 chunks, twice over (20 calls), "
        "the default method; test accuracy without and with `average=True` (the mean of "
        "the weights after each call), at a constant step and at the default decay per "
        "call.\n\n"
        + _report.markdown_table(["data"] + stream_keys,
                                 [[r["data"]] + [f"{r['fits'][k]:.4f}" for k in stream_keys]
                                  for r in streamed]))
    _report.write_section("esgd_average",
                          "ExtremeSoftmaxSGD: the mean of the last epochs' weights", body)


if __name__ == "__main__":
    main()
