"""ExtremeSoftmaxSGD's closing line search on the weights' scale (``shrink``).

``shrink=True`` ends ``fit`` by multiplying the weights and intercepts by the factor s in
(0, 1] that minimizes the exact training NLL (the full softmax) at s times them, on 2^19
class scores' worth of training rows; ``"auto"`` (the default) does so with at most
10,000 classes. One thread, ``random_state=0``. A table on the few-class sets of
``bench_extreme_softmax_average.py`` (2 to 100 classes: make_classification, digits,
MNIST, a9a, w8a, scene, emotions, Debian): for the default method (sampled softmax) and
Implicit SGD,
the factor found, the test accuracy (the same with and without: a positive factor keeps
the scores' order), the test log loss with ``shrink=False`` and ``True`` and the fit
seconds of both; beside them the factor the same line search finds without the bound
s <= 1 (on every training row of the unshrunk fit) and the test log loss at it, the evidence
for taking only shrinks; and LogisticRegression (lbfgs, ``max_iter=1000``) in the same
run. A table on the development splits of ``bench_extreme_softmax_dev.py`` (146 to 9,434
classes): the default method's factor, development NLL and accuracy, fit seconds, with
``shrink=False`` and ``True``.

Writes section "esgd_shrink" of doc/benchmarks.md::

    python benchmarks/bench_extreme_softmax_shrink.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import time
import warnings

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_extreme_softmax_average import few_class_sets  # noqa: E402
from bench_extreme_softmax_dev import development_split  # noqa: E402
from bench_fasttext import SETS  # noqa: E402
from sparsekit.linear_model import ExtremeSoftmaxSGD  # noqa: E402

METHODS = ("sampled_softmax", "implicit")


def _fit(make, X_train, y_train):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = make().fit(X_train, y_train)
    return model, time.perf_counter() - start


def _scores(model, X):
    S = model.decision_function(X)
    return np.c_[np.zeros_like(S), S] if S.ndim == 1 else S


def _mean_nll(S, y_idx):
    return float(np.mean(logsumexp(S, axis=1) - S[np.arange(len(y_idx)), y_idx]))


def _unbounded_factor(model, X_train, y_idx):
    """The factor of the same line search without the bound s <= 1, on every training
    row."""
    S = _scores(model, X_train)
    return minimize_scalar(lambda s: _mean_nll(s * S, y_idx), bounds=(1e-3, 50.0),
                           method="bounded", options={"xatol": 1e-6}).x


def measure():
    rows = []
    for name, X_train, X_test, y_train, y_test in few_class_sets():
        keep = np.isin(y_test, y_train)
        X_test, y_test = X_test[keep], y_test[keep]
        lr, lr_seconds = _fit(lambda: LogisticRegression(max_iter=1000), X_train, y_train)
        row = {"data": name, "shape": list(X_train.shape),
               "classes": int(len(np.unique(y_train))),
               "LogisticRegression": {
                   "accuracy": float(lr.score(X_test, y_test)), "seconds": lr_seconds,
                   "log_loss": float(log_loss(y_test, lr.predict_proba(X_test),
                                              labels=lr.classes_))}}
        for method in METHODS:
            plain, plain_seconds = _fit(lambda m=method: ExtremeSoftmaxSGD(
                m, shrink=False, random_state=0), X_train, y_train)
            shrunk, seconds = _fit(lambda m=method: ExtremeSoftmaxSGD(
                m, shrink=True, random_state=0), X_train, y_train)
            y_idx = np.searchsorted(plain.classes_, y_train)
            factor = _unbounded_factor(plain, X_train, y_idx)
            S_test = _scores(plain, X_test)
            test_idx = np.searchsorted(plain.classes_, y_test)
            row[method] = {
                "factor": shrunk.shrink_, "unbounded_factor": float(factor),
                "accuracy": float(plain.score(X_test, y_test)),
                "same_predictions": bool(np.array_equal(plain.predict(X_test),
                                                        shrunk.predict(X_test))),
                "log_loss": float(log_loss(y_test, plain.predict_proba(X_test),
                                           labels=plain.classes_)),
                "log_loss_shrunk": float(log_loss(y_test, shrunk.predict_proba(X_test),
                                                  labels=shrunk.classes_)),
                "log_loss_unbounded": _mean_nll(factor * S_test, test_idx),
                "seconds": plain_seconds, "seconds_shrunk": seconds}
        print(row, flush=True)
        rows.append(row)
    return rows


def _development_nll(model, X, y, chunk=2000):
    """Mean NLL of the development rows whose class the model knows, a chunk at a time."""
    keep = np.isin(y, model.classes_)
    X, y_idx = X[keep], np.searchsorted(model.classes_, y[keep])
    nll = []
    for start in range(0, X.shape[0], chunk):
        S = _scores(model, X[start:start + chunk])
        nll.append(logsumexp(S, axis=1) - S[np.arange(S.shape[0]), y_idx[start:start + chunk]])
    return float(np.mean(np.concatenate(nll)))


def many_classes():
    rows = []
    for name in SETS:
        X_fit, y_fit, X_dev, y_dev = development_split(name)
        row = {"data": name, "classes": int(len(np.unique(y_fit)))}
        for shrink in (False, True):
            model, seconds = _fit(lambda s=shrink: ExtremeSoftmaxSGD(shrink=s, random_state=0),
                                  X_fit, y_fit)
            row[f"shrink={shrink}"] = {
                "factor": model.shrink_, "nll": _development_nll(model, X_dev, y_dev),
                "accuracy": float(model.score(X_dev, y_dev)), "seconds": seconds}
        print(row, flush=True)
        rows.append(row)
    return rows


def main():
    rows = measure()
    many = many_classes()
    header = ["data", "training rows x columns", "classes", "LogisticRegression"]
    for method in METHODS:
        header += [f"{method}: factor (unbounded)", f"{method}: test log loss "
                   "shrink=False → True (unbounded)", f"{method}: accuracy",
                   f"{method}: seconds False / True"]
    table = []
    for r in rows:
        lr = r["LogisticRegression"]
        line = [r["data"], f"{r['shape'][0]} x {r['shape'][1]}", str(r["classes"]),
                f"{lr['accuracy']:.4f} / {lr['log_loss']:.3f}"]
        for method in METHODS:
            m = r[method]
            line += [f"{m['factor']:.3f} ({m['unbounded_factor']:.3f})",
                     f"{m['log_loss']:.3f} → {m['log_loss_shrunk']:.3f} "
                     f"({m['log_loss_unbounded']:.3f})",
                     f"{m['accuracy']:.4f}" + ("" if m["same_predictions"] else " (!)"),
                     f"{m['seconds']:.2f} / {m['seconds_shrunk']:.2f}"]
        table.append(line)
    fits = [r[m] for r in rows for m in METHODS]
    shrunk = [f for f in fits if f["factor"] < 1.0]
    sharper = [f for f in fits if f["unbounded_factor"] > 1.0]
    body = (
        "Test log loss of ExtremeSoftmaxSGD without and with the closing line search "
        "(`shrink=False` → `True`; `\"auto\"` is `True` on every row), "
        "the factor it found and, in brackets, the factor and test log loss of the same "
        "line search without the bound s <= 1; the test accuracy, which the factor does "
        "not change (a (!) would mark a changed prediction); fit seconds without / with; "
        "LogisticRegression's test accuracy / log loss in the same run. One thread, "
        "`random_state=0`, the estimator's defaults but `method` and `shrink`.\n\n"
        + _report.markdown_table(header, table)
        + f"\n\nOf these {len(fits)} fits, {len(shrunk)} were shrunk; their test log loss "
        f"changed by {min(f['log_loss_shrunk'] - f['log_loss'] for f in shrunk):+.3f} to "
        f"{max(f['log_loss_shrunk'] - f['log_loss'] for f in shrunk):+.3f}. The "
        f"unbounded line search would have sharpened {len(sharper)} of them (factor > 1), "
        "changing their test log loss by "
        + (f"{min(f['log_loss_unbounded'] - f['log_loss'] for f in sharper):+.3f} to "
           f"{max(f['log_loss_unbounded'] - f['log_loss'] for f in sharper):+.3f}."
           if sharper else "nothing."))
    many_table = [[r["data"], f"{r['classes']} ({np.log(r['classes']):.2f})",
                   f"{r['shrink=True']['factor']:.3f}",
                   f"{r['shrink=False']['nll']:.3f} → {r['shrink=True']['nll']:.3f}",
                   f"{r['shrink=False']['accuracy']:.4f} / {r['shrink=True']['accuracy']:.4f}",
                   f"{r['shrink=False']['seconds']:.2f} / {r['shrink=True']['seconds']:.2f}"]
                  for r in many]
    body += ("\n\nMany classes: the development splits of section extreme_softmax_dev, the "
             "default method with `shrink=False` and `True`; development NLL on the rows whose "
             "class the training split holds; log K, the uniform distribution's, beside the "
             "classes.\n\n"
             + _report.markdown_table(["data", "classes", "factor",
                                       "development NLL False → True",
                                       "development accuracy False / True",
                                       "fit seconds False / True"], many_table))
    _report.write_section("esgd_shrink", "ExtremeSoftmaxSGD: the closing line search on "
                          "the weights' scale", body)


if __name__ == "__main__":
    main()
