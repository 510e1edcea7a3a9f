"""Dask arrays as fit input: their row partitions kept on the workers of a distributed
cluster, validated there, and the per-partition datafits built there.

Only the labels' classes and totals, the parameters and vectors of their size reach the
client (for a cross-validation also the labels and weights, a number per row, and the
held-out rows' margins). Dask and distributed are imported only when a dask collection is passed.
"""
import functools
import sys

import numpy as np
import scipy.sparse as sp

from sparsekit.losses._dask_datafit import (DaskDatafit, each_partition, finished,
                                           kept_weights, on_threads, shared_argument,
                                           thread_layout)
from sparsekit.utils._centering import center_stride, column_moments, far_shifts
from sparsekit.utils._rows import row_sq_norms, weighted_scale_sums
from sparsekit.utils._validation import check_entry_magnitude, check_column_kinds


def is_dask_collection(obj):
    """Whether ``obj`` is a dask collection (False when dask is not imported: no dask
    collection exists then, and a fit does not pay dask's import, ~0.1 s)."""
    if "dask" not in sys.modules:
        return False
    from dask.base import is_dask_collection as check
    return check(obj)


def block_predictions(method):
    """A prediction method that, given a dask array or DataFrame, maps itself over X's row
    blocks on the workers and returns a dask array (as dask-ml's ``ParallelPostFit``),
    instead of computing X into the client's memory; other input as before."""
    @functools.wraps(method)
    def predict(self, X, *args, **kwargs):
        if not is_dask_collection(X):
            return method(self, X, *args, **kwargs)
        X = _as_dask_array(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        # the output's type and columns (and X's width checked), from a row of zeros
        name = method.__name__
        sample = _predict_block(np.zeros((0, X.shape[1]), dtype=X.dtype), self, name, args,
                                kwargs)
        rows = (X.chunks[0],)
        from dask import delayed
        est = delayed(self, pure=False)    # one copy of the model in the graph, not per block
        if sample.ndim == 1:
            return X.map_blocks(_predict_block, est, name, args, kwargs, drop_axis=1,
                                dtype=sample.dtype, chunks=rows, meta=sample[:0])
        return X.map_blocks(_predict_block, est, name, args, kwargs, dtype=sample.dtype,
                            chunks=rows + ((sample.shape[1],),), meta=sample[:0])
    return predict


def in_memory(*values):
    """``values`` with the dask collections among them computed together, one pass over
    the partitions they share (a prediction of X's row blocks and the labels of the same
    frame), as :func:`_pandas_values` reads them; the others as they are."""
    lazy = [k for k, v in enumerate(values) if is_dask_collection(v)]
    if not lazy:
        return values
    import dask

    done = dask.compute(*(_as_dask_array(values[k]) for k in lazy))
    values = list(values)
    for k, v in zip(lazy, done):
        values[k] = v
    return tuple(values)


def with_known_lengths(X):
    """A dask X as a dask array whose row blocks' lengths are known (computed, a pass over
    its partitions, where a DataFrame's are not), so that a scorer's metric can take the
    length of its predictions; anything else as it is."""
    if not is_dask_collection(X):
        return X
    X = _as_dask_array(X)
    return X.compute_chunk_sizes() if np.isnan(X.shape[0]) else X


def _predict_block(block, est, name, args, kwargs):
    """The method ``name`` of ``est`` on one row block (an empty one, as a filtered
    DataFrame's partition can be: the output of a row of zeros, cut to none)."""
    method = getattr(est, name)
    if block.shape[0] == 0:
        return method(np.zeros((1, block.shape[1]), dtype=block.dtype), *args, **kwargs)[:0]
    return method(block, *args, **kwargs)


def _aligned(v, rows, name, dtype=None, columns=False):
    """The partitions of ``v`` (a dask array or Series, or a NumPy array; with
    ``columns``, also 2-D: a dask array or DataFrame, a NumPy array or a SciPy sparse
    matrix, its columns merged), as delayed objects aligned with X's row chunks ``rows``.
    Where a length is unknown (a DataFrame's partitions) ``v`` must be partitioned as X;
    its partitions' lengths are then for the caller to check once computed."""
    import dask.array as da

    given = v
    n = float(np.sum(rows))
    if columns and sp.issparse(v) and not np.isnan(n):
        v = da.from_array(sp.csr_matrix(v), chunks=(tuple(rows), -1), asarray=False)
    v = da.asarray(_as_dask_array(v), dtype=dtype)
    if v.ndim != 1 and not (columns and v.ndim == 2):
        raise ValueError(f"{name} must have shape ({n:.0f},), got {v.shape}")
    if v.ndim == 2 and v.numblocks[1] > 1:
        v = v.rechunk({1: -1})
    if np.isnan(v.shape[0]) or np.isnan(n):
        if not is_dask_collection(given):
            raise ValueError("X's partitions have unknown lengths: pass the labels and "
                             "weights as columns (Series) of the same DataFrame")
        if v.numblocks[0] != len(rows):
            raise ValueError(f"{name} has {v.numblocks[0]} partitions and X {len(rows)}: "
                             "pass the columns of one DataFrame")
        return list(v.to_delayed().ravel())
    if v.shape[0] != n:
        expected = f"shape ({n:.0f},), got" if v.ndim == 1 else f"{n:.0f} rows as X, got shape"
        raise ValueError(f"{name} must have {expected} {v.shape}")
    return list(v.rechunk({0: tuple(rows)}).to_delayed().ravel())


def row_blocks(X, y, sample_weight=None):
    """The row blocks of a dask array or DataFrame ``X`` with the aligned blocks of ``y``
    and ``sample_weight`` (see :func:`_aligned`; None: None blocks), computed one block at
    a time: a stream whose memory is one block's (as dask-ml's ``Incremental`` feeds
    ``partial_fit``)."""
    import dask

    X = _as_dask_array(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if X.numblocks[1] > 1:
        X = X.rechunk({1: -1})
    blocks = list(X.to_delayed().ravel())
    ys = _aligned(y, X.chunks[0], "y")
    weights = ([None] * len(blocks) if sample_weight is None
               else _aligned(sample_weight, X.chunks[0], "sample_weight", np.float64))
    for k, parts in enumerate(zip(blocks, ys, weights)):
        block, y_block, w_block = dask.compute(*parts)
        for name, v in (("y", y_block), ("sample_weight", w_block)):
            if v is not None and len(v) != block.shape[0]:
                raise ValueError(f"{name}'s partition {k} holds {len(v)} rows and X's "
                                 f"{block.shape[0]}")
        yield block, y_block, w_block


def _checked_block(X, dtype):
    """One partition of X as the datafits take it, or the error scikit-learn's check would
    raise (run on the worker that holds it)."""
    from sklearn.utils import check_array

    X = check_array(X, accept_sparse=["csr", "csc"], dtype=dtype, input_name="X")
    check_entry_magnitude(X, np.float64)
    return X


def _checked_weights(sample_weight):
    """One partition of the sample weights, or the error a fit in memory raises (run on
    the worker that holds it)."""
    from sklearn.utils import check_array
    from sklearn.utils.validation import check_non_negative

    s = check_array(sample_weight, ensure_2d=False, dtype=np.float64, ensure_min_samples=0,
                    input_name="sample_weight")
    check_non_negative(s, "`sample_weight`")    # scikit-learn's message, as in memory
    return s


def _dtype(X):
    return X.dtype


def _length(block):
    return block.shape[0]


def _as_dask_array(v):
    """A dask DataFrame or Series as a dask array (its partitions as row chunks, of
    unknown lengths, their values as :func:`_pandas_values` reads them); anything else as
    it is."""
    if not is_dask_collection(v) or getattr(v, "to_dask_array", None) is None:
        return v
    return v.map_partitions(_pandas_values, meta=_pandas_values(v._meta))


def _pandas_values(part):
    """A DataFrame or Series partition's values as scikit-learn reads a DataFrame or
    Series in memory: nullable integers and booleans as floats (a missing one NaN, which
    the checks then refuse as a fit in memory does), categories as their values' type,
    text as objects (a DataFrame's text column refused, named), sparse columns as a CSR
    matrix."""
    from sklearn.utils import check_array

    if getattr(part, "ndim", 1) == 2:    # X's: a text column named (the labels may be text)
        check_column_kinds(part)
    return check_array(part, accept_sparse="csr", dtype=None, ensure_all_finite=False,
                       ensure_2d=False, ensure_min_samples=0, ensure_min_features=0)


def _labels(y):
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.ravel()
    return np.unique(y)


def _class_totals(y, sample_weight, classes):
    codes = np.searchsorted(classes, np.asarray(y).ravel())
    return np.bincount(codes, weights=sample_weight, minlength=classes.size)


def _block_weights(y, sample_weight, classes, class_weight, mean):
    """A partition's weights as the solver takes them: sample weights times class
    weights, over their mean."""
    codes = _codes(y, classes)
    s = np.ones(codes.size) if sample_weight is None else np.asarray(sample_weight, np.float64)
    return s * class_weight[codes] / mean


def _labelled_block(make, classes, class_weight, mean, X, y, sample_weight):
    """``make(X, codes, weights)`` of one partition: its labels as indices into
    ``classes``, its weights times the class weights over ``mean`` (class_weight None:
    the weights as given)."""
    if class_weight is not None:
        sample_weight = _block_weights(y, sample_weight, classes, class_weight, mean)
    return make(X, _codes(y, classes), sample_weight)


def _block_margins(X, rows, coef, intercept):
    """The margins X[rows] coefᵀ + intercept of a partition's ``rows`` (local indices),
    one column per row of ``coef`` (a CSR matrix), as float64."""
    scores = X[rows] @ coef.T
    scores = scores.toarray() if sp.issparse(scores) else np.asarray(scores)
    return scores.astype(np.float64, copy=False) + intercept


def _weighted_row_sq_norms(X, sample_weight):
    squares = row_sq_norms(X)
    if sample_weight is not None:
        squares[np.asarray(sample_weight) == 0] = 0.0
    return squares


def _codes(y, classes):
    return np.searchsorted(classes, np.asarray(y).ravel())


class DaskRows:
    """The aligned row partitions of a dask X, its labels and weights, on the cluster.

    Parameters
    ----------
    X : dask.array.Array or dask DataFrame of shape (n_samples, n_features)
        Dense or scipy.sparse blocks; chunked along the rows (column chunks are merged). A
        DataFrame's partitions are its blocks, and their lengths are read off the computed
        blocks (no pass over the data of its own, as ``to_dask_array(lengths=True)`` makes).
        Its column names are not kept, as in dask-ml: a dask DataFrame at predict time has
        none for scikit-learn.
    y, sample_weight : dask arrays or Series, or NumPy arrays, of shape (n_samples,)
        Rechunked like X's rows (a Series or an array of unknown chunks: partitioned as X).
    dtype : list of dtypes
        Accepted value types (others are converted on the workers).
    targets_2d : bool, default=False
        Whether ``y`` may also be 2-D targets of shape (n_samples, n_targets) (a dask
        array or DataFrame, or a NumPy or SciPy sparse one), its columns merged.

    Attributes
    ----------
    n_targets : int
        ``y``'s columns (1 for 1-D labels).
    target_dtype : numpy.dtype
        ``y``'s.
    layout : list of (worker, indices)
        The partitions by the worker thread that holds them: each thread's work on them is
        one task (:meth:`map`, :meth:`datafit`).
    round_trip : float or None
        Seconds of a Hessian product's round trip to the workers, which the datafits on
        these rows price into their Hessians' route: timed by the first, then updated by
        each with its products' times (None until then).
    """

    def __init__(self, X, y, sample_weight, dtype, targets_2d=False):
        import dask.array as da
        from distributed import default_client

        X = _as_dask_array(X)
        if not isinstance(X, da.Array):
            raise TypeError("fit takes a dask array or DataFrame for X, got "
                            + type(X).__name__)
        try:
            self.client = default_client()
        except ValueError:
            raise ValueError("a fit on dask arrays runs on a distributed cluster: create a "
                             "distributed.Client first") from None
        if X.ndim != 2 or np.isnan(X.shape[1]):
            raise ValueError(f"X must be 2-D with a known number of columns, got shape "
                             f"{X.shape}")
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        client = self.client
        blocks = client.compute(list(X.to_delayed().ravel()))
        if np.isnan(X.shape[0]):           # a DataFrame's partitions: lengths from the blocks
            rows = tuple(client.gather([client.submit(_length, b) for b in blocks]))
        else:
            rows = X.chunks[0]
        self.n_samples, self.n_features = int(sum(rows)), X.shape[1]
        if self.n_samples == 0:
            raise ValueError(f"X has no rows (shape {(0, X.shape[1])}); a fit needs one")
        # a filtered DataFrame leaves empty partitions: they hold nothing to fit
        keep = [k for k, r in enumerate(rows) if r > 0]
        self.rows = np.asarray([rows[k] for k in keep], dtype=np.int64)   # each partition's
        self.X = [client.submit(_checked_block, blocks[k], dtype) for k in keep]
        shape = getattr(y, "shape", None) or np.shape(y)   # a DataFrame's: (rows?, columns)
        self.n_targets = int(shape[1]) if len(shape) == 2 else 1
        self.target_dtype = np.dtype(_as_dask_array(y).dtype if is_dask_collection(y) or
                                     sp.issparse(y) else np.asarray(y).dtype)
        y = self._parts(y, rows, "y", None, targets_2d)
        self.y = [y[k] for k in keep]
        self.sample_weight = [None] * len(keep)
        if sample_weight is not None:
            weights = self._parts(sample_weight, rows, "sample_weight", np.float64)
            self.sample_weight = [client.submit(_checked_weights, weights[k]) for k in keep]
        self.layout = thread_layout(client, finished(self.X))
        self.round_trip = None
        self.dtype = client.gather(client.submit(_dtype, self.X[0]))

    def _parts(self, v, rows, name, dtype, columns=False):
        """Futures of ``v``'s partitions, aligned with X's ``rows`` (known: a Series'
        partitions are checked against them by length)."""
        unknown = np.isnan(_as_dask_array(v).shape[0]) if is_dask_collection(v) else False
        parts = self.client.compute(_aligned(v, rows, name, dtype, columns))
        if unknown:
            lengths = self.client.gather([self.client.submit(_length, b) for b in parts])
            if tuple(lengths) != tuple(rows):
                raise ValueError(f"{name}'s partitions hold {lengths} rows and X's {rows}")
        return parts

    def map(self, func, *columns, args=()):
        """``func(*entries, *args)`` of each partition's entries in ``columns`` (lists
        aligned with ``X``), gathered in the partitions' order: one task per worker
        thread."""
        results = [None] * len(self.X)
        task = functools.partial(each_partition, func, args)
        chunks = self.client.gather(on_threads(self.client, self.layout, task, *columns))
        for (_, ks), chunk in zip(self.layout, chunks):
            for k, result in zip(ks, chunk):
                results[k] = result
        return results

    def classes(self):
        """The sorted labels (a reduction of each partition's); a missing label (NaN, as
        a nullable Series' gap reads) is the in-memory fit's error."""
        classes = np.unique(np.concatenate(self.map(_labels, self.y)))
        if classes.dtype.kind == "f" and np.isnan(classes).any():
            raise ValueError("Input y contains NaN.")
        return classes

    def scale_sums(self, weights=None):
        """X's weighted row sums and its columns' weighted sums of squares and counts of
        nonzero entries over the partitions (a reduction of each partition's
        :func:`~sparsekit.utils._rows.weighted_scale_sums`), sᵢ the sample weights or the
        partitions' ``weights`` (futures)."""
        weights = self.sample_weight if weights is None else weights
        return np.sum(self.map(weighted_scale_sums, self.X, weights), axis=0)

    def row_sq_norms(self, weights=None):
        """‖xᵢ‖² of every row of X (float64), 0 for the rows of weight 0 in ``weights``
        (futures; None: the sample weights), computed where the partitions are and gathered
        in the rows' order."""
        weights = self.sample_weight if weights is None else weights
        return np.concatenate(self.map(_weighted_row_sq_norms, self.X, weights))

    def class_totals(self, classes):
        """The total sample weight of each class."""
        return np.sum(self.map(_class_totals, self.y, self.sample_weight, args=(classes,)),
                      axis=0)

    def weights(self, classes, class_weight, mean):
        """Futures of each partition's solver weights (sample x class weights / mean)."""
        return [self.client.submit(_block_weights, y, s, classes, class_weight, mean)
                for y, s in zip(self.y, self.sample_weight)]

    def column_shifts(self, weights=None):
        """The shifts of X's columns far from 0
        (:func:`~sparsekit.utils._centering.far_shifts`) from the moments of every
        partition's evenly spaced rows, weighted by ``weights`` (futures; None: the sample
        weights), or None (none far from 0)."""
        weights = self.sample_weight if weights is None else weights
        moments = self.map(column_moments, self.X, weights,
                           args=(center_stride(self.n_samples),))
        if any(m is None for m in moments):
            return None
        return far_shifts([sum(m[i] for m in moments) for i in range(5)], self.dtype)

    def placed(self, func, *args):
        """Futures of ``func(X_b, *args)`` for each partition X_b, each made on the worker
        that holds it (array arguments sent once to each worker when large)."""
        args = [shared_argument(self.client, a, len(self.X)) if isinstance(a, np.ndarray)
                else a for a in args]
        parts = [None] * len(self.X)
        for where, ks in self.layout:
            for k in ks:
                parts[k] = self.client.submit(func, self.X[k], *args,
                                              workers=None if where is None else [where],
                                              allow_other_workers=True, pure=False)
        return finished(parts)

    def placed_with(self, func, parts, *args):
        """Futures of ``func(part, *args)`` for each future of ``parts`` (aligned with the
        partitions, such as :meth:`placed` returns), each made where its part is."""
        return finished([self.client.submit(func, part, *args, pure=False)
                         for part in parts])

    def datafit(self, make, classes, class_weight=None, mean=1.0, weights=None, parts=None,
                offsets=None, scale=1.0):
        """The :class:`~sparsekit.losses._dask_datafit.DaskDatafit` of ``make(X_b, codes_b,
        weights_b)`` over the partitions: their labels as indices into ``classes``, their
        ``weights`` (futures; None: the sample weights) times ``class_weight`` over
        ``mean`` (class_weight None: as given); X_b the partitions or ``parts`` (futures of
        :meth:`placed`), whose columns were shifted by ``offsets`` and then multiplied by
        ``scale`` (the datafit's)."""
        weights = self.sample_weight if weights is None else weights
        labelled = functools.partial(_labelled_block, make, classes, class_weight, mean)
        datafit = DaskDatafit(labelled, self, self.y, weights, parts)
        datafit.offsets, datafit.scale = offsets, scale
        return datafit

    def gather(self, parts):
        """Partitions' futures (``y``, ``sample_weight``) as one NumPy array; 2-D targets
        ``y`` as one array, or a CSR matrix when a partition is sparse."""
        values = self.client.gather(parts)
        if any(sp.issparse(v) or np.ndim(v) == 2 and np.shape(v)[1] > 1 for v in values):
            if any(sp.issparse(v) for v in values):
                return sp.vstack([sp.csr_matrix(v) for v in values], format="csr")
            return np.concatenate([np.asarray(v) for v in values])
        return np.concatenate([np.asarray(v).ravel() for v in values])

    def margins(self, rows, coef, intercept):
        """The margins of the rows ``rows`` (indices into X, in any order) under each row of
        ``coef`` (a CSR matrix of shape (m, n_features)) plus ``intercept`` (m,):
        computed where the partitions are, an array of shape (len(rows), m) gathered."""
        order = np.sort(rows)
        ends = np.cumsum(self.rows)
        cuts = np.searchsorted(order, ends - self.rows), np.searchsorted(order, ends)
        coef = shared_argument(self.client, sp.csr_matrix(coef), len(self.X))
        futures = [self.client.submit(_block_margins, X, order[lo:hi] - (end - n), coef,
                                      intercept, pure=False)
                   for X, lo, hi, end, n in zip(self.X, *cuts, ends, self.rows) if hi > lo]
        return np.concatenate(self.client.gather(futures))[np.searchsorted(order, rows)]

    def split(self, values):
        """Futures of an n_samples array's slices, one per partition, on the workers."""
        bounds = np.cumsum(self.rows)[:-1]
        return self.client.scatter(np.split(values, bounds), hash=False)   # one round trip

    def over_targets(self, func, *args):
        """``func(y, *args)`` of each partition's ``y``, gathered."""
        return self.map(func, self.y, args=args)

    def kept_weights(self, targets, weights=None):
        """Futures of each partition's ``weights`` (futures; None: the sample weights) with
        0 on the rows that ``targets`` (a
        :class:`~sparsekit.losses._dask_datafit.SetTargets`) leaves out."""
        weights = self.sample_weight if weights is None else weights
        first_rows = np.cumsum(self.rows) - self.rows
        return [self.client.submit(kept_weights, targets, y, s, int(first))
                for y, s, first in zip(self.y, weights, first_rows)]
