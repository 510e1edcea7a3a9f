"""Row statistics of X that the solvers and estimators share."""
import numpy as np
import scipy.sparse as sp


def row_sq_norms(X):
    """‖xᵢ‖² of every row of NumPy or SciPy sparse ``X``, in float64, without a
    temporary of X's size for dense X."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X, dtype=np.float64)
