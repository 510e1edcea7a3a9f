"""The data of an ℓ1 logistic fit laid out once for its solves: in memory, on a dask
cluster or on the GPU, each problem's datafit (binary or multinomial) made from that
layout, and the memory the multinomial solve needs, checked before it starts."""
from functools import partial

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _check_sample_weight

from sparsekit.gpu._cupy import require_cupy
from sparsekit.gpu.datafits import DeviceLogistic, DeviceMultinomial, is_device_matrix
from sparsekit.linear_model._base import check_labels
from sparsekit.linear_model._dask_input import DaskRows
from sparsekit.linear_model._device_input import device_column_stats
from sparsekit.linear_model._l1_advice import solve_advice
from sparsekit.losses._logistic_datafit import Logistic
from sparsekit.losses._multinomial_datafit import Multinomial
from sparsekit.utils._centering import (center_stride, column_moments, column_shifts,
                                         far_shifts)
from sparsekit.utils._columns import UsedColumns
from sparsekit.utils._rows import (mostly_zeros, sparse_copy, unit_power,
                                   weighted_column_stats)
from sparsekit.utils._threads import cpu_threads
from sparsekit.utils._validation import (check_entry_magnitude, check_two_classes,
                                         physical_memory, validate_input)


#: float64 arrays of the weights' size, and of rows x classes, that the multinomial fit
#: holds at its peak from its first iteration on while its free sets stay small: the
#: point, its gradient and a trial point's, the trial point (and the ISTA point where a
#: step slides back to it), the penalty weights and the solver's sets; the scores,
#: probabilities, residuals and curvature weights (doc/benchmarks.md, "L1LogisticOBA: the
#: memory of the multinomial fit": 11.1-12.8 of the weights at C = 1, 12.9-13.8 on
#: 53.6 MiB models at C = 10 and 1000). More where the free set holds many weights (the
#: subspace step's vectors have its size) and, on small models, the solver's work areas of
#: bounded size (the class blocks): the check refuses the fits that cannot fit, not every
#: fit that will not.
MULTINOMIAL_ARRAYS = {"weights": 14, "rows": 6}


def multinomial_within_memory(n_rows, n_columns, n_classes, fit_intercept, kept=0,
                              solves=1):
    """A ValueError, before the fit starts, where the arrays of ``solves`` multinomial
    solves at a time (:data:`MULTINOMIAL_ARRAYS` each), with ``kept`` solutions that the
    caller holds beside them (a path's, a cross-validation's), would not fit in this
    machine's memory: the process would otherwise be killed for memory, or swap, during
    the fit."""
    memory = physical_memory()
    weights = 8.0 * (n_columns + fit_intercept) * n_classes
    arrays = solves * MULTINOMIAL_ARRAYS["weights"] + kept
    rows = solves * MULTINOMIAL_ARRAYS["rows"]
    need = arrays * weights + rows * 8.0 * n_rows * n_classes
    if memory is not None and need > memory:
        at_once = f" ({solves} solves at a time: fewer n_jobs run fewer)" if solves > 1 else ""
        held = (f", {kept:,} of them the solutions kept (fewer C values keep fewer)," if kept
                else "")
        raise ValueError(
            f"the multinomial fit{at_once} would hold at least {need / 2**30:.1f} GiB, "
            f"about {arrays:,} arrays of its {weights / 2**20:,.0f} MiB of weights "
            f"({n_columns:,} columns x {n_classes} classes){held} and {rows} of "
            f"{n_rows:,} rows x {n_classes} classes, more than this machine's "
            f"{memory / 2**30:.1f} GiB: use multiclass='ovr', whose problems hold arrays of one "
            "class's weights (sparse_coef=True stores coef_'s nonzeros only), or hash the "
            "features to fewer columns")


def binary_block(pos, fit_intercept, X, codes, sample_weight, X_csr=None, offsets=None,
                 n_threads=1, scale=1.0):
    """The binary datafit of class index ``pos`` against the rest (on the data, or on one
    row partition of it); ``X_csr`` a CSR copy of X shared by several problems, ``offsets``
    those :func:`layouts` subtracted from X's columns and ``scale`` the power of two it
    multiplied them by, ``n_threads`` those of its kernels (a sparse X's)."""
    datafit = Logistic(X, np.where(codes == pos, 1.0, -1.0), sample_weight=sample_weight,
                       fit_intercept=fit_intercept, X_csr=X_csr, n_threads=n_threads)
    datafit.offsets, datafit.scale = offsets, scale
    return datafit


def multinomial_block(n_classes, fit_intercept, X, codes, sample_weight, n_threads=1,
                      offsets=None, X_csr=None, scale=1.0):
    """The multinomial datafit (on the data, or on one row partition of it); ``offsets``
    those :func:`layouts` subtracted from X's columns and ``scale`` the power of two it
    multiplied them by, ``X_csr`` its CSR layout or None."""
    datafit = Multinomial(X, codes, n_classes, sample_weight=sample_weight,
                          n_threads=n_threads, fit_intercept=fit_intercept, X_csr=X_csr)
    datafit.offsets, datafit.scale = offsets, scale
    return datafit


def device_layout(X, sample_weight, fit_intercept, owned=False):
    """(device X in float64, the device datafits' precision: one copy for every problem;
    the offsets subtracted from its columns or None; the power of two they were then
    multiplied by): with a free intercept, the dense columns far from 0 are centered as on
    the CPU (:mod:`~sparsekit.utils._centering`, on the device; a sparse X is not), and X
    is solved in units near 1 as :func:`layouts` solves it (:func:`unit_power` of the
    centered X's column sums, taken on the device). ``owned``: X is the fit's own copy (host
    X moved to the device), whose float64 entries are then centered and scaled in place
    rather than in a second copy: device memory is scarce."""
    X64 = X if X.dtype == np.float64 else X.astype(np.float64)
    mine = owned or X64 is not X                 # entries this fit may change in place
    shifts = None
    if fit_intercept and not hasattr(X, "tocsr"):
        cp = require_cupy()
        weights = cp.asarray(np.asarray(sample_weight, dtype=np.float64))
        shifts = far_shifts(column_moments(X64, weights, center_stride(X.shape[0])), X.dtype)
        if shifts is not None and mine:
            X64 -= cp.asarray(shifts)
        elif shifts is not None:
            X64, mine = X64 - cp.asarray(shifts), True
    scale = unit_power(*device_column_stats(X64), np.float64)
    if scale != 1.0 and not mine:
        X64 = X64 * scale
    elif scale != 1.0 and hasattr(X64, "tocsr"):
        X64.data *= scale
    elif scale != 1.0:
        X64 *= scale
    return X64, shifts, scale


def device_block(n_classes, fit_intercept, X, codes, sample_weight, shared, pos, *,
                 offsets=None, scale=1.0):
    """The device datafit of class index ``pos`` against the rest, or (``pos`` None) the
    multinomial one, on float64 device X; ``shared`` holds what the one-vs-rest datafits of
    the same X share, ``offsets`` those :func:`device_layout` subtracted from X's
    columns and ``scale`` the power of two it multiplied them by."""
    if pos is None:
        datafit = DeviceMultinomial(X, codes, n_classes, sample_weight=sample_weight,
                                    fit_intercept=fit_intercept)
    else:
        datafit = DeviceLogistic(X, np.where(codes == pos, 1.0, -1.0),
                                 sample_weight=sample_weight, fit_intercept=fit_intercept,
                                 shared=shared)
    datafit.offsets, datafit.scale = offsets, scale
    return datafit


def unit_mean_weights(sample_weight):
    """The weights divided by their mean, and that mean: with weights of mean 1 the solver's
    f (the weighted mean loss) and so its ``tol`` do not depend on how the weights are
    scaled; C times the mean keeps the objective."""
    top = float(np.max(sample_weight, initial=0.0))
    mean = top * float(np.mean(sample_weight / top)) if top > 0 else 0.0  # no overflow
    if not mean > 0:
        raise ValueError("every sample has weight 0 (sample_weight times class_weight)")
    return sample_weight / mean, mean


def layouts(X, n_problems=1, sample_weight=None, fit_intercept=False, rescale=False):
    """:func:`column_layout`'s ``(X, X_csr)``, the offsets subtracted from X's columns
    (or None): with a free intercept, those of its columns stored in every row that lie far
    from 0 against their spread (:func:`~sparsekit.utils._centering.column_shifts`), and,
    with ``rescale``, the power of two the columns were then multiplied by
    (:func:`~sparsekit.utils._rows.unit_power` of the centered X; else 1)."""
    offsets = column_shifts(X, sample_weight) if fit_intercept else None
    X_solved, X_csr = column_layout(X, n_problems, offsets)
    scale = unit_power(*weighted_column_stats(X_solved), X_solved.dtype) if rescale else 1.0
    if scale != 1.0:
        X_solved, X_csr = _scaled_layout(X, X_solved, X_csr, scale)
    return X_solved, X_csr, offsets, scale


def _scaled_layout(X, X_solved, X_csr, scale):
    """:func:`column_layout`'s ``(X_solved, X_csr)`` of the user's ``X`` times ``scale``:
    in place where they are copies already, copied where they hold X's own entries."""
    factor = X_solved.dtype.type(scale)
    if sp.issparse(X_solved):
        if sp.issparse(X) and np.may_share_memory(X_solved.data, X.data):
            X_solved = X_solved.copy()
        X_solved.data *= factor
        if X_csr is not None:
            if sp.issparse(X) and np.may_share_memory(X_csr.data, X.data):
                X_csr = X_solved.tocsr()
            else:
                X_csr.data *= factor
        return X_solved, X_csr
    if not sp.issparse(X) and np.may_share_memory(X_solved, X):
        return np.multiply(X_solved, factor, order="F"), X_csr
    X_solved *= factor
    return X_solved, X_csr


def dask_layouts(data, n_problems, weights, fit_intercept):
    """(futures of every partition's :func:`column_layout` for ``n_problems``, made once
    for them on the worker that holds it, the offsets subtracted from X's columns or None,
    and the power of two they were then multiplied by) of dask rows ``data``, as
    :func:`layouts` makes them in memory (the shifts from the partitions' moments,
    weighted by ``weights``: futures, or None for the sample weights; the power from the
    laid-out partitions' column sums)."""
    offsets = data.column_shifts(weights) if fit_intercept else None
    parts = data.placed(column_layout, n_problems, offsets)
    squares, counts = np.sum(data.map(_layout_stats, parts), axis=0)
    scale = unit_power(squares, counts, data.dtype)
    if scale != 1.0:     # new layouts: a partition's may hold its block's entries
        parts = data.placed_with(_scaled_part, parts, scale)
    return parts, offsets, scale


def _layout_stats(layout):
    """unweighted :func:`~sparsekit.utils._rows.weighted_column_stats` of a partition's
    layout, as one array."""
    return np.stack(weighted_column_stats(layout[0]))


def _scaled_part(layout, scale):
    """A copy of a partition's layout ``(X, X_csr)`` times ``scale``."""
    X, X_csr = layout
    factor = X.dtype.type(scale)
    X = X * factor if sp.issparse(X) else np.multiply(X, factor, order="F")
    return X, None if X_csr is None else X_csr * factor


def partition_block(pos, n_classes, fit_intercept):
    """``make(layout, codes, sample_weight)``: the datafit of problem ``pos`` (None: the
    multinomial one) on one dask partition's :func:`column_layout`."""
    if pos is None:
        return partial(_multinomial_on_layout, n_classes, fit_intercept)
    return partial(_binary_on_layout, pos, fit_intercept)


def _binary_on_layout(pos, fit_intercept, layout, codes, sample_weight):
    """:func:`binary_block` on a partition's ``layout`` (X and its CSR copy or None)."""
    X, X_csr = layout
    return binary_block(pos, fit_intercept, X, codes, sample_weight, X_csr)


def _multinomial_on_layout(n_classes, fit_intercept, layout, codes, sample_weight):
    """:func:`multinomial_block` on a partition's ``layout`` (X and its CSR layout or
    None)."""
    X, X_csr = layout
    return multinomial_block(n_classes, fit_intercept, X, codes, sample_weight, X_csr=X_csr)


def column_layout(X, n_problems=1, shifts=None):
    """(X for the datafits less ``shifts``: CSC when sparse, Fortran-ordered when dense; a
    CSR copy or None), made once for a fit's problems (or a dask partition's): the
    datafits walk columns and form explicit Hessians from rows, so a CSR input is kept
    rather than rebuilt, a one-vs-rest fit of several problems builds one CSR copy for all
    of them unless X is too wide to walk rows, a C-ordered dense X is copied once (each
    datafit would otherwise make its own copies), and a dense X of at most
    SPARSE_COPY_DENSITY nonzero entries (after the shifts) is solved as its sparse copy, as
    a sparse X of the same layout would be (CSR when C-ordered, kept; CSC when not)."""
    if not sp.issparse(X):
        if shifts is not None:
            X = np.subtract(X, shifts.astype(X.dtype), order="F")
        if not mostly_zeros(X):
            return np.asfortranarray(X), None
        X, shifts = sparse_copy(X), None      # the shifts are subtracted already
    if shifts is not None:
        return _shifted_sparse(X, n_problems, shifts)
    if X.format == "csr" and X.has_canonical_format:
        return X.tocsc(), X
    X = X.tocsc()
    if n_problems > 1 and X.shape[1] <= Logistic.max_walk_columns:
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        return X, X.tocsr()
    return X, None


def _shifted_sparse(X, n_problems, shifts):
    """:func:`column_layout` of sparse X less ``shifts``, which are 0 but on columns that
    store an entry in every row (so that X's structure stays): copies in CSC and, for
    several problems or from CSR input, CSR."""
    shifts = shifts.astype(X.dtype)
    X_csc = X.tocsc(copy=True)
    X_csc.sum_duplicates()                      # one entry per row of a shifted column
    X_csc.data -= np.repeat(shifts, np.diff(X_csc.indptr))
    rows = X.format == "csr" or n_problems > 1 and X.shape[1] <= Logistic.max_walk_columns
    return X_csc, X_csc.tocsr() if rows else None


def check_fit_data(estimator, X, y, sample_weight, reset=True):
    X, y = validate_input(estimator, X, y, accept_sparse=["csr", "csc"],
                         dtype=[np.float64, np.float32], reset=reset)
    check_entry_magnitude(X, np.float64)
    sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64,
                                         ensure_non_negative=True)
    return X, y, sample_weight


def problem_count(multiclass, n_classes):
    """How many problems a fit of ``n_classes`` solves: one (multinomial, or two classes),
    or one per class (one-vs-rest)."""
    return 1 if multiclass == "multinomial" or n_classes == 2 else n_classes


class MemoryProblems:
    """In-memory data of a fit, ready for its solves: X's used columns laid out once for
    every problem (:func:`layouts`, in units of entries near 1),
    the labels' codes, the weights of mean 1 (times ``class_weight``) and the solver's C
    per unit of the estimator's (``c_factor``: that mean over the power of two X was
    multiplied by). ``n_problems``: how many problems the layout serves (None: the fit's,
    one-vs-rest or one).

    Sets the estimator's ``classes_`` (and what scikit-learn's validation sets)."""

    def __init__(self, est, X, y, sample_weight, n_problems=None):
        X, y, sample_weight = check_fit_data(est, X, y, sample_weight)
        self.codes = est._encode_labels(y)
        self.classes = est.classes_
        self.weights, mean_weight = unit_mean_weights(
            est._class_weighted(sample_weight, self.codes))
        self.columns = UsedColumns(X)
        self.n_problems = n_problems or problem_count(est.multiclass, self.classes.size)
        self.X, self.X_csr, self.offsets, self.scale = layouts(
            self.columns.take(X), self.n_problems, self.weights, est.fit_intercept,
            rescale=True)
        self.c_factor = mean_weight / self.scale
        self.dtype, self.n_samples = self.X.dtype, self.X.shape[0]
        self.fit_intercept, self.n_threads = est.fit_intercept, cpu_threads(est.n_jobs)

    def datafit(self, pos):
        """The datafit of the binary problem of class ``pos`` (its index in the classes)
        against the others, or of the multinomial problem (None); the n_jobs threads go to
        its kernels when it is the fit's one problem (one-vs-rest problems run in threads
        of their own)."""
        if pos is None:
            return multinomial_block(self.classes.size, self.fit_intercept, self.X,
                                     self.codes, self.weights, self.n_threads, self.offsets,
                                     self.X_csr, self.scale)
        return binary_block(pos, self.fit_intercept, self.X, self.codes, self.weights,
                            self.X_csr, self.offsets,
                            self.n_threads if self.n_problems == 1 else 1, self.scale)

    def advice(self):
        """:func:`solve_advice` of the solved X (in the user's units)."""
        return solve_advice(self.X, self.weights, self.scale)


class DaskProblems:
    """Dask arrays: X's row partitions laid out once for every problem on the workers that
    hold them (:func:`dask_layouts`; ``n_problems`` as :class:`MemoryProblems` takes
    it), each problem's datafit the sum of theirs; X's scale and ``c_factor`` as
    :class:`MemoryProblems` has them.

    Sets the estimator's ``classes_`` and ``n_features_in_``."""

    def __init__(self, est, X, y, sample_weight, n_problems=None):
        self.data = data = DaskRows(X, y, sample_weight, [np.float64, np.float32])
        est.__dict__.pop("feature_names_in_", None)
        est.n_features_in_ = data.n_features
        est.classes_ = self.classes = data.classes()
        check_labels(self.classes)
        check_two_classes(self.classes)
        totals = data.class_totals(self.classes)
        cw = est._class_weights(self.classes, totals)
        self.c_factor = float(cw @ totals) / data.n_samples
        if not self.c_factor > 0:
            raise ValueError("every sample has weight 0 (sample_weight times class_weight)")
        self.weights = data.weights(self.classes, cw, self.c_factor)  # of every problem
        self.columns = UsedColumns(X, keep_all=True)    # as the partitions' datafits
        self.parts, self.offsets, self.scale = dask_layouts(
            data, n_problems or problem_count(est.multiclass, self.classes.size),
            self.weights, est.fit_intercept)
        self.c_factor /= self.scale
        self.dtype, self.n_samples = data.dtype, data.n_samples
        self.fit_intercept = est.fit_intercept

    def datafit(self, pos):
        """:meth:`MemoryProblems.datafit` on the partitions."""
        return self.data.datafit(partition_block(pos, self.classes.size, self.fit_intercept),
                                 self.classes, weights=self.weights, parts=self.parts,
                                 offsets=self.offsets, scale=self.scale)

    def advice(self):
        """:func:`solve_advice` of X's partitions."""
        return solve_advice(self.data, self.weights)


class DeviceProblems:
    """X on the GPU (a CuPy array or cupyx sparse matrix, or host X moved there once) laid
    out for the device datafits (:func:`device_layout`: host X in place, so that the
    device holds one copy of it); the labels' codes, weights and ``c_factor`` as
    :class:`MemoryProblems` has them, on the host.

    Sets the estimator's ``classes_`` and ``n_features_in_`` (and what scikit-learn's
    validation sets for host X). ``n_problems`` changes nothing here (the layout is
    every problem's)."""

    def __init__(self, est, X, y, sample_weight, n_problems=None):
        owned = not is_device_matrix(X)                 # moved to the device by this fit
        X, y, sample_weight = est._device_fit_data(X, y, sample_weight)
        codes = est._encode_labels(y)
        self.classes = est.classes_
        self.weights, self.c_factor = unit_mean_weights(
            est._class_weighted(sample_weight, codes))
        self.columns = UsedColumns(X, keep_all=True)   # the device datafits see all
        self.dtype, self.n_samples = X.dtype, X.shape[0]
        self.X, offsets, self.scale = device_layout(X, self.weights, est.fit_intercept,
                                                    owned)
        self.c_factor /= self.scale
        self.datafit = partial(device_block, self.classes.size, est.fit_intercept,
                               self.X, codes, self.weights, {}, offsets=offsets,
                               scale=self.scale)

    def advice(self):
        """:func:`solve_advice` of the solved X (in the user's units), on the device, as
        :meth:`MemoryProblems.advice`."""
        return solve_advice(self.X, self.weights, self.scale)
