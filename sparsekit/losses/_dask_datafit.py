"""A datafit over the row partitions of dask arrays: each partition's datafit lives on the
worker that holds the partition, and only parameter-sized vectors travel.

f(x) = Σ_b (n_b / n) f_b(x) for the partitions' datafits f_b (each the weighted mean of its
rows' losses), so the value, the gradient, the Hessian products, their diagonals, the
Lipschitz bound and the dual terms are the n_b/n-weighted sums of the partitions'; the
intercepts at w = 0 come from the summed label totals. The partitions are grouped by the
worker thread that holds them (:class:`PartitionGroup`): each reduction is one task per
group, which sums its partitions' results, so an evaluation costs a round trip to the
workers whatever the number of partitions. A Hessian operator is one operator per
partition, kept on its worker (matrix-free or formed there): a product sends v and gathers
one vector per group; formed ones are summed in their group and gathered once.

:class:`DaskFenchelYoung` does the same for :class:`~sparsekit.SparsemaxClassifier`'s
objective (value, gradient and Hessian products), with each partition's targets built on
its worker (:class:`LabelTargets`, :class:`SetTargets`), and searches the decision threshold
of label sets over the partitions' label scores. The estimators build these objects only
when they are given a dask array; this module imports nothing of dask at import time
(:func:`finished` imports ``distributed.wait`` when it is called).
"""
import time
from functools import partial

import numpy as np
import scipy.sparse as sp

from sparsekit.losses._fenchel_young_datafit import (ActiveRows, FenchelYoungLinear,
                                                      checked_scale, fits_through_csr, written)
from sparsekit.losses._logistic_datafit import _ExplicitHessian
from sparsekit.metrics._thresholds import (PositiveEntries, merged_entries, row_slices,
                                           summed_histogram, threshold_search)
from sparsekit.utils._rows import sparse_copy


#: bytes of an argument's copies that may travel inside the tasks taking it (through the
#: scheduler, one per task); a larger argument is scattered to the workers first, a blocking
#: round trip of its own (3 ms on a local cluster, against a 15 ms task round trip)
EMBED_BYTES = 1 << 20


def shared_argument(client, value, n_tasks):
    """``value`` (an array or a SciPy sparse matrix) as an argument of ``n_tasks`` tasks:
    itself when its copies are small (``EMBED_BYTES`` in all), else a future of it
    scattered to every worker."""
    size = (value.data.nbytes + value.indices.nbytes + value.indptr.nbytes
            if sp.issparse(value) else value.nbytes)
    if size * n_tasks <= EMBED_BYTES:
        return value
    return client.scatter(value, broadcast=True, hash=False)


def _call(obj, name, *args, **kwargs):
    return getattr(obj, name)(*args, **kwargs)


class PartitionGroup:
    """The objects of the row partitions one worker thread holds, with their weights: a
    call on the group is one task for all of them (a task's round trip, not the
    partitions', is what an evaluation on a cluster costs)."""

    def __init__(self, shares, *parts):
        self.shares = shares
        self.parts = parts

    def total(self, name, *args, weighted=True, timed=False):
        """Σₖ sharesₖ · partₖ.name(*args) (plain sums when not ``weighted``); a result that
        is a tuple is summed entry by entry, as float64. ``timed``: (the sum, the seconds
        it took here)."""
        start = time.perf_counter()
        total = None
        for share, part in zip(self.shares, self.parts):
            value = getattr(part, name)(*args)
            terms = value if isinstance(value, tuple) else (value,)
            terms = [np.asarray(t, dtype=np.float64) * (share if weighted else 1.0)
                     for t in terms]
            total = terms if total is None else [a + b for a, b in zip(total, terms)]
        total = tuple(total) if isinstance(value, tuple) else total[0]
        return (total, time.perf_counter() - start) if timed else total

    def each(self, name, *args):
        """The group of every partition's ``part.name(*args)``, with the same weights."""
        return PartitionGroup(self.shares, *(getattr(p, name)(*args) for p in self.parts))


def summed(client, groups, name, *args, weighted=True, timed=False):
    """The sum over ``groups`` (futures of :class:`PartitionGroup` s) of their partitions'
    ``name(*args)`` (:meth:`PartitionGroup.total`; tuples entry by entry), gathered: one
    task per group, array arguments shared (:func:`shared_argument`). ``timed``: (the
    sum, the longest time a group's task spent in its partitions' calls)."""
    args = [shared_argument(client, a, len(groups)) if isinstance(a, np.ndarray) else a
            for a in args]
    totals = client.gather([client.submit(_call, g, "total", name, *args, weighted=weighted,
                                          timed=timed, pure=False) for g in groups])
    busy = 0.0
    if timed:
        busy = max(seconds for _, seconds in totals)
        totals = [total for total, _ in totals]
    result = (tuple(sum(entries) for entries in zip(*totals)) if isinstance(totals[0], tuple)
              else sum(totals))
    return (result, busy) if timed else result


def finished(futures):
    """``futures`` once computed (on the default client's cluster, the one the fits use);
    the error of the first that failed is raised."""
    from distributed import wait

    wait(futures)
    for future in futures:
        if future.status == "error":
            future.result()
    return futures


def thread_layout(client, parts):
    """The partitions ``parts`` (computed futures) by worker thread: ``(worker, indices)``
    pairs, each worker's partitions split over as many as it has threads (worker None for
    partitions no worker holds)."""
    who, threads = client.who_has(parts), client.nthreads()
    held = {}
    for k, part in enumerate(parts):
        held.setdefault((who.get(part.key) or (None,))[0], []).append(k)
    return [(where, chunk) for where, ks in held.items()
            for chunk in np.array_split(ks, min(threads.get(where, 1), len(ks)))]


def on_threads(client, layout, func, *columns):
    """Futures, one per ``(worker, indices)`` of ``layout`` and computed on that worker, of
    ``func(*lists)``: each list a column's entries (futures or values, one per partition)
    at those indices."""
    return [client.submit(func, *([column[k] for k in ks] for column in columns),
                          workers=None if where is None else [where],
                          allow_other_workers=True, pure=False)
            for where, ks in layout]


def each_partition(func, args, *columns):
    """``[func(*entries, *args)]`` for each partition's entries in ``columns`` (run in a
    task of :func:`on_threads`)."""
    return [func(*entries, *args) for entries in zip(*columns)]


def _built_group(make, args, shares, *columns):
    return PartitionGroup(np.asarray(shares), *each_partition(make, args, *columns))


def build_groups(client, layout, shares, make, *columns, args=()):
    """Futures of :class:`PartitionGroup` s, one per worker thread of ``layout``
    (:func:`thread_layout`), built on its worker: ``make(*entries, *args)`` of each of its
    partitions' entries in ``columns``, weighted by their ``shares``."""
    return on_threads(client, layout, partial(_built_group, make, args), list(shares),
                      *columns)


def _hessp(group, x, free, counted, overhead):
    """The group's Hessians at x on ``free``, once ``counted`` (the products the client
    made with the last ones) is recorded; ``overhead``: each partition's share of a
    product's round trip, in the units of the partitions' route rule."""
    return group.each("hessp", x, free, overhead)


def _formed_or_diagonal(group, formed):
    """Σ shareₖ Hₖ (a matrix) when ``formed`` and each of the group's Hessians is a formed
    matrix, else Σ shareₖ diag Hₖ (a vector)."""
    if formed and all(getattr(H, "is_explicit", False) for H in group.parts):
        return sum(share * H.matrix for share, H in zip(group.shares, group.parts))
    return group.total("diagonal")


def _count(group, count):
    """Record on the group's formed Hessians the products the client made with the sum of
    them: their datafits estimate from them the products a Hessian will take."""
    for H in group.parts:
        H.count_products(count)


def _round_trip(client, groups):
    """The median seconds of three round trips of a task per group, as a product makes."""
    trips = []
    for _ in range(3):
        start = time.perf_counter()
        client.gather([client.submit(_sizes, g, pure=False) for g in groups])
        trips.append(time.perf_counter() - start)
    return float(np.median(trips))


def _sizes(group):
    datafit = group.parts[0]
    return (datafit.penalty_weights, datafit.n_params, datafit.n_features,
            datafit.fit_intercept, datafit.shift_invariant, type(datafit))


class DaskDatafit:
    """The datafit ``make(X_b, y_b, s_b)`` of every row partition, summed.

    Parameters
    ----------
    make : callable
        ``make(X_block, y_block, sample_weight_block) -> datafit`` (run on the workers, for
        each worker thread's partitions in one task); ``make.__sparsekit_unpenalized__`` is
        not used: ``penalty_weights`` and the sizes come from the first partition's datafit.
    rows : sparsekit.linear_model._dask_input.DaskRows
        X's row partitions, where they are (its ``layout``) and their lengths.
    y_blocks, weight_blocks : list of distributed.Future
        The partitions' labels and weights, aligned with ``rows.X``.
    X_blocks : list of distributed.Future, optional
        The partitions the datafits are made of, each where ``rows.X``'s is (default:
        ``rows.X``).
    """

    #: bytes of formed partition Hessians gathered to be summed on the client
    GATHER_BYTES = 1 << 26
    #: seconds of one unit of the partitions' route rules (``Logistic.hessp``,
    #: ``Multinomial.hessp``), which count multiply-adds of the product kernels
    UNIT_SECONDS = 1e-9
    #: the column offsets subtracted from X's partitions (``X_blocks``) or None; the
    #: margins of X as given are X w + b − wᵀ offsets (the estimators' centering)
    offsets = None

    def __init__(self, make, rows, y_blocks, weight_blocks, X_blocks=None):
        client = self._client = rows.client
        self.n_samples = rows.n_samples
        self._groups = finished(build_groups(client, rows.layout, rows.rows / rows.n_samples,
                                             make, rows.X if X_blocks is None else X_blocks,
                                             y_blocks, weight_blocks))
        self._rows = rows
        if rows.round_trip is None:      # the first datafit on these rows times the cluster
            rows.round_trip = _round_trip(client, self._groups)
        (self.penalty_weights, self.n_params, self.n_features, self.fit_intercept,
         self.shift_invariant, self._type) = client.gather(
            client.submit(_sizes, self._groups[0], pure=False))
        self._n_parts = len(rows.X)
        self._bound = None
        self._gathered = None     # (the groups' Hessians, products made on their sum)

    # -- the datafit protocol
    def value(self, x):
        return float(summed(self._client, self._groups, "value",
                            np.asarray(x, dtype=np.float64)))

    def value_grad(self, x):
        f, g = summed(self._client, self._groups, "value_grad",
                      np.ascontiguousarray(x, dtype=np.float64))
        return float(f), g

    def hessp(self, x, free):
        """The partitions' Hessians at x on ``free``. When each formed its matrix (their
        datafits' rule) and one matrix per worker thread is small (``GATHER_BYTES`` in
        all), each thread's partitions' matrices are summed there, their weighted sum is
        gathered once and the solver's products are made on the client; otherwise each
        product is a round trip to the workers (the diagonal comes with the Hessians). The
        rule prices that round trip (``round_trip``, shared by the partitions: each prices
        its share) into the products when the formed matrices would be gathered: on small
        partitions it forms them where in memory it would not."""
        client, size = self._client, int(np.size(free))
        gathered = 8 * size * size * len(self._groups) <= self.GATHER_BYTES
        overhead = (self.round_trip / self.UNIT_SECONDS / self._n_parts if gathered
                    else 0.0)
        x, free = (shared_argument(client, np.asarray(a, dtype=dtype), len(self._groups))
                   for a, dtype in ((x, np.float64), (free, np.int64)))
        counted = [None] * len(self._groups)
        if self._gathered is not None:     # the last Hessian's products, made on the client
            last, calls = self._gathered
            counted = [client.submit(_count, H, calls[0], pure=False) for H in last]
            self._gathered = None
        hessians = [client.submit(_hessp, g, x, free, c, overhead, pure=False)
                    for g, c in zip(self._groups, counted)]
        routes = client.gather([client.submit(_formed_or_diagonal, H, gathered, pure=False)
                                for H in hessians])
        if all(M.ndim == 2 for M in routes):
            calls = [0]
            self._gathered = hessians, calls
            return _ExplicitHessian(sum(routes), calls)
        diagonal = sum(np.diagonal(M) if M.ndim == 2 else M for M in routes)
        return _DaskHessian(self, hessians, diagonal)

    @property
    def round_trip(self):
        """Seconds of a matrix-free product's round trip to the workers beyond the
        partitions' work (``rows.round_trip``: the median of three round trips of a task
        per worker thread, as a product's, then a running mean with the products' own,
        less the longest time a worker thread spent in its partitions' products, over every
        datafit of the same rows)."""
        return self._rows.round_trip

    def _product_took(self, seconds):
        self._rows.round_trip = 0.5 * (self._rows.round_trip + seconds)

    def lipschitz(self):
        if self._bound is None:
            self._bound = float(summed(self._client, self._groups, "lipschitz"))
        return self._bound

    def label_totals(self):
        return summed(self._client, self._groups, "label_totals", weighted=False)

    def null_intercept(self):
        return self._type.intercept_for(self.label_totals())

    def dual_terms(self, x, alpha):
        return float(summed(self._client, self._groups, "dual_terms",
                            np.asarray(x, dtype=np.float64), float(alpha)))


class _DaskHessian:
    """Each worker thread's partitions' Hessian operators, on their worker, and the
    diagonal of their weighted sum: products and restrictions are their sums."""

    def __init__(self, datafit, groups, diagonal):
        self._f = datafit
        self._groups = groups
        self._diag = diagonal
        self.shape = (diagonal.size, diagonal.size)

    def __call__(self, v):
        start = time.perf_counter()
        product, busy = summed(self._f._client, self._groups, "__call__",
                               np.asarray(v, dtype=np.float64), timed=True)
        self._f._product_took(time.perf_counter() - start - busy)
        return product

    def diagonal(self):
        return self._diag

    def restrict(self, keep):
        keep = np.asarray(keep, dtype=bool)
        client = self._f._client
        shared = shared_argument(client, keep, len(self._groups))
        groups = [client.submit(_call, g, "each", "restrict", shared, pure=False)
                  for g in self._groups]
        return _DaskHessian(self._f, groups, self._diag[keep])


class LabelTargets:
    """A partition's targets from its class labels: the first ``n_outputs`` columns (None:
    all) of their one-hot rows over ``classes``; a row whose label is not among ``classes``
    (a training fold's held-out class) is left out (weight 0)."""

    def __init__(self, classes, polytope, budget, n_outputs=None):
        self.classes, self.polytope, self.budget = classes, polytope, budget
        self.n_outputs = classes.size if n_outputs is None else n_outputs

    def __call__(self, y, first_row=0):
        """``(Y, keep)``: the targets (CSR) and the mask of the rows kept (an error counts
        the rows from ``first_row``)."""
        from sparsekit.losses._targets import polytope_targets

        classes = self.classes
        y = np.asarray(y).ravel()
        codes = np.minimum(np.searchsorted(classes, y), classes.size - 1)
        n = codes.size
        Y = sp.csr_matrix((np.ones(n), codes, np.arange(n + 1)), shape=(n, classes.size))
        Y, keep = polytope_targets(Y[:, :self.n_outputs], self.polytope, self.budget,
                                   "multiclass", first_row=first_row)
        return Y, keep & (classes[codes] == y)


class SetTargets:
    """A partition's targets from its 2-D targets (label sets or proportions of
    ``n_outputs`` labels, ``target_type`` "multilabel" or "proportions"), ``columns``
    negated, as a fit in memory makes them; the rows the polytope leaves out (label sets
    without a label on the simplex) are said once by the client, not by each worker."""

    def __init__(self, n_outputs, polytope, budget, target_type, columns=()):
        self.n_outputs, self.polytope, self.budget = n_outputs, polytope, budget
        self.target_type, self.columns = target_type, columns

    def __call__(self, y, first_row=0):
        from sparsekit.losses._targets import label_set_matrix, polytope_targets

        Y, _ = label_set_matrix(y)
        return polytope_targets(Y, self.polytope, self.budget, self.target_type, self.columns,
                                warn=False, first_row=first_row)


def _targets_and_weights(targets, y, sample_weight, first_row=0):
    """``(Y, w)``: a partition's ``targets`` of its ``y`` and its sample weights (None:
    ones) with 0 on the rows they leave out; ``first_row``: the partition's place in the
    data, for the errors."""
    Y, keep = targets(y, first_row)
    sw = np.ones(keep.size) if sample_weight is None else np.asarray(sample_weight,
                                                                     np.float64)
    return Y, np.where(keep, sw, 0.0)


def kept_weights(targets, y, sample_weight, first_row=0):
    """A partition's sample weights (None: ones) with 0 on the rows ``targets`` leaves
    out; a target outside the polytope is an error naming its row, counted from
    ``first_row``."""
    return _targets_and_weights(targets, y, sample_weight, first_row)[1]


class _FenchelYoungBlock:
    """One row partition's Fenchel-Young data term, built on its worker: its ``targets``
    (:class:`LabelTargets` or :class:`SetTargets`; the rows they leave out get weight 0) and
    its weights over the largest weight of all partitions. A dense partition of mostly
    zeros is held as its CSR copy, as a fit in memory holds such an X (:func:`fits_through_csr`)."""

    def __init__(self, X, y, sample_weight, top, targets):
        from sparsekit._cython._projections import POLYTOPE_CODES

        self.Y, sw = _targets_and_weights(targets, y, sample_weight)
        if sp.issparse(X):
            X = X.tocsr()
        elif fits_through_csr(X, self.Y.shape[1]):
            X = sparse_copy(X).tocsr()        # a Fortran-ordered block's copy is CSC
        self.X = X if sp.issparse(X) else np.ascontiguousarray(X)
        self.sw = (sw / top).astype(self.X.dtype)
        self.code, self.budget = POLYTOPE_CODES[targets.polytope], targets.budget
        self._term = None

    def __getstate__(self):           # the kernel closure is rebuilt where the block lands
        return {**self.__dict__, "_term": None}

    def totals(self):
        """(Σ sᵢ, Xᵀ s) in float64: the weighted mean's denominator and the feature mean's
        numerator."""
        s = self.sw.astype(np.float64)
        return float(s.sum()), np.asarray(self.X.T @ s, dtype=np.float64).ravel()

    def active_rows(self, W, b, polytope, scale, weight_scale):
        """The partition's :class:`ActiveRows` at the scores ``X W + b``."""
        return ActiveRows(self.X, self.X, self.sw, W, b, polytope, self.code, self.budget,
                          scale, weight_scale)

    def positive_entries(self, proba):
        """The :class:`~sparsekit.metrics._thresholds.PositiveEntries` of ``proba`` (the
        model's ``predict_proba``) on the partition's rows, against its targets."""
        n, k = self.Y.shape
        return PositiveEntries((proba(self.X[rows]), self.Y[rows], self.sw[rows])
                               for rows in row_slices(n, k))

    def __call__(self, W, b):
        from sparsekit.losses._fenchel_young_datafit import cpu_data_term

        if self._term is None:
            self._term = cpu_data_term(self.X, self.Y, self.sw, self.code, self.budget)
        loss, gW, gb = self._term(W, b)
        return float(loss), np.array(gW, dtype=np.float64), np.array(gb, dtype=np.float64)


def _largest_weight(sample_weight):
    return 1.0 if sample_weight is None else float(np.max(sample_weight, initial=0.0))


class DaskFenchelYoung(FenchelYoungLinear):
    """:class:`~sparsekit.losses._fenchel_young_datafit.FenchelYoungLinear` whose data term
    (the loss sum and its gradient) is the sum of the row partitions', computed on the
    workers that hold them; the weighted feature mean of the centered coordinates is a
    reduction too, and a Hessian product the sum of the partitions' active-row products.

    Parameters
    ----------
    rows : sparsekit.linear_model._dask_input.DaskRows
    targets : LabelTargets or SetTargets
        How each partition's targets are built from its ``y`` (they also give the
        polytope, its budget and the model's outputs).
    sample_weight : list of futures, default=None
        Each partition's weights; None: those of ``rows``.
    alpha, fit_intercept, penalize_intercept, offset, center, weight_scale
        As for :class:`FenchelYoungLinear`.
    """

    def __init__(self, rows, targets, sample_weight=None, *, alpha, fit_intercept,
                 penalize_intercept, offset=None, center, weight_scale=1.0):
        from sparsekit._cython._projections import POLYTOPE_CODES

        client = self._client = rows.client
        self.X = self.Y = self.sw = self.X_rows = None
        self.weight_scale = checked_scale(weight_scale)
        self.dtype = rows.dtype
        polytope = targets.polytope
        self.polytope, self.code, self.budget = polytope, POLYTOPE_CODES[polytope], \
            targets.budget
        self.alpha = float(alpha)
        self.fit_intercept, self.penalize_intercept = fit_intercept, penalize_intercept
        self.n_features, self.n_classes = rows.n_features, targets.n_outputs
        self.offset = np.zeros(self.n_classes) if offset is None else offset
        weights = rows.sample_weight if sample_weight is None else sample_weight
        top = max(rows.map(_largest_weight, weights))
        if not top > 0:
            raise ValueError("The sample weights of the rows used in the fit sum to zero.")
        self._groups = finished(build_groups(client, rows.layout, np.ones(len(rows.X)),
                                             _FenchelYoungBlock, rows.X, rows.y, weights,
                                             args=(top, targets)))
        total, X_sum = summed(client, self._groups, "totals", weighted=False)
        if not total > 0:
            raise ValueError("The sample weights of the rows used in the fit sum to zero.")
        self.scale = 1.0 / total
        self.center = X_sum * self.scale if center else None
        # a function of the client and groups, not a method bound to self: an instance
        # holding its own bound method is a reference cycle, which would keep the
        # partitions' blocks on the workers until the cyclic garbage collector runs
        self._data_term = partial(_summed_data_term, client, self._groups)

    def hessp_at(self, theta):
        """``(v -> H v, n_active)`` with each partition's active rows kept on its worker:
        a product sends (V, c) and gathers one (d, K) block per worker thread."""
        client = self._client
        W, b = self.from_solver(theta)
        W, b = (shared_argument(client, a, len(self._groups))
                for a in (np.ascontiguousarray(W), b + self.offset))
        rows = [client.submit(_call, g, "each", "active_rows", W, b, self.polytope,
                              self.scale, self.weight_scale, pure=False)
                for g in self._groups]
        n_active = sum(client.gather([client.submit(_summed_attribute, r, "n_active")
                                      for r in rows]))

        def product(V, c):
            return summed(client, rows, "product", np.ascontiguousarray(V), np.asarray(c))
        return self.combine_hessp(product), int(n_active)


    def micro_f1_threshold(self, proba):
        """The decision threshold of label sets with the best micro-F1 on the fit's rows
        (:func:`~sparsekit.metrics._thresholds.threshold_search`) under ``proba`` (the
        model's ``predict_proba``): each partition's positive entries stay on its worker,
        whence the summed histograms of their values and the entries of the value ranges
        where the best cut can lie come back."""
        client = self._client
        proba = client.scatter(proba, broadcast=True, hash=False)
        entries = [client.submit(_call, g, "each", "positive_entries", proba, pure=False)
                   for g in self._groups]

        def each(func, args):   # func(part's entries, arg) for every arg, one task a group
            groups = client.gather([client.submit(_over_parts, func, e, args, pure=False)
                                    for e in entries])
            return list(zip(*(part for group in groups for part in group)))

        def histograms(edges):
            return [summed_histogram(h) for h in each(_histograms, edges)]

        def takes(ranges):
            return [merged_entries(e) for e in each(_takes, ranges)]
        n_true = sum(client.gather([client.submit(_summed_attribute, e, "n_true")
                                    for e in entries]))
        return threshold_search(n_true, histograms, takes)


def _histograms(entries, edges):
    return [entries.histogram(e) for e in edges]


def _takes(entries, ranges):
    return [entries.take(lo, hi) for lo, hi in ranges]


def _over_parts(func, group, args):
    return [func(part, args) for part in group.parts]


def _summed_attribute(group, name):
    return sum(getattr(part, name) for part in group.parts)


def _summed_data_term(client, groups, W, b, out=None):
    """The data term of :class:`DaskFenchelYoung`: (loss, ∇_W, ∇_b) summed over the
    partitions' blocks (∇_W written to ``out`` when given)."""
    loss, gW, gb = summed(client, groups, "__call__", np.asarray(W), np.asarray(b))
    return float(loss), written(gW, out), gb
