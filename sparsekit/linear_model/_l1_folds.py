"""The data of an L1LogisticOBACV fit and its folds: the warm-started paths of each
training fold (in memory, in joblib's processes; on a dask cluster or a GPU, each fold a
datafit on all the rows that weighs its held-out ones by 0), the folds' solutions gathered
path by path, and the held-out rows' models for the scorer."""
import math
import time

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.utils.validation import _check_sample_weight

from sparsekit.gpu._cupy import require_cupy
from sparsekit.gpu.datafits import is_device_matrix
from sparsekit.linear_model._dask_input import DaskRows
from sparsekit.linear_model._device_input import device_product
from sparsekit.linear_model._l1_advice import solve_advice
from sparsekit.linear_model._l1_logistic import L1LogisticOBA
from sparsekit.linear_model._l1_path import warm_path
from sparsekit.linear_model._l1_problems import (binary_block, check_fit_data, dask_layouts,
                                                 device_block, device_layout, layouts,
                                                 multinomial_block, partition_block,
                                                 problem_count, unit_mean_weights)
from sparsekit.utils._columns import UsedColumns
from sparsekit.utils._threads import Abandoned, as_they_end


class FoldPaths:
    """The folds' solutions along the grid, gathered path by path (``add``, fold-major,
    then problem). After ``close``, ``stored`` is an array of ``shape`` (n_folds,
    n_l1_ratios, n_Cs, n_rows, n_dof), the problems' ``span`` rows side by side, or
    (``sparse``) one CSR matrix of that array's rows in order, on the used columns, and
    after ``expand`` ``coefs_paths_``; ``block(f, r, c)`` is one solution as an (n_rows,
    n_dof) array."""

    def __init__(self, shape, span, sparse):
        self._shape, self._span = shape, span
        self.stored = None if sparse else np.empty(shape)
        self._paths = []

    def add(self, f, i, coefs):
        """Fold ``f``'s path of problem ``i``, an (n_l1_ratios, n_Cs, span, n_dof) array."""
        if self.stored is not None:
            self.stored[f, :, :, i * self._span:(i + 1) * self._span] = coefs
        else:                    # (l1_ratio, C, row) rows, nonzeros only
            self._paths.append(sp.csr_matrix(coefs.reshape(-1, coefs.shape[-1])))

    def close(self):
        if self.stored is not None:
            return
        n_folds = self._shape[0]
        n_problems = len(self._paths) // n_folds
        stacked = []
        for f in range(n_folds):  # each problem's rows run (l1_ratio, C): interleave them
            fold = self._paths[f * n_problems:(f + 1) * n_problems]
            rows = fold[0].shape[0]
            order = np.arange(n_problems * rows).reshape(n_problems, rows).T.ravel()
            stacked.append(sp.vstack(fold, format="csr")[order])
        self.stored = sp.vstack(stacked, format="csr")
        self._paths = []

    def expand(self, columns):
        """After ``close``: ``stored`` and the blocks on X's columns (:class:`UsedColumns`
        ``columns``: zeros on the others), the array on the used ones released."""
        self.stored = columns.expand(self.stored)
        self._shape = self._shape[:-1] + (self.stored.shape[-1],)

    def block(self, f, r, c):
        if not sp.issparse(self.stored):
            return self.stored[f, r, c]
        _, n_l1_ratios, n_Cs, n_rows, _ = self._shape
        start = ((f * n_l1_ratios + r) * n_Cs + c) * n_rows
        return self.stored[start:start + n_rows].toarray()


def check_fold(classes, codes, weights, k):
    """A training fold must weigh two classes or more. A class it does not weigh is solved
    like the others, from the datafits' start: zero weights and the intercept of a share
    of 10⁻¹², where its gradient is of that order (its optimum is at −∞)."""
    held = classes[np.bincount(codes, weights=weights, minlength=classes.size) > 0]
    if held.size < 2:
        what = f"only the class {held[0].tolist()!r}" if held.size else "no sample"
        raise ValueError(f"training fold {k} weighs {what}: every training fold needs two "
                         "classes; use fewer folds (cv) or a stratified split")


def _datafit(X, X_csr, offsets, codes, sample_weight, pos, n_classes, fit_intercept,
             scale=1.0):
    """The datafit of class index ``pos`` against the rest, or (``pos`` None) the
    multinomial one, on X whose columns :func:`layouts` may have centered by ``offsets``
    and multiplied by ``scale``."""
    if pos is None:
        return multinomial_block(n_classes, fit_intercept, X, codes, sample_weight,
                                 offsets=offsets, X_csr=X_csr, scale=scale)
    return binary_block(pos, fit_intercept, X, codes, sample_weight, X_csr, offsets,
                        scale=scale)


def _fold_paths(rows, codes, weights, train, problems, n_classes, Cs, l1_ratios,
                fit_intercept, tol, max_iter):
    """The paths of ``problems`` on one training fold (in memory), one after the other
    (a generator): :func:`_paths`' results and the wall seconds of each. The fold's rows
    are laid out once for them, as a fit lays out X for its problems."""
    start = time.perf_counter()
    sample_weight, mean = unit_mean_weights(weights[train])
    X, X_csr, offsets, scale = layouts(rows[train], len(problems), sample_weight,
                                       fit_intercept, rescale=True)
    codes = codes[train]
    for pos in problems:
        datafit = _datafit(X, X_csr, offsets, codes, sample_weight, pos, n_classes,
                           fit_intercept, scale)
        yield (*_paths(datafit, mean / scale, Cs, l1_ratios, tol, max_iter, n_classes,
                       pos is None), time.perf_counter() - start)
        start = time.perf_counter()


def _fold_paths_list(*args):
    """:func:`_fold_paths` as a list (a job of a joblib process)."""
    return list(_fold_paths(*args))


def _paths(datafit, c_factor, Cs, l1_ratios, tol, max_iter, n_classes, multinomial,
           abandoned=None):
    """The warm-started paths of ``datafit`` (the solver's C per unit of the estimator's
    ``c_factor``: its weights' mean over its X's scale), one per l1_ratio: (coefs of
    shape (n_l1_ratios, n_Cs, n_rows, n_features + fit_intercept), iterations of shape
    (n_l1_ratios, n_Cs), numbers of solves that stopped at max_iter and that stalled); run
    in another thread, they end once ``abandoned`` is set (see :func:`warm_path`)."""
    coefs = np.empty((l1_ratios.size, Cs.size, n_classes if multinomial else 1,
                      datafit.n_features + datafit.fit_intercept))
    n_iter, failed = np.empty(coefs.shape[:2], dtype=np.int64), np.zeros(2, dtype=np.int64)
    for r, l1_ratio in enumerate(l1_ratios):
        results = warm_path(datafit, Cs * c_factor, tol, max_iter, l1_ratio, multinomial,
                            coefs[r], abandoned)
        for c, res in enumerate(results):
            n_iter[r, c] = res.nit
            if not res.success:
                failed[int(res.status == 2)] += 1
    return coefs, n_iter, failed


class MemoryFolds:
    """In-memory data of a cross-validation: X's used columns as rows (the folds take
    rows), the labels' codes and weights; the folds' paths run in joblib's processes.

    Sets the estimator's ``classes_`` (and what scikit-learn's validation sets)."""

    def __init__(self, est, X, y, sample_weight):
        X, self.y, self.sample_weight = check_fit_data(est, X, y, sample_weight)
        self.codes = est._encode_labels(self.y)
        self.weights = est._class_weighted(self.sample_weight, self.codes)
        self.columns = UsedColumns(X)
        self.rows = self.columns.take(X.tocsr() if sp.issparse(X) else X)
        self.splittable, self.dtype = self.rows, X.dtype
        self.refit_input = (X, self.y, self.sample_weight)

    def datafits(self, problems, n_classes, fit_intercept):
        """(the problems' datafits on all the rows, one after the other; the weights'
        mean)."""
        sample_weight, mean = unit_mean_weights(self.weights)
        X, X_csr, offsets, _ = layouts(self.rows, len(problems), sample_weight,
                                       fit_intercept)
        return (_datafit(X, X_csr, offsets, self.codes, sample_weight, pos, n_classes,
                         fit_intercept) for pos in problems), mean

    def paths(self, est, folds, problems, Cs, l1_ratios, abandoned):
        """The paths of each training fold and problem, in that order, as they arrive:
        (coefs, iterations, failures, seconds). They run here, or in joblib's processes,
        which it ends when the fit is interrupted (``abandoned``, the event that threads
        check, is not needed)."""
        args = (est.classes_.size, Cs, l1_ratios, est.fit_intercept, est.tol, est.max_iter)
        n_jobs = effective_n_jobs(est.n_jobs)
        if n_jobs == 1:    # path by path as they end, each fold laid out once
            return (result for train, _ in folds
                    for result in _fold_paths(self.rows, self.codes, self.weights, train,
                                              problems, *args))
        # a job per fold and chunk of its problems (the chunk's rows laid out once): about
        # four jobs per process, for the processes to stay busy to the end
        per_fold = min(len(problems), math.ceil(4 * n_jobs / len(folds)))
        chunks = np.array_split(np.arange(len(problems)), per_fold)
        jobs = (delayed(_fold_paths_list)(self.rows, self.codes, self.weights, train,
                                          [problems[i] for i in chunk], *args)
                for train, _ in folds for chunk in chunks)
        return (result for results in as_they_end(jobs, est.n_jobs) for result in results)

    def advice(self):
        """:func:`~sparsekit.linear_model._l1_advice.solve_advice` of X."""
        return solve_advice(self.rows, self.weights)

    def held_out(self, test, blocks, make_model):
        """(model, X) for the scorer, for each path solution of ``blocks`` on the held-out
        rows ``test``."""
        X_test = self.rows[test]                 # sliced once per fold
        for block in blocks:
            yield make_model(block), X_test


class _WeightedFolds:
    """The data of a cross-validation that the client does not hold (on a dask cluster or
    a GPU): each fold's datafit is on all the rows, weighing its training rows by their
    count (the held-out ones by 0: the same objective as on the fold's rows), and the
    held-out rows' margins under the paths' solutions are computed where the rows are.
    The labels and weights, a number per row, are on the host for the splitter, the
    folds' checks and the scorer.

    Subclasses set ``y``, ``codes``, ``sample_weight``, ``weights``, ``columns``,
    ``splittable``, ``dtype``, ``classes``, ``refit_input`` and ``scale`` (the power of two
    the solved X's columns were multiplied by), and define ``_datafit``,
    ``_place`` (the weights where the rows are), ``n_jobs`` (the paths at a time),
    ``held_out`` and ``advice``."""

    def _weights(self, counts=None):
        """(the solver weights where the rows are, the solver's C per unit of the
        estimator's: their mean over all the rows over X's scale), for all the rows or
        ``counts`` times each (a training fold)."""
        weights, mean = unit_mean_weights(self.weights if counts is None
                                          else self.weights * counts)
        return self._place(weights), mean / self.scale

    def datafits(self, problems, n_classes, fit_intercept):
        weights, mean = self._weights()
        return (self._datafit(pos, weights, fit_intercept) for pos in problems), mean

    def paths(self, est, folds, problems, Cs, l1_ratios, abandoned):
        """As :meth:`MemoryFolds.paths`, from threads of the client (a solve waits on the
        workers or the device), which end their solves at the next iteration once the
        Event ``abandoned`` is set (an interrupted fit: they would drive the cluster on to
        the end of their paths)."""
        def path(train, pos):
            if abandoned.is_set():        # a job that joblib started after the interrupt
                raise Abandoned
            start = time.perf_counter()
            counts = np.bincount(train, minlength=self.y.size).astype(np.float64)
            weights, mean = self._weights(counts)
            datafit = self._datafit(pos, weights, est.fit_intercept)
            return (*_paths(datafit, mean, Cs, l1_ratios, est.tol, est.max_iter,
                            self.classes.size, pos is None, abandoned),
                    time.perf_counter() - start)
        jobs = (delayed(path)(train, pos) for train, _ in folds for pos in problems)
        return Parallel(n_jobs=self.n_jobs(est), backend="threading",
                        return_as="generator")(jobs)


class DaskFolds(_WeightedFolds):
    """Dask arrays: X's row partitions stay on the workers, where the folds' datafits
    and the held-out margins are computed; ``n_jobs`` paths at a time.

    Sets the estimator's ``classes_`` and ``n_features_in_``."""

    #: bytes of held-out margins gathered at a time (the solutions are sent in chunks)
    MARGIN_BYTES = 1 << 28

    def __init__(self, est, X, y, sample_weight):
        self.data = data = DaskRows(X, y, sample_weight, [np.float64, np.float32])
        est.__dict__.pop("feature_names_in_", None)
        est.n_features_in_ = data.n_features
        self.y = data.gather(data.y)
        self.codes = est._encode_labels(self.y)
        given = None if sample_weight is None else data.gather(data.sample_weight)
        self.sample_weight = _check_sample_weight(given, self.y, dtype=np.float64,
                                                  ensure_non_negative=True)
        self.weights = est._class_weighted(self.sample_weight, self.codes)
        self.columns = UsedColumns(X, keep_all=True)   # as the partitions' datafits
        self.splittable = np.empty((data.n_samples, 0))
        self.dtype, self.classes = data.dtype, est.classes_
        self.refit_input = (X, y, sample_weight)
        self.parts, self.offsets, self.scale = dask_layouts(
            data, problem_count(est.multiclass, est.classes_.size), data.split(self.weights),
            est.fit_intercept)

    @staticmethod
    def n_jobs(est):
        return est.n_jobs

    def _place(self, weights):
        return self.data.split(weights)

    def advice(self):
        """:func:`~sparsekit.linear_model._l1_advice.solve_advice` of X's partitions."""
        return solve_advice(self.data, self.data.split(self.weights))

    def _datafit(self, pos, weights, fit_intercept):
        """The datafit of problem ``pos`` (None: multinomial) over the partitions, with the
        partitions' solver ``weights``."""
        return self.data.datafit(partition_block(pos, self.classes.size, fit_intercept),
                                 self.classes, weights=weights, parts=self.parts,
                                 offsets=self.offsets, scale=self.scale)

    def held_out(self, test, blocks, make_model):
        """As :meth:`MemoryFolds.held_out`; the models return the margins computed on
        the workers, whatever X (a placeholder with as many rows as ``test``)."""
        X_test = np.empty((len(test), 0))
        chunk = []
        for block in blocks:
            model = make_model(block, kind=_HeldOutMargins)
            model.coef_ = sp.csr_matrix(model.coef_)
            chunk.append(model)
            if len(test) * 8 * model.coef_.shape[0] * (len(chunk) + 1) > self.MARGIN_BYTES:
                yield from self._score_chunk(test, chunk, X_test)
                chunk = []
        yield from self._score_chunk(test, chunk, X_test)

    def _score_chunk(self, test, models, X_test):
        if not models:
            return
        margins = self.data.margins(test, sp.vstack([m.coef_ for m in models]),
                                    np.concatenate([m.intercept_ for m in models]))
        start = 0
        for model in models:
            rows = model.coef_.shape[0]
            model.margins = margins[:, start:start + rows].astype(self.dtype)
            start += rows
            yield model, X_test


class DeviceFolds(_WeightedFolds):
    """X on the GPU (a CuPy array or cupyx sparse matrix, or host X moved there once) laid
    out once (:func:`device_layout`: host X in place, so that the device holds one copy of
    it, and the refit moves it again after the folds): the folds' datafits are the device
    datafits of :class:`L1LogisticOBA`, the held-out margins device products of the solved
    X; the paths run one after another (one device).

    Sets the estimator's ``classes_``, ``n_features_in_`` (and what scikit-learn's
    validation sets for host X)."""

    def __init__(self, est, X, y, sample_weight):
        owned = not is_device_matrix(X)                # moved to the device by this fit
        given = X
        X, self.y, self.sample_weight = est._device_fit_data(X, y, sample_weight)
        self.codes = est._encode_labels(self.y)
        self.weights = est._class_weighted(self.sample_weight, self.codes)
        self.columns = UsedColumns(X, keep_all=True)   # as the device datafits
        self.splittable = np.empty((X.shape[0], 0))
        self.dtype, self.classes = X.dtype, est.classes_
        self.shared = {}                               # X's squares, for every datafit
        self.refit_input = (given if owned else X, self.y, self.sample_weight)
        self.X, self.offsets, self.scale = device_layout(X, self.weights, est.fit_intercept,
                                                         owned)

    @staticmethod
    def n_jobs(est):
        return 1

    @staticmethod
    def _place(weights):
        return weights

    def advice(self):
        """:func:`~sparsekit.linear_model._l1_advice.solve_advice` of the solved X (in the
        user's units), on the device."""
        return solve_advice(self.X, self.weights, self.scale)

    def _datafit(self, pos, weights, fit_intercept):
        return device_block(self.classes.size, fit_intercept, self.X, self.codes, weights,
                            self.shared, pos, offsets=self.offsets, scale=self.scale)

    def held_out(self, test, blocks, make_model):
        """As :meth:`MemoryFolds.held_out`; the models return their margins on the
        held-out rows, computed on the device from the solved X (X less its offsets, times
        its scale: the model's weights over the scale, its intercepts plus the offsets'
        margins), whatever X (a placeholder with as many rows as ``test``)."""
        cp = require_cupy()
        rows = self.X[cp.asarray(test)]                # sliced once per fold
        X_test = np.empty((len(test), 0))
        for block in blocks:
            model = make_model(block, kind=_HeldOutMargins)
            coef, intercept = model.coef_, model.intercept_
            if self.offsets is not None:
                intercept = intercept + np.asarray(coef @ self.offsets).ravel()
            margins = device_product(rows, coef / self.scale, intercept)
            model.margins = cp.asnumpy(margins).astype(self.dtype, copy=False)
            yield model, X_test


class _HeldOutMargins(L1LogisticOBA):
    """A fold's model whose held-out margins were computed where the rows are (on a
    dask cluster or a GPU): ``decision_function`` returns them; predictions and probabilities
    follow from them as from any :class:`L1LogisticOBA`'s."""

    def decision_function(self, X):
        return self.margins.ravel() if self.margins.shape[1] == 1 else self.margins
