"""Fenchel-Young losses of the sparsemax family of polytopes.

For a polytope M and p = proj_M(z) (``sparsekit.projections``):
``L(z; y) = 1/2 ||y - z||^2 - 1/2 ||p - z||^2``, gradient ``p - y``
(Blondel et al. 2020; Niculae & Martins 2020, section 2). For the simplex this is the
sparsemax loss of Martins & Astudillo, computed in the stable shifted form of
Madsen et al. 2016, eqs. 8-10 (computed after shifting z by its maximum). ``L >= 0`` with
equality iff ``p = y`` holds only for targets inside the polytope, so targets are checked.

Negated coordinates N (``negated=``, Niculae & Martins 2020, Prop. 7 and Cor. 7.1): flip is
an isometry, so ``L_{flip M}(z; y) = L_M(flip z; flip y)`` and the gradient is
``mu* - y = L (grad L_M)(flip z; flip y)`` with L = diag(+-1), -1 on N. The loss is
computed on the flipped scores and targets, and ``flip y`` must lie in M.
"""
import numpy as np

from .._cython._projections import fenchel_young_rows
from ..projections._checks import (as_rows, negated_columns, raise_on_overflow,
                                   reflect_columns, resolve_polytope, solve_dtype)
from ._targets import check_flipped_target


def _loss_and_projection(Z, Y, polytope, params, negated):
    """Loss of the flipped problem: ``(loss, P, Y2, columns, one_d)`` with ``P`` the
    projection of the flipped scores onto M and ``Y2`` the flipped targets (both flipped
    back by ``reflect_columns(., columns)``)."""
    Z2, one_d = as_rows(Z)
    Y2 = as_rows(Y, name="Y")[0]
    if Y2.shape != Z2.shape:
        raise ValueError(f"Y must have the shape of Z {np.shape(Z)}, got {np.shape(Y)}")
    Y2 = np.ascontiguousarray(Y2, dtype=Z2.dtype)
    columns = negated_columns(negated, Z2.shape[1])
    Z2, Y2 = reflect_columns(Z2, columns), reflect_columns(Y2, columns)
    dtype = Z2.dtype
    code, budget, weights, weighted = resolve_polytope(polytope, Z2.shape[1], dtype, params)
    if solve_dtype(dtype, weighted) != dtype:  # solved in float64; P, Y2 rounded back below
        Z2, Y2 = Z2.astype(np.float64), Y2.astype(np.float64)
        code, budget, weights, weighted = resolve_polytope(polytope, Z2.shape[1], Z2.dtype,
                                                           params)
    check_flipped_target(Y2, polytope, budget, weights, np, columns)
    P = np.empty_like(Z2)
    loss = np.empty(Z2.shape[0], dtype=np.float64)
    fenchel_young_rows(code, Z2, Y2, P, loss, budget, weights, weighted)
    raise_on_overflow(loss, weighted)
    return loss, P.astype(dtype, copy=False), Y2.astype(dtype, copy=False), columns, one_d


def fenchel_young_loss(Z, Y, polytope="simplex", *, negated=None, **params):
    """Row-wise Fenchel-Young loss ``1/2 ||y - z||^2 - 1/2 ||proj(z) - z||^2``.

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores.
    Y : array-like of the same shape
        Targets; each row must lie in the polytope (``ValueError`` otherwise, e.g. negative
        entries, simplex rows not summing to 1, or a budget below a row's label count).
        With ``negated``, the polytope is the negated one: Y with ``1 - Y`` on the negated
        columns must lie in ``polytope``.
    polytope : str, default="simplex"
        One of ``sparsekit.projections.POLYTOPES``.
    negated : array-like of bool of shape (n_classes,), default=None
        Negated coordinates, as in :func:`sparsekit.projections.project`: the loss of the
        polytope flip(M), equal to the loss of M at the flipped scores and targets
        (Niculae & Martins 2020, Prop. 7).
    **params
        The polytope's parameters, as in :func:`sparsekit.projections.project`.

    Returns
    -------
    loss : ndarray of shape (n_rows,) or float
        In float64 (a float for 1-D ``Z``); non-negative, zero exactly when ``proj(z) = y``.

    References
    ----------
    .. [1] Blondel, M., Martins, A. F. T. & Niculae, V. (2020). Learning with Fenchel-Young
       losses. JMLR 21(35).
    .. [2] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import fenchel_young_loss
    >>> Z = np.array([[2.0, 1.0, -1.0], [0.0, 0.0, 0.0]])
    >>> Y = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    >>> fenchel_young_loss(Z, Y, "box")
    array([0.5, 1. ])
    >>> fenchel_young_loss(Z, Y, "budget", budget=2)
    array([0.5, 1. ])
    """
    loss, _, _, _, one_d = _loss_and_projection(Z, Y, polytope, params, negated)
    return float(loss[0]) if one_d else loss


def fenchel_young_loss_and_grad(Z, Y, polytope="simplex", *, negated=None, **params):
    """Row-wise Fenchel-Young loss and its gradient ``proj(z) - y`` with respect to ``Z``.

    With ``negated`` the gradient is ``L (proj_M(flip z) - flip y)``, L = diag(+-1) with -1
    on the negated columns, which equals ``proj_{flip M}(z) - y`` (Niculae & Martins 2020,
    Cor. 7.1).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores.
    Y : array-like of the same shape
        Targets in the polytope, as in :func:`fenchel_young_loss`.
    polytope : str, default="simplex"
        One of ``sparsekit.projections.POLYTOPES``.
    negated : array-like of bool of shape (n_classes,), default=None
        Negated coordinates, as in :func:`fenchel_young_loss`.
    **params
        The polytope's parameters, as in :func:`sparsekit.projections.project`.

    Returns
    -------
    loss : ndarray of shape (n_rows,) or float
        The loss of each row (a float for 1-D ``Z``).
    grad : ndarray of the shape and dtype of ``Z``
        ``proj(z) - y`` row by row.

    References
    ----------
    .. [1] Blondel, M., Martins, A. F. T. & Niculae, V. (2020). Learning with Fenchel-Young
       losses. JMLR 21(35).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import fenchel_young_loss_and_grad
    >>> z, y = np.array([2.0, 1.0, -1.0]), np.array([0.0, 1.0, 0.0])
    >>> loss, grad = fenchel_young_loss_and_grad(z, y)
    >>> round(loss, 4), grad
    (1.0, array([ 1., -1.,  0.]))
    """
    loss, P, Y2, columns, one_d = _loss_and_projection(Z, Y, polytope, params, negated)
    grad = reflect_columns(P - Y2, columns, 0)
    if one_d:
        return float(loss[0]), grad[0]
    return loss, grad


def sparsemax_loss(Z, Y):
    """Sparsemax loss (Martins & Astudillo 2016), stable form.

    ``L(z; q) = 1/2 sum_{j in S} p_j (2 z_j - p_j) + 1/2 ||q||^2 - q.z`` computed on
    ``z - max(z)`` (Madsen et al. 2016, eqs. 9-10; shifting keeps it exact), equal to the
    Fenchel-Young loss of the simplex. Gradient: ``sparsemax(z) - q`` (eq. 6).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Logits.
    Y : array-like
        Target distributions of the shape of ``Z`` (rows on the simplex), or, for 2-D
        ``Z``, integer class labels of shape (n_rows,) in ``[0, n_classes)``.

    Returns
    -------
    loss : ndarray of shape (n_rows,) (a float for 1-D ``Z``)

    References
    ----------
    .. [1] Martins, A. F. T. & Astudillo, R. F. (2016). From softmax to sparsemax: a sparse
       model of attention and multi-label classification. ICML, Algorithm 1 and eqs. 6-10.
    .. [2] Madsen, A., Rørbech, J. T. & Kristensen, A. (2016). TensorFlow implementation of
       sparsemax. DTU report, eqs. 8-11.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.losses import sparsemax_loss
    >>> Z = np.array([[2.0, 1.0, -1.0], [1.0, 1.0, 1.0]])
    >>> sparsemax_loss(Z, np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    array([0.        , 0.33333333])
    """
    Y = np.asarray(Y)
    if np.ndim(Z) == 2 and Y.ndim == 1 and Y.dtype.kind in "iu":
        n, k = np.shape(Z)
        if Y.shape[0] != n:
            raise ValueError(f"Y has {Y.shape[0]} labels for {n} rows of Z")
        if Y.size and (Y.min() < 0 or Y.max() >= k):
            raise ValueError(f"labels must lie in [0, {k}), got range "
                             f"[{Y.min()}, {Y.max()}]")
        onehot = np.zeros((n, k), dtype=np.float64)
        onehot[np.arange(n), Y] = 1.0
        Y = onehot
    return fenchel_young_loss(Z, Y, "simplex")
