"""Row statistics of X that the solvers and estimators share, and a dense X's sparse copy."""
import math

import numpy as np
import scipy.sparse as sp

from .._cython._gram_kernels import (column_stats_csr, dense_compress_rows, dense_row_ends,
                                     row_sq_norms_csr)

#: the largest count that int32 indices hold
_INT32_MAX = np.iinfo(np.int32).max
#: a dense X with at most this share of nonzero entries (pixels, counts, one-hot codes
#: stored densely) is solved as its sparse copy by L1LogisticOBA, the softmax SGD drivers
#: and SparsemaxClassifier's SDCA, as LIBLINEAR solves every X: their kernels then read
#: only the nonzero entries (OBA's fits on the copy took a quarter of the array's time at
#: 0.1 nonzero, three quarters at 0.29, longer from 0.4 on; the SGD passes 0.21-0.46 of it
#: at 0.1, 0.49-0.84 at 0.3, 0.77-0.97 at 0.5, up to 1.25 at 0.7)
SPARSE_COPY_DENSITY = 0.3


def row_sq_norms(X):
    """‖xᵢ‖² of every row of NumPy or SciPy sparse ``X``, in float64 (the squares too: a
    float32 X's may underflow), without a temporary of X's size (a CSC X's: its entries'
    squares, rather than a CSR copy)."""
    if not sp.issparse(X):
        return np.einsum("ij,ij->i", X, X, dtype=np.float64)
    if X.format == "csc" and X.has_canonical_format:
        return np.bincount(X.indices, weights=np.square(X.data, dtype=np.float64),
                           minlength=X.shape[0])
    X = X.tocsr()
    if not X.has_canonical_format:       # an entry stored twice counts as their sum
        X = X.copy()
        X.sum_duplicates()
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
    ``s`` default to 1, where a dense X's sums are column reductions (buffered, in
    float64: a tenth of the time of the weighted row blocks on a Fortran-ordered X) and a
    CSC X's are read along its columns (no CSR copy). Sums, so that row partitions add
    up."""
    squares, counts = np.zeros(X.shape[1]), np.zeros(X.shape[1])
    if sample_weight is None and not sp.issparse(X):
        return (np.einsum("ij,ij->j", X, X, dtype=np.float64),
                np.count_nonzero(X, axis=0).astype(np.float64))
    if sample_weight is None and X.format == "csc":
        _csc_column_stats(X, squares, counts)
        return squares, counts
    sw = (np.ones(X.shape[0]) if sample_weight is None
          else np.asarray(sample_weight, dtype=np.float64))
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


def _csc_column_stats(X, squares, counts):
    """:func:`weighted_column_stats` of CSC ``X``, unweighted, into ``squares`` and
    ``counts``: read along its columns, in blocks of columns of at most about
    _SQUARES_BLOCK_BYTES of float64 squares (a temporary of all of X's entries would add
    half of a float64 X's size to a fit's peak memory)."""
    indptr, most = X.indptr, max(1, _SQUARES_BLOCK_BYTES // 8)
    lo = 0
    while lo < X.shape[1]:
        hi = max(lo + 1, int(np.searchsorted(indptr, indptr[lo] + most, side="right")) - 1)
        hi = min(hi, X.shape[1])
        first, last = indptr[lo], indptr[hi]
        data = X.data[first:last]
        nonempty = np.diff(indptr[lo:hi + 1]) > 0
        starts = indptr[lo:hi][nonempty] - first
        if starts.size:
            squares[lo:hi][nonempty] = np.add.reduceat(np.square(data, dtype=np.float64),
                                                       starts)
            counts[lo:hi][nonempty] = np.add.reduceat(data != 0, starts, dtype=np.float64)
        lo = hi


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


#: a column whose nonzero entries have a mean square above this many times the median
#: column's is in other units than most (31.6 times in root mean square): the benchmark
#: sets' TF-IDF, one-hot and pixel columns span at most 40 times (Debian's TF-IDF), raw
#: tables' 1e5 (wine) to 2e7 (breast cancer)
COLUMN_UNITS_CAP = 1000.0


def _entry_ratios(squares, counts):
    """Each column's mean square of its nonzero entries ``m_j = squares_j / counts_j`` (0
    without one; the columns' weighted sums of :func:`weighted_column_stats`) over the
    median of those of the columns with one (at most float64's largest), or None when no
    column's passes COLUMN_UNITS_CAP times that median, or when the median is 0 or
    subnormal (entries below ~1e-154, whose squares underflow: their units unknown)."""
    stored = counts > 0
    if not stored.any():
        return None
    means = np.zeros_like(squares)
    means[stored] = squares[stored] / counts[stored]
    median = float(np.median(means[stored]))
    if not median >= np.finfo(np.float64).tiny or np.all(means <= COLUMN_UNITS_CAP * median):
        return None
    with np.errstate(over="ignore"):
        return np.minimum(means / median, np.finfo(np.float64).max)


def unit_factors(squares, counts):
    """Each column's factor ``max(1, sqrt(m_j / cap))``, ``m_j`` the mean square of its
    nonzero entries and ``cap`` COLUMN_UNITS_CAP times the median column's, or None when
    every factor is 1: a column in other units than most (an identifier, a timestamp or an
    income among features of unit scale) counts as if its entries were of the cap's size
    (its squares divided by the factor squared)."""
    ratios = _entry_ratios(squares, counts)
    return None if ratios is None else np.sqrt(np.maximum(ratios / COLUMN_UNITS_CAP, 1.0))


#: the range of the median column's root mean square entry in which X is solved in its own
#: units (:func:`unit_power`): the benchmark sets' span 0.12 (Debian's TF-IDF) to 1
UNIT_RANGE = (1 / 16, 16.0)


def unit_power(squares, counts, dtype):
    """The power of two 2**k by which OBA solves X of unweighted
    :func:`weighted_column_stats` ``(squares, counts)`` and ``dtype``: 1 where the median
    over X's columns with a nonzero entry of the root mean square of those entries lies
    in UNIT_RANGE, else the power that brings it nearest 1 (bounded so that no entry
    overflows ``dtype``). The problem is the same (C divided and the weights multiplied
    by it, exactly: a power of two); the solver's constants (its Hessian regularization,
    its trust radius, the measure's unit step) are absolute and were set on columns of
    such entries, and features in other units (all of them 1e-4 times as large, C 1e4
    times) made its Newton steps crawl."""
    stored = counts > 0
    if not stored.any():
        return 1.0
    median = float(np.median(np.sqrt(squares[stored] / counts[stored])))
    if not 0 < median < math.inf or UNIT_RANGE[0] <= median <= UNIT_RANGE[1]:
        return 1.0      # in range, or squares beyond float64's (which fits refuse)
    power = -round(math.log2(median))
    largest = math.sqrt(float(squares.max()))   # at least the largest entry's magnitude
    if power > 0:          # squares beyond their dtype's range: entries too large to grow
        headroom = (math.log2(np.finfo(dtype).max) - math.log2(largest)
                    if math.isfinite(largest) else 0.0)
        power = max(min(power, math.floor(headroom) - 1), 0)
    return 2.0 ** power if power else 1.0


def entry_scales(squares, counts):
    """Each column's root mean square of its nonzero entries over the median column's, at
    least 1, or None when X's columns are in about the same units (none passes
    COLUMN_UNITS_CAP times the median in mean square): X divided by them column by column
    has no column of larger entries than the median column's (columns of smaller ones are
    left, so that the division never enlarges an entry)."""
    ratios = _entry_ratios(squares, counts)
    return None if ratios is None else np.sqrt(np.maximum(ratios, 1.0))


def mostly_zeros(X):
    """Whether the dense X has at most SPARSE_COPY_DENSITY nonzero entries."""
    return np.count_nonzero(X) <= SPARSE_COPY_DENSITY * X.size


def sparse_copy(X):
    """CSR copy of dense float32 or float64 ``X`` (a NumPy array), its nonzero entries in
    two passes over X, or the CSC copy of a Fortran-ordered X (its transpose's CSR); int32
    indices unless they or the entries' count exceed int32."""
    if not X.flags.c_contiguous and X.flags.f_contiguous:
        return sparse_copy(X.T).T
    X = np.ascontiguousarray(X)
    indptr = np.empty(X.shape[0] + 1, dtype=np.int64)
    dense_row_ends(X, indptr)
    index = np.int32 if max(indptr[-1], X.shape[1]) <= _INT32_MAX else np.int64
    data, indices = np.empty(indptr[-1], dtype=X.dtype), np.empty(indptr[-1], dtype=index)
    dense_compress_rows(X, data, indices)
    return sp.csr_matrix((data, indices, indptr.astype(index, copy=False)), shape=X.shape)


def divided_columns(X, scales):
    """A copy of validated X (C-ordered or CSR) with each column divided by its entry of
    ``scales`` (in X's dtype)."""
    if not sp.issparse(X):
        return X / scales
    X = X.copy()
    X.data /= scales[X.indices]
    return X


def sample_rows(sample_weight, size, random_state):
    """The rows of nonzero weight (all rows: a slice), or ``size`` of them (None: all)
    from a generator seeded like ``random_state``'s stream but separate from it (a
    RandomState instance is read, not advanced): rows of weight 0 take no place in a
    sample and no part in its sums."""
    kept = np.flatnonzero(sample_weight)
    if size is None or kept.size <= size:
        return slice(None) if kept.size == sample_weight.shape[0] else kept
    seed = (random_state.get_state()[1] if isinstance(random_state, np.random.RandomState)
            else random_state)
    return kept[np.sort(np.random.default_rng(seed).choice(kept.size, size, replace=False))]
