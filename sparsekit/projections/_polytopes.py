"""Named projections onto the capped simplex, box, budget, knapsack, at-least-one and
at-most-one polytopes (Niculae & Martins 2020, appendix D; Pardalos & Kovoor 1990 for the
knapsack)."""
from ._checks import gpu_function
from ._dispatch import project


def _named(name, polytope, Z, device, **params):
    gpu = gpu_function(name, Z, device)
    if gpu is not None:
        return gpu(Z, **params)
    return project(Z, polytope, **params)


def project_capped_simplex(Z, budget, weights=None, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum_i w_i p_i = budget}.

    Pardalos-Kovoor / Prop. 5: ``p = clip(z - tau w, 0, 1)`` with the scalar tau found
    exactly by sorting the 2K breakpoints (O(K log K)).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64); a CuPy array is
        projected on the GPU.
    budget : float
        The weighted sum of each projected row, with 0 <= budget <= sum(weights).
    weights : array-like of shape (n_classes,), default=None
        Positive weights w (None: all ones).
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.

    References
    ----------
    .. [1] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project_capped_simplex
    >>> project_capped_simplex(np.array([[3.0, 2.0, 0.0, -1.0]]), budget=2)
    array([[1., 1., 0., 0.]])
    """
    return _named("project_capped_simplex", "capped_simplex", Z, device,
                  budget=budget, weights=weights)


def project_box(Z, *, device=None):
    """Projection of each row onto the box [0, 1]^K: ``clip(z, 0, 1)`` (K1).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64); a CuPy array is
        projected on the GPU.
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project_box
    >>> project_box(np.array([[1.5, 0.25, -2.0]]))
    array([[1.  , 0.25, 0.  ]])
    """
    return _named("project_box", "box", Z, device)


def project_budget(Z, budget, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum p <= budget} (clip, then sifting).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64); a CuPy array is
        projected on the GPU.
    budget : float
        The largest sum of a projected row, >= 0.
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.

    References
    ----------
    .. [1] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project_budget
    >>> project_budget(np.array([[0.9, 0.8, 0.7], [0.5, 0.1, -1.0]]), budget=2)
    array([[0.76666667, 0.66666667, 0.56666667],
           [0.5       , 0.1       , 0.        ]])
    """
    return _named("project_budget", "budget", Z, device, budget=budget)


def project_knapsack(Z, budget, weights=None, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum_i c_i p_i <= budget}, costs
    ``c = weights`` (positive; all ones gives :func:`project_budget`); Alg. 4 (sifting).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64); a CuPy array is
        projected on the GPU.
    budget : float
        The largest cost c.p of a projected row, >= 0.
    weights : array-like of shape (n_classes,), default=None
        Positive costs c (None: all ones).
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.

    References
    ----------
    .. [1] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project_knapsack
    >>> project_knapsack(np.array([[1.0, 1.0, 1.0]]), budget=1.5, weights=np.array([1.0, 2.0, 1.0]))
    array([[0.58333333, 0.16666667, 0.58333333]])
    """
    return _named("project_knapsack", "knapsack", Z, device, budget=budget, weights=weights)


def project_at_least_one(Z, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum p >= 1} (OR factor, Alg. 3).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64); a CuPy array is
        projected on the GPU.
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.

    References
    ----------
    .. [1] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project_at_least_one
    >>> project_at_least_one(np.array([[-1.0, -2.0, 0.2]]))
    array([[0., 0., 1.]])
    """
    return _named("project_at_least_one", "at_least_one", Z, device)


def project_at_most_one(Z, *, device=None):
    """Projection of each row onto {0 <= p <= 1, sum p <= 1} (AtMostOne, Eq. 83).

    Parameters
    ----------
    Z : array-like of shape (n_rows, n_classes) or (n_classes,)
        Scores (float32 or float64 kept, other dtypes cast to float64); a CuPy array is
        projected on the GPU.
    device : {None, "cpu", "cuda"}, default=None
        None follows the array type.

    Returns
    -------
    P : ndarray of the shape and dtype of ``Z``
        Projections, with exact zeros (and ones) on the inactive coordinates.

    References
    ----------
    .. [1] Niculae, V. & Martins, A. F. T. (2020). LP-SparseMAP: differentiable relaxed
       optimization for sparse structured prediction. ICML, Prop. 5-7.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.projections import project_at_most_one
    >>> project_at_most_one(np.array([[0.9, 0.8, -1.0]]))
    array([[0.55, 0.45, 0.  ]])
    """
    return _named("project_at_most_one", "at_most_one", Z, device)
