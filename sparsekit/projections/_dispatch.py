"""Generic projection ``project(Z, polytope, **params)`` and its Jacobian-vector product.

Kernels: ``sparsekit/_cython/_projections.pyx``; the polytopes and their Jacobians follow
notes/lp_sparsemap.md sections 1.7 and 1.9 (Prop. 5-6, sifting lemma).
"""
import numpy as np

from .._cython._projections import jvp_rows, project_rows
from ._checks import as_rows, gpu_function, resolve_polytope


def project_with_tau(Z, polytope, params):
    """CPU projection of validated 2-D ``Z``: returns ``(P, tau, (code, weights, weighted))``
    with ``P = clip(Z - tau[:, None] * weights, 0, upper)`` (see ``_projections.pxd``)."""
    code, budget, weights, weighted = resolve_polytope(polytope, Z.shape[1], Z.dtype, params)
    P = np.empty_like(Z)
    tau = np.empty(Z.shape[0], dtype=Z.dtype)
    project_rows(code, Z, P, tau, budget, weights, weighted)
    return P, tau, (code, weights, weighted)


def project(Z, polytope="simplex", *, device=None, **params):
    """Euclidean projection of each row of ``Z`` onto a polytope of the sparsemax family.

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64). A CuPy array is
        projected on the GPU by ``sparsekit.gpu.projections.project``.
    polytope : {"simplex", "capped_simplex", "knapsack", "budget", "box", \
"at_least_one", "at_most_one"}
        ``simplex``: {p >= 0, sum p = radius} (parameter ``radius=1``);
        ``capped_simplex``: {0 <= p <= 1, w.p = budget} (``budget``, ``weights=None``);
        ``knapsack``: {0 <= p <= 1, w.p <= budget} (``budget``, costs ``weights=None``);
        ``budget``: {0 <= p <= 1, sum p <= budget} (``budget``); ``box``: [0, 1]^K;
        ``at_least_one``: {0 <= p <= 1, sum p >= 1}; ``at_most_one``:
        {0 <= p <= 1, sum p <= 1} (notes/lp_sparsemap.md, section 1.9 table).
    device : {None, "cpu", "cuda"}
        None follows the array type.
    **params
        The polytope's parameters listed above.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.
    """
    gpu = gpu_function("project", Z, device)
    if gpu is not None:
        return gpu(Z, polytope, **params)
    Z2, one_d = as_rows(Z)
    P = project_with_tau(Z2, polytope, params)[0]
    return P[0] if one_d else P


def jvp(Z, V, polytope="simplex", *, device=None, **params):
    """Jacobian-vector product of the row-wise projection: ``J(z_r) v_r`` for every row.

    The Jacobian is symmetric, so the same product is the vector-Jacobian product used in
    backpropagation. With the free set I = {0 < p_i < 1} ({p_i > 0} for the simplex):
    ``(Jv)_I = v_I - w_I (w_I.v_I) / (w_I.w_I)`` when the sum constraint is active
    (notes/lp_sparsemap.md Prop. 6; for the simplex ``s * (v - mean_S(v))``,
    notes/sparsemax_report.md eq. 5 with ``||s||_1``), ``(Jv)_I = v_I`` when it is not
    (box, or an inactive inequality), and 0 off I. At ties this is a generalized Jacobian.

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Points at which the projection is differentiated.
    V : array-like of the same shape
        Vectors to multiply.
    polytope, device, **params
        As in :func:`project`.

    Returns
    -------
    JV : ndarray of the shape and dtype of ``Z``
    """
    gpu = gpu_function("jvp", Z, device)
    if gpu is not None:
        return gpu(Z, V, polytope, **params)
    Z2, one_d = as_rows(Z)
    V2 = as_rows(V, name="V")[0].astype(Z2.dtype, copy=False)
    if V2.shape != Z2.shape:
        raise ValueError(f"V must have the shape of Z {np.shape(Z)}, got {np.shape(V)}")
    P, tau, (code, weights, weighted) = project_with_tau(Z2, polytope, params)
    out = np.empty_like(Z2)
    jvp_rows(code, P, tau, V2, out, weights, weighted)
    return out[0] if one_d else out
