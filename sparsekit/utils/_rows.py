"""Row statistics of X that the solvers and estimators share."""
import numpy as np
import scipy.sparse as sp


def row_sq_norms(X):
    """‖xᵢ‖² of every row of NumPy or SciPy sparse ``X``, in float64 (the squares too: a
    float32 X's may underflow), without a temporary of X's size for dense X."""
    if sp.issparse(X):
        X = X.tocsr()
        squares = sp.csr_matrix((np.square(X.data, dtype=np.float64), X.indices, X.indptr),
                                shape=X.shape)
        return np.asarray(squares.sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", X, X, dtype=np.float64)


def row_nnz(X):
    """The number of nonzero entries of every row of NumPy or SciPy sparse ``X`` (stored
    zeros of a sparse X not counted)."""
    if sp.issparse(X):
        X = X.tocsr()
        nonzero = np.concatenate([[0], np.cumsum(X.data != 0)])
        return np.diff(nonzero[X.indptr])
    return np.count_nonzero(X, axis=1)


def weighted_row_sums(X, sample_weight=None):
    """``[Σ sᵢ ‖xᵢ‖², Σ sᵢ nnz(xᵢ), Σ sᵢ]`` (float64) of NumPy or SciPy sparse ``X``; the
    weights ``s`` default to 1. Sums, so that row partitions add up."""
    sw = (np.ones(X.shape[0]) if sample_weight is None
          else np.asarray(sample_weight, dtype=np.float64))
    return np.array([float(row_sq_norms(X) @ sw), float(row_nnz(X) @ sw), float(sw.sum())])
