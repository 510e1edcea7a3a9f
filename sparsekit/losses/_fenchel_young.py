"""Fenchel-Young losses of the sparsemax family of polytopes.

For a polytope M and p = proj_M(z) (``sparsekit.projections``):
``L(z; y) = 1/2 ||y - z||^2 - 1/2 ||p - z||^2``, gradient ``p - y``
(notes/lp_sparsemap.md section 2; Blondel et al. 2020). For the simplex this is the
sparsemax loss of Martins & Astudillo, computed in the stable shifted form of
notes/sparsemax_report.md eqs. 8-10 (section 4.3: shift before computing). ``L >= 0`` with
equality iff ``p = y`` holds only for targets inside the polytope, so targets are checked.
"""
import numpy as np

from .._cython._projections import fenchel_young_rows
from ..projections._checks import as_rows, resolve_polytope
from ._targets import check_target

def _loss_and_projection(Z, Y, polytope, params):
    Z2, one_d = as_rows(Z)
    Y2 = as_rows(Y, name="Y")[0]
    if Y2.shape != Z2.shape:
        raise ValueError(f"Y must have the shape of Z {np.shape(Z)}, got {np.shape(Y)}")
    Y2 = np.ascontiguousarray(Y2, dtype=Z2.dtype)
    code, budget, weights, weighted = resolve_polytope(polytope, Z2.shape[1], Z2.dtype,
                                                       params)
    check_target(Y2, polytope, budget, weights, np)
    P = np.empty_like(Z2)
    loss = np.empty(Z2.shape[0], dtype=np.float64)
    fenchel_young_rows(code, Z2, Y2, P, loss, budget, weights, weighted)
    return loss, P, Y2, one_d


def fenchel_young_loss(Z, Y, polytope="simplex", **params):
    """Row-wise Fenchel-Young loss ``1/2 ||y - z||^2 - 1/2 ||proj(z) - z||^2``.

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores.
    Y : array-like of the same shape
        Targets; each row must lie in the polytope (``ValueError`` otherwise, e.g. negative
        entries, simplex rows not summing to 1, or a budget below a row's label count).
    polytope : str
        One of ``sparsekit.projections.POLYTOPES``.
    **params
        The polytope's parameters, as in :func:`sparsekit.projections.project`.

    Returns
    -------
    loss : ndarray of shape (n_rows,) (a float for 1-D ``Z``), float64
        Non-negative, zero exactly when ``proj(z) = y``.
    """
    loss, _, _, one_d = _loss_and_projection(Z, Y, polytope, params)
    return float(loss[0]) if one_d else loss


def fenchel_young_loss_and_grad(Z, Y, polytope="simplex", **params):
    """Row-wise Fenchel-Young loss and its gradient ``proj(z) - y`` with respect to ``Z``.

    Parameters are those of :func:`fenchel_young_loss`.

    Returns
    -------
    loss : ndarray of shape (n_rows,) (a float for 1-D ``Z``)
    grad : ndarray of the shape and dtype of ``Z``
    """
    loss, P, Y2, one_d = _loss_and_projection(Z, Y, polytope, params)
    grad = P - Y2
    if one_d:
        return float(loss[0]), grad[0]
    return loss, grad


def sparsemax_loss(Z, Y):
    """Sparsemax loss (Martins & Astudillo 2016), stable form.

    ``L(z; q) = 1/2 sum_{j in S} p_j (2 z_j - p_j) + 1/2 ||q||^2 - q.z`` computed on
    ``z - max(z)`` (notes/sparsemax_report.md eqs. 9-10 and section 4.3), equal to the
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
