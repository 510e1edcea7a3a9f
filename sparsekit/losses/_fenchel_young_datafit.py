"""The objective of SparsemaxClassifier as a datafit the solvers call.

``F(W, b) = (1 / sum_i s_i) sum_i s_i L(W^T x_i + b + o; y_i) + alpha/2 ||W||^2
(+ alpha/2 ||b||^2)`` with ``L`` the Fenchel-Young loss of the Euclidean projection onto a
polytope (Blondel, Martins & Niculae 2020), ``s`` the sample weights and ``o`` a fixed score
offset (the negated polytopes' ``flip(0)``). The flat variable is ``theta = [W (d, K)
row-major, b (K)]``.

When the intercept is free and unpenalized, the solvers work in ``(W, b + W^T mu)`` with
``mu`` the weighted feature mean: the same objective, better conditioned (features with a
large mean no longer couple with the bias), and ``X`` is never centered (sparse input stays
sparse). :meth:`FenchelYoungLinear.to_solver` and :meth:`FenchelYoungLinear.from_solver`
move between the two coordinates. They also scale the weights: the solvers see ``r W``
with ``r`` the ``weight_scale`` (SparsemaxClassifier passes the root-mean-square of X's
nonzero entries, times a factor for each column in other units than most), i.e. the same
problem on ``X / r``, whose gradients and Hessians do not depend on the units of ``X``.
"""
import numpy as np
import scipy.sparse as sp
from scipy.linalg.blas import daxpy

from .._cython._projections import POLYTOPE_CODES, jvp_rows, project_rows
from .._cython._sparsemax_loss import GEMV_MAX_OUTPUTS, loss_grad_csr, loss_grad_dense

#: rows of dense X per block of the dense loss kernel: 256 kB, read twice (scores, then
#: gradient) from a core's L2 cache beside the BLAS buffers (benchmarks section
#: sparsemax_dense_kernel: 5-15% faster than 2 MB blocks)
_BLOCK_BYTES = 1 << 18
#: dense X with at most this share of nonzeros is fit through a CSR copy, whose kernel's row
#: loop over the nonzeros beats the dense kernel's products over all entries; from 2 to
#: GEMV_MAX_OUTPUTS outputs, where the dense products are one GEMV per output (the fastest),
#: at most _CSR_DENSITY_BASE plus _CSR_DENSITY_PER_OUTPUT for each output (12.5% at 3
#: outputs, 22.5% at 7): about where the two kernels' times cross (13% at 3 outputs, 20% at
#: 5, 25% at 7: benchmarks section sparsemax_dense_kernel)
_CSR_DENSITY, _CSR_DENSITY_BASE, _CSR_DENSITY_PER_OUTPUT = 0.25, 0.05, 0.025
#: precision of the Hessian products: they only steer the Newton direction, so half the
#: memory traffic and much faster skinny GEMMs cost nothing in the result
_HESSIAN_DTYPE = np.float32


class FenchelYoungLinear:
    """Fenchel-Young loss of a linear model over a polytope, with a ridge penalty.

    Parameters
    ----------
    X : CSR matrix or C-contiguous ndarray of shape (n, d), float32 or float64
        Gives the scores; the loss and gradient are computed in its dtype.
    Y : CSR matrix of shape (n, K)
        Targets inside the polytope.
    sample_weight : ndarray of shape (n,), in the dtype of ``X``
    polytope : str
        A key of the projection kernels (``"simplex"``, ``"budget"``, ...).
    budget : float
    alpha : float
    fit_intercept, penalize_intercept : bool
    offset : ndarray of shape (K,), optional
        Fixed, unpenalized term of every row's scores.
    center : bool
        Solve in the centered coordinates (only meaningful with a free, unpenalized bias).
    X_rows : ndarray or sparse matrix, optional
        ``X`` as the Hessian products should gather its rows (default ``X``): dense X that
        is fit through a CSR copy is faster to gather dense.
    device : {"cpu", "cuda"}
    weight_scale : float or ndarray of shape (d,), default=1.0
        The solver variable holds the weights times this, one factor for all the columns
        or one per column (the intercepts unscaled).
    """

    def __init__(self, X, Y, sample_weight, *, polytope, budget, alpha, fit_intercept,
                 penalize_intercept, offset=None, center=False, X_rows=None, device="cpu",
                 weight_scale=1.0):
        self.X, self.Y, self.sw = X, Y, sample_weight
        self.weight_scale = checked_scale(weight_scale)
        self.dtype = X.dtype
        self.X_rows = X if X_rows is None else X_rows
        self.polytope, self.code, self.budget = polytope, POLYTOPE_CODES[polytope], budget
        self.alpha = float(alpha)
        self.fit_intercept, self.penalize_intercept = fit_intercept, penalize_intercept
        self.n_features, self.n_classes = X.shape[1], Y.shape[1]
        self.offset = np.zeros(self.n_classes) if offset is None else offset
        self.scale = 1.0 / float(sample_weight.sum(dtype=np.float64))
        self.center = None
        self.device = device
        if device == "cuda":  # X (moved there once), the weights and every product on the GPU
            from ..gpu._cupy import require_cupy
            from ..gpu.datafits import is_device_matrix
            from ..linear_model._device_input import to_device

            self.X = self.X_rows = X if is_device_matrix(X) else to_device(X)
            self._sw_device = require_cupy().asarray(sample_weight)
            self._data_term = gpu_data_term(self.X, Y, sample_weight, polytope, budget)
            if center:
                self.center = (self.X.T @ self._sw_device).get().astype(np.float64).ravel()
        else:
            self._data_term = cpu_data_term(X, Y, sample_weight, self.code, budget)
            if center:
                self.center = np.asarray(X.T @ sample_weight, dtype=np.float64).ravel()
        if self.center is not None:
            self.center *= self.scale

    @property
    def size(self):
        """Length of ``theta``."""
        return (self.n_features + 1) * self.n_classes

    @property
    def shift_invariant(self):
        """Whether adding one constant to every intercept leaves the objective unchanged
        (the simplex with a free, unpenalized bias and no offset)."""
        return (self.polytope == "simplex" and self.fit_intercept
                and not self.penalize_intercept and not np.any(self.offset))

    def unpack(self, theta):
        """``(W (d, K), b (K))`` of the flat variable, in its coordinates (``b`` a copy)."""
        d, k = self.n_features, self.n_classes
        return theta[: d * k].reshape(d, k), theta[d * k:].copy()

    def to_solver(self, W, b):
        """Flat solver variable of the model ``(W (d, K), b)`` (float64)."""
        b = np.zeros(self.n_classes) if not self.fit_intercept else np.asarray(b, float)
        if self.center is not None:
            b = b + self.center @ W
        theta = np.empty(np.size(W) + self.n_classes)   # one pass over W (SDCA: every epoch)
        np.multiply(W, by_rows(self.weight_scale), out=theta[: np.size(W)].reshape(np.shape(W)))
        theta[np.size(W):] = b
        return theta

    def from_solver(self, theta, out=None):
        """``(W, b)`` of the model at the solver variable ``theta``; a W that differs from
        theta's is written into ``out``'s (a flat array like theta), if given."""
        W, b = self.unpack(theta)
        if np.any(self.weight_scale != 1.0):
            W = np.divide(W, by_rows(self.weight_scale),
                          out=None if out is None else self.unpack(out)[0])
        if not self.fit_intercept:
            b[:] = 0.0
        if self.center is not None:
            b -= self.center @ W
        return W, b

    def value_grad(self, theta, weights=None):
        """Objective and gradient at ``theta`` (float64).

        ``weights``: the model's W at ``theta`` (:meth:`from_solver`'s), when the caller
        holds it (dual coordinate ascent does); the data term's gradient then lies in the
        returned gradient's storage, and no other array of the model's size is made.
        """
        alpha, scale = self.alpha, self.scale
        grad = np.empty_like(theta)
        size = self.n_features * self.n_classes
        grad_W = grad[:size].reshape(self.n_features, self.n_classes)
        if weights is None or self.center is not None:
            # a scaled W lies in grad's storage until its gradient overwrites it: a copy of
            # W would be one more array of the model's size
            W, b = self.from_solver(theta, out=grad)
            out = None
        else:
            W = weights
            b = theta[size:].copy() if self.fit_intercept else np.zeros(self.n_classes)
            out = grad_W if self.dtype == grad.dtype else None   # float32 X: its own
        dtype = self.dtype
        loss, gW, gb = self._data_term(W.astype(dtype, copy=False),
                                       (b + self.offset).astype(dtype), out=out)
        w_flat = W.ravel()
        f = scale * loss + 0.5 * alpha * np.dot(w_flat, w_flat)
        # grad_W = (scale (gW - center gb^T) + alpha W) / r, without full-size temporaries
        if out is None:
            np.multiply(W, alpha, out=grad_W)
            gW *= scale
            grad_W += gW
        else:
            grad_W *= scale
            daxpy(w_flat, grad[:size], a=alpha)   # grad_W += alpha W, in place
        if self.center is not None:
            grad_W -= np.multiply.outer(self.center, scale * gb)
        if np.any(self.weight_scale != 1.0):
            grad_W /= by_rows(self.weight_scale)
        grad[size:] = scale * gb if self.fit_intercept else 0.0
        if self.penalize_intercept and self.fit_intercept:
            f += 0.5 * alpha * np.dot(b, b)
            grad[size:] += alpha * b
        return f, grad

    def hessp_at(self, theta):
        """``(v -> H v, n_active)``: generalized Hessian-vector products at ``theta``.

        ``H = X_A^T diag(s) J X_A / sum(s) + alpha I`` (Niculae & Martins 2020, Prop. 6)
        only involves the rows ``A`` whose projection Jacobian ``J`` is nonzero: with
        sparsemax most rows drop out near the optimum. The products run in float32, on the
        rows divided by the weight scale (the solver's units: no overflow or underflow
        whatever the units of X).
        """
        W, b = self.from_solver(theta)
        if self.device == "cuda":
            from ..gpu.datafits import DeviceActiveRows

            rows = DeviceActiveRows(self.X, self._sw_device, W, b + self.offset, self.polytope,
                                    self.budget, self.scale, self.weight_scale)
        else:
            rows = ActiveRows(self.X, self.X_rows, self.sw, W, b + self.offset, self.polytope,
                              self.code, self.budget, self.scale, self.weight_scale)
        return self.combine_hessp(rows.product), rows.n_active

    def combine_hessp(self, product):
        """``v -> H v`` from the data part ``product(V, c) -> (X_Aᵀ diag(s) J U / (r Σs),
        its column sums)`` with ``U = X_A V / r + c``, ``V`` the weights in the solver's
        units (an :class:`ActiveRows`' or a sum of them): the centered coordinates, the
        ridge and the intercept's block added."""
        size, alpha, center = self.n_features * self.n_classes, self.alpha, self.center
        r = self.weight_scale

        def hessp(v):
            V, c = self.unpack(v)
            if not self.fit_intercept:
                c[:] = 0
            if center is not None:
                c -= (center / r) @ V
            HV, Jc = product(V, c)
            if center is not None:
                HV = HV - np.outer(center / r, Jc)
            out = np.empty_like(v)
            np.multiply(V, by_rows(alpha / r / r), out=out[:size].reshape(V.shape))
            out[:size] += HV.ravel()
            out[size:] = Jc if self.fit_intercept else 0.0
            if self.penalize_intercept and self.fit_intercept:
                out[size:] += alpha * c
            return out

        return hessp

    def newton_operators(self):
        """``(value_grad, hessp_at)`` for a Newton solver.

        On a shift-invariant objective the intercept block of every gradient and Hessian
        product sums to zero in exact arithmetic; its rounding (float32 scores) would be
        divided by the tiny damping of the Newton system along that null direction and
        drift the intercept by ~1e3, so its mean is removed.
        """
        if not self.shift_invariant:
            return self.value_grad, self.hessp_at
        k = self.n_classes

        def centered(v):
            v[-k:] -= v[-k:].mean()
            return v

        def value_grad(theta):
            f, g = self.value_grad(theta)
            return f, centered(g)

        def hessp_at(theta):
            hessp, n_active = self.hessp_at(theta)
            return (lambda v: centered(hessp(v))), n_active

        return value_grad, hessp_at


def fits_through_csr(X, n_outputs):
    """Whether the dense X (or CSR X: False) of a fit of ``n_outputs`` score columns is
    best fit through a CSR copy, by its share of nonzero entries."""
    if sp.issparse(X):
        return False
    share = _CSR_DENSITY
    if 2 <= n_outputs <= GEMV_MAX_OUTPUTS:
        share = min(share, _CSR_DENSITY_BASE + _CSR_DENSITY_PER_OUTPUT * n_outputs)
    return np.count_nonzero(X) <= share * X.size


def cpu_data_term(X, Y, sw, code, budget):
    """Closure ``(W, b, out=None) -> (sum_i sw_i L_i, grad_W, grad_b)`` on the Cython
    kernel; ``grad_W`` is written into ``out`` (an array like W) if given, else into a
    buffer kept between calls."""
    dtype = X.dtype
    yptr = Y.indptr.astype(np.int64)
    yind = Y.indices.astype(np.int64)
    ydat = Y.data.astype(dtype)
    n_classes = Y.shape[1]
    kept = []   # the buffer, made on the first call without ``out``
    gb = np.empty(n_classes, dtype=dtype)
    if sp.issparse(X):
        indices, indptr = X.indices, X.indptr

        def kernel(W, b, gW):
            return loss_grad_csr(X.data, indices, indptr, W, b, yptr, yind, ydat, sw, code,
                                 budget, gW, gb)
    else:
        block = max(16, _BLOCK_BYTES // max(1, X.shape[1] * X.itemsize))

        def kernel(W, b, gW):
            return loss_grad_dense(X, W, b, yptr, yind, ydat, sw, code, budget, gW, gb, block)

    def data_term(W, b, out=None):
        if out is None:
            if not kept:
                kept.append(np.empty((X.shape[1], n_classes), dtype=dtype))
            out = kept[0]
        return kernel(np.ascontiguousarray(W), b, out), out, gb
    return data_term


def gpu_data_term(X, Y, sw, polytope, budget):
    """CuPy version of :func:`cpu_data_term` (``out`` gets a copy of the gradient made on
    the host): the scores on the device and the losses of
    :mod:`sparsekit.gpu.losses` (the fused kernel on the simplex)."""
    from ..gpu import losses as gpu_losses
    from ..gpu._cupy import require_cupy

    from ..linear_model._device_input import to_device
    from ..gpu.datafits import is_device_matrix

    cp = require_cupy()
    Xg = X if is_device_matrix(X) else to_device(X)
    Yg = cp.asarray(Y.toarray(), dtype=X.dtype)
    swg = cp.asarray(sw)

    def data_term(W, b, out=None):
        S = Xg @ cp.asarray(W) + cp.asarray(b)
        if polytope == "simplex":
            losses, G = gpu_losses.sparsemax_loss_and_grad(S, Yg)
        else:
            params = {"budget": budget} if polytope == "budget" else {}
            losses, G = gpu_losses.fenchel_young_loss_and_grad(S, Yg, polytope, **params)
        G *= swg[:, None]
        loss = float(cp.sum(swg.astype(cp.float64) * losses))
        return loss, written(cp.asnumpy(Xg.T @ G), out), cp.asnumpy(G.sum(axis=0))

    return data_term


def written(a, out):
    """``a``, or ``out`` holding it (a data term's ``out``)."""
    if out is None:
        return a
    out[...] = a
    return out


class ActiveRows:
    """The rows of X whose projection Jacobian is nonzero at the scores ``X W + b``, with
    what the Hessian products need, in float32 (they only steer the Newton direction) and
    divided by ``weight_scale`` r (entries near 1 whatever the units of X; one factor, or
    one per column):
    ``product(V, c) = (X_Aᵀ diag(s_A) J U / (r Σs), the column sums of diag(s_A) J U / Σs)``,
    ``U = X_A V / r + c``, in float64."""

    def __init__(self, X, X_rows, sw, W, b, polytope, code, budget, scale, weight_scale=1.0):
        hdt = _HESSIAN_DTYPE
        k = W.shape[1]
        self._ones = np.ones(k, dtype=hdt)
        S = np.ascontiguousarray(X @ W.astype(X.dtype) + b.astype(X.dtype))
        P = np.empty_like(S)
        tau = np.empty(S.shape[0], dtype=S.dtype)
        project_rows(code, S, P, tau, budget, self._ones.astype(S.dtype), False)
        free = (P > 0) if polytope == "simplex" else (P > 0) & (P < 1)
        min_free = 2 if polytope == "simplex" else 1
        rows = (free.sum(axis=1) >= min_free) & (sw > 0)
        self.n_active = int(rows.sum())
        self._XA = divide_columns(X_rows[rows], weight_scale).astype(hdt)
        self._PA = np.ascontiguousarray(P[rows], dtype=hdt)
        self._tauA = tau[rows].astype(hdt)
        self._swA = (scale * sw[rows]).astype(hdt)[:, None]
        self._code = code

    def product(self, V, c):
        hdt = _HESSIAN_DTYPE
        U = np.ascontiguousarray(self._XA @ V.astype(hdt) + c.astype(hdt))
        JU = np.empty_like(self._PA)
        jvp_rows(self._code, self._PA, self._tauA, U, JU, self._ones, False)
        np.multiply(JU, self._swA, out=JU)
        return (np.asarray(self._XA.T @ JU, dtype=np.float64),
                JU.sum(axis=0, dtype=np.float64))


def checked_scale(weight_scale):
    """``weight_scale`` as a float, or as a float64 array of one factor per column."""
    if np.ndim(weight_scale) == 0:
        return float(weight_scale)
    return np.asarray(weight_scale, dtype=np.float64)


def by_rows(weight_scale):
    """``weight_scale`` shaped to multiply the rows of W (d, K): a float, or (d, 1)."""
    return weight_scale if np.ndim(weight_scale) == 0 else weight_scale[:, None]


def divide_columns(X, weight_scale):
    """X (dense or SciPy sparse) divided by ``weight_scale``, one factor or one per column,
    in X's dtype (X itself for the factor 1)."""
    if np.ndim(weight_scale) == 0:
        return X if weight_scale == 1.0 else X * (1.0 / weight_scale)
    inverse = (1.0 / np.asarray(weight_scale)).astype(X.dtype)
    return X.multiply(inverse).tocsr() if sp.issparse(X) else X * inverse
