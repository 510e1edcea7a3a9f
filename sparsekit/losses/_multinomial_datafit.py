"""The multinomial (softmax) logistic datafit for :func:`sparsekit.optimize.minimize_oba`.

f(x) = (1/n) Σᵢ sᵢ [log Σₖ exp(zᵢₖ) − zᵢ,yᵢ],  Z = X W + 1 bᵀ,

with W of shape (n_features, n_classes) and the intercepts b (when ``fit_intercept``);
the parameter vector is x = (W.ravel(), b): feature j's K class weights are entries
j K .. j K + K − 1 (an elastic net's ridge part: :class:`~sparsekit.losses._ridge_datafit.Ridge`).
The Hessian product on a free set of entries reads only the columns of X that hold a free
entry:

    ∇²f v = Xᵀ R,  Rᵢ = sᵢ/n (pᵢ ∘ uᵢ − pᵢ (pᵢ · uᵢ)),  U = X V + 1 v_bᵀ,

(the block Hessian Σᵢ sᵢ/n (x̃ᵢ x̃ᵢᵀ) ⊗ (diag pᵢ − pᵢ pᵢᵀ)), the O(nnz K) kernels of
``_oba_kernels`` (``mn_*``) doing the X products on CSC or Fortran-ordered dense X, float32
or float64 values, float64 vectors (a dense X by BLAS on float64 panels of blocks of its
rows; with at most 12 classes, both layouts by AVX2 kernels where the CPU runs them).
With ``n_threads`` > 1 the products X V split the rows among threads and the products Xᵀ R
the columns: every entry gets the same sums in the same order as on one thread. The
gradient's products, walked by columns, read or update a whole row of K numbers of the
(n, K) matrices at every stored entry; a Hessian product on a sparse X walked by columns
whose free entries are at most half of their columns' classes touches only those
(``mn_margins_free_csc``, ``mn_rmatmat_free_csc``), with no (free columns × K) arrays,
unless the columns are long enough for the AVX2 kernels' blocks of rows. Where K is large
and each column frees few of its classes (a text corpus with many classes), the products
walk instead the rows of a CSR copy of the free columns, each stored entry touching only
its column's free classes
(``mn_hessp_free_csr``: the whole product in one pass over the rows, each row's uᵢ
and rᵢ in cache, P read once; the Xᵀ R partial sums of fixed blocks of rows are added in
block order, so that the threads do not change them either). With many classes and few
enough features that the rows of W stay in cache, the scores walk the rows of X too, over
W's nonzero entries, where that is cheaper; where X also has many more rows than columns,
so does the gradient's Xᵀ R (``mn_rmatmat_csr``).

When the free set is small next to the data, the subspace Hessian is formed instead
(:meth:`Multinomial._gram`): with Eᵢ,ₑ = √(sᵢ/n) x̃ᵢ,ⱼ₍ₑ₎ pᵢ,ₖ₍ₑ₎ over the free entries e,

    ∇²f[F, F] = blockdiagₖ(X̃_Fₖᵀ diag(s ∘ p·ₖ / n) X̃_Fₖ) − Eᵀ E,

two BLAS rank-k updates per block of densified rows (a sparse X's rows written into a
dense panel in one pass, ``csr_rows_dense``), or, for a sparse X whose free columns are
mostly zeros (a text corpus), the same sum over each row's stored entries only,
one row of the Hessian at a time (``mn_gram_csr``); CG then solves the Newton system on it
to a tight tolerance at O(|F|²) per product. The rank-k updates' Gram is carried from one
iterate to the next (:mod:`~sparsekit.losses._multinomial_gram`): the rows whose
probabilities moved by more than 5% refreshed, the others kept.

On the matrix-free operator the CG is preconditioned by the diagonal, or, once a Hessian
took ``block_after`` products (the CG met its cap of 20) and from then on while forming
them stays cheap enough, by the first term's blocks on each class's free entries,
blockdiagₖ(X̃_Fₖᵀ diag(s ∘ p·ₖ ∘ (1 − p·ₖ) / n) X̃_Fₖ) (``mn_class_blocks_csr`` from a
sparse X's stored entries, or ``mn_class_blocks_dense`` by BLAS on panels of rows, a
sparse X's free columns densified where that is faster), each factored by Cholesky: with
many classes of few samples the Hessian is ill-conditioned within those blocks, not
across them, and so it is where correlated features share a class (MNIST's pixels). Blocks
that cost more than about 20 products are carried to the next iterates' Hessians for a few
iterations, cut to the entries still free, the joined ones preconditioned by their
diagonal: near the solution the free set and the probabilities barely move, and a
preconditioner only needs to be near the Hessian whose system the CG solves.
"""
import numpy as np
import scipy.sparse as sp
from scipy.special import xlogy

from sparsekit._cython import _gram_kernels
from sparsekit._cython import _oba_kernels as K
from sparsekit.losses._logistic_datafit import _ExplicitHessian
from sparsekit.losses._multinomial_gram import CarriedGram
from sparsekit.utils._rows import row_sq_norms


def _as_columns(X):
    """X stored for column access: CSC (canonical) or Fortran-ordered, float32 or float64."""
    if sp.issparse(X):
        X = X.tocsc()
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return X
    X = np.asfortranarray(X)
    return X if X.dtype in (np.float32, np.float64) else np.asfortranarray(X, np.float64)


def split_parameters(x, n_features, n_classes, fit_intercept):
    """(W of shape (n_features, n_classes), b of shape (n_classes,)) of the parameter
    vector x = (W.ravel(), b) (b = 0 without an intercept); W and b are views of x."""
    nw = n_features * n_classes
    W = x[:nw].reshape(n_features, n_classes)
    return W, x[nw:] if fit_intercept else np.zeros(n_classes)


def _margins(X, Wc, cols, b, Z, n_threads=1):
    """Z = b + X[:, cols] @ Wc."""
    if sp.issparse(X):
        K.mn_margins_csc(X.data, X.indices, X.indptr, Wc, cols, b, Z, n_threads)
    else:
        K.mn_margins_dense(X, Wc, cols, b, Z, n_threads)
    return Z


def _rmatmat(X, R, cols, out, square=False, n_threads=1):
    """out = X[:, cols].T @ R (of X's entries squared with ``square``)."""
    if sp.issparse(X):
        K.mn_rmatmat_csc(X.data, X.indices, X.indptr, R, cols, out, square, n_threads)
    else:
        K.mn_rmatmat_dense(X, R, cols, out, square, n_threads)
    return out


class Multinomial:
    """Mean softmax negative log-likelihood of a linear model (see module docstring).

    :meth:`hessp` forms the subspace Hessian when that costs at most ``formed_worth``
    matrix-free products (costs counted in multiply-adds of the product kernels, a BLAS
    multiply-add as 1/``blas_speedup`` of one, an update of the sparse route as
    ``scattered_blas`` BLAS multiply-adds) and the free set has at most ``max_explicit``
    entries. A matrix-free Newton step here takes 20-60 products (CG capped
    at 20, one to three passes of the corrective cycle), and steps on the formed Hessian,
    solved to 1%, took 2.5-5 times fewer outer iterations where every Hessian was formed
    (Mulan scene at 100 and 1000 times the smallest C with a nonzero weight: 30 and 70
    iterations instead of 75 and 387): a formed Hessian is worth about 150 products.
    Measured with that rule, one thread: scene at 100 times 0.8 s instead of 4.0 s, MNIST
    at 10 times 4.7 s instead of 19.8 s (tol 1e-5), at 100 times 28 s instead of 44 s (tol
    1e-3). Where a matrix-free Hessian took more products than that rule counts on (its CG
    met its cap of 20 on several corrective passes: an ill-conditioned Hessian, whose
    inexact steps also take more iterations), a formed Hessian is worth
    ``formed_worth_seen`` times the most products a matrix-free Hessian of the fit took, if
    that is more; on a dense X only, where that was measured.

    Where the matrix-free products walk rows (:meth:`_walks_rows`: many classes, a sparse X)
    they cost 2-6 times less than the column walks that rule was measured with, and a
    formed Hessian is worth only ``formed_worth_rows`` of them (:meth:`_row_product_cost`):
    forming scatters every (stored entry, free class) pair into a matrix of up to 3000²
    entries, and a CG to 1% on the ill-conditioned Hessians of many classes with few
    samples needs hundreds of its dense products, where the matrix-free CG has the
    class-block preconditioner. Small free sets (the first iterations) are still formed.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
    y : ndarray of int of shape (n_samples,)
        Class indices in ``0 .. n_classes - 1``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,), optional
    fit_intercept : bool
    n_threads : int
        Threads of the X products.
    X_csr : scipy.sparse.csr_matrix, optional
        The same sparse X in CSR layout, when the caller has it: the row-walking products
        and the formed Hessians read it instead of a copy.
    """

    #: the column offsets subtracted from X before the datafit was made (None: none); the
    #: scores of the original X are X W + b − Wᵀ offsets (the estimators' centering)
    offsets = None

    def __init__(self, X, y, n_classes, sample_weight=None, fit_intercept=False, n_threads=1,
                 X_csr=None):
        self.X = _as_columns(X)
        # the row-walking products' CSR layout: the caller's (X, or X_csr), else a copy
        # made on first use
        rows = X if X_csr is None else X_csr
        keep = (sp.issparse(rows) and rows.format == "csr" and rows.dtype == self.X.dtype
                and rows.has_canonical_format)
        self._Xr = rows if keep else None
        self.n_threads = max(1, int(n_threads))
        self.n_samples, self.n_features = self.X.shape
        self.n_classes = int(n_classes)
        y = np.asarray(y)
        if y.shape != (self.n_samples,) or y.size and (y.min() < 0 or y.max() >= n_classes):
            raise ValueError(f"y must hold {self.n_samples} class indices in "
                             f"[0, {n_classes})")
        self.y = y.astype(np.int64)
        sw = (np.ones(self.n_samples) if sample_weight is None
              else np.asarray(sample_weight, dtype=np.float64))
        if sw.shape != (self.n_samples,):
            raise ValueError(f"sample_weight must have shape ({self.n_samples},)")
        self._sw = sw / self.n_samples
        self.fit_intercept = bool(fit_intercept)
        self.n_params = (self.n_features + self.fit_intercept) * self.n_classes
        self.penalty_weights = np.ones(self.n_params)
        self.penalty_weights[self.n_features * self.n_classes:] = 0.0
        # a feature's K class weights (and the K intercepts) shifted together leave every
        # row's probabilities, so f, unchanged
        self.shift_invariant = self.n_classes
        self._x_at = None
        self._P = self._D = None
        self._col_nnz = np.diff(self.X.indptr) if sp.issparse(self.X) else None
        self._work = np.empty(0)  # _gram's buffers, kept: fresh ones cost page faults
        self._panel = np.empty(0, dtype=self.X.dtype)
        self._rows_work = None
        self._products = [0, 0]   # matrix-free products on the last Hessian, on this one
        self._blocked = [False, False]   # class blocks on the last Hessian, on this one
        self._carried_blocks = None   # [blocks, their free entries, Hessians since formed]
        self._most_products = 0   # the most a matrix-free Hessian took (dense X: hessp)
        self._buffers = {}        # see _kept
        self._ones = None         # see _column_sums
        self._carried_gram = CarriedGram(self.gram_refresh_rtol)

    #: the matrix-free products walk the rows of the free columns (:meth:`_walks_rows`)
    #: when this many times their (stored entry, free class) pairs plus stored entries are
    #: at most the stored entries times K, and K is at least ``row_walk_classes`` (a row of
    #: R then spans 4 cache lines or more). Per product on the Debian descriptions (58
    #: classes), Mulan Bibtex (146) and Delicious (352): 2.0-6.4, 1.6-2.2 and 3.3-5.4 times
    #: less time where this chooses the rows (Bibtex's first free sets, 2.2 classes per
    #: stored entry, keep the columns: 0.95 times); MNIST (10 classes) gains nothing.
    row_walk_ratio = 2.5
    row_walk_classes = 32
    #: the scores X W walk the rows of the whole X (:meth:`_scores`) where that pays, when K
    #: is at least ``row_walk_classes`` and there are at most this many weights (8 MB: the
    #: rows of W that a row of X reaches stay in cache). On the Debian descriptions
    #: (353,595 × 58 weights) each stored entry then costs ~10 ns of cache misses, against
    #: ~0.75 ns per class updated by the column walk: the columns stay.
    row_walk_weights = 1 << 20
    #: the gradient's Xᵀ R walks the rows of X (:meth:`_gradient_walks_rows`) where the
    #: scores may and X has at least this many times more rows than columns: each stored
    #: entry then updates a row of the (D, K) gradient instead of reading a row of the
    #: (n, K) residuals. Delicious (12,910 × 500, 352 classes): 1.4 times less time per
    #: gradient; Bibtex (4,880 × 1,836, 146 classes), whose residuals stay in cache,
    #: 1.1-1.6 times more: the columns stay.
    row_walk_tall = 4
    #: with fewer than ``row_walk_classes`` classes the rows are walked only where the (n, K)
    #: scores and residuals take this many bytes or more (16 MB, beyond a server's last-level
    #: cache): a column walk then misses the cache at every stored entry, and the rows pay
    #: when ``row_walk_ratio_tall`` times their (stored entry, class) pairs and stored
    #: entries are at most the column walk's updates. 4,194,304 rows × 2,000 columns (20
    #: entries a row), 10 classes: the scores 2,056 ms by columns against 255 ms by rows,
    #: the gradient 2,261 against 198 ms; MNIST's 60,000 × 10 (4.8 MB) keeps its columns
    row_walk_tall_bytes = 1 << 24
    row_walk_ratio_tall = 0.5

    #: at most this many free entries are formed (a 3000² float64 matrix is 72 MB)
    max_explicit = 3000
    #: a matrix-free product on a sparse X with at most 12 classes walks its rows in one pass
    #: (``mn_hessp_csr``) where its weights and sums, features × K numbers (K padded to a
    #: multiple of 4), are at most this many (1 MB: the L2 cache) and the free columns hold
    #: half of X's entries or more (MNIST: 36 ms a product against 82 ms walking the columns
    #: by the loops, ~55 ms by the AVX2 kernels); the columns otherwise (the other columns'
    #: entries would be walked for nothing)
    row_product_numbers = 1 << 17
    #: the matrix-free products a formed Hessian is worth (see the class docstring)
    formed_worth = 150.0
    #: ... or, on a dense X, this many times the most products a matrix-free Hessian of
    #: the fit took (see the class docstring): Mulan scene at 1000 and 1600 times the
    #: smallest C with a nonzero weight took 117 iterations and 500 without converging (tol
    #: 1e-8), its matrix-free Hessians 100-260 products each; MNIST's took 5-60
    formed_worth_seen = 3.0
    #: the row-walking products a formed Hessian is worth where the products walk rows (see
    #: the class docstring): on Debian's first free sets (186-1,446 entries) forming cost
    #: 7-27 products and took 10-16% off the fit at 1000 C_min; on Delicious' late ones
    #: (~2,200 entries) 38, plus ~300 dense CG products (at C = 0.2 over 3 times the fit)
    formed_worth_rows = 40.0
    #: BLAS multiply-adds (forming) per multiply-add of the product kernels: the sparse
    #: kernels and the dense ones (measured on MNIST and on digits and Mulan scene)
    blas_speedup = {"sparse": 5.0, "dense": 1.5}
    #: the CG on a matrix-free Hessian is preconditioned by the blocks that couple one
    #: class's free entries (:meth:`_MultinomialHessian.preconditioner`) after a Hessian on
    #: which it made ``block_after`` products or more (the diagonal preconditioner's CG,
    #: capped at 20 per solve, stopped short of its 10%) or which had such blocks itself
    #: (with them its CG stops early, and without them the next would meet the cap again:
    #: Bibtex at C = 1 in 40 iterations instead of 59), when forming them costs at most
    #: ``block_worth`` products, or that many for each Hessian they may serve when carried
    #: (see ``block_age``), and they hold at most ``block_budget`` numbers (a class with
    #: more free entries than fit is cut into blocks of consecutive features). Their cost is
    #: counted in the units of the product's own cost (:meth:`_product_cost` or
    #: :meth:`_row_product_cost`) as ``block_update_cost`` per update of the blocks and
    #: ``block_pair_cost`` per (stored entry, free entry) pair sorted into them: fit to
    #: formations on MNIST (3,157 free entries: 3.6e9 updates and 6.4e7 pairs, 3.2 s, 39
    #: products), Mulan Delicious (1.2e8 and 8.4e6, 0.25 s) and Bibtex (3.7e7 and 5.2e6,
    #: 0.12 s), about 0.55 ns per update and 20 ns per pair. On a dense X the blocks' dsyrk
    #: updates and the entries gathered for them (4 per entry and row) cost
    #: 1/``block_speedup_dense`` of a unit of :meth:`_product_cost`: MNIST as an array
    #: (3,005 free entries over 572 columns: 2.8e10 updates, 1.66 s, 14.5 products of
    #: 0.115 s)
    block_after = 20
    block_worth = 20.0
    block_update_cost = 1.5
    block_pair_cost = 50.0
    block_speedup_dense = 3.0
    block_budget = 1 << 22
    #: a sparse X's class blocks are formed from its stored entries
    #: (``mn_class_blocks_csr``) or, where that is predicted faster, by BLAS on panels of
    #: rows of its free columns densified a panel at a time (``mn_class_blocks_dense``):
    #: nanoseconds per update and per (stored entry, free entry) pair of the former, per
    #: multiply-add of the blocks' ``dsyrk`` and per number gathered (a row's free entries,
    #: K square roots and free columns) of the latter, on one thread, fit to 11 formations
    #: on MNIST, Mulan Bibtex and Delicious (the panels 1.8-2.1 times faster on MNIST's
    #: 3,400-4,700 free entries, the stored entries 1.6-3.4 times on the other two). Which
    #: Hessians get blocks, and which carry them, is still decided by ``block_update_cost``
    #: and ``block_pair_cost``'s count. Either route runs on the datafit's ``n_threads``
    block_route_ns = {"entries": (1.0, 11.0), "panels": (0.057, 2.2)}
    #: numbers in each of those densified panels (16 MB)
    block_panel_numbers = 1 << 21
    #: class blocks that cost more than ``block_worth`` products are carried to the fit's
    #: next Hessians (a preconditioner only needs to be near the Hessian; the CG solves the
    #: current one's system): the entries that left the free set are cut from them and
    #: those that joined get their diagonal as blocks of one, until ``block_age`` Hessians
    #: after the blocks were formed or more than ``block_join`` of the free entries joined
    #: since (``block_age`` 0: never carried). MNIST at C = 1 (10 classes, ~3,100 free
    #: entries: too many to form the Hessian), where the blocks cost ~40 products and the
    #: diagonal preconditioner's capped CG steps crawl for 100 iterations: 43 iterations
    #: to the same objective
    block_age = 5
    block_join = 0.05

    #: the dense route's Gram is carried between iterates
    #: (:class:`~sparsekit.losses._multinomial_gram.CarriedGram`), each row's probabilities
    #: within this relative tolerance of the current ones
    gram_refresh_rtol = 0.05

    #: BLAS multiply-adds per update of the sparse route: ~8 on MNIST (0.73 against
    #: 0.095 ns) and on the Debian corpus (0.40 against 0.047 ns); a Hessian of 2,834²
    #: entries on Delicious also takes ~0.7 ns per update
    scattered_blas = 8.0

    # -- layout
    def split(self, x):
        """(W of shape (n_features, n_classes), b of shape (n_classes,)) views of x."""
        return split_parameters(x, self.n_features, self.n_classes, self.fit_intercept)

    def _column_sums(self, A):
        """The column sums of an (n, K) array, by BLAS (``A.sum(axis=0)`` took 6 times as
        long on 300,000 × 5)."""
        if self._ones is None:
            self._ones = np.ones(self.n_samples)
        return self._ones @ A

    def _kept(self, name, shape):
        """A float64 buffer of ``shape`` kept between calls under ``name`` (fresh (n, K)
        arrays cost page faults: 7 ms for each of Delicious' 12,910 × 352)."""
        buf = self._buffers.get(name)
        if buf is None or buf.shape != shape:
            buf = self._buffers[name] = np.empty(shape)
        return buf

    def _panel_numbers(self, size):
        """A buffer of at least ``size`` numbers of X's dtype for rows densified into panels
        (the formed Hessian's, the class blocks'), kept between calls and grown by doubling
        (fresh ones cost page faults)."""
        if self._panel.size < size:
            self._panel = np.empty(max(size, 2 * self._panel.size), dtype=self._panel.dtype)
        return self._panel

    def _walks_many_classes(self):
        """A sparse X and at least ``row_walk_classes`` classes, or fewer on tall X
        (``row_walk_tall_bytes``): the products may walk rows."""
        return sp.issparse(self.X) and (self.n_classes >= self.row_walk_classes
                                        or self._tall_few_classes())

    def _tall_few_classes(self):
        """Fewer than ``row_walk_classes`` classes and (n, K) arrays of at least
        ``row_walk_tall_bytes``."""
        return (self.n_classes < self.row_walk_classes
                and 8 * self.n_samples * self.n_classes >= self.row_walk_tall_bytes)

    def _rows_pay(self, walked, pairs, entries):
        """Whether walking rows, ``walked`` stored entries and ``pairs`` (stored entry, class)
        updates, beats walking columns, ``entries`` stored entries of K updates each (see
        ``row_walk_ratio`` and ``row_walk_ratio_tall``)."""
        ratio = self.row_walk_ratio_tall if self._tall_few_classes() else self.row_walk_ratio
        return ratio * (pairs + walked) <= self.n_classes * entries

    def _scores(self, x):
        """Z = X W + 1 bᵀ (a kept buffer): the columns of W's nonzero rows walked, or the rows
        of X with the nonzero entries of W where that is cheaper (:meth:`_rows_pay`)."""
        W, b = self.split(x)
        b = np.ascontiguousarray(b, dtype=np.float64)
        Z = self._kept("Z", (self.n_samples, self.n_classes))
        nz = W != 0
        counts = nz.sum(axis=1)
        if self._walks_x_rows():
            used = counts > 0
            if self._rows_pay(self.X.nnz, float(self._col_nnz @ counts),
                              float(self._col_nnz[used].sum())):
                start = np.zeros(self.n_features + 1, dtype=np.int64)
                np.cumsum(counts, out=start[1:])
                Xr = self._csr()
                K.mn_margins_free_csr(Xr.data, Xr.indices, Xr.indptr, start,
                                      np.nonzero(nz)[1].astype(np.int64), W[nz], b, Z,
                                      self.n_threads)
                return Z
        cols = np.flatnonzero(counts).astype(np.int64)
        return _margins(self.X, np.ascontiguousarray(W[cols]), cols, b, Z, self.n_threads)

    def _walks_x_rows(self):
        """Whether the scores may walk the rows of X: many classes, and few enough weights
        that the rows of W reached from a row of X stay in cache (``row_walk_weights``)."""
        return (self._walks_many_classes()
                and self.n_features * self.n_classes <= self.row_walk_weights)

    def _gradient_walks_rows(self):
        """Whether the gradient's Xᵀ R walks the rows of X (:func:`mn_rmatmat_csr`): where
        the scores may, and X is tall (``row_walk_tall``)."""
        return (self._walks_x_rows()
                and self.n_samples >= self.row_walk_tall * self.n_features)

    def _nll(self, Z, residuals=False):
        """(Σᵢ sᵢ/n ℓ(zᵢ), the probabilities, with ``residuals`` the gradient residuals
        sᵢ/n (pᵢ − e_yᵢ) (a kept buffer) or else None)."""
        P, nll = np.empty_like(Z), np.empty(self.n_samples)
        R = self._kept("R", Z.shape) if residuals else None
        K.mn_softmax(Z, self.y, self._sw, P, nll, R, self.n_threads)
        return float(self._sw @ nll), P, R

    def _diagonal_weights(self):
        """sᵢ/n pᵢₖ (1 − pᵢₖ) at the last point, (n, K): the Hessian's diagonal weights
        (computed once per point: its Hessians' diagonals and class blocks all read them)."""
        if self._D is None:
            self._D = self._P * (1.0 - self._P) * self._sw[:, None]
        return self._D

    # -- the datafit protocol
    def value(self, x):
        return self._nll(self._scores(np.ascontiguousarray(x, dtype=np.float64)))[0]

    def value_grad(self, x):
        """(f(x), ∇f(x)); remembers x and the probabilities for :meth:`hessp`."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        f, P, R = self._nll(self._scores(x), residuals=True)
        grad = np.empty(self.n_params)
        GW = grad[:self.n_features * self.n_classes].reshape(self.n_features, self.n_classes)
        if self._gradient_walks_rows():
            Xr = self._csr()
            work = self._kept("gradient sums", (K.free_chunks(self.n_samples, GW.size) - 1,
                                                GW.size))
            K.mn_rmatmat_csr(Xr.data, Xr.indices, Xr.indptr, R, GW, work, self.n_threads)
        else:
            _rmatmat(self.X, R, np.arange(self.n_features, dtype=np.int64), GW,
                     n_threads=self.n_threads)
        if self.fit_intercept:
            grad[self.n_features * self.n_classes:] = self._column_sums(R)
        if self._x_at is None:    # kept: a fresh copy per call costs page faults on wide X
            self._x_at = np.empty(self.n_params)
        np.copyto(self._x_at, x)
        self._P, self._D = P, None
        return f, grad

    def hessp(self, x, free, overhead=0.0):
        """The Hessian ∇²f(x) on the sorted parameter indices ``free``: formed (an
        :class:`~sparsekit.losses._logistic_datafit._ExplicitHessian`) when that is the
        cheaper route (see the class docstring), else a matrix-free
        :class:`_MultinomialHessian`. ``overhead``: what each matrix-free product costs
        beyond its arithmetic, in the units of the costs (about a nanosecond each), as in
        :meth:`~sparsekit.losses._logistic_datafit.Logistic.hessp`."""
        if self._x_at is None or not np.array_equal(self._x_at, x):
            self.value_grad(x)
        self._products = [self._products[1], 0]
        self._blocked = [self._blocked[1], False]
        if self._carried_blocks is not None:
            self._carried_blocks[2] += 1
        if not sp.issparse(self.X):
            self._most_products = max(self._most_products, self._products[0])
        H = self._matrix_free(free)
        m = H.shape[0]
        if 0 < m <= self.max_explicit:
            costs = self._gram_costs(H)
            route = min(costs, key=costs.get)
            products = max(self.formed_worth, self.formed_worth_seen * self._most_products)
            worth = (self.formed_worth_rows * (self._row_product_cost(H) + overhead)
                     if H.walks_rows else products * (self._product_cost(H) + overhead))
            if costs[route] + 100 * 2.0 * m * m <= worth:
                return _ExplicitHessian(self._gram(H, route=route), [0])
        return H

    def _matrix_free(self, free):
        """The matrix-free operator on ``free`` at the last point."""
        return _MultinomialHessian(self, np.asarray(free, dtype=np.int64))

    def _product_cost(self, H):
        """Multiply-adds of one matrix-free product: X V and Xᵀ R over the free columns,
        and the element-wise softmax terms."""
        n, K = self.n_samples, self.n_classes
        nnz = (float(self._col_nnz[H._cols].sum()) if self._col_nnz is not None
               else n * H._cols.size)
        return 2.0 * K * nnz + 3.0 * n * K

    def _row_product_cost(self, H):
        """One matrix-free product walking the free columns' rows, in the units of
        :meth:`_gram_costs`: 5 per (stored entry, free class) pair and per stored entry, 7
        per softmax term (fit to products and formed Hessians on Mulan Bibtex, Delicious
        and the Debian descriptions, where a unit of the sparse route took 0.24-0.52 ns)."""
        return (5.0 * sum(self._walk_counts(H))
                + 7.0 * self.n_samples * self.n_classes)

    def _gram_costs(self, H):
        """{route: cost of :meth:`_gram` by it}, in multiply-adds of the product kernels:
        "dense", the rank-k updates and gathering the rows, and for a sparse X "sparse",
        the updates of :func:`~sparsekit._cython._gram_kernels.mn_gram_csr` (counted in one
        pass over the free columns) and the intercepts' block."""
        n, K, m, mb = self.n_samples, self.n_classes, H.shape[0], H._b_entries.size
        speedup = self.blas_speedup["sparse" if sp.issparse(self.X) else "dense"]
        costs = {"dense": (n * m * m * (1.0 + 1.0 / K) / 2 + 4.0 * n * m) / speedup}
        if sp.issparse(self.X):
            if self._rows_work is None:
                self._rows_work = np.empty(n)
            pairs, entries = _gram_kernels.mn_entry_counts(
                self.X.indices, self.X.indptr, H._cols,
                H._col_start, self._rows_work)
            costs["sparse"] = (self.scattered_blas * (pairs + entries * mb)
                               + n * mb * mb / 2) / speedup
        return costs

    def _gram(self, H, block=None, route=None):
        """∇²f[F, F] on the free entries of ``H`` as a dense float64 array (module
        docstring): by :meth:`_gram_sparse` or :meth:`_gram_dense`, whichever
        :meth:`_gram_costs` finds cheaper (or the given ``route``, "sparse" or "dense")."""
        if route is None:
            costs = self._gram_costs(H)
            route = min(costs, key=costs.get)
        if route == "sparse":
            return self._gram_sparse(H)
        if block is None:
            return self._carried_gram(H)
        return self._gram_dense(H, block)

    def _csr(self):
        """The sparse X in CSR layout (the caller's, else a copy made once and kept)."""
        if self._Xr is None:
            self._Xr = self.X.tocsr()
        return self._Xr

    def _free_rows(self, cols):
        """The columns ``cols`` (sorted) of the sparse X as a CSR matrix of ``cols.size``
        columns, in one pass over its rows."""
        Xr = self._csr()
        colmap = np.full(self.n_features, -1, dtype=np.int64)
        colmap[cols] = np.arange(cols.size)
        nnz = int(self._col_nnz[cols].sum())
        data = np.empty(nnz, dtype=Xr.dtype)
        indices = np.empty(nnz, dtype=Xr.indices.dtype)
        indptr = np.empty(self.n_samples + 1, dtype=Xr.indptr.dtype)
        _gram_kernels.take_columns_csr(Xr.data, Xr.indices, Xr.indptr, colmap, data,
                                       indices, indptr)
        return sp.csr_matrix((data, indices, indptr), shape=(self.n_samples, cols.size))

    def _walks_rows(self, H):
        """Whether the matrix-free products on ``H``'s free entries walk the rows of the
        free columns (:meth:`_free_rows`) rather than the columns (module docstring)."""
        if H._cols.size == 0 or not self._walks_many_classes():
            return False
        pairs, entries = self._walk_counts(H)
        return self._rows_pay(entries, pairs, entries)

    def _walk_counts(self, H):
        """(stored entry, free class) pairs and stored entries of the free columns of a
        sparse X: what a product walking their rows touches."""
        nnz = self._col_nnz[H._cols]
        return float(nnz @ np.diff(H._col_start)), float(nnz.sum())

    def _gram_sparse(self, H):
        """∇²f[F, F] from the stored entries of a sparse X's free columns
        (:func:`~sparsekit._cython._gram_kernels.mn_gram_csr`), the intercepts' block by
        BLAS."""
        m, nw, nb = H.shape[0], H._w_entries.size, H._b_entries.size
        X = H.free_rows()
        b_entry = np.full(self.n_classes, -1, dtype=np.int64)
        b_entry[H._b_entries] = nw + np.arange(nb)
        every = nb == self.n_classes          # the intercepts' columns of P: all of them
        Pb = self._P if every else np.ascontiguousarray(self._P[:, H._b_entries])
        G = np.zeros((m, m))
        _gram_kernels.mn_gram_csr(X.data, X.indices, X.indptr, self._P, Pb, self._sw,
                                  H._col_start, H._class, b_entry, G, self.n_threads)
        if nb:
            A = Pb * np.sqrt(self._sw)[:, None]
            G[nw:, nw:] = np.diag(self._sw @ Pb) - A.T @ A
        return G

    def _gram_dense(self, H, block=None, rows=None, terms=None):
        """∇²f[F, F] from blocks of rows of the free columns of X
        (:func:`~sparsekit._cython._gram_kernels.mn_gram_dense`: BLAS rank-k updates of
        panels of the rows, the entries ordered by class so that each class's
        block-diagonal term is one update). A block holds up to ``block`` rows (default:
        2¹⁸ numbers per panel, at least 512 rows); a sparse X's blocks are densified first.
        The buffers are kept for the next call.

        With ``rows`` (sorted sample indices) and ``terms``, a list of (probabilities of
        those rows, sign), the sum of ``sign`` times the rows' term at each (the updates of
        a carried Gram, :class:`~sparsekit.losses._multinomial_gram.CarriedGram`)."""
        K, m, c = self.n_classes, H.shape[0], H._cols.size
        sparse = sp.issparse(self.X)
        gathered = sparse or rows is not None     # blocks copied into a Fortran panel
        every = rows is None
        if every:
            terms = [(self._P, 1.0)]
        n = self.n_samples if every else rows.size
        entry_col = np.concatenate([H._row if gathered else H._cols[H._row],
                                    np.full(H._b_entries.size, -1)])
        entry_class = np.concatenate([H._class, H._b_entries])
        order = np.argsort(entry_class, kind="stable")
        entry_col, entry_class = entry_col[order], entry_class[order]
        block = min(n, block or max(512, (1 << 18) // max(m, 1)))
        size = (2 * K + 2 * m) * block
        if self._work.size < size:
            self._work = np.empty(max(size, 2 * self._work.size))   # few reallocations
        if gathered:
            X = H.free_rows() if sparse else self.X
            numbers = self._panel_numbers(c * block)
        G = np.zeros((m, m))
        for start in range(0, n, block):
            stop = min(start + block, n)
            at = slice(start, stop) if every else rows[start:stop]
            if gathered:
                panel = numbers[:c * (stop - start)].reshape(c, stop - start)
                if sparse:
                    _gram_kernels.csr_rows_dense(
                        X.data, X.indices, X.indptr,
                        np.arange(start, stop) if every else at.astype(np.int64), panel.T)
                else:
                    panel.T[...] = X[np.ix_(at, H._cols)]
                source, row0 = panel.T, 0                       # rows × columns, Fortran
            else:
                source, row0 = self.X, start
            for P, sign in terms:
                _gram_kernels.mn_gram_dense(source, row0, entry_col, entry_class,
                                            P[start:stop], self._sw[at], self._work, G,
                                            sign)
        back = np.empty(m, dtype=np.int64)
        back[order] = np.arange(m)
        return _gram_kernels.symmetric_take(G, back)

    def _gram_rows(self, H, positions, P):
        """The rows ``positions`` of ∇²f[F, F] (F: ``H``'s free entries) at probabilities
        ``P`` (n × K), as a |positions| × |F| array: for entry e = (column j, class k),
        Σᵢ sᵢ xᵢⱼ pᵢₖ (δₖₗ − pᵢₗ) x̃ᵢ over every free column and class l
        (:func:`~sparsekit._cython._gram_kernels.mn_gram_rows_dense`, a sparse X's free
        columns densified a block of rows at a time): :class:`CarriedGram`'s entries that
        joined the free set."""
        K, n, c = self.n_classes, self.n_samples, H._cols.size
        sparse = sp.issparse(self.X)
        col = np.concatenate([H._row, np.full(H._b_entries.size, c)])    # c: the intercept
        cls = np.concatenate([H._class, H._b_entries])
        out = np.zeros((K, positions.size, c + 1))
        if sparse:
            X, cols = H.free_rows(), np.arange(c, dtype=np.int64)
            block = max(64, (1 << 22) // max(c, 1))         # densified: 32 MB at most
        else:
            X, cols, block = self.X, H._cols, max(n, 1)
        for start in range(0, n, block):
            stop = min(start + block, n)
            source, row0 = X, start
            if sparse:
                source, row0 = np.empty((stop - start, c), dtype=X.dtype, order="F"), 0
                _gram_kernels.csr_rows_dense(X.data, X.indices, X.indptr,
                                             np.arange(start, stop), source)
            _gram_kernels.mn_gram_rows_dense(source, row0, cols, P[start:stop],
                                             self._sw[start:stop], col[positions],
                                             cls[positions], out)
        return out[cls, :, col].T

    def lipschitz(self):
        """L = Σᵢ sᵢ (‖xᵢ‖² + b) / (2n) ≥ the Lipschitz constant of ∇f (b = 1 with an
        intercept): each block diag(p) − p pᵀ has eigenvalues at most 1/2."""
        rows = row_sq_norms(self.X)
        return max(float(self._sw @ (rows + self.fit_intercept)) / 2.0, 1e-12)

    def label_totals(self):
        """The total sample weight of each class."""
        return np.bincount(self.y, weights=self._sw, minlength=self.n_classes) * self.n_samples

    @staticmethod
    def intercept_for(totals):
        """The intercepts minimizing f at W = 0 for the class totals: the log of each
        class's weighted share (shares below 1e-12 clipped; 0 when every weight is 0)."""
        totals = np.asarray(totals, dtype=np.float64)
        total = totals.sum()
        if not total > 0:
            return np.zeros(totals.size)
        return np.log(np.clip(totals / total, 1e-12, None))

    def null_intercept(self):
        """The intercepts minimizing f at W = 0 (:meth:`intercept_for` of the data's
        totals)."""
        return self.intercept_for(self.label_totals())

    def dual_terms(self, x, alpha):
        """(1/n) Σᵢ sᵢ (H(qᵢ) + qᵢ·b − b_{yᵢ}), qᵢ = α pᵢ + (1 − α) e_{yᵢ} and H the entropy:
        the data part of the dual objective at the residuals scaled by α (see
        :func:`~sparsekit.losses._duality.relative_duality_gap`)."""
        x = np.ascontiguousarray(x, dtype=np.float64)
        _, b = self.split(x)
        _, P, _ = self._nll(self._scores(x))
        rows = np.arange(self.n_samples)
        Q = alpha * P
        Q[rows, self.y] += 1.0 - alpha
        entropy = -xlogy(Q, Q).sum(axis=1)
        return float(self._sw @ (entropy + Q @ b - b[self.y]))


def _block_numbers(counts, cap):
    """The numbers in blocks of at most ``cap`` entries cut from groups of ``counts``."""
    return float(((counts // cap) * cap * cap + (counts % cap) ** 2).sum())


def _take_blocks(blocks, keep):
    """The blocks (G, offset, size, order) of :meth:`_MultinomialHessian.preconditioner`
    on the entries ``keep`` (boolean over the entries), numbered among those kept, or False
    when none is kept (:func:`~sparsekit._cython._gram_kernels.block_take`)."""
    G, offset, size, order = blocks
    kept = keep[order]                              # in block order
    new_size = np.add.reduceat(kept.astype(np.int64), np.cumsum(size) - size)
    new_size = new_size[new_size > 0]
    if not new_size.size:
        return False
    out = np.empty(int(new_size @ new_size))
    _gram_kernels.block_take(G, offset, size, kept.view(np.uint8), out)
    new_offset = np.concatenate([[0], np.cumsum(new_size * new_size)[:-1]]).astype(np.int64)
    return out, new_offset, new_size, (np.cumsum(keep) - 1)[order[kept]].astype(np.int64)


class _MultinomialHessian:
    """``v -> ∇²f[free, free] v`` for a :class:`Multinomial` at its last point."""

    def __init__(self, datafit, free):
        self._f = datafit
        nw = datafit.n_features * datafit.n_classes
        self._free = free
        on_w = free < nw
        self._w_entries = free[on_w]
        self._b_entries = free[~on_w] - nw
        features = self._w_entries // datafit.n_classes
        cols, self._row = np.unique(features, return_inverse=True)
        # column a's free entries are _w_entries[_col_start[a]:_col_start[a + 1]]
        self._col_start = np.searchsorted(self._row, np.arange(cols.size + 1))
        self._cols = cols.astype(np.int64)
        self._class = (self._w_entries % datafit.n_classes).astype(np.int64)
        self._diag = None
        self.shape = (free.size, free.size)
        self.walks_rows = datafit._walks_rows(self)   # the products' route
        self._rows = None
        self._hessp_work = None   # the row-walking product's partial sums and row buffers
        # a sparse X walked by columns with few classes, whose free columns hold at least
        # half of its entries: one pass over the rows of X (the other columns' weights 0)
        self._by_rows = (sp.issparse(datafit.X) and not self.walks_rows
                         and K.simd_available(datafit.n_classes)
                         and datafit.n_features * 4 * -(-datafit.n_classes // 4)
                         <= datafit.row_product_numbers
                         and 2 * int(datafit._col_nnz[self._cols].sum()) >= datafit.X.nnz)
        # otherwise, on a sparse X walked by columns, the free entries at most half of their
        # columns' classes: the products touch them alone, with no (free columns × K)
        # arrays, but for columns long enough for the AVX2 kernel's blocks of rows
        self._by_entries = (sp.issparse(datafit.X) and not self.walks_rows
                            and not self._by_rows
                            and 2 * self._w_entries.size <= cols.size * datafit.n_classes
                            and not K.margins_csc_blocked(datafit.X.indptr, self._cols,
                                                          datafit.n_samples,
                                                          datafit.n_classes))
        self._blocks = None   # the preconditioner's class blocks (False: not worth forming)
        self.block_cost = None   # what new class blocks cost, in products (once counted)

    def __call__(self, v):
        f = self._f
        f._products[1] += 1
        v = np.asarray(v, dtype=np.float64)
        nwf = self._w_entries.size
        vb = np.zeros(f.n_classes)
        vb[self._b_entries] = v[nwf:]
        out = np.empty(v.size)
        if self.walks_rows:
            X, nb = self.free_rows(), self._b_entries.size
            if self._hessp_work is None:
                nc = K.free_chunks(X.shape[0], nwf + f.n_classes)
                self._hessp_work = (np.empty((nc, nwf + f.n_classes)),
                                    np.empty((nc, f.n_classes)), np.empty(f.n_classes))
            work, row, out_b = self._hessp_work
            K.mn_hessp_free_csr(X.data, X.indices, X.indptr, self._col_start, self._class,
                                np.ascontiguousarray(v[:nwf]), vb, f._P, f._sw, out[:nwf],
                                out_b, work, row, nb > 0, f.n_threads)
            out[nwf:] = out_b[self._b_entries]
        elif self._by_entries:
            X, U = f.X, f._kept("U", (f.n_samples, f.n_classes))
            K.mn_margins_free_csc(X.data, X.indices, X.indptr, self._cols, self._col_start,
                                  self._class, np.ascontiguousarray(v[:nwf]), vb, U,
                                  f.n_threads)
            K.mn_curvature(f._P, U, f._sw, f.n_threads)
            K.mn_rmatmat_free_csc(X.data, X.indices, X.indptr, U, self._cols, self._col_start,
                                  self._class, out[:nwf], False, f.n_threads)
            out[nwf:] = f._column_sums(U)[self._b_entries]
        elif self._by_rows:
            X, width = f._csr(), (f.n_features + 1) * 4 * -(-f.n_classes // 4)
            V = np.zeros((f.n_features, f.n_classes))
            V[self._w_entries // f.n_classes, self._class] = v[:nwf]
            G, out_b = np.empty_like(V), np.empty(f.n_classes)
            K.mn_hessp_csr(X.data, X.indices, X.indptr, V, vb, f._P, f._sw, G, out_b,
                           f._kept("row products", (K.free_chunks(f.n_samples, width), width)),
                           f.n_threads)
            out[:nwf] = G.ravel()[self._w_entries]
            out[nwf:] = out_b[self._b_entries]
        else:
            U = f._kept("U", (f.n_samples, f.n_classes))
            Vc = np.zeros((self._cols.size, f.n_classes))
            Vc[self._row, self._class] = v[:nwf]
            R = _margins(f.X, Vc, self._cols, vb, U, f.n_threads)
            K.mn_curvature(f._P, R, f._sw, f.n_threads)
            G = _rmatmat(f.X, R, self._cols, np.empty_like(Vc), n_threads=f.n_threads)
            out[:nwf] = G[self._row, self._class]
            out[nwf:] = f._column_sums(R)[self._b_entries]
        return out

    def free_rows(self):
        """The free columns of the sparse X as a CSR matrix (made on first use, kept): the
        row-walking products and both ways of forming the Hessian read it."""
        if self._rows is None:
            self._rows = self._f._free_rows(self._cols)
        return self._rows

    def diagonal(self):
        """Σᵢ sᵢ/n x̃ᵢⱼ² pᵢₖ (1 − pᵢₖ) on the free entries."""
        if self._diag is None:
            f = self._f
            D = f._diagonal_weights()
            nwf = self._w_entries.size
            self._diag = np.empty(self.shape[0])
            if self.walks_rows:   # (X_F²)ᵀ D on the free entries, walking the free rows
                X = self.free_rows()
                K.mn_rmatmat_free_csr(X.data, X.indices, X.indptr, D, self._col_start,
                                      self._class, self._diag[:nwf],
                                      np.empty((K.free_chunks(X.shape[0], nwf), nwf)), True,
                                      f.n_threads)
            elif self._by_entries:
                K.mn_rmatmat_free_csc(f.X.data, f.X.indices, f.X.indptr, D, self._cols,
                                      self._col_start, self._class, self._diag[:nwf], True,
                                      f.n_threads)
            else:
                G = _rmatmat(f.X, D, self._cols, np.empty((self._cols.size, f.n_classes)),
                             square=True, n_threads=f.n_threads)
                self._diag[:nwf] = G[self._row, self._class]
            self._diag[nwf:] = f._column_sums(D)[self._b_entries]
        return self._diag

    def quadratic_form(self, positions, values):
        """cᵀ∇²f c for c supported on this operator's entries ``positions`` (sorted), with
        ``values`` there (the model search's correction for the entries the orthant
        projection moved): a product of the operator on those entries alone, which reads
        their columns and holds arrays of their size."""
        return float(values @ _MultinomialHessian(self._f, self._free[positions])(values))

    def restrict(self, keep):
        """The operator on the entries ``keep`` (boolean over this operator's); the
        preconditioner's blocks, if formed, are cut down to them."""
        keep = np.asarray(keep, dtype=bool)
        H = _MultinomialHessian(self._f, self._free[keep])
        if self._blocks is not None:
            H._blocks = self._blocks and _take_blocks(self._blocks, keep)
        return H

    def preconditioner(self, reg):
        """``r -> M⁻¹ r`` for the CG, or None for the diagonal (Jacobi) one.

        M is the block diagonal of ∇²f[F, F] + ``reg`` I whose blocks couple the free
        entries of one class (its weights and intercept), Σᵢ sᵢ/n pᵢₖ(1 − pᵢₖ) x̃ᵢ x̃ᵢᵀ over
        them, each factored by Cholesky. Where many classes have few samples the Hessian
        is ill-conditioned inside such blocks (features that occur together in a class's
        rows), and the Jacobi-preconditioned CG, capped at 20 products, stops far from the
        Newton step. As :attr:`Multinomial.block_after` says; formed by
        :func:`~sparsekit._cython._gram_kernels.mn_class_blocks_csr` (a sparse X's stored
        entries) or :func:`~sparsekit._cython._gram_kernels.mn_class_blocks_dense` (panels
        of rows; see :attr:`Multinomial.block_route_ns`) on first use, and
        cut down, not formed again, for the operators :meth:`restrict` makes.
        """
        blocks = self._class_blocks()
        if blocks is None:
            return None
        G, offset, size, order = blocks
        factors = G.copy()
        _gram_kernels.block_cholesky(factors, offset, size, float(reg))

        def solve(r):
            z = np.empty(self.shape[0])
            _gram_kernels.block_solve(factors, offset, size, order,
                                      np.ascontiguousarray(r, dtype=np.float64), z)
            return z
        return solve

    def _class_blocks(self):
        """(G, offset, size, order) of :meth:`preconditioner`'s blocks, formed on first use
        and kept, or None."""
        if self._blocks is None:
            self._blocks = self._form_class_blocks() or False
        return self._blocks or None

    def _form_class_blocks(self):
        """The class blocks (see :meth:`preconditioner`), or None where the datafit's rule
        (:attr:`Multinomial.block_after`) does not ask for them or they cost too much:
        those carried from an earlier Hessian of the fit (:attr:`Multinomial.block_age`)
        where they still serve, else new ones."""
        f = self._f
        if (self._w_entries.size == 0
                or (f._products[0] < f.block_after and not f._blocked[0])):
            return None
        blocks = self._carried_class_blocks()
        if blocks is None:
            blocks, carry = self._new_class_blocks()
            f._carried_blocks = [blocks, self._free, 0] if carry else None
        if blocks is not None:
            f._blocked[1] = True
        return blocks

    def _carried_class_blocks(self):
        """The datafit's carried blocks on this operator's entries: cut to the entries
        still free, the entries that joined as blocks of one holding their diagonal; None
        when there are none, or they are too old or too many entries joined."""
        carried = self._f._carried_blocks
        if carried is None:
            return None
        blocks, free, age = carried
        kept = np.isin(free, self._free, assume_unique=True)
        joined = np.flatnonzero(~np.isin(self._free, free, assume_unique=True))
        if (age >= self._f.block_age or joined.size > self._f.block_join * self._free.size
                or not kept.any()):
            return None
        G, offset, size, order = _take_blocks(blocks, kept)
        order = np.searchsorted(self._free, free[kept])[order]
        end = offset[-1] + size[-1] ** 2
        diagonal = self.diagonal()[joined] if joined.size else np.empty(0)   # a pass over X
        return (np.concatenate([G, diagonal]),
                np.concatenate([offset, end + np.arange(joined.size)]).astype(np.int64),
                np.concatenate([size, np.ones(joined.size, dtype=np.int64)]),
                np.concatenate([order, joined]).astype(np.int64))

    def _class_block_counts(self, entry_block, size):
        """(updates, (stored entry, free entry) pairs) of forming the class blocks of
        ``size`` (``entry_block``: the block of each weight entry) from a sparse X's stored
        entries."""
        X = self.free_rows()
        updates = _gram_kernels.mn_class_block_updates(X.indices, X.indptr, self._col_start,
                                                       entry_block, size.size)
        return updates, float(self._f._col_nnz[self._cols] @ np.diff(self._col_start))

    def _class_block_cost(self, counts, size):
        """What forming the class blocks of ``size`` costs, in the operator's matrix-free
        products (see :attr:`Multinomial.block_update_cost`): on a sparse X by its
        :meth:`_class_block_counts` ``counts``."""
        f = self._f
        if counts is None:          # one dsyrk per panel and block, on gathered entries
            work = f.n_samples * (float(size @ (size + 1)) / 2 + 4.0 * size.sum())
            return work / f.block_speedup_dense / f._product_cost(self)
        updates, pairs = counts
        product = f._row_product_cost(self) if self.walks_rows else f._product_cost(self)
        return (updates * f.block_update_cost + pairs * f.block_pair_cost) / product

    def _route_times(self, counts, size):
        """(from the stored entries, by panels): the nanoseconds that
        :attr:`Multinomial.block_route_ns` predicts for forming a sparse X's class blocks
        of ``size`` (``counts``: :meth:`_class_block_counts`) on one thread."""
        f = self._f
        (update, pair), (syrk, gathered) = (f.block_route_ns["entries"],
                                            f.block_route_ns["panels"])
        numbers = size.sum() + f.n_classes + self._cols.size
        panels = f.n_samples * (float(size @ (size + 1)) / 2 * syrk + numbers * gathered)
        return counts[0] * update + counts[1] * pair, panels

    def _panels_pay(self, counts, size):
        """Whether densified panels form a sparse X's class blocks of ``size`` faster than
        its stored entries (:meth:`_route_times`)."""
        entries, panels = self._route_times(counts, size)
        return bool(panels < entries)

    def _new_class_blocks(self):
        """(the class blocks formed at the datafit's point, whether to carry them): (None,
        False) where they cost more than :attr:`Multinomial.block_worth` products for
        each Hessian they may serve, carried where they cost more than that for one."""
        f, m, nwf = self._f, self.shape[0], self._w_entries.size
        # entries ordered by class, then feature (the intercept last), cut into blocks
        classes = np.concatenate([self._class, self._b_entries])
        features = np.concatenate([self._w_entries // f.n_classes,
                                   np.full(self._b_entries.size, f.n_features)])
        order = np.lexsort((features, classes))
        by_class = classes[order]
        counts = np.bincount(by_class, minlength=f.n_classes)
        cap = max(int(counts.max()), 1)
        while cap > 1 and _block_numbers(counts, cap) > f.block_budget:
            cap //= 2
        rank = np.arange(m) - np.searchsorted(by_class, by_class)
        chunk = rank // cap
        starts = np.ones(m, dtype=bool)
        starts[1:] = (by_class[1:] != by_class[:-1]) | (chunk[1:] != chunk[:-1])
        block_of = np.cumsum(starts) - 1
        size = np.bincount(block_of).astype(np.int64)
        entry_block = np.empty(m, dtype=np.int64)
        entry_block[order] = block_of
        counts = (self._class_block_counts(entry_block[:nwf], size) if sp.issparse(f.X)
                  else None)
        cost = self.block_cost = self._class_block_cost(counts, size)
        if cost > f.block_worth * max(f.block_age, 1):
            return None, False
        offset = np.concatenate([[0], np.cumsum(size * size)[:-1]]).astype(np.int64)
        W = f._diagonal_weights()
        G = np.zeros(int(offset[-1] + size[-1] ** 2))
        if counts is not None and not self._panels_pay(counts, size):
            X = self.free_rows()
            entry_pos = np.empty(m, dtype=np.int64)   # each entry's place in its block
            entry_pos[order] = np.arange(m) - np.flatnonzero(starts)[block_of]
            intercept = np.full(size.size, -1, dtype=np.int64)
            intercept[entry_block[nwf:]] = entry_pos[nwf:]
            _gram_kernels.mn_class_blocks_csr(X.data, X.indices, X.indptr, W,
                                              self._col_start, self._class, entry_block[:nwf],
                                              entry_pos[:nwf], offset, size, intercept, G,
                                              n_threads=f.n_threads)
            b = entry_block[nwf:]
            G[offset[b] + (size[b] + 1) * entry_pos[nwf:]] += \
                f._column_sums(W)[self._b_entries]
        else:
            self._class_blocks_by_panels(order, by_class, offset, size, W, G)
        return (G, offset, size, order.astype(np.int64)), cost > f.block_worth

    def _class_blocks_by_panels(self, order, by_class, offset, size, W, G):
        """Add the class blocks (entries in block ``order``, of classes ``by_class``) to
        ``G`` by :func:`~sparsekit._cython._gram_kernels.mn_class_blocks_dense`, BLAS on
        panels of rows: a dense X's own, a sparse X's free columns densified a panel at a
        time (``csr_rows_dense``; :attr:`Multinomial.block_panel_numbers` numbers each)."""
        f, m, n = self._f, by_class.size, self._f.n_samples
        sparse = sp.issparse(f.X)
        entry_col = np.concatenate([self._row if sparse else self._cols[self._row],
                                    np.full(self._b_entries.size, -1)])[order]  # -1: b
        rows = max(256, (1 << 20) // (m + f.n_classes))    # 8 MB, or 256 rows if more
        work = f._kept("class blocks", ((m + f.n_classes) * min(rows, n),))
        if not sparse:
            _gram_kernels.mn_class_blocks_dense(f.X, entry_col, by_class, offset, size, W,
                                                work, G, f.n_threads)
            return
        X, c = self.free_rows(), self._cols.size
        block = max(1, min(n, f.block_panel_numbers // max(c, 1)))
        numbers = f._panel_numbers(block * c)
        for start in range(0, n, block):
            stop = min(start + block, n)
            rows_in = numbers[:(stop - start) * c].reshape((stop - start, c), order="F")
            _gram_kernels.csr_rows_dense(X.data, X.indices, X.indptr,
                                         np.arange(start, stop, dtype=np.int64), rows_in)
            _gram_kernels.mn_class_blocks_dense(rows_in, entry_col, by_class, offset, size,
                                                W[start:stop], work, G, f.n_threads)
