"""Cross-validated ℓ1 logistic regression: the C (and elastic-net mixing) of
:class:`~sparsekit.L1LogisticOBA` chosen on warm-started regularization paths, one per
training fold, as scikit-learn's ``LogisticRegressionCV`` does for its solvers."""
import numbers
import warnings
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.callback import with_callbacks
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions

from sparsekit.linear_model._base import unchanged_on_error
from sparsekit.linear_model._dask_input import is_dask_collection
from sparsekit.linear_model._device_input import fit_device
from sparsekit.linear_model._l1_advice import max_iter_advice, stall_advice
from sparsekit.linear_model._l1_folds import (DaskFolds, DeviceFolds, FoldPaths,
                                              MemoryFolds, check_fold)
from sparsekit.linear_model._l1_logistic import L1LogisticOBA
from sparsekit.linear_model._l1_path import C_values, smallest_active_C
from sparsekit.linear_model._l1_problems import multinomial_within_memory
from sparsekit.linear_model._routing import CVRoutingMixin
from sparsekit.utils._threads import abandoned_on_error, jobs_at_once
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
        needs it; host X is copied there for the folds, and again for the refit once the
        folds' copy is freed). Each fold's problem is the data's, weighing the fold's
        training rows (the held-out ones by 0), so X is not sliced per fold; the held-out
        rows' margins are device products, scored on the host. The paths run one after
        another.

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
        data = (DeviceFolds if on_device else DaskFolds if is_dask_collection(X)
                else MemoryFolds)(self, X, y, sample_weight)
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
            check_fold(classes, data.codes[train], data.weights[train], k)
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
            refit_input = data.refit_input
            del data       # the folds' copy of X (in memory, on the workers, on the GPU)
            self._refit(*refit_input, Cs[c], l1_ratios[r], start, multinomial)  # lays it out
            self._end_subtask(task, X, y, sample_weight)
        else:
            self._average_best(solutions, data.dtype, multinomial)
            self._say(f"C = {self.C_:.4g}, l1_ratio = {self.l1_ratio_:g} (the folds' best "
                      f"points averaged): {best}")
        self._end_fit_task(context, X, y, sample_weight)
        return self

    def _solve_fold_paths(self, context, data, folds, problems, Cs, l1_ratios, shape, span,
                          shown):
        """(the folds' solutions as :class:`~sparsekit.linear_model._l1_folds.FoldPaths`
        of ``shape`` and ``span`` rows a problem, their OBA iterations a fold, l1_ratio and
        C): each fold's path of each problem, a subtask of the callbacks' ``context``
        (``shown``: the X, y and sample_weight given to fit), as ``data`` solves them;
        one ConvergenceWarning for the solves that reached ``max_iter``, one for those that
        stalled."""
        classes = self.classes_
        solutions = FoldPaths(shape + (data.columns.n_used + self.fit_intercept,), span,
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


def _checked_l1_ratios(l1_ratios):
    """``l1_ratios`` as an increasing array of distinct values in (0, 1]."""
    ratios = np.asarray(l1_ratios, dtype=np.float64).ravel()
    if ratios.size == 0 or not np.all((ratios > 0) & (ratios <= 1)):
        raise ValueError(f"l1_ratios must hold numbers in (0, 1], got {l1_ratios!r}")
    return np.unique(ratios)
