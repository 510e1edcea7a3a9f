"""Smooth datafits of linear models for :func:`sparsekit.optimize.minimize_oba`.

A datafit is f(x) = (1/n) Σᵢ sᵢ ℓ(mᵢ, yᵢ) with margins m = X w + b, parameters x = (w, b)
(b present only when ``fit_intercept``) and sample weights s. It offers what OBA needs
(as the LogReg and LASSO objects of the thesis' reference code do):

- ``value_grad(x)`` -> (f, ∇f), which also stores the curvature weights at x;
- ``hessp(x, free)`` -> a subspace Hessian operator on the free columns, reading them in
  place from X; :meth:`_SubspaceHessian.restrict` shrinks the list during corrections; a
  formed float32-panel Gram is carried between iterates, with curvature weights within
  ``gram_refresh_rtol`` (5%) of the current ones (:mod:`~sparsekit.losses._panel_gram`);
- ``lipschitz()`` -> an upper bound on the Lipschitz constant of ∇f (for the ISTA step);
- ``penalty_weights`` -> 1 for w, 0 for the intercept (kept free and unpenalized);
- ``shift_invariant`` -> None, or the size K of the blocks of parameters along which f is
  invariant to a common shift (a softmax model's K class weights of a feature;
  :func:`~sparsekit.optimize.minimize_oba`'s parameter of that name).

Sparse X is stored once as CSC (column slices are the hot path); dense X as Fortran order,
each column read only between its first and last nonzero row (a triangular X: half of it).
Values stay float32 if given so; all vectors are float64. The explicit Hessians of sparse X
walk rows: a CSR layout of the same matrix (canonical: sorted, no duplicates) can be handed
over as ``X_csr``, else a copy is made on first use. The matrix-free products of a sparse X
walked by columns copy the free columns by rows where the solver makes many products per
Hessian (:class:`_FreeSlice`: the same sums, each row read once). With ``n_threads`` > 1
the margins, the gradient, the matrix-free Hessian products (by columns) and their
diagonal run on that many OpenMP threads where they read at least ``thread_min_entries``
entries of X, and so do the float32-panel Grams
(:class:`~sparsekit.losses._panel_gram.PanelGram`): the same sums as on one, but where a
dense float64 X's BLAS calls group a thread's rows otherwise. A sparse X's Grams of
scattered updates run on them from ``gram_thread_min_updates`` updates, each thread adding
a block of rows into a buffer of its own (sums grouped otherwise than on one); NumPy's
(small dense ones) stay on one.
"""
import numpy as np
import scipy.sparse as sp

from sparsekit._cython import _oba_kernels as K
from sparsekit._cython import _gram_kernels as GK
from sparsekit.losses._panel_gram import PanelGram


class _FreeSlice:
    """Free columns of a CSC X copied by rows (``K.free_slice_csr``), for matrix-free
    products that read each row once (``K.hessp_free_slice``, the same sums as the column
    walk's). The copy lives in buffers its datafit reuses: it is ``valid`` until the next
    copy, and an operator holding it walks the columns again after that."""

    def __init__(self, cols, buffers, nnz):
        self.cols = np.array(cols)
        self.sdata, self.sind, self.sptr = buffers
        self.nnz = nnz
        self.acc = np.empty(4 * cols.size)
        self.valid = True

    def product(self, positions, v, s, D, out):
        """``out`` = the product on the listed ``positions`` of :attr:`cols` (the others'
        weights zero); returns the intercept's entry."""
        k = self.cols.size
        if positions.size == k:     # all of them: in place
            return K.hessp_free_slice(self.sdata, self.sind, self.sptr, D, v, s, self.acc, out)
        full, out_full = np.zeros(k), np.empty(k)
        full[positions] = v
        total = K.hessp_free_slice(self.sdata, self.sind, self.sptr, D, full, s, self.acc,
                                   out_full)
        out[:] = out_full[positions]
        return total


class _SubspaceHessian:
    """``v -> [X_F, 1]ᵀ diag(D) [X_F, 1] v`` on the free columns F = ``cols`` of X.

    The kernels read the free columns of X in place: shrinking F during the corrective cycle
    only shortens ``cols`` (the thesis' reference code copies a column slice instead; the copies
    cost about three products each on MNIST). ``calls`` is a one-element list shared with the
    restricted operators: it counts products.

    With ``gram`` (``gram(cols, intercept)`` -> the dense matrix), the operator forms itself
    explicitly once the products made reach ``explicit_after`` (the Gram's cost in products):
    the ski-rental rule, never more than twice the cheaper of the two routes when the number
    of products a solve will need is not known in advance.

    With ``X_rows`` (a CSR copy of the sparse X), the products and the diagonal walk its
    rows once each instead of the free columns (see :attr:`Logistic.row_walk_rows`). The
    products and the diagonal run on ``n_threads`` (the row walks on one). With
    ``free_slice`` (a :class:`_FreeSlice` and the positions of ``cols`` in its columns) the
    products of a sparse X read that copy while it is valid; with ``make_slice`` (``(copy,
    after)``: ``copy(cols)`` -> such a pair) the operator copies its free columns once the
    products on this Hessian exceed ``after``, which spares the copy to the Hessians that make
    few products (the ski-rental rule again).
    """

    def __init__(self, X, cols, D, intercept, tmp, calls, diag=None, gram=None,
                 explicit_after=np.inf, rows=(None, None), X_rows=None, n_threads=1,
                 free_slice=None, make_slice=None):
        self._n_threads = n_threads
        self._free_slice = free_slice
        self._make_slice = make_slice
        self._diag = diag
        self._X = X
        self._X_rows = X_rows
        self._rows = rows  # a dense X's row range per column (see column_row_ranges)
        self._cols = cols
        self._D = D
        self._intercept = intercept
        self._tmp = tmp
        self._calls = calls
        self._gram = gram
        self._explicit_after = explicit_after
        self._explicit = None
        self.shape = (cols.size + intercept,) * 2

    @property
    def is_explicit(self):
        """Whether the products now come from a formed matrix (after the switch)."""
        return self._explicit is not None

    @property
    def matrix(self):
        """The formed matrix (only once :attr:`is_explicit`)."""
        return self._explicit.matrix

    def count_products(self, count):
        """Record ``count`` products made with :attr:`matrix` directly."""
        self._explicit.count_products(count)

    def __call__(self, v):
        if self._explicit is None and self._gram is not None \
                and self._calls[0] >= self._explicit_after:
            self._explicit = _ExplicitHessian(self._gram(self._cols, self._intercept),
                                              self._calls)
        if self._explicit is not None:
            return self._explicit(v)
        self._calls[0] += 1
        out = np.empty(self.shape[0])
        v = np.ascontiguousarray(v, dtype=np.float64)
        X = self._X
        if self._X_rows is not None:
            R, nf = self._X_rows, self._cols.size
            full, out_full = np.zeros(X.shape[1]), np.empty(X.shape[1])
            full[self._cols] = v[:nf]
            s = K.hessp_csr(R.data, R.indices, R.indptr, self._D, full,
                            float(v[nf]) if self._intercept else 0.0, out_full)
            out[:nf] = out_full[self._cols]
            if self._intercept:
                out[nf] = s
        elif self._reads_slice():
            nf = self._cols.size
            copy, positions = self._free_slice
            total = copy.product(positions, v[:nf], float(v[nf]) if self._intercept else 0.0,
                                 self._D, out[:nf])
            if self._intercept:
                out[nf] = total
        elif sp.issparse(X):
            K.hessp_csc(X.data, X.indices, X.indptr, self._cols, self._D, v, self._intercept,
                        self._tmp, out, self._n_threads)
        else:
            K.hessp_dense(X, self._cols, self._D, v, self._intercept, self._tmp, out,
                          *self._rows, self._n_threads)
        return out

    def _reads_slice(self):
        """Whether this product reads a free slice: the one held while it is valid, or one
        copied now that the products on this Hessian have reached ``make_slice``'s count."""
        if self._make_slice is not None and self._calls[0] > self._make_slice[1]:
            self._free_slice = self._make_slice[0](self._cols)
            self._make_slice = None
        return self._free_slice is not None and self._free_slice[0].valid

    def diagonal(self):
        """The diagonal of the operator (for a Jacobi-preconditioned CG); kept for restricts."""
        if self._explicit is not None:
            return self._explicit.diagonal()
        if self._diag is not None:
            return self._diag
        self._diag = out = np.empty(self.shape[0])
        X = self._X
        if self._X_rows is not None:
            R, nf = self._X_rows, self._cols.size
            out_full = np.empty(X.shape[1])
            K.rmatvec_csr(R.data, R.indices, R.indptr, self._D, out_full, True)
            out[:nf] = out_full[self._cols]
            if self._intercept:
                out[nf] = self._D.sum()
        elif sp.issparse(X):
            K.hess_diag_csc(X.data, X.indices, X.indptr, self._cols, self._D, self._intercept,
                            out, self._n_threads)
        else:
            K.hess_diag_dense(X, self._cols, self._D, self._intercept, out, *self._rows,
                              self._n_threads)
        return out

    def quadratic_form(self, positions, values):
        """cᵀHc = ‖D^½ [X_F, 1] c‖² for c supported on ``positions``: reads only those columns
        (the model search's correction for the coordinates the orthant projection moved)."""
        if self._explicit is not None:
            return self._explicit.quadratic_form(positions, values)
        on_cols = positions < self._cols.size
        cols = self._cols[positions[on_cols]]
        b = float(values[~on_cols].sum())  # the intercept coordinate, when listed
        w = np.zeros(self._X.shape[1])
        w[cols] = values[on_cols]
        t = np.empty(self._D.size)
        X = self._X
        if sp.issparse(X):
            K.margins_csc(X.data, X.indices, X.indptr, w, cols, b, t, self._n_threads)
        else:
            K.margins_dense(X, w, cols, b, t, *self._rows, self._n_threads)
        return float(t @ (self._D * t))

    def restrict(self, keep):
        """The operator on the sub-slice ``keep`` (boolean over this operator's coordinates)."""
        keep = np.asarray(keep, dtype=bool)
        if self._explicit is not None:
            return self._explicit.restrict(keep)
        intercept = bool(self._intercept and keep[-1])
        cols = self._cols[keep[:self._cols.size]]
        diag = None if self._diag is None else self._diag[keep]
        free_slice = None if self._free_slice is None else \
            (self._free_slice[0], self._free_slice[1][keep[:self._cols.size]])
        return _SubspaceHessian(self._X, cols, self._D, intercept, self._tmp, self._calls, diag,
                                self._gram, self._explicit_after, self._rows, self._X_rows,
                                self._n_threads, free_slice,
                                self._make_slice if free_slice is None and cols.size else None)


class _ExplicitHessian:
    """The same operator formed as a dense |F|×|F| matrix (cheap when the free set is small)."""

    is_explicit = True

    def __init__(self, G, calls):
        self._G = G
        self._calls = calls
        self.shape = G.shape

    @property
    def matrix(self):
        """The formed matrix (read-only use)."""
        return self._G

    def __call__(self, v):
        self._calls[0] += 1
        return self._G @ v

    def count_products(self, count):
        """Record ``count`` products made with :attr:`matrix` directly."""
        self._calls[0] += count

    def diagonal(self):
        """The diagonal of the matrix."""
        return self._G.diagonal().copy()

    def quadratic_form(self, positions, values):
        """cᵀHc for c supported on ``positions``."""
        at = np.asarray(positions, dtype=np.intp)
        return float(values @ GK.principal_submatrix(self._G, at) @ values)

    def restrict(self, keep):
        """The principal sub-matrix on ``keep`` (boolean mask)."""
        idx = np.flatnonzero(keep)
        return _ExplicitHessian(GK.principal_submatrix(self._G, idx), self._calls)


def _positions_in(cols, sub):
    """The positions of the increasing ``sub`` in the increasing column list ``cols``, or
    None where ``cols`` does not hold all of them."""
    at = np.searchsorted(cols, sub)
    held = not (at.size and at[-1] >= cols.size) and np.array_equal(cols[at], sub)
    return at if held else None


def _take_columns(X, cols):
    """X[:, cols] of a CSC X (own O(nnz) copy kernel)."""
    indptr = np.zeros(cols.size + 1, dtype=X.indptr.dtype)
    np.cumsum(np.diff(X.indptr)[cols], out=indptr[1:])
    nnz = int(indptr[-1])
    data = np.empty(nnz, dtype=X.data.dtype)
    indices = np.empty(nnz, dtype=X.indices.dtype)
    GK.take_columns_csc(X.data, X.indices, X.indptr, cols, data, indices, indptr)
    return sp.csc_matrix((data, indices, indptr), shape=(X.shape[0], cols.size))


def _panel_cost(n, k):
    """The cost of a float32-panel Gram over ``k`` of ``n`` rows' columns, in the units of
    :meth:`_LinearDatafit.hessp`'s cost model: the ``ssyrk`` multiply-adds (~48 to a unit)
    and the gather into panels; a sparse X adds the walk of its entries."""
    return n * k * k / 48 + n * k / 8


class _LinearDatafit:
    """Shared machinery of datafits of the margins m = X w + b (see module docstring).

    Subclasses define ``_pointwise(m, r, D)``: it returns Σ sᵢ ℓ(mᵢ) and writes
    rᵢ = sᵢ ∂ℓ/∂mᵢ and Dᵢ = sᵢ ∂²ℓ/∂mᵢ² (with sᵢ already divided by n); they may check
    their labels in ``_check_labels``.
    """

    #: the column offsets subtracted from X before the datafit was made (None: none); the
    #: margins of the original X are X w + b − wᵀ offsets (the estimators' centering)
    offsets = None
    #: no shift of the parameters leaves f unchanged
    shift_invariant = None

    def _check_labels(self):
        if not np.all(np.isfinite(self.y)):
            raise ValueError("y must be finite")

    def __init__(self, X, y, sample_weight=None, fit_intercept=False, X_csr=None,
                 n_threads=1):
        self.n_threads = max(1, int(n_threads))
        if sp.issparse(X):
            X = X.tocsc()
            if X.dtype not in (np.float32, np.float64):
                X = X.astype(np.float64)
            if not X.has_canonical_format:  # duplicate entries would break the Gram kernels
                X = X.copy()
                X.sum_duplicates()
        else:
            X = np.asfortranarray(X)
            if X.dtype not in (np.float32, np.float64):
                X = np.asfortranarray(X, dtype=np.float64)
        self.X = X
        # a dense X's rows [lo, hi) holding each column's nonzeros: the products read only
        # those (a triangular X, as the thesis' Synthetic data: half the matrix)
        self._rows = (None, None)
        if not sp.issparse(X):
            self._rows = (np.empty(X.shape[1], dtype=np.int64),
                          np.empty(X.shape[1], dtype=np.int64))
            K.column_row_ranges(X, *self._rows)
        # a sparse X's stored entries per column: what a walk of some columns reads (the
        # route and thread choices ask at every margins call and subspace Hessian)
        self._col_nnz = np.diff(X.indptr) if sp.issparse(X) else None
        self.n_samples, self.n_features = X.shape
        # CSR layout for the explicit Hessians: the caller's, else a copy made on first use
        # (4 ms on w8a, against a 55 ms fit)
        same = X_csr is not None and X_csr.shape == X.shape and X_csr.dtype == X.dtype
        self._Xr = X_csr if same else None
        self._panel_gram = None  # the dense-panel Gram, carried between iterates
        self._slice = self._slice_buffers = None  # the last free slice and its buffers
        self._max_abs = None     # largest |X_ij|, measured when a float32 panel is first asked
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        sw = (np.ones(self.n_samples) if sample_weight is None
              else np.asarray(sample_weight, dtype=np.float64))
        for name, v in (("y", self.y), ("sample_weight", sw)):  # the kernels do not check
            if v.shape != (self.n_samples,):
                raise ValueError(f"{name} must have shape ({self.n_samples},) to match X, "
                                 f"got {v.shape}")
        self._check_labels()
        self._sw = np.ascontiguousarray(sw / self.n_samples)
        self.fit_intercept = bool(fit_intercept)
        self.n_params = self.n_features + self.fit_intercept
        self.penalty_weights = np.ones(self.n_params)
        if self.fit_intercept:
            self.penalty_weights[-1] = 0.0
        n = self.n_samples
        self._m, self._r, self._D, self._tmp = (np.empty(n) for _ in range(4))
        self._bound = None
        if sp.issparse(X):  # one pass: the cost model's row lengths and the Lipschitz bound
            row_nnz, row_sq = np.empty(n), np.empty(n)
            GK.row_stats_csc(X.data, X.indices, row_nnz, row_sq)
            self._row_len = float(row_nnz @ row_nnz) / max(X.nnz, 1)
            self._bound = float(self._sw @ (row_sq + self.fit_intercept))
        self._x_at = None
        self._calls = [0]
        self._products_per_hessian = 10.0

    #: form the subspace Hessian explicitly when |F| <= max_explicit and doing so costs at
    #: most as many matrix-free products as the solver used per Hessian lately (dense
    #: forming counted at BLAS speed, /4)
    max_explicit = 3000
    #: a matrix-free subspace Hessian of a sparse X walked by columns on one thread copies
    #: its free columns by rows (:class:`_FreeSlice`) when the solver lately made at least
    #: this many products per Hessian (Debian's TF-IDF, 2,845 free columns of 1.77 M
    #: entries: a copy 15 ms, a product 3.3 ms on it against 5.1 ms by columns; 8 and 24
    #: products did worse at C = 10: the benchmark notes, "matrix-free products on a copy")
    free_slice_min_products = 16
    #: ... and copies them once the Hessian has made this many products, about a copy's cost
    #: (13 of the 15 wide free sets one-vs-rest Debian copied at once, 58 classes at C = 1,
    #: got a single product: 1.04x the column walks' time, 1.01x now)
    free_slice_after = 3
    #: explicit Hessians of sparse X walk all rows only up to this many columns (see _gram)
    max_walk_columns = 32768
    #: from this many rows (an n-vector of 16 MB, beyond a server's last-level cache), a
    #: sparse X of at most ``max_walk_columns`` columns is also walked by rows (a CSR copy,
    #: kept) for the margins, the gradient and the matrix-free Hessian products, whose
    #: column walks read or update an n-vector and then miss the cache at every entry; the
    #: row walks keep the parameter-sized vectors in cache (4,194,304 rows of 20 entries:
    #: 3.2x, 6.2x and 4.9x faster), and are used where the columns read hold a quarter of
    #: X's entries or more (they read every entry)
    row_walk_rows = 1 << 21
    #: a dense-panel Gram is updated, not formed again, where cheaper: rows whose curvature
    #: weight moved by more than this relative amount are refreshed (see ``_panel_gram``)
    gram_refresh_rtol = 0.05
    #: a kernel call runs ``n_threads`` threads from this many stored entries of X read: on
    #: fewer, the threads' start and their wait after the call (GNU OpenMP spins) cost
    #: more than they save (a9a, 451,592 entries, at two threads: 80 -> 89 ms a fit)
    thread_min_entries = 1 << 20
    #: a sparse X's Gram of scattered updates runs ``n_threads`` threads from this many
    #: updates: a fit's first parallel region starts the threads (3-12 ms, measured), and
    #: w8a's Grams (~3.5 M updates, 3.7 ms on one thread, 1.9 ms on two) would save less
    #: than that in a fit, while their other rounding changes the iterates (a9a, 2
    #: threads: 15 iterations instead of 12)
    gram_thread_min_updates = 1 << 24

    def _threads(self, entries):
        """The threads of a kernel call that reads ``entries`` stored entries of X."""
        return self.n_threads if entries >= self.thread_min_entries else 1

    def _gram_updates(self, nnz_f, k):
        """The estimated Σᵢ nnzᵢ(F)²/2 scattered updates of a sparse X's Gram over ``k``
        free columns holding ``nnz_f`` entries (from the nnz-weighted mean row length)."""
        return nnz_f * min(k, self._row_len * nnz_f / max(self.X.nnz, 1)) / 2

    def _gram_threads(self, cols):
        """The threads of a sparse X's Gram of scattered updates over ``cols``. Each thread
        but the first adds into a k×k buffer of its own: as many as keep those buffers at
        most a quarter of the updates to clear and add, and at most the number of entries
        X stores."""
        k = cols.size
        updates = self._gram_updates(float(self._col_nnz[cols].sum()), k)
        threads = self.n_threads if updates >= self.gram_thread_min_updates else 1
        while threads > 1 and (threads - 1) * k * k > min(updates / 4, self.X.nnz):
            threads -= 1
        return threads

    # -- margins and gradient
    def _walks_rows(self, cols=None):
        """Whether the kernels that read the columns ``cols`` (None: all of them) of a
        sparse X, the margins, the gradient and the Hessian products, walk the rows of its
        CSR copy instead (see :attr:`row_walk_rows`)."""
        X = self.X
        return (sp.issparse(X) and self.n_samples >= self.row_walk_rows
                and self.n_features <= self.max_walk_columns
                and (cols is None or 4 * int(self._col_nnz[cols].sum()) >= X.nnz))

    def _margins(self, x, out):
        w = x[:self.n_features]
        b = float(x[-1]) if self.fit_intercept else 0.0
        cols = np.flatnonzero(w).astype(np.int64)
        X = self.X
        if self._walks_rows(cols):
            R = self._csr()
            K.margins_csr(R.data, R.indices, R.indptr, np.ascontiguousarray(w), b, out,
                          self._threads(X.nnz))
        elif sp.issparse(X):
            threads = self._threads(int(self._col_nnz[cols].sum())) \
                if self.n_threads > 1 else 1
            K.margins_csc(X.data, X.indices, X.indptr, w, cols, b, out, threads)
        else:
            K.margins_dense(X, w, cols, b, out, *self._rows,
                            self._threads(self.n_samples * cols.size))
        return out

    def value(self, x):
        """f(x) only (the curvature weights stored by :meth:`value_grad` are left alone)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        m = self._margins(x, np.empty(self.n_samples))
        return self._pointwise(m, np.empty_like(m), np.empty_like(m))

    def value_grad(self, x):
        """(f(x), ∇f(x)); remembers x and the curvature weights D(x) for :meth:`hessp`.

        At the point of the previous call it returns the remembered f and a copy of the
        gradient (the fit's duality-gap check asks at the solver's last point)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        if self._x_at is not None and np.array_equal(self._x_at, x):
            return self._f_at, self._grad_at.copy()
        self._margins(x, self._m)
        f = self._pointwise(self._m, self._r, self._D)
        grad = np.empty(self.n_params)
        X = self.X
        if self._walks_rows():
            R = self._csr()
            K.rmatvec_csr(R.data, R.indices, R.indptr, self._r, grad[:self.n_features])
        elif sp.issparse(X):
            K.rmatvec_csc(X.data, X.indices, X.indptr, self._r, grad[:self.n_features],
                          self._threads(X.nnz))
        else:
            K.rmatvec_dense(X, self._r, grad[:self.n_features], *self._rows,
                            self._threads(X.size))
        if self.fit_intercept:
            grad[-1] = self._r.sum()
        self._x_at, self._f_at, self._grad_at = x.copy(), f, grad
        return f, grad

    def hessp(self, x, free, overhead=0.0):
        """Subspace Hessian ∇²f(x)[free, free]: an :class:`_ExplicitHessian` when the free set
        is small enough that forming it is cheaper than the matrix-free products the solver
        made per Hessian lately, else a matrix-free :class:`_SubspaceHessian` that forms itself
        once its products have cost as much as the Gram (at most ``max_explicit`` columns).

        ``free`` is a sorted integer array of parameter indices. Uses the curvature weights of
        the last :meth:`value_grad` call, recomputing them if ``x`` differs. ``overhead`` is
        what each matrix-free product costs beyond its arithmetic, in the cost model's units
        (about a nanosecond each): its share of a round trip to the workers when this is a
        partition of a dask array whose formed Hessian the client would gather.
        """
        if self._x_at is None or not np.array_equal(self._x_at, x):
            self.value_grad(x)
        free = np.asarray(free, dtype=np.int64)
        intercept = self.fit_intercept and free.size > 0 and free[-1] == self.n_features
        cols = free[:-1] if intercept else free
        k, n, X = cols.size, self.n_samples, self.X
        if sp.issparse(X):
            nnz_f = float(self._col_nnz[cols].sum())
            # in units of one entry of a product (0.8-1.5 ns on a9a, w8a, MNIST, as one update
            # of the Gram kernel): the Σᵢ nnzᵢ(F)²/2 updates, estimated from the nnz-weighted
            # mean row length of X, plus gathering the rows and the k×k fill
            # the walk's cost also stands for the slice _gram takes instead on wide X
            # (Debian: 8-50 ms against 26-57 ms), which keeps the route choices unchanged
            walk_all = 8 * nnz_f >= X.nnz
            gather = X.nnz if walk_all else 10 * nnz_f
            updates = self._gram_updates(nnz_f, k)
            # float32 BLAS on dense panels (0.14 s against 0.21 s on MNIST's 341 columns)
            cost_syrk = _panel_cost(n, k) + 2 * X.nnz
            syrk = k >= 64 and cost_syrk < updates + gather
            cost_gram = (cost_syrk if syrk else updates + gather) + k * k
            cost_hv = 2.0 * nnz_f + 3 * n
        else:  # from 64 columns, or 4 columns of 2**20 entries, the Gram is formed in
            # float32 panels and carried (PanelGram), costed as the sparse X's panels:
            # 60000 x 650: 1.0 s → 0.35 s; 1e6 x 50 float32: 290 → 126 ms, no float64 copy
            # of the slice; below, NumPy's float64 products (5000 x 50: 0.65 against 0.58 ms)
            syrk = k >= 64 or (k >= 4 and n * k >= 2**20)
            walk_all, cost_hv = False, 2.0 * n * k
            cost_gram = _panel_cost(n, k) if syrk else n * k * k / 8
        if self._calls[0]:  # running estimate of the products the solver makes per Hessian
            self._products_per_hessian = 0.5 * (self._products_per_hessian + self._calls[0])
        self._calls = [0]
        products = self._products_per_hessian
        fits = k <= self.max_explicit
        if fits and cost_gram + products * k * k <= products * (cost_hv + overhead):
            return _ExplicitHessian(self._gram(cols, intercept, walk_all, syrk), self._calls)
        # the switch is armed for the float32-panel route only, whose cost the model does not
        # understate (within 20% on a sparse X; on a dense one 0.35 s for 60000 x 650, where
        # it counts ~0.5 G units; the sparse Gram's runs ~1.8× over it on w8a), and only where
        # a k×k product is clearly cheaper than a matrix-free one
        switch = fits and syrk and cost_hv > 2 * k * k
        threads = self._threads(nnz_f if sp.issparse(X) else n * k)
        X_rows = self._csr() if self._walks_rows(cols) else None
        free_slice = make_slice = None
        if sp.issparse(X) and X_rows is None and threads == 1:
            free_slice, make_slice = self._free_slice_for(cols, nnz_f, switch)
        return _SubspaceHessian(X, cols, self._D, intercept, self._tmp, self._calls,
                                gram=(lambda c, b: self._gram(c, b, walk_all, syrk)) if switch
                                else None,
                                explicit_after=cost_gram / (cost_hv - k * k) if switch
                                else np.inf, rows=self._rows, X_rows=X_rows,
                                n_threads=threads, free_slice=free_slice,
                                make_slice=make_slice)

    def _free_slice_for(self, cols, nnz_f, switch):
        """``(held, make)`` for a matrix-free operator on ``cols``: the last free slice with
        the positions of ``cols`` in it, where it holds them and they hold most of its
        entries; else the ``make_slice`` of :class:`_SubspaceHessian`, where the solver lately
        made ``free_slice_min_products`` products per Hessian (a copy costs about three
        products; each product on it saves about a third), the Gram switch is not armed and
        the copy takes at most half of X's entries; else neither."""
        last = self._slice
        at = None if last is None or nnz_f < 0.75 * last.nnz else _positions_in(last.cols, cols)
        if at is not None:
            return (last, at), None
        if (switch or self._products_per_hessian < self.free_slice_min_products
                or 2 * nnz_f > self.X.nnz or cols.size == 0):
            return None, None
        return None, (self._copy_free_slice, self.free_slice_after)

    def _copy_free_slice(self, cols):
        """A new free slice of ``cols`` (in the reused buffers; the last one is no longer
        valid) and the positions of ``cols`` in it."""
        X = self.X
        nnz = int(self._col_nnz[cols].sum())
        if self._slice_buffers is None or self._slice_buffers[0].size < nnz:
            self._slice_buffers = (np.empty(nnz, dtype=X.dtype), np.empty(nnz, dtype=np.int32),
                                   np.empty(self.n_samples + 1, dtype=np.int64))
        if self._slice is not None:
            self._slice.valid = False
        sdata, sind, sptr = self._slice_buffers
        K.free_slice_csr(X.data, X.indices, X.indptr, cols, sptr, sdata, sind)
        self._slice = _FreeSlice(cols, self._slice_buffers, nnz)
        return self._slice, np.arange(cols.size)

    def _panels_fit_float32(self, block=4096):
        """Whether the float32 panels' products stay finite: a block of rows sums up to
        ``block`` entries D_i x_ij x_ik (features near 1e19 overflow float32 there, while
        the float64 routes hold up to the input check's 1e150)."""
        if self._max_abs is None:
            values = self.X.data if sp.issparse(self.X) else self.X
            # no |X| temporary: a copy the size of X
            self._max_abs = float(max(values.max(), -values.min())) if values.size else 0.0
        D_max = float(self._D.max()) if self._D.size else 0.0
        return self._max_abs**2 * max(D_max, 0.0) * min(self.n_samples, block) < 1e36

    def _csr(self):
        """The CSR copy of the sparse X, made on first use and kept."""
        if self._Xr is None:
            self._Xr = self.X.tocsr()
        return self._Xr

    def _gram(self, cols, intercept, walk_all, syrk=False):
        """[X_F, 1]ᵀ diag(D) [X_F, 1] as a dense array (F = cols).

        For sparse X, ``walk_all`` (the free columns hold at least 1/8 of the nonzeros) walks
        a CSR copy of all of X, kept; otherwise the free slice is transposed, which costs
        about 10× as much per entry as walking (measured on a9a, w8a and MNIST). ``syrk``
        (a dense free slice, or a dense X with at least 64 free columns) gathers the rows into
        float32 panels for BLAS instead of scattering Σᵢ nnzᵢ(F)²/2 updates or multiplying
        float64 copies of the slice, and updates the previous such Gram where that is cheaper
        (:class:`~sparsekit.losses._panel_gram.PanelGram`).
        """
        k, X, D = cols.size, self.X, self._D
        if syrk and not self._panels_fit_float32():
            syrk = False
        if syrk:
            if self._panel_gram is None:
                self._panel_gram = PanelGram(self._csr() if sp.issparse(X) else X,
                                             self.gram_refresh_rtol, self.n_threads)
            return self._panel_gram(cols, D, intercept)
        G = np.zeros((k + intercept, k + intercept))
        if sp.issparse(X):
            # a walk looks every entry's column up in a map of all columns: past ~32k columns
            # the map leaves the L2 cache and the slice is cheaper (Debian, 353k columns, 16
            # free: 26 ms against 8 ms), and so is the CSR copy the walk needs (134 ms)
            walk_all = walk_all and self.n_features <= self.max_walk_columns
            XF = _take_columns(X, cols) if intercept or not walk_all else None
            if walk_all:
                R = self._csr()
                colmap = np.full(self.n_features, -1, dtype=np.int64)
                colmap[cols] = np.arange(k)
            else:  # a small part: transpose the slice (its rows come out sorted)
                R = XF.tocsr()
                colmap = np.arange(k, dtype=np.int64)
            GF = np.zeros((k, k)) if intercept else G
            GK.gram_csr(R.data, R.indices, R.indptr, D, colmap, GF, self._gram_threads(cols))
            if intercept:
                G[:k, :k] = GF
                K.rmatvec_csc(XF.data, XF.indices, XF.indptr, D, G[:k, k])
        else:
            XF = X[:, cols]
            Xs = XF * np.sqrt(D)[:, None]
            G[:k, :k] = Xs.T @ Xs
            if intercept:
                G[:k, k] = XF.T @ D
        if intercept:
            G[k, :k] = G[:k, k]
            G[k, k] = D.sum()
        return G

    def _gram_bound(self):
        """Upper bound on ‖[X, 1]ᵀ diag(s) [X, 1]‖₂: the weighted squared Frobenius norm."""
        if self._bound is None:  # one pass over X, kept (a path asks once per C)
            row_sq = np.einsum("ij,ij->i", self.X, self.X, dtype=np.float64)
            self._bound = float(self._sw @ (row_sq + self.fit_intercept))
        return self._bound


class Logistic(_LinearDatafit):
    """Logistic datafit f = (1/n) Σ sᵢ log(1 + exp(−yᵢ mᵢ)), labels y ∈ {−1, +1}.

    With penalty μ = 1/(C n) on w, f + μ‖w‖₁ is LIBLINEAR's ``-s 6`` objective divided by C n.
    """

    def _pointwise(self, m, r, D):
        # a sample's exp and log1p cost about what 16 stored entries of a column walk do
        # (23 ns against 2.1 ns on a 1,000,000-row set)
        return K.logistic_pointwise(m, self.y, self._sw, r, D,
                                    self._threads(16 * self.n_samples))

    def _check_labels(self):
        if not np.all(np.abs(self.y) == 1.0):
            raise ValueError("Logistic needs labels y in {-1, +1}, got values "
                             f"{np.unique(self.y)[:5].tolist()}")

    def label_totals(self):
        """The total sample weight of the negative and of the positive rows."""
        n = self.n_samples
        return np.array([self._sw[self.y < 0].sum() * n, self._sw[self.y > 0].sum() * n])

    @staticmethod
    def intercept_for(totals):
        """The intercept minimizing f at w = 0 for the label totals ``(negative,
        positive)``: the log-odds of the weighted share of positives (clipped to ±27.6;
        0 when every weight is 0)."""
        total = float(np.sum(totals))
        if not total > 0:
            return 0.0
        p = np.clip(totals[1] / total, 1e-12, 1.0 - 1e-12)
        return float(np.log(p / (1.0 - p)))

    def null_intercept(self):
        """The intercept minimizing f at w = 0 (:meth:`intercept_for` of the data's
        totals). L1LogisticOBA starts there when it has no warm start, as glmnet does."""
        return self.intercept_for(self.label_totals())

    def dual_terms(self, x, alpha):
        """(1/n) Σᵢ sᵢ (H(tᵢ) − tᵢ yᵢ b), tᵢ = α σ(−yᵢ mᵢ) and H the binary entropy: the
        data part of the dual objective at the residuals scaled by α (see
        :func:`~sparsekit.losses._duality.relative_duality_gap`)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        b = float(x[-1]) if self.fit_intercept else 0.0
        if self._x_at is not None and np.array_equal(self._x_at, x):
            m = self._m   # the margins of the last value_grad
        else:
            m = self._margins(x, np.empty(self.n_samples))
        return K.logistic_dual_terms(m, self.y, self._sw, alpha, b)

    def lipschitz(self):
        """L = Σᵢ sᵢ (‖xᵢ‖² + b) / (4n) ≥ the Lipschitz constant of ∇f (b = 1 with an intercept).

        The weighted Frobenius bound ‖X‖²_F / (4n); cheap (one pass over X).
        """
        return max(self._gram_bound() / 4.0, 1e-12)


class Quadratic(_LinearDatafit):
    """Least-squares datafit f = (1/2n) Σ sᵢ (mᵢ − yᵢ)² (the Lasso of the thesis' code)."""

    def _pointwise(self, m, r, D):
        return K.quadratic_pointwise(m, self.y, self._sw, r, D)

    def lipschitz(self):
        """L = Σᵢ sᵢ (‖xᵢ‖² + b) / n ≥ the Lipschitz constant of ∇f (b = 1 with an intercept)."""
        return max(self._gram_bound(), 1e-12)
