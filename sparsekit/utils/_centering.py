"""The centering of columns far from 0 before a fit with a free intercept.

With an intercept b, a column j whose entries lie far from 0 against their spread (a raw
year, a timestamp beside standardized columns) makes the direction (w_j, b) = (1, −mean_j)
nearly flat: the Newton systems are ill-conditioned and a solver stops short of the
minimum or at the gradient's rounding error. Subtracting a shift c_j from such a column
leaves the problem as it is (the model of X as given has intercept b − wᵀc), so any shift
serves: the weighted mean of evenly spaced rows is read, and the shifts are rounded to X's
dtype before X is shifted, so that the intercepts moved back use the values subtracted.
Only columns that store an entry in every row are shifted (all of a dense X's; in a sparse
X, a numeric column beside one-hot ones): shifting the others would fill their empty rows.

The functions take NumPy arrays, SciPy sparse matrices and, on the GPU, dense CuPy arrays
(X and the weights on the same device); the moments and shifts they return are NumPy
arrays. The moments are sums, so that those of a dask array's partitions add up.
"""
import numpy as np
import scipy.sparse as sp

#: a column (stored in every row) whose weighted mean exceeds this many standard
#: deviations is centered before a fit with a free intercept
CENTER_RATIO = 10.0

#: rows of X, evenly spaced, whose weighted moments decide the columns to center and their
#: shifts
CENTER_SAMPLE = 10_000

#: bytes of float64 rows that :func:`column_moments` converts at a time (a wide X's sample
#: would otherwise be as large as X)
_BLOCK_BYTES = 1 << 23


def center_stride(n_samples):
    """The step between the rows read: about CENTER_SAMPLE of ``n_samples``."""
    return max(1, n_samples // CENTER_SAMPLE)


def _host(a):
    return a if isinstance(a, np.ndarray) else a.get()


def column_moments(X, sample_weight=None, stride=1):
    """``(Σ sᵢ, Σ sᵢ xᵢ, Σ sᵢ xᵢ², stored, n)`` over the rows 0, ``stride``, 2 ``stride``, …
    of X (float64 NumPy arrays; the weights ``s`` default to 1, and are in X's array
    module): ``stored`` counts the rows in which each column stores an entry and ``n`` is
    X's number of rows. For a SciPy sparse X the sums are of its columns that store an
    entry in every row (0 for the others, which are not shifted: that would fill their
    empty rows). None when X has no column. Sums, so that row partitions add up."""
    if X.shape[1] == 0:
        return None
    if sp.issparse(X):
        if X.format not in ("csr", "csc"):
            X = X.tocsr()
        stored = _stored_rows(X)
        full = np.flatnonzero(stored == X.shape[0])      # dense columns: few, as a rule
        weights = None if sample_weight is None else np.asarray(sample_weight)[::stride]
        total = float(len(range(0, X.shape[0], stride)) if weights is None
                      else np.sum(weights))
        sums, squares = np.zeros(X.shape[1]), np.zeros(X.shape[1])
        if full.size == 0:                 # the usual sparse X: nothing read but its indices
            return total, sums, squares, stored, X.shape[0]
        sampled = X[:, full].tocsr()[::stride]           # those columns' entries, not X's
        block = max(1, _BLOCK_BYTES // (8 * full.size))
        for start in range(0, sampled.shape[0], block):
            part = column_moments(sampled[start:start + block].toarray(),
                                  None if weights is None else weights[start:start + block])
            sums[full] += part[1]
            squares[full] += part[2]
        return total, sums, squares, stored, X.shape[0]
    rows_at_once = max(1, _BLOCK_BYTES // (8 * X.shape[1])) * stride
    total, sums, squares = 0.0, 0.0, 0.0
    with np.errstate(over="ignore"):   # squares beyond float64 (entries near 1e154): inf,
        for start in range(0, X.shape[0], rows_at_once):         # a column left alone
            rows = X[start:start + rows_at_once:stride].astype(np.float64)
            if sample_weight is None:
                total += rows.shape[0]
                sums = sums + rows.sum(axis=0)
                squares = squares + (rows * rows).sum(axis=0)
            else:
                weights = sample_weight[start:start + rows_at_once:stride].astype(np.float64)
                total += float(weights.sum())
                sums = sums + weights @ rows
                squares = squares + weights @ (rows * rows)
    return (total, _host(sums), _host(squares), np.full(X.shape[1], X.shape[0]),
            X.shape[0])


def _stored_rows(X):
    """The number of rows in which each column of CSR or CSC X stores an entry."""
    if X.format == "csc":
        counts = np.diff(X.indptr)
    else:
        counts, step = np.zeros(X.shape[1], dtype=np.int64), max(1, _BLOCK_BYTES // 8)
        for start in range(0, X.indices.size, step):   # bincount's int64 copies: 8 MB
            counts += np.bincount(X.indices[start:start + step], minlength=X.shape[1])
    # duplicate entries only add to a count: those below the number of rows are exact, and
    # only the other columns need a copy without duplicates (X may be large; they are few)
    full = np.flatnonzero(counts >= X.shape[0])
    if full.size and not X.has_canonical_format:
        columns = X[:, full].tocsc()
        columns.sum_duplicates()
        counts[full] = np.diff(columns.indptr)
    return counts


def far_shifts(moments, dtype):
    """The shifts (float64, NumPy) of the columns that store an entry in every row and
    whose weighted mean lies beyond CENTER_RATIO standard deviations, per ``moments``
    (:func:`column_moments`, or None): their means rounded to ``dtype`` (0 for the other
    columns); None when no column is far from 0."""
    if moments is None or not moments[0] > 0:
        return None
    total, sums, squares, stored, n = moments
    mean = sums / total
    with np.errstate(over="ignore", invalid="ignore"):     # inf squares: not far (nan)
        far = mean * mean > CENTER_RATIO ** 2 * np.maximum(squares / total - mean * mean, 0)
    far &= stored == n
    if not far.any():
        return None
    return np.where(far, mean, 0.0).astype(dtype).astype(np.float64)


def column_shifts(X, sample_weight=None):
    """The shifts to subtract from X's columns (NumPy or SciPy sparse X), or None:
    :func:`far_shifts` of X's CENTER_SAMPLE evenly spaced rows."""
    return far_shifts(column_moments(X, sample_weight, center_stride(X.shape[0])), X.dtype)
