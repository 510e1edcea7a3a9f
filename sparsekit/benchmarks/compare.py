"""Side-by-side comparison of sparsekit's estimators with their usual peers, on your data.

``sparsekit-compare [DATA ...]`` prints one table per task for each data set:

- binary labels: l1-logistic regression, objective of LIBLINEAR ``-s 6``:
  ``||w||_1 + C sum log(1+exp(-y w.x))`` (no intercept, as ``-B -1``): L1LogisticOBA vs
  LIBLINEAR, skglm, celer and scikit-learn's ``saga``; time, objective, suboptimality,
  zeros. sparsekit, LIBLINEAR, skglm and celer run at tol 1e-8, each in its own measure,
  which leaves them within ~1e-12 of the best objective (saga at 1e-6 stops ~1e-7 away;
  its epochs are capped to about three ``--budget``s of time, and the objective column
  shows how far that left it; it is not run when one epoch takes longer).
  LIBLINEAR's own copy of the data (``problem``) is built once, outside the timing, as the
  other solvers take the arrays as they are.
- more than two classes: one-vs-rest l1-logistic regression, LIBLINEAR ``-s 6``'s
  objective for each class against the others (no intercept), summed over the classes:
  L1LogisticOBA (its default ``multiclass="ovr"``) vs LIBLINEAR (its copy of the data
  built once and relabelled for each class), skglm and celer fit class by class, at tol
  1e-8 in its own measure (saga is in the multinomial table); time, objective,
  suboptimality, zeros. Each fit is capped at about
  three ``--budget``s (OBA by a callback, after which each class left gets one iteration;
  the peers between classes, the classes left at zero weights), and a capped row says how
  many classes it solved.
- more than two classes: multinomial l1-logistic regression, scikit-learn's objective
  ``||W||_1 + C sum NLL_softmax(W x + b)`` (intercepts free): L1LogisticOBA
  (``multiclass="multinomial"``, tol 1e-8) vs scikit-learn's ``saga`` (tol 1e-6), its only
  solver (LIBLINEAR, skglm and celer are one-vs-rest only); both fits are capped at about
  three ``--budget``s of time (saga by its epochs, OBA by a callback that stops it), and
  the objective column shows how far that left them. In both tables a solver that ended
  more than 1e-6 above the best objective has that said beside its time ratio: its time
  is where it stopped, not its time to the answer.
- every data set: class probabilities on a stratified 70/30 split (the rows of a class seen
  once go to training): SparsemaxClassifier (and ExtremeSoftmaxSGD for more than two
  classes) vs multinomial LogisticRegression, SGDClassifier(log_loss) and LIBLINEAR
  ``-s 0 -B 1`` (every model with an intercept, at its defaults), and fastText from 20
  classes on; time, test accuracy, mean support of ``predict_proba``. Each fit but
  LIBLINEAR's and fastText's is capped at about three ``--budget``s of time (sparsekit's by
  a callback that stops it, scikit-learn's by their iterations or epochs) and its row says
  "stopped by the budget" when the cap ended it. A scikit-learn model of which one
  iteration (epoch) takes longer than the cap is not run; its row says so. fastText reads one
  token per nonzero feature (repeated for whole counts) and runs its tutorial's recipe for
  small data (25 epochs, learning rate 1, halved while it diverges), on one thread from
  explicit U(-1/dim, 1/dim) word vectors: fastText 0.9.x initializes only a tenth of them
  per thread.
- multi-label files (comma-separated label sets, ``0,4 1:0.64 ...``, as the LIBSVM data
  page's multi-label sets): label sets on a 70/30 split: SparsemaxClassifier on the simplex
  (its shares of the labels) and on the box (a marginal per label), each cut at the training
  rows' best micro-F1 (its ``threshold_``), vs scikit-learn's
  ``OneVsRestClassifier(LogisticRegression())``, LIBLINEAR ``-s 0 -B 1`` trained label by
  label on one copy of the data, and fastText's one-vs-all loss from 20 labels on; time,
  test micro-F1, precision@1, labels predicted per row. LIBLINEAR's per-label fits stop
  between labels at the cap below (the first always fit), the labels left never predicted.

DATA is a LIBSVM/svmlight file (any path; ``.xz``, ``.gz`` and ``.bz2`` are read
compressed; ``--zero-based`` for files numbered from 0; the columns that store no entry
(most of them in hashed features) are left out for every model, as each model's weight on
such a column is 0 and would only cost it time and memory, and the titles say so),
an Extreme Classification Repository file (first line ``N D L``, as Bibtex_train.txt),
a Mulan multi-label ARFF file beside its label XML (``scene-train.arff`` and ``scene.xml``),
a CSV, TSV or ARFF file (``.csv``, ``.tsv``, ``.arff``, also compressed, or comma-, tab- or
;-separated lines under another name, as UCI's ``.data`` files: its label column is
the last one or ``--label``'s; for every model numeric columns are standardized, free text
becomes TF-IDF and other text columns are one-hot encoded, by encoders fit on the training
rows for the probability table and on every row for the l1 table),
``a9a`` (shipped inside sparsekit), a set of the data home (``a9a.t``, ``w8a``: see
:func:`sparsekit.datasets.get_data_home`) or one of scikit-learn's ``breast_cancer`` and
``digits`` (dense, standardized for the l1 table). Without DATA it runs on a9a and digits.
``--test`` names a test file for each DATA, of the same kind (LIBLINEAR's ``train`` and
``predict`` files: ``a9a --test a9a.t``; Mulan's ``-train`` and ``-test`` ARFF files; a CSV
file of the same columns, or of as many without a header): the probability and label-set
tables then train on every row of DATA and score on the test file's rows, the l1 tables
solve on DATA's rows, and a table file's encoders are fit on DATA's rows. The test file's
columns past DATA's count nothing (no model has a weight there), a label it holds that
DATA does not is said in a warning (those rows count as errors), and a test file without
any of DATA's labels is refused.

On a terminal (with ``rich``, installed by the ``compare`` extra) a spinner line on stderr
names the model being timed. Every fit is preceded by one untimed warm-up fit (and skglm,
which compiles with numba on first use, by an untimed fit on a few rows); a model whose
warm-up takes more than ``--budget`` seconds is timed by that fit alone. Times
are wall-clock medians with their min-max range, every solver on one thread. A peer that is
not installed or fails is listed with its reason, and the other rows are still measured.
``--plot DIR`` also runs each l1 solver along a ladder of tolerances and writes
``<data>-l1.png`` (relative suboptimality against time) and ``<data>-proba.png`` (test
accuracy against time); ``--json`` prints the tables with their raw measurements.

Usage::

    sparsekit-compare                       # a9a and digits
    sparsekit-compare my_data.svm.xz --C 0.5 --repeat 5
    sparsekit-compare w8a --json            # machine-readable tables
    sparsekit-compare a9a --test a9a.t      # the published split: train, then test
    sparsekit-compare adult.csv --label income
    sparsekit-compare iris.arff             # Weka's ARFF, the class attribute last
    sparsekit-compare --plot figures/       # and PNG figures
"""
import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections import namedtuple
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from threadpoolctl import threadpool_limits

from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier
from sparsekit.benchmarks._csv import reads_as_table
from sparsekit.benchmarks._data import TEST_SHARE, load_dataset
from sparsekit.utils._sklearn import l1_penalty

_L1 = l1_penalty()

#: one table: its ``title``, column ``header``, formatted ``rows``, and the raw
#: ``measurements`` of its measured rows, ``{name: {"seconds": [...], metric: value}}``
Table = namedtuple("Table", "title header rows measurements")


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


def _measure(name, fit, repeat, describe, budget=np.inf, announce=None, metrics=2):
    """One table row: ``[name, times, *describe(model), ""]`` (``describe`` gives the
    ``metrics`` columns), or the reason it has none: ``fit`` None (not installed) or a
    string (why it is not run), or the error a peer raised. ``announce(name)`` is called
    before the model is timed (the progress display of ``main``)."""
    if fit is None or isinstance(fit, str):
        return [name, fit or "not installed", *[""] * (metrics + 1)]
    if announce is not None:
        announce(name)
    try:
        times, model = _median_fit(fit, repeat, budget)
        return [name, times, *describe(model), ""]
    except Exception as exc:   # a peer's API change must not hide the other rows
        reason = " ".join(str(exc).split())      # one line: messages may span several
        return [name, f"error: {type(exc).__name__}: {reason}"[:100], *[""] * (metrics + 1)]


def _measured(rows):
    return [r for r in rows if not isinstance(r[1], str)]


def _format_rows(rows, base_row, formats):
    """Format measured rows in place: column 1 times -> "median ms (min-max)", the last
    column the ratio of medians to ``base_row``'s, and ``formats[i](value)`` for the
    others."""
    base = statistics.median(base_row[1]) if not isinstance(base_row[1], str) else None
    for r in _measured(rows):
        median = statistics.median(r[1])
        r[-1] = f"{median / base:.2f}x" if base else "n/a"
        r[1] = (f"{median * 1e3:.1f} ms ({min(r[1]) * 1e3:.1f}-{max(r[1]) * 1e3:.1f})"
                if len(r[1]) > 1 else f"{median * 1e3:.1f} ms (one fit)")
        for i, fmt in formats.items():
            r[i] = fmt(r[i])


def _l1_objective(w, X, y, C):
    margins = y * (X @ w)
    return np.abs(w).sum() + C * np.logaddexp(0.0, -margins).sum()


#: each l1 solver's tolerance in the table (in its own measure), and the ladder of ``--plot``
L1_TOL = {"scikit-learn saga": 1e-6}
L1_DEFAULT_TOL = 1e-8
L1_LADDER = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


#: an iterative fit is capped so that it takes about this many times ``--budget`` (by its
#: iterations or epochs, or by a callback that stops it): saga's tol 1e-6 took 539 s
#: (20,000 epochs) on w8a
FIT_BUDGETS = 3
#: the fits that size a cap run until the last two differ by this share of the capped fit's
#: time: the difference of fits with one and two iterations was mostly timing noise (saga
#: on UCI Adult as a CSV file: sized at 3226 epochs, 49 s for a cap of 30 s; lbfgs on
#: 210,000 rows of 50 classes: 1.02 and 1.10 s, sized at 286 iterations, 125 s)
SIZING_SHARE = 0.01
#: ... or until one takes this share of it
SIZING_MOST = 0.1


#: a one-iteration fit on many rows is first estimated from fits on every 64th, 32nd, ...
#: row (at least this many of them), so that no fit whose one iteration exceeds its cap is
#: run to learn it: saga's first epoch took 390 s on a 300,000 x 50,000 file of 50 classes
PROBE_ROWS = 1000


def _every(A, step):
    """Every ``step``-th row of ``A`` (``A`` itself for 1)."""
    return A if step == 1 else A[::step]


def _one_iteration_estimate(fit_with, n_rows, limit):
    """(seconds, rows): the time of ``fit_with(1, 1)``, a one-iteration fit on all
    ``n_rows`` rows, estimated from fits ``fit_with(1, step)`` on every ``step``-th row,
    when it is more than ``limit``; None when it is not. The step is halved from 64 (no
    fewer than PROBE_ROWS rows) until two fits put the estimate (the second fit's time, plus
    the difference of the two per row for the rows left: a fixed part, as a model's setup,
    is not scaled) above ``limit``, or below an eighth of it or twice the last fit's time. A
    cost that grows faster than the rows (saga's lazy updates of rare columns) is
    underestimated, so the rows double while the estimate is within reach of the limit."""
    step = 64
    while step > 1 and n_rows / step < PROBE_ROWS:
        step //= 2
    previous = None
    while step > 1:
        rows = -(-n_rows // step)
        seconds = _seconds(lambda: fit_with(1, step))
        if seconds > limit:
            return seconds, rows
        if previous is not None:
            per_row = max((seconds - previous[1]) / (rows - previous[0]), 0.0)
            estimate = seconds + per_row * (n_rows - rows)
            if estimate > limit:
                return estimate, rows
            if 8 * estimate < limit or estimate < 2 * seconds:
                return None
        previous, step = (rows, seconds), step // 2
    return None


def _max_iter_within(fit_with, n_rows, budget, most, unit="iteration"):
    """The iterations (epochs) of ``fit_with(max_iter, 1)`` (a fit on all ``n_rows`` rows;
    ``fit_with(max_iter, step)`` fits every ``step``-th row) that fit in FIT_BUDGETS x
    ``budget`` seconds, at most ``most`` (also when a sizing fit fails: the measured fit
    then reports the error in its row), or, when a single ``unit`` takes longer than that,
    the reason the fit is not run (a string for its row; on many rows estimated first by
    :func:`_one_iteration_estimate`). A fit's time is taken as a fixed part plus one per
    iteration: a one-vs-rest fit of many labels spends most of a one-iteration fit on each
    label's setup. Both are measured by fits with 1, 2, 4, ... iterations, doubled until the
    last two differ by SIZING_SHARE of the capped fit's time (or one takes SIZING_MOST of
    it), from the last two. The part per iteration is taken as at least a tenth of the
    one-iteration fit, so that timing noise cannot size a runaway fit. When the
    one-iteration fit takes more than a third of the cap, no longer fit sizes it: its time
    is all taken as per iteration."""
    if not np.isfinite(budget):
        return most
    limit = FIT_BUDGETS * budget
    too_slow = (f"not run: one {unit} {{}}, more than the cap of ~{limit:g} s "
                f"({FIT_BUDGETS} x --budget)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            estimate = _one_iteration_estimate(fit_with, n_rows, limit)
            if estimate is not None:
                return too_slow.format(f"would take about {_duration(estimate[0], 0)} s "
                                       f"(timed on {estimate[1]:,} of the {n_rows:,} rows)")
            one = _seconds(lambda: fit_with(1, 1))
            if limit / max(one, 1e-9) >= most:
                return most
            if one > limit:
                return too_slow.format(f"took {_duration(one, 1)} s")
            if 3 * one > limit:
                return int(limit // one)
            low, high = (1, one), (2, _seconds(lambda: fit_with(2, 1)))
            while (high[1] - low[1] < SIZING_SHARE * limit and high[1] < SIZING_MOST * limit
                   and 2 * high[0] < most):
                low, high = high, (2 * high[0], _seconds(lambda: fit_with(2 * high[0], 1)))
        except Exception:
            return most
    per = max((high[1] - low[1]) / (high[0] - low[0]), one / 10, 1e-9)
    return int(np.clip((limit - (low[1] - low[0] * per)) / per, 1, most))


def _duration(seconds, decimals):
    """``seconds`` with ``decimals`` decimals, or two significant digits below 1 (a cap of
    a small ``--budget`` is milliseconds)."""
    return f"{seconds:.{decimals}f}" if seconds >= 1 else f"{seconds:.2g}"


def _seconds(call):
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def _saga_max_iter(X, y, C, budget, fit_intercept=False):
    """Epochs of saga (at most 20,000) that fit in FIT_BUDGETS x ``budget`` seconds, or why
    it is not run (:func:`_max_iter_within`)."""
    return _max_iter_within(lambda epochs, step: LogisticRegression(
        C=C, solver="saga", fit_intercept=fit_intercept, max_iter=epochs, **_L1).fit(
            _every(X, step), _every(y, step)), X.shape[0], budget, 20000, "epoch")


def _unless_too_slow(iterations, fit):
    """``fit``, or, when ``iterations`` (of :func:`_max_iter_within`) is a string, that
    string: the reason ``fit`` is not run."""
    return iterations if isinstance(iterations, str) else fit


def _small_slice(X, y, per_class=25):
    """(X, y) on the first ``per_class`` rows of each class: the same layout and types, for
    a compiling first fit."""
    rows = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in np.unique(y)])
    return X[rows], y[rows]


def _liblinear_binary(liblinearutil, X, labels):
    """``train(labels, options)``: LIBLINEAR's binary model on ``X`` for labels in {-1, +1}
    (``labels`` the first ones), its weights (the bias weight last under ``-B 1``) signed
    for label +1. The problem, LIBLINEAR's copy of ``X``, is built here once, untimed, and
    relabelled by each call."""
    problem = liblinearutil.problem(np.asarray(labels, dtype=float), X)
    problem_labels = np.ctypeslib.as_array(problem.y, (problem.l,))

    def train(labels, options):
        problem_labels[:] = labels
        model = liblinearutil.train(problem, liblinearutil.parameter(options))
        w = np.ctypeslib.as_array(model.w, (model.nr_feature + (model.bias >= 0),))
        return (1.0 if model.get_labels()[0] == 1 else -1.0) * w     # a copy of model.w
    return train


def _binary_l1_peers(X, y, C):
    """(name, fit) for each peer l1-logistic solver of the binary problems on ``X``, no
    intercept: ``fit(labels, tol)`` fits labels in {-1, +1} at that tolerance (in the
    peer's own measure) and returns the coefficients; None when the peer is not installed.
    Work a fit need not repeat is done here, untimed: LIBLINEAR's copy of the data
    (``problem``, relabelled by each fit), and skglm's numba compilation, on a small slice
    of ``X`` and ``y`` (so that no timed fit, not even a warm-up longer than the budget,
    pays for it; a failure here is left to the timed fits, whose row then says why)."""
    try:
        from liblinear import liblinearutil
    except ImportError:
        yield "LIBLINEAR -s 6", None
    else:
        train = _liblinear_binary(liblinearutil, X, y)
        yield "LIBLINEAR -s 6", lambda labels, tol: train(
            labels, f"-s 6 -c {C} -B -1 -e {tol:g} -q")
    try:
        from skglm import SparseLogisticRegression
    except ImportError:
        yield "skglm", None
    else:
        def skglm_fit(labels, tol, X=X):
            return SparseLogisticRegression(alpha=1.0 / (C * X.shape[0]), fit_intercept=False,
                                            tol=tol, max_iter=1000).fit(X, labels).coef_.ravel()
        with contextlib.suppress(Exception):
            X_small, y_small = _small_slice(X, y)
            skglm_fit(y_small, 1e-2, X_small)
        yield "skglm", skglm_fit
    try:
        from celer import LogisticRegression as CelerLR
    except ImportError:
        yield "celer", None
    else:
        yield "celer", lambda labels, tol: CelerLR(C=C, fit_intercept=False, tol=tol).fit(
            X, labels).coef_.ravel()


def _l1_solvers(X, y, C, budget=np.inf):
    """(name, fit_at) for every installed l1-logistic solver, same objective:
    ``fit_at(tol)`` fits at that tolerance and returns the coefficients; None when the
    peer is not installed. saga's epochs are capped by ``budget`` (:data:`FIT_BUDGETS`)."""
    yield "sparsekit L1LogisticOBA", lambda tol: L1LogisticOBA(
        C=C, tol=tol, fit_intercept=False).fit(X, y).coef_.ravel()
    for name, fit in _binary_l1_peers(X, y, C):
        yield name, None if fit is None else (lambda tol, fit=fit: fit(y, tol))
    saga_epochs = _saga_max_iter(X, y, C, budget)
    yield "scikit-learn saga", _unless_too_slow(saga_epochs, lambda tol: LogisticRegression(
        C=C, solver="saga", fit_intercept=False, tol=tol, max_iter=saga_epochs, **_L1
    ).fit(X, y).coef_.ravel())


def _l1_problem(data):
    """The l1 table's matrix and its labels in {-1, +1}."""
    return data.X_l1, np.where(data.y == data.classes[1], 1, -1)


def compare_l1_logistic(repeat, C=1.0, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the l1-logistic comparison on ``data`` (a :class:`Dataset`
    with two classes; default: breast_cancer)."""
    data = data or load_dataset("breast_cancer")
    X, y = _l1_problem(data)
    rows = [_measure(name, (lambda fit_at=fit_at, name=name: fit_at(
                         L1_TOL.get(name, L1_DEFAULT_TOL))) if callable(fit_at) else fit_at,
                     repeat,
                     lambda w: (_l1_objective(w, X, y, C), int(np.sum(w == 0))), budget,
                     announce)
            for name, fit_at in _l1_solvers(X, y, C, budget)]
    return _objective_table(
        f"l1-logistic (LIBLINEAR -s 6 objective), {data.described}, C={C:g}, no "
        f"intercept; tol 1e-8 (saga 1e-6), each in its own measure; LIBLINEAR's copy of the "
        f"data built untimed; median (min-max) of {repeat} fits", "F(w)", "w", rows)


#: a solver whose objective ends more than this (relative) above the best one did not
#: solve the same problem to the table's precision: its time ratio says where it stopped
UNSOLVED_GAP = 1e-6


def _objective_table(title, objective, variable, rows):
    """The :class:`Table` of an objective comparison: the raw measurements, then the rows
    formatted with each objective's relative gap to the best and the time ratio to the
    first row (sparsekit's), which for a solver that stopped more than UNSOLVED_GAP above
    the best says so (a capped fit's time is not its time to the answer)."""
    measured = _measured(rows)
    measurements = {r[0]: {"seconds": r[1], "objective": r[2], "zeros": r[3]}
                    for r in measured}
    best = min((r[2] for r in measured), default=np.nan)
    gaps = [(r[2] - best) / best for r in measured]
    _format_rows(rows, rows[0], {2: lambda f: f"{f:.8f} (rel. gap {(f - best) / best:.1e})"})
    for r, gap in zip(measured, gaps):
        if gap > UNSOLVED_GAP:
            r[4] += f" (stopped {gap:.1e} above)"
    return Table(title, ["solver", "fit time", f"objective {objective}", f"zeros in {variable}",
                         "time / sparsekit"], rows, measurements)


def l1_traces(data, C=1.0, budget=np.inf, announce=None):
    """``{solver: [(seconds, objective), ...]}``: one timed fit per tolerance of
    :data:`L1_LADDER` (saga down to 1e-6), each solver in its own measure, for the
    time-vs-suboptimality figure of ``--plot``. A solver's ladder ends after a fit longer
    than ``budget`` seconds."""
    X, y = _l1_problem(data)
    traces = {}
    for name, fit_at in _l1_solvers(X, y, C, budget):
        if not callable(fit_at):       # not installed, or not run (its table row says why)
            continue
        if announce is not None:
            announce(f"{name} (tolerance ladder)")
        points = []
        try:
            fit_at(L1_LADDER[0])                      # warm-up: JIT compilers, caches
            for tol in L1_LADDER:
                if tol < L1_TOL.get(name, L1_DEFAULT_TOL):
                    break
                t0 = time.perf_counter()
                w = fit_at(tol)
                seconds = time.perf_counter() - t0
                points.append((seconds, _l1_objective(w, X, y, C)))
                if seconds > budget:
                    break
        except Exception:   # a failing peer has no curve; its table row says why
            continue
        traces[name] = points
    return traces


#: the objectives below compute the scores of at most this many (row, class) pairs at a
#: time, so that a file of many rows and classes needs no n_samples x n_classes matrix
SCORE_BLOCK = 1 << 22


def _score_blocks(X, coef, intercept=0.0):
    """(rows, scores): the scores ``X[rows] @ coef.T + intercept`` of consecutive slices of
    rows, SCORE_BLOCK entries or fewer each."""
    step = max(1, SCORE_BLOCK // coef.shape[0])
    for start in range(0, X.shape[0], step):
        rows = slice(start, start + step)
        yield rows, np.asarray(X[rows] @ coef.T) + intercept


def _multinomial_objective(coef, intercept, X, y, C):
    """||W||_1 + C sum_i NLL_softmax(W x_i + b; y_i), y as class indices."""
    loss = sum((logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), y[rows]]).sum()
               for rows, Z in _score_blocks(X, coef, intercept))
    return float(np.abs(coef).sum() + C * loss)


class _TimeLimit:
    """A scikit-learn fit callback asking the fit to stop once ``seconds`` have passed since
    it began (checked at the end of each iteration); ``stopped`` tells whether it stopped
    the last fit."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.stopped = False

    def setup(self, estimator, context):
        self._start = time.perf_counter()
        self.stopped = False

    def teardown(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context, *, X=None, y=None):
        pass

    def on_fit_task_end(self, estimator, context, *, X=None, y=None):
        self.stopped = self.stopped or time.perf_counter() - self._start > self.seconds
        return self.stopped


def _multinomial_solvers(X, y, C, budget=np.inf):
    """(name, fit) for the multinomial l1 solvers, same objective (intercepts free); each
    fit is capped at about FIT_BUDGETS x ``budget`` seconds (OBA by a callback that stops
    it, saga by its epochs)."""
    def oba():
        model = L1LogisticOBA(C=C, tol=L1_DEFAULT_TOL, multiclass="multinomial")
        if np.isfinite(budget):
            model.set_callbacks(_TimeLimit(FIT_BUDGETS * budget))
        return model.fit(X, y)
    yield "sparsekit L1LogisticOBA", oba
    epochs = _saga_max_iter(X, y, C, budget, fit_intercept=True)
    yield "scikit-learn saga", _unless_too_slow(epochs, lambda: LogisticRegression(
        C=C, solver="saga", tol=L1_TOL["scikit-learn saga"], max_iter=epochs, **_L1).fit(X, y))


def compare_l1_multinomial(repeat, C=1.0, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the multinomial l1-logistic comparison on ``data`` (a
    :class:`Dataset` with more than two classes; default: digits)."""
    data = data or load_dataset("digits")
    X, y = data.X_l1, np.searchsorted(data.classes, data.y)
    rows = [_measure(name, fit, repeat, lambda model: (
                _multinomial_objective(model.coef_, model.intercept_, X, y, C),
                int(np.sum(model.coef_ == 0))), budget, announce)
            for name, fit in _multinomial_solvers(X, y, C, budget)]
    return _objective_table(
        f"multinomial l1-logistic, {data.described}, {data.classes.size} classes, "
        f"C={C:g}, intercepts free (LIBLINEAR, skglm and celer are one-vs-rest only); tol 1e-8 "
        f"(saga 1e-6), each in its own measure, each fit capped at ~{FIT_BUDGETS} x "
        f"{budget:g} s; median (min-max) of {repeat} fits", "F(W, b)", "W", rows)


def _ovr_objective(coef, X, codes, C):
    """sum_k (||w_k||_1 + C sum_i log(1 + exp(-y_ik w_k.x_i))), y_ik = +1 for the rows of
    class k and -1 for the others: LIBLINEAR ``-s 6``'s objective of each one-vs-rest model,
    summed over the classes."""
    classes = np.arange(coef.shape[0])
    loss = sum(np.logaddexp(0.0, np.where(codes[rows, None] == classes, -Z, Z)).sum()
               for rows, Z in _score_blocks(X, coef))
    return float(np.abs(coef).sum() + C * loss)


def _class_by_class(fit_class, n_classes, limit, done):
    """The (n_classes, n_features) coefficients of ``fit_class(k)`` (class or label k's
    model against the others) for k = 0, 1, ... in turn until ``limit`` seconds have passed
    (class 0 is always fit): the classes left keep zero weights; ``done[:]`` becomes [how
    many classes were fit]."""
    start = time.perf_counter()
    rows = []
    for k in range(n_classes):
        if k and time.perf_counter() - start > limit:
            break
        rows.append(fit_class(k))
    done[:] = [len(rows)]
    coef = np.zeros((n_classes, rows[0].size))
    coef[:len(rows)] = rows
    return coef


def _ovr_solvers(X, codes, n_classes, C, budget=np.inf):
    """(name, fit, stopped) for every installed l1-logistic solver, one binary model per
    class against the others, no intercept: ``fit()`` returns the (n_classes, n_features)
    coefficients, None when the peer is not installed, or why it is not run; ``stopped()``
    says how the budget cap ended the last fit and how many classes it solved ("" when it
    did not end it). L1LogisticOBA fits its classes itself, capped by a callback (after
    which each class left gets one iteration); the peers are fit class by class (on one copy
    of the data: LIBLINEAR's ``problem`` is relabelled), stopping between classes after
    FIT_BUDGETS x ``budget`` seconds (the classes left keep zero weights). scikit-learn's
    saga, by far the slowest class by class, is in the multinomial table only."""
    limit = FIT_BUDGETS * budget
    signs = [np.where(codes == k, 1, -1) for k in range(n_classes)]

    def capped(solved):
        return f"stopped by the budget: {solved} of {n_classes} classes solved"
    time_limit, oba_solved = _TimeLimit(limit), []

    def oba():
        model = L1LogisticOBA(C=C, tol=L1_DEFAULT_TOL, fit_intercept=False)
        if np.isfinite(budget):
            model.set_callbacks(time_limit)
        model.fit(X, codes)
        oba_solved[:] = [int(np.sum(model.optimality_ <= model.tol))]
        return model.coef_
    yield ("sparsekit L1LogisticOBA", oba,
           lambda: capped(oba_solved[0]) if time_limit.stopped and oba_solved else "")

    def by_class(fit_class):
        done = []
        return (lambda: _class_by_class(fit_class, n_classes, limit, done),
                lambda: capped(done[0]) if done and done[0] < n_classes else "")
    for name, fit in _binary_l1_peers(X, signs[0], C):
        if fit is None:
            yield name, None, str
        else:
            yield name, *by_class(lambda k, fit=fit: fit(signs[k], L1_DEFAULT_TOL))


def compare_l1_ovr(repeat, C=1.0, data=None, budget=np.inf, announce=None):
    """The one-vs-rest l1-logistic comparison on ``data`` (a :class:`Dataset` with more
    than two classes; default: digits), as a :class:`Table`: LIBLINEAR ``-s 6``'s problem
    for each class against the others, the objectives summed."""
    data = data or load_dataset("digits")
    X, codes, k = data.X_l1, np.searchsorted(data.classes, data.y), data.classes.size
    rows = []
    for name, fit, stopped in _ovr_solvers(X, codes, k, C, budget):
        row = _measure(name, fit, repeat, lambda coef: (_ovr_objective(coef, X, codes, C),
                                                        int(np.sum(coef == 0))),
                       budget, announce)
        if stopped():
            row[0] += f" [{stopped()}]"
        rows.append(row)
    return _objective_table(
        f"l1-logistic one-vs-rest (LIBLINEAR -s 6 objective for each class against the "
        f"others, summed), {data.described}, {k} classes, C={C:g}, no intercept; tol 1e-8, "
        f"each in its own measure; L1LogisticOBA fits its classes itself, the peers class by "
        f"class on one copy of the data (LIBLINEAR's built untimed); each fit capped at "
        f"~{FIT_BUDGETS} x {budget:g} s (OBA by a callback, the peers between classes); "
        f"median (min-max) of {repeat} fits", "F(W)", "W", rows)


def _limited(make, budget):
    """(make, stopped) for a sparsekit model: ``make()`` returns the model of ``make`` with
    a callback that stops its fit after about FIT_BUDGETS x ``budget`` seconds, and
    ``stopped(model)`` tells whether it stopped the last fit."""
    limit = _TimeLimit(FIT_BUDGETS * budget)
    return (lambda: make().set_callbacks(limit)), lambda fitted: limit.stopped


def _multiclass_models(X, y, budget=np.inf):
    """(name, make, stopped) of the probability models on training data ``X, y``: ``make()``
    returns a model to fit, capped at about FIT_BUDGETS x ``budget`` seconds (sparsekit's by
    a callback that stops them, scikit-learn's by their iterations or epochs, from the time
    of one), and ``stopped(model)`` tells whether that cap ended its last fit."""
    yield "sparsekit SparsemaxClassifier", *_limited(
        lambda: SparsemaxClassifier(max_iter=500, random_state=0), budget)
    if np.unique(y).size > 2:  # a softmax for many classes; two are LogisticRegression's
        yield "sparsekit ExtremeSoftmaxSGD", *_limited(
            lambda: ExtremeSoftmaxSGD(random_state=0), budget)
    iters = _max_iter_within(lambda k, step: LogisticRegression(C=1.0, max_iter=k).fit(
        _every(X, step), _every(y, step)), X.shape[0], budget, 2000)
    yield ("scikit-learn LogisticRegression (lbfgs)",
           _unless_too_slow(iters, lambda: LogisticRegression(C=1.0, max_iter=iters)),
           lambda fitted: iters < 2000 and fitted.n_iter_.max() >= iters)
    epochs = _max_iter_within(lambda k, step: SGDClassifier(
        loss="log_loss", alpha=1e-4, max_iter=k, tol=None, random_state=0).fit(
            _every(X, step), _every(y, step)), X.shape[0], budget, 20, "epoch")
    yield ("scikit-learn SGDClassifier (log_loss)",
           _unless_too_slow(epochs, lambda: SGDClassifier(
               loss="log_loss", alpha=1e-4, max_iter=epochs, tol=None, random_state=0)),
           lambda fitted: epochs < 20)


#: fastText joins the probability table from this many classes on: a text classifier for
#: many labels, it sees the features as tokens and is out of its ground on a few dense ones
FASTTEXT_MIN_CLASSES = 20


def _tokens(X):
    """One line of tokens per row of CSR ``X`` for fastText: feature j is the token
    ``f<j>``, repeated by its value when every value is a whole count (bag of words), once
    otherwise (values dropped)."""
    counts = X.data.size > 0 and np.all(X.data == np.round(X.data)) and X.data.min() >= 1
    lines = []
    for i in range(X.shape[0]):
        row = slice(X.indptr[i], X.indptr[i + 1])
        repeats = X.data[row].astype(np.int64) if counts else np.ones(row.stop - row.start,
                                                                      np.int64)
        lines.append(" ".join(" ".join([f"f{j}"] * r) for j, r in zip(X.indices[row],
                                                                       repeats)))
    return lines


#: fastText's recipe for small data sets (its text-classification tutorial): 25 epochs at
#: learning rate 1, halved while training diverges ("Encountered NaN", as its maintainers
#: advise); one thread and a fixed seed make each fit deterministic
FASTTEXT_EPOCHS = 25
FASTTEXT_RATES = (1.0, 0.5, 0.25, 0.1)
FASTTEXT_DIM = 100


def _fasttext_initial_vectors(path, words):
    """Write fastText's own initialization, U(-1/dim, 1/dim) vectors of ``words`` and of its
    end-of-line token, as a
    ``pretrainedVectors`` file. With fewer than 10 threads fastText 0.9.x leaves most of its
    input matrix uninitialized (its DenseMatrix::uniform fills one tenth of the rows per
    thread; fastText issue #1061): on one thread 90% of the word vectors are whatever the
    allocator returned, and fits diverge ("Encountered NaN") or do not learn, depending on
    what ran before in the process."""
    words = ["</s>", *words]
    vectors = np.random.default_rng(0).uniform(-1.0 / FASTTEXT_DIM, 1.0 / FASTTEXT_DIM,
                                               (len(words), FASTTEXT_DIM))
    with open(path, "w") as out:
        out.write(f"{len(words)} {FASTTEXT_DIM}\n")
        for word, vector in zip(words, vectors):
            out.write(word + " " + " ".join(f"{v:.6g}" for v in vector) + "\n")


def _feature_words(X):
    """The tokens of :func:`_tokens` that occur in CSR ``X``."""
    return [f"f{j}" for j in np.unique(X.indices)]


def _fasttext_row(name, label_lines, X_train, describe, repeat, budget=np.inf,
                  announce=None, metrics=2, **options):
    """The table row of fastText trained on the rows of CSR ``X_train`` as tokens, each
    row's line starting with ``label_lines[i]`` (its ``__label__`` words); ``options`` go
    to ``fasttext.train_supervised``."""
    try:
        import fasttext
    except ImportError:
        return _measure(name, None, repeat, None, metrics=metrics)
    with tempfile.TemporaryDirectory() as workdir:    # its input files, written untimed
        path, init = Path(workdir) / "train.txt", Path(workdir) / "init.vec"
        path.write_text("".join(f"{labels} {line}\n" for labels, line in
                                zip(label_lines, _tokens(X_train))))
        _fasttext_initial_vectors(init, _feature_words(X_train))

        rate = []        # the first rate that trains, found by the (untimed) warm-up fit

        def fit():
            for lr in rate or FASTTEXT_RATES:
                try:
                    model = fasttext.train_supervised(
                        input=str(path), epoch=FASTTEXT_EPOCHS, lr=lr, dim=FASTTEXT_DIM,
                        pretrainedVectors=str(init), thread=1, seed=0, verbose=0,
                        **options)
                except RuntimeError:      # diverged ("Encountered NaN"): a smaller rate
                    if rate or lr == FASTTEXT_RATES[-1]:
                        raise
                    continue
                rate[:] = [lr]
                return model
        row = _measure(name, fit, repeat, describe, budget, announce, metrics)
        row[0] = f"{name[:-1]}, lr {rate[0]:g})" if rate else name
        return row


def _fasttext_label(word):
    """The column index ``j`` of fastText's label word ``__label__<j>``."""
    return int(word[len("__label__"):])


def _fasttext_multiclass(X_train, y_train, X_test, y_test, repeat, budget=np.inf,
                         announce=None):
    classes = np.unique(y_train)
    codes = np.searchsorted(classes, y_train)
    test_lines = _tokens(sp.csr_matrix(X_test))

    def describe(model):
        labels, proba = model.predict(test_lines, k=-1, threshold=0.0)
        predicted = classes[[_fasttext_label(lab[0]) for lab in labels]]
        return (float(np.mean(predicted == y_test)),
                float(np.mean([np.count_nonzero(p) for p in proba])))

    return _fasttext_row(f"fastText supervised (softmax, {FASTTEXT_EPOCHS} epochs)",
                         [f"__label__{c}" for c in codes], sp.csr_matrix(X_train),
                         describe, repeat, budget, announce)


def _split(data):
    """``(X_train, X_test, y_train, y_test)``: the training rows and the test file's
    (``data.test``), or a 70/30 split of the rows: stratified for classes (the rows of
    classes seen once in training), at random for label sets. A table file's columns are
    encoded again with the encoders fit on the training rows."""
    if data.test is not None:
        return data.X, data.test.X, data.y, data.test.y
    if data.multilabel:
        train, test = train_test_split(np.arange(data.X.shape[0]), test_size=TEST_SHARE,
                                       random_state=0)
    else:
        labels, inverse, counts = np.unique(data.y, return_inverse=True, return_counts=True)
        rows = np.flatnonzero(counts[inverse] >= 2)
        train, test = train_test_split(rows, test_size=TEST_SHARE, random_state=0,
                                       stratify=data.y[rows])
        train = np.concatenate([train, np.flatnonzero(counts[inverse] < 2)])
    X_train, X_test = (data.X[train], data.X[test]) if data.encode is None else \
        data.encode(train, test)
    return X_train, X_test, data.y[train], data.y[test]


def _held_out(data, X_test):
    """How the test rows of ``data`` were held out, for a table's title."""
    if data.test is None:
        return "70/30 split"
    return f"trained on every row, tested on {data.test.name}'s {X_test.shape[0]} rows"


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


def _measure_models(models, X_train, y_train, describe, repeat, budget=np.inf,
                    announce=None, metrics=2):
    """The rows of ``models`` ((name, make, stopped) triples) fit on ``X_train, y_train``;
    a row whose fits the budget cap ended says so."""
    rows = []
    for name, make, stopped in models:
        capped = []

        def described(model, stopped=stopped, capped=capped):
            capped.append(stopped(model))
            return describe(model)
        fit = (lambda make=make: make().fit(X_train, y_train)) if callable(make) else make
        row = _measure(name, fit, repeat, described, budget, announce, metrics)
        if any(capped):
            row[0] += " [stopped by the budget]"
        rows.append(row)
    return rows


def compare_multiclass(repeat, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the class-probability comparison on ``data`` (a
    :class:`Dataset`; default: digits)."""
    data = data or load_dataset("digits")
    X_train, X_test, y_train, y_test = _split(data)

    def describe(model):
        proba = model.predict_proba(X_test)
        return model.score(X_test, y_test), float(np.mean(np.sum(proba > 0, axis=1)))

    rows = _measure_models(_multiclass_models(X_train, y_train, budget), X_train, y_train,
                           describe, repeat, budget, announce)
    rows.append(_liblinear_multiclass(X_train, y_train, X_test, y_test, repeat, budget,
                                      announce))
    if data.classes.size >= FASTTEXT_MIN_CLASSES:
        rows.append(_fasttext_multiclass(X_train, y_train, X_test, y_test, repeat, budget,
                                         announce))
    measurements = {r[0]: {"seconds": r[1], "test_accuracy": r[2], "mean_support": r[3]}
                    for r in _measured(rows)}
    base = next(r for r in rows if r[0].startswith("scikit-learn LogisticRegression"))
    _format_rows(rows, base, {2: "{:.4f}".format, 3: "{:.2f}".format})
    split = _held_out(data, X_test) + ("" if data.encode is None else
                                       f"; encoders fit on the training rows: "
                                       f"{X_train.shape[1]} columns")
    return Table(f"class probabilities, {data.described}, {data.classes.size} "
                 f"classes ({split}), every model with an intercept; median (min-max) of "
                 f"{repeat} fits; fits capped at ~{FIT_BUDGETS} x {budget:g} s but LIBLINEAR's "
                 f"and fastText's", ["model", "fit time", "test accuracy",
                                    "mean classes with p>0", "time / LogisticRegression"],
                 rows, measurements)


def _multilabel_models(X, Y, budget=np.inf):
    """(name, make, stopped) of the label-set models, as :func:`_multiclass_models`:
    SparsemaxClassifier on the simplex (a sparse distribution over the labels) and on the
    box (a marginal per label), each cut where the training rows' micro-F1 is best."""
    yield "sparsekit SparsemaxClassifier", *_limited(
        lambda: SparsemaxClassifier(max_iter=500, random_state=0), budget)
    yield "sparsekit SparsemaxClassifier(polytope='box')", *_limited(
        lambda: SparsemaxClassifier(polytope="box", max_iter=500, random_state=0),
        budget)
    iters = _max_iter_within(
        lambda k, step: OneVsRestClassifier(LogisticRegression(C=1.0, max_iter=k)).fit(
            _every(X, step), _every(Y, step)), X.shape[0], budget, 2000)

    def stopped(fitted):   # labels constant in training get no LogisticRegression
        spent = [e.n_iter_.max() for e in fitted.estimators_ if hasattr(e, "n_iter_")]
        return iters < 2000 and max(spent, default=0) >= iters
    yield ("scikit-learn OneVsRestClassifier(LogisticRegression)",
           _unless_too_slow(iters, lambda: OneVsRestClassifier(
               LogisticRegression(C=1.0, max_iter=iters))), stopped)


def _label_set_metrics(Y_true, scores, predicted):
    """micro-F1 of the 0/1 label sets ``predicted``, precision@1 of ``scores`` (whether
    each row's top-scored label is one of its labels) and the mean number of predicted
    labels per row."""
    Y_true = sp.csr_matrix(Y_true, dtype=np.int64)
    predicted = sp.csr_matrix(predicted, dtype=np.int64)
    top = np.asarray(scores).argmax(axis=1)
    hits = np.asarray(Y_true[np.arange(Y_true.shape[0]), top]).ravel()
    micro = f1_score(Y_true, predicted, average="micro", zero_division=0.0)
    return float(micro), float(hits.mean()), float(predicted.sum() / predicted.shape[0])


def _liblinear_multilabel(X_train, Y_train, X_test, Y_test, repeat, budget=np.inf,
                          announce=None):
    name = "LIBLINEAR -s 0 -B 1 (a model per label)"
    try:
        from liblinear import liblinearutil
    except ImportError:
        return _measure(name, None, repeat, None, metrics=3)
    X_train = sp.csr_matrix(X_train)
    Y_train = sp.csc_matrix(Y_train)
    n, n_labels, n_features = X_train.shape[0], Y_train.shape[1], X_train.shape[1]
    train = _liblinear_binary(liblinearutil, X_train, np.ones(n))
    done = []

    def fit_label(j):
        """Label j's weights, its bias last; a label constant in training gets a constant
        score."""
        rows = Y_train.indices[Y_train.indptr[j]:Y_train.indptr[j + 1]]
        if rows.size in (0, n):
            return np.r_[np.zeros(n_features), 1.0 if rows.size else -1.0]
        labels = np.full(n, -1.0)
        labels[rows] = 1.0
        return train(labels, "-s 0 -c 1 -B 1 -q")

    def fit():
        """(coef, intercept) of a model per label, in turn, stopping between labels after
        FIT_BUDGETS x ``budget`` seconds: the labels left get a constant negative score
        (never predicted)."""
        W = _class_by_class(fit_label, n_labels, FIT_BUDGETS * budget, done)
        W[done[0]:, -1] = -1.0
        return W[:, :-1], W[:, -1]

    def describe(model):
        coef, intercept = model
        scores = np.asarray(X_test @ coef.T) + intercept
        return _label_set_metrics(Y_test, scores, scores > 0)

    row = _measure(name, fit, repeat, describe, budget, announce, metrics=3)
    if done and done[0] < n_labels:
        row[0] += f" [stopped by the budget: {done[0]} of {n_labels} labels fit]"
    return row


def _fasttext_multilabel(X_train, Y_train, X_test, Y_test, repeat, budget=np.inf,
                         announce=None):
    Y_train = sp.csr_matrix(Y_train)
    test_lines = _tokens(sp.csr_matrix(X_test))

    def describe(model):
        labels, proba = model.predict(test_lines, k=-1, threshold=0.0)
        scores = np.zeros(Y_test.shape)
        for i, (words, p) in enumerate(zip(labels, proba)):
            scores[i, [_fasttext_label(w) for w in words]] = p
        return _label_set_metrics(Y_test, scores, scores > 0.5)

    lines = [" ".join(f"__label__{j}" for j in Y_train.indices[a:b])
             for a, b in zip(Y_train.indptr[:-1], Y_train.indptr[1:])]
    return _fasttext_row(f"fastText supervised (one-vs-all, {FASTTEXT_EPOCHS} epochs)",
                         lines, sp.csr_matrix(X_train), describe, repeat, budget, announce,
                         metrics=3, loss="ova")


def compare_multilabel(repeat, data, budget=np.inf, announce=None):
    """The label-set comparison on a multi-label ``data`` (a :class:`Dataset` whose ``y`` is
    an indicator matrix), as a :data:`Table`."""
    X_train, X_test, Y_train, Y_test = _split(data)

    cuts = {"simplex": [], "box": []}    # the fits' threshold_, said in the title

    def describe(model):
        if hasattr(model, "threshold_"):
            cuts[model.polytope].append(model.threshold_)
        return _label_set_metrics(Y_test, model.predict_proba(X_test), model.predict(X_test))

    with warnings.catch_warnings():
        # said in the title: SparsemaxClassifier leaves the rows without a label out of its
        # fit; OneVsRestClassifier predicts a label constant in training constant
        warnings.filterwarnings("ignore", message=".*no active label", category=UserWarning)
        warnings.filterwarnings("ignore", message="Label .* present in all training",
                                category=UserWarning)
        rows = _measure_models(_multilabel_models(X_train, Y_train, budget), X_train, Y_train,
                               describe, repeat, budget, announce, metrics=3)
    rows.append(_liblinear_multilabel(X_train, Y_train, X_test, Y_test, repeat, budget,
                                      announce))
    if data.classes.size >= FASTTEXT_MIN_CLASSES:
        rows.append(_fasttext_multilabel(X_train, Y_train, X_test, Y_test, repeat, budget,
                                         announce))
    measurements = {r[0]: {"seconds": r[1], "micro_f1": r[2], "precision_at_1": r[3],
                           "mean_labels": r[4]} for r in _measured(rows)}
    base = next(r for r in rows if r[0].startswith("scikit-learn OneVsRestClassifier"))
    _format_rows(rows, base, {2: "{:.4f}".format, 3: "{:.4f}".format, 4: "{:.2f}".format})
    unlabelled = int(np.sum(np.asarray(Y_train.sum(axis=1)).ravel() == 0))
    per_row = np.asarray(Y_test.sum(axis=1)).mean()
    return Table(f"label sets, {data.described}, {data.classes.size} labels "
                 f"({_held_out(data, X_test)}; {per_row:.2f} labels per test row), every "
                 "model with an intercept"
                 + "".join(f"; SparsemaxClassifier on the {polytope} predicts the labels "
                           f"above {np.median(found):.3g}" for polytope, found in cuts.items()
                           if found)
                 + (", the training rows' best micro-F1 cuts"
                    if any(cuts.values()) else "")
                 + (f"; SparsemaxClassifier leaves the {unlabelled} training rows without a "
                    "label out of its fit" if unlabelled else "")
                 + f"; median (min-max) of {repeat} fits; fits capped at ~{FIT_BUDGETS} x "
                 f"{budget:g} s (LIBLINEAR's between labels) but fastText's",
                 ["model", "fit time", "test micro-F1", "precision@1", "labels predicted per row",
                  "time / OneVsRest LogisticRegression"], rows, measurements)


def tables(data, repeat, C=1.0, budget=np.inf, announce=None):
    """The tables of one data set: the l1 table (binary; for more than two classes the
    one-vs-rest and the multinomial tables), then the probabilities."""
    if data.multilabel:
        return [compare_multilabel(repeat, data, budget, announce)]
    out = []
    if data.classes.size == 2:
        out.append(compare_l1_logistic(repeat, C, data, budget, announce))
    else:
        out.append(compare_l1_ovr(repeat, C, data, budget, announce))
        out.append(compare_l1_multinomial(repeat, C, data, budget, announce))
    out.append(compare_multiclass(repeat, data, budget, announce))
    return out


def _file_stem(name):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def plot(data, results, traces, directory):
    """Write the figures of one data set to ``directory``; return their paths:
    ``<name>-l1.png`` (relative suboptimality (F - F*)/F* against fit time along each
    solver's tolerance ladder, F* the lowest objective of every fit) when ``traces`` is
    given, and ``<name>-proba.png`` (test accuracy, or a multi-label set's micro-F1,
    against fit time)."""
    import matplotlib.pyplot as plt

    paths = []
    stem = directory / _file_stem(data.name)
    if traces:
        table = next(t for t in results if t.title.startswith("l1-logistic"))
        best = min([f for points in traces.values() for _, f in points]
                   + [m["objective"] for m in table.measurements.values()])
        floor = 1e-16    # a fit at the best objective is drawn at the floor
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, points in traces.items():
            seconds = [t for t, _ in points]
            gaps = [max((f - best) / abs(best), floor) for _, f in points]
            ax.plot(seconds, gaps, "o-", label=name)
        ax.set(xscale="log", yscale="log", xlabel="fit time (s)",
               ylabel="relative suboptimality (F - F*) / F*",
               title=f"l1-logistic, {data.name}: tolerance ladders")
        paths.append(_save(fig, ax, stem, "-l1.png"))
    table = results[-1]                  # the probabilities (label sets) come last
    metric, label, kind = (("micro_f1", "test micro-F1", "label sets") if data.multilabel
                           else ("test_accuracy", "test accuracy", "class probabilities"))
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, m in table.measurements.items():
        ax.plot(statistics.median(m["seconds"]), m[metric], "o", label=name)
    ax.set(xscale="log", xlabel="fit time (s, median)", ylabel=label,
           title=f"{kind}, {data.name}")
    paths.append(_save(fig, ax, stem, "-proba.png"))
    return paths


def _save(fig, ax, stem, suffix):
    """Legend, layout and ``<stem><suffix>`` for one figure; its path."""
    import matplotlib.pyplot as plt

    ax.legend(fontsize="small")
    fig.tight_layout()
    path = stem.with_name(stem.name + suffix)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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
    """The ``sparsekit-compare`` console script: warnings print as one line each,
    ``sparsekit-compare: warning: ...``, not with the line of code that raised them."""
    with warnings.catch_warnings():
        warnings.showwarning = _print_warning
        _main(argv)


def _print_warning(message, *_):     # warnings.showwarning's other arguments: unused
    print(f"sparsekit-compare: warning: {message}", file=sys.stderr)


def _main(argv):
    parser = argparse.ArgumentParser(prog="sparsekit-compare",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("data", nargs="*",
                        help="LIBSVM files (class labels or comma-separated label sets), "
                             "Extreme Classification Repository files, CSV, TSV or ARFF files "
                             "(.csv, .tsv, .arff; a Mulan ARFF file beside its label XML: "
                             "label sets), or data set names (default: a9a digits)")
    parser.add_argument("--repeat", type=_positive_int, default=3,
                        help="fits per model (median)")
    parser.add_argument("--C", type=_positive_float, default=1.0,
                        help="inverse l1 strength of the l1 table")
    parser.add_argument("--budget", type=_positive_float, default=10.0,
                        help="seconds: a slower warm-up fit is timed alone, and the "
                             "iterative fits are capped at about 3 times this")
    parser.add_argument("--json", action="store_true", help="print JSON, not tables")
    parser.add_argument("--zero-based", action="store_true",
                        help="the files number their columns from 0 (scikit-learn's "
                             "dump_svmlight_file), not from 1 as LIBSVM does")
    parser.add_argument("--label", metavar="COLUMN",
                        help="the label column of CSV, TSV and ARFF files, by header or "
                             "position from 0 (default: the last column); the others are "
                             "features: "
                             "numbers standardized (a missing one set to the column's median "
                             "and marked), free text as TF-IDF, other text one-hot encoded "
                             "(fit on the training rows for the test accuracy)")
    parser.add_argument("--test", metavar="FILE", nargs="+",
                        help="test files, one per data file in the same order (LIBLINEAR's "
                             "train/predict: a9a --test a9a.t): the probability and label-set "
                             "tables train on every row of the data file and score on these "
                             "instead of a 70/30 split")
    parser.add_argument("--plot", metavar="DIR", type=Path,
                        help="write PNG figures to DIR: time vs suboptimality of the l1 "
                             "solvers (a ladder of tolerances), accuracy vs time")
    args = parser.parse_args(argv)
    named, args.data = bool(args.data), args.data or ["a9a", "digits"]
    if args.plot is not None:
        try:
            import matplotlib
        except ImportError:
            parser.error("--plot needs matplotlib (pip install matplotlib)")
        matplotlib.use("Agg")
        try:
            args.plot.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            parser.error(f"--plot: cannot create {str(args.plot)!r}: {exc.strerror}")
    if args.label is not None and not any(map(reads_as_table, args.data)):
        parser.error("--label applies to CSV, TSV and ARFF files (.csv, .tsv, .arff, or "
                     "delimited lines under another name, as UCI's .data files); "
                     "LIBSVM files carry their labels first on each line")
    tests = [None] * len(args.data)
    if args.test is not None:
        if len(args.test) != len(args.data) or not named:
            parser.error(f"--test takes one test file per data file, in the same order, "
                         f"after them (sparsekit-compare a9a --test a9a.t); got "
                         f"{len(args.test)} test file(s) for the data "
                         f"{' '.join(args.data)}")
        tests = args.test
    datasets = []
    for spec, test in zip(args.data, tests):
        try:
            datasets.append(load_dataset(spec, args.zero_based, args.label, test))
        except ValueError as exc:
            parser.error(str(exc))
    warnings.simplefilter("ignore", ConvergenceWarning)
    warnings.filterwarnings("ignore", message=".*faster on contiguous arrays")  # numba, in skglm
    report = []
    for data in datasets:
        # the spinner runs while a data set is measured and is gone before its tables print
        with threadpool_limits(limits=1), _progress() as status:   # BLAS on one thread too
            announce = lambda name, data=data: status(f"{data.name}: {name}")  # noqa: E731
            results = tables(data, args.repeat, args.C, args.budget, announce)
            traces = (l1_traces(data, args.C, args.budget, announce) if args.plot is not None
                      and not data.multilabel and data.classes.size == 2 else None)
        for table in results:
            if args.json:
                report.append({"data": data.name,
                               "test": None if data.test is None else data.test.name,
                               "title": table.title,
                               "rows": [dict(zip(table.header, map(str, r)))
                                        for r in table.rows],
                               "measurements": table.measurements})
            else:
                print(format_table(table.title, table.header, table.rows), end="\n\n",
                      flush=True)
        if args.plot is not None:
            for path in plot(data, results, traces, args.plot):
                print(f"wrote {path}", file=sys.stderr)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
