"""Generic projection ``project(Z, polytope, **params)`` and its Jacobian-vector product.

Kernels: ``sparsekit/_cython/_projections.pyx``; the polytopes and their Jacobians follow
Niculae & Martins 2020 (Props. 5-6 and the sifting lemma). Negated coordinates
(``negated=``) wrap any of them (Prop. 7, Cor. 7.1): with flip(x)_k = 1 - x_k on the
negated set N and L = diag(+-1) (-1 on N),
``proj_{flip M}(z) = flip(proj_M(flip z))`` and ``J_{flip M}(z) = L J_M(flip z) L``.
"""
import numpy as np

from .._cython._projections import jvp_rows, project_rows
from ._checks import (as_rows, gpu_function, is_cupy_array, negated_columns, reflect_columns,
                      raise_on_overflow, resolve_polytope, solve_dtype)


def project_with_tau(Z, polytope, params):
    """CPU projection of validated 2-D ``Z``: returns ``(P, tau, (code, weights, weighted))``
    with ``P = clip(Z - tau[:, None] * weights, 0, upper)`` (see ``_projections.pxd``), all
    in the dtype the kernels solve in (:func:`solve_dtype`), which the caller rounds back."""
    code, budget, weights, weighted = resolve_polytope(polytope, Z.shape[1], Z.dtype, params)
    if solve_dtype(Z.dtype, weighted) != Z.dtype:
        return project_with_tau(Z.astype(np.float64), polytope, params)
    P = np.empty_like(Z)
    tau = np.empty(Z.shape[0], dtype=Z.dtype)
    project_rows(code, Z, P, tau, budget, weights, weighted)
    raise_on_overflow(tau, weighted)
    return P, tau, (code, weights, weighted)


def _floating(X):
    """``X`` (CuPy or NumPy) in a floating dtype, so that flipping it cannot wrap around
    (``1 - 5`` in uint8 is 252), as on the CPU path, which converts first."""
    X = X if is_cupy_array(X) else np.asarray(X)
    return X if X.dtype.kind == "f" else X.astype(np.float64)


def _gpu_operands(negated, Z, *others):
    """The GPU path with ``negated``: ``(columns, Z, *others)``, each array a CuPy array or
    an ndarray (the CuPy function moves it to the device) of the shape of ``Z``."""
    if negated is None:
        return ([], Z, *others)
    Z, *others = [_floating(X) for X in (Z, *others)]
    if Z.ndim not in (1, 2):
        raise ValueError(f"Z must be 1-D or 2-D (n_rows, n_classes), got shape {Z.shape}")
    for X in others:
        if X.shape != Z.shape:
            raise ValueError(f"V must have the shape of Z {Z.shape}, got {X.shape}")
    return (negated_columns(negated, Z.shape[-1]), Z, *others)


def project(Z, polytope="simplex", *, negated=None, device=None, **params):
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
        {0 <= p <= 1, sum p <= 1} (Niculae & Martins 2020).
    negated : array-like of bool of shape (n_classes,), default=None
        Negated coordinates N: project onto flip(M) = {flip(p) : p in M}, with
        flip(p)_k = 1 - p_k for k in N, computed as ``flip(proj_M(flip(z)))``
        (Niculae & Martins 2020, Prop. 7, delta = 1; flip is an isometry). For M in
        [0, 1]^K this negates the binary variables in N: e.g. ``at_least_one`` with all
        coordinates negated is NAND, {sum p <= K - 1}, and with the first K - 1 negated it
        is IMPLY (p_1 and ... and p_{K-1} => p_K). 0/1 values are accepted; other values,
        NaN or a wrong shape raise ``ValueError``. None (or all False): no negation.
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.
    **params
        The polytope's parameters listed above.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.

    References
    ----------
    .. [1] Blondel, M., Martins, A. F. T. & Niculae, V. (2020). Learning with Fenchel-Young
       losses. JMLR 21(35).
    .. [2] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project
    >>> Z = np.array([[0.9, 0.8, -1.0]])
    >>> project(Z, "simplex")
    array([[0.55, 0.45, 0.  ]])
    >>> project(Z, "at_least_one", negated=[True, False, False])
    array([[0.85, 0.85, 0.  ]])
    """
    gpu = gpu_function("project", Z, device)
    if gpu is not None:
        columns, Z = _gpu_operands(negated, Z)
        return reflect_columns(gpu(reflect_columns(Z, columns), polytope, **params), columns)
    Z2, one_d = as_rows(Z)
    columns = negated_columns(negated, Z2.shape[1])
    P = project_with_tau(reflect_columns(Z2, columns), polytope, params)[0]
    P = P.astype(Z2.dtype, copy=False)
    P = reflect_columns(P, columns)
    return P[0] if one_d else P


def jvp(Z, V, polytope="simplex", *, negated=None, device=None, **params):
    """Jacobian-vector product of the row-wise projection: ``J(z_r) v_r`` for every row.

    The Jacobian is symmetric, so the same product is the vector-Jacobian product used in
    backpropagation. With the free set I = {0 < p_i < 1} ({p_i > 0} for the simplex):
    ``(Jv)_I = v_I - w_I (w_I.v_I) / (w_I.w_I)`` when the sum constraint is active
    (Niculae & Martins 2020, Prop. 6; for the simplex ``s * (v - mean_S(v))``,
    Madsen et al. 2016, eq. 5, with ``||s||_1``), ``(Jv)_I = v_I`` when it is not
    (box, or an inactive inequality), and 0 off I. At ties this is a generalized Jacobian.
    With negated coordinates N it is ``L J_M(flip z) L v``, L = diag(+-1) with -1 on N
    (Niculae & Martins 2020, Cor. 7.1), still symmetric.

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Points at which the projection is differentiated.
    V : array-like of the same shape
        Vectors to multiply.
    polytope : str, default="simplex"
        As in :func:`project`.
    negated : array-like of bool of shape (n_classes,), default=None
        As in :func:`project`.
    device : {None, "cpu", "cuda"}, default=None
        As in :func:`project`.
    **params
        The polytope's parameters, as in :func:`project`.

    Returns
    -------
    JV : ndarray of the shape and dtype of ``Z``
        The products, row by row.

    References
    ----------
    .. [1] Martins, A. F. T. & Astudillo, R. F. (2016). From softmax to sparsemax: a sparse
       model of attention and multi-label classification. ICML, Algorithm 1 and eqs. 6-10.
    .. [2] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import jvp
    >>> jvp(np.array([[2.0, 1.5, -1.0]]), np.array([[1.0, 0.0, 0.0]]))
    array([[ 0.5, -0.5,  0. ]])
    """
    gpu = gpu_function("jvp", Z, device)
    if gpu is not None:
        columns, Z, V = _gpu_operands(negated, Z, V)
        out = gpu(reflect_columns(Z, columns), reflect_columns(V, columns, 0), polytope,
                  **params)
        return reflect_columns(out, columns, 0)
    Z2, one_d = as_rows(Z)
    V2 = as_rows(V, name="V")[0].astype(Z2.dtype, copy=False)
    if V2.shape != Z2.shape:
        raise ValueError(f"V must have the shape of Z {np.shape(Z)}, got {np.shape(V)}")
    columns = negated_columns(negated, Z2.shape[1])
    P, tau, (code, weights, weighted) = project_with_tau(reflect_columns(Z2, columns),
                                                         polytope, params)
    out = np.empty_like(P)  # in the solve dtype: float32 w may round to 0, tau overflow
    jvp_rows(code, P, tau, reflect_columns(V2, columns, 0).astype(P.dtype, copy=False), out,
             weights, weighted)
    out = reflect_columns(out.astype(Z2.dtype, copy=False), columns, 0)
    return out[0] if one_d else out
