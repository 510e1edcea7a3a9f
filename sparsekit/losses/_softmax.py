"""Exact softmax losses and the two double-sum surrogates used by ExtremeSoftmaxSGD.

Weights are stored one row per class, ``coef`` of shape (K, D); scores are
``X @ coef.T + intercept``. Everything is a *mean* over examples (the per-example convention
of Fagan & Iyengar 2018) and evaluated in log space, so nothing overflows.

- ``softmax_nll``: the one exact NLL used for every method (mean of
  ``-log softmax(x_i W)_{y_i}``; applying softmax twice, as the code behind some published
  baselines did, scores them wrongly).
- ``double_sum_objective`` / ``double_sum_gradient``: f(u, W) of eq. (5) divided by N,
  ``mean_i[u_i + e^{-u_i}(1 + sum_{k != y_i} e^{s_ik}) - 1] + alpha/2 ||W||^2``,
  equal to the NLL (+ ridge) at ``u = optimal_u(...)``.
- ``ove_objective`` / ``ove_gradient``: the negated One-vs-Each bound of
  Titsias 2016, eq. (15), ``mean_i sum_{k != y_i} softplus(s_ik) + alpha/2 ||W||^2``.
- ``log_ove_bound``: ``log prod_{m != k} sigma(f_k - f_m)`` for every class k (eq. 4).

Inputs are checked at O(nnz) cost (the stored values of a sparse X, never densified): X, u,
scores and sample weights must be finite real numbers, y class indices in ``0..K-1`` and
alpha a finite number >= 0 (``ValueError``; ``TypeError`` for non-numeric or, where dense
scores are expected, sparse input). The weights are not checked: NaN weights give NaN
results.
"""
import math
import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import log_expit, logsumexp
from sklearn import get_config

from ..utils._columns import renumbered_columns, stored_columns
from ..utils._scores import csr_scores
from ..utils._validation import checked_sparse

__all__ = [
    "softmax_scores",
    "softmax_log_proba",
    "softmax_nll",
    "optimal_u",
    "double_sum_objective",
    "double_sum_gradient",
    "ove_objective",
    "ove_gradient",
    "log_ove_bound",
]

_CHUNK_ENTRIES = 2**22  # rows per chunk * K kept below this when scoring big problems


def _finite_real(values, name, kind):
    """``values`` as an array, or ``TypeError`` unless it holds real numbers and
    ``ValueError`` if any is NaN or infinite ("{name} must be a finite {kind}")."""
    values = np.asarray(values)
    if values.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a {kind} of real numbers, got dtype {values.dtype}")
    if not np.isfinite(values).all():
        raise ValueError(f"{name} must be a finite {kind}, got NaN or infinity")
    return values


def _check_X(X, coef):
    """Checked ``(X, coef)``: X a 2-D array (array-likes converted) or a sparse matrix (made
    CSR, never dense) of finite real numbers, checked in O(nnz); coef of shape
    (n_classes, n_features of X), its values not checked."""
    kind = "2-D array or sparse matrix"
    if sp.issparse(X):
        # checked before SciPy's conversion, which trusts the structure it is given (and
        # warns of unsigned indices, which checked_sparse makes int32/int64)
        X = checked_sparse(sp.csr_matrix(checked_sparse(X)))
        _finite_real(X.data, "X", kind)
    else:
        X = _finite_real(X, "X", kind)
        if X.ndim != 2:
            raise ValueError(f"X must be a {kind} (n_samples, n_features), got shape {X.shape}")
    coef = np.asarray(coef)
    if coef.ndim != 2 or X.shape[1] != coef.shape[1]:
        raise ValueError(f"coef must have shape (n_classes, {X.shape[1]}) to score X of "
                         f"{X.shape[1]} features, got {coef.shape}")
    return X, coef


def _check_alpha(alpha):
    """``alpha`` as a float, or ``ValueError`` unless it is a finite real number >= 0."""
    if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
            or not 0 <= alpha < math.inf):
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    return float(alpha)


def _check_scores(scores, dims, masked=False):
    """``scores`` as a float64 array of ``dims`` dimensions (a tuple), finite, with at least
    one class (the last axis), or a clear error. With ``masked``, -inf (a class of
    probability 0) is allowed where a row has a finite score."""
    kind = f"{' or '.join(f'{d}-D' for d in dims)} array"
    if sp.issparse(scores):
        raise TypeError(f"scores must be a dense {kind}, got a sparse matrix")
    scores = np.asarray(scores)
    masked = masked and scores.dtype.kind == "f"
    shown = np.where(scores == -np.inf, 0.0, scores) if masked else scores
    _finite_real(shown, "scores", kind)
    if scores.ndim not in dims or scores.shape[-1] == 0:
        raise ValueError(f"scores must be a finite {kind} with at least one class (n_rows, "
                         f"n_classes), got shape {scores.shape}")
    if masked and np.any(np.max(scores, axis=-1) == -np.inf):
        raise ValueError("scores: every row needs a finite score (a row of -inf has no "
                         "softmax)")
    return scores.astype(np.float64, copy=False)


def softmax_scores(X, coef, intercept=None):
    """Dense scores ``X @ coef.T (+ intercept)`` of shape (n, K); X dense or sparse.

    Computed in float64 whatever the dtypes (a float32 model scores as its float64 copy
    would), a block of classes at a time, so that ``coef`` is never copied whole: a sparse
    X with fewer stored entries than columns is scored on the columns it uses (SciPy's
    ``X @ coef.T`` would make a C-ordered copy of all K x D weights for every call), a dense
    X against float64 blocks of rows of coef. A Fortran-ordered ``coef`` scores sparse X
    in place.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n, D)
        Finite real numbers (checked in O(nnz); a sparse X stays sparse).
    coef : ndarray of shape (K, D)
        The weights, one row per class; not checked for NaN (NaN weights give NaN scores).
    intercept : ndarray of shape (K,), optional
        Added to every row of scores.

    Returns
    -------
    scores : ndarray of shape (n, K)
        In float64.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from sparsekit.losses import softmax_scores
    >>> X = sp.csr_matrix([[1.0, 0.0], [0.0, 2.0]])
    >>> coef = np.array([[1.0, -1.0], [0.5, 0.5], [0.0, 1.0]])
    >>> softmax_scores(X, coef, np.array([0.0, 0.0, -1.0]))
    array([[ 1. ,  0.5, -1. ],
           [-2. ,  1. ,  1. ]])
    """
    return _scores(*_check_X(X, coef), intercept)


def _scores(X, coef, intercept=None):
    """``softmax_scores`` of inputs already checked by ``_check_X``."""
    if sp.issparse(X):
        if coef.T.flags.c_contiguous and coef.dtype in (np.float32, np.float64):
            return csr_scores(X, coef.T, intercept)      # a Fortran-ordered coef, in place
        if X.nnz < X.shape[1]:          # fewer entries than columns: gather their weights
            columns = stored_columns(X)
            X = renumbered_columns(X, columns)
        else:                           # usually most columns: a plain copy is cheaper
            columns = slice(None)
    else:
        X = np.asarray(X, dtype=np.float64)
        columns = slice(None)
    K = coef.shape[0]
    step = max(1, _CHUNK_ENTRIES // max(X.shape[1], 1))
    S = np.empty((X.shape[0], K))
    for start in range(0, K, step):
        block = coef[start:start + step, columns]
        S[:, start:start + step] = (csr_scores(X, block.T) if sp.issparse(X)
                                    else X @ block.T.astype(np.float64, copy=False))
    if intercept is not None:
        S += intercept
    return S


def _shifted_log_normalizer(S):
    """``(S - m, log sum_k exp(S_ik - m_i))`` with m_i the row maximum: log-probabilities
    are the difference of the two, taken after the shift (``m + log sum`` rounds back to m
    once |m| is large: scores of 1e17 gave probabilities summing to 2)."""
    Z = S - S.max(axis=1, keepdims=True)
    return Z, np.log(np.exp(Z).sum(axis=1))


def softmax_log_proba(scores):
    """Row-wise ``log softmax``, ``(s - max s) - log sum exp(s - max s)`` (a 1-D ``scores``
    is one row).

    Parameters
    ----------
    scores : array-like of shape (n_rows, n_classes) or (n_classes,)
        Dense, with n_classes >= 1 (``TypeError`` for a sparse matrix), finite but for
        -inf, a class of probability 0 (each row needs a finite score).

    Returns
    -------
    log_proba : ndarray of the shape of ``scores``, float64

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import softmax_log_proba
    >>> np.exp(softmax_log_proba(np.array([[0.0, np.log(3.0)], [1000.0, 0.0]])))
    array([[0.25, 0.75],
           [1.  , 0.  ]])
    """
    scores = _check_scores(scores, (1, 2), masked=True)
    return _log_softmax(np.atleast_2d(scores)).reshape(scores.shape)


def _log_softmax(S):
    """``softmax_log_proba`` of a 2-D float64 ``S``, unchecked (NaN scores give NaN)."""
    Z, log_norm = _shifted_log_normalizer(S)
    return Z - log_norm[:, None]


def _chunks(n, K):
    """Slices of ``n`` rows whose (rows, K) float64 scores and their temporaries (about
    three such arrays) stay within 32 MiB and within scikit-learn's ``working_memory``
    (``sklearn.set_config``, MiB), which a user lowers to bound prediction's memory."""
    budget = min(_CHUNK_ENTRIES, int(get_config()["working_memory"] * 2**20) // 24)
    step = max(1, budget // max(K, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def softmax_nll(X, y, coef, intercept=None, sample_weight=None):
    """Exact mean softmax negative log-likelihood, eq. (2) without ridge, divided by N.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n, D)
        Finite real numbers (checked in O(nnz); a sparse X stays sparse).
    y : array-like of shape (n,)
        Class indices in ``0..K-1``.
    coef : ndarray of shape (K, D)
        The weights, one row per class.
    intercept : ndarray of shape (K,), optional
        The classes' intercepts (default 0).
    sample_weight : array-like of shape (n,), optional
        Finite and non-negative; weighted mean when given.

    Returns
    -------
    nll : float
        The (weighted) mean of −log softmax(scores)_y over the rows.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import softmax_nll
    >>> X = np.eye(2)
    >>> coef = np.log([[3.0, 1.0], [1.0, 3.0]])
    >>> bool(np.isclose(softmax_nll(X, [0, 1], coef), -np.log(0.75)))
    True
    """
    X, coef = _check_X(X, coef)         # a sparse X is made CSR: rows are sliced below
    K = coef.shape[0]
    y = _class_indices(y, X.shape[0], K)
    if sample_weight is not None:
        sample_weight = _finite_real(sample_weight, "sample_weight", "1-D array")
        sample_weight = sample_weight.astype(float, copy=False)
        if sample_weight.shape != y.shape or np.any(sample_weight < 0):
            raise ValueError(f"sample_weight must be {y.shape[0]} finite non-negative numbers")
    mass = X.shape[0] if sample_weight is None else np.sum(sample_weight)
    if not mass > 0:
        raise ValueError("the mean NLL needs at least one example of positive weight")
    total = 0.0
    for sl in _chunks(X.shape[0], K):
        Z, log_norm = _shifted_log_normalizer(_scores(X[sl], coef, intercept))
        nll = log_norm - Z[np.arange(Z.shape[0]), y[sl]]
        total += nll.sum() if sample_weight is None else nll @ sample_weight[sl]
    return total / mass


def _class_indices(y, n, K):
    """``y`` as integer class indices in ``0..K-1``, one per row of X, or a clear error."""
    y = np.asarray(y)
    if y.shape != (n,) or (y.size and (y.dtype.kind not in "iu" or y.min() < 0
                                        or y.max() >= K)):
        raise ValueError(f"y must hold {n} integer class indices in 0..{K - 1}")
    return y


def _per_example(u, n):
    """``u`` as n finite float64 values (a column or a short u would broadcast silently)."""
    u = _finite_real(u, "u", "1-D array").astype(np.float64, copy=False)
    if u.shape != (n,):
        raise ValueError(f"u must have shape ({n},), got {u.shape}")
    return u


def _ridge(alpha, coef):
    """``alpha/2 ||W||^2`` summed in float64; 0 without ridge, also where it overflows."""
    if not alpha:
        return 0.0
    w = np.asarray(coef, dtype=np.float64).ravel()
    return 0.5 * alpha * (w @ w)


def _gaps(X, y, coef, alpha=0.0, intercept=None):
    """Checked ``(X, y, coef, alpha)`` (see the module docstring) and the score gaps
    ``s_ik = x_i.(w_k - w_{y_i})`` of shape (n, K), -inf on the true class."""
    X, coef = _check_X(X, coef)
    if X.shape[0] == 0:
        raise ValueError("the mean over examples needs at least one example (X has 0 rows)")
    y = _class_indices(y, X.shape[0], coef.shape[0])
    alpha = _check_alpha(alpha)
    S = _scores(X, coef, intercept)
    rows = np.arange(S.shape[0])
    gaps = S - S[rows, y][:, None]           # s_ik = x.(w_k - w_y); 0 on the true class
    gaps[rows, y] = -np.inf
    return X, y, coef, alpha, gaps


def optimal_u(X, y, coef, intercept=None):
    """``u_i* = log(1 + sum_{k != y_i} e^{s_ik})`` (Fagan & Iyengar 2018), the NLL of each example.

    Here s_ik = x_iᵀ(w_k − w_{y_i}) (+ the intercepts' difference) is class k's score gap.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n, D)
        Finite real numbers (a sparse X stays sparse).
    y : array-like of shape (n,)
        Class indices in ``0..K-1``.
    coef : ndarray of shape (K, D)
        The weights W, one row per class.
    intercept : ndarray of shape (K,), optional
        The classes' intercepts (default 0).

    Returns
    -------
    u : ndarray of shape (n,)
        The minimizer over u of the double-sum objective for these weights: each
        example's softmax negative log-likelihood.

    References
    ----------
    .. [1] Fagan, F. & Iyengar, G. (2018). Unbiased scalable softmax optimization.
       arXiv:1803.08577 (Implicit SGD, section 3.2; U-max, section 3.1; eq. 3).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import optimal_u, softmax_nll
    >>> X, y = np.eye(3), np.array([0, 1, 2])
    >>> coef = np.random.default_rng(0).normal(size=(4, 3))
    >>> u = optimal_u(X, y, coef)
    >>> bool(np.isclose(u.mean(), softmax_nll(X, y, coef)))
    True
    """
    gaps = _gaps(X, y, coef, intercept=intercept)[-1]
    return np.logaddexp(0.0, logsumexp(gaps, axis=1))


def double_sum_objective(X, y, coef, u, alpha=0.0):
    """``mean_i[u_i + e^{-u_i}(1 + sum_{k != y_i} e^{s_ik}) - 1] + alpha/2 ||W||^2``.

    The double-sum form of the softmax negative log-likelihood: at ``u = optimal_u(X, y,
    coef)`` it equals :func:`softmax_nll` (plus the ridge), and it is an upper bound for
    every other u.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n, D)
        Finite real numbers (a sparse X stays sparse).
    y : array-like of shape (n,)
        Class indices in ``0..K-1``.
    coef : ndarray of shape (K, D)
        The weights W, one row per class.
    u : array-like of shape (n,)
        One finite auxiliary variable per example.
    alpha : float, default=0.0
        Ridge strength, finite and >= 0.

    Returns
    -------
    objective : float
        The objective's value.

    References
    ----------
    .. [1] Fagan, F. & Iyengar, G. (2018). Unbiased scalable softmax optimization.
       arXiv:1803.08577 (Implicit SGD, section 3.2; U-max, section 3.1; eq. 3).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import double_sum_objective, optimal_u, softmax_nll
    >>> X, y = np.eye(3), np.array([0, 1, 2])
    >>> coef = np.random.default_rng(0).normal(size=(4, 3))
    >>> f = double_sum_objective(X, y, coef, optimal_u(X, y, coef))
    >>> bool(np.isclose(f, softmax_nll(X, y, coef)))
    True
    """
    X, _, coef, alpha, gaps = _gaps(X, y, coef, alpha)
    u = _per_example(u, X.shape[0])
    log_a = np.logaddexp(0.0, logsumexp(gaps, axis=1))
    return np.mean(u + np.exp(log_a - u) - 1.0) + _ridge(alpha, coef)


def double_sum_gradient(X, y, coef, u, alpha=0.0):
    """Exact gradient of :func:`double_sum_objective` with respect to (W, u).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n, D)
        Finite real numbers (a sparse X stays sparse).
    y : array-like of shape (n,)
        Class indices in ``0..K-1``.
    coef : ndarray of shape (K, D)
        The weights W, one row per class.
    u : array-like of shape (n,)
        One finite auxiliary variable per example.
    alpha : float, default=0.0
        Ridge strength, finite and >= 0.

    Returns
    -------
    grad_coef : ndarray of shape (K, D)
        The gradient with respect to W.
    grad_u : ndarray of shape (n,)
        The gradient with respect to u (0 at ``optimal_u``).

    References
    ----------
    .. [1] Fagan, F. & Iyengar, G. (2018). Unbiased scalable softmax optimization.
       arXiv:1803.08577 (Implicit SGD, section 3.2; U-max, section 3.1; eq. 3).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import double_sum_gradient, optimal_u
    >>> X, y = np.eye(3), np.array([0, 1, 2])
    >>> coef = np.random.default_rng(0).normal(size=(4, 3))
    >>> g_coef, g_u = double_sum_gradient(X, y, coef, optimal_u(X, y, coef))
    >>> g_coef.shape, bool(np.allclose(g_u, 0))
    ((4, 3), True)
    """
    X, y, coef, alpha, gaps = _gaps(X, y, coef, alpha)
    n = X.shape[0]
    u = _per_example(u, n)
    P = np.exp(gaps - u[:, None])               # e^{s_ik - u_i}, 0 on the true class
    G = P.copy()
    G[np.arange(n), y] = -P.sum(axis=1)
    grad_W = np.asarray(G.T @ X) / n + alpha * coef
    grad_u = (1.0 - np.exp(-u) - P.sum(axis=1)) / n
    return grad_W, grad_u


def ove_objective(X, y, coef, alpha=0.0):
    """Negated One-vs-Each bound: ``mean_i sum_{k != y_i} softplus(s_ik) + alpha/2 ||W||^2``.

    An upper bound on :func:`softmax_nll` (plus the ridge).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n, D)
        Finite real numbers (a sparse X stays sparse).
    y : array-like of shape (n,)
        Class indices in ``0..K-1``.
    coef : ndarray of shape (K, D)
        The weights W, one row per class.
    alpha : float, default=0.0
        Ridge strength, finite and >= 0.

    Returns
    -------
    objective : float
        The objective's value.

    References
    ----------
    .. [1] Titsias, M. K. (2016). One-vs-each approximation to softmax for scalable estimation
       of probabilities. NIPS, eqs. 5-6.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import ove_objective, softmax_nll
    >>> X, y = np.eye(3), np.array([0, 1, 2])
    >>> coef = np.random.default_rng(0).normal(size=(4, 3))
    >>> bool(ove_objective(X, y, coef) >= softmax_nll(X, y, coef))
    True
    """
    _, _, coef, alpha, gaps = _gaps(X, y, coef, alpha)
    return np.mean(np.sum(np.logaddexp(0.0, gaps), axis=1)) + _ridge(alpha, coef)


def ove_gradient(X, y, coef, alpha=0.0):
    """Gradient of :func:`ove_objective` (Titsias 2016, eq. (16), negated, mean form).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n, D)
        Finite real numbers (a sparse X stays sparse).
    y : array-like of shape (n,)
        Class indices in ``0..K-1``.
    coef : ndarray of shape (K, D)
        The weights W, one row per class.
    alpha : float, default=0.0
        Ridge strength, finite and >= 0.

    Returns
    -------
    grad_coef : ndarray of shape (K, D)
        The gradient with respect to W.

    References
    ----------
    .. [1] Titsias, M. K. (2016). One-vs-each approximation to softmax for scalable estimation
       of probabilities. NIPS, eqs. 5-6.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import ove_gradient
    >>> X, y = np.eye(3), np.array([0, 1, 2])
    >>> ove_gradient(X, y, np.zeros((4, 3))).shape
    (4, 3)
    """
    X, y, coef, alpha, gaps = _gaps(X, y, coef, alpha)
    n = X.shape[0]
    Sg = np.exp(log_expit(gaps))                # sigma(s_ik), 0 on the true class
    G = Sg.copy()
    G[np.arange(n), y] = -Sg.sum(axis=1)
    return np.asarray(G.T @ X) / n + alpha * coef


def log_ove_bound(scores):
    """``log OVE_k = sum_{m != k} log sigma(f_k - f_m)`` for every row and class.

    O(n K^2) time, evaluated in blocks of (row, class) pairs so that memory stays
    O(n K + 2^22) whatever K.

    Parameters
    ----------
    scores : array-like of shape (n, K)
        Dense, finite, with K >= 1 (``TypeError`` for a sparse matrix).

    Returns
    -------
    log_bound : ndarray of shape (n, K)
        At most ``softmax_log_proba(scores)`` (up to rounding, a few 1e-16 where the bound
        is tight).

    References
    ----------
    .. [1] Titsias, M. K. (2016). One-vs-each approximation to softmax for scalable estimation
       of probabilities. NIPS, eqs. 5-6.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import log_ove_bound, softmax_log_proba
    >>> S = np.array([[2.0, 0.0, -1.0]])
    >>> bool(np.all(log_ove_bound(S) <= softmax_log_proba(S)))
    True
    """
    f = _check_scores(scores, (2,))
    n, K = f.shape
    out = np.empty((n, K))
    rows = max(1, _CHUNK_ENTRIES // max(K * K, 1))
    cols = K if rows > 1 else max(1, _CHUNK_ENTRIES // max(K, 1))
    for r in range(0, n, rows):
        fr = f[r:r + rows]
        for c in range(0, K, cols):                     # [i, k, m] = log sigma(f_k - f_m)
            pair = log_expit(fr[:, c:c + cols, None] - fr[:, None, :])
            out[r:r + rows, c:c + cols] = pair.sum(axis=2) - np.log(0.5)  # m == k: sigma(0)
    return out
