"""The class-probability and label-set tables of ``sparsekit-compare``: SparsemaxClassifier
and ExtremeSoftmaxSGD against scikit-learn, LIBLINEAR and fastText on held-out rows."""
import warnings
from types import ModuleType

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier

from sparsekit import ExtremeSoftmaxSGD, SparsemaxClassifier
from sparsekit.benchmarks._data import TEST_SHARE, load_dataset
from sparsekit.benchmarks._fasttext import (FASTTEXT_EPOCHS, fasttext_joins, fasttext_row,
                                            label_index, tokens)
from sparsekit.benchmarks._interrupt import interruptible
from sparsekit.benchmarks._l1_tables import liblinear_binary
from sparsekit.benchmarks._timing import (BUDGET_STOP, FIT_BUDGETS, LbfgsTimeLimit, Table,
                                          class_by_class, every, fits_phrase, format_rows,
                                          import_peer, iterations_note, limited,
                                          max_iter_within, measure, measured, noted,
                                          preparing, unless_too_slow)

#: the most iterations of scikit-learn's lbfgs fits (LogisticRegression, one-vs-rest too),
#: where its default of 100 ends many fits on columns in other units before they converge;
#: a row that ran them all says so
LBFGS_ITERATIONS = 2000
#: SparsemaxClassifier's ``max_iter`` in the tables
SPARSEMAX_ITERATIONS = 500
#: SGDClassifier's epochs (``tol=None``: it runs them all, with no test of convergence)
SGD_EPOCHS = 20


def _multiclass_models(X, y, budget=np.inf, announce=None):
    """(name, make, stopped) of the probability models on training data ``X, y``: ``make()``
    returns a model to fit, capped at about FIT_BUDGETS x ``budget`` seconds (sparsekit's by
    a callback that stops them, scikit-learn's by their iterations or epochs, from the time
    of one, sized untimed: ``announce`` as :func:`preparing` takes it; lbfgs's also by a
    callback, :func:`_lbfgs_limited`), and
    ``stopped(model)`` says what ended its last fit: that cap, or all of its own
    iterations (:func:`~sparsekit.benchmarks._timing.iterations_note`), or nothing."""
    yield "sparsekit SparsemaxClassifier", *limited(
        lambda: SparsemaxClassifier(max_iter=SPARSEMAX_ITERATIONS, random_state=0), budget)
    if np.unique(y).size > 2:  # a softmax for many classes; two are LogisticRegression's
        yield "sparsekit ExtremeSoftmaxSGD", *limited(
            lambda: ExtremeSoftmaxSGD(random_state=0), budget)
    preparing(announce, "scikit-learn LogisticRegression (lbfgs)",
              "sizing its iterations to the budget")
    iters = max_iter_within(lambda k, step: LogisticRegression(C=1.0, max_iter=k).fit(
        every(X, step), every(y, step)), X.shape[0], budget, LBFGS_ITERATIONS)
    make, stopped = _lbfgs_limited(lambda: LogisticRegression(C=1.0, max_iter=iters),
                                   iters, budget,
                                   lambda fitted: fitted.n_iter_.max())
    yield "scikit-learn LogisticRegression (lbfgs)", unless_too_slow(iters, make), stopped
    preparing(announce, "scikit-learn SGDClassifier (log_loss)",
              "sizing its epochs to the budget")
    epochs = max_iter_within(lambda k, step: SGDClassifier(
        loss="log_loss", alpha=1e-4, max_iter=k, tol=None, random_state=0).fit(
            every(X, step), every(y, step)), X.shape[0], budget, SGD_EPOCHS, "epoch")
    yield ("scikit-learn SGDClassifier (log_loss)",
           unless_too_slow(epochs, lambda: SGDClassifier(
               loss="log_loss", alpha=1e-4, max_iter=epochs, tol=None, random_state=0)),
           lambda fitted: BUDGET_STOP if epochs < SGD_EPOCHS else "")


def _fasttext_multiclass(X_train, y_train, X_test, y_test, repeat, budget=np.inf,
                         announce=None):
    classes = np.unique(y_train)
    codes = np.searchsorted(classes, y_train)
    test_lines = tokens(sp.csr_matrix(X_test))

    def describe(model):
        labels, proba = model.predict(test_lines, k=-1, threshold=0.0)
        predicted = classes[[label_index(lab[0]) for lab in labels]]
        return (float(np.mean(predicted == y_test)),
                float(np.mean([np.count_nonzero(p) for p in proba])))

    return fasttext_row(f"fastText supervised (softmax, {FASTTEXT_EPOCHS} epochs)",
                         [f"__label__{c}" for c in codes], sp.csr_matrix(X_train),
                         describe, repeat, budget, announce)


def split(data):
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
    return f"trained on every row, tested on the {X_test.shape[0]} rows of {data.test.name}"


def _liblinear_logistic(X_train, y_train, X_test, y_test, repeat, budget=np.inf,
                        announce=None):
    """LIBLINEAR's ℓ2 logistic regression (``-s 0``): one model of two classes, one-vs-rest
    from three on."""
    name = "LIBLINEAR -s 0 -B 1" + (" (one-vs-rest)" if np.unique(y_train).size > 2 else "")
    liblinearutil = import_peer("liblinear.liblinearutil")
    if not isinstance(liblinearutil, ModuleType):
        return measure(name, liblinearutil, repeat, None)
    preparing(announce, name, "its copy of the data")
    problem = liblinearutil.problem(y_train.astype(float), X_train)  # built once, untimed

    def describe(model):
        labels, _, proba = liblinearutil.predict(
            y_test.astype(float), X_test, model, "-b 1 -q")
        return (np.mean(np.asarray(labels) == y_test),
                float(np.mean(np.sum(np.asarray(proba) > 0, axis=1))))

    return measure(name, lambda: interruptible(
        liblinearutil.train, problem, liblinearutil.parameter("-s 0 -c 1 -B 1 -q")), repeat,
        describe, budget, announce)


def _measure_models(models, X_train, y_train, describe, repeat, budget=np.inf,
                    announce=None, metrics=2):
    """The rows of ``models`` ((name, make, stopped) triples) fit on ``X_train, y_train``;
    a row whose last fit the budget's cap ended, or that ran all its iterations without
    converging, says so."""
    rows = []
    for name, make, stopped in models:
        notes = []

        def described(model, stopped=stopped, notes=notes):
            notes.append(stopped(model))
            return describe(model)
        fit = (lambda make=make: make().fit(X_train, y_train)) if callable(make) else make
        rows.append(noted(measure(name, fit, repeat, described, budget, announce, metrics),
                          notes[-1] if notes else ""))
    return rows


def _fasttext_named(rows):
    """["fastText's"] when the table's ``rows`` hold fastText's, else []."""
    return ["fastText's"] if any(row[0].startswith("fastText") for row in rows) else []


def _caps(budget, uncapped, between=None):
    """The caption's words on the fits' time cap: which fits it stops (``between``: where
    a peer's own loop is stopped) and which it cannot (``uncapped``: one call each)."""
    if not np.isfinite(budget):
        return "no fit capped in time"
    text = f"fits capped at ~{FIT_BUDGETS} x {budget:g} s"
    if between:
        text += f" ({between})"
    if uncapped:
        text += " except " + " and ".join(uncapped)
    return text


def compare_multiclass(repeat, data=None, budget=np.inf, announce=None):
    """(title, header, rows) of the class-probability comparison on ``data`` (a
    :class:`Dataset`; default: digits)."""
    data = data or load_dataset("digits")
    X_train, X_test, y_train, y_test = split(data)

    def describe(model):
        proba = model.predict_proba(X_test)
        return model.score(X_test, y_test), float(np.mean(np.sum(proba > 0, axis=1)))

    rows = _measure_models(_multiclass_models(X_train, y_train, budget, announce), X_train,
                           y_train, describe, repeat, budget, announce)
    rows.append(_liblinear_logistic(X_train, y_train, X_test, y_test, repeat, budget,
                                    announce))
    if fasttext_joins(data):
        rows.append(_fasttext_multiclass(X_train, y_train, X_test, y_test, repeat, budget,
                                         announce))
    measurements = {r[0]: {"seconds": r[1], "test_accuracy": r[2], "mean_support": r[3]}
                    for r in measured(rows)}
    base = next(r for r in rows if r[0].startswith("scikit-learn LogisticRegression"))
    format_rows(rows, base, {2: "{:.4f}".format, 3: "{:.2f}".format})
    held_out = _held_out(data, X_test) + ("" if data.encode is None else
                                          f"; encoders fit on the training rows: "
                                          f"{X_train.shape[1]} columns")
    return Table(f"class probabilities, {data.described}, {data.classes.size} "
                 f"classes ({held_out}), every model with an intercept; "
                 f"{fits_phrase(repeat, budget)}; "
                 + _caps(budget, ["LIBLINEAR's"] + _fasttext_named(rows)),
                 ["model", "fit time", "test accuracy", "mean classes with p>0",
                  "time / LogisticRegression"], rows, measurements)


def _multilabel_models(X, Y, budget=np.inf, announce=None):
    """(name, make, stopped) of the label-set models, as :func:`_multiclass_models`:
    SparsemaxClassifier on the simplex (a sparse distribution over the labels) and on the
    box (a marginal per label), each cut where the training rows' micro-F1 is best."""
    yield "sparsekit SparsemaxClassifier", *limited(
        lambda: SparsemaxClassifier(max_iter=SPARSEMAX_ITERATIONS, random_state=0), budget)
    yield "sparsekit SparsemaxClassifier(polytope='box')", *limited(
        lambda: SparsemaxClassifier(polytope="box", max_iter=SPARSEMAX_ITERATIONS,
                                    random_state=0), budget)
    preparing(announce, "scikit-learn OneVsRestClassifier(LogisticRegression)",
              "sizing its iterations to the budget")
    iters = max_iter_within(
        lambda k, step: OneVsRestClassifier(LogisticRegression(C=1.0, max_iter=k)).fit(
            every(X, step), every(Y, step)), X.shape[0], budget, LBFGS_ITERATIONS)

    def spent(fitted):     # labels constant in training get no LogisticRegression
        return max((e.n_iter_.max() for e in fitted.estimators_ if hasattr(e, "n_iter_")),
                   default=0)
    make, stopped = _lbfgs_limited(lambda: LogisticRegression(C=1.0, max_iter=iters),
                                   iters, budget, spent, OneVsRestClassifier)
    yield ("scikit-learn OneVsRestClassifier(LogisticRegression)",
           unless_too_slow(iters, make), stopped)


def _lbfgs_limited(make_lbfgs, iters, budget, spent, wrap=lambda model: model):
    """(make, stopped) of a scikit-learn lbfgs model (``wrap(make_lbfgs())``, ``iters`` of
    :func:`max_iter_within`), as :func:`~sparsekit.benchmarks._timing.limited` makes them:
    where the budget sized its iterations below LBFGS_ITERATIONS, a callback stops its fit
    at about FIT_BUDGETS x ``budget`` seconds too (the later iterations of a fit, with longer
    line searches, may take longer than the sizing fits' did); ``spent(model)``: the most
    iterations its fit ran."""
    limit = LbfgsTimeLimit(FIT_BUDGETS * budget)

    def make():
        model = make_lbfgs()
        if isinstance(iters, int) and iters < LBFGS_ITERATIONS:
            model.set_callbacks(limit.start())
        return wrap(model)

    def stopped(fitted):
        if limit.stopped:
            return BUDGET_STOP
        return iterations_note(spent(fitted), iters, LBFGS_ITERATIONS)
    return make, stopped


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
    liblinearutil = import_peer("liblinear.liblinearutil")
    if not isinstance(liblinearutil, ModuleType):
        return measure(name, liblinearutil, repeat, None, metrics=3)
    X_train = sp.csr_matrix(X_train)
    Y_train = sp.csc_matrix(Y_train)
    n, n_labels, n_features = X_train.shape[0], Y_train.shape[1], X_train.shape[1]
    preparing(announce, name, "its copy of the data")
    train = liblinear_binary(liblinearutil, X_train, np.ones(n))
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
        W = class_by_class(fit_label, n_labels, FIT_BUDGETS * budget, done)
        W[done[0]:, -1] = -1.0
        return W[:, :-1], W[:, -1]

    def describe(model):
        coef, intercept = model
        scores = np.asarray(X_test @ coef.T) + intercept
        return _label_set_metrics(Y_test, scores, scores > 0)

    return noted(measure(name, fit, repeat, describe, budget, announce, metrics=3),
                 f"stopped by the budget: {done[0]} of {n_labels} labels fit"
                 if done and done[0] < n_labels else "")


def _fasttext_multilabel(X_train, Y_train, X_test, Y_test, repeat, budget=np.inf,
                         announce=None):
    Y_train = sp.csr_matrix(Y_train)
    test_lines = tokens(sp.csr_matrix(X_test))

    def describe(model):
        labels, proba = model.predict(test_lines, k=-1, threshold=0.0)
        scores = np.zeros(Y_test.shape)
        for i, (words, p) in enumerate(zip(labels, proba)):
            scores[i, [label_index(w) for w in words]] = p
        return _label_set_metrics(Y_test, scores, scores > 0.5)

    lines = [" ".join(f"__label__{j}" for j in Y_train.indices[a:b])
             for a, b in zip(Y_train.indptr[:-1], Y_train.indptr[1:])]
    return fasttext_row(f"fastText supervised (one-vs-all, {FASTTEXT_EPOCHS} epochs)",
                         lines, sp.csr_matrix(X_train), describe, repeat, budget, announce,
                         metrics=3, loss="ova")


def compare_multilabel(repeat, data, budget=np.inf, announce=None):
    """The label-set comparison on a multi-label ``data`` (a :class:`Dataset` whose ``y`` is
    an indicator matrix), as a :data:`Table`."""
    X_train, X_test, Y_train, Y_test = split(data)

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
        rows = _measure_models(_multilabel_models(X_train, Y_train, budget, announce),
                               X_train, Y_train, describe, repeat, budget, announce, metrics=3)
    rows.append(_liblinear_multilabel(X_train, Y_train, X_test, Y_test, repeat, budget,
                                      announce))
    if fasttext_joins(data):
        rows.append(_fasttext_multilabel(X_train, Y_train, X_test, Y_test, repeat, budget,
                                         announce))
    measurements = {r[0]: {"seconds": r[1], "micro_f1": r[2], "precision_at_1": r[3],
                           "mean_labels": r[4]} for r in measured(rows)}
    base = next(r for r in rows if r[0].startswith("scikit-learn OneVsRestClassifier"))
    format_rows(rows, base, {2: "{:.4f}".format, 3: "{:.4f}".format, 4: "{:.2f}".format})
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
                 + f"; {fits_phrase(repeat, budget)}; "
                 + _caps(budget, _fasttext_named(rows), between="LIBLINEAR's between labels"),
                 ["model", "fit time", "test micro-F1", "precision@1", "labels predicted per row",
                  "time / OneVsRest LogisticRegression"], rows, measurements)
