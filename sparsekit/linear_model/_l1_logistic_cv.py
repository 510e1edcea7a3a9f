"""Cross-validated ℓ1 logistic regression: the C (and elastic-net mixing) of
:class:`~sparsekit.L1LogisticOBA` chosen on warm-started regularization paths, one per
training fold, as scikit-learn's ``LogisticRegressionCV`` does for its solvers."""
import math
import numbers
import time
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.callback import with_callbacks
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight

from sparsekit.gpu._cupy import require_cupy
from sparsekit.linear_model._base import unchanged_on_error
from sparsekit.linear_model._dask_input import DaskRows, is_dask_collection
from sparsekit.linear_model._device_input import device_product, fit_device
from sparsekit.linear_model._l1_advice import max_iter_advice, solve_advice, stall_advice
from sparsekit.linear_model._l1_logistic import L1LogisticOBA
from sparsekit.linear_model._l1_path import C_values, smallest_active_C, warm_path
from sparsekit.linear_model._l1_problems import (binary_block, check_fit_data, dask_layouts,
                                                 device_block, device_layout, layouts,
                                                 multinomial_block, multinomial_within_memory,
                                                 partition_block, problem_count,
                                                 unit_mean_weights)
from sparsekit.linear_model._routing import CVRoutingMixin
from sparsekit.utils._columns import UsedColumns
from sparsekit.utils._threads import (Abandoned, abandoned_on_error, as_they_end,
                                      jobs_at_once)
from sparsekit.utils._validation import check_dense_size


class L1LogisticOBACV(CVRoutingMixin, L1LogisticOBA):
    """Logistic regression with an ℓ1 (or elastic-net) penalty, C chosen by cross-validation.

    For each training fold, :class:`L1LogisticOBA`'s problem is solved along the whole grid
    of ``Cs``, from the smallest C up, each solve started at the previous solution (the
    path of :func:`l1_logistic_path`); every solution is scored on the fold's held-out
    rows, and the C (and ``l1_ratio``) with the best mean score is refitted on all the data,
    started at the mean of the folds' solutions. This is scikit-learn's
    ``LogisticRegressionCV`` for the ℓ1 and elastic-net penalties; a warm-started path costs
    a few cold fits, where a grid search refits every C from zero.

    Read more in the :ref:`User Guide <l1_logistic>`.

    Parameters
    ----------
    Cs : int or array-like, default=10
        The values of C, or their number: then log-spaced on [C_min, 10⁴ C_min], where
        C_min, computed on all the data, is the smallest C with a nonzero coefficient (for
        ``l1_ratios`` below 1 the grid reaches from the smallest ratio's C_min to 10⁴ times
        the largest's).
    l1_ratios : array-like of float in (0, 1], default=(1.0,)
        Elastic-net mixings to search together with ``Cs`` (see :class:`L1LogisticOBA`);
        1 is the ℓ1 penalty.
    cv : int, cross-validation generator or iterable, default=None
        As in scikit-learn: None is 5-fold, an integer the number of folds (stratified);
        a group splitter such as ``GroupKFold`` takes its ``groups`` through metadata
        routing (see :meth:`fit`).
    scoring : str, callable or None, default="neg_log_loss"
        What to maximize on the held-out rows: a scikit-learn scorer name, a callable
        ``scorer(estimator, X, y)``, or None for accuracy. The default is the log
        loss of ``predict_proba``, a proper scoring rule (scikit-learn's
        ``LogisticRegressionCV`` moves to it in version 1.11). Ties go to the smaller C, the
        sparser model. :meth:`score` scores with it too, as ``LogisticRegressionCV.score``.
    tol : float, default=1e-8
        As in :class:`L1LogisticOBA`, for each solve of a path and for the refit.
    max_iter : int, default=500
        As in :class:`L1LogisticOBA`, for each solve.
    fit_intercept : bool, default=True
        As in :class:`L1LogisticOBA`.
    class_weight : dict, "balanced" or None, default=None
        As in :class:`L1LogisticOBA`; ``"balanced"`` is computed on all the data, for every
        fold.
    n_jobs : int, default=None
        Processes for the paths, each job a fold's binary problems or a share of them
        (joblib; X is shared through memory maps; the first parallel fit of a session
        starts the workers, about a second), and threads for the refit as in
        :class:`L1LogisticOBA`.
        None means 1 unless in a :func:`joblib.parallel_backend` context, -1 all
        processors. On dask input, threads of the client instead, each driving one path's
        solves on the cluster (an interrupted fit, KeyboardInterrupt, ends them at their
        next iteration); with ``device="cuda"`` the paths run one after another.
    verbose : int, default=0
        As in :class:`L1LogisticOBA`; 1 or more also prints a line per fold path (solves,
        OBA iterations, seconds) and the choice before the refit.
    refit : bool, default=True
        Refit the best (C, l1_ratio) on all the data. Without refit, the model is the mean
        of the folds' solutions at each fold's best grid point, and ``C_``, ``l1_ratio_``
        the means of those points (as scikit-learn does).
    sparse_coef : bool, default=False
        As in :class:`L1LogisticOBA`; also stores ``coefs_paths_`` as a sparse matrix.
    multiclass : {"ovr", "multinomial"}, default="ovr"
        As in :class:`L1LogisticOBA`.
    device : {"cpu", "cuda"}, default="cpu"
        As in :class:`L1LogisticOBA`: ``"cuda"`` solves every fold's path and the refit
        on the current GPU with CuPy (X given as a CuPy array or a cupyx sparse matrix
        needs it; host X is copied there once). Each fold's problem is the data's,
        weighing the fold's training rows (the held-out ones by 0), so X is not sliced
        per fold; the held-out rows' margins are device products, scored on the host. The
        paths run one after another.

    Attributes
    ----------
    C_ : float
        The chosen C. This and the attributes below have the shapes of scikit-learn's
        ``LogisticRegressionCV`` with ``use_legacy_attributes=False`` (its default from
        version 1.10): a float, not C repeated per class.
    l1_ratio_ : float
        The chosen elastic-net mixing.
    Cs_ : ndarray of shape (n_Cs,)
        The grid of C, in increasing order.
    l1_ratios_ : ndarray of shape (n_l1_ratios,)
    scores_ : ndarray of shape (n_folds, n_l1_ratios, n_Cs)
        The held-out score of every fold and grid point.
    coefs_paths_ : ndarray of shape (n_folds, n_l1_ratios, n_Cs, n_rows, n_features + \
            fit_intercept), or csr_matrix
        The folds' solutions, the intercept last; n_rows is 1 for two classes, else the
        number of classes. With ``sparse_coef=True`` a CSR matrix of shape (n_folds ×
        n_l1_ratios × n_Cs × n_rows, n_features + fit_intercept), rows in that order (its
        ``toarray()`` reshapes to the array): the array's size is the product of all those
        numbers, too large for wide data with many classes, where the nonzeros are few (a
        dense array larger than half the machine's memory is refused before the fit starts,
        with its size).
    n_iter_ : ndarray of shape (n_folds, n_l1_ratios, n_Cs)
        OBA iterations of each path solve (summed over the one-vs-rest problems).
    coef_, intercept_, classes_, optimality_, duality_gap_, corrective_loops_
        The model, as in :class:`L1LogisticOBA`; without refit ``optimality_`` and
        ``duality_gap_`` are NaN and ``corrective_loops_`` empty (no solve made the mean).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    L1LogisticOBA : The model at one C.
    l1_logistic_path : The solutions along a grid of C on one data set.

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 2 (OBA, Algorithms 1 and 2).
    .. [2] Friedman, J., Hastie, T. & Tibshirani, R. (2010). Regularization paths for
       generalized linear models via coordinate descent. Journal of Statistical Software
       33(1), 1-22 (warm-started paths from the smallest C, chosen by cross-validation).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekit import L1LogisticOBACV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = L1LogisticOBACV(Cs=8).fit(X, y)
    >>> clf.scores_.shape          # 5 folds, one l1_ratio, 8 values of C
    (5, 1, 8)
    >>> round(clf.C_, 3), int((clf.coef_ != 0).sum())
    (0.884, 17)
    >>> round(clf.score(X, y), 3)  # the scoring's: the negative mean log loss
    -0.055
    """

    _parameter_constraints = {
        **{key: L1LogisticOBA._parameter_constraints[key]
           for key in ("tol", "max_iter", "fit_intercept", "class_weight", "n_jobs",
                       "verbose", "sparse_coef", "multiclass", "device")},
        "Cs": [Interval(numbers.Integral, 1, None, closed="left"), "array-like"],
        "l1_ratios": ["array-like"],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "refit": ["boolean"],
    }

    def __init__(self, Cs=10, *, l1_ratios=(1.0,), cv=None, scoring="neg_log_loss", tol=1e-8,
                 max_iter=500, fit_intercept=True, class_weight=None, n_jobs=None, verbose=0,
                 refit=True, sparse_coef=False, multiclass="ovr", device="cpu"):
        self.Cs = Cs
        self.l1_ratios = l1_ratios
        self.cv = cv
        self.scoring = scoring
        self.tol = tol
        self.max_iter = max_iter
        self.fit_intercept = fit_intercept
        self.class_weight = class_weight
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.refit = refit
        self.sparse_coef = sparse_coef
        self.multiclass = multiclass
        self.device = device

    @property
    def penalty(self):
        """The penalty's name: ``"l1"``, or ``"elasticnet"`` when the chosen ``l1_ratio_`` < 1.

        Read-only; before the fit, ``"l1"`` when every one of ``l1_ratios`` is 1. scikit-learn's
        :class:`~sklearn.feature_selection.SelectFromModel` reads it: with ``"l1"`` its
        default threshold keeps the features of nonzero weight.
        """
        ratios = getattr(self, "l1_ratio_", self.l1_ratios)
        return "l1" if np.all(np.asarray(ratios) == 1) else "elasticnet"

    @unchanged_on_error
    @with_callbacks
    def fit(self, X, y, sample_weight=None, **params):
        """Cross-validate the grid on X and labels y, then fit the chosen model.

        scikit-learn's callbacks see one subtask per path (fold and binary problem) and one
        for the refit.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, float32 or float64 (``coef_`` follows its dtype); or a dask
            array of such row blocks, or a dask DataFrame, as in :class:`L1LogisticOBA`:
            each fold's paths are solved on the workers of the default
            ``distributed.Client``, where the partitions are, weighing the fold's training
            rows (the held-out ones by 0: the same problem), and the held-out rows' margins
            under every solution come back to be scored (the scorer's model returns them;
            the X it is given is a placeholder with as many rows). The labels and weights
            are gathered on the client for the splitter and the scorer; X never is. With
            ``device="cuda"``, a CuPy array or cupyx sparse matrix (or host X, copied to
            the GPU), cross-validated there the same way.
        y : array-like of shape (n_samples,)
            Class labels, two classes or more in every training fold. A class that a
            training fold does not hold (rarer than the folds, or weighted 0 there) gets
            zero weights in that fold's models and the intercept of a share of 10⁻¹² (its
            optimum is at −∞, with no sample): its probability is about 0, as in the
            model a grid search fits on that fold, which lacks the class.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows' loss terms, in the folds and in the refit,
            and of the held-out rows' scores (when the scorer takes ``sample_weight``, as
            scikit-learn's do), as in scikit-learn's ``LogisticRegressionCV``.
        **params : dict
            Only with scikit-learn's metadata routing enabled
            (``sklearn.set_config(enable_metadata_routing=True)``): metadata for the
            splitter, such as ``groups`` for a ``GroupKFold`` ``cv``, and for the scorer;
            ``sample_weight`` too then goes to the scorer only if it requests it.

        Returns
        -------
        self : L1LogisticOBACV
            The fitted estimator.
        """
        self._validate_params()
        on_device = fit_device(self.device, X)
        if on_device and is_dask_collection(X):
            raise ValueError("device='cuda' cross-validates in-memory X; use device='cpu' "
                             "for dask arrays")
        data = (_DeviceFolds if on_device else _DaskFolds if is_dask_collection(X)
                else _MemoryFolds)(self, X, y, sample_weight)
        classes = self.classes_
        scorer = _scorer(self.scoring, classes)
        given = None if sample_weight is None else data.sample_weight   # checked
        folds, held_out = self._routed_folds(data.splittable, data.y, given, params, scorer)
        multinomial = self.multiclass == "multinomial" and classes.size > 2
        problems = [None] if multinomial else [1] if classes.size == 2 else list(
            range(classes.size))
        l1_ratios = _checked_l1_ratios(self.l1_ratios)
        Cs = self._grid(data, problems, l1_ratios)
        for k, (train, _) in enumerate(folds):
            _check_fold(classes, data.codes[train], data.weights[train], k)
        span = classes.size if multinomial else 1           # a problem's rows
        shape = (len(folds), l1_ratios.size, Cs.size, span * len(problems))
        if not self.sparse_coef:     # filled as the paths arrive: refused before they start
            check_dense_size("coefs_paths_", list(zip(
                ("folds", "l1_ratios", "Cs", "rows", "columns"),
                shape + (self.n_features_in_ + self.fit_intercept,))), 8,
                "pass sparse_coef=True, which stores its nonzeros (and the model's)")
        if multinomial:     # the folds' paths at a time (processes, or the client's threads
            # on dask; the refit alone later), each path's solutions arriving as one dense
            # array, beside the folds' solutions; all the rows each (a fold's solves use fewer)
            at_once = 1 if on_device else jobs_at_once(self.n_jobs, len(folds),
                                                       threads=is_dask_collection(X))
            path = l1_ratios.size * Cs.size
            multinomial_within_memory(
                data.codes.size, data.columns.n_used, classes.size, self.fit_intercept,
                kept=path * (at_once + (0 if self.sparse_coef else len(folds))),
                solves=at_once)
        context = self._begin_fit_task(X, y, len(folds) * len(problems) + self.refit,
                                       sample_weight)
        # paths and scores run on the used columns; coefs_paths_ and the model get all of X's
        solutions, n_iter = self._solve_fold_paths(context, data, folds, problems, Cs,
                                                   l1_ratios, shape, span,
                                                   (X, y, sample_weight))
        scores = self._held_out_scores(data, folds, held_out, solutions, scorer, n_iter.shape,
                                       multinomial)
        self.Cs_, self.l1_ratios_, self.scores_ = Cs, l1_ratios, scores
        solutions.expand(data.columns)      # one copy of the solutions beside the refit
        self.coefs_paths_, self.n_iter_ = solutions.stored, n_iter
        best = f"mean held-out score {scores.mean(axis=0).max():.6g} over {len(folds)} folds"
        if self.refit:
            r, c = np.unravel_index(np.argmax(scores.mean(axis=0)), scores.shape[1:])
            self._say(f"C = {Cs[c]:.4g}, l1_ratio = {l1_ratios[r]:g}: {best}; refit on all "
                      "the data")
            task = self._begin_subtask(context, "refit", X, y, sample_weight)
            start = np.mean([solutions.block(f, r, c) for f in range(len(folds))], axis=0)
            self._refit(*data.refit_input, Cs[c], l1_ratios[r], start, multinomial)
            self._end_subtask(task, X, y, sample_weight)
        else:
            self._average_best(solutions, data.dtype, multinomial)
            self._say(f"C = {self.C_:.4g}, l1_ratio = {self.l1_ratio_:g} (the folds' best "
                      f"points averaged): {best}")
        self._end_fit_task(context, X, y, sample_weight)
        return self

    def _solve_fold_paths(self, context, data, folds, problems, Cs, l1_ratios, shape, span,
                          shown):
        """(the folds' solutions as :class:`_FoldPaths` of ``shape`` and ``span`` rows a
        problem, their OBA iterations a fold, l1_ratio and C): each fold's path of each
        problem, a subtask of the callbacks' ``context`` (``shown``: the X, y and
        sample_weight given to fit), as
        ``data`` solves them; one ConvergenceWarning for the solves that reached
        ``max_iter``, one for those that stalled."""
        classes = self.classes_
        solutions = _FoldPaths(shape + (data.columns.n_used + self.fit_intercept,), span,
                               self.sparse_coef)
        n_iter = np.zeros((len(folds), l1_ratios.size, Cs.size), dtype=np.int64)
        failed = np.zeros(2, dtype=np.int64)    # solves at max_iter, solves that stalled
        with abandoned_on_error() as abandoned:
            done = data.paths(self, folds, problems, Cs, l1_ratios, abandoned)
            for j, (coefs, path_iter, path_failed, seconds) in enumerate(done):
                k, i = divmod(j, len(problems))
                task = self._begin_subtask(context, "fold path", *shown)
                solutions.add(k, i, coefs)
                n_iter[k] += path_iter
                failed += path_failed
                pos = problems[i]
                problem = ("" if pos is None or classes.size == 2
                           else f", class {np.asarray(classes[pos]).tolist()!r}")
                self._say(f"fold {k + 1}/{len(folds)}{problem}: {path_iter.size} solves, "
                          f"{int(path_iter.sum())} OBA iterations, {seconds:.2f} s")
                self._end_subtask(task, *shown)
        solutions.close()
        solves = n_iter.size * len(problems)
        found = data.advice() if failed.any() else None
        if failed[0]:
            warnings.warn(f"OBA did not converge in {self.max_iter} iterations for "
                          f"{failed[0]} of the {solves} solves of the folds' paths; "
                          f"{max_iter_advice(found)}.", ConvergenceWarning)
        if failed[1]:
            warnings.warn(f"OBA stalled in {failed[1]} of the {solves} solves of the folds' "
                          f"paths: {stall_advice(found)}.", ConvergenceWarning)
        return solutions, n_iter

    def _held_out_scores(self, data, folds, held_out, solutions, scorer, shape, multinomial):
        """The ``scorer``'s score of each fold's model at each (l1_ratio, C), an array of
        ``shape`` (folds, l1_ratios, Cs), on the fold's held-out rows (with the scorer's
        arguments ``held_out``)."""
        scores = np.empty(shape)
        for f, (_, test) in enumerate(folds):
            points = list(np.ndindex(scores.shape[1:]))
            models = data.held_out(test, (solutions.block(f, r, c) for r, c in points),
                                   partial(self._fold_model, dtype=data.dtype,
                                           multinomial=multinomial))
            for (model, X_test), (r, c) in zip(models, points):   # models run to their end
                scores[f, r, c] = scorer(model, X_test, data.y[test], **held_out[f])
        return scores

    def _grid(self, data, problems, l1_ratios):
        """The C values to cross-validate, increasing (see ``Cs``)."""
        def span():
            datafits, mean = data.datafits(problems, self.classes_.size, self.fit_intercept)
            c_min = min(smallest_active_C(datafit) for datafit in datafits) / mean
            return c_min * l1_ratios.min(), c_min * l1_ratios.max()
        return np.unique(C_values(self.Cs, span))

    def _fold_model(self, block, dtype, multinomial, kind=L1LogisticOBA):
        """An :class:`L1LogisticOBA` (or its subclass ``kind``) holding the path's solution
        ``block`` (its rows' coefficients on the used columns, the intercept last), for the
        scorer."""
        model = kind(multiclass=self.multiclass)
        n_features = block.shape[1] - self.fit_intercept
        model.classes_, model.n_features_in_ = self.classes_, n_features
        model.coef_ = block[:, :n_features].astype(dtype)
        model.intercept_ = (block[:, n_features] if self.fit_intercept
                            else np.zeros(block.shape[0])).astype(dtype)
        if self.sparse_coef:
            model.coef_ = sp.csr_matrix(model.coef_)
        model._softmax = multinomial
        return model

    def _average_best(self, solutions, dtype, multinomial):
        """Without refit: the model is the mean of the folds' solutions (on X's columns) at
        each fold's best grid point, C_ and l1_ratio_ the means of those points."""
        best = [np.unravel_index(np.argmax(s), s.shape) for s in self.scores_]
        self.C_ = float(np.mean([self.Cs_[c] for _, c in best]))
        self.l1_ratio_ = float(np.mean([self.l1_ratios_[r] for r, _ in best]))
        model = self._fold_model(np.mean([solutions.block(f, r, c)
                                          for f, (r, c) in enumerate(best)], axis=0),
                                 dtype, multinomial)
        for name in ("coef_", "intercept_", "_softmax"):
            setattr(self, name, getattr(model, name))
        n_rows = self.intercept_.size
        self.optimality_ = self.duality_gap_ = np.full(n_rows, np.nan)
        self.corrective_loops_ = [np.zeros(0, dtype=np.int64)] * n_rows

    def _refit(self, X, y, sample_weight, C, l1_ratio, start, multinomial):
        """Fit the model at (C, l1_ratio) on all the data, started at ``start``."""
        self.C_, self.l1_ratio_ = float(C), float(l1_ratio)
        est = L1LogisticOBA(C=self.C_, tol=self.tol, max_iter=self.max_iter,
                            fit_intercept=self.fit_intercept, warm_start=True,
                            class_weight=self.class_weight, n_jobs=self.n_jobs,
                            verbose=self.verbose, sparse_coef=self.sparse_coef,
                            multiclass=self.multiclass, l1_ratio=self.l1_ratio_,
                            device=self.device)
        n_features = self.n_features_in_
        est.coef_ = start[:, :n_features]
        est.intercept_ = start[:, n_features] if self.fit_intercept else np.zeros(len(start))
        est._softmax = multinomial
        est.fit(X, y, sample_weight)
        for name in ("coef_", "intercept_", "_softmax", "optimality_", "duality_gap_",
                     "corrective_loops_"):
            setattr(self, name, getattr(est, name))


def _scorer(scoring, classes):
    """scikit-learn's scorer for ``scoring``; for the log loss, its value computed here from
    ``predict_log_proba`` (the probabilities clipped to [eps, 1 − eps], as scikit-learn
    does; weighted by ``sample_weight`` as there), without the label checks that cost more
    than the scoring on every grid point, and for every class, so that a held-out fold
    without some class is scored rather than refused."""
    if scoring != "neg_log_loss":
        return check_scoring(L1LogisticOBA(), scoring=scoring)

    def neg_log_loss(model, X, y, sample_weight=None):
        log_proba = model.predict_log_proba(X)
        eps = np.finfo(log_proba.dtype).eps
        picked = log_proba[np.arange(len(y)), np.searchsorted(classes, y)]
        return float(np.average(np.clip(picked.astype(np.float64), np.log(eps),
                                        np.log1p(-eps)), weights=sample_weight))
    return neg_log_loss


class _FoldPaths:
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


def _checked_l1_ratios(l1_ratios):
    """``l1_ratios`` as an increasing array of distinct values in (0, 1]."""
    ratios = np.asarray(l1_ratios, dtype=np.float64).ravel()
    if ratios.size == 0 or not np.all((ratios > 0) & (ratios <= 1)):
        raise ValueError(f"l1_ratios must hold numbers in (0, 1], got {l1_ratios!r}")
    return np.unique(ratios)


def _check_fold(classes, codes, weights, k):
    """A training fold must weigh two classes or more. A class it does not weigh is solved
    like the others, from the datafits' start: zero weights and the intercept of a share
    of 10⁻¹², where its gradient is of that order (its optimum is at −∞)."""
    held = classes[np.bincount(codes, weights=weights, minlength=classes.size) > 0]
    if held.size < 2:
        what = f"only the class {held[0].tolist()!r}" if held.size else "no sample"
        raise ValueError(f"training fold {k} weighs {what}: every training fold needs two "
                         "classes; use fewer folds (cv) or a stratified split")


def _datafit(X, X_csr, offsets, codes, sample_weight, pos, n_classes, fit_intercept):
    """The datafit of class index ``pos`` against the rest, or (``pos`` None) the
    multinomial one, on X whose columns :func:`layouts` may have centered by ``offsets``."""
    if pos is None:
        return multinomial_block(n_classes, fit_intercept, X, codes, sample_weight,
                                 offsets=offsets, X_csr=X_csr)
    return binary_block(pos, fit_intercept, X, codes, sample_weight, X_csr, offsets)


def _fold_paths(rows, codes, weights, train, problems, n_classes, Cs, l1_ratios,
                fit_intercept, tol, max_iter):
    """The paths of ``problems`` on one training fold (in memory), one after the other
    (a generator): :func:`_paths`' results and the wall seconds of each. The fold's rows
    are laid out once for them, as a fit lays out X for its problems."""
    start = time.perf_counter()
    sample_weight, mean = unit_mean_weights(weights[train])
    X, X_csr, offsets = layouts(rows[train], len(problems), sample_weight, fit_intercept)
    codes = codes[train]
    for pos in problems:
        datafit = _datafit(X, X_csr, offsets, codes, sample_weight, pos, n_classes,
                           fit_intercept)
        yield (*_paths(datafit, mean, Cs, l1_ratios, tol, max_iter, n_classes, pos is None),
               time.perf_counter() - start)
        start = time.perf_counter()


def _fold_paths_list(*args):
    """:func:`_fold_paths` as a list (a job of a joblib process)."""
    return list(_fold_paths(*args))


def _paths(datafit, mean, Cs, l1_ratios, tol, max_iter, n_classes, multinomial,
           abandoned=None):
    """The warm-started paths of ``datafit`` (its weights over their ``mean``), one per
    l1_ratio: (coefs of shape (n_l1_ratios, n_Cs, n_rows, n_features + fit_intercept),
    iterations of shape (n_l1_ratios, n_Cs), numbers of solves that stopped at max_iter
    and that stalled); run in another thread, they end once ``abandoned`` is set (see
    :func:`warm_path`)."""
    coefs = np.empty((l1_ratios.size, Cs.size, n_classes if multinomial else 1,
                      datafit.n_features + datafit.fit_intercept))
    n_iter, failed = np.empty(coefs.shape[:2], dtype=np.int64), np.zeros(2, dtype=np.int64)
    for r, l1_ratio in enumerate(l1_ratios):
        results = warm_path(datafit, Cs * mean, tol, max_iter, l1_ratio, multinomial,
                            coefs[r], abandoned)
        for c, res in enumerate(results):
            n_iter[r, c] = res.nit
            if not res.success:
                failed[int(res.status == 2)] += 1
    return coefs, n_iter, failed


class _MemoryFolds:
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
        X, X_csr, offsets = layouts(self.rows, len(problems), sample_weight, fit_intercept)
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
        """:func:`~sparsekit.linear_model._l1_logistic.solve_advice` of X."""
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
    ``splittable``, ``dtype``, ``classes`` and ``refit_input``, and define ``_datafit``,
    ``_place`` (the weights where the rows are), ``n_jobs`` (the paths at a time),
    ``held_out`` and ``advice``."""

    def _weights(self, counts=None):
        """(the solver weights where the rows are, their mean over all the rows), for all
        the rows or ``counts`` times each (a training fold)."""
        weights, mean = unit_mean_weights(self.weights if counts is None
                                          else self.weights * counts)
        return self._place(weights), mean

    def datafits(self, problems, n_classes, fit_intercept):
        weights, mean = self._weights()
        return (self._datafit(pos, weights, fit_intercept) for pos in problems), mean

    def paths(self, est, folds, problems, Cs, l1_ratios, abandoned):
        """As :meth:`_MemoryFolds.paths`, from threads of the client (a solve waits on the
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


class _DaskFolds(_WeightedFolds):
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
        self.parts, self.offsets = dask_layouts(
            data, problem_count(est.multiclass, est.classes_.size), data.split(self.weights),
            est.fit_intercept)

    @staticmethod
    def n_jobs(est):
        return est.n_jobs

    def _place(self, weights):
        return self.data.split(weights)

    def advice(self):
        """:func:`~sparsekit.linear_model._l1_logistic.solve_advice` of X's partitions."""
        return solve_advice(self.data, self.data.split(self.weights))

    def _datafit(self, pos, weights, fit_intercept):
        """The datafit of problem ``pos`` (None: multinomial) over the partitions, with the
        partitions' solver ``weights``."""
        return self.data.datafit(partition_block(pos, self.classes.size, fit_intercept),
                                 self.classes, weights=weights, parts=self.parts,
                                 offsets=self.offsets)

    def held_out(self, test, blocks, make_model):
        """As :meth:`_MemoryFolds.held_out`; the models return the margins computed on
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


class _DeviceFolds(_WeightedFolds):
    """X on the GPU (a CuPy array or cupyx sparse matrix, or host X moved there once): the
    folds' datafits are the device datafits of :class:`L1LogisticOBA`, the held-out
    margins device products; the paths run one after another (one device).

    Sets the estimator's ``classes_``, ``n_features_in_`` (and what scikit-learn's
    validation sets for host X)."""

    def __init__(self, est, X, y, sample_weight):
        X, self.y, self.sample_weight = est._device_fit_data(X, y, sample_weight)
        self.codes = est._encode_labels(self.y)
        self.weights = est._class_weighted(self.sample_weight, self.codes)
        self.columns = UsedColumns(X, keep_all=True)   # as the device datafits
        self.rows = X
        self.X, self.offsets = device_layout(X, self.weights, est.fit_intercept)
        self.splittable = np.empty((X.shape[0], 0))
        self.dtype, self.classes = X.dtype, est.classes_
        self.shared = {}                               # X's squares, for every datafit
        self.refit_input = (X, self.y, self.sample_weight)

    @staticmethod
    def n_jobs(est):
        return 1

    @staticmethod
    def _place(weights):
        return weights

    def advice(self):
        """:func:`~sparsekit.linear_model._l1_logistic.solve_advice` of X, on the device."""
        return solve_advice(self.rows, self.weights)

    def _datafit(self, pos, weights, fit_intercept):
        return device_block(self.classes.size, fit_intercept, self.X, self.codes, weights,
                            self.shared, pos, offsets=self.offsets)

    def held_out(self, test, blocks, make_model):
        """As :meth:`_MemoryFolds.held_out`; the models return their margins on the
        held-out rows, computed on the device (in X's precision, as on the CPU), whatever
        X (a placeholder with as many rows as ``test``)."""
        cp = require_cupy()
        rows = self.rows[cp.asarray(test)]              # sliced once per fold
        X_test = np.empty((len(test), 0))
        for block in blocks:
            model = make_model(block, kind=_HeldOutMargins)
            margins = device_product(rows, model.coef_, model.intercept_)
            model.margins = cp.asnumpy(margins).astype(self.dtype, copy=False)
            yield model, X_test


class _HeldOutMargins(L1LogisticOBA):
    """A fold's model whose held-out margins were computed where the rows are (on a
    dask cluster or a GPU): ``decision_function`` returns them; predictions and probabilities
    follow from them as from any :class:`L1LogisticOBA`'s."""

    def decision_function(self, X):
        return self.margins.ravel() if self.margins.shape[1] == 1 else self.margins
