"""Cross-validated sparsemax regression: the ``alpha`` of
:class:`~sparsekit.SparsemaxClassifier` chosen on warm-started paths, one per training
fold, as scikit-learn's ``LogisticRegressionCV`` chooses its C."""
import warnings
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.callback import with_callbacks
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, column_or_1d

from ..gpu._cupy import require_cupy
from ..gpu.datafits import is_device_matrix
from ..utils._columns import UsedColumns
from ..utils._labels import refuse_label_collections
from ..utils._threads import Abandoned, abandoned_on_error, as_they_end, jobs_at_once
from ..utils._validation import check_entry_magnitude, check_two_classes, validate_input
from ._base import check_labels, unchanged_on_error
from ._dask_input import DaskRows, is_dask_collection
from ._device_input import check_device_X, device_product, fit_device, host_targets, to_device
from ._routing import CVRoutingMixin
from ._sparsemax import SparsemaxClassifier
from ._sparsemax_problem import data_scales, scale_sums
from ._sparsemax_solvers import fits_at_once, units_hint

# the span of an integer grid of ``alphas``: 10^2 down to 10^-2 times alpha="scale"
_GRID_DECADES = 2.0
_SHARED = ("polytope", "budget", "negated", "fit_intercept", "penalize_intercept", "solver",
           "positive", "bounds", "class_weight", "threshold", "tol", "max_iter",
           "random_state", "device")


class SparsemaxClassifierCV(CVRoutingMixin, SparsemaxClassifier):
    """Sparsemax regression with ``alpha`` chosen by cross-validation.

    For each training fold, :class:`SparsemaxClassifier` is fit along the whole grid of
    ``alphas``, from the largest (the most regularized) down, each fit started at the
    previous solution; every solution is scored on the fold's held-out rows, and the alpha
    with the best mean score is refitted on all the data, started at the mean of the
    folds' solutions. A warm-started path costs fewer solver iterations than the cold fits
    of a grid search over the same alphas, and finds the same models.

    Read more in the :ref:`User Guide <sparsemax_classifier>`.

    Parameters
    ----------
    alphas : int or array-like of float, default=10
        The values of alpha, or their number: then log-spaced from 100 to 0.01 times the
        ``alpha="scale"`` value of :class:`SparsemaxClassifier` (5e-5 times the mean
        squared norm of X's rows, weighted by ``sample_weight``, a column in other units
        counted as there), computed on all the data; a single value is that scale.
    cv : int, cross-validation generator or iterable, default=None
        As in scikit-learn: None is 5-fold, an integer the number of folds (stratified for
        class labels); a group splitter such as ``GroupKFold`` takes its ``groups``
        through metadata routing (see :meth:`fit`).
    scoring : str, callable or None, default=None
        What to maximize on the held-out rows: a scikit-learn scorer name (e.g.
        ``"f1_micro"`` for label sets), a callable ``scorer(estimator, X, y)``, or None for
        accuracy (subset accuracy for 2-D targets). Ties go to the larger alpha, the
        simpler model. :meth:`score` scores with it too, as ``LogisticRegressionCV.score``.
    polytope : {"simplex", "budget", "box", "at_most_one", "at_least_one"}, \
default="simplex"
        As in :class:`SparsemaxClassifier`.
    budget : float, default=None
        As in :class:`SparsemaxClassifier` (``polytope="budget"`` only).
    negated : array-like of bool of shape (n_classes,), default=None
        As in :class:`SparsemaxClassifier`.
    fit_intercept : bool, default=True
        As in :class:`SparsemaxClassifier`.
    penalize_intercept : bool, default=False
        As in :class:`SparsemaxClassifier`.
    solver : {"auto", "lbfgs", "newton-cg", "nqn", "sdca"}, default="auto"
        As in :class:`SparsemaxClassifier`; ``"auto"`` chooses for each fit, by its alpha.
    positive : bool, default=False
        As in :class:`SparsemaxClassifier`.
    bounds : tuple, default=None
        As in :class:`SparsemaxClassifier`.
    class_weight : dict, "balanced" or None, default=None
        As in :class:`SparsemaxClassifier`, in every fit.
    threshold : float in [0, 1) or "auto", default="auto"
        As in :class:`SparsemaxClassifier`; ``"auto"`` is chosen by each fit on its
        training rows.
    tol : float, default=1e-4
        As in :class:`SparsemaxClassifier`, for every fit of the paths and for the refit.
    max_iter : int, default=1000
        As in :class:`SparsemaxClassifier`, for each fit.
    n_jobs : int, default=None
        Folds fit in parallel processes (joblib), at most one per fold; None is 1, -1 all
        the cores. On dask input, threads of the client instead, each driving one fold's
        fits on the cluster (an interrupted fit, KeyboardInterrupt, ends them at their
        next iteration); with ``device="cuda"`` the folds fit one after another. The
        fits that run at a time share the machine's memory: where their solvers' arrays
        would not fit together, ``solver="auto"`` runs Newton-CG (as
        :class:`SparsemaxClassifier` does on its own) and another solver is refused, with
        a ValueError naming n_jobs, before any of them starts.
    verbose : int, default=0
        One line per fold path and for the refit when positive; per-iteration lines of
        each fit when above 1.
    random_state : int, RandomState instance or None, default=None
        As in :class:`SparsemaxClassifier` (``solver="sdca"``'s row order), for each fit.
    device : {"cpu", "cuda"}, default="cpu"
        As in :class:`SparsemaxClassifier`: ``"cuda"`` fits every fold's path and the refit
        on the current GPU with CuPy (X given as a CuPy array or a cupyx sparse matrix
        needs it; host X is copied there once, and each fold's rows are sliced there);
        the held-out rows' scores are computed on the device and scored on the host.

    Attributes
    ----------
    alphas_ : ndarray of shape (n_alphas,)
        The grid, decreasing (the order of the paths).
    scores_ : ndarray of shape (n_folds, n_alphas)
        The held-out score of each fold's solution at each alpha.
    alpha_ : float
        The alpha chosen (the best mean score), at which the model was refitted.
    coef_, intercept_, classes_, target_type_, threshold_, solver_, n_iter_
        Those of the refitted :class:`SparsemaxClassifier` (``n_iter_``: the refit's
        iterations).
    n_iter_path_ : ndarray of shape (n_folds, n_alphas)
        Solver iterations of each fit of the folds' paths.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    See Also
    --------
    SparsemaxClassifier : the model at a given alpha.
    L1LogisticOBACV : the same search for the ℓ1-penalized logistic regression.

    References
    ----------
    .. [1] Martins, A. F. T. & Astudillo, R. F. (2016). From softmax to sparsemax: a sparse
       model of attention and multi-label classification. ICML, Algorithm 1 and eqs. 6-10.
    .. [2] Friedman, J., Hastie, T. & Tibshirani, R. (2010). Regularization paths for
       generalized linear models via coordinate descent. Journal of Statistical Software
       33(1), section 2.5 (warm starts along a decreasing grid of penalties).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> from sparsekit import SparsemaxClassifierCV
    >>> clf = SparsemaxClassifierCV(alphas=[1e-1, 1e-2, 1e-3], cv=3).fit(X, y)
    >>> clf.alphas_
    array([0.1  , 0.01 , 0.001])
    >>> clf.scores_.shape
    (3, 3)
    >>> float(clf.alpha_) in clf.alphas_
    True
    """

    _parameter_constraints = {
        **{name: SparsemaxClassifier._parameter_constraints[name] for name in _SHARED},
        "alphas": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "cv": ["cv_object"],
        "scoring": [StrOptions(set(get_scorer_names())), callable, None],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    def __init__(self, alphas=10, *, cv=None, scoring=None, polytope="simplex", budget=None,
                 negated=None, fit_intercept=True, penalize_intercept=False, solver="auto",
                 positive=False, bounds=None, class_weight=None, threshold="auto", tol=1e-4,
                 max_iter=1000, n_jobs=None, verbose=0, random_state=None, device="cpu"):
        self.alphas = alphas
        self.cv = cv
        self.scoring = scoring
        self.polytope = polytope
        self.budget = budget
        self.negated = negated
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.solver = solver
        self.positive = positive
        self.bounds = bounds
        self.class_weight = class_weight
        self.threshold = threshold
        self.tol = tol
        self.max_iter = max_iter
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.random_state = random_state
        self.device = device

    @unchanged_on_error
    @with_callbacks
    def fit(self, X, y, sample_weight=None, **params):
        """Cross-validate the grid on X and y, then fit the chosen model on all of it.

        scikit-learn's callbacks see one subtask per fold path and one for the refit.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense, CSR or CSC, float32 or float64. A dask array partitioned by rows, or a
            dask DataFrame, with its ``y`` (dask, NumPy or SciPy sparse), is
            cross-validated on the workers of the default ``distributed.Client``, as
            :class:`SparsemaxClassifier` fits it (``solver="auto"`` is L-BFGS there): each
            fold's fits weigh its training rows where the rows are, and only the targets,
            the weights and the held-out rows' scores reach the client. With
            ``device="cuda"``, a CuPy array or cupyx sparse matrix (or host X, copied to
            the GPU).
        y : array-like of shape (n_samples,) or (n_samples, n_classes)
            Class labels (every training fold must hold two classes or more; a fold's
            model lacks the classes its training rows lack), a label-indicator matrix or
            a row-stochastic proportion matrix.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights of the rows' loss terms, in the folds' fits, the grid's
            scale and the refit, and of the held-out rows' scores (when the scorer takes
            ``sample_weight``, as scikit-learn's do), as in scikit-learn's
            ``LogisticRegressionCV``.
        **params : dict
            Only with scikit-learn's metadata routing enabled
            (``sklearn.set_config(enable_metadata_routing=True)``): metadata for the
            splitter, such as ``groups`` for a ``GroupKFold`` ``cv``, and for the scorer;
            ``sample_weight`` too then goes to the scorer only if it requests it.

        Returns
        -------
        self : SparsemaxClassifierCV
            The fitted estimator.
        """
        self._validate_params()
        base = SparsemaxClassifier(**{name: getattr(self, name) for name in _SHARED},
                                   verbose=max(self.verbose - 1, 0), warm_start=True)
        on_device = fit_device(self.device, X)
        if not is_dask_collection(X):
            refuse_label_collections(y, "SparsemaxClassifierCV")
        data = (_DaskFolds if is_dask_collection(X) else _DeviceFolds if on_device
                else _MemoryFolds)(self, base, X, y, sample_weight)
        scorer = check_scoring(base, scoring=self.scoring)    # None: base's score
        classes = _classes(data.y)        # before the splitter sorts the labels
        folds, held_out = self._routed_folds(data.splittable, data.y, data.given_weight,
                                             params, scorer)
        alphas = self._grid(base, data.scale_sums)
        if classes is not None:
            _check_training_folds(data.y, folds)
        if self.scoring is None and classes is not None and isinstance(data, _MemoryFolds):
            scorer = _held_out_accuracy     # base.score's number, without its input checks
        context = self._begin_fit_task(X, y, len(folds) + 1, sample_weight)
        paths = []
        with abandoned_on_error() as abandoned:
            for k, path in enumerate(data.paths(base, folds, held_out, alphas, scorer, classes,
                                                self.n_jobs, abandoned)):
                task = self._begin_subtask(context, "fold path", X, y, sample_weight)
                # the folds' solutions are summed per alpha as they come (the refit starts at
                # their mean), not kept: n_alphas models in memory, not n_folds x n_alphas
                coefs, intercepts = path.pop("coefs"), path.pop("intercepts")
                if k == 0:
                    coef_sum, intercept_sum = coefs, intercepts
                else:
                    coef_sum += coefs
                    intercept_sum += intercepts
                del coefs, intercepts
                paths.append(path)
                self._say(f"fold {k + 1}/{len(folds)}: {alphas.size} fits, "
                          f"{int(path['n_iter'].sum())} solver iterations")
                self._end_subtask(task, X, y, sample_weight)
        failed = sum(path["failed"] for path in paths)
        hint = (units_hint(data.scale_sums(), self._column_name)
                if failed and self.solver == "sdca" else None)
        _warn_once([w for path in paths for w in path["warnings"]], failed,
                   len(folds) * alphas.size, self.max_iter, hint)
        self.alphas_ = alphas
        self.scores_ = np.stack([path["scores"] for path in paths])
        self.n_iter_path_ = np.stack([path["n_iter"] for path in paths])
        best = int(np.argmax(self.scores_.mean(axis=0)))     # first: the larger alpha
        self._say(f"alpha = {alphas[best]:.4g}: mean held-out score "
                  f"{self.scores_[:, best].mean():.6g} over {len(folds)} folds; refit on "
                  "all the data")
        task = self._begin_subtask(context, "refit", X, y, sample_weight)
        self._refit(base, *data.refit_input, alphas[best],
                    data.columns.expand(coef_sum[best] / len(folds)),
                    intercept_sum[best] / len(folds))
        self._end_subtask(task, X, y, sample_weight)
        self._end_fit_task(context, X, y, sample_weight)
        return self

    def _grid(self, base, sums):
        """The alphas to cross-validate, decreasing (see ``alphas``); ``base`` is the
        fits' estimator, whose ``alpha="scale"`` of the data's sums (``sums()``, see
        :func:`scale_sums`) an integer grid is centred on."""
        if isinstance(self.alphas, Integral):
            scale = data_scales(sums(), base.alpha)[0]
            if self.alphas == 1:
                return np.array([scale])
            return scale * np.logspace(_GRID_DECADES, -_GRID_DECADES, self.alphas)
        try:
            alphas = np.asarray(self.alphas, dtype=np.float64)
        except (TypeError, ValueError):      # text among them ("scale")
            alphas = np.array([np.nan])
        if alphas.ndim != 1 or alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(
                alphas < 0):
            raise ValueError(f"alphas must be a positive integer or a non-empty 1-D list of "
                             f"finite non-negative numbers, got {self.alphas!r}")
        return np.unique(alphas)[::-1]

    def _refit(self, base, X, y, sample_weight, alpha, coef, intercept):
        """Fit ``base`` at ``alpha`` on all the data from ``coef`` and ``intercept`` (the
        mean of the folds' solutions there), and take over its fitted attributes."""
        est = clone(base).set_params(alpha=float(alpha))
        est.coef_, est.intercept_ = coef, intercept
        est.fit(X, y, sample_weight)
        for name, value in vars(est).items():
            if name.endswith("_") or name in ("_negated", "_target_dtype"):
                setattr(self, name, value)


def _classes(y):
    """The classes of class labels (None for 2-D targets, which have their columns whatever
    the rows), checked: labels of one type (a stratified splitter's sort would fail on
    others with NumPy's message), two classes or more."""
    if np.ndim(y) == 2 and np.shape(y)[1] > 1 or sp.issparse(y):
        return None
    check_labels(y)
    classes = np.unique(np.ravel(y))
    check_two_classes(classes)
    return classes


def _check_training_folds(y, folds):
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


def _held_out_accuracy(est, X, y, sample_weight=None):
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


class _MemoryFolds:
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


class _DaskFolds:
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


class _DeviceFolds:
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
            host = _MemoryFolds(est, base, X, y, sample_weight)
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


def _warn_once(caught, failed, total, max_iter, hint=None):
    """The folds' warnings, each message once, and one ConvergenceWarning for them all
    (its advice ``hint`` when given)."""
    for category, message in dict.fromkeys(caught):
        warnings.warn(message, category, stacklevel=3)
    if failed:
        warnings.warn(f"SparsemaxClassifier did not converge in {failed} of the {total} fits "
                      f"of the folds' paths (max_iter={max_iter}); "
                      f"{hint or 'increase max_iter or scale the data'}.", ConvergenceWarning,
                      stacklevel=3)
