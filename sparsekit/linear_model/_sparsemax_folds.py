"""The data of a SparsemaxClassifierCV fit and its folds: the warm-started path of each
training fold (in memory, in joblib's processes; on a dask cluster, each fold's fits on
the partitions with the fold's weights; on a GPU, each fold's rows sliced there), scored
on the held-out rows, the fits' warnings recorded rather than shown."""
import warnings

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _check_sample_weight, column_or_1d

from ..gpu._cupy import require_cupy
from ..gpu.datafits import is_device_matrix
from ..utils._columns import UsedColumns
from ..utils._threads import Abandoned, as_they_end, jobs_at_once
from ..utils._validation import check_entry_magnitude, validate_input
from ._dask_input import DaskRows
from ._device_input import check_device_X, device_product, host_targets, to_device
from ._sparsemax import SparsemaxClassifier
from ._sparsemax_problem import scale_sums
from ._sparsemax_solvers import fits_at_once


def check_training_folds(y, folds):
    """Two classes or more in every training fold (a fold's model lacks the classes its
    training rows lack, as in a grid search)."""
    y = np.ravel(y)
    for k, (train, _) in enumerate(folds):
        present = np.unique(y[train])
        if present.size < 2:
            what = f"only the class {present[0].tolist()!r}" if present.size else "no sample"
            raise ValueError(f"training fold {k} holds {what}; use fewer folds or a "
                             "stratified cv")


def _path(est, alphas, fit, score, classes):
    """Fit ``est`` (warm_start=True) at each alpha in turn by ``fit(est)``, which returns
    whether the solver converged, and score it by ``score(est)``. The solutions are
    returned with a row for each of ``classes`` (all the data's, for class labels; None
    for 2-D targets): a class absent from the training rows gets zero weights and the
    lowest intercept, as a start for the refit."""
    out = {"scores": np.empty(alphas.size), "n_iter": np.empty(alphas.size, dtype=np.int64),
           "failed": 0}
    for i, alpha in enumerate(alphas):
        out["failed"] += not fit(est.set_params(alpha=float(alpha)))
        out["scores"][i] = score(est)
        out["n_iter"][i] = est.n_iter_
        coef, intercept = est.coef_, est.intercept_
        if classes is not None and est.classes_.size < classes.size:
            rows = np.searchsorted(classes, est.classes_)
            coef = np.zeros((classes.size, coef.shape[1]), dtype=coef.dtype)
            coef[rows] = est.coef_
            intercept = np.full(classes.size, intercept.min(), dtype=intercept.dtype)
            intercept[rows] = est.intercept_
        if i == 0:                        # (n_alphas, n_classes, n_features), X's dtype
            out["coefs"] = np.empty((alphas.size,) + coef.shape, dtype=coef.dtype)
            out["intercepts"] = np.empty((alphas.size,) + intercept.shape,
                                         dtype=intercept.dtype)
        out["coefs"][i], out["intercepts"][i] = coef, intercept
    return out


def held_out_accuracy(est, X, y, sample_weight=None):
    """``est.score(X, y, sample_weight)``, the accuracy of a model of class labels, on
    held-out rows of the X its training rows came from (validated with them): the same
    number without ``predict``'s validation and ``accuracy_score``'s checks of the labels
    (~3 ms a score on an a9a or w8a fold, 50 scores in a default cross-validation)."""
    predicted = est.classes_[est._validated_scores(X).argmax(axis=1)]
    weights = None if sample_weight is None else np.asarray(sample_weight)
    # raveled: a column of labels, (n, 1), would broadcast against the (n,) predictions
    return float(np.average(predicted == np.ravel(y), weights=weights))


def _fold_path(est, X, y, sw, train, test, alphas, scorer, score_params, classes, at_once):
    """:func:`_path` on the ``train`` rows of in-memory data, each fit scored on the
    ``test`` rows (``scorer(est, X_test, y_test, **score_params)``); the warnings of the
    fits are returned (``warnings``, ``failed``), not shown. The training rows are
    validated and encoded once, for all the alphas (``est._problem``); the fits' solvers
    get 1/``at_once`` of the memory (the paths that run at a time)."""
    X_test, y_test = X[test], _safe_indexing(y, test)

    def path():
        problem = est._problem(X[train], _safe_indexing(y, train), sw[train])
        with fits_at_once(at_once):
            return _path(est, alphas, lambda est: est._fit_problem(problem) or True,
                         lambda est: scorer(est, X_test, y_test, **score_params), classes)
    return _recorded(path)


def _recorded(path):
    """``path()``'s result, the warnings its fits raised counted (ConvergenceWarnings:
    ``failed``) and kept (the others: ``warnings``) instead of shown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = path()
    out["failed"] = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    out["warnings"] = [(w.category, str(w.message)) for w in caught
                       if not issubclass(w.category, ConvergenceWarning)]
    return out


class MemoryFolds:
    """In-memory data of a cross-validation: X validated (CSR: the folds take rows), its
    used columns for the paths, the labels and weights; the folds' paths run in joblib's
    processes.

    Sets the estimator's ``n_features_in_`` (and ``feature_names_in_``)."""

    def __init__(self, est, base, X, y, sample_weight):
        X, y = validate_input(est, X, y, accept_sparse=["csr", "csc"],
                              dtype=[np.float64, np.float32], multi_output=True,
                              y_numeric=False)
        if sp.issparse(X):
            X = X.tocsr()
        check_entry_magnitude(X, X.dtype)
        if y.ndim == 2 and y.shape[1] == 1:  # a column of labels: warned here once, not
            y = column_or_1d(y, warn=True)   # again by the refit
        self.splittable, self.y = X, y
        self.sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                  ensure_non_negative=True)
        self.given_weight = None if sample_weight is None else self.sample_weight
        # the paths run on the columns that store an entry (hashed features: 2% of
        # them), as the solvers would, so that their models are that narrow too; a bound
        # may hold an empty column's weight away from 0
        self.columns = UsedColumns(X, keep_all=est.bounds is not None)
        self.refit_input = (X, y, sample_weight)

    def scale_sums(self):
        return scale_sums(self.splittable, self.sample_weight)

    def paths(self, base, folds, held_out, alphas, scorer, classes, n_jobs, abandoned):
        """Each fold's path (:func:`_fold_path`) as it arrives: here, or in joblib's
        processes, which it ends when the fit is interrupted (``abandoned``, the event
        that threads check, is not needed)."""
        X = self.columns.take(self.splittable)
        # a process per fold at most: loky starts as many as n_jobs says (n_jobs=64 on
        # three folds spent 15 s starting processes for a fit of 0.1 s)
        at_once = jobs_at_once(n_jobs, len(folds))
        jobs = (delayed(_fold_path)(clone(base), X, self.y, self.sample_weight, train, test,
                                    alphas, scorer, score_params, classes, at_once)
                for (train, test), score_params in zip(folds, held_out))
        return as_they_end(jobs, n_jobs if n_jobs is None else at_once)


class DaskFolds:
    """The data of a cross-validation on dask arrays: X's row partitions stay on the
    workers, where each fold's fits weigh its training rows (the held-out ones by 0: the
    same objective as on the fold's rows) and the held-out rows' scores under each
    solution are computed. The labels (a number per row, or its 2-D targets) and the
    weights are gathered for the splitter, the folds' checks and the scorer.

    Sets the estimator's ``n_features_in_``."""

    def __init__(self, est, base, X, y, sample_weight):
        base._dask_solver()               # its errors before the data moves
        self.data = data = DaskRows(X, y, sample_weight, [np.float64, np.float32],
                                    targets_2d=True)
        est.__dict__.pop("feature_names_in_", None)
        est.n_features_in_ = data.n_features
        self.y = data.gather(data.y)
        given = None if sample_weight is None else data.gather(data.sample_weight)
        self.sample_weight = _check_sample_weight(given, self.y, dtype=np.float64,
                                                  ensure_non_negative=True)
        self.given_weight = None if sample_weight is None else self.sample_weight
        self.splittable = np.empty((data.n_samples, 0))
        self.columns = UsedColumns(X, keep_all=True)   # as the partitions' datafits
        self.refit_input = (X, y, sample_weight)

    def scale_sums(self):
        return self.data.scale_sums()

    def _fold_weights(self, est, train, classes):
        """(the training fold's classes, each partition's weights on its worker): the
        sample weights times the rows' counts in ``train`` and the class weights of the
        fold's classes, as :class:`SparsemaxClassifier` weighs the fold's rows (2-D
        targets, ``classes`` None: no classes and no class weights)."""
        counts = np.bincount(train, minlength=self.sample_weight.size)
        weights = self.sample_weight * counts
        if classes is None:
            return None, self.data.split(weights)
        codes = np.searchsorted(classes, self.y)
        present = np.bincount(codes, weights=counts, minlength=classes.size) > 0
        totals = np.bincount(codes, weights=weights, minlength=classes.size)
        class_weight = np.zeros(classes.size)
        class_weight[present] = est._class_weights(classes[present], totals[present])
        return classes[present], self.data.split(weights * class_weight[codes])

    def paths(self, base, folds, held_out, alphas, scorer, classes, n_jobs, abandoned):
        """Each fold's path as it arrives; ``n_jobs`` paths at a time, each from a thread
        of the client (a fit waits on the workers, round trip after round trip), which
        ends its fit at the next iteration once the Event ``abandoned`` is set (an
        interrupted fit: it would drive the cluster on to the end of its path). The
        solvers' failures are counted, not warned (warnings are not thread-safe)."""
        X_shown, y_shown, _ = self.refit_input          # what the fits' callbacks see

        def path(train, test, score_params):
            if abandoned.is_set():        # a job that joblib started after the interrupt
                raise Abandoned
            est = clone(base)
            fold_classes, weights = self._fold_weights(est, train, classes)
            X_test, y_test = np.empty((len(test), 0)), self.y[test]

            def score(est):
                scores = self.data.margins(test, est.coef_, est.intercept_)
                return scorer(_HeldOutScores.of(est, scores.astype(self.data.dtype)), X_test,
                              y_test, **score_params)
            def fit(est):
                if classes is None:     # the rows without a label: said by the refit
                    return est._fit_label_sets(self.data, X_shown, y_shown, None, weights,
                                               warn=False, abandoned=abandoned)
                return est._fit_rows(self.data, fold_classes, weights, X_shown, y_shown,
                                     None, warn=False, abandoned=abandoned)
            with fits_at_once(at_once):      # their solvers' arrays are in this process
                out = _path(est, alphas, fit, score, classes)
            out["warnings"] = []
            return out
        at_once = jobs_at_once(n_jobs, len(folds), threads=True)
        jobs = (delayed(path)(train, test, score_params)
                for (train, test), score_params in zip(folds, held_out))
        return Parallel(n_jobs=n_jobs, backend="threading", return_as="generator")(jobs)


class DeviceFolds:
    """The data of a cross-validation on the GPU (a CuPy array or cupyx sparse matrix, or
    host X moved there once): each fold's rows are sliced on the device and its path fit
    there (``device="cuda"``), the held-out rows' scores computed there and scored on the
    host; one fold after another (one device).

    Sets the estimator's ``n_features_in_`` (and what scikit-learn's validation sets for
    host X)."""

    def __init__(self, est, base, X, y, sample_weight):
        if is_device_matrix(X):
            X = check_device_X(X)
            y, self.sample_weight = host_targets(X, y, sample_weight, multi_output=True)
            est.__dict__.pop("feature_names_in_", None)
            est.n_features_in_ = X.shape[1]
            check_entry_magnitude(X, X.dtype)
        else:
            host = MemoryFolds(est, base, X, y, sample_weight)
            X, y, self.sample_weight = to_device(host.splittable), host.y, host.sample_weight
        self.X, self.y = X, y
        self.given_weight = None if sample_weight is None else self.sample_weight
        self.splittable = np.empty((X.shape[0], 0))
        self.columns = UsedColumns(X, keep_all=True)   # as a device fit
        self.refit_input = (X, y, sample_weight)

    def scale_sums(self):
        return scale_sums(self.X, self.sample_weight)

    def paths(self, base, folds, held_out, alphas, scorer, classes, n_jobs, abandoned):
        """Each fold's path as it arrives, one after another on the device, from the
        calling thread (``abandoned``, the event that threads check, is not needed)."""
        cp = require_cupy()
        for (train, test), score_params in zip(folds, held_out):
            X_train, X_test = self.X[cp.asarray(train)], self.X[cp.asarray(test)]
            y_train, y_test = _safe_indexing(self.y, train), _safe_indexing(self.y, test)
            rows = np.empty((len(test), 0))

            def score(est):
                scores = _HeldOutScores.of(est, cp.asnumpy(device_product(
                    X_test, est.coef_, est.intercept_)))
                return scorer(scores, rows, y_test, **score_params)
            def path():           # the fold validated once for its path, as in memory
                est = clone(base)
                problem = est._problem(X_train, y_train, self.sample_weight[train])
                return _path(est, alphas, lambda est: est._fit_problem(problem) or True,
                             score, classes)
            yield _recorded(path)


class _HeldOutScores(SparsemaxClassifier):
    """A fold's model whose held-out scores were computed where the rows are (on a dask
    cluster or a GPU): its predictions and probabilities follow from them, whatever X."""

    @classmethod
    def of(cls, est, scores):
        """The fitted ``est`` with the held-out ``scores``."""
        model = cls(**est.get_params())
        model.__dict__.update(vars(est))
        model.scores = scores
        return model

    def _scores(self, X, keep_on_device=False):
        return self.scores
