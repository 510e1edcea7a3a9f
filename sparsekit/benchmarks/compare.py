"""Side-by-side comparison of sparsekit's estimators with their usual peers, on your data.

``sparsekit-compare [DATA ...]`` prints one table per task for each data set:

- binary labels: l1-logistic regression, objective of LIBLINEAR ``-s 6``:
  ``||w||_1 + C sum log(1+exp(-y w.x))`` (no intercept, as ``-B -1``): L1LogisticOBA vs
  LIBLINEAR, skglm, celer and scikit-learn's ``saga``; time, objective, suboptimality,
  zeros. sparsekit, LIBLINEAR, skglm and celer run at tol 1e-8, each in its own measure,
  which leaves them within ~1e-12 of the best objective (saga at 1e-6 stops ~1e-7 away).
  LIBLINEAR's own copy of the data (``problem``) is built once, outside the timing, as the
  other solvers take the arrays as they are.
- every data set: class probabilities on a stratified 70/30 split: SparsemaxClassifier (and
  ExtremeSoftmaxSGD for more than two classes) vs multinomial LogisticRegression,
  SGDClassifier(log_loss) and LIBLINEAR ``-s 0 -B 1`` (every model with an intercept, at its
  defaults); time, test accuracy, mean support of ``predict_proba``. ExtremeSoftmaxSGD runs
  without its training-NLL history (``eval_every=0``), which the other models do not compute
  either.

DATA is a LIBSVM/svmlight file (any path; ``.xz``, ``.gz`` and ``.bz2`` are read
compressed), ``a9a`` (shipped inside sparsekit), a set of the data home (``a9a.t``, ``w8a``:
see :func:`sparsekit.datasets.get_data_home`) or one of scikit-learn's ``breast_cancer`` and
``digits`` (dense, standardized for the l1 table). Without DATA it runs on a9a and digits.

On a terminal (with ``rich``, installed by the ``compare`` extra) a spinner line on stderr
names the model being timed. Every fit is preceded by one untimed warm-up fit (skglm
compiles with numba on first use); a model whose warm-up takes more than ``--budget``
seconds is timed by that fit alone. Times
are wall-clock medians with their min-max range, every solver on one thread. A peer that is
not installed or fails is listed with its reason, and the other rows are still measured.

Usage::

    sparsekit-compare                       # a9a and digits
    sparsekit-compare my_data.svm.xz --C 0.5 --repeat 5
    sparsekit-compare w8a --json            # machine-readable tables
"""
import argparse
import contextlib
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import train_test_split
from sklearn.utils.multiclass import type_of_target
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier
from sparsekit.datasets import load_a9a, load_libsvm
from sparsekit.utils._sklearn import l1_penalty

_L1 = l1_penalty()


def _median_fit(make_and_fit, repeat, budget=np.inf):
    """Wall times of ``repeat`` fits after one warm-up fit (JIT compilers, caches), and the
    last model; a warm-up longer than ``budget`` seconds is the only fit, and its time."""
    t0 = time.perf_counter()
    model = make_and_fit()
    first = time.perf_counter() - t0
    if first > budget:
        return [first], model
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        model = make_and_fit()
        times.append(time.perf_counter() - t0)
    return times, model


def _measure(name, fit, repeat, describe, budget=np.inf, announce=None):
    """One table row: ``[name, times, *describe(model), ""]``, or the reason it has none
    (not installed; the error a peer raised). ``announce(name)`` is called before the
    model is timed (the progress display of ``main``)."""
    if fit is None:
        return [name, "not installed", "", "", ""]
    if announce is not None:
        announce(name)
    try:
        times, model = _median_fit(fit, repeat, budget)
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
        r[1] = (f"{median * 1e3:.1f} ms ({min(r[1]) * 1e3:.1f}-{max(r[1]) * 1e3:.1f})"
                if len(r[1]) > 1 else f"{median * 1e3:.1f} ms (one fit)")
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


def compare_l1_logistic(repeat, C=1.0, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the l1-logistic comparison on ``data`` (a :class:`Dataset`
    with two classes; default: breast_cancer)."""
    data = data or load_dataset("breast_cancer")
    X = data.X_l1
    y = np.where(data.y == data.classes[1], 1, -1)
    rows = [_measure(name, fit, repeat,
                     lambda w: (_l1_objective(w, X, y, C), int(np.sum(w == 0))), budget,
                     announce)
            for name, fit in _l1_solvers(X, y, C)]
    best = min((r[2] for r in _measured(rows)), default=np.nan)
    _format_rows(rows, rows[0], {2: lambda f: f"{f:.8f} (rel. gap {(f - best) / best:.1e})"})
    return (f"l1-logistic (LIBLINEAR -s 6 objective), {data.name} {X.shape}, C={C:g}, "
            f"no intercept; tol 1e-8 (saga 1e-6), each in its own measure; LIBLINEAR's "
            f"copy of the data built untimed; median (min-max) of {repeat} fits",
            ["solver", "fit time", "objective F(w)", "zeros in w", "time / sparsekit"], rows)


def _multiclass_models(n_classes=10):
    yield "sparsekit SparsemaxClassifier", lambda: SparsemaxClassifier(alpha=1e-3, max_iter=500)
    if n_classes > 2:  # a softmax for many classes; two are LogisticRegression's ground
        yield "sparsekit ExtremeSoftmaxSGD (implicit)", lambda: ExtremeSoftmaxSGD(
            method="implicit", n_epochs=20, eval_every=0, random_state=0)
    yield "scikit-learn LogisticRegression (lbfgs)", lambda: LogisticRegression(
        C=1.0, max_iter=2000)
    yield "scikit-learn SGDClassifier (log_loss)", lambda: SGDClassifier(
        loss="log_loss", alpha=1e-4, max_iter=20, tol=None, random_state=0)


def _liblinear_multiclass(X_train, y_train, X_test, y_test, repeat, budget=np.inf,
                          announce=None):
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
        problem, liblinearutil.parameter("-s 0 -c 1 -B 1 -q")), repeat, describe, budget,
        announce)


def compare_multiclass(repeat, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the class-probability comparison on ``data`` (a
    :class:`Dataset`; default: digits)."""
    data = data or load_dataset("digits")
    X_train, X_test, y_train, y_test = train_test_split(
        data.X, data.y, test_size=0.3, random_state=0, stratify=data.y)

    def describe(model):
        proba = model.predict_proba(X_test)
        return model.score(X_test, y_test), float(np.mean(np.sum(proba > 0, axis=1)))

    rows = [_measure(name, lambda make=make: make().fit(X_train, y_train), repeat, describe,
                     budget, announce)
            for name, make in _multiclass_models(data.classes.size)]
    rows.append(_liblinear_multiclass(X_train, y_train, X_test, y_test, repeat, budget,
                                      announce))
    base = next(r for r in rows if r[0].startswith("scikit-learn LogisticRegression"))
    _format_rows(rows, base, {2: "{:.4f}".format, 3: "{:.2f}".format})
    return (f"class probabilities, {data.name} {data.X.shape}, {data.classes.size} classes "
            f"(70/30 split), every model with an intercept; median (min-max) of {repeat} fits",
            ["model", "fit time", "test accuracy", "mean classes with p>0",
             "time / LogisticRegression"], rows)


class Dataset:
    """A data set to compare on: ``X`` (dense or CSR), labels ``y``, ``X_l1`` (the matrix
    of the l1 table: scikit-learn's dense sets standardized) and its sorted ``classes``."""

    def __init__(self, name, X, y, X_l1=None):
        self.name, self.X, self.y = name, X, np.asarray(y)
        self.X_l1 = X if X_l1 is None else X_l1
        self.classes = np.unique(self.y)


def load_dataset(spec):
    """The :class:`Dataset` named by ``spec``: ``a9a`` (shipped), ``breast_cancer`` or
    ``digits`` (scikit-learn), a LIBSVM file, or a set of the data home. Raises ValueError
    with a message for the user when it cannot be read or is not a classification task."""
    if spec == "a9a":
        data = Dataset("a9a", *load_a9a())
    elif spec == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        data = Dataset(spec, X, y, StandardScaler().fit_transform(X))
    elif spec == "digits":
        X, y = load_digits(return_X_y=True)
        data = Dataset(spec, X / 16.0, y)
    else:
        try:
            X, y = load_libsvm(spec)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read {spec!r}: {exc}") from None
        data = Dataset(Path(spec).name, X, y)
    kind = type_of_target(data.y)
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"{spec!r}: the labels are {kind}, not classes")
    counts = np.unique(data.y, return_counts=True)[1]
    if counts.size < 2 or counts.min() < 2:
        raise ValueError(f"{spec!r}: every class needs at least 2 rows for a train/test "
                         f"split (class sizes {counts.tolist()})")
    return data


def tables(data, repeat, C=1.0, budget=np.inf, announce=None):
    """The tables of one data set: the l1 table for two classes, then the probabilities."""
    out = []
    if data.classes.size == 2:
        out.append(compare_l1_logistic(repeat, C, data, budget, announce))
    out.append(compare_multiclass(repeat, data, budget, announce))
    return out


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


@contextlib.contextmanager
def _progress():
    """``status(text)``: a transient spinner line on a terminal's stderr naming the model
    being timed (rich, when installed), nothing elsewhere (logs, pipes, tests)."""
    try:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    except ImportError:
        Console = None
    if Console is None or not sys.stderr.isatty():
        yield lambda text: None
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("starting", total=None)
        yield lambda text: progress.update(task, description=text)


def _positive_float(text):
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def main(argv=None):
    """The ``sparsekit-compare`` console script."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="*", default=["a9a", "digits"],
                        help="LIBSVM files or data set names (default: a9a digits)")
    parser.add_argument("--repeat", type=_positive_int, default=3,
                        help="fits per model (median)")
    parser.add_argument("--C", type=_positive_float, default=1.0,
                        help="inverse l1 strength of the l1 table")
    parser.add_argument("--budget", type=_positive_float, default=10.0,
                        help="seconds: a slower warm-up fit is timed alone")
    parser.add_argument("--json", action="store_true", help="print JSON, not tables")
    args = parser.parse_args(argv)
    datasets = []
    for spec in args.data:
        try:
            datasets.append(load_dataset(spec))
        except ValueError as exc:
            parser.error(str(exc))
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")  # numba, in skglm
    report = []
    for data in datasets:
        # the spinner runs while a data set is measured and is gone before its tables print
        with threadpool_limits(limits=1), _progress() as status:   # BLAS on one thread too
            results = tables(data, args.repeat, args.C, args.budget,
                             lambda name, data=data: status(f"{data.name}: {name}"))
        for title, header, rows in results:
            if args.json:
                report.append({"data": data.name, "title": title,
                               "rows": [dict(zip(header, map(str, r))) for r in rows]})
            else:
                print(format_table(title, header, rows), end="\n\n", flush=True)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
