"""The regularization path of :class:`~sparsekit.L1LogisticOBA`: warm-started solves
from the smallest C up, and the C values of a grid (as its cross-validation takes them)."""
import numbers

import numpy as np
from sklearn.utils._param_validation import validate_parameter_constraints

from sparsekit.linear_model._device_input import fit_device
from sparsekit.linear_model._dask_input import is_dask_collection
from sparsekit.linear_model._l1_advice import warn_not_converged
from sparsekit.linear_model._l1_logistic import L1LogisticOBA
from sparsekit.linear_model._l1_problems import (DaskProblems, DeviceProblems, MemoryProblems,
                                                 multinomial_within_memory)
from sparsekit.linear_model._l1_solve import (MULTINOMIAL_CG_MAXITER, binary_model,
                                              multinomial_model, null_start, oba_solve)
from sparsekit.utils._threads import one_blas_thread, stop_if_abandoned


def l1_logistic_path(X, y, Cs=10, *, pos_class=None, fit_intercept=True, tol=1e-8,
                     max_iter=500, sample_weight=None, multiclass="ovr", l1_ratio=1.0,
                     device="cpu"):
    """Regularization path of :class:`L1LogisticOBA` over ``Cs``, with warm starts.

    The problems are solved from the smallest C to the largest, each started at the
    previous solution (the path goes from sparse to dense solutions).

    Read more in the :ref:`User Guide <l1_logistic>`.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Or, with ``device="cuda"``, a CuPy array or cupyx sparse matrix; or a dask array of
        row blocks (or a dask DataFrame, ``y`` and ``sample_weight`` then of the same
        frame, or arrays), solved on the workers of the default ``distributed.Client`` as
        :class:`L1LogisticOBA` fits it.
    y : array-like of shape (n_samples,)
        Labels; with more than two classes, ``pos_class`` picks the positive one, or
        ``multiclass="multinomial"`` fits the multinomial model of all of them.
    Cs : int or array-like, default=10
        The C values, or their number (then log-spaced on [C_min, 1e4 C_min], where
        C_min = l1_ratio/‖Xᵀ∇ℓ(0)‖_∞ is the smallest C giving a nonzero w).
    pos_class : label, optional
        The positive class (default: the larger of two labels).
    fit_intercept : bool, default=True
        As in :class:`L1LogisticOBA`.
    tol : float, default=1e-8
        As in :class:`L1LogisticOBA`, for each C.
    max_iter : int, default=500
        As in :class:`L1LogisticOBA`, for each C.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights of the rows' loss terms.
    multiclass : {"ovr", "multinomial"}, default="ovr"
        As in :class:`L1LogisticOBA`.
    l1_ratio : float in (0, 1], default=1.0
        As in :class:`L1LogisticOBA`.
    device : {"cpu", "cuda"}, default="cpu"
        As in :class:`L1LogisticOBA`: ``"cuda"`` solves the path on the current GPU (host
        X is copied there once); the solutions are NumPy arrays.

    Returns
    -------
    coefs : ndarray of shape (n_Cs, n_features + fit_intercept) or \
            (n_Cs, n_classes, n_features + fit_intercept)
        Solutions in the order of ``Cs`` (the intercept last); one row per class for the
        multinomial model.
    Cs : ndarray of shape (n_Cs,)
        The C values, increasing.
    n_iter : ndarray of shape (n_Cs,)
        OBA iterations per C.

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 2 (OBA, Algorithms 1 and 2).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sparsekit import l1_logistic_path
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> coefs, Cs, n_iter = l1_logistic_path(StandardScaler().fit_transform(X), y, Cs=4)
    >>> (coefs[:, :-1] != 0).sum(axis=1)
    array([ 0,  8, 16, 27])
    """
    est = L1LogisticOBA(fit_intercept=fit_intercept, tol=tol, max_iter=max_iter,
                        multiclass=multiclass, l1_ratio=l1_ratio, device=device)
    validate_parameter_constraints(est._parameter_constraints, est.get_params(deep=False),
                                   caller_name="l1_logistic_path")   # names the function
    on_device = fit_device(device, X)
    if on_device and is_dask_collection(X):
        raise ValueError("device='cuda' solves in-memory X; use device='cpu' for dask arrays")
    data = (DeviceProblems if on_device else DaskProblems if is_dask_collection(X)
            else MemoryProblems)(est, X, y, sample_weight, n_problems=1)
    classes = data.classes
    multinomial = multiclass == "multinomial" and classes.size > 2
    if multinomial:
        if pos_class is not None:
            raise ValueError("pos_class is for a binary path; the multinomial model has "
                             "every class")
    elif pos_class is None:
        if classes.size != 2:
            raise ValueError("pos_class must be given when y has more than two classes")
        pos_class = classes[1]
    elif pos_class not in classes:
        raise ValueError(f"pos_class {pos_class!r} is not a label of y")
    if multinomial:     # the solver's arrays and the path's solutions (Cs checked below)
        n_Cs = Cs if isinstance(Cs, numbers.Integral) else np.size(Cs)
        multinomial_within_memory(data.n_samples, data.columns.n_used, classes.size,
                                  fit_intercept, kept=max(int(n_Cs), 0))
    datafit = data.datafit(None if multinomial else int(np.searchsorted(classes, pos_class)))
    c_factor = data.c_factor
    Cs = C_values(Cs, lambda: (l1_ratio * smallest_active_C(datafit) / c_factor,) * 2)
    width = datafit.n_features + fit_intercept
    coefs = np.empty((Cs.size, classes.size, width) if multinomial else (Cs.size, width))
    results = warm_path(datafit, Cs * c_factor, tol, max_iter, l1_ratio, multinomial,
                        coefs)
    n_iter = np.array([res.nit for res in results], dtype=np.int32)
    failed = [k for k, res in enumerate(results) if not res.success]
    if failed:   # one warning for the path, not one per C
        warn_not_converged([f"C={C:g}" for C in Cs], failed, results, tol,
                           noun="values of C", advice=data.advice)
    return data.columns.expand(coefs), Cs, n_iter


def warm_path(datafit, Cs, tol, max_iter, l1_ratio, multinomial, out, abandoned=None):
    """OBA's solves of ``datafit`` at each C of ``Cs`` (C times the mean sample weight),
    from the smallest up, each started at the previous solution, written to ``out[k]`` as
    :func:`_path_coef` (a row per C in the order of ``Cs``); their OptimizeResults, without
    ``x`` and ``jac`` (a path keeps one solution at a time beside ``out``). A path run in
    another thread ends by :class:`~sparsekit.utils._threads.Abandoned` at the first
    iteration after the Event ``abandoned``
    (:func:`~sparsekit.utils._threads.abandoned_on_error`) is set."""
    results, x = [None] * len(Cs), None
    with one_blas_thread():   # as L1LogisticOBA.fit's solves
        for k in np.argsort(Cs, kind="stable"):
            res = oba_solve(datafit, Cs[k], tol, max_iter, x, 0, l1_ratio,
                            MULTINOMIAL_CG_MAXITER if multinomial else 1000,
                            stop_if_abandoned(abandoned))
            x = res.pop("x")
            res.pop("jac")
            out[k] = _path_coef(datafit, x, multinomial)
            results[k] = res
    return results


def _path_coef(datafit, x, multinomial):
    """The solution ``x`` as a path's row: (w, b) of a binary problem, or the (K, D + 1)
    block (coef | intercept) of the multinomial one (without the intercept column when
    none is fitted); the intercepts of X's columns as given."""
    coef, intercept = (multinomial_model if multinomial else binary_model)(datafit, x)
    block = np.hstack([coef, intercept[:, None]]) if datafit.fit_intercept else coef
    return block if multinomial else block[0]


def C_values(Cs, span):
    """``Cs`` as an array of positive C values; an integer ``Cs`` is that many log-spaced on
    [lo, 10⁴ hi], ``(lo, hi) = span()`` (computed only then)."""
    if isinstance(Cs, bool) or isinstance(Cs, numbers.Integral) and Cs < 1:
        raise ValueError(f"Cs must be a number of C values (>= 1) or an array of them, got {Cs!r}")
    if isinstance(Cs, numbers.Integral):
        lo, hi = span()
        if not 0 < lo <= hi < np.finfo(np.float64).max / 1e4:
            raise ValueError(f"the smallest C that gives a nonzero w is {lo:.3g}, no start for "
                             "a grid of C values in float64: X's entries or the sample weights "
                             "are too small; rescale them (e.g. MaxAbsScaler) or pass Cs as an "
                             "array")
        Cs = np.logspace(np.log10(lo), np.log10(hi) + 4, Cs)
    given = Cs
    try:
        Cs = np.asarray(Cs, dtype=np.float64)
        Cs = Cs.reshape(1) if Cs.ndim == 0 else Cs      # one C, as a number
    except (TypeError, ValueError):
        Cs = np.array([np.nan])
    if Cs.ndim != 1 or Cs.size == 0 or np.any(~np.isfinite(Cs)) or np.any(Cs <= 0):
        raise ValueError(f"Cs must be a number of C values (>= 1) or a non-empty 1-D list of "
                         f"positive finite numbers, got {given!r}")
    return Cs


def smallest_active_C(datafit):
    """The C below which w = 0 is optimal: ‖∇_w f‖_∞ ≤ 1/(C n) at the null start."""
    _, grad = datafit.value_grad(null_start(datafit))
    g = np.abs(grad[datafit.penalty_weights > 0]).max() * datafit.n_samples
    if not g > 0:
        raise ValueError("w = 0 is optimal for every C (X is zero on the weighted rows, or "
                         "the null start already fits them): pass Cs as an array")
    with np.errstate(over="ignore"):  # a subnormal g: the caller says what to do of inf
        return 1.0 / g
