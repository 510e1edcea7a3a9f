"""The weights of :class:`~sparsekit.ExtremeSoftmaxSGD`: the array its passes train, where
each class's weights lie in it (a matrix of class rows, or a hashed table), the model's
attributes and the scores of rows."""
import numpy as np
import scipy.sparse as sp

from sparsekit._cython._softmax_sgd import hashed_scores
from sparsekit.losses._softmax import _chunks, _shifted_log_normalizer
from sparsekit.losses._softmax import _scores as _softmax_scores
from sparsekit.utils._threads import openmp_call, threads_for
from sparsekit.utils._validation import check_dense_size


#: :meth:`SoftmaxWeights.sampled_scores` copies a sample's rows about this many of X's
#: entries at a time
SAMPLED_ENTRIES = 2**20


class SoftmaxWeights:
    """The weights ``R`` of a softmax model of K classes over D features, as the epoch
    drivers lay them out: a (K, D + ``bias``) matrix, class k's row its feature weights
    then its intercept; or, with ``n_weights``, one row holding a hashed table of
    ``n_weights`` entries then one intercept per class slot, class k's slot ``slots[k]``
    (classes added later take slots after the others, so that the table keeps its
    classes). What changes the layout or the array makes a new object (:meth:`grown`,
    :meth:`replaced`): an estimator's call that fails puts back the object it held; the
    passes and :meth:`scale_columns` change the array in place."""

    def __init__(self, R, bias, n_weights=None, slots=None):
        self.R, self.bias, self.n_weights = R, bool(bias), n_weights
        n_classes = R.shape[0] if n_weights is None else R.shape[1] - n_weights
        self.slots = np.arange(n_classes, dtype=np.intp) if slots is None else slots

    @classmethod
    def zeros(cls, n_classes, n_features, dtype, bias, n_weights=None):
        """Zero weights, refused (ValueError or MemoryError, saying what to pass) before
        they are allocated where they cannot be."""
        shape = ((1, n_weights + n_classes) if n_weights is not None
                 else (n_classes, n_features + int(bias)))
        # refused before np.empty, whose pages may not exist: filling them ends the process
        check_dense_size("the weights", [("rows", shape[0]), ("columns", shape[1])],
                         np.dtype(dtype).itemsize, "pass a smaller n_weights" if n_weights
                         else "pass n_weights to bound them (a hashed table of that size)")
        try:
            R = np.empty(shape, dtype=dtype)
        except (ValueError, MemoryError) as exc:
            size = float(np.prod(shape, dtype=np.float64)) * np.dtype(dtype).itemsize
            what = f"n_weights={n_weights}" if n_weights is not None else (
                f"{n_classes} classes x {n_features} features (n_weights bounds it)")
            raise MemoryError(f"ExtremeSoftmaxSGD: the weights of {what} take {size:.3g} "
                              f"bytes, more than this machine can allocate") from exc
        # filled explicitly: np.zeros maps lazily, and the first epoch would pay the page faults
        R.fill(0)
        return cls(R, bias, n_weights)

    @property
    def n_classes(self):
        """The number of classes (of slots, for hashed weights)."""
        return self.slots.size

    def fits(self, n_features, bias, n_weights):
        """Whether these weights are laid out for a model of ``n_features`` columns with
        that ``bias`` and ``n_weights`` (a warm start can continue them)."""
        return (self.bias == bool(bias) and self.n_weights == n_weights
                and (n_weights is not None or self.R.shape[1] == n_features + int(bias)))

    def grown(self, where, n_classes):
        """Weights for ``n_classes`` classes, the present ones at the positions ``where``
        among them: zero weights for the others (new rows; hashed: new slots after the
        others)."""
        R = self.R
        if self.n_weights is None:
            grown = np.zeros((n_classes, R.shape[1]), dtype=R.dtype)
            grown[where] = R
            return SoftmaxWeights(grown, self.bias)
        new = n_classes - self.slots.size
        slots = np.empty(n_classes, dtype=np.intp)
        slots[where] = self.slots
        slots[np.setdiff1d(np.arange(n_classes), where)] = self.slots.size + np.arange(new)
        return SoftmaxWeights(np.concatenate([R, np.zeros((1, new), dtype=R.dtype)], axis=1),
                              self.bias, self.n_weights, slots)

    def attributes(self, R=None):
        """``coef_`` and ``intercept_`` of ``R`` (default: these weights) as views; hashed
        weights have no ``coef_`` and a copy of their intercepts."""
        R = self.R if R is None else R
        if self.n_weights is not None:
            intercept = (R[0, self.n_weights + self.slots] if self.bias
                         else np.zeros(self.slots.size, dtype=R.dtype))
            return {"intercept_": intercept}
        D = R.shape[1] - int(self.bias)
        return {"coef_": R[:, :D],
                "intercept_": R[:, D] if self.bias else np.zeros(R.shape[0], R.dtype)}

    def replaced(self, R):
        """The same layout over the weights ``R`` (of the same shape)."""
        return SoftmaxWeights(R, self.bias, self.n_weights, self.slots)

    def copy(self):
        """The same layout over a copy of the weights."""
        return self.replaced(self.R.copy())

    def scale_columns(self, scales, inverse=False):
        """Multiply (``inverse``: divide) in place the weights of the first ``scales.size``
        columns by ``scales``."""
        if inverse:
            self.R[:, :scales.size] /= scales
        else:
            self.R[:, :scales.size] *= scales

    def scores(self, X, n_jobs=None):
        """float64 scores of every class for the rows of a validated X (dense, or CSR)."""
        if self.n_weights is None:
            coef, intercept = self.attributes().values()
            return _softmax_scores(X, coef, intercept)
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=np.float64)
            data, indices, indptr, dense = X.data, X.indices, X.indptr, False
        else:
            data = np.ascontiguousarray(X, dtype=np.float64).ravel()
            indices = indptr = np.zeros(1, dtype=np.intp)
            dense = True
        threads = threads_for(n_jobs, X.shape[0])
        return openmp_call(threads, hashed_scores, data, indices, indptr, dense, X.shape[1],
                           self.bias, self.R[0], self.n_weights, self.slots, threads)

    def sampled_scores(self, X, rows, n_jobs=None):
        """The float64 scores of ``X[rows]`` (``rows`` sorted indices, or a slice), its rows
        copied about SAMPLED_ENTRIES entries at a time: a sample can be most of X, and
        ``X[rows]`` would copy all of it; every row (``slice(None)``) scores X itself."""
        if isinstance(rows, slice):
            return self.scores(X if rows == slice(None) else X[rows], n_jobs)
        per_row = X.nnz / max(X.shape[0], 1) if sp.issparse(X) else X.shape[1]
        step = max(1, int(SAMPLED_ENTRIES // max(per_row, 1.0)))
        parts = [self.scores(X[rows[start:start + step]], n_jobs)
                 for start in range(0, rows.size, step)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def chunk_scores(self, X, n_jobs=None):
        """(rows, float64 scores of X[rows]) for the chunks of rows of a validated X
        (``_chunks``), one chunk scored at a time; a chunk of every row scores X itself,
        unsliced."""
        for rows in _chunks(X.shape[0], self.n_classes):
            yield rows, self.scores(X if rows == slice(0, X.shape[0]) else X[rows], n_jobs)

    def map_rows(self, X, transform, n_jobs=None):
        """``transform(scores)`` of every row of a validated X, a chunk of rows at a time,
        written into one (n_samples, n_classes) array: the output is the peak memory (one
        chunk's output is returned as it is). Scores are computed in float64; the output
        is float32 when both X and the weights are."""
        dtype = np.result_type(X.dtype, self.R.dtype)
        out = None
        for rows, S in self.chunk_scores(X, n_jobs):
            if rows == slice(0, X.shape[0]):
                return transform(S).astype(dtype, copy=False)
            if out is None:
                out = np.empty((X.shape[0], self.n_classes), dtype=dtype)
            out[rows] = transform(S)
        return out

    def reduce_rows(self, X, reduce, n_jobs=None):
        """``reduce(scores)`` over the chunks of rows of a validated X, stacked: the scores
        of a chunk at a time (predictions for 1e4 rows and 1e5 classes would otherwise hold
        8 GB of scores)."""
        parts = [reduce(S) for _, S in self.chunk_scores(X, n_jobs)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def nll(self, X, y_idx, n_jobs=None):
        """Per-row negative log-likelihood of the labels ``y_idx`` (class indices), a chunk
        of rows at a time."""
        nll = np.empty(X.shape[0])
        for rows, S in self.chunk_scores(X, n_jobs):
            Z, log_norm = _shifted_log_normalizer(S)
            nll[rows] = log_norm - Z[np.arange(Z.shape[0]), y_idx[rows]]
        return nll
