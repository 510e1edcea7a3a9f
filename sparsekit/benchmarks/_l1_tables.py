"""The l1-logistic tables of ``sparsekit-compare``: LIBLINEAR ``-s 6``'s binary objective,
its one-vs-rest sum over the classes, and scikit-learn's multinomial objective, each solved
by L1LogisticOBA and the installed peers (LIBLINEAR, skglm, celer, saga), with the
tolerance ladders of ``--plot``."""
import contextlib
from types import ModuleType

import numpy as np
from scipy.special import logsumexp
from sklearn.linear_model import LogisticRegression

from sparsekit import L1LogisticOBA
from sparsekit.benchmarks._data import load_dataset
from sparsekit.benchmarks._interrupt import interruptible
from sparsekit.benchmarks._timing import (BUDGET_STOP, FIT_BUDGETS, Table, TimeLimit,
                                          class_by_class, every, fits_phrase, format_rows,
                                          import_peer, iterations_note, max_iter_within,
                                          measure, measured, noted, preparing,
                                          timed, unless_too_slow)
from sparsekit.utils._sklearn import l1_penalty

_L1 = l1_penalty()


def _l1_objective(w, X, y, C):
    margins = y * (X @ w)
    return np.abs(w).sum() + C * np.logaddexp(0.0, -margins).sum()


#: each l1 solver's tolerance in the table (in its own measure), and the ladder of ``--plot``
L1_TOL = {"scikit-learn saga": 1e-6}
L1_DEFAULT_TOL = 1e-8
L1_LADDER = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)


#: saga's epochs in the tables, unless the budget cuts them
SAGA_EPOCHS = 20000


def _saga_max_iter(X, y, C, budget, fit_intercept=False):
    """Epochs of saga (at most SAGA_EPOCHS) that fit in FIT_BUDGETS x ``budget`` seconds, or why
    it is not run (:func:`max_iter_within`)."""
    return max_iter_within(lambda epochs, step: LogisticRegression(
        C=C, solver="saga", fit_intercept=fit_intercept, max_iter=epochs, **_L1).fit(
            every(X, step), every(y, step)), X.shape[0], budget, SAGA_EPOCHS, "epoch")


def _small_slice(X, y, per_class=25):
    """(X, y) on the first ``per_class`` rows of each class: the same layout and types, for
    a compiling first fit."""
    rows = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in np.unique(y)])
    return X[rows], y[rows]


def liblinear_binary(liblinearutil, X, labels):
    """``train(labels, options)``: LIBLINEAR's binary model on ``X`` for labels in {-1, +1}
    (``labels`` the first ones), its weights (the bias weight last under ``-B 1``) signed
    for label +1. The problem, LIBLINEAR's copy of ``X``, is built here once, untimed, and
    relabelled by each call."""
    problem = liblinearutil.problem(np.asarray(labels, dtype=float), X)
    # of a dense X LIBLINEAR counts the columns up to the last nonzero entry: trailing
    # columns of zeros (a constant column, standardized) would shorten its weights
    problem.n = max(problem.n, X.shape[1])
    problem_labels = np.ctypeslib.as_array(problem.y, (problem.l,))

    def train(labels, options):
        problem_labels[:] = labels
        model = interruptible(liblinearutil.train, problem, liblinearutil.parameter(options))
        w = np.ctypeslib.as_array(model.w, (model.nr_feature + (model.bias >= 0),))
        return (1.0 if model.get_labels()[0] == 1 else -1.0) * w     # a copy of model.w
    return train


def _binary_l1_peers(X, y, C, announce=None):
    """(name, fit) for each peer l1-logistic solver of the binary problems on ``X``, no
    intercept: ``fit(labels, tol)`` fits labels in {-1, +1} at that tolerance (in the
    peer's own measure) and returns the coefficients; None when the peer is not installed,
    or why its import failed (:func:`import_peer`). Work a fit need not repeat is done
    here, untimed: LIBLINEAR's copy of the data (``problem``, relabelled by each fit), and
    skglm's numba compilation, on a small slice of ``X`` and ``y`` (so that no timed fit,
    not even a warm-up longer than the budget, pays for it; a failure here is left to the
    timed fits, whose row then says why). ``announce`` shows that work on the progress
    display (:func:`preparing`)."""
    liblinearutil = import_peer("liblinear.liblinearutil")
    if isinstance(liblinearutil, ModuleType):
        preparing(announce, "LIBLINEAR -s 6", "its copy of the data")
        train = liblinear_binary(liblinearutil, X, y)
        yield "LIBLINEAR -s 6", lambda labels, tol: train(
            labels, f"-s 6 -c {C} -B -1 -e {tol:g} -q")
    else:
        yield "LIBLINEAR -s 6", liblinearutil
    skglm = import_peer("skglm")
    if isinstance(skglm, ModuleType):
        def skglm_fit(labels, tol, X=X):
            return skglm.SparseLogisticRegression(
                alpha=1.0 / (C * X.shape[0]), fit_intercept=False, tol=tol,
                max_iter=1000).fit(X, labels).coef_.ravel()
        preparing(announce, "skglm", "numba compiling it on a few rows")
        with contextlib.suppress(Exception):
            X_small, y_small = _small_slice(X, y)
            skglm_fit(y_small, 1e-2, X_small)
        yield "skglm", skglm_fit
    else:
        yield "skglm", skglm
    celer = import_peer("celer")
    if isinstance(celer, ModuleType):
        yield "celer", lambda labels, tol: celer.LogisticRegression(
            C=C, fit_intercept=False, tol=tol).fit(X, labels).coef_.ravel()
    else:
        yield "celer", celer


def _l1_solvers(X, y, C, budget=np.inf, announce=None):
    """(name, fit_at, stopped) for every installed l1-logistic solver, same objective:
    ``fit_at(tol)`` fits at that tolerance and returns the coefficients; None when the
    peer is not installed. ``stopped()`` says what ended the last fit: saga's epochs,
    capped by ``budget`` (:data:`FIT_BUDGETS`), or OBA's own iterations, all spent
    (:func:`_saga_ended`, :func:`_oba_ended`). ``announce`` shows the untimed work before
    a solver's fits (:func:`preparing`)."""
    oba_fits = []

    def oba(tol):
        oba_fits[:] = [L1LogisticOBA(C=C, tol=tol, fit_intercept=False).fit(X, y)]
        return oba_fits[0].coef_.ravel()
    yield "sparsekit L1LogisticOBA", oba, lambda: _oba_ended(oba_fits)
    for name, fit in _binary_l1_peers(X, y, C, announce):
        yield name, (lambda tol, fit=fit: fit(y, tol)) if callable(fit) else fit, str
    preparing(announce, "scikit-learn saga", "sizing its epochs to the budget")
    saga_epochs, saga_fits = _saga_max_iter(X, y, C, budget), []

    def saga(tol):
        saga_fits[:] = [LogisticRegression(C=C, solver="saga", fit_intercept=False, tol=tol,
                                           max_iter=saga_epochs, **_L1).fit(X, y)]
        return saga_fits[0].coef_.ravel()
    yield ("scikit-learn saga", unless_too_slow(saga_epochs, saga),
           lambda: _saga_ended(saga_fits, saga_epochs))


def _oba_ended(fits, time_limit=None):
    """What ended the last L1LogisticOBA fit in ``fits`` (a list of at most one), for its
    row: ``time_limit`` (a :class:`TimeLimit`), "stopped by the budget"; ``max_iter``
    iterations that left a problem above ``tol``, "not converged in ``max_iter``
    iterations"; else nothing ("")."""
    if not fits:
        return ""
    if time_limit is not None and time_limit.stopped:
        return BUDGET_STOP
    model = fits[0]      # the iterations of the problems left above tol (0: none left)
    spent = np.max(np.where(model.optimality_ > model.tol, model.n_iter_, 0))
    return iterations_note(spent, model.max_iter, model.max_iter)


def _saga_ended(fits, epochs):
    """What ended the last saga fit in ``fits`` (a list of at most one), for its row: all of
    its ``epochs`` (:func:`~sparsekit.benchmarks._timing.iterations_note`: the budget's cap,
    or SAGA_EPOCHS, the table's own), or nothing ("")."""
    return iterations_note(np.max(fits[0].n_iter_), epochs, SAGA_EPOCHS, "epochs") if fits else ""


def _l1_problem(data):
    """The l1 table's matrix and its labels in {-1, +1}."""
    return data.X_l1, np.where(data.y == data.classes[1], 1, -1)


def compare_l1_logistic(repeat, C=1.0, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the l1-logistic comparison on ``data`` (a :class:`Dataset`
    with two classes; default: breast_cancer)."""
    data = data or load_dataset("breast_cancer")
    X, y = _l1_problem(data)
    rows = [noted(measure(name, (lambda fit_at=fit_at, name=name: fit_at(
                               L1_TOL.get(name, L1_DEFAULT_TOL))) if callable(fit_at) else fit_at,
                           repeat,
                           lambda w: (_l1_objective(w, X, y, C), int(np.sum(w == 0))), budget,
                           announce), stopped())
            for name, fit_at, stopped in _l1_solvers(X, y, C, budget, announce)]
    return _objective_table(
        f"l1-logistic (LIBLINEAR -s 6 objective), {data.described}, C={C:g}, no "
        f"intercept; tol 1e-8 (saga 1e-6), each in its own measure; LIBLINEAR's copy of the "
        f"data built untimed; {_saga_cap(budget)}{fits_phrase(repeat, budget)}", "F(w)", "w",
        rows)


def _saga_cap(budget):
    """The binary table's title on its one capped fit: saga's, by its epochs."""
    if not np.isfinite(budget):
        return ""
    return f"saga's epochs capped at ~{FIT_BUDGETS} x {budget:g} s, no other fit capped; "


#: a solver whose objective ends more than this (relative) above the best one did not
#: solve the same problem to the table's precision: its time ratio says where it stopped
UNSOLVED_GAP = 1e-6


def _digits(value):
    """An objective with 8 decimals, or in 13 significant digits from 1e9 on (C = 1e300 made
    it a 300-digit number)."""
    return f"{value:.8f}" if abs(value) < 1e9 else f"{value:.12e}"


def _objective_table(title, objective, variable, rows):
    """The :class:`Table` of an objective comparison: the raw measurements, then the rows
    formatted with each objective's relative gap to the best and the time ratio to the
    first row (sparsekit's), which for a solver that stopped more than UNSOLVED_GAP above
    the best says so (a capped fit's time is not its time to the answer)."""
    solved = measured(rows)
    measurements = {r[0]: {"seconds": r[1], "objective": r[2], "zeros": r[3]}
                    for r in solved}
    best = min((r[2] for r in solved), default=np.nan)
    gaps = [(r[2] - best) / best for r in solved]
    format_rows(rows, rows[0], {2: lambda f: f"{_digits(f)} (rel. gap {(f - best) / best:.1e})"})
    for r, gap in zip(solved, gaps):
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
    for name, fit_at, _ in _l1_solvers(X, y, C, budget, announce):
        if not callable(fit_at):       # not installed, or not run (its table row says why)
            continue
        if announce is not None:
            announce(f"{name} (tolerance ladder)")
        points = []
        try:
            timed(lambda: fit_at(L1_LADDER[0]))       # warm-up: JIT compilers, caches
            for tol in L1_LADDER:
                if tol < L1_TOL.get(name, L1_DEFAULT_TOL):
                    break
                seconds, w = timed(lambda: fit_at(tol))
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


def _multinomial_solvers(X, y, C, budget=np.inf, announce=None):
    """(name, fit, stopped) for the multinomial l1 solvers, same objective (intercepts
    free); each fit is capped at about FIT_BUDGETS x ``budget`` seconds (OBA by a callback
    that stops it, saga by its epochs, sized untimed: ``announce`` as :func:`preparing`
    takes it), and ``stopped()`` says what ended the last fit (:func:`_oba_ended`,
    :func:`_saga_ended`)."""
    time_limit, oba_fits = TimeLimit(FIT_BUDGETS * budget), []

    def oba():
        model = L1LogisticOBA(C=C, tol=L1_DEFAULT_TOL, multiclass="multinomial")
        if np.isfinite(budget):
            model.set_callbacks(time_limit)
        oba_fits[:] = [model.fit(X, y)]
        return model
    yield "sparsekit L1LogisticOBA", oba, lambda: _oba_ended(oba_fits, time_limit)
    preparing(announce, "scikit-learn saga", "sizing its epochs to the budget")
    epochs, saga_fits = _saga_max_iter(X, y, C, budget, fit_intercept=True), []

    def saga():
        saga_fits[:] = [LogisticRegression(C=C, solver="saga", tol=L1_TOL["scikit-learn saga"],
                                           max_iter=epochs, **_L1).fit(X, y)]
        return saga_fits[0]
    yield ("scikit-learn saga", unless_too_slow(epochs, saga),
           lambda: _saga_ended(saga_fits, epochs))


def compare_l1_multinomial(repeat, C=1.0, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the multinomial l1-logistic comparison on ``data`` (a
    :class:`Dataset` with more than two classes; default: digits)."""
    data = data or load_dataset("digits")
    X, y = data.X_l1, np.searchsorted(data.classes, data.y)
    rows = [noted(measure(name, fit, repeat, lambda model: (
                _multinomial_objective(model.coef_, model.intercept_, X, y, C),
                int(np.sum(model.coef_ == 0))), budget, announce), stopped())
            for name, fit, stopped in _multinomial_solvers(X, y, C, budget, announce)]
    return _objective_table(
        f"multinomial l1-logistic, {data.described}, {data.classes.size} classes, "
        f"C={C:g}, intercepts free (LIBLINEAR, skglm and celer are one-vs-rest only); tol 1e-8 "
        f"(saga 1e-6), each in its own measure, each fit capped at ~{FIT_BUDGETS} x "
        f"{budget:g} s; {fits_phrase(repeat, budget)}", "F(W, b)", "W", rows)


def _ovr_objective(coef, X, codes, C):
    """sum_k (||w_k||_1 + C sum_i log(1 + exp(-y_ik w_k.x_i))), y_ik = +1 for the rows of
    class k and -1 for the others: LIBLINEAR ``-s 6``'s objective of each one-vs-rest model,
    summed over the classes."""
    classes = np.arange(coef.shape[0])
    loss = sum(np.logaddexp(0.0, np.where(codes[rows, None] == classes, -Z, Z)).sum()
               for rows, Z in _score_blocks(X, coef))
    return float(np.abs(coef).sum() + C * loss)


def _ovr_solvers(X, codes, n_classes, C, budget=np.inf, announce=None):
    """(name, fit, stopped) for every installed l1-logistic solver, one binary model per
    class against the others, no intercept: ``fit()`` returns the (n_classes, n_features)
    coefficients, None when the peer is not installed, or why it is not run; ``stopped()``
    says how the budget cap, or OBA's own iterations, ended the last fit and how many
    classes it solved ("" when neither ended it). L1LogisticOBA fits its classes itself,
    capped by a callback (after which each class left gets one iteration); the peers are fit
    class by class (on one copy of the data: LIBLINEAR's ``problem`` is relabelled),
    stopping between classes after FIT_BUDGETS x ``budget`` seconds (the classes left keep
    zero weights). scikit-learn's saga, by far the slowest class by class, is in the
    multinomial table only.
    ``announce`` shows the peers' untimed work (:func:`preparing`)."""
    limit = FIT_BUDGETS * budget
    signs = [np.where(codes == k, 1, -1) for k in range(n_classes)]

    def capped(solved):
        return f"stopped by the budget: {solved} of {n_classes} classes solved"
    time_limit, oba_fits = TimeLimit(limit), []

    def oba():
        model = L1LogisticOBA(C=C, tol=L1_DEFAULT_TOL, fit_intercept=False)
        if np.isfinite(budget):
            model.set_callbacks(time_limit)
        oba_fits[:] = [model.fit(X, codes)]
        return model.coef_

    def oba_ended():
        ended = _oba_ended(oba_fits, time_limit)
        if not ended:
            return ""
        solved = int(np.sum(oba_fits[0].optimality_ <= oba_fits[0].tol))
        return (capped(solved) if ended == BUDGET_STOP
                else f"{ended}: {solved} of {n_classes} classes solved")
    yield "sparsekit L1LogisticOBA", oba, oba_ended

    def by_class(fit_class):
        done = []
        return (lambda: class_by_class(fit_class, n_classes, limit, done),
                lambda: capped(done[0]) if done and done[0] < n_classes else "")
    for name, fit in _binary_l1_peers(X, signs[0], C, announce):
        if callable(fit):
            yield name, *by_class(lambda k, fit=fit: fit(signs[k], L1_DEFAULT_TOL))
        else:
            yield name, fit, str


def compare_l1_ovr(repeat, C=1.0, data=None, budget=np.inf, announce=None):
    """The one-vs-rest l1-logistic comparison on ``data`` (a :class:`Dataset` with more
    than two classes; default: digits), as a :class:`Table`: LIBLINEAR ``-s 6``'s problem
    for each class against the others, the objectives summed."""
    data = data or load_dataset("digits")
    X, codes, k = data.X_l1, np.searchsorted(data.classes, data.y), data.classes.size
    rows = []
    for name, fit, stopped in _ovr_solvers(X, codes, k, C, budget, announce):
        rows.append(noted(measure(name, fit, repeat, lambda coef: (
            _ovr_objective(coef, X, codes, C), int(np.sum(coef == 0))), budget, announce),
            stopped()))
    return _objective_table(
        f"l1-logistic one-vs-rest (LIBLINEAR -s 6 objective for each class against the "
        f"others, summed), {data.described}, {k} classes, C={C:g}, no intercept; tol 1e-8, "
        f"each in its own measure; L1LogisticOBA fits its classes itself, the peers class by "
        f"class on one copy of the data (LIBLINEAR's built untimed); each fit capped at "
        f"~{FIT_BUDGETS} x {budget:g} s (OBA by a callback, the peers between classes); "
        f"{fits_phrase(repeat, budget)}", "F(W)", "W", rows)
