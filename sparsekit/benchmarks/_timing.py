"""How ``sparsekit-compare`` times its fits: medians after a warm-up (none for a fit of a
second or more), the untimed work before them on the progress display, the rows of a
table, the caps that keep a peer's fit within about three ``--budget``s (iterations sized
by timed fits, a callback that stops a fit, class-by-class fits that stop between
classes)."""
import importlib
import statistics
import time
import warnings
from collections import namedtuple

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ._interrupt import raise_if_interrupted

#: one table: its ``title``, column ``header``, formatted ``rows``, and the raw
#: ``measurements`` of its measured rows, ``{name: {"seconds": [...], metric: value}}``
Table = namedtuple("Table", "title header rows measurements")


#: a first fit of at least this many seconds is no warm-up but the first of the timed fits:
#: what a warm-up absorbs (caches, lazy imports, threads starting; skglm's numba
#: compilation runs beforehand on a few rows) takes milliseconds, and an untimed run of a
#: fit of seconds lengthens the command by its time
WARM_FIT = 1.0


def _median_fit(make_and_fit, repeat, budget=np.inf, warm_up=False):
    """Wall times of ``repeat`` fits after one warm-up fit (JIT compilers, caches), and the
    last model; a first fit of WARM_FIT seconds or more is timed as the first of them,
    unless ``warm_up`` (a first fit that does more than the others: fastText's searches
    its learning rate). When ``repeat`` fits would take longer than ``budget`` seconds by
    the first fit's time, as many as fit in it, at least one; a first fit longer than
    ``budget`` is the only fit, and its time."""
    first, model = timed(make_and_fit)
    if first > budget:
        return [first], model
    if repeat * first > budget:
        repeat = max(1, int(budget // first))
    times = [first] if first >= WARM_FIT and not warm_up else []
    while len(times) < repeat:
        seconds, model = timed(make_and_fit)
        times.append(seconds)
    return times, model


def preparing(announce, name, what):
    """Show ``name``'s untimed preparation ``what`` on the progress display of ``main``
    (``announce``, or None): LIBLINEAR's copy of the data, skglm's numba compilation, the
    fits that size a capped fit. Without it the seconds they take would run under the name
    of the model timed before them."""
    if announce is not None:
        announce(f"{name}, untimed: {what}")


def measure(name, fit, repeat, describe, budget=np.inf, announce=None, metrics=2,
            warm_up=False):
    """One table row: ``[name, times, *describe(model), ""]`` (``describe`` gives the
    ``metrics`` columns), or the reason it has none: ``fit`` None (not installed) or a
    string (why it is not run), or the error a peer raised. ``announce(name)`` is called
    before the model is timed (the progress display of ``main``); ``warm_up`` as
    :func:`_median_fit` takes it."""
    if fit is None or isinstance(fit, str):
        return [name, fit or "not installed", *[""] * (metrics + 1)]
    if announce is not None:
        announce(name)
    try:
        times, model = _median_fit(fit, repeat, budget, warm_up)
        return [name, times, *describe(model), ""]
    except Exception as exc:   # a peer's API change must not hide the other rows
        reason = " ".join(str(exc).split())      # one line: messages may span several
        return [name, f"error: {type(exc).__name__}: {reason}"[:100], *[""] * (metrics + 1)]


def noted(row, note):
    """``row`` (of :func:`measure`) with ``note``, what ended its fit, beside its name in
    brackets, when there is one."""
    if note:
        row[0] += f" [{note}]"
    return row


def import_peer(module):
    """The peer's ``module``, or why its rows cannot be measured: None when the peer is not
    installed, else the reason its import failed, a string for :func:`measure` (an install
    that an upgrade of NumPy or Python broke fails with ImportError, AttributeError, ...:
    the command's other rows still come)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module.split(".")[0]:
            return None
        failure = exc
    except Exception as exc:
        failure = exc
    reason = " ".join(str(failure).split())
    return f"error: import {module}: {type(failure).__name__}: {reason}"[:100]


def fits_phrase(repeat, budget=np.inf):
    """How a table's times were taken, for its title: the median (min-max) of ``repeat``
    fits, fewer where they would take more than ``budget`` seconds (:func:`_median_fit`);
    "one fit each" for ``repeat`` 1."""
    if repeat == 1:
        return "one fit each"
    fewer = f" (fewer where {repeat} would take over {budget:g} s)" if np.isfinite(budget) else ""
    return f"median (min-max) of {repeat} fits{fewer}"


def measured(rows):
    return [r for r in rows if not isinstance(r[1], str)]


def format_rows(rows, base_row, formats):
    """Format measured rows in place: column 1 times -> "median ms (min-max)", the last
    column the ratio of medians to ``base_row``'s, and ``formats[i](value)`` for the
    others."""
    base = statistics.median(base_row[1]) if not isinstance(base_row[1], str) else None
    for r in measured(rows):
        median = statistics.median(r[1])
        r[-1] = f"{median / base:.2f}x" if base else "n/a"
        r[1] = (f"{median * 1e3:.1f} ms ({min(r[1]) * 1e3:.1f}-{max(r[1]) * 1e3:.1f})"
                if len(r[1]) > 1 else f"{median * 1e3:.1f} ms (one fit)")
        for i, fmt in formats.items():
            r[i] = fmt(r[i])


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


def every(A, step):
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


def max_iter_within(fit_with, n_rows, budget, most, unit="iteration"):
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


def timed(call):
    """``(seconds, call())``: the wall time of the call and its result; a Ctrl-C that the
    call swallowed (a peer's compiled code) is raised after it."""
    t0 = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - t0
    raise_if_interrupted()
    return seconds, result


def _seconds(call):
    return timed(call)[0]


def unless_too_slow(iterations, fit):
    """``fit``, or, when ``iterations`` (of :func:`max_iter_within`) is a string, that
    string: the reason ``fit`` is not run."""
    return iterations if isinstance(iterations, str) else fit


class TimeLimit:
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


class LbfgsTimeLimit(TimeLimit):
    """:class:`TimeLimit` for scikit-learn's lbfgs fits: LogisticRegression's, and, sharing
    one, the labels' of a OneVsRestClassifier. The time runs from the first fit after
    :meth:`start` (called where the model is made), and once it has passed each fit stops
    at the end of its next lbfgs iteration. scikit-learn 1.9 does not act on a callback's
    stop request in its lbfgs iterations; SciPy's ``minimize`` stops on a StopIteration
    from its callback, which this raises once a fit, at the end of an iteration (the calls
    that pass X: not the fit's closing calls, which SciPy does not run)."""

    def start(self):
        self._start, self.stopped = None, False
        return self

    def setup(self, estimator, context):
        if self._start is None:
            self._start = time.perf_counter()
        self._raised = False

    def on_fit_task_end(self, estimator, context, *, X=None, y=None):
        if (X is not None and context.task_name == "lbfgs-iter" and not self._raised
                and time.perf_counter() - self._start > self.seconds):
            self._raised = self.stopped = True
            raise StopIteration
        return self._raised


def class_by_class(fit_class, n_classes, limit, done):
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
        raise_if_interrupted()
    done[:] = [len(rows)]
    coef = np.zeros((n_classes, rows[0].size))
    coef[:len(rows)] = rows
    return coef


#: what the row of a fit that the budget's cap ended says
BUDGET_STOP = "stopped by the budget"


def iterations_note(spent, cap, most, unit="iterations"):
    """What ended a fit that ran ``spent`` of at most ``cap`` ``unit`` (``cap`` is its own
    ``most`` without a budget), for its row: "stopped by the budget" when it ran all ``cap``
    of a budget's cap below ``most``, "not converged in ``most`` ``unit``" when it ran all
    of its own (the ConvergenceWarning that the command silences, e.g. lbfgs on columns in
    other units), else ""."""
    if spent < cap:
        return ""
    return BUDGET_STOP if cap < most else f"not converged in {most} {unit}"


def limited(make, budget):
    """(make, stopped) for a sparsekit model: ``make()`` returns the model of ``make`` with
    a callback that stops its fit after about FIT_BUDGETS x ``budget`` seconds, and
    ``stopped(model)`` says what ended its last fit: that callback, all of the model's
    ``max_iter`` (:func:`iterations_note`), or nothing ("")."""
    limit = TimeLimit(FIT_BUDGETS * budget)

    def stopped(fitted):
        if limit.stopped:
            return BUDGET_STOP
        most = getattr(fitted, "max_iter", None)
        return "" if most is None else iterations_note(np.max(fitted.n_iter_), most, most)
    return (lambda: make().set_callbacks(limit)), stopped
