"""Passes of the softmax SGD methods over rows: what an epoch needs around the drivers.

:class:`SoftmaxPasses` runs one pass of a method (sampled softmax, NCE, Implicit SGD,
U-max, One-vs-Each, vanilla SGD on the double sum) over the rows of :class:`SGDRows`,
updating a softmax model's weights ``R`` (K, D + bias) in place: it sets the step's
per-pass quantities (the ridge's class weights and bounds), picks the driver (the
one-thread Cython driver, its lock-free OpenMP twin for ``n_jobs`` threads or hashed
weights, or the CuPy kernels) and folds the ridge's lazy scales back into ``R``.
:func:`initial_rate` is ``learning_rate="auto"``'s step, :class:`EpochMean` the mean of the
last epochs' weights (``average``). The epochs, their history and the scikit-learn plumbing
are :class:`~sparsekit.ExtremeSoftmaxSGD`'s.
"""
import time
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .._cython._softmax_sgd import METHODS, softmax_epoch, softmax_epoch_parallel
from ..gpu._cupy import require_cupy
from ..gpu.softmax_sgd import DeviceRows, softmax_epoch_gpu
from ..utils._rows import mostly_zeros, row_sq_norms, sparse_copy
from ..utils._threads import openmp_call, threads_for

#: The smallest normal double: a smaller step is zero in the passes, which flush subnormals.
DOUBLE_TINY = float(np.finfo(np.float64).tiny)

#: ``learning_rate="auto"``: eta_0 = AUTO_RATE[method] / median squared row norm (the
#: intercept's constant feature included), chosen on development splits (doc/benchmarks.md,
#: "choosing the defaults"): the proximal step of Implicit SGD is stable at any rate and
#: gains from a large one; the biased sampled losses take moderate steps; the explicit steps
#: on the double sum and the One-vs-Each bound diverge beyond a few tenths of ``eta ||x||^2``
AUTO_RATE = {"implicit": 6.0, "sampled_softmax": 4.0, "nce": 4.0, "umax": 0.6}
AUTO_RATE_EXPLICIT = 0.2

#: with an intercept, ``learning_rate="auto"`` warns when the rows' median squared norm is
#: below this: the intercept's constant feature 1 then sets the rate and the weights move
#: that many times more slowly (scikit-learn's digits / 16 scaled to a median of 0.15
#: reaches 0.967 test accuracy, to 0.014 0.917, to 0.0015 0.406; a9a's 0/1 rows at 0.0014
#: 0.838, at 1.4e-5 the class frequencies' 0.759)
SHORT_ROWS = 0.05

#: the parallel driver takes a thread per this many rows of a pass
ROWS_PER_THREAD = 1000


class SGDRows(NamedTuple):
    """Rows as the drivers read them: CSR arrays (``data``, ``indices``, ``indptr``) or,
    when ``dense``, a C-ordered array flattened into ``data``; ``xsq`` the float64 squared
    norms of the rows (+1 for the intercept's constant feature)."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    dense: bool
    n_features: int
    xsq: np.ndarray

    @classmethod
    def of(cls, X, dtype, bias):
        """The rows of a validated dense or sparse X in ``dtype`` (never reordering the
        caller's arrays); a dense X of at most SPARSE_COPY_DENSITY nonzero entries as its
        CSR copy."""
        if not sp.issparse(X):
            X = np.ascontiguousarray(X, dtype=dtype)
            if mostly_zeros(X):
                X = sparse_copy(X)
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=dtype)
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            data = np.ascontiguousarray(X.data)
            indices = np.ascontiguousarray(X.indices)     # int32 or int64, as given
            indptr = np.ascontiguousarray(X.indptr)
            dense = False
        else:
            data = X.ravel()
            indices = indptr = np.zeros(1, dtype=np.intp)
            dense = True
        xsq = row_sq_norms(X)     # float64: float32 squares overflow
        return cls(data, indices, indptr, dense, X.shape[1], xsq + 1.0 if bias else xsq)

    def stored(self):
        """The entries the rows store (all of them for dense rows)."""
        return self.data.size if self.dense else int(self.indptr[-1] - self.indptr[0])

    def matrix(self):
        """The rows as a dense array or a CSR matrix again (sharing the arrays)."""
        shape = (self.xsq.shape[0], self.n_features)
        return (self.data.reshape(shape) if self.dense
                else sp.csr_matrix((self.data, self.indices, self.indptr), shape=shape))


def weighted_median(values, weights):
    """The median of ``values`` under the nonnegative ``weights`` (positive sum)."""
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(values[order[np.searchsorted(cumulative, 0.5 * cumulative[-1])]])


def initial_rate(method, xsq, sample_weight, fit_intercept):
    """``learning_rate="auto"``'s eta_0: the method's rate over the median of the steps'
    scales ``w_i ||x_i||^2`` (intercept included; weighted as the rows are, so that a
    weight-0 row, or an empty row without the intercept, which makes no step, is a row
    left out; a median, so that a few huge rows do not stall the others): with unit
    weights the median squared row norm, and the same steps whatever the weights' common
    scale. Warns when the rows are so short that the intercept's constant feature sets
    the step."""
    rate = AUTO_RATE.get(method, AUTO_RATE_EXPLICIT)
    sample_weight = np.where(xsq > 0, sample_weight, 0.0)
    if not sample_weight.size or not sample_weight.sum() > 0:
        return rate
    median = weighted_median(xsq, sample_weight)
    if fit_intercept and median - 1.0 < SHORT_ROWS:   # xsq counts the intercept's 1
        warnings.warn(
            f"The rows of X have a median squared norm of {median - 1.0:.3g}: with "
            "learning_rate='auto' the intercept's constant feature 1 sets the step, and "
            "the weights learn that many times more slowly, possibly not beyond the class "
            "frequencies. Rescale X (e.g. sklearn.preprocessing.Normalizer or "
            "StandardScaler) or give learning_rate.", UserWarning)
    top = float(sample_weight.max())   # w_i ||x_i||^2 over double's range with weights ~1e300
    scale = weighted_median(xsq * (sample_weight / top), sample_weight)
    return rate / scale / top if scale > 0 else rate


class EpochMean:
    """The running sum of the weights at the ends of the epochs from ``start`` (0-based)
    on, in the weights' dtype (``average``)."""

    def __init__(self, start):
        self.start, self.count, self.total = start, 0, None

    def add(self, epoch, R):
        if epoch < self.start:
            return
        if self.total is None:
            self.total = R.copy()
        else:
            with np.errstate(over="ignore"):      # fit tells an infinite mean's overflow
                np.add(self.total, R, out=self.total)
        self.count += 1

    def mean(self):
        """The mean (the running sum's array, divided in place)."""
        self.total /= self.count
        return self.total


def _timed(fn, *args, **kwargs):
    """(``fn(*args, **kwargs)``, the CPU seconds of the calling thread it took)."""
    c0 = time.thread_time()
    result = fn(*args, **kwargs)
    return result, time.thread_time() - c0


class SoftmaxPasses:
    """Passes of one SGD method over rows, each updating the weights ``R`` in place.

    Parameters mirror :class:`~sparsekit.ExtremeSoftmaxSGD`'s (``exclude_true`` is
    ``not sample_true_class``); ``bias`` says whether ``R``'s last column is the
    intercept's, ``n_weights`` (None: dense weights) the size of a hashed table, which
    ``R``'s one row holds before one intercept per class slot. A device pass keeps the
    rows and the weights on the GPU between passes over the same :class:`SGDRows` while
    the host weights are the same array.
    """

    def __init__(self, method, *, n_sampled=5, batch_size=1, delta=1.0, alpha=0.0,
                 exclude_true=True, shared_classes=False, n_jobs=None, device="cpu",
                 bias=True, n_weights=None):
        self.method = method
        self.n_sampled = n_sampled
        self.batch_size = batch_size
        self.delta = float(delta)
        self.alpha = float(alpha)
        self.exclude_true = exclude_true
        self.shared_classes = shared_classes
        self.n_jobs = n_jobs
        self.device = device
        self.bias = bool(bias)
        self.n_weights = n_weights
        self._device_state = None

    def threads(self, n_rows):
        """Threads for a pass over ``n_rows`` rows: ``n_jobs`` (joblib's convention, at
        most the CPUs and one per ``ROWS_PER_THREAD`` rows) where the parallel driver
        applies (one example a step, no ridge, classes drawn per example among the wrong
        ones), else 1."""
        if (self.batch_size != 1 or self.alpha > 0 or self.shared_classes
                or not self.exclude_true):
            return 1
        return threads_for(self.n_jobs, n_rows // ROWS_PER_THREAD)

    def may_overflow(self):
        """Whether a pass can end in a non-finite value: every method but Implicit SGD with
        one example per step (a proximal step stays finite; a batch's sum of them need
        not)."""
        return self.method != "implicit" or self.batch_size > 1

    def undo_is_cheaper(self, R, rows, n_classes):
        """How a pass over ``rows`` that may fail should keep ``R`` for a rollback: None if
        it leaves ``R`` as it was when it fails (Implicit SGD's proximal steps stay finite;
        a device pass writes the host weights only once it stayed finite); True to log the
        entries it writes (the one-thread driver's ``undo``), when that log takes fewer
        bytes than ``R``; False for a copy of ``R`` (also for the parallel and the hashed
        driver, which keep no log)."""
        if not self.may_overflow() or self.device == "cuda":
            return None
        n = rows.xsq.shape[0]
        if self.n_weights is not None or self.threads(n) > 1:
            return False
        m = min(self.n_sampled, n_classes - 1)
        written = (m + 1) * (rows.stored() + n * self.bias)
        return 16 * written < R.nbytes

    def run(self, R, rows, y, sample_weight, u, eta, order, seed, *, slots=None,
            undo=False):
        """One pass over the rows ``order`` of ``rows`` with step ``eta``.

        ``y`` holds the rows' class indices, ``u`` their bounds on the log-normalizer
        (updated in place), ``slots`` the classes' slots in a hashed table. A row of
        weight 0 is left out (of the class frequencies too). With ``undo`` a failed pass
        puts ``R`` back as it was (the one-thread driver only). Returns (status: 0, or 1
        when a non-finite value appeared, wall seconds, CPU seconds of the calling
        thread).
        """
        if sample_weight.min(initial=1.0) <= 0.0:
            order = order[sample_weight[order] > 0.0]
        alpha, top = self.alpha, sample_weight.max(initial=0.0)
        if 0.0 < eta < DOUBLE_TINY and top > 1.0:
            # the passes flush subnormals to zero: a subnormal step (learning_rate="auto"
            # over weights ~1e300) would train nothing; the same steps eta w_i and ridge
            # factors eta alpha from a normal one
            eta, sample_weight, alpha = eta * top, sample_weight / top, alpha / top
        K = len(slots) if self.n_weights is not None else R.shape[0]
        m = min(self.n_sampled, K - 1)
        # a batch larger than the pass is the pass, one step over all its rows: the
        # kernels' buffers are sized by the rows there are, not by batch_size
        batch = max(1, min(self.batch_size, len(order)))
        threads = self.threads(len(order))
        t0 = time.perf_counter()
        if self.device == "cuda":
            status, cpu = _timed(self._device_pass, R, rows, y, sample_weight, u, eta,
                                 order, m, batch, seed)
        elif threads > 1 or self.n_weights is not None:
            (status, _), cpu = openmp_call(
                threads, _timed, softmax_epoch_parallel, METHODS[self.method], rows.data,
                rows.indices, rows.indptr, rows.dense, rows.n_features, self.bias, y,
                sample_weight, rows.xsq, R, u, order, m, eta, self.delta, np.inf, seed,
                threads, n_weights=self.n_weights or 0, slots=slots)
        else:
            status, cpu = self._ridge_pass(R, rows, y, sample_weight, u, eta, alpha, order,
                                           m, batch, seed, undo)
        return status, time.perf_counter() - t0, cpu

    def _ridge_pass(self, R, rows, y, sample_weight, u, eta, alpha, order, m, batch, seed,
                    undo):
        """The one-thread driver: with ``alpha > 0`` the ridge's weights of the classes
        and the bounds on the weights and on u come from the rows the pass visits, and its
        lazy scales are folded into ``R`` after a pass that stayed finite; ``alpha`` is the
        kernel's (``self.alpha`` over the weights' scale where :meth:`run` moved it into
        ``eta``)."""
        K = R.shape[0]
        counts = np.bincount(y[order], minlength=K) / max(len(order), 1)
        beta = 1.0 / (counts + (1.0 - counts) * m / (K - 1))
        gamma = np.ones(K)
        if self.alpha > 0:
            bound_w = np.sqrt(2.0 * np.log(K) / self.alpha)
            bound_x = np.sqrt(rows.xsq[order].max(initial=0.0))
            bound_u = np.logaddexp(0.0, np.log(K - 1) + 2.0 * bound_x * bound_w)
            sqn = np.full(K, -1.0)  # U-max's row norms: the driver computes them on first touch
        else:
            bound_w = bound_u = np.inf
            sqn = np.zeros(1)
        (status, _), cpu = _timed(
            softmax_epoch, METHODS[self.method], rows.data, rows.indices, rows.indptr,
            rows.dense, rows.n_features, self.bias, y, sample_weight, rows.xsq, R, gamma,
            sqn, u, beta, order, m, batch, eta, alpha, self.delta, bound_w,
            bound_u, seed, exclude_true=self.exclude_true,
            shared_classes=self.shared_classes and self.batch_size > 1, undo=undo)
        if not status and self.alpha > 0:
            touched = np.flatnonzero(gamma != 1.0)
            R[touched] *= gamma[touched, None].astype(R.dtype)
        return status, cpu

    def _device_pass(self, R, rows, y, sample_weight, u, eta, order, m, batch, seed):
        """A pass on the GPU (:func:`sparsekit.gpu.softmax_sgd.softmax_epoch_gpu`); the
        weights and u come back to the host only if the pass stayed finite."""
        cp = require_cupy()
        state = self._device_state
        if state is None or state["rows"] is not rows:
            state = self._device_state = {"rows": rows, "device_rows": DeviceRows(
                rows.matrix(), R.dtype), "host": None, "weights": None}
        R_device = state["weights"] if state["host"] is R else cp.asarray(R)
        u_device = cp.asarray(u)
        status = softmax_epoch_gpu(self.method, state["device_rows"], self.bias, y,
                                   sample_weight, R_device, u_device, order, m,
                                   batch, eta, self.delta, np.inf, seed,
                                   exclude_true=self.exclude_true)
        if status:
            state["host"] = state["weights"] = None      # the device copy is garbage now
        else:
            R[...] = R_device.get()
            u[:] = u_device.get()
            state["host"], state["weights"] = R, R_device
        return status
