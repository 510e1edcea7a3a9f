"""Side-by-side comparison of sparsekit's estimators with their usual peers.

Runs on datasets embedded in scikit-learn (no download, no ../shared needed) and prints one
table per task. Peers that are not installed are listed as such and skipped
(``pip install ".[compare]"`` in the checkout installs LIBLINEAR, skglm and celer).

- l1-logistic regression, objective of LIBLINEAR ``-s 6``: ``||w||_1 + C sum log(1+exp(-y w.x))``
  (no intercept, as ``-B -1``) on breast_cancer (standardized): L1LogisticOBA vs LIBLINEAR,
  skglm, celer and scikit-learn's ``saga``; time, objective, suboptimality, zeros.
  sparsekit, LIBLINEAR, skglm and celer run at tol 1e-8, each in its own measure, which
  leaves them all within ~2e-12 of the best objective (saga at 1e-6 stops ~1e-7 away, and
  tighter tolerances do not bring it much closer in 20000 epochs).
  Every fit is preceded by one untimed warm-up fit (skglm compiles with numba on first use);
  LIBLINEAR's own copy of the data (``problem``) is built once, outside the timing, as the
  other solvers take the arrays as they are.
- multiclass probabilities on digits: SparsemaxClassifier and ExtremeSoftmaxSGD vs
  multinomial LogisticRegression, SGDClassifier(log_loss) and LIBLINEAR ``-s 0 -B 1``
  (every model with an intercept); time, test accuracy, mean support of ``predict_proba``.
  ExtremeSoftmaxSGD runs without its training-NLL history (``eval_every=0``), which
  the other models do not compute either.

Times are wall-clock medians with their min-max range. A peer that fails is listed with
its error, and the other rows are still measured.

Usage::

    sparsekit-compare            # or, Python >= 3.11: python -P -m sparsekit.benchmarks.compare
    sparsekit-compare --repeat 5
"""
import argparse
import statistics
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier
from sparsekit.utils._sklearn import l1_penalty

_L1 = l1_penalty()


def _median_fit(make_and_fit, repeat):
    """Wall times of ``repeat`` fits after one untimed warm-up (JIT compilers, caches), and
    the last model."""
    make_and_fit()
    times, model = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        model = make_and_fit()
        times.append(time.perf_counter() - t0)
    return times, model


def _measure(name, fit, repeat, describe):
    """One table row: ``[name, times, *describe(model), ""]``, or the reason it has none
    (not installed; the error a peer raised)."""
    if fit is None:
        return [name, "not installed", "", "", ""]
    try:
        times, model = _median_fit(fit, repeat)
        return [name, times, *describe(model), ""]
    except Exception as exc:   # a peer's API change must not hide the other rows
        return [name, f"error: {type(exc).__name__}: {exc}"[:100], "", "", ""]


def _measured(rows):
    return [r for r in rows if not isinstance(r[1], str)]


def _format_rows(rows, base_row, formats):
    """Format measured rows in place: column 1 times -> "median ms (min-max)", column 4
    the ratio of medians to ``base_row``'s, and ``formats[i](value)`` for the others."""
    base = statistics.median(base_row[1]) if not isinstance(base_row[1], str) else None
    for r in _measured(rows):
        median = statistics.median(r[1])
        r[4] = f"{median / base:.2f}x" if base else "n/a"
        r[1] = f"{median * 1e3:.1f} ms ({min(r[1]) * 1e3:.1f}-{max(r[1]) * 1e3:.1f})"
        for i, fmt in formats.items():
            r[i] = fmt(r[i])


def _l1_objective(w, X, y, C):
    margins = y * (X @ w)
    return np.abs(w).sum() + C * np.logaddexp(0.0, -margins).sum()


def _l1_solvers(X, y, C):
    """(name, fit -> coef) for every installed l1-logistic solver, same objective."""
    n = X.shape[0]
    yield "sparsekit L1LogisticOBA", lambda: L1LogisticOBA(
        C=C, tol=1e-8, fit_intercept=False).fit(X, y).coef_.ravel()
    try:
        from liblinear import liblinearutil
    except ImportError:
        yield "LIBLINEAR -s 6", None
    else:
        problem = liblinearutil.problem(y.astype(float), X)  # its own format, built once

        def liblinear_fit():
            model = liblinearutil.train(problem, liblinearutil.parameter(
                f"-s 6 -c {C} -B -1 -e 1e-8 -q"))
            w = np.array(model.get_decfun()[0])
            return w if model.get_labels()[0] == 1 else -w
        yield "LIBLINEAR -s 6", liblinear_fit
    try:
        from skglm import SparseLogisticRegression
    except ImportError:
        yield "skglm", None
    else:
        yield "skglm", lambda: SparseLogisticRegression(
            alpha=1.0 / (C * n), fit_intercept=False, tol=1e-8, max_iter=1000
        ).fit(X, y).coef_.ravel()
    try:
        from celer import LogisticRegression as CelerLR
    except ImportError:
        yield "celer", None
    else:
        yield "celer", lambda: CelerLR(C=C, fit_intercept=False, tol=1e-8).fit(
            X, y).coef_.ravel()
    yield "scikit-learn saga", lambda: LogisticRegression(
        C=C, solver="saga", fit_intercept=False, tol=1e-6, max_iter=20000, **_L1
    ).fit(X, y).coef_.ravel()


def compare_l1_logistic(repeat, C=1.0):
    """(title, header, rows) of the l1-logistic comparison on breast_cancer."""
    data = load_breast_cancer()
    X = StandardScaler().fit_transform(data.data)
    y = np.where(data.target == 1, 1, -1)
    rows = [_measure(name, fit, repeat,
                     lambda w: (_l1_objective(w, X, y, C), int(np.sum(w == 0))))
            for name, fit in _l1_solvers(X, y, C)]
    best = min((r[2] for r in _measured(rows)), default=np.nan)
    _format_rows(rows, rows[0], {2: lambda f: f"{f:.8f} (rel. gap {(f - best) / best:.1e})"})
    return (f"l1-logistic (LIBLINEAR -s 6 objective), breast_cancer {X.shape}, C={C}, "
            f"no intercept; tol 1e-8 (saga 1e-6), each in its own measure; LIBLINEAR's "
            f"copy of the data built untimed; median (min-max) of {repeat} fits",
            ["solver", "fit time", "objective F(w)", "zeros in w", "time / sparsekit"], rows)


def _multiclass_models():
    yield "sparsekit SparsemaxClassifier", lambda: SparsemaxClassifier(alpha=1e-3, max_iter=500)
    yield "sparsekit ExtremeSoftmaxSGD (implicit)", lambda: ExtremeSoftmaxSGD(
        method="implicit", n_epochs=20, eval_every=0, random_state=0)
    yield "scikit-learn LogisticRegression (lbfgs)", lambda: LogisticRegression(
        C=1.0, max_iter=2000)
    yield "scikit-learn SGDClassifier (log_loss)", lambda: SGDClassifier(
        loss="log_loss", alpha=1e-4, max_iter=20, tol=None, random_state=0)


def _liblinear_multiclass(X_train, y_train, X_test, y_test, repeat):
    name = "LIBLINEAR -s 0 -B 1 (one-vs-rest)"
    try:
        from liblinear import liblinearutil
    except ImportError:
        return _measure(name, None, repeat, None)
    problem = liblinearutil.problem(y_train.astype(float), X_train)  # built once, untimed

    def describe(model):
        labels, _, proba = liblinearutil.predict(
            y_test.astype(float), X_test, model, "-b 1 -q")
        return (np.mean(np.asarray(labels) == y_test),
                float(np.mean(np.sum(np.asarray(proba) > 0, axis=1))))

    return _measure(name, lambda: liblinearutil.train(
        problem, liblinearutil.parameter("-s 0 -c 1 -B 1 -q")), repeat, describe)


def compare_multiclass(repeat):
    """(title, header, rows) of the multiclass-probability comparison on digits."""
    data = load_digits()
    X = data.data / 16.0
    X_train, X_test, y_train, y_test = train_test_split(
        X, data.target, test_size=0.3, random_state=0, stratify=data.target)
    def describe(model):
        proba = model.predict_proba(X_test)
        return model.score(X_test, y_test), float(np.mean(np.sum(proba > 0, axis=1)))

    rows = [_measure(name, lambda make=make: make().fit(X_train, y_train), repeat, describe)
            for name, make in _multiclass_models()]
    rows.append(_liblinear_multiclass(X_train, y_train, X_test, y_test, repeat))
    _format_rows(rows, rows[2], {2: "{:.4f}".format, 3: "{:.2f}".format})
    return (f"multiclass probabilities, digits {X.shape} (70/30 split), every model with an "
            f"intercept; median (min-max) of {repeat} fits",
            ["model", "fit time", "test accuracy", "mean classes with p>0",
             "time / LogisticRegression"], rows)


def format_table(title, header, rows):
    """Plain-text table with aligned columns."""
    cells = [header] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = [title, line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[:1]]
    out += [line]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells[1:]]
    return "\n".join(out + [line])


def _positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def main(argv=None):
    """The ``sparsekit-compare`` console script: print both tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=_positive_int, default=3,
                        help="fits per model (median)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")  # numba, in skglm
    with threadpool_limits(limits=1):     # every solver single-threaded, BLAS included
        for task in (compare_l1_logistic, compare_multiclass):
            print(format_table(*task(args.repeat)))
            print()


if __name__ == "__main__":
    main()
