"""Sparsemax regression and its polytope family as a scikit-learn classifier."""
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.optimize import Bounds, OptimizeResult, minimize
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score
from sklearn.preprocessing import LabelEncoder
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (
    _check_sample_weight,
    check_is_fitted,
    column_or_1d,
)

from .._cython._projections import POLYTOPE_CODES, jvp_rows, project_rows
from .._cython._sparsemax_loss import loss_grad_csr, loss_grad_dense
from ._sparsemax_dual import dual_coordinate_ascent
from ..projections import project
from ..projections._checks import negated_columns, reflect_columns
from ..gpu._cupy import require_cupy
from ..utils._validation import (check_device, check_entry_magnitude, check_sparse_structure,
                                 check_two_classes, unchanged_on_error, validate_input)

EXPECTED_FAILED_CHECKS = {
    **{name: "same objective; the solutions differ at the 1e-6 level (flat intercept valley)"
       for name in ("check_sample_weight_equivalence_on_dense_data",
                    "check_sample_weight_equivalence_on_sparse_data")},
    "check_classifiers_multilabel_output_format_predict_proba":
        "sparsemax probabilities are exactly 0 or 1 where the scores are far apart",
    "check_classifier_multioutput":
        "a label is predicted where its score exceeds its row's threshold tau, not 0",
}
_POLYTOPES = ("simplex", "budget", "box", "at_most_one", "at_least_one")
_TARGET_TOL = 1e-6
_BLOCK_BYTES = 2 << 20
_HESSIAN_DTYPE = np.float32
# dense X with at most this share of nonzeros is fit through the CSR kernel: with few
# classes the row loop over nonzeros beats a skinny GEMM over all entries.
_CSR_DENSITY = 0.25


class SparsemaxClassifier(ClassifierMixin, BaseEstimator):
    """Sparsemax regression: a linear model fit with a Fenchel-Young loss over a polytope.

    Minimizes (Madsen et al. 2016, eq. 11, with sample weights)::

        (1 / sum_i sw_i) sum_i sw_i L(W^T x_i + b; y_i) + (alpha / 2) ||W||_F^2

    where ``L(z; y) = 1/2 ||y - z||^2 - 1/2 ||proj(z) - z||^2`` is the Fenchel-Young loss of
    the Euclidean projection onto the polytope (Blondel et al. 2020). On the
    simplex this is the sparsemax loss (report eqs. 8-10) with gradient
    ``sparsemax(z) - y`` (eq. 6). The bias is not penalized unless
    ``penalize_intercept=True`` (the report's eq. 11 penalizes it). With unit weights the
    data term is the plain mean of eq. 11.

    Parameters
    ----------
    alpha : float, default=1e-3
        L2 regularization strength (the report's lambda).
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
    solver : {"lbfgs", "newton-cg", "nqn", "sdca"}, default="lbfgs"
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
        ``alpha * n_samples`` is small (the dual is then ill-conditioned).
    positive : bool, default=False
        Constrain the coefficients (not the intercept) to be nonnegative; shorthand for
        ``bounds=(0, None)``.
    bounds : tuple (lower, upper), default=None
        Box constraints on the coefficients (not the intercept). Each of ``lower`` and
        ``upper`` is None, a scalar, or an array broadcastable to ``(n_classes, n_features)``.
    threshold : float in [0, 1) or "auto", default="auto"
        Multi-label decision rule of :meth:`predict`: label ``j`` is predicted when
        ``predict_proba(X)[:, j] > threshold``. ``"auto"`` is 0 for the simplex (its
        support, the sparsemax rule) and 0.5 for the other polytopes, whose entries are
        label marginals (LP-SparseMAP leaves the rule open; 0.5 is the usual one
        for marginals, and the support of a box fit holds most labels).
    tol : float, default=1e-6
        Stop when the largest projected-gradient entry is below ``tol``. lbfgs, nqn and
        newton-cg also stop, with success, once an iteration lowers the objective by less
        than 64 machine epsilons relative to it (scikit-learn's LogisticRegression rule):
        at that point the gradient may still exceed a very small ``tol``.
    max_iter : int, default=1000
        Maximum number of solver iterations.
    warm_start : bool, default=False
        Start from the previous solution when the problem shape is unchanged.
    verbose : int, default=0
        Print the objective every iteration when positive.
    random_state : int, RandomState instance or None, default=None
        Seeds the row order of each ``"sdca"`` epoch; unused by the other solvers.
    device : {"cpu", "cuda"}, default="cpu"
        ``"cuda"`` evaluates the loss and gradient, and the projection of
        :meth:`predict_proba`, with CuPy on the current GPU.

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
    n_iter_ : int
        Solver iterations of the last fit (outer Newton steps for ``"newton-cg"``, epochs
        for ``"sdca"``).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has string feature names.

    Notes
    -----
    Every target is validated against the polytope: for instance a multi-label row with
    more active labels than ``budget`` raises ``ValueError``, since the Fenchel-Young loss
    can be negative outside the polytope (Blondel et al. 2020).

    The solvers work in the coordinates ``(W, b + W^T mu)`` with ``mu`` the weighted
    feature mean whenever the bias is free and unpenalized: the same objective, better
    conditioned, and ``X`` is never centered (sparse input stays sparse).

    ``check_estimator`` passes except ``check_sample_weight_equivalence_on_dense_data`` and
    ``..._on_sparse_data`` (:data:`EXPECTED_FAILED_CHECKS`): weighting and repeating rows
    give the same objective (tested), but with small ``alpha`` the unpenalized intercept
    lies in a nearly flat valley of the piecewise-quadratic loss, so two L-BFGS runs stop at
    points whose probabilities differ by up to ~1e-5 at the default ``tol`` (~1e-7 at
    ``tol=1e-12``), above the check's rtol of 1e-7. That is
    the default ``polytope="simplex"``; on the other polytopes ``check_classifiers_train``
    fails too, by design: their ``predict_proba`` rows are label marginals that need not
    sum to 1.
    """

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        "polytope": [StrOptions(set(_POLYTOPES))],
        "budget": [Interval(Real, 0, None, closed="neither"), None],
        "negated": ["array-like", None],
        "fit_intercept": ["boolean"],
        "penalize_intercept": ["boolean"],
        "solver": [StrOptions({"lbfgs", "newton-cg", "nqn", "sdca"})],
        "positive": ["boolean"],
        "bounds": [tuple, None],
        "threshold": [Interval(Real, 0, 1, closed="left"), StrOptions({"auto"})],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "device": [StrOptions({"cpu", "cuda"})],
    }

    def __init__(self, alpha=1e-3, *, polytope="simplex", budget=None, negated=None,
                 fit_intercept=True, penalize_intercept=False, solver="lbfgs",
                 positive=False, bounds=None, threshold="auto", tol=1e-6, max_iter=1000,
                 warm_start=False, verbose=0, random_state=None, device="cpu"):
        self.alpha = alpha
        self.polytope = polytope
        self.budget = budget
        self.negated = negated
        self.fit_intercept = fit_intercept
        self.penalize_intercept = penalize_intercept
        self.solver = solver
        self.positive = positive
        self.bounds = bounds
        self.threshold = threshold
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.verbose = verbose
        self.random_state = random_state
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_label = True     # label-indicator and proportion targets
        tags.target_tags.multi_output = True
        return tags

    # ------------------------------------------------------------------ fit
    @unchanged_on_error
    def fit(self, X, y, sample_weight=None):
        """Fit the model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Dense, CSR or CSC (CSC is converted to CSR, never densified). Dense input
            with at most 25% nonzero entries (e.g. MNIST) is fit through a CSR copy.
        y : array-like of shape (n_samples,) or (n_samples, n_classes)
            Class labels, a label-indicator matrix or a row-stochastic proportion matrix.
        sample_weight : array-like of shape (n_samples,), default=None
            Nonnegative weights; the data term is their weighted mean.

        Returns
        -------
        self : SparsemaxClassifier
        """
        self._validate_params()
        if self.solver == "sdca":
            self._check_sdca()
        check_device(self.device)
        budget = self._check_budget()
        X, y = validate_input(self, X, y, accept_sparse=["csr", "csc"],
                             dtype=[np.float64, np.float32], order="C", multi_output=True,
                             y_numeric=False)
        if sp.issparse(X):
            X = X.tocsr()
        X_rows = X  # Hessian products gather rows of X; dense float32 GEMMs are fastest
        if not sp.issparse(X) and np.count_nonzero(X) <= _CSR_DENSITY * X.size:
            X = sp.csr_matrix(X)
        check_entry_magnitude(X, X.dtype)
        sw = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        Y, keep = self._encode_targets(y, budget)
        sw = np.where(keep, sw, 0.0)
        if not sw.max() > 0:
            raise ValueError("The sample weights of the rows used in the fit sum to zero.")
        # the objective is a weighted mean: dividing by the largest weight changes nothing
        # but keeps sums of huge weights (and their float32 copy) finite
        sw = (sw / sw.max()).astype(X.dtype)
        n_classes = Y.shape[1]
        n_features = X.shape[1]
        # negated=N: the un-negated problem in (W L, L b) with the score offset flip(0),
        # since flip(z) = L z + flip(0) (see the negated parameter)
        columns = negated_columns(self._negated, n_classes)
        offset = reflect_columns(np.zeros(n_classes), columns)
        center = None
        if self.fit_intercept and not self.penalize_intercept and self.solver != "sdca":
            center = np.asarray(X.T @ sw, dtype=np.float64).ravel() / sw.sum(dtype=np.float64)
        theta0 = self._initial_point(n_features, n_classes, center, columns)
        fun = self._objective(X, Y, sw, budget, center, offset)
        bounds = self._solver_bounds(n_features, n_classes, columns)
        if self.solver in ("newton-cg", "sdca") and bounds is not None:
            raise ValueError(f"solver={self.solver!r} does not support positive or bounds; "
                             "use solver='lbfgs' or 'nqn'.")
        if self.solver == "sdca":
            res = self._fit_dual(X, Y, sw, budget, fun, theta0, offset)
        elif self.solver == "newton-cg":
            hessp = self._hessian_at(X, X_rows, sw, budget, n_classes, center, offset)
            if (self.polytope == "simplex" and self.fit_intercept
                    and not self.penalize_intercept and not columns):
                fun, hessp = _without_common_shift(fun, hessp, n_classes)
            res = _newton_cg(fun, hessp, theta0, self.tol, self.max_iter, self.verbose)
        else:
            res = self._minimize(fun, theta0, bounds, X.dtype)
        W, b = self._unpack(res.x, n_features, n_classes)
        if center is not None:
            b -= center @ W
        if not (np.isfinite(W).all() and np.isfinite(b).all()):
            raise ValueError("SparsemaxClassifier's solver reached non-finite coefficients; "
                             "rescale the features or use float64 X.")
        # coef_ follows X's dtype (the solvers iterate in float64)
        self.coef_ = np.ascontiguousarray(reflect_columns(W, columns, 0).T, dtype=X.dtype)
        self.intercept_ = reflect_columns(b, columns, 0).astype(X.dtype)
        self.n_iter_ = int(res.nit)
        if not res.success:
            hint = "increase max_iter or scale the data"
            if self.solver == "lbfgs" and res.status == 2 and X.dtype == np.float32:
                hint = ("its line search found no decrease, which for float32 X is usually "
                        "the objective's rounding floor (the fit is then as close to the "
                        "optimum as float32 allows); fit float64 X or use a larger tol")
            warnings.warn(f"SparsemaxClassifier did not converge "
                          f"({str(res.message).rstrip(': ')}); {hint}.", ConvergenceWarning)
        return self

    def _check_sdca(self):
        if self.device != "cpu":
            raise ValueError("solver='sdca' runs on the CPU only; use device='cpu' or "
                             "another solver.")
        if self.alpha <= 0:
            raise ValueError("solver='sdca' needs alpha > 0 (the dual requires a "
                             "strongly convex penalty).")

    def _fit_dual(self, X, Y, sw, budget, fun, theta0, offset):
        return dual_coordinate_ascent(
            X, Y, sw, fun, theta0, alpha=float(self.alpha),
            code=POLYTOPE_CODES[self.polytope], budget=budget,
            fit_intercept=self.fit_intercept, penalize_intercept=self.penalize_intercept,
            tol=self.tol, max_iter=self.max_iter, verbose=self.verbose, offset=offset,
            rng=np.random.default_rng(check_random_state(self.random_state).randint(2**31)))

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
        """CSR targets of the un-negated problem (n, K), mask of the rows kept in the fit;
        sets ``classes_`` and the validated ``negated`` mask ``_negated`` (None: none)."""
        if sp.issparse(y) and y.shape[1] == 1:
            y = y.toarray()           # a column of labels, as the same y given dense
        if sp.issparse(y) or np.ndim(y) == 2 and np.shape(y)[1] > 1:
            Y = sp.csr_matrix(y, dtype=np.float64, copy=True)  # cleaned below, in place
            Y.sum_duplicates()
            Y.eliminate_zeros()
            self.classes_ = np.arange(Y.shape[1])
            _check_target_entries(Y.data)
            np.clip(Y.data, 0.0, 1.0, out=Y.data)  # rounding noise within the tolerance
            binary = np.all(Y.data == 1)
            self.target_type_ = "multilabel" if binary else "proportions"
            self._target_dtype = y.dtype if sp.issparse(y) else np.asarray(y).dtype
        else:
            y = column_or_1d(y, warn=True)
            check_classification_targets(y)
            encoder = LabelEncoder()
            codes = encoder.fit_transform(y)
            check_two_classes(encoder.classes_)
            self.classes_ = encoder.classes_
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
        return self._fit_targets_to_polytope(Y, budget, columns)

    def _fit_targets_to_polytope(self, Y, budget, columns=()):
        """``flip(Y)`` (CSR), checked against the polytope, and the rows kept."""
        if columns:
            Y = _flip_columns(Y, columns)

        def require(ok, message):
            _require_target(ok, message, self.polytope, columns)

        sums = np.asarray(Y.sum(axis=1)).ravel()
        keep = np.ones(Y.shape[0], dtype=bool)
        if self.polytope == "simplex":
            # negated: 0/1 rows are points of flip(simplex) as they are, never spread
            if self.target_type_ == "multilabel" and not columns:
                keep = sums > 0
                if not keep.all():
                    warnings.warn(f"{np.sum(~keep)} rows of y have no active label; they "
                                  "are left out of the fit (their sparsemax target is "
                                  "undefined).", UserWarning)
                Y = sp.diags(1.0 / np.where(keep, sums, 1.0)) @ Y
                Y = Y.tocsr()
            else:
                hint = " (a 0/1 row: exactly one active label)" if columns else ""
                require(np.abs(sums - 1) <= _TARGET_TOL,
                        "proportion rows must sum to 1" + hint)
        elif self.polytope == "budget":
            require(sums <= budget + _TARGET_TOL,
                    f"a target row sums to more than budget={budget:g}")
        elif self.polytope == "at_most_one":
            require(sums <= 1 + _TARGET_TOL, "a target row sums to more than 1 "
                    "(polytope='at_most_one')")
        elif self.polytope == "at_least_one":
            require(sums >= 1 - _TARGET_TOL, "a target row sums to less than 1 "
                    "(polytope='at_least_one')")
        return Y, keep

    def _initial_point(self, n_features, n_classes, center, columns=()):
        if (self.warm_start and hasattr(self, "coef_")
                and self.coef_.shape == (n_classes, n_features)):
            b = self.intercept_ if center is None else self.intercept_ + self.coef_ @ center
            b = b if self.fit_intercept else np.zeros(n_classes)  # none to carry over
            return np.concatenate([reflect_columns(self.coef_.T, columns, 0).ravel(),
                                   reflect_columns(b, columns, 0)]).astype(np.float64)
        return np.zeros((n_features + 1) * n_classes)

    def _solver_bounds(self, n_features, n_classes, columns=()):
        if self.bounds is None and not self.positive:
            return None
        if self.bounds is not None and self.positive:
            raise ValueError("Give either positive=True or bounds, not both.")
        if self.positive:
            lower, upper = 0.0, None
        else:
            if len(self.bounds) != 2:
                raise ValueError("bounds must be a pair (lower, upper).")
            lower, upper = self.bounds
        shape = (n_classes, n_features)
        try:
            lo = np.broadcast_to(-np.inf if lower is None else np.asarray(lower, float), shape)
            hi = np.broadcast_to(np.inf if upper is None else np.asarray(upper, float), shape)
        except ValueError:
            raise ValueError(f"bounds: each of lower and upper must be None, a scalar or "
                             f"broadcastable to (n_classes, n_features) = {shape}.") from None
        if np.isnan(lo).any() or np.isnan(hi).any():
            raise ValueError("bounds must not contain NaN (use None or +-inf for no bound).")
        if np.any(lo > hi):
            raise ValueError("bounds: lower exceeds upper.")
        if np.any(lo == np.inf) or np.any(hi == -np.inf):
            raise ValueError("bounds: a lower bound of +inf or an upper bound of -inf leaves "
                             "no feasible coefficient.")
        if columns:  # the solver's coefficient rows of N are -coef_: [-upper, -lower]
            lo, hi = np.array(lo), np.array(hi)
            lo[columns], hi[columns] = -hi[columns], -lo[columns]
        free = np.full(n_classes, np.inf)
        lb = np.concatenate([lo.T.ravel(), -free])
        ub = np.concatenate([hi.T.ravel(), free])
        return Bounds(lb, ub)

    @staticmethod
    def _unpack(theta, n_features, n_classes):
        W = theta[: n_features * n_classes].reshape(n_features, n_classes)
        return W, theta[n_features * n_classes:].copy()

    def _objective(self, X, Y, sw, budget, center=None, offset=None):
        """Objective and gradient in the flat variable [W (d, K) row-major, b (K)].

        The scores are ``W^T x + b + offset``; the fixed ``offset`` (default 0) is not
        penalized.

        With ``center`` (a feature vector mu), the variable is ``[W, b + W^T mu]``: the
        scores ``W^T x + b = W^T (x - mu) + (b + W^T mu)`` are unchanged, so is the
        objective when ``b`` is free and unpenalized, but the problem is much better
        conditioned (features with a large mean no longer couple with the bias). ``X`` is
        never centered explicitly, so sparse input stays sparse.
        """
        n_features, n_classes = X.shape[1], Y.shape[1]
        code = POLYTOPE_CODES[self.polytope]
        dtype = X.dtype
        scale = 1.0 / float(sw.sum(dtype=np.float64))
        alpha = float(self.alpha)
        offset = np.zeros(n_classes) if offset is None else offset
        if self.device == "cuda":
            data_term = _gpu_data_term(X, Y, sw, self.polytope, budget)
        else:
            data_term = _cpu_data_term(X, Y, sw, code, budget)

        def fun(theta):
            W, b = self._unpack(theta, n_features, n_classes)
            if not self.fit_intercept:
                b = np.zeros_like(b)
            if center is not None:
                b -= center @ W
            loss, gW, gb = data_term(W.astype(dtype, copy=False),
                                     (b + offset).astype(dtype))
            w_flat = theta[: W.size]
            f = scale * loss + 0.5 * alpha * np.dot(w_flat, w_flat)
            # grad_W = scale (gW - center gb^T) + alpha W, without full-size temporaries
            grad = np.empty_like(theta)
            grad_W = grad[: W.size].reshape(W.shape)
            np.multiply(W, alpha, out=grad_W)
            gW *= scale
            grad_W += gW
            if center is not None:
                grad_W -= np.multiply.outer(center, scale * gb)
            grad[W.size:] = scale * gb if self.fit_intercept else 0.0
            if self.penalize_intercept and self.fit_intercept:
                f += 0.5 * alpha * np.dot(b, b)
                grad[W.size:] += alpha * b
            return f, grad

        return fun

    def _hessian_at(self, X, X_rows, sw, budget, n_classes, center=None, offset=None):
        """``theta -> (v -> H v, n_active)``: generalized Hessian-vector products at ``theta``.

        ``X`` gives the scores (as in the objective); the active rows are gathered from
        ``X_rows`` (the input before any CSR conversion). The products only steer the
        Newton direction, so they run in float32 (half the memory traffic, much faster
        skinny GEMMs); the objective and gradient stay in the input precision.
        """
        n_features = X.shape[1]
        code = POLYTOPE_CODES[self.polytope]
        scale = 1.0 / float(sw.sum(dtype=np.float64))
        alpha = float(self.alpha)
        hdt = _HESSIAN_DTYPE
        ones = np.ones(n_classes, dtype=hdt)
        size = n_features * n_classes
        min_free = 2 if self.polytope == "simplex" else 1
        offset = np.zeros(n_classes) if offset is None else offset

        def hessp_at(theta):
            W, b = self._unpack(theta, n_features, n_classes)
            if center is not None:
                b -= center @ W
            S = X @ W.astype(X.dtype) + (b + offset).astype(X.dtype)
            S = np.ascontiguousarray(S)
            P = np.empty_like(S)
            tau = np.empty(S.shape[0], dtype=S.dtype)
            project_rows(code, S, P, tau, budget, ones.astype(S.dtype), False)
            free = (P > 0) if self.polytope == "simplex" else (P > 0) & (P < 1)
            rows = (free.sum(axis=1) >= min_free) & (sw > 0)
            XA = X_rows[rows].astype(hdt)
            PA = np.ascontiguousarray(P[rows], dtype=hdt)
            tauA = tau[rows].astype(hdt)
            swA = (scale * sw[rows]).astype(hdt)[:, None]
            JU = np.empty_like(PA)

            def hessp(v):
                V, c = self._unpack(v, n_features, n_classes)
                if not self.fit_intercept:
                    c[:] = 0
                if center is not None:
                    c -= center @ V
                U = np.ascontiguousarray(XA @ V.astype(hdt) + c.astype(hdt))
                jvp_rows(code, PA, tauA, U, JU, ones, False)
                np.multiply(JU, swA, out=JU)
                Jc = JU.sum(axis=0, dtype=np.float64)
                HV = np.asarray(XA.T @ JU, dtype=np.float64)
                if center is not None:
                    HV -= np.outer(center, Jc)
                out = np.empty_like(v)
                out[:size] = HV.ravel() + alpha * v[:size]
                out[size:] = Jc if self.fit_intercept else 0.0
                if self.penalize_intercept and self.fit_intercept:
                    out[size:] += alpha * c
                return out

            return hessp, int(rows.sum())

        return hessp_at

    def _minimize(self, fun, theta0, bounds, dtype):
        options = {"maxiter": self.max_iter, "gtol": self.tol,
                   "ftol": 64 * np.finfo(float).eps, "maxls": 50}
        if self.solver == "nqn":
            from ..optimize import minimize_nqn

            def callback(xk):
                if self.verbose:
                    print(f"[SparsemaxClassifier] nqn objective {fun(xk)[0]:.10g}")

            # tol alone decides convergence, as for lbfgs: no stall stop
            res = minimize_nqn(fun, theta0, jac=True, bounds=bounds, callback=callback,
                               options={**options, "stall_tol": 0.0})
            if res.status == 4 and dtype == np.float32:
                # no decrease of an objective computed in float32: its rounding floor, which
                # L-BFGS-B reports as a success ("relative reduction of f <= factr*epsmch")
                res.success = True
            return res

        def callback(intermediate_result):
            if self.verbose:
                print(f"[SparsemaxClassifier] objective {intermediate_result.fun:.10g}")

        return minimize(fun, theta0, method="L-BFGS-B", jac=True, bounds=bounds,
                        callback=callback, options=options)

    # -------------------------------------------------------------- predict
    def decision_function(self, X):
        """Scores ``X coef_^T + intercept_``; for two classes, ``s_1 - s_0`` (1-D).

        For 2-D (multi-label) targets ``predict`` thresholds the projection
        (``predict_proba(X) > threshold``), not these scores at 0; on the simplex with the
        default threshold a label is predicted when its score exceeds the row's own
        threshold tau(z) (Martins & Astudillo 2016).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples, n_classes) or (n_samples,)
            In the dtype of X (float32 input is scored in float32).
        """
        check_is_fitted(self)
        scores = self._scores(X)
        if self.target_type_ == "multiclass" and scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def _scores(self, X):
        check_is_fitted(self)
        X = validate_input(self, X, accept_sparse=["csr", "csc"],
                          dtype=[np.float64, np.float32], reset=False)
        coef = self.coef_.astype(X.dtype, copy=False)
        return np.asarray(X @ coef.T) + self.intercept_.astype(X.dtype)

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

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        scores = self._scores(X)
        params = {"budget": self.budget} if self.polytope == "budget" else {}
        negated = getattr(self, "_negated", None)  # absent from models pickled before it
        if self.device == "cuda":
            cp = require_cupy()
            return cp.asnumpy(project(cp.asarray(scores), self.polytope, negated=negated,
                                      **params))
        return project(scores, self.polytope, negated=negated, **params)

    def predict(self, X):
        """Class labels (argmax) or, for 2-D targets, the indicator ``proba > threshold``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        y : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        check_is_fitted(self)
        if self.target_type_ == "multiclass":
            return self.classes_[np.argmax(self._scores(X), axis=1)]
        proba = self.predict_proba(X)
        return (proba > self._decision_threshold()).astype(self._target_dtype)

    def _decision_threshold(self):
        if self.threshold != "auto":
            return self.threshold
        return 0.0 if self.polytope == "simplex" else 0.5

    def score(self, X, y, sample_weight=None):
        """Accuracy; for 2-D targets, subset accuracy of ``predict`` against ``y > 0``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or (n_samples, n_classes)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        check_is_fitted(self)
        if self.target_type_ == "multiclass":
            return super().score(X, y, sample_weight=sample_weight)
        check_sparse_structure(y, "y")
        Y = sp.csr_matrix(y).toarray() if sp.issparse(y) else np.asarray(y, dtype=np.float64)
        if Y.ndim != 2 or Y.shape[1] != self.classes_.size:
            raise ValueError(f"y must have shape (n_samples, {self.classes_.size}) like the "
                             f"targets of fit, got {Y.shape}")
        _check_target_entries(Y)
        return accuracy_score(Y > 0, self.predict(X) > 0, sample_weight=sample_weight)


def _check_target_entries(values):
    """Raise unless every 2-D target entry is finite and in [0, 1] (up to rounding)."""
    if not np.isfinite(values).all():
        raise ValueError("y contains NaN or infinity.")
    if values.size and (values.min() < -_TARGET_TOL or values.max() > 1 + _TARGET_TOL):
        raise ValueError("Target entries must lie in [0, 1].")


def _flip_columns(Y, columns):
    """CSR ``Y`` with ``1 - Y`` on ``columns``: only those columns become dense (n x |N|
    values), the others keep their sparsity."""
    Y = sp.csc_matrix(Y)
    flipped = sp.csc_matrix(1.0 - Y[:, columns].toarray())
    rest = np.setdiff1d(np.arange(Y.shape[1]), columns)
    order = np.argsort(np.concatenate([rest, columns]))
    out = sp.hstack([Y[:, rest], flipped], format="csc")[:, order].tocsr()
    out.eliminate_zeros()
    return out


def _require_target(ok, message, polytope, columns):
    if not np.all(ok):
        rows = np.flatnonzero(~np.asarray(ok))
        where = "this polytope" if not columns else (
            f"the {polytope!r} polytope with columns {columns} negated (y with 1 - y on "
            f"those columns must lie in {polytope!r}; checked on those flipped rows)")
        raise ValueError(f"Invalid target for {where}: {message} (rows "
                         f"{rows[:5].tolist()}{'...' if rows.size > 5 else ''}).")


def _cpu_data_term(X, Y, sw, code, budget):
    """Closure ``(W, b) -> (sum_i sw_i L_i, grad_W, grad_b)`` on the Cython kernel."""
    dtype = X.dtype
    yptr = Y.indptr.astype(np.int64)
    yind = Y.indices.astype(np.int64)
    ydat = Y.data.astype(dtype)
    n_classes = Y.shape[1]
    gW = np.empty((X.shape[1], n_classes), dtype=dtype)
    gb = np.empty(n_classes, dtype=dtype)
    if sp.issparse(X):
        indices, indptr = X.indices, X.indptr

        def data_term(W, b):
            loss = loss_grad_csr(X.data, indices, indptr, np.ascontiguousarray(W), b, yptr,
                                 yind, ydat, sw, code, budget, gW, gb)
            return loss, gW, gb
    else:
        block = max(16, _BLOCK_BYTES // max(1, X.shape[1] * X.itemsize))

        def data_term(W, b):
            loss = loss_grad_dense(X, np.ascontiguousarray(W), b, yptr, yind, ydat, sw, code,
                                   budget, gW, gb, block)
            return loss, gW, gb
    return data_term


def _without_common_shift(fun, hessp_at, n_classes):
    """``fun`` and ``hessp_at`` with the mean of the intercept block removed from gradients
    and Hessian products. Sparsemax on the simplex is invariant to adding one constant to
    every score, so with a free, unpenalized intercept that block sums to zero in exact
    arithmetic; its rounding (float32 scores) would otherwise be divided by the tiny damping
    of the Newton system along the null direction and drift the intercept by ~1e3."""
    def centered(v):
        v[-n_classes:] -= v[-n_classes:].mean()
        return v

    def centered_fun(theta):
        f, g = fun(theta)
        return f, centered(g)

    def centered_hessp_at(theta):
        hessp, n_active = hessp_at(theta)
        return (lambda v: centered(hessp(v))), n_active

    return centered_fun, centered_hessp_at


def _newton_cg(fun, hessp_at, theta, tol, max_iter, verbose):
    """Damped truncated Newton with conjugate gradients and Armijo backtracking.

    Each step approximately solves ``(H + c ||g|| I) d = -g``. The Levenberg-Marquardt
    damping keeps the step bounded where the generalized Hessian is (nearly) singular
    (e.g. an unpenalized bias that no active row constrains) and vanishes with ``g``,
    keeping the fast local rate; ``c`` shrinks after full steps and grows after short or
    failed line searches. The CG forcing term is ``min(0.5, sqrt(||g||))``. Stops when
    ``max|grad| <= tol`` (the L-BFGS-B ``gtol`` rule).
    """
    f, g = fun(theta)
    damping = 1e-3
    message, success, it = "maximum number of iterations reached", False, 0
    for it in range(1, max_iter + 1):
        if np.max(np.abs(g)) <= tol:
            message, success, it = "max|grad| <= tol", True, it - 1
            break
        hessp, n_active = hessp_at(theta)
        gnorm = np.linalg.norm(g)
        for _ in range(8):
            shift = damping * gnorm
            direction, n_cg = _conjugate_gradient(lambda v: hessp(v) + shift * v, g,
                                                  min(0.5, np.sqrt(gnorm)) * gnorm)
            step, f_new, g_new = _armijo(fun, theta, f, g @ direction, direction)
            if step is not None:
                break
            damping *= 100.0
        else:
            message = "line search failed (the objective does not decrease)"
            break
        damping = max(damping / 10, 1e-8) if step == 1.0 else damping * 10 ** (step < 0.25)
        theta = theta + step * direction
        decrease, f, g = f - f_new, f_new, g_new.copy()
        if verbose:
            print(f"[SparsemaxClassifier] newton {it}: objective {f:.10g}, max|grad| "
                  f"{np.max(np.abs(g)):.3g}, {n_cg} CG steps, {n_active} active rows")
        if np.max(np.abs(g)) <= tol:     # tested here too, so the last step may converge
            message, success = "max|grad| <= tol", True
            break
        if decrease <= 64 * np.finfo(float).eps * max(abs(f), 1.0):
            message, success = "relative reduction of the objective below 64 eps", True
            break
    return OptimizeResult(x=theta, fun=f, jac=g, nit=it, success=success, message=message)


def _armijo(fun, theta, f, slope, direction, max_halvings=20):
    """Largest step ``2^-j`` with sufficient decrease and ``fun`` there, or Nones."""
    step = 1.0
    for _ in range(max_halvings):
        f_new, g_new = fun(theta + step * direction)
        if f_new <= f + 1e-4 * step * slope:
            return step, f_new, g_new
        step *= 0.5
    return None, None, None


def _conjugate_gradient(hessp, g, residual_tol, max_cg=200):
    """Approximate solution of ``H x = -g`` and the number of CG steps.

    At most ``max_cg`` steps (scikit-learn's newton-cg inner cap): a truncated step is
    still a descent direction, and on ill-conditioned sparse problems the exact solve
    can take thousands of Hessian products.
    """
    x = np.zeros_like(g)
    r = -g
    p = r.copy()
    rs = r @ r
    for n_cg in range(1, min(2 * g.size, max_cg) + 1):
        Hp = hessp(p)
        curvature = p @ Hp
        if curvature <= 1e-16 * (p @ p):
            return (x if n_cg > 1 else -g), n_cg
        a = rs / curvature
        x += a * p
        r -= a * Hp
        rs_new = r @ r
        if np.sqrt(rs_new) <= residual_tol:
            break
        p = r + (rs_new / rs) * p
        rs = rs_new
    return x, n_cg


def _gpu_data_term(X, Y, sw, polytope, budget):
    """CuPy version of :func:`_cpu_data_term` (scores, projection, loss, gradient)."""
    cp = require_cupy()
    if sp.issparse(X):
        import cupyx.scipy.sparse as cusp

        Xg = cusp.csr_matrix(X)
    else:
        Xg = cp.asarray(X)
    Yg = cp.asarray(Y.toarray(), dtype=X.dtype)
    swg = cp.asarray(sw)[:, None]
    params = {"budget": budget} if polytope == "budget" else {}

    def data_term(W, b):
        S = Xg @ cp.asarray(W) + cp.asarray(b)
        if polytope == "simplex":
            S -= S.max(axis=1, keepdims=True)
        P = project(S, polytope, **params)
        loss = float(cp.sum(swg * 0.5 * (Yg - P) * (Yg + P - 2 * S), dtype=cp.float64))
        G = swg * (P - Yg)
        return loss, cp.asnumpy(Xg.T @ G), cp.asnumpy(G.sum(axis=0))

    return data_term
