"""Sparsemax regression and its polytope family as a scikit-learn classifier.

The fit's data as the solvers take it is in :mod:`sparsekit.linear_model._sparsemax_problem`,
the choice of a solver, its memory and the solve in
:mod:`sparsekit.linear_model._sparsemax_solvers`; this module validates and encodes the
input, and holds the scikit-learn plumbing and the predictions.
"""
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.callback import with_callbacks
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, column_or_1d

from ..gpu._cupy import require_cupy
from ..gpu.datafits import is_device_matrix
from ._device_input import (_host, check_device_X, device_product, device_scores, fit_device,
                            host_targets, to_device)
from ..losses._dask_datafit import DaskFenchelYoung, LabelTargets, SetTargets
from ..losses._fenchel_young_datafit import FenchelYoungLinear, fits_through_csr
from ..losses._targets import (check_target_entries, label_set_matrix, leaves_out_unlabelled,
                               polytope_targets, warn_unlabelled)
from ..metrics._thresholds import micro_f1_threshold, row_slices
from ..optimize._result import STOPPED_BY_CALLBACK
from ..projections import project
from ..projections._checks import negated_columns, reflect_columns
from ..utils._scores import csr_scores
from ..utils._threads import Abandoned, stop_if_abandoned
from ..utils._columns import UsedColumns
from ..utils._labels import refuse_label_collections
from ..utils._rows import sparse_copy
from ..utils._validation import (check_dense_size, check_device, check_entry_magnitude,
                                 check_sparse_structure, check_two_classes, validate_input)
from ._base import SparsekitClassifier, unchanged_on_error
from ._dask_input import DaskRows, block_predictions, is_dask_collection
from ._sparsemax_problem import (TWO_CLASS_OFFSET, Problem, coefficient_bounds, data_scales,
                                 scale_sums, solution_model, target_summary)
from ._sparsemax_solvers import auto_solver, sdca_hint, solve, solver_within_memory

EXPECTED_FAILED_CHECKS = {
    **{name: "same objective; the solutions differ within tol (flat intercept valley)"
       for name in ("check_sample_weight_equivalence_on_dense_data",
                    "check_sample_weight_equivalence_on_sparse_data")},
    "check_classifiers_multilabel_output_format_predict_proba":
        "sparsemax probabilities are exactly 0 or 1 where the scores are far apart",
    "check_classifier_multioutput":
        "a label is predicted where its score exceeds its row's threshold tau, not 0",
}
_POLYTOPES = ("simplex", "budget", "box", "at_most_one", "at_least_one")


#: the polytopes whose label sets ``threshold="auto"`` cuts at the training rows' best
#: micro-F1; on the others a cut below 1/2 can predict sets the polytope excludes
_TUNED_POLYTOPES = ("simplex", "box")


class SparsemaxClassifier(SparsekitClassifier):
    """Sparsemax regression: a linear model fit with a Fenchel-Young loss over a polytope.

    Minimizes (Madsen et al. 2016, eq. 11, with sample weights)::

        (1 / sum_i sw_i) sum_i sw_i L(W^T x_i + b; y_i) + (alpha / 2) ||W||_F^2

    where ``L(z; y) = 1/2 ||y - z||^2 - 1/2 ||proj(z) - z||^2`` is the Fenchel-Young loss of
    the Euclidean projection onto the polytope (Blondel et al. 2020). On the
    simplex this is the sparsemax loss (report eqs. 8-10) with gradient
    ``sparsemax(z) - y`` (eq. 6). The bias is not penalized unless
    ``penalize_intercept=True`` (the report's eq. 11 penalizes it). With unit weights the
    data term is the plain mean of eq. 11.

    Read more in the :ref:`User Guide <sparsemax_classifier>`.

    Parameters
    ----------
    alpha : float or "scale", default="scale"
        L2 regularization strength (the report's lambda). ``"scale"`` takes
        ``5e-5 * mean(||x_i||^2)``, the mean of the squared norms of X's rows (weighted by
        ``sample_weight``): the fitted probabilities then do not change when X is
        multiplied by a constant (the coefficients are divided by it), as the sparsity of
        sparsemax depends on the scale of the scores. Rows of 14 ones (a9a) give 7e-4,
        TF-IDF rows of norm 1 give 5e-5. A column whose nonzero entries have a mean
        square above 1000 times the median column's (an identifier, a timestamp or an
        amount in dollars beside standardized features) counts as if its entries were
        of that size: one column in other units does not set the penalty of all the
        others. The value used is ``alpha_``.
    polytope : {"simplex", "budget", "box", "at_most_one", "at_least_one"}, default="simplex"
        Polytope of the projection. ``"simplex"`` is sparsemax. The others give label
        marginals in ``[0, 1]`` for multi-label targets: ``"budget"`` bounds the sum by
        ``budget``, ``"at_most_one"`` by 1, ``"at_least_one"`` bounds it below by 1, and
        ``"box"`` leaves the labels uncoupled.
    budget : float, default=None
        The sum bound of ``polytope="budget"``; required there and only there.
    negated : array-like of bool of shape (n_classes,), default=None
        Negated output coordinates N: fit over ``M' = flip(M)``, with
        ``flip(p)_k = 1 - p_k`` for k in N, as in :func:`sparsekit.projections.project`
        (Niculae & Martins 2020, Prop. 7 and Cor. 7.1). On binary labels this negates the
        labels in N: ``"at_least_one"`` (OR) with every coordinate negated is NAND, the
        ``"budget"`` polytope with ``budget=K - 1``; for K = 2, ``"at_least_one"`` with
        ``negated=[True, False]`` is IMPLY, ``y_1 => y_2`` (``"at_most_one"`` with
        ``negated=[True, False]`` is ``y_2 => y_1``). ``predict_proba`` lies in M', and
        targets must lie in M': ``y`` with ``1 - y`` on N must lie in M (``ValueError``
        otherwise). The negated simplex is ``{0 <= p <= 1, sum_{k not in N} p_k -
        sum_{k in N} p_k = 1 - |N|}`` (all negated: ``sum p = K - 1``); there 0/1 rows are
        targets as they are, never spread over their labels, so each row must have exactly
        one active label after the flip. Needs 2-D targets (indicators or proportions):
        class labels are decoded by the argmax of the scores, which negation does not
        preserve. Fit: ``L_{M'}(z; y) = L_M(flip z; flip y)`` and
        ``flip z = L z + flip(0)`` (``L = diag(+-1)``, -1 on N), so the solvers fit the
        un-negated problem in ``(W L, L b)`` (same penalty) on flipped targets, with the
        fixed score offset ``flip(0)`` and ``bounds`` reflected on N (``positive=True``
        caps those coefficients at 0 there); ``coef_`` and ``intercept_`` are reported in
        the original coordinates. None or all False: no negation.
    fit_intercept : bool, default=True
        Whether to fit the bias ``b``.
    penalize_intercept : bool, default=False
        Whether ``alpha / 2 ||b||^2`` is added to the objective.
    solver : {"auto", "lbfgs", "newton-cg", "nqn", "sdca"}, default="auto"
        ``"auto"``: ``"sdca"`` for sparse X (a dense X of at most 30% nonzero entries
        too, which SDCA walks as its CSR copy) when the mean squared row norm (with the
        intercept's constant feature, see Notes) is at most ``20 * alpha * n_samples``
        (no bounds, on the CPU), ``"lbfgs"`` otherwise, or ``"newton-cg"`` where
        L-BFGS's arrays would not fit in the machine's memory (about 41 copies of the
        weights, 51 with SciPy before 1.12, against Newton-CG's 14 and SDCA's 5; a solver
        named that would not fit is refused before the fit starts); ``solver_`` tells
        which ran.
        ``"lbfgs"``: :func:`scipy.optimize.minimize` with L-BFGS-B. ``"nqn"``:
        :func:`sparsekit.optimize.minimize_nqn` with the same bounds. ``"newton-cg"``:
        truncated semismooth Newton (no bounds): the loss is piecewise quadratic, and its
        generalized Hessian ``X_A^T diag(sw) J X_A / sum(sw) + alpha I`` only involves the
        rows ``A`` whose projection Jacobian ``J`` is nonzero (report eq. 5,
        Niculae & Martins 2020, Prop. 6): with sparsemax most rows drop out near the optimum.
        Often much faster than L-BFGS on large, ill-conditioned problems.
        ``"sdca"``: exact dual block coordinate ascent, one projection per row update, the
        free intercept by a proximal-point step after each epoch (no bounds, ``alpha > 0``,
        CPU only; keeps an (n_samples, n_classes) float64 array of dual variables). The
        fastest choice for sparse, high-dimensional data such as TF-IDF text; slow when
        ``alpha * n_samples`` is small for the rows' squared norms (the dual is then
        ill-conditioned).
    positive : bool, default=False
        Constrain the coefficients (not the intercept) to be nonnegative; shorthand for
        ``bounds=(0, None)``.
    bounds : tuple (lower, upper), default=None
        Box constraints on the coefficients (not the intercept). Each of ``lower`` and
        ``upper`` is None, a scalar, or an array broadcastable to ``(n_classes, n_features)``.
    class_weight : dict, "balanced" or None, default=None
        Multiplies the loss terms of each class (as sample weights do); ``"balanced"``
        gives class c the weight (total sample weight) / (n_classes x weight of class c),
        as scikit-learn does. Class labels only: for 2-D targets weigh the rows with
        ``sample_weight``.
    threshold : float in [0, 1) or "auto", default="auto"
        Multi-label decision rule of :meth:`predict`: label ``j`` is predicted when
        ``predict_proba(X)[:, j] > threshold``. ``"auto"`` uses ``threshold_``, set by
        ``fit``. For label sets (a 0/1 indicator ``y``) on the simplex and on the box it
        is the threshold whose label sets have the largest micro-F1 on the training rows
        (weighted as in the fit), or 0, every label with a positive entry, when no
        smaller sets do better. On the simplex the entries are shares of one
        distribution over the labels, whose support (the sparsemax rule of Martins &
        Astudillo 2016) holds many more labels than the rows unless ``alpha`` is small;
        on the box they are label marginals, which for rare labels seldom reach 1/2, so
        that a cut at 1/2 predicts fewer labels than the rows hold. With
        ``negated`` and for proportion targets it is 0 on the simplex and 0.5 elsewhere;
        on the budget, at-most-one and at-least-one polytopes 0.5 (LP-SparseMAP leaves
        the rule open; 0.5 is the usual one for marginals, and a lower cut could predict
        sets those polytopes exclude, such as two labels at most one of which holds).
    tol : float, default=1e-4
        Stop when the largest projected-gradient entry is below ``tol`` (the default of
        scikit-learn's ``LogisticRegression``, whose test this is; ``1e-6`` or less for
        probabilities that agree with the optimum's to more digits), the gradient taken
        in the solvers' variables: the intercepts and the coefficients times ``s``, the
        root-mean-square of X's nonzero entries (weighted by ``sample_weight``; a column in
        other units counted as for ``alpha="scale"``, and its coefficients also times the
        factor that brings its entries to that size), i.e. the problem on ``X / s``. For
        0/1 features (``s = 1``) that is the gradient in
        ``coef_``; multiplying X by a constant changes neither where a fit stops nor, with
        ``alpha="scale"``, the iterations it takes. lbfgs, nqn and
        newton-cg also stop, with success, once an iteration lowers the objective by less
        than 64 machine epsilons relative to it (scikit-learn's LogisticRegression rule):
        at that point the gradient may still exceed a very small ``tol``.
    max_iter : int, default=1000
        Maximum number of solver iterations.
    warm_start : bool, default=False
        Start from the previous solution when the problem shape is unchanged.
    verbose : int, default=0
        Print the objective every iteration (epoch for ``"sdca"``) when positive.
    random_state : int, RandomState instance or None, default=None
        Seeds the row order of each ``"sdca"`` epoch, also where ``solver="auto"`` picks
        it (a sparse X it suits, or a dense one of mostly zeros): pass an int for the same
        model from every fit. Unused by the other solvers.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"`` fits and predicts on the current GPU with CuPy (``pip install
        sparsekit[gpu]``): X is moved there once; the loss, the gradient and Newton-CG's
        Hessian products run on the device (the solvers' own steps, on parameter-sized
        vectors, on the host); so do the scores and the projection of the predictions,
        which come back as NumPy arrays. X given as a CuPy array or a cupyx sparse
        matrix needs ``"cuda"``; CuPy input gives CuPy predictions (whatever ``device``).
        The fitted attributes are NumPy arrays: ``set_params(device="cpu")`` predicts on
        a machine without a GPU. ``solver="sdca"`` runs on the CPU only.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
    intercept_ : ndarray of shape (n_classes,)
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``arange(n_classes)`` for 2-D targets.
    target_type_ : {"multiclass", "multilabel", "proportions"}
        How ``y`` was read. Class labels are one-hot targets. A 0/1 indicator matrix is a
        multi-label target: uniform over the active labels on the simplex (report section
        1.9; not with ``negated``), the indicator itself on the other polytopes. On the
        simplex (without ``negated``), rows without any label are left out of the fit with
        a ``UserWarning`` (their target is undefined); on the other polytopes the empty
        set is a target like any other when it lies in the polytope. Any other 2-D ``y`` is
        read as a proportion matrix: entries in ``[0, 1]`` and, on the simplex, rows
        summing to 1 within 1e-6.
    threshold_ : float
        The decision threshold of ``threshold="auto"`` (see ``threshold``). Defined only
        for 2-D targets.
    solver_ : str
        The solver the last fit used (``solver``, or the one ``"auto"`` picked).
    n_iter_ : int
        Solver iterations of the last fit (outer Newton steps for ``"newton-cg"``, epochs
        for ``"sdca"``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    Notes
    -----
    Every target is validated against the polytope: for instance a multi-label row with
    more active labels than ``budget`` raises ``ValueError``, since the Fenchel-Young loss
    can be negative outside the polytope (Blondel et al. 2020).

    The solvers work in the coordinates ``(s W, b + W^T mu)`` with ``s`` the
    root-mean-square of X's nonzero entries and ``mu`` the weighted feature mean (when the
    bias is free and unpenalized): the same objective, better conditioned, whatever the
    units of X, and ``X`` is never centered or copied (sparse input stays sparse).
    ``"sdca"`` fits a free intercept as the weight of a constant feature ``s``.

    ``check_estimator`` passes except ``check_sample_weight_equivalence_on_dense_data`` and
    ``..._on_sparse_data`` (:data:`EXPECTED_FAILED_CHECKS`): weighting and repeating rows
    give the same objective (tested), but with small ``alpha`` the unpenalized intercept
    lies in a nearly flat valley of the piecewise-quadratic loss, so two L-BFGS runs stop at
    points whose probabilities differ by up to ~4e-4 at the default ``tol`` (~7e-5 at
    ``tol=1e-6``, ~6e-7 at ``tol=1e-12``), above the check's rtol of 1e-7. That is
    the default ``polytope="simplex"``; on the other polytopes ``check_classifiers_train``
    fails too, by design: their ``predict_proba`` rows are label marginals that need not
    sum to 1.

    References
    ----------
    .. [1] Martins, A. F. T. & Astudillo, R. F. (2016). From softmax to sparsemax: a sparse
       model of attention and multi-label classification. ICML, Algorithm 1 and eqs. 6-10.
    .. [2] Madsen, A., Rørbech, J. T. & Kristensen, A. (2016). TensorFlow implementation of
       sparsemax. DTU report, eqs. 8-11.
    .. [3] Blondel, M., Martins, A. F. T. & Niculae, V. (2020). Learning with Fenchel-Young
       losses. JMLR 21(35).
    .. [4] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> from sparsekit import SparsemaxClassifier
    >>> clf = SparsemaxClassifier(alpha=1e-3).fit(X, y)
    >>> round(clf.score(X, y), 2)
    0.98
    >>> clf.predict_proba(X[[0, 60, 120]])
    array([[1., 0., 0.],
           [0., 1., 0.],
           [0., 0., 1.]])
    >>> clf.predict_log_proba(X[[0]])
    array([[  0., -inf, -inf]])
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"scale"})],
        "polytope": [StrOptions(set(_POLYTOPES))],
        "budget": [Interval(Real, 0, None, closed="neither"), None],
        "negated": ["array-like", None],
        "fit_intercept": ["boolean"],
        "penalize_intercept": ["boolean"],
        "solver": [StrOptions({"auto", "lbfgs", "newton-cg", "nqn", "sdca"})],
        "positive": ["boolean"],
        "bounds": [tuple, None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "threshold": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "device": [StrOptions({"cpu", "cuda"})],
    }

    def __init__(self, alpha="scale", *, polytope="simplex", budget=None, negated=None,
                 fit_intercept=True, penalize_intercept=False, solver="auto",
                 positive=False, bounds=None, class_weight=None, threshold="auto", tol=1e-4,
                 max_iter=1000, warm_start=False, verbose=0, random_state=None,
                 device="cpu"):
        self.alpha = alpha
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
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_label = True     # label-indicator and proportion targets
        tags.target_tags.multi_output = True
        return tags

    # ------------------------------------------------------------------ fit
    @unchanged_on_error
    @with_callbacks
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense, CSR or CSC (CSC is converted to CSR, never densified). Dense input
            with at most 25% nonzero entries (e.g. MNIST; 12.5-22.5% with 3 to 7 classes)
            is fit through a CSR copy, and SDCA walks one up to 30%. A dask
            array partitioned by rows, or a dask DataFrame, is fit on the workers of the
            default ``distributed.Client`` by ``"lbfgs"``, ``"nqn"`` or ``"newton-cg"``.
            The columns of a sparse X that store no entry (hashed features) are left out of
            the solve, their weights 0, unless ``bounds`` are given.
        y : array-like of shape (n_samples,) or (n_samples, n_classes)
            Class labels, a label-indicator matrix or a row-stochastic proportion matrix
            (dense or sparse). With dask X: a dask array or DataFrame of them, or a NumPy
            array or SciPy sparse matrix, split as X's rows.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative weights; the data term is their weighted mean.

        Returns
        -------
        self : SparsemaxClassifier
        """
        self._validate_params()
        if is_dask_collection(X):
            return self._fit_dask(X, y, sample_weight)
        if self.solver == "sdca":
            self._check_sdca()
        self._fit_problem(self._problem(X, y, sample_weight))
        return self

    def _problem(self, X, y, sample_weight):
        """The fit's data validated and encoded, all that does not depend on ``alpha``: a
        :class:`~sparsekit.linear_model._sparsemax_problem.Problem`, which
        :meth:`_fit_problem` solves (a cross-validation's path solves one at each alpha).
        Sets ``n_features_in_``, ``classes_`` and the targets' kind."""
        refuse_label_collections(y, "SparsemaxClassifier")
        budget = self._check_budget()
        if fit_device(self.device, X) and is_device_matrix(X):
            X = X_rows = check_device_X(X)
            y, sw = host_targets(X, y, sample_weight, multi_output=True)
            self.__dict__.pop("feature_names_in_", None)
            self.n_features_in_ = X.shape[1]
            check_entry_magnitude(X, X.dtype)
        else:
            X, y = validate_input(self, X, y, accept_sparse=["csr", "csc"],
                                 dtype=[np.float64, np.float32], order="C", multi_output=True,
                                 y_numeric=False)
            if sp.issparse(X):
                X = X.tocsr()
            X_rows = X  # Hessian products gather rows of X; dense float32 GEMMs are fastest
            check_entry_magnitude(X, X.dtype)
            sw = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                      ensure_non_negative=True)
        X_shown = X_rows          # what the callbacks see: X as validated
        Y, keep, codes = self._encode_targets(y, budget)
        check_dense_size("coef_", [("classes", Y.shape[1]), ("columns", X.shape[1])],
                         X.dtype.itemsize, "SparsemaxClassifier stores a dense coef_: hash the "
                         "features to fewer columns (HashingVectorizer's n_features)")
        sw = np.where(keep, self._weigh_classes(sw, codes), 0.0)
        if not sw.max() > 0:
            raise ValueError("The sample weights of the rows used in the fit sum to zero.")
        sums = scale_sums(X_shown, sw)
        n_classes = Y.shape[1]
        # negated=N: the un-negated problem in (W L, L b) with the score offset flip(0),
        # since flip(z) = L z + flip(0) (see the negated parameter)
        columns = negated_columns(self._negated, n_classes)
        polytope, targets, offset = self.polytope, Y, reflect_columns(np.zeros(n_classes),
                                                                      columns)
        if self._two_classes(n_classes, columns):
            polytope, targets, offset = "box", Y[:, :1], np.full(1, TWO_CLASS_OFFSET)
        if not is_device_matrix(X) and fits_through_csr(X, targets.shape[1]):
            X = sparse_copy(X)
        # a device fit's and per-coefficient bounds' columns: the solvers see them all
        used = UsedColumns(X, keep_all=self.bounds is not None or is_device_matrix(X))
        same = X_rows is X
        X = used.take(X)
        X_rows = X if same else used.take(X_rows)
        # the objective is a weighted mean: dividing by the largest weight changes nothing
        # but keeps sums of huge weights (and their float32 copy) finite
        sw = (sw / sw.max()).astype(X.dtype)
        return Problem(X, X_rows, targets, sw, polytope, offset, columns, used, sums, budget,
                        shown=(X_shown, y, sample_weight), Y=Y)

    def _fit_problem(self, problem):
        """Fit the model on ``problem`` (:meth:`_problem`) at ``alpha``, from the previous
        model with ``warm_start``."""
        if self.solver == "sdca":
            self._check_sdca()
        X_shown = problem.shown[0]
        self.alpha_, scale, factors = data_scales(problem.sums, self.alpha)
        solver = self.solver if self.solver != "auto" else auto_solver(
            problem.sdca_rows, self.alpha_, bounded=self.bounds is not None or self.positive,
            device=self.device, intercept_scale=scale if self.fit_intercept else 0.0)
        datafit = problem.datafit(solver == "sdca", lambda: FenchelYoungLinear(
            problem.sdca_rows() if solver == "sdca" else problem.X, problem.targets,
            problem.sw, polytope=problem.polytope,
            budget=problem.budget, alpha=self.alpha_, fit_intercept=self.fit_intercept,
            penalize_intercept=self.penalize_intercept, offset=problem.offset,
            X_rows=problem.X_rows,
            center=(self.fit_intercept and not self.penalize_intercept
                    and solver != "sdca"), device=self.device,
            # SDCA's free intercept is a constant feature of one scale: one factor for all
            weight_scale=(scale if factors is None or solver == "sdca"
                          else scale * problem.used.restrict(factors))))
        datafit.alpha = float(self.alpha_)
        # the solvers' arrays are in this process's memory, on a GPU too
        solver = solver_within_memory(solver, datafit.size, self.solver == "auto",
                                      self._memory_alternatives())
        hint = (sdca_hint(problem.sums, problem.X.shape[0],
                          scale if self.fit_intercept else 0.0, self.alpha_, self._column_name)
                if solver == "sdca" else None)
        self._solve_and_publish(solver, datafit, problem.columns, *problem.shown, problem.used,
                                hint=hint)
        self._fit_threshold(X_shown, problem.Y, problem.sw)

    def _memory_alternatives(self, dask=False):
        """The solvers that may run instead of one whose arrays would not fit in memory
        (:func:`solver_within_memory`): none with bounds; SDCA in memory on the CPU only."""
        if self.bounds is not None or self.positive:
            return ()
        return ("newton-cg",) if dask or self.device != "cpu" else ("newton-cg", "sdca")

    def _fit_dask(self, X, y, sample_weight):
        """``fit`` on dask arrays (row partitions on the workers of a distributed cluster):
        the data term and its gradient are summed over the partitions, where they are
        computed, and so are the Hessian products of Newton-CG; only parameter-sized arrays
        travel. Class labels, label sets and proportions (whose targets are built on the
        workers); ``"auto"`` is L-BFGS, ``"sdca"`` (which updates each row's dual variable)
        runs in memory only."""
        self._dask_solver()
        data = DaskRows(X, y, sample_weight, [np.float64, np.float32], targets_2d=True)
        if data.n_targets > 1:
            self._fit_label_sets(data, X, y, sample_weight)
            return self
        classes = data.classes()
        check_classification_targets(classes)
        check_two_classes(classes)
        weights = None
        if self.class_weight is not None:    # the partitions' weights times their class's
            weights = data.weights(
                classes, self._class_weights(classes, data.class_totals(classes)), 1.0)
        self._fit_rows(data, classes, weights, X, y, sample_weight)
        return self

    def _dask_solver(self):
        """The solver of a fit on dask arrays (``"auto"``: L-BFGS), or the error."""
        solver = "lbfgs" if self.solver == "auto" else self.solver
        if solver == "sdca":
            raise ValueError("on dask arrays SparsemaxClassifier runs solver='lbfgs', 'nqn' "
                             "or 'newton-cg'; 'sdca' updates every row's dual variable "
                             "in turn and runs in memory only")
        check_device(self.device)
        if self.device != "cpu":
            raise ValueError("on dask arrays SparsemaxClassifier runs on the workers' CPUs: "
                             "use device='cpu'")
        return solver

    def _fit_rows(self, data, classes, weights, X, y, sample_weight, warn=True,
                  abandoned=None):
        """Fit on the partitions of ``data`` (a :class:`DaskRows`) with the labels
        ``classes`` (rows of other labels weigh 0) and the partitions' solver ``weights``
        (futures; None: the sample weights); ``X``, ``y`` and ``sample_weight`` are what
        the callbacks are shown. Whether the solver converged (see
        :meth:`_solve_and_publish`, and for ``abandoned`` :meth:`_solver_callback`)."""
        if negated_columns(self.negated, classes.size):
            raise ValueError("negated needs 2-D targets (a label-indicator or proportion "
                             "matrix): class labels are decoded by the argmax of the "
                             "scores, which negation does not preserve.")
        self.classes_, self.target_type_, self._negated = classes, "multiclass", None
        budget = self._check_budget()
        targets, offset = LabelTargets(classes, self.polytope, budget), None
        if self._two_classes(classes.size, ()):
            targets = LabelTargets(classes, "box", budget, n_outputs=1)
            offset = np.full(1, TWO_CLASS_OFFSET)
        _, converged = self._fit_partitions(data, targets, offset, (), weights, X, y,
                                            sample_weight, warn, abandoned)
        self._set_threshold(None)
        return converged

    def _fit_label_sets(self, data, X, y, sample_weight, weights=None, warn=True,
                        abandoned=None):
        """Fit on the partitions of ``data`` (a :class:`DaskRows`) with 2-D targets (label
        sets or proportions) and the partitions' solver ``weights`` (futures; None: the
        sample weights), as a fit in memory: their kind, the rows left out and the decision
        threshold are reductions over the partitions. ``X``, ``y`` and ``sample_weight``
        are what the callbacks are shown; ``warn``: whether the rows left out and a
        solver that did not converge are warned of; ``abandoned``: see
        :meth:`_solver_callback`. Whether it converged."""
        if self.class_weight is not None:
            raise ValueError("class_weight weighs the classes of class labels; for 2-D "
                             "targets (label sets or proportions) weigh the rows with "
                             "sample_weight")
        budget = self._check_budget()
        n_labels = data.n_targets
        summaries = data.over_targets(target_summary)
        binary = all(b for b, _ in summaries)
        self.classes_ = np.arange(n_labels)
        self.target_type_ = "multilabel" if binary else "proportions"
        self._target_dtype = data.target_dtype
        columns = negated_columns(self.negated, n_labels)
        self._negated = np.isin(np.arange(n_labels), columns) if columns else None
        targets = SetTargets(n_labels, self.polytope, budget, self.target_type_, columns)
        unlabelled = sum(n for _, n in summaries)
        if warn and unlabelled and leaves_out_unlabelled(self.polytope, self.target_type_,
                                                         columns):
            warn_unlabelled(unlabelled)
        weights = data.kept_weights(targets, weights)
        datafit, converged = self._fit_partitions(data, targets, reflect_columns(
            np.zeros(n_labels), columns), columns, weights, X, y, sample_weight, warn,
            abandoned)
        self._set_threshold(lambda: datafit.micro_f1_threshold(self.predict_proba))
        return converged

    def _fit_partitions(self, data, targets, offset, columns, weights, X, y, sample_weight,
                        warn=True, abandoned=None):
        """``(datafit, converged)``: the :class:`DaskFenchelYoung` of the partitions with
        ``targets``, score ``offset`` and the partitions' solver ``weights`` (None: the
        sample weights), solved and published (see :meth:`_solve_and_publish`)."""
        solver = solver_within_memory(self._dask_solver(),
                                      (data.n_features + 1) * targets.n_outputs,
                                      self.solver == "auto",
                                      self._memory_alternatives(dask=True))
        self.__dict__.pop("feature_names_in_", None)
        self.n_features_in_ = data.n_features
        self.alpha_, scale, factors = data_scales(data.scale_sums(weights), self.alpha)
        weight_scale = scale if factors is None else scale * factors
        datafit = DaskFenchelYoung(data, targets, weights, alpha=self.alpha_,
                                   fit_intercept=self.fit_intercept,
                                   penalize_intercept=self.penalize_intercept, offset=offset,
                                   center=self.fit_intercept and not self.penalize_intercept,
                                   weight_scale=weight_scale)
        converged = self._solve_and_publish(solver, datafit, columns, X, y, sample_weight,
                                            UsedColumns(X, keep_all=True), warn,
                                            abandoned=abandoned)
        return datafit, converged

    def _solve_and_publish(self, solver, datafit, columns, X, y, sample_weight, used,
                           warn=True, hint=None, abandoned=None):
        """Solve on ``datafit`` (with the scikit-learn callbacks) and set the fitted
        attributes; ``X`` and ``y`` are what the callbacks are shown, ``used`` the
        :class:`UsedColumns` of X that the datafit holds. Whether the solver converged (or
        a callback stopped it); if not, a ConvergenceWarning when ``warn`` (its advice
        ``hint`` when given). ``abandoned``: see :meth:`_solver_callback`."""
        bounds = coefficient_bounds(self.bounds, self.positive, datafit.n_features,
                                    datafit.n_classes, columns, datafit.weight_scale)
        context = self._begin_fit_task(X, y, self.max_iter + 1, sample_weight)
        callback, close = self._solver_callback(solver, datafit, context, X, y, sample_weight,
                                                columns, used, abandoned)
        res = self._solve(solver, datafit, self._initial_point(datafit, columns, used), bounds,
                          callback)
        self.solver_ = solver
        close()
        model = solution_model(datafit, res.x, columns, used)
        if not all(np.isfinite(v).all() for v in model.values()):
            raise ValueError("SparsemaxClassifier's solver reached non-finite coefficients; "
                             "rescale the features or use float64 X.")
        self.coef_, self.intercept_ = model["coef_"], model["intercept_"]
        dtype = datafit.dtype
        self.n_iter_ = int(res.nit)
        converged = res.success or res.status == STOPPED_BY_CALLBACK
        if not converged and warn:
            hint = hint or "increase max_iter or scale the data"
            if solver == "lbfgs" and res.status == 2 and dtype == np.float32:
                hint = ("its line search found no decrease, which for float32 X is usually "
                        "the objective's rounding floor (the fit is then as close to the "
                        "optimum as float32 allows); fit float64 X or use a larger tol")
            warnings.warn(f"SparsemaxClassifier did not converge "
                          f"({str(res.message).rstrip(': ')}); {hint}.", ConvergenceWarning)
        self._end_fit_task(context, X, y, sample_weight)
        return converged

    def _solve(self, solver, datafit, theta0, bounds, callback=None):
        """Run ``solver`` on ``datafit`` from ``theta0`` with the estimator's ``tol``,
        ``max_iter`` and ``random_state``
        (:func:`~sparsekit.linear_model._sparsemax_solvers.solve`)."""
        return solve(solver, datafit, theta0, bounds, self.tol, self.max_iter,
                     self.random_state, callback)

    def _solver_callback(self, solver, datafit, context, X, y, sample_weight, columns, used,
                         abandoned=None):
        """``(callback, close)``: the solvers' callback, which prints one line per iteration
        (``verbose``) and makes each iteration a subtask of the fit for scikit-learn's
        callbacks (a callback that asks to stop raises ``StopIteration`` in the solver),
        and ``close`` for the subtask begun after the last iteration (as scikit-learn's
        LogisticRegression does); a fit in another thread ends by :class:`Abandoned` at
        the first iteration after the Event ``abandoned`` (:func:`abandoned_on_error`)
        is set. ``(None, no-op)`` when none of them is asked for."""
        if not (self.verbose or getattr(self, "_skl_callbacks", None)):
            return stop_if_abandoned(abandoned), lambda: None
        tasks = []

        def begin():
            tasks.append(self._begin_subtask(context, f"{solver} iteration", X, y,
                                             sample_weight))

        def callback(intermediate_result):
            if abandoned is not None and abandoned.is_set():
                raise Abandoned
            r = intermediate_result
            if solver == "newton-cg":
                self._say(f"newton {r.nit}: objective {r.fun:.10g}, max|grad| "
                          f"{np.max(np.abs(r.jac)):.3g}, {r.ncg} CG steps, {r.n_active} "
                          "active rows")
            elif solver == "sdca":
                evaluated = (f"objective {r.fun:.10g}, max|grad| {np.max(np.abs(r.jac)):.3g}, "
                             if "fun" in r else "")
                self._say(f"sdca epoch {r.nit}: {evaluated}largest dual change {r.change:.3g}")
            else:                               # SciPy's L-BFGS-B passes x and fun only
                self._say(f"{solver} {r.get('nit', len(tasks))}: objective {r.fun:.10g}")

            stop = self._end_subtask(tasks[-1], X, y, sample_weight,
                                     lambda: solution_model(datafit, r.x, columns, used))
            begin()
            if stop:
                raise StopIteration

        begin()
        return callback, lambda: self._end_subtask(tasks[-1])

    def _check_sdca(self):
        if self.device != "cpu":
            raise ValueError("solver='sdca' runs on the CPU only; use device='cpu' or "
                             "another solver.")
        if self.alpha != "scale" and self.alpha <= 0:
            raise ValueError("solver='sdca' needs alpha > 0 (the dual requires a "
                             "strongly convex penalty).")

    def _check_budget(self):
        if self.polytope == "budget":
            if self.budget is None:
                raise ValueError("polytope='budget' needs a positive budget.")
            return float(self.budget)
        if self.budget is not None:
            raise ValueError(f"budget is only used with polytope='budget', not "
                             f"{self.polytope!r}.")
        return 1.0

    def _encode_targets(self, y, budget):
        """CSR targets of the un-negated problem (n, K), mask of the rows kept in the fit,
        and the class codes of class labels (None for 2-D targets); sets ``classes_`` and
        the validated ``negated`` mask ``_negated`` (None: none)."""
        codes = None
        if sp.issparse(y) and y.shape[1] == 1:
            y = y.toarray()           # a column of labels, as the same y given dense
        if sp.issparse(y) or np.ndim(y) == 2 and np.shape(y)[1] > 1:
            Y, binary = label_set_matrix(y)
            self.classes_ = np.arange(Y.shape[1])
            self.target_type_ = "multilabel" if binary else "proportions"
            self._target_dtype = y.dtype if sp.issparse(y) else np.asarray(y).dtype
        else:
            codes = self._encode_labels(column_or_1d(y, warn=True))
            self.target_type_ = "multiclass"
            n = codes.shape[0]
            Y = sp.csr_matrix((np.ones(n), codes, np.arange(n + 1)),
                              shape=(n, self.classes_.shape[0]))
        columns = negated_columns(self.negated, Y.shape[1])
        if columns and self.target_type_ == "multiclass":
            raise ValueError("negated needs 2-D targets (a label-indicator or proportion "
                             "matrix): class labels are decoded by the argmax of the "
                             "scores, which negation does not preserve.")
        self._negated = np.isin(np.arange(Y.shape[1]), columns) if columns else None
        return (*polytope_targets(Y, self.polytope, budget, self.target_type_, columns),
                codes)

    def _weigh_classes(self, sw, codes):
        """The row weights ``sw`` times ``class_weight`` of the rows' classes ``codes``."""
        if self.class_weight is None:
            return sw
        if codes is None:
            raise ValueError("class_weight weighs the classes of class labels; for 2-D "
                             "targets (label sets or proportions) weigh the rows with "
                             "sample_weight")
        return self._class_weighted(sw, codes)

    def _two_classes(self, n_classes, columns):
        """Whether the fit is of two classes on the simplex, neither negated nor bounded.

        The objective then depends on the difference of the two scores only, and the
        penalty is least where ``W = [w, -w]`` and ``b = [c, -c]``; with ``t`` the first
        probability, ``Ω(t, 1 - t) = t² - t + 1/2`` gives ``L_simplex(z; y) = 2 L_box(u;
        y_1)`` with ``u = (z_1 - z_2 + 1) / 2 = w·x + c + 1/2``: the problem of ``(w, c)`` is
        the box's over one output, at the same alpha and with the score offset 1/2, half
        the objective with the same gradient in ``w``. The solvers then handle one weight
        vector instead of two."""
        return (n_classes == 2 and self.polytope == "simplex" and not columns
                and self.bounds is None and not self.positive)

    def _initial_point(self, datafit, columns, used):
        """The solver's start: the previous model on the ``used`` columns (warm_start), or
        zeros (a two-class fit of one output starts from the previous model's
        antisymmetric part, which is all of it when that model is one of these fits)."""
        n_classes = 2 if datafit.n_classes == 1 else datafit.n_classes
        if not (self.warm_start and hasattr(self, "coef_")
                and self.coef_.shape == (n_classes, used.n_features)):
            return np.zeros(datafit.size)
        W = reflect_columns(used.restrict(self.coef_).T, columns, 0)
        b = reflect_columns(self.intercept_, columns, 0)
        if datafit.n_classes == 1:
            W, b = (W[:, :1] - W[:, 1:]) / 2, (b[:1] - b[1:]) / 2
        return datafit.to_solver(W, b)

    # -------------------------------------------------------------- predict
    @block_predictions
    def decision_function(self, X):
        """Scores ``X coef_^T + intercept_``; for two classes, ``s_1 - s_0`` (1-D).

        For 2-D (multi-label) targets ``predict`` thresholds the projection
        (``predict_proba(X) > threshold``), not these scores at 0; on the simplex a
        threshold of 0 predicts the labels whose score exceeds the row's own threshold
        tau(z) (Martins & Astudillo 2016).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            In the wider of X's and ``coef_``'s dtypes, as in scikit-learn (float32 only
            when both are).
        """
        check_is_fitted(self)
        scores = self._scores(X)
        if self.target_type_ == "multiclass" and scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def _scores(self, X, keep_on_device=False):
        """``X coef_ᵀ + intercept_``: on the GPU for CuPy X (a CuPy array) and, with
        ``device="cuda"``, for host X (moved there; the scores brought back unless
        ``keep_on_device``)."""
        check_is_fitted(self)
        if not is_device_matrix(X):
            X = validate_input(self, X, accept_sparse=["csr", "csc"],
                              dtype=[np.float64, np.float32], reset=False)
        return self._validated_scores(X, keep_on_device)

    def _validated_scores(self, X, keep_on_device=False):
        """:meth:`_scores` of an X already validated."""
        if is_device_matrix(X):
            return device_scores(X, self.coef_, self.intercept_)
        if getattr(self, "device", "cpu") == "cuda":
            scores = device_product(to_device(X), self.coef_, self.intercept_)
            return scores if keep_on_device else scores.get()
        coef = self.coef_
        dtype = np.result_type(X.dtype, coef.dtype)   # a float64 model scores in float64
        if sp.issparse(X) and X.shape[1] > X.nnz:
            # coef_ is copied transposed for the product, which on X wider than its entries
            # (hashed features, a few rows) costs more than the product: X's used columns only
            used = UsedColumns(X)
            X, coef = used.take(X), used.restrict(coef)
        if sp.issparse(X) and X.format == "csr":
            return csr_scores(X, coef.T, self.intercept_).astype(dtype, copy=False)
        coef = coef.astype(dtype, copy=False)
        return np.asarray(X @ coef.T) + self.intercept_.astype(dtype)

    @block_predictions
    def predict_proba(self, X):
        """Projection of the scores onto the polytope, with exact zeros.

        On the simplex each row is a sparse probability vector (sparsemax); on the other
        polytopes the entries are label marginals in ``[0, 1]`` whose rows need not sum to
        1, also when the model was fit on class labels: scikit-learn scorers that expect
        probability rows (``log_loss``, ``roc_auc_score(multi_class="ovr")``) apply on the
        simplex only. With ``negated``, the projection onto the negated polytope:
        ``project(scores, polytope, negated=...)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        proba = self._project(self._scores(X, keep_on_device=True))  # where they are
        return proba.get() if is_device_matrix(proba) and not is_device_matrix(X) else proba

    @block_predictions
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`: −inf where a probability is exactly 0.

        Sparsemax gives most classes of a row a probability of exactly 0 (its support is
        the classes that stay in play), whose logarithm is −inf, as for scikit-learn's
        tree models; this returns it without NumPy's divide-by-zero warning. A log loss
        of sparse probabilities is infinite as soon as a row's class is outside its
        support: the model's own loss is the sparsemax loss, not this logarithm.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            In the dtype of :meth:`predict_proba`.
        """
        proba = self.predict_proba(X)
        log = require_cupy().log if is_device_matrix(proba) else np.log
        with np.errstate(divide="ignore"):
            return log(proba)

    def _project(self, scores):
        params = {"budget": self.budget} if self.polytope == "budget" else {}
        negated = getattr(self, "_negated", None)  # absent from models pickled before it
        return project(scores, self.polytope, negated=negated, **params)

    @block_predictions
    def predict(self, X):
        """Class labels (argmax) or, for 2-D targets, the indicator ``proba > threshold``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a CuPy array / cupyx sparse matrix (CuPy out), or a
            dask array / DataFrame (a dask array out: its row blocks predicted on
            the workers).

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        check_is_fitted(self)
        if self.target_type_ == "multiclass":
            best = self._scores(X, keep_on_device=True).argmax(axis=1)
            if not is_device_matrix(best):
                return self.classes_[best]
            if is_device_matrix(X) and self.classes_.dtype.kind in "biuf":
                return require_cupy().asarray(self.classes_)[best]
            return self.classes_[best.get()]
        proba = self.predict_proba(X)
        return (proba > self._decision_threshold()).astype(self._target_dtype)

    def _decision_threshold(self):
        if self.threshold != "auto":
            return self.threshold
        # models pickled before threshold_ predicted the support on the simplex
        return getattr(self, "threshold_", 0.0 if self.polytope == "simplex" else 0.5)

    def _fit_threshold(self, X, Y, sw):
        """Set ``threshold_`` from the validated training ``X``, the fit's targets ``Y``
        (CSR) and row weights ``sw`` (see :meth:`_set_threshold`)."""
        def search():
            return micro_f1_threshold(
                (_host(self._project(self._validated_scores(X[rows]))), Y[rows],
                 _host(sw[rows])) for rows in row_slices(*Y.shape))
        self._set_threshold(search)

    def _set_threshold(self, search):
        """Set ``threshold_`` (see the ``threshold`` parameter): none for class labels,
        ``search()`` (the best micro-F1 on the training rows) for label sets on the simplex
        or the box without negated labels, the polytope's fixed one otherwise."""
        if self.target_type_ == "multiclass":
            self.__dict__.pop("threshold_", None)
        elif (self.target_type_ == "multilabel" and self.polytope in _TUNED_POLYTOPES
              and self._negated is None):
            self.threshold_ = search()
        else:
            self.threshold_ = 0.0 if self.polytope == "simplex" else 0.5

    def score(self, X, y, sample_weight=None):
        """Accuracy; for 2-D targets, subset accuracy of ``predict`` against ``y > 0``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense or CSR/CSC, or a dask array or DataFrame: the predictions are then made
            on the workers, a row block at a time, and come back with the targets (and
            weights) of dask collections in one computation; or a CuPy array or cupyx
            sparse matrix: predicted on its device, the mean taken on the host.
        y : array-like of shape (n_samples,) or (n_samples, n_classes)
            True labels, or the 2-D targets of the kind the model was fit on (a dask
            array, Series or DataFrame, or a CuPy array, too).
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in the mean (a dask array or Series, or a CuPy array,
            too).

        Returns
        -------
        score : float
            The (weighted) fraction of rows predicted exactly.
        """
        return super().score(X, y, sample_weight=sample_weight)

    def _scored(self, y, predicted, sample_weight):
        """Accuracy; for 2-D targets, subset accuracy against ``y > 0``, ``y`` checked as
        targets of the model's kind."""
        if self.target_type_ == "multiclass":
            return super()._scored(y, predicted, sample_weight)
        check_sparse_structure(y, "y")
        Y = sp.csr_matrix(y).toarray() if sp.issparse(y) else np.asarray(y, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[1] != self.classes_.size:
            raise ValueError(f"y must have shape (n_samples, {self.classes_.size}) like the "
                             f"targets of fit, got {Y.shape}")
        check_target_entries(Y)
        return accuracy_score(Y > 0, predicted > 0, sample_weight=sample_weight)
