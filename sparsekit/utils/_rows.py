"""Row statistics of X that the solvers and estimators share."""
import numpy as np
import scipy.sparse as sp

from .._cython._gram_kernels import column_stats_csr, row_sq_norms_csr


def row_sq_norms(X):
    """‖xᵢ‖² of every row of NumPy or SciPy sparse ``X``, in float64 (the squares too: a
    float32 X's may underflow), without a temporary of X's size."""
    if not sp.issparse(X):
        return np.einsum("ij,ij->i", X, X, dtype=np.float64)
    X = X.tocsr()
    data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
    sq = np.empty(X.shape[0])
    row_sq_norms_csr(np.ascontiguousarray(data), np.ascontiguousarray(X.indptr), sq)
    return sq


#: bytes of float64 squares of a dense X's rows that :func:`weighted_column_stats` forms at
#: a time
_SQUARES_BLOCK_BYTES = 1 << 23


def weighted_column_stats(X, sample_weight=None):
    """``(Σᵢ sᵢ xᵢⱼ², Σᵢ sᵢ [xᵢⱼ ≠ 0])`` (float64) of every column j of NumPy or SciPy
    sparse ``X``: its weighted sum of squares and count of nonzero entries; the weights
    ``s`` default to 1. Sums, so that row partitions add up."""
    sw = (np.ones(X.shape[0]) if sample_weight is None
          else np.asarray(sample_weight, dtype=np.float64))
    squares, counts = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    if sp.issparse(X):
        X = X.tocsr()
        data = X.data if X.data.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
        column_stats_csr(np.ascontiguousarray(data), np.ascontiguousarray(X.indices),
                         np.ascontiguousarray(X.indptr), np.ascontiguousarray(sw), squares,
                         counts)
        return squares, counts
    step = max(1, _SQUARES_BLOCK_BYTES // (8 * max(X.shape[1], 1)))
    for start in range(0, X.shape[0], step):
        block, weights = X[start:start + step], sw[start:start + step]
        squares += weights @ np.square(block, dtype=np.float64)
        counts += weights @ (block != 0)
    return squares, counts


def weighted_scale_sums(X, sample_weight=None):
    """``[Σ sᵢ ‖xᵢ‖², Σ sᵢ nnz(xᵢ), Σ sᵢ, squares..., counts...]`` (float64, 3 + 2 d
    entries) of NumPy or SciPy sparse ``X``: the sums the scale of X is read from, its
    columns' :func:`weighted_column_stats` after their totals (over the columns with an
    entry); the weights ``s`` default to 1. Sums, so that row partitions add up."""
    sw = (np.ones(X.shape[0]) if sample_weight is None
          else np.asarray(sample_weight, dtype=np.float64))
    return scale_sums_of(*weighted_column_stats(X, sw), sw.sum())


def scale_sums_of(squares, counts, total_weight):
    """:func:`weighted_scale_sums`' vector from the columns' weighted sums of squares and
    counts of nonzero entries and the weights' total."""
    stored = counts > 0
    return np.concatenate([[squares[stored].sum(), counts[stored].sum(), total_weight],
                           squares, counts])
