"""GPU (CuPy) Fenchel-Young losses of the sparsemax family, with gradients ``proj(z) - y``.

Same definitions and target checks as ``sparsekit.losses`` (Blondel et al. 2020;
Madsen et al. 2016, eqs. 8-10, for the stable sparsemax loss). The sparsemax loss runs
fused in one kernel (``kernels/sparsemax_loss.cu``): projection, loss and gradient per row.
"""
import numpy as np

from ..losses._targets import check_flipped_target, check_target
from ..projections._checks import (negated_columns, reflect_columns, resolve_polytope,
                                   solve_dtype)
from ._kernels import launch_rows
from .projections import as_device_rows, project_with_tau, raise_if_nonfinite

def _targets(cp, Z2, Y, allow_labels):
    """Device targets of the shape and dtype of ``Z2``; with ``allow_labels``, integer
    labels of shape (n_rows,) become one-hot rows."""
    Y = cp.asarray(Y)
    if allow_labels and Y.ndim == 1 and Y.dtype.kind in "iu":
        n, k = Z2.shape
        if Y.shape[0] != n:
            raise ValueError(f"Y has {Y.shape[0]} labels for {n} rows of Z")
        if Y.size and (int(Y.min()) < 0 or int(Y.max()) >= k):
            raise ValueError(f"labels must lie in [0, {k})")
        onehot = cp.zeros(Z2.shape, dtype=Z2.dtype)
        onehot[cp.arange(n), Y] = 1
        return onehot
    _, Y2, _ = as_device_rows(Y, name="Y")
    if Y2.shape != Z2.shape:
        raise ValueError(f"Y must have the shape of Z {Z2.shape}, got {Y2.shape}")
    return cp.ascontiguousarray(Y2, dtype=Z2.dtype)


def sparsemax_loss_and_grad(Z, Y):
    """Sparsemax loss and gradient per row, fused on the GPU.

    ``L(z; q) = 1/2 sum_j p_j (2 z'_j - p_j) + 1/2 ||q||^2 - q.z'`` with ``z' = z - max z``
    and ``p = sparsemax(z)``; gradient ``p - q`` (Madsen et al. 2016, eqs. 6 and 9-10).

    Parameters
    ----------
    Z : cupy or numpy array of shape (n_rows, n_classes) or (n_classes,)
    Y : array of the shape of ``Z`` with rows on the simplex, or (2-D ``Z``) integer class
        labels of shape (n_rows,).

    Returns
    -------
    loss : cupy.ndarray of shape (n_rows,), float64 (a float for 1-D ``Z``)
    grad : cupy.ndarray of the shape and dtype of ``Z``
    """
    cp, Z2, one_d = as_device_rows(Z, check_finite=False)    # checked by the kernel
    Y2 = _targets(cp, Z2, Y, allow_labels=not one_d)
    check_target(Y2, "simplex", 1.0, np.ones(Z2.shape[1]), cp)
    n, k = Z2.shape
    grad = cp.empty_like(Z2)
    loss = cp.empty(n, dtype=cp.float64)
    nonfinite = cp.zeros(1, dtype=cp.int32)
    launch_rows("sparsemax_loss.cu", "sparsemax_loss_grad", Z2.dtype, n, k,
                (Z2, Y2, grad, loss, np.int64(n), np.int64(k), nonfinite))
    raise_if_nonfinite(nonfinite)
    if one_d:
        return float(loss[0]), grad[0]
    return loss, grad


def fenchel_young_loss_and_grad(Z, Y, polytope="simplex", *, negated=None, **params):
    """GPU :func:`sparsekit.losses.fenchel_young_loss_and_grad`.

    ``L(z; y) = 1/2 ||y - z||^2 - 1/2 ||p - z||^2 = 1/2 sum (y - p)(y + p - 2 z)`` with
    ``p`` the projection onto ``polytope`` (on ``z - max z`` for the simplex, where the
    loss is shift invariant), accumulated in float64; gradient ``p - y``. ``negated`` as on
    the CPU: the loss of M at the flipped scores and targets, gradient
    ``L (proj_M(flip z) - flip y)`` (Niculae & Martins 2020, Prop. 7, Cor. 7.1).

    Returns
    -------
    loss : cupy.ndarray of shape (n_rows,), float64 (a float for 1-D ``Z``)
    grad : cupy.ndarray of the shape and dtype of ``Z``
    """
    cp, Z2, one_d = as_device_rows(Z, check_finite=False)    # checked by the kernel
    Y2 = _targets(cp, Z2, Y, allow_labels=False)
    columns = negated_columns(negated, Z2.shape[1])
    Z2, Y2 = reflect_columns(Z2, columns), reflect_columns(Y2, columns)
    dtype = Z2.dtype
    _, budget, weights, weighted = resolve_polytope(polytope, Z2.shape[1], dtype, params)
    if solve_dtype(dtype, weighted) != dtype:  # as on the CPU: solved in float64
        Z2, Y2 = Z2.astype(cp.float64), Y2.astype(cp.float64)
        _, budget, weights, _ = resolve_polytope(polytope, Z2.shape[1], Z2.dtype, params)
    check_flipped_target(Y2, polytope, budget, weights, cp, columns)
    P = project_with_tau(Z2, polytope, params)[0]
    Zs = Z2.astype(cp.float64)
    if polytope == "simplex":
        Zs -= Zs.max(axis=1, keepdims=True)
    Zs = cp.maximum(Zs, -np.finfo(np.float64).max)  # finite, so that a zero term stays 0
    Yd, Pd = Y2.astype(cp.float64), P.astype(cp.float64)
    D = Yd - Pd
    loss = (0.5 * D * (Yd + Pd) - D * Zs).sum(axis=1)  # halved per term: 2 D z overflows
    grad = reflect_columns((P - Y2).astype(dtype, copy=False), columns, 0)
    if one_d:
        return float(loss[0]), grad[0]
    return loss, grad
