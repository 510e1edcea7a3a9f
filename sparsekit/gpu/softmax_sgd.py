"""Epochs of :class:`~sparsekit.ExtremeSoftmaxSGD` on the GPU.

Every method (Implicit SGD, U-max, One-vs-Each, the double-sum SGD, sampled softmax and
NCE) runs in mini-batches of ``batch_size`` examples with the CPU epoch driver's
semantics: every example of a batch takes its step coefficients from the weights at the
batch's start (one warp per example, ``kernels/softmax_sgd.cu``; Implicit SGD's proximal
step solved by the warp's first lane), then all of them update the weight rows of their
classes (atomic additions: a class may be drawn by several examples of the batch); the
step of an example is ``eta * sample_weight / batch size``. The classes are the CPU
driver's draws from the same seed (``sample_classes``), so a GPU epoch follows the CPU
epoch up to the order of floating-point additions.
"""
import math

import numpy as np
import scipy.sparse as sp

from .._cython._softmax_sgd import METHODS, sample_classes
from ._cupy import require_cupy
from ._kernels import get_kernel

#: classes a step may sample (the kernel keeps an example's scores in shared memory)
MAX_SAMPLED = 64
_WARPS = 8  # warps per block: SK_SGD_WARPS of the kernel
_MAX_BLOCKS = 4096


class DeviceRows:
    """The rows of validated host X on the device, as the kernels read them: CSR with int32
    indices (cupyx's layout) or a dense row-major array, in ``dtype``."""

    def __init__(self, X, dtype):
        cp = require_cupy()
        self.n_rows, self.n_features = X.shape
        if sp.issparse(X):
            X = sp.csr_matrix(X, dtype=dtype)
            if X.nnz >= 2**31:
                raise ValueError("the GPU epochs take CSR X with fewer than 2**31 nonzeros")
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            self.data = cp.asarray(X.data)
            self.indices = cp.asarray(X.indices.astype(np.int32, copy=False))
            self.indptr = cp.asarray(X.indptr.astype(np.int32, copy=False))
            self.dense = 0
        else:
            self.data = cp.asarray(np.ascontiguousarray(X, dtype=dtype)).ravel()
            self.indices = self.indptr = cp.zeros(1, dtype=cp.int32)  # never read
            self.dense = 1


def softmax_epoch_gpu(method, rows, bias, y, sample_weight, R, u, order, n_sampled,
                      batch_size, eta, delta, bound_u, seed, exclude_true=True):
    """One pass over the examples ``order`` (host indices) on the GPU; updates the device
    weights ``R`` (K, stride) and the device ``u`` in place.

    Parameters mirror :func:`sparsekit._cython._softmax_sgd.softmax_epoch` (no ridge, no
    shared classes): ``rows`` a :class:`DeviceRows`, ``y`` and ``sample_weight`` host
    arrays over all rows. Returns 1 when a non-finite value appeared (the weights are then
    garbage: the caller keeps its own copy), else 0.
    """
    cp = require_cupy()
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; methods: {tuple(METHODS)}")
    K, stride = R.shape
    m, b, N = int(n_sampled), int(batch_size), int(order.size)
    if not 1 <= m <= MAX_SAMPLED or b < 1:
        raise ValueError(f"the GPU epochs need 1 <= n_sampled <= {MAX_SAMPLED} and "
                         f"batch_size >= 1, got {m} and {b}")
    if stride < rows.n_features + bias:
        raise ValueError(f"R of width {stride} < n_features + bias")
    if N == 0:
        return 0
    labels = np.ascontiguousarray(np.asarray(y)[order], dtype=np.intp)
    classes = cp.asarray(sample_classes(labels, K, m, exclude_true, seed))
    examples = cp.asarray(np.ascontiguousarray(order, dtype=np.int64))
    sw = cp.asarray(np.ascontiguousarray(sample_weight, dtype=np.float64))
    coef = cp.empty((b, m + 1), dtype=cp.float64)
    status = cp.zeros(1, dtype=cp.int32)
    coefficients = get_kernel("softmax_sgd.cu", "sgd_coefficients", R.dtype)
    update = get_kernel("softmax_sgd.cu", "sgd_update", R.dtype)
    D, dense, bias = np.int64(rows.n_features), np.int32(rows.dense), np.int32(bool(bias))
    logc = np.float64(math.log((K - 1.0) / m))
    for start in range(0, N, b):
        nb = min(b, N - start)
        grid = (min(_MAX_BLOCKS, -(-nb // _WARPS)),)
        batch, cls = examples[start:start + nb], classes[start:start + nb]
        coefficients(grid, (32 * _WARPS,), (
            rows.data, rows.indices, rows.indptr, dense, D, bias, batch, cls, sw, R,
            np.int64(stride), u, coef, np.int64(nb), np.int32(m), np.int32(METHODS[method]),
            np.float64(eta), logc, np.float64(delta), np.float64(bound_u), status))
        update(grid, (32 * _WARPS,), (
            rows.data, rows.indices, rows.indptr, dense, D, bias, batch, cls, coef, R,
            np.int64(stride), np.int64(nb), np.int32(m)))
    return int(status.get()[0])
