"""Exact softmax losses and the two double-sum surrogates used by ExtremeSoftmaxSGD.

Weights are stored one row per class, ``coef`` of shape (K, D); scores are
``X @ coef.T + intercept``. Everything is a *mean* over examples (the per-example convention
of notes/unbiased_softmax_umax_isgd.md §5) and evaluated in log space, so nothing overflows.

- ``softmax_nll``: the one exact NLL used for every method (mean of
  ``-log softmax(x_i W)_{y_i}``; notes §6 warns against the double softmax that scored the
  authors' baselines).
- ``double_sum_objective`` / ``double_sum_gradient``: f(u, W) of eq. (5) divided by N,
  ``mean_i[u_i + e^{-u_i}(1 + sum_{k != y_i} e^{s_ik}) - 1] + alpha/2 ||W||^2``,
  equal to the NLL (+ ridge) at ``u = optimal_u(...)``.
- ``ove_objective`` / ``ove_gradient``: the negated One-vs-Each bound of
  notes/one_vs_each.md eq. (15), ``mean_i sum_{k != y_i} softplus(s_ik) + alpha/2 ||W||^2``.
- ``log_ove_bound``: ``log prod_{m != k} sigma(f_k - f_m)`` for every class k (eq. 4).
"""
import numpy as np
import scipy.sparse as sp
from scipy.special import log_expit, logsumexp

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


def softmax_scores(X, coef, intercept=None):
    """Dense scores ``X @ coef.T (+ intercept)`` of shape (n, K); X dense or sparse.

    Computed in float64 whatever the dtypes (a float32 model scores as its float64 copy
    would), a block of classes at a time, so that ``coef`` is never copied whole: a sparse
    X is scored on the columns it uses (SciPy's ``X @ coef.T`` would make a C-ordered copy
    of all K x D weights for every call), a dense X against float64 blocks of rows of coef.
    """
    coef = np.asarray(coef)
    if coef.ndim != 2 or X.shape[1] != coef.shape[1]:
        raise ValueError(f"coef must have shape (n_classes, {X.shape[1]}) to score X of "
                         f"{X.shape[1]} features, got {coef.shape}")
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        columns, inverse = np.unique(X.indices, return_inverse=True)
        X = sp.csr_matrix((X.data.astype(np.float64), inverse.ravel(), X.indptr),
                          shape=(X.shape[0], columns.size))
    else:
        X = np.asarray(X, dtype=np.float64)
        columns = slice(None)
    K = coef.shape[0]
    step = max(1, _CHUNK_ENTRIES // max(X.shape[1], 1))
    S = np.empty((X.shape[0], K))
    for start in range(0, K, step):
        block = coef[start:start + step, columns].astype(np.float64, copy=False)
        S[:, start:start + step] = X @ block.T
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
    is one row)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim not in (1, 2):
        raise ValueError(f"scores must be 1-D or 2-D (n_rows, n_classes), got {scores.shape}")
    Z, log_norm = _shifted_log_normalizer(np.atleast_2d(scores))
    return (Z - log_norm[:, None]).reshape(scores.shape)


def _chunks(n, K):
    step = max(1, _CHUNK_ENTRIES // max(K, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def softmax_nll(X, y, coef, intercept=None, sample_weight=None):
    """Exact mean softmax negative log-likelihood, eq. (2) without ridge, divided by N.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n, D)
    y : ndarray of shape (n,)
        Class indices in ``0..K-1``.
    coef : ndarray of shape (K, D)
    intercept : ndarray of shape (K,), optional
    sample_weight : ndarray of shape (n,), optional
        Weighted mean when given.

    Returns
    -------
    nll : float
    """
    K = coef.shape[0]
    y = _class_indices(y, X.shape[0], K)
    if sp.issparse(X):
        X = sp.csr_matrix(X)            # rows are sliced below (COO cannot be)
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if (sample_weight.shape != y.shape or not np.all(np.isfinite(sample_weight))
                or np.any(sample_weight < 0)):
            raise ValueError(f"sample_weight must be {y.shape[0]} finite non-negative numbers")
    mass = X.shape[0] if sample_weight is None else np.sum(sample_weight)
    if not mass > 0:
        raise ValueError("the mean NLL needs at least one example of positive weight")
    total = 0.0
    for sl in _chunks(X.shape[0], K):
        Z, log_norm = _shifted_log_normalizer(softmax_scores(X[sl], coef, intercept))
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
    """``u`` as n float64 values (a column or a short u would broadcast silently)."""
    u = np.asarray(u, dtype=np.float64)
    if u.shape != (n,):
        raise ValueError(f"u must have shape ({n},), got {u.shape}")
    return u


def _ridge(alpha, coef):
    """``alpha/2 ||W||^2`` summed in float64; 0 without ridge, also where it overflows."""
    if not alpha:
        return 0.0
    w = np.asarray(coef, dtype=np.float64).ravel()
    return 0.5 * alpha * (w @ w)


def _gaps(X, y, coef, intercept=None):
    if X.shape[0] == 0:
        raise ValueError("the mean over examples needs at least one example (X has 0 rows)")
    y = _class_indices(y, X.shape[0], coef.shape[0])
    S = softmax_scores(X, coef, intercept)
    rows = np.arange(S.shape[0])
    gaps = S - S[rows, y][:, None]           # s_ik = x.(w_k - w_y); 0 on the true class
    gaps[rows, y] = -np.inf
    return gaps


def optimal_u(X, y, coef, intercept=None):
    """``u_i* = log(1 + sum_{k != y_i} e^{s_ik})`` (notes §1.2), the NLL of each example."""
    gaps = _gaps(X, y, coef, intercept)
    return np.logaddexp(0.0, logsumexp(gaps, axis=1))


def double_sum_objective(X, y, coef, u, alpha=0.0):
    """``mean_i[u_i + e^{-u_i}(1 + sum_{k != y_i} e^{s_ik}) - 1] + alpha/2 ||W||^2``."""
    gaps = _gaps(X, y, coef)
    u = _per_example(u, X.shape[0])
    log_a = np.logaddexp(0.0, logsumexp(gaps, axis=1))
    return np.mean(u + np.exp(log_a - u) - 1.0) + _ridge(alpha, coef)


def double_sum_gradient(X, y, coef, u, alpha=0.0):
    """Exact gradient of ``double_sum_objective`` with respect to (W, u)."""
    n = X.shape[0]
    gaps = _gaps(X, y, coef)
    u = _per_example(u, n)
    P = np.exp(gaps - u[:, None])               # e^{s_ik - u_i}, 0 on the true class
    G = P.copy()
    G[np.arange(n), y] = -P.sum(axis=1)
    grad_W = np.asarray(G.T @ X) / n + alpha * coef
    grad_u = (1.0 - np.exp(-u) - P.sum(axis=1)) / n
    return grad_W, grad_u


def ove_objective(X, y, coef, alpha=0.0):
    """Negated One-vs-Each bound: ``mean_i sum_{k != y_i} softplus(s_ik) + alpha/2 ||W||^2``."""
    gaps = _gaps(X, y, coef)
    return np.mean(np.sum(np.logaddexp(0.0, gaps), axis=1)) + _ridge(alpha, coef)


def ove_gradient(X, y, coef, alpha=0.0):
    """Gradient of ``ove_objective`` (notes/one_vs_each.md eq. (16), negated, mean form)."""
    n = X.shape[0]
    gaps = _gaps(X, y, coef)
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
    scores : ndarray of shape (n, K), finite

    Returns
    -------
    log_bound : ndarray of shape (n, K), ``<= softmax_log_proba(scores)`` (up to rounding,
        a few 1e-16 where the bound is tight).
    """
    f = np.asarray(scores, dtype=np.float64)
    if f.ndim != 2 or not np.all(np.isfinite(f)):
        raise ValueError("scores must be a finite 2-D array")
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
