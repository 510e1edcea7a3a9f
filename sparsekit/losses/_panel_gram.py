"""The subspace Hessian of a linear datafit as a dense Gram, carried from one iterate to the next.

When OBA's free slice is dense, H_F = [X_F, 1]ᵀ diag(D) [X_F, 1] is formed through float32
panels and ``ssyrk`` (:func:`~sparsekit._cython._gram_kernels.gram_csr_syrk` for a CSR X,
:func:`~sparsekit._cython._gram_kernels.gram_dense_syrk` for a dense one). Between late
iterations the free set F gains or loses a few columns and most curvature weights Dᵢ barely
move, so the previous Gram is updated instead of formed again (ours, not in the thesis):

- the rows whose weight moved by more than ``rtol`` (relative) are refreshed with a signed
  rank-k update, ± Σᵢ |ΔDᵢ| xᵢxᵢᵀ over the kept columns;
- the columns that joined F get their rows of the Gram from one pass over X;
- the columns that left F are dropped.

The result is exactly the Gram of weights D̃ with |D̃ᵢ − Dᵢ| ≤ rtol·Dᵢ, hence
(1 − rtol) H_F ⪯ H̃_F ⪯ (1 + rtol) H_F: a Newton system solved with it is as good as one solved
to a relative residual of ~rtol, and OBA's globalization (Algorithm 2) does not depend on it.
On MNIST (784 columns, free slices of ~650) the late iterations at C = 10 refresh 1-10% of the
rows, and the update costs a small fraction of a new Gram.
"""
import numpy as np
import scipy.sparse as sp

from sparsekit._cython import _gram_kernels as GK
from sparsekit.utils._columns import column_counts


class PanelGram:
    """[X_F, 1]ᵀ diag(D̃) [X_F, 1], with D̃ within ``rtol`` of the weights asked for.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix or Fortran-ordered ndarray of shape (n_samples, n_features)
        The design matrix, float32 or float64.
    rtol : float
        Relative tolerance on the curvature weights (0: every changed weight is refreshed).
    n_threads : int, default=1
        Threads of the panels' gathers and products (the same sums as one).
    """

    def __init__(self, X, rtol, n_threads=1):
        self._X = X
        self._n_threads = n_threads
        self._sparse = sp.issparse(X)
        self._rtol = float(rtol)
        n, d = X.shape
        self._col_nnz = (column_counts(X.indices, d) if self._sparse
                         else np.full(d, n))
        self._cols = self._G = self._weights = self._intercept = None

    def __call__(self, cols, D, intercept):
        """The Gram (a new array, k + ``intercept`` square) of the sorted free columns ``cols``."""
        moved = None if self._G is None else self._moved(D)
        if self._update_pays(cols, moved, intercept):
            G = self._updated(cols, D, moved, intercept)
        else:
            G = np.empty((cols.size + intercept,) * 2)
            self._rank_update(D, cols, intercept, G, 1.0, False)
            self._weights = np.array(D, dtype=np.float64)
        self._cols, self._G, self._intercept = cols.copy(), G, intercept
        return G

    def _colmap(self, cols):
        colmap = np.full(self._X.shape[1], -1, dtype=np.int64)
        colmap[cols] = np.arange(cols.size)
        return colmap

    def _rank_update(self, W, cols, intercept, G, sign, accumulate):
        """G = sign · [X_F, 1]ᵀ diag(W) [X_F, 1] (W ≥ 0), or added to G with ``accumulate``."""
        X = self._X
        if self._sparse:
            GK.gram_csr_syrk(X.data, X.indices, X.indptr, W, self._colmap(cols), intercept, G,
                             sign=sign, accumulate=accumulate, n_threads=self._n_threads)
        else:
            GK.gram_dense_syrk(X, np.flatnonzero(W > 0), W, cols, intercept, G, sign=sign,
                               accumulate=accumulate, n_threads=self._n_threads)

    def _joined_rows(self, W, cols, joined, intercept):
        """The rows of [X_F, 1]ᵀ diag(W) [X_F, 1] at the positions ``joined`` of F."""
        X, k = self._X, cols.size
        B = np.empty((joined.size, k + intercept))
        if self._sparse:
            rowmap = np.full(k, -1, dtype=np.int64)
            rowmap[joined] = np.arange(joined.size)
            GK.gram_csr_cross(X.data, X.indices, X.indptr, W, self._colmap(cols), rowmap,
                             intercept, B)
        else:  # one BLAS pass over X: Xᵀ (W ∘ X_N), in X's precision
            V = X[:, cols[joined]] * W[:, None].astype(X.dtype)
            B[:, :k] = (X.T @ V)[cols].T
            if intercept:
                B[:, k] = V.sum(axis=0)
        return B

    def _moved(self, D):
        return np.abs(D - self._weights) > self._rtol * D

    def _update_pays(self, cols, moved, intercept):
        """Whether updating the kept Gram costs less than half a new one, in scattered
        multiply-adds (a BLAS rank-1 term counted as 1/48 of one, as in ``hessp``'s model):
        the moved rows' rank-k update, and for joined columns one pass over X (scattered
        updates for a CSR X, a BLAS product for a dense one)."""
        if self._G is None or self._intercept != intercept or self._cols.size == 0:
            return False
        n, k = self._X.shape[0], cols.size
        joined = np.setdiff1d(cols, self._cols, assume_unique=True)
        cost = np.count_nonzero(moved) * k * k / 48
        if joined.size and self._sparse:  # one pass, Σᵢ nnzᵢ(joined) nnzᵢ(F) scattered updates
            nnz_joined, nnz_free = self._col_nnz[joined].sum(), self._col_nnz[cols].sum()
            cost += self._col_nnz.sum() + float(nnz_joined) * float(nnz_free) / n
        elif joined.size:  # one pass, n |joined| k multiply-adds in a float64 BLAS product
            cost += self._col_nnz.sum() + n * joined.size * k / 24
        return cost < 0.5 * n * k * k / 48

    def _updated(self, cols, D, moved, intercept):
        old, k = self._cols, cols.size
        at = np.minimum(np.searchsorted(old, cols), old.size - 1)
        kept = old[at] == cols
        rows = np.append(at[kept], old.size) if intercept else at[kept]
        G_kept = GK.principal_submatrix(self._G, rows)
        delta = np.where(moved, D - self._weights, 0.0)
        for sign in (1.0, -1.0):
            if np.any(sign * delta > 0):
                self._rank_update(np.maximum(sign * delta, 0.0), cols[kept], intercept, G_kept,
                                  sign, True)
        self._weights[moved] = D[moved]

        G = np.empty((k + intercept,) * 2)
        at_kept = np.append(np.flatnonzero(kept), k) if intercept else np.flatnonzero(kept)
        G[np.ix_(at_kept, at_kept)] = G_kept
        joined = np.flatnonzero(~kept)
        if joined.size:
            B = self._joined_rows(self._weights, cols, joined, intercept)
            G[joined, :] = B
            G[:, joined] = B.T
            B_jj = B[:, joined]  # symmetric up to the order of its sums
            G[np.ix_(joined, joined)] = 0.5 * (B_jj + B_jj.T)
        return G
