"""Scores X Wᵀ + b of sparse rows under a linear model of K classes.

:func:`csr_scores` walks CSR X once, each stored entry adding its value times its
feature's K weights to its row's scores, the weights' rows prefetched ahead: SciPy's product
waits on memory for each once the weights outgrow the caches (a text corpus with many
classes), and copies a C-ordered ``coef_`` transposed first.

:func:`linear_scores` reads only the nonzero weights. The scores of a model over K classes
computed class by class walk X K times, and read a row of W per class. An ℓ1 model on a
text corpus has nonzero weights on a few thousand of its features: then one walk of CSR X
does, each stored entry adding its value times its feature's nonzero class weights, and of
CSC X only the columns of the features with a weight are walked. Finding those weights in
a dense W costs a pass over it and O(n_features) memory, so CSR X keeps the class-by-class
route for one class and for rows too few to repay that pass (see
:func:`_model_route_pays`), and a model with most features in use goes to
:func:`csr_scores`; for CSC X, SciPy's product would copy W transposed, a pass as long. A
sparse W (``sparse_coef=True``, ``sparsify()``) goes to SciPy's sparse product, which walks
the nonzeros the same way.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import safe_sparse_dot

from sparsekit._cython import _oba_kernels as K
from sparsekit.utils._columns import (affords_column_arrays, renumbered_columns,
                                      stored_columns)
from sparsekit.utils._threads import openmp_call

#: the model route is taken only when at most this share of the features have a weight
USED_FEATURES_SHARE = 0.25
#: costs in nanoseconds on the development machine (Debian TF-IDF, 57 classes, batches of
#: 100 to 44,000 rows): of a stored entry of X walked once per class (the class-by-class
#: route, its reads of W's rows included), and on the model route, of a weight of W scanned
#: for nonzeros, of a feature (the O(n_features) arrays) and of a stored entry walked once
CLASS_ENTRY_NS = 1.5
WEIGHT_SCAN_NS = 0.3
FEATURE_NS = 2.0
MODEL_ENTRY_NS = 7.0


def linear_scores(X, coef, intercept, n_threads=1):
    """``X @ coef.T + intercept`` for a CSR or CSC ``X``, float64, of shape (n, K).

    ``coef`` (K, n_features) is a dense array or a SciPy sparse matrix; ``intercept`` (K,).
    Where it pays, each stored entry of X is visited once, with its feature's nonzero
    weights only (``n_threads`` blocks of rows for CSR X, the same sums whatever the count;
    the kernels run from a thread of their own: ``openmp_call``).
    """
    n_classes, n_features = coef.shape
    b = np.ascontiguousarray(intercept, dtype=np.float64)
    if sp.issparse(coef) or (X.format == "csr"
                             and not _model_route_pays(X.nnz, n_classes, n_features)):
        return _by_class(X, coef, b)
    used = np.flatnonzero(coef.any(axis=0)).astype(np.int64)
    if X.format == "csr" and used.size > USED_FEATURES_SHARE * n_features:
        return csr_scores(X, coef.T, b, n_threads)
    Wu = coef[:, used].astype(np.float64, copy=False)
    Z = np.empty((X.shape[0], n_classes))
    if X.format == "csc":
        threads = n_threads if X.has_sorted_indices else 1   # its row blocks bisect columns
        openmp_call(threads, K.mn_margins_csc, X.data, X.indices, X.indptr,
                    np.ascontiguousarray(Wu.T), used, b, Z, threads)
        return Z
    # the free entries of the multinomial kernels: feature j's classes and weights are
    # classes[start[j]:start[j + 1]] and values at the same positions
    position, classes = np.nonzero(Wu.T)
    start = np.zeros(n_features + 1, dtype=np.int64)
    start[used + 1] = np.bincount(position, minlength=used.size)
    np.cumsum(start, out=start)
    openmp_call(n_threads, K.mn_margins_free_csr, X.data, X.indices, X.indptr, start,
                classes.astype(np.int64), np.ascontiguousarray(Wu.T[position, classes]), b, Z,
                n_threads)
    return Z


def csr_scores(X, Wt, intercept=None, n_threads=1):
    """``X @ Wt (+ intercept)`` for CSR ``X`` and dense weights ``Wt`` of shape
    (n_features, K), float64 of shape (n, K): one walk of X, each stored entry adding its
    value times its feature's row of Wt (prefetched ahead where Wt outgrows the caches;
    SciPy's product waits on memory for each). ``Wt`` is read in place when C-ordered float32
    or float64 (a Fortran-ordered ``coef`` transposed), copied so otherwise."""
    if not (Wt.flags.c_contiguous and Wt.dtype in (np.float32, np.float64)):
        Wt = np.ascontiguousarray(Wt, dtype=Wt.dtype if Wt.dtype == np.float32
                                  else np.float64)
    n_classes = Wt.shape[1]
    b = (np.zeros(n_classes) if intercept is None
         else np.ascontiguousarray(np.broadcast_to(intercept, n_classes), dtype=np.float64))
    data = X.data if X.dtype in (np.float32, np.float64) else X.data.astype(np.float64)
    Z = np.empty((X.shape[0], n_classes))
    openmp_call(n_threads, K.mn_margins_csr, data, X.indices, X.indptr, Wt, b, Z, n_threads)
    return Z


def _model_route_pays(nnz, n_classes, n_features):
    """Whether one walk of CSR X's ``nnz`` entries over the model's nonzero weights, after a
    scan of the K × n_features weights for them, is expected to beat a walk per class."""
    model = (WEIGHT_SCAN_NS * n_classes * n_features + FEATURE_NS * n_features
             + MODEL_ENTRY_NS * nnz)
    return CLASS_ENTRY_NS * n_classes * nnz > model


def _by_class(X, coef, b):
    """The scores class by class: one walk of CSR X per class, or SciPy's product."""
    if X.format == "csr" and not sp.issparse(coef):
        Z = np.empty((X.shape[0], coef.shape[0]))
        for k, w in enumerate(coef):
            K.margins_csr(X.data, X.indices, X.indptr, np.ascontiguousarray(w, np.float64),
                          float(b[k]), Z[:, k])
        return Z
    if sp.issparse(coef) and not affords_column_arrays(coef):
        # on coef's columns: SciPy's product (coef.T made CSR) would make arrays of X's
        # column count (2**31 hashed columns: 17 GB)
        used = stored_columns(coef.tocsr())
        X, coef = renumbered_columns(X, used), renumbered_columns(coef, used)
    dtype = np.result_type(X.dtype, coef.dtype)        # SciPy's sparse product wants one
    Z = safe_sparse_dot(X.astype(dtype, copy=False), coef.astype(dtype, copy=False).T,
                        dense_output=True)
    return np.asarray(Z, dtype=np.float64) + b
