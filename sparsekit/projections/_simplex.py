"""Sparsemax and the projection onto the scaled simplex (Martins & Astudillo 2016; Madsen et
al. 2016, Algorithm 1)."""
import numpy as np

from .._cython._projections import sparsemax_rows
from ._checks import as_rows, gpu_function
from ._dispatch import project


def sparsemax(Z, method="pivot", *, device=None):
    """Sparsemax of each row: the Euclidean projection onto the probability simplex.

    ``sparsemax(z) = argmin_{p >= 0, sum p = 1} ||p - z||^2 = max(z - tau(z), 0)``
    (Martins & Astudillo 2016; Madsen et al. 2016, eqs. 2-3).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Logits; float32 and float64 are kept. Computed on ``z - max(z)``, so the result is
        shift invariant in floating point (offsets of 1e6 in float32 are harmless).
    method : {"pivot", "sort"}, default="pivot"
        ``"pivot"``: Condat's O(K) expected-time algorithm; ``"sort"``: the
        O(K log K) sort-based reference (Algorithm 1, Held/Helgason).
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type (a CuPy array goes to ``sparsekit.gpu.projections``).

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Rows on the simplex, exact zeros outside the support.

    References
    ----------
    .. [1] Martins, A. F. T. & Astudillo, R. F. (2016). From softmax to sparsemax: a sparse
       model of attention and multi-label classification. ICML, Algorithm 1 and eqs. 6-10.
    .. [2] Condat, L. (2016). Fast projection onto the simplex and the l1 ball. Mathematical
       Programming 158, 575-585.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import sparsemax
    >>> sparsemax(np.array([[2.0, 1.0, -1.0], [0.3, 0.2, 0.1]]))
    array([[1.        , 0.        , 0.        ],
           [0.43333333, 0.33333333, 0.23333333]])
    """
    if method not in ("pivot", "sort"):
        raise ValueError(f"method must be 'pivot' or 'sort', got {method!r}")
    gpu = gpu_function("sparsemax", Z, device)
    if gpu is not None:
        return gpu(Z, method=method)
    Z2, one_d = as_rows(Z)
    P = np.empty_like(Z2)
    tau = np.empty(Z2.shape[0], dtype=Z2.dtype)
    sparsemax_rows(Z2, P, tau, method == "sort")
    return P[0] if one_d else P


def project_simplex(Z, radius=1.0, *, device=None):
    """Projection of each row onto {p >= 0, sum p = radius}; ``radius=1`` is sparsemax.

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64); a CuPy array is
        projected on the GPU.
    radius : float, default=1.0
        The sum of each projected row, > 0.
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Rows summing to ``radius``, with exact zeros outside the support.

    References
    ----------
    .. [1] Condat, L. (2016). Fast projection onto the simplex and the l1 ball. Mathematical
       Programming 158, 575-585.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project_simplex
    >>> project_simplex(np.array([[2.0, 1.0, -1.0]]), radius=2.0)
    array([[1.5, 0.5, 0. ]])
    """
    gpu = gpu_function("project_simplex", Z, device)
    if gpu is not None:
        return gpu(Z, radius=radius)
    return project(Z, "simplex", radius=radius)
