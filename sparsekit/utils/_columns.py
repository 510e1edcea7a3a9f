"""The columns of a sparse X that store an entry: what the linear solvers need to see."""
import numpy as np
import scipy.sparse as sp

#: X is restricted to its used columns only when at most this share of them is used: a
#: copy of X for a few empty columns would not pay (MNIST's pixels: 717 of 784)
MAX_USED_SHARE = 0.9


#: arrays of X's column count (a count per column, SciPy's column indexing) are used up to
#: this many columns, or X's entries if more: on 2**24 hashed columns (5 M entries) they
#: take 0.4 s against 3.7 s for sorting and bisecting the entries' columns, which past it
#: keeps the memory to the entries' (2**31 columns: 8 GB of them)
TABLE_COLUMNS = 2**27


def affords_column_arrays(X):
    """Whether arrays of X's column count are affordable (:data:`TABLE_COLUMNS`)."""
    return X.shape[1] <= max(X.nnz, TABLE_COLUMNS)


#: entries counted at a time by :func:`column_counts`: ``np.bincount`` makes an intp copy
#: of the indices it is given (8 bytes an entry: 69 MiB for MNIST's), and in blocks it is
#: also faster (its counts stay in cache)
COUNT_BLOCK = 1 << 20


def column_counts(indices, n_columns):
    """How many of ``indices`` fall on each of ``n_columns`` columns, a block at a time."""
    counts = np.zeros(n_columns, dtype=np.intp)
    step = max(COUNT_BLOCK, n_columns)       # each block's counts cost no more than it
    for start in range(0, indices.size, step):
        counts += np.bincount(indices[start:start + step], minlength=n_columns)
    return counts


def stored_columns(X):
    """The sorted indices of the columns of SciPy sparse ``X`` (CSR or CSC) that store an
    entry."""
    if X.format == "csc":
        return np.flatnonzero(np.diff(X.indptr))
    X = X.tocsr()
    if affords_column_arrays(X):
        return np.flatnonzero(column_counts(X.indices, X.shape[1]))
    indices = np.sort(X.indices).astype(np.intp)      # each run's first (np.unique: 30x slower)
    return indices[np.r_[True, indices[1:] != indices[:-1]]] if indices.size else indices


def renumbered_columns(X, index):
    """A CSR ``X`` on the columns ``index`` (sorted), entries in other columns dropped."""
    X = X.tocsr()
    if affords_column_arrays(X):
        return X[:, index]
    pos = np.searchsorted(index, X.indices)
    kept = pos < index.size
    kept[kept] = index[pos[kept]] == X.indices[kept]
    indptr = np.concatenate([[0], np.cumsum(kept)])[X.indptr]
    return type(X)((X.data[kept], pos[kept].astype(X.indices.dtype), indptr.astype(X.indptr.dtype)),
                   shape=(X.shape[0], index.size))


class UsedColumns:
    """The columns of a sparse X that store an entry, when some store none.

    An empty column gives its weight no data gradient: under the ℓ1, elastic-net and ridge
    penalties that weight is 0 at the solution, and it stays 0 from a zero start. The
    solvers are given :meth:`take` of X, the used columns only, so that their work per
    iteration and their memory follow those columns rather than ``n_features`` (hashed
    features: ``HashingVectorizer``'s 2**20 columns over 5000 documents use 2% of them);
    :meth:`expand` writes their solutions back into ``n_features`` columns, with zeros on
    the others. Dense X (and anything that is not a SciPy sparse matrix), sparse X with
    more than ``MAX_USED_SHARE`` of its columns used, and any X with ``keep_all`` (where a
    constraint may hold an empty column's weight away from 0) pass through unchanged:
    ``index`` is None. An X that stores no entry keeps its first column (a matrix of no
    columns is what scikit-learn's checks and the models' shapes refuse).
    """

    def __init__(self, X, keep_all=False):
        self.n_features = X.shape[1]
        self.index = None
        if keep_all or not sp.issparse(X):
            return
        stored = stored_columns(X)
        if not stored.size:
            stored = np.zeros(1, dtype=np.intp)   # X stores no entry: the solvers get a column
        if stored.size <= MAX_USED_SHARE * self.n_features:
            self.index = stored

    @property
    def n_used(self):
        """How many columns the solvers see."""
        return self.n_features if self.index is None else self.index.size

    def take(self, X):
        """X (dense, CSR or CSC) on the used columns, in its layout (X itself when
        ``index`` is None)."""
        if self.index is None:
            return X
        if sp.issparse(X) and X.format == "csr":
            taken = renumbered_columns(X, self.index)
        else:
            taken = X[:, self.index]
        if sp.issparse(taken):
            taken.sort_indices()  # a monotone renumbering: already sorted, now also flagged
        return taken

    def restrict(self, coef):
        """``coef`` of shape (..., n_features + extra) on the used columns, the ``extra``
        trailing columns (an intercept) kept."""
        if self.index is None or coef is None:
            return coef
        return np.concatenate([coef[..., self.index], coef[..., self.n_features:]], axis=-1)

    def expand(self, coef):
        """The inverse of :meth:`restrict`: (..., n_used + extra) to (..., n_features +
        extra) with zeros on the empty columns, in ``coef``'s memory order; a sparse 2-D
        ``coef`` stays sparse (CSR)."""
        if self.index is None:
            return coef
        extra = coef.shape[-1] - self.index.size
        target = np.concatenate([self.index, self.n_features + np.arange(extra)])
        width = self.n_features + extra
        if sp.issparse(coef):
            coef = sp.csr_matrix(coef)
            return sp.csr_matrix((coef.data, target[coef.indices], coef.indptr),
                                 shape=(coef.shape[0], width))
        order = "F" if coef.flags.f_contiguous and not coef.flags.c_contiguous else "C"
        out = np.zeros(coef.shape[:-1] + (width,), dtype=coef.dtype, order=order)
        out[..., target] = coef
        return out
