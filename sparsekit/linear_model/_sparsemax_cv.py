"""Cross-validated sparsemax regression: the ``alpha`` of
:class:`~sparsekit.SparsemaxClassifier` chosen on warm-started paths, one per training
fold, as scikit-learn's ``LogisticRegressionCV`` chooses its C."""
import warnings
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.callback import with_callbacks
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring, get_scorer_names
from sklearn.utils._param_validation import Interval, StrOptions

from ..utils._labels import refuse_label_collections
from ..utils._threads import abandoned_on_error
from ..utils._validation import check_two_classes
from ._base import check_labels, unchanged_on_error
from ._dask_input import is_dask_collection
from ._device_input import fit_device
from ._routing import CVRoutingMixin
from ._sparsemax import SparsemaxClassifier
from ._sparsemax_folds import (DaskFolds, DeviceFolds, MemoryFolds, check_training_folds,
                               held_out_accuracy)
from ._sparsemax_problem import data_scales
from ._sparsemax_solvers import units_hint

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
        data = (DaskFolds if is_dask_collection(X) else DeviceFolds if on_device
                else MemoryFolds)(self, base, X, y, sample_weight)
        scorer = check_scoring(base, scoring=self.scoring)    # None: base's score
        classes = _classes(data.y)        # before the splitter sorts the labels
        folds, held_out = self._routed_folds(data.splittable, data.y, data.given_weight,
                                             params, scorer)
        alphas = self._grid(base, data.scale_sums)
        if classes is not None:
            check_training_folds(data.y, folds)
        if self.scoring is None and classes is not None and isinstance(data, MemoryFolds):
            scorer = held_out_accuracy     # base.score's number, without its input checks
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
        :func:`~sparsekit.linear_model._sparsemax_problem.scale_sums`) an integer grid is
        centred on."""
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
