"""A ridge term added to a datafit: the smooth part of an elastic-net penalty.

``Ridge(datafit, l2)`` is f(x) + (λ/2) Σ_{i penalized} xᵢ², penalized meaning
``datafit.penalty_weights > 0`` (the weights, not the intercepts), with the datafit protocol
of :func:`sparsekit.optimize.minimize_oba`: the Hessian operators of the wrapped datafit get
λ on their penalized diagonal, matrix-free or formed.
"""
import functools

import numpy as np


class Ridge:
    """``datafit`` plus (λ/2)‖w‖² on its penalized coordinates (λ = ``l2`` ≥ 0)."""

    #: the ridge term changes under any shift of the penalized parameters
    shift_invariant = None

    def __init__(self, datafit, l2):
        self.datafit = datafit
        self.l2 = float(l2)
        self._mask = (np.asarray(datafit.penalty_weights) > 0).astype(np.float64)

    def __getattr__(self, name):          # n_params, n_features, penalty_weights, X, ...
        return getattr(self.datafit, name)

    def value(self, x):
        w = self._mask * x
        return self.datafit.value(x) + 0.5 * self.l2 * float(w @ w)

    def value_grad(self, x):
        x = np.ascontiguousarray(x, dtype=np.float64)
        f, g = self.datafit.value_grad(x)
        w = self._mask * x
        return f + 0.5 * self.l2 * float(w @ w), g + self.l2 * w

    def hessp(self, x, free):
        free = np.asarray(free, dtype=np.int64)
        return _RidgeHessian(self.datafit.hessp(x, free), self.l2 * self._mask[free])

    def lipschitz(self):
        return self.datafit.lipschitz() + self.l2


class _RidgeHessian:
    """``H + diag(d)``: the wrapped operator's products, diagonal, restrictions, quadratic
    forms, formed matrix and preconditioner, each with the ridge diagonal ``d`` added."""

    def __init__(self, H, d):
        self._H = H
        self._d = d
        self._matrix = None
        # functions of H and d, not methods bound to self: an instance holding its own
        # bound method is a reference cycle, freed only by the cyclic garbage collector
        if hasattr(H, "quadratic_form"):      # else the solver makes a product instead
            self.quadratic_form = functools.partial(_quadratic_form, H, d)
        if hasattr(H, "preconditioner"):      # else the CG's is the diagonal's
            self.preconditioner = functools.partial(_preconditioner, H,
                                                    float(d.max(initial=0.0)))

    @property
    def shape(self):
        return self._H.shape

    @property
    def is_explicit(self):
        return getattr(self._H, "is_explicit", False)

    @property
    def matrix(self):
        if self._matrix is None:
            self._matrix = self._H.matrix + np.diag(self._d)
        return self._matrix

    def count_products(self, count):
        self._H.count_products(count)

    def __call__(self, v):
        return self._H(v) + self._d * v

    def diagonal(self):
        return self._H.diagonal() + self._d

    def restrict(self, keep):
        keep = np.asarray(keep, dtype=bool)
        return _RidgeHessian(self._H.restrict(keep), self._d[keep])


def _quadratic_form(H, d, positions, values):
    """cᵀ(H + diag(d))c for c supported on ``positions``."""
    return H.quadratic_form(positions, values) + float(values @ (d[positions] * values))


def _preconditioner(H, shift, reg):
    """H's preconditioner shifted by λ (``shift``) on every entry (the intercepts' too: a
    preconditioner need only be near the matrix)."""
    return H.preconditioner(reg + shift)
