"""Row statistics of X that the solvers and estimators share."""
import numpy as np
import scipy.sparse as sp

from .._cython._gram_kernels import column_squares_csr, row_stats_csr


def _sparse_row_stats(X):
    """(nonzero entries, squared norm in float64) of every row of SciPy sparse ``X``, from
    one pass over its CSR form."""
    X = X.tocsr()
    data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
    nnz, sq = np.empty(X.shape[0], dtype=np.int64), np.empty(X.shape[0])
    row_stats_csr(np.ascontiguousarray(data), np.ascontiguousarray(X.indptr), nnz, sq)
    return nnz, sq


def row_sq_norms(X):
    """‖xᵢ‖² of every row of NumPy or SciPy sparse ``X``, in float64 (the squares too: a
    float32 X's may underflow), without a temporary of X's size."""
    if sp.issparse(X):
        return _sparse_row_stats(X)[1]
    return np.einsum("ij,ij->i", X, X, dtype=np.float64)


def row_nnz(X):
    """The number of nonzero entries of every row of NumPy or SciPy sparse ``X`` (stored
    zeros of a sparse X not counted)."""
    if sp.issparse(X):
        return _sparse_row_stats(X)[0]
    return np.count_nonzero(X, axis=1)


def weighted_row_sums(X, sample_weight=None):
    """``[Σ sᵢ ‖xᵢ‖², Σ sᵢ nnz(xᵢ), Σ sᵢ]`` (float64) of NumPy or SciPy sparse ``X``; the
    weights ``s`` default to 1. Sums, so that row partitions add up."""
    sw = (np.ones(X.shape[0]) if sample_weight is None
          else np.asarray(sample_weight, dtype=np.float64))
    nnz, sq = _sparse_row_stats(X) if sp.issparse(X) else (row_nnz(X), row_sq_norms(X))
    return np.array([float(sq @ sw), float(nnz @ sw), float(sw.sum())])


#: bytes of float64 squares of a dense X's rows that :func:`weighted_column_squares` forms at
#: a time
_SQUARES_BLOCK_BYTES = 1 << 23


def weighted_column_squares(X, sample_weight=None):
    """``Σᵢ sᵢ xᵢⱼ²`` (float64) of every column j of NumPy or SciPy sparse ``X``; the
    weights ``s`` default to 1. Sums, so that row partitions add up."""
    sw = (np.ones(X.shape[0]) if sample_weight is None
          else np.asarray(sample_weight, dtype=np.float64))
    out = np.zeros(X.shape[1])
    if sp.issparse(X):
        X = X.tocsr()
        data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
        column_squares_csr(np.ascontiguousarray(data), np.ascontiguousarray(X.indices),
                           np.ascontiguousarray(X.indptr), np.ascontiguousarray(sw), out)
        return out
    step = max(1, _SQUARES_BLOCK_BYTES // (8 * max(X.shape[1], 1)))
    for start in range(0, X.shape[0], step):
        out += sw[start:start + step] @ np.square(X[start:start + step], dtype=np.float64)
    return out


def weighted_scale_sums(X, sample_weight=None):
    """``[Σ sᵢ ‖xᵢ‖², Σ sᵢ nnz(xᵢ), Σ sᵢ, Σᵢ sᵢ xᵢ₁², ..., Σᵢ sᵢ xᵢ_d²]`` (float64) of NumPy
    or SciPy sparse ``X``: :func:`weighted_row_sums` followed by
    :func:`weighted_column_squares`, the sums the scale of X is read from. Sums, so that
    row partitions add up."""
    return np.concatenate([weighted_row_sums(X, sample_weight),
                           weighted_column_squares(X, sample_weight)])
