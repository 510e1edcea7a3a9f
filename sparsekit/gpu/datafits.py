"""The logistic and multinomial datafits of :class:`~sparsekit.L1LogisticOBA` with X on
the GPU.

Same protocol and definitions as :class:`sparsekit.losses._logistic_datafit.Logistic`
(f = (1/n) Σᵢ sᵢ log(1 + exp(−yᵢ mᵢ)), m = X w + b): the margins, the loss, the gradient
and the free-set Hessian products run on the device (cuBLAS / cuSPARSE products through
CuPy, the pointwise terms in one fused kernel, ``kernels/logistic.cu``); OBA's active-set
logic stays on the host, which sends and receives parameter-sized vectors only.

A Hessian product on the free columns F scatters v into a vector over all columns and
makes two full products, X v and Xᵀ(D X v): on a GPU one cuSPARSE/cuBLAS call over X costs
less than gathering the columns of F. The products run in float64: float32 X is copied to
float64 on the device (cuBLAS and cuSPARSE accumulate float32 products in float32, whose
rounding, ~1e-7 of the gradient, keeps OBA from its default tolerance; the CPU kernels
read float32 and accumulate in float64 instead).

The multinomial datafit (:class:`DeviceMultinomial`) follows
:class:`sparsekit.losses._multinomial_datafit.Multinomial` the same way: Z = X W + b,
the gradient Xᵀ R and the Hessian products X V, Xᵀ R' are (n, K) cuBLAS / cuSPARSE
products, the softmax terms CuPy element-wise operations.
"""
import numpy as np

from ..losses._logistic_datafit import Logistic
from ..losses._multinomial_datafit import Multinomial, split_parameters
from ._cupy import require_cupy
from ._kernels import get_kernel

_THREADS = 256
_MAX_BLOCKS = 4096  # the kernel's grid-stride loop covers the rest


def is_device_matrix(X):
    """Whether X is a CuPy array or a cupyx.scipy.sparse matrix (checked by type)."""
    return type(X).__module__.split(".")[0] in ("cupy", "cupyx")


class DeviceLogistic:
    """Logistic datafit on the GPU (see the module docstring).

    Parameters
    ----------
    X : cupy.ndarray or cupyx.scipy.sparse matrix of shape (n_samples, n_features)
        float32 or float64 (computed in float64), finite (checked by the caller).
    y : ndarray of shape (n_samples,)
        Labels in {−1, +1}.
    sample_weight : ndarray of shape (n_samples,), optional
    fit_intercept : bool, default=False
    shared : dict, optional
        Device arrays derived from X alone (its entry-wise squares), kept for the other
        datafits of the same X (one-vs-rest problems) that are given the same dict.
    """

    #: the same intercept at w = 0 as on the CPU
    intercept_for = staticmethod(Logistic.intercept_for)
    #: the column offsets subtracted from X before the datafit was made (None: none)
    offsets = None
    #: no shift of the parameters leaves f unchanged
    shift_invariant = None

    def __init__(self, X, y, sample_weight=None, fit_intercept=False, shared=None):
        cp = self._cp = require_cupy()
        X = X.tocsr() if hasattr(X, "tocsr") else X
        self.X = X if X.dtype == cp.float64 else X.astype(cp.float64)
        self.n_samples, self.n_features = X.shape
        n = self.n_samples
        y = np.asarray(y, dtype=np.float64)
        sw = np.ones(n) if sample_weight is None else np.asarray(sample_weight, np.float64)
        for name, v in (("y", y), ("sample_weight", sw)):
            if v.shape != (n,):
                raise ValueError(f"{name} must have shape ({n},) to match X, got {v.shape}")
        if not np.all(np.abs(y) == 1.0):
            raise ValueError("Logistic needs labels y in {-1, +1}, got values "
                             f"{np.unique(y)[:5].tolist()}")
        self._y_host, self._sw_host = y, sw / n
        self._y, self._sw = cp.asarray(y), cp.asarray(sw / n)
        self.fit_intercept = bool(fit_intercept)
        self.n_params = self.n_features + self.fit_intercept
        self.penalty_weights = np.ones(self.n_params)
        if self.fit_intercept:
            self.penalty_weights[-1] = 0.0
        self._kernel = get_kernel("logistic.cu", "logistic_pointwise", np.float64)
        self._terms, self._r, self._D = (cp.empty(n, dtype=cp.float64) for _ in range(3))
        self._x_at = None
        self._shared = {} if shared is None else shared
        self._bound = None

    # -- products (float64)
    def _matvec(self, v):
        return self._cp.asarray(self.X @ self._cp.asarray(v)).ravel()

    def _rmatvec(self, t, X=None):
        X = self.X if X is None else X
        return self._cp.asarray(X.T @ t).ravel()

    def _margins(self, x):
        m = self._matvec(x[:self.n_features])
        if self.fit_intercept:
            m += float(x[-1])
        return m

    def _pointwise(self, m, terms, r, D):
        """Σᵢ sᵢ ℓ(mᵢ); writes rᵢ = sᵢ ∂ℓ/∂mᵢ and Dᵢ = sᵢ ∂²ℓ/∂mᵢ² (device vectors)."""
        n = self.n_samples
        if n:
            grid = (min(_MAX_BLOCKS, -(-n // _THREADS)),)
            self._kernel(grid, (_THREADS,), (m, self._y, self._sw, terms, r, D, np.int64(n)))
        return float(terms.sum())

    # -- the datafit protocol
    def value(self, x):
        """f(x) (the curvature weights stored by :meth:`value_grad` are left alone)."""
        m = self._margins(np.asarray(x, dtype=np.float64))
        return self._pointwise(m, *(self._cp.empty_like(m) for _ in range(3)))

    def value_grad(self, x):
        """(f(x), ∇f(x)) as a float and a NumPy array; keeps D(x) on the device."""
        cp = self._cp
        x = np.ascontiguousarray(x, dtype=np.float64)
        f = self._pointwise(self._margins(x), self._terms, self._r, self._D)
        grad = np.empty(self.n_params)
        grad[:self.n_features] = cp.asnumpy(self._rmatvec(self._r))
        if self.fit_intercept:
            grad[-1] = float(self._r.sum())
        self._x_at = x.copy()
        return f, grad

    def hessp(self, x, free):
        """The Hessian on the ``free`` parameters at ``x`` (a matrix-free device operator)."""
        if self._x_at is None or not np.array_equal(self._x_at, x):
            self.value_grad(x)
        free = np.asarray(free, dtype=np.int64)
        intercept = self.fit_intercept and free.size > 0 and free[-1] == self.n_features
        cols = free[:-1] if intercept else free
        return _DeviceHessian(self, cols, intercept, self._D.copy())

    def _square_entries(self):
        """X with every entry squared (formed on first use, kept in ``shared``)."""
        return _square_entries(self.X, self._shared)

    def _diagonal(self, cols, D):
        """Σᵢ Dᵢ X_ij² for the listed columns."""
        cp = self._cp
        return cp.asnumpy(self._rmatvec(D, self._square_entries())[cp.asarray(cols)])

    def _gram_bound(self):
        if self._bound is None:
            cp = self._cp
            row_sq = cp.asarray(self._square_entries() @ cp.ones(self.n_features)).ravel()
            self._bound = float(cp.sum(self._sw * (row_sq + self.fit_intercept)))
        return self._bound

    def lipschitz(self):
        """Σᵢ sᵢ (‖xᵢ‖² + b) / (4n), as on the CPU."""
        return max(self._gram_bound() / 4.0, 1e-12)

    def label_totals(self):
        """The total sample weight of the negative and of the positive rows."""
        n, y, sw = self.n_samples, self._y_host, self._sw_host
        return np.array([sw[y < 0].sum() * n, sw[y > 0].sum() * n])

    def null_intercept(self):
        """The intercept minimizing f at w = 0."""
        return self.intercept_for(self.label_totals())

    def dual_terms(self, x, alpha):
        """The data part of the dual objective, as
        :meth:`sparsekit.losses._logistic_datafit.Logistic.dual_terms`."""
        cp = self._cp
        x = np.asarray(x, dtype=np.float64)
        b = float(x[-1]) if self.fit_intercept else 0.0
        z = -self._y * self._margins(x)
        t = alpha / (1.0 + cp.exp(-z))                 # alpha sigma(z); exp(-z) = inf -> 0
        entropy = -_xlogx(cp, t) - _xlogx(cp, 1.0 - t)
        return float(cp.sum(self._sw * (entropy - t * self._y * b)))


def _xlogx(cp, t):
    return cp.where(t > 0, t * cp.log(cp.where(t > 0, t, 1.0)), 0.0)


def _square_entries(X, shared):
    """X with every entry squared (formed on first use, kept in the dict ``shared``)."""
    if "squares" not in shared:
        if hasattr(X, "tocsr"):
            squares = X.copy()
            squares.data **= 2
        else:
            squares = X * X
        shared["squares"] = squares
    return shared["squares"]


class DeviceMultinomial:
    """Multinomial (softmax) datafit on the GPU (see the module docstring).

    Parameters
    ----------
    X : cupy.ndarray or cupyx.scipy.sparse matrix of shape (n_samples, n_features)
        float32 or float64 (computed in float64), finite (checked by the caller).
    y : ndarray of int of shape (n_samples,)
        Class indices in ``0 .. n_classes - 1``.
    n_classes : int
    sample_weight : ndarray of shape (n_samples,), optional
    fit_intercept : bool, default=False
    """

    intercept_for = staticmethod(Multinomial.intercept_for)
    #: the column offsets subtracted from X before the datafit was made (None: none)
    offsets = None

    def __init__(self, X, y, n_classes, sample_weight=None, fit_intercept=False):
        cp = self._cp = require_cupy()
        X = X.tocsr() if hasattr(X, "tocsr") else X
        self.X = X if X.dtype == cp.float64 else X.astype(cp.float64)
        self.n_samples, self.n_features = n, _ = X.shape
        self.n_classes = K = int(n_classes)
        y = np.asarray(y)
        if y.shape != (n,) or y.size and (y.min() < 0 or y.max() >= K):
            raise ValueError(f"y must hold {n} class indices in [0, {K})")
        sw = np.ones(n) if sample_weight is None else np.asarray(sample_weight, np.float64)
        if sw.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},) to match X, got {sw.shape}")
        self._y_host, self._sw_host = y.astype(np.intp), sw / n
        onehot = np.zeros((n, K))
        onehot[np.arange(n), y] = 1.0
        self._Y, self._sw = cp.asarray(onehot), cp.asarray(sw / n)
        self.fit_intercept = bool(fit_intercept)
        self.n_params = (self.n_features + self.fit_intercept) * K
        self.penalty_weights = np.ones(self.n_params)
        self.penalty_weights[self.n_features * K:] = 0.0
        self.shift_invariant = K      # as on the CPU (Multinomial)
        self._x_at, self._P = None, None
        self._shared = {}

    def split(self, x):
        """(W of shape (n_features, n_classes), b of shape (n_classes,)), host arrays."""
        return split_parameters(x, self.n_features, self.n_classes, self.fit_intercept)

    def _scores(self, x):
        W, b = self.split(np.asarray(x, dtype=np.float64))
        cp = self._cp
        Z = cp.asarray(self.X @ cp.asarray(np.ascontiguousarray(W)))
        return Z + cp.asarray(b)

    def _nll(self, Z):
        """Σᵢ sᵢ/n ℓ(zᵢ) and the probabilities (device)."""
        cp = self._cp
        top = Z.max(axis=1, keepdims=True)
        E = cp.exp(Z - top)
        total = E.sum(axis=1, keepdims=True)
        lse = (top + cp.log(total)).ravel()
        return float(self._sw @ (lse - (Z * self._Y).sum(axis=1))), E / total

    def value(self, x):
        return self._nll(self._scores(x))[0]

    def value_grad(self, x):
        """(f(x), ∇f(x)) as a float and a NumPy array; keeps the probabilities on the
        device for :meth:`hessp`."""
        cp = self._cp
        x = np.ascontiguousarray(x, dtype=np.float64)
        f, P = self._nll(self._scores(x))
        R = (P - self._Y) * self._sw[:, None]
        nw = self.n_features * self.n_classes
        grad = np.empty(self.n_params)
        grad[:nw] = cp.asnumpy(cp.asarray(self.X.T @ R)).ravel()
        if self.fit_intercept:
            grad[nw:] = cp.asnumpy(R.sum(axis=0))
        self._x_at, self._P = x.copy(), P
        return f, grad

    def hessp(self, x, free):
        """The Hessian on the sorted parameter indices ``free`` at ``x`` (a matrix-free
        device operator)."""
        if self._x_at is None or not np.array_equal(self._x_at, x):
            self.value_grad(x)
        return _DeviceMultinomialHessian(self, np.asarray(free, dtype=np.int64))

    def lipschitz(self):
        """Σᵢ sᵢ (‖xᵢ‖² + b) / (2n), as on the CPU."""
        cp = self._cp
        rows = cp.asarray(_square_entries(self.X, self._shared)
                          @ cp.ones(self.n_features)).ravel()
        return max(float(cp.sum(self._sw * (rows + self.fit_intercept))) / 2.0, 1e-12)

    def label_totals(self):
        """The total sample weight of each class."""
        return np.bincount(self._y_host, weights=self._sw_host,
                           minlength=self.n_classes) * self.n_samples

    def null_intercept(self):
        """The intercepts minimizing f at W = 0."""
        return self.intercept_for(self.label_totals())

    def dual_terms(self, x, alpha):
        """The data part of the dual objective, as
        :meth:`sparsekit.losses._multinomial_datafit.Multinomial.dual_terms`."""
        cp = self._cp
        x = np.asarray(x, dtype=np.float64)
        _, b = self.split(x)
        b = cp.asarray(b)
        _, P = self._nll(self._scores(x))
        Q = alpha * P + (1.0 - alpha) * self._Y
        entropy = -_xlogx(cp, Q).sum(axis=1)
        return float(self._sw @ (entropy + Q @ b - self._Y @ b))


class _DeviceMultinomialHessian:
    """``v -> ∇²f[free, free] v`` for a :class:`DeviceMultinomial` at its last point: the
    free class weights scattered into a (D, K) device matrix V, U = X V + 1 v_bᵀ,
    R = s ∘ (P ∘ U − P (P ∘ U) 1), the result gathered from Xᵀ R and Σᵢ Rᵢ."""

    def __init__(self, datafit, free, diag=None):
        self._f = datafit
        self._free = free
        nw = datafit.n_features * datafit.n_classes
        on_w = free < nw
        self._n_w = int(np.count_nonzero(on_w))
        self._w_dev = datafit._cp.asarray(free[on_w])
        self._b = free[~on_w] - nw
        self._diag = diag
        self.shape = (free.size, free.size)

    def __call__(self, v):
        f, cp = self._f, self._f._cp
        v = np.asarray(v, dtype=np.float64)
        K = f.n_classes
        V = cp.zeros(f.n_features * K, dtype=cp.float64)
        V[self._w_dev] = cp.asarray(v[:self._n_w])
        vb = np.zeros(K)
        vb[self._b] = v[self._n_w:]
        U = cp.asarray(f.X @ V.reshape(f.n_features, K)) + cp.asarray(vb)
        R = f._P * U
        R -= f._P * R.sum(axis=1, keepdims=True)
        R *= f._sw[:, None]
        out = np.empty(v.size)
        out[:self._n_w] = cp.asnumpy(cp.asarray(f.X.T @ R).ravel()[self._w_dev])
        out[self._n_w:] = cp.asnumpy(R.sum(axis=0))[self._b]
        return out

    def diagonal(self):
        """Σᵢ sᵢ/n x̃ᵢⱼ² pᵢₖ (1 − pᵢₖ) on the free entries; kept for restrictions."""
        if self._diag is None:
            f, cp = self._f, self._f._cp
            D = f._P * (1.0 - f._P) * f._sw[:, None]
            G = cp.asarray(_square_entries(f.X, f._shared).T @ D).ravel()
            self._diag = np.concatenate([cp.asnumpy(G[self._w_dev]),
                                         cp.asnumpy(D.sum(axis=0))[self._b]])
        return self._diag

    def restrict(self, keep):
        """The operator on the entries ``keep`` (boolean over this operator's)."""
        keep = np.asarray(keep, dtype=bool)
        return _DeviceMultinomialHessian(self._f, self._free[keep],
                                         None if self._diag is None else self._diag[keep])


class _DeviceHessian:
    """``v -> [X_F, 1]ᵀ diag(D) [X_F, 1] v`` with X and D on the device; v and the result
    are NumPy vectors over the free coordinates."""

    def __init__(self, datafit, cols, intercept, D, diag=None):
        self._f = datafit
        self._cols = cols
        self._cols_dev = datafit._cp.asarray(cols)
        self._intercept = intercept
        self._D = D
        self._diag = diag
        self.shape = (cols.size + intercept,) * 2

    def __call__(self, v):
        cp, f = self._f._cp, self._f
        v = np.asarray(v, dtype=np.float64)
        full = cp.zeros(f.n_features, dtype=cp.float64)
        full[self._cols_dev] = cp.asarray(v[:self._cols.size])
        t = f._matvec(full)
        if self._intercept:
            t += float(v[-1])
        t *= self._D
        out = np.empty(self.shape[0])
        out[:self._cols.size] = cp.asnumpy(f._rmatvec(t)[self._cols_dev])
        if self._intercept:
            out[-1] = float(t.sum())
        return out

    def diagonal(self):
        """The diagonal (for the Jacobi-preconditioned CG); kept for restrictions."""
        if self._diag is None:
            diag = self._f._diagonal(self._cols, self._D)
            if self._intercept:
                diag = np.append(diag, float(self._D.sum()))
            self._diag = diag
        return self._diag

    def restrict(self, keep):
        """The operator on the sub-slice ``keep`` (boolean over its coordinates)."""
        keep = np.asarray(keep, dtype=bool)
        intercept = bool(self._intercept and keep[-1])
        cols = self._cols[keep[:self._cols.size]]
        diag = None if self._diag is None else self._diag[keep]
        return _DeviceHessian(self._f, cols, intercept, self._D, diag)


class DeviceActiveRows:
    """:class:`~sparsekit.losses._fenchel_young_datafit.ActiveRows` with X on the GPU: the
    scores, their projection, the rows whose projection Jacobian is nonzero and the
    Hessian products ``product(V, c) = (X_Aᵀ diag(s_A) J U / (r Σs), the column sums of
    diag(s_A) J U / Σs)``, ``U = X_A V / r + c``, all on the device in float32 (they only
    steer the Newton direction) with the rows divided by the weight scale r; V, c in and
    the results out are NumPy float64.

    Parameters
    ----------
    X : cupy.ndarray or cupyx.scipy.sparse.csr_matrix of shape (n, d)
    sw : cupy.ndarray of shape (n,)
    W, b : ndarray of shapes (d, K) and (K,)
        The model (b with any fixed score offset added).
    polytope : str
    budget : float
        The budget polytope's budget, the simplex's radius (1 for the classifier).
    scale : float
        1 / Σ sw.
    weight_scale : float or ndarray of shape (d,), default=1.0
        r, the factor of the solver's weights (one, or one per column).
    """

    def __init__(self, X, sw, W, b, polytope, budget, scale, weight_scale=1.0):
        from .projections import project_with_tau

        cp = self._cp = require_cupy()
        S = X @ cp.asarray(W, dtype=X.dtype) + cp.asarray(b, dtype=X.dtype)
        params = ({"budget": budget} if polytope == "budget"
                  else {"radius": budget} if polytope == "simplex" else {})  # as the CPU's
        P, tau, weights, weighted = project_with_tau(cp.ascontiguousarray(S), polytope, params)
        free = (P > 0) if polytope == "simplex" else (P > 0) & (P < 1)
        rows = (free.sum(axis=1) >= (2 if polytope == "simplex" else 1)) & (sw > 0)
        active = cp.flatnonzero(rows)
        self.n_active = int(active.size)
        hdt = np.float32
        XA = X[active]
        if np.ndim(weight_scale):                     # one factor per column
            inverse = cp.asarray(1.0 / np.asarray(weight_scale), dtype=XA.dtype)
            XA = XA.multiply(inverse[None, :]).tocsr() if hasattr(XA, "multiply") \
                else XA * inverse
        elif weight_scale != 1.0:
            XA = XA * (1.0 / weight_scale)
        self._XA = XA.astype(hdt)
        self._PA = cp.ascontiguousarray(P[active], dtype=hdt)
        self._tauA = tau[active]
        self._swA = (scale * sw[active]).astype(hdt)[:, None]
        self._weights = weights.astype(hdt) if weighted else None
        self._polytope = polytope

    def product(self, V, c):
        from .projections import jvp_at

        cp = self._cp
        U = self._XA @ cp.asarray(V, dtype=np.float32) + cp.asarray(c, dtype=np.float32)
        JU = jvp_at(self._PA, self._tauA, U, self._weights, self._weights is not None,
                    self._polytope)
        JU *= self._swA
        return (cp.asnumpy(cp.asarray(self._XA.T @ JU)).astype(np.float64),
                cp.asnumpy(JU.sum(axis=0, dtype=cp.float64)))
