"""The convention every solver of :mod:`sparsekit.optimize` follows: SciPy's.

- The result is a :class:`scipy.optimize.OptimizeResult` with ``x``, ``fun``, ``jac``,
  ``nit``, ``nfev``, ``status``, ``success`` and ``message``.
- ``callback(intermediate_result)`` receives an ``OptimizeResult`` after each iteration
  when its only parameter is named ``intermediate_result``; any other callback receives a
  copy of ``xk``. Raising ``StopIteration`` ends the run with status 99 and SciPy's
  message (:func:`scipy.optimize.minimize`).
- The solver works on a copy of ``x0``: the user's array is never written to.
- The objective and gradient it is given are checked where they come back: a float and
  a float64 gradient of the shape of ``x`` (:func:`checked_f_grad`); so are the Hessian
  operators (:func:`checked_hessp`) and their products (:func:`hessian_product`).
"""
import inspect
import math

import numpy as np
from scipy.optimize import OptimizeResult

#: status and message of a run ended by the callback, as in scipy.optimize.minimize
STOPPED_BY_CALLBACK = 99
CALLBACK_MESSAGE = "`callback` raised `StopIteration`."


def takes_intermediate_result(callback):
    """SciPy's rule: a callback whose only parameter is named ``intermediate_result``
    receives an OptimizeResult (as a keyword argument); any other receives ``xk``."""
    try:
        params = inspect.signature(callback).parameters
    except (TypeError, ValueError):
        return False
    return set(params) == {"intermediate_result"}


class Callback:
    """A user's callback under SciPy's rules; calling it tells whether to stop.

    ``Callback(None)`` is a no-op. ``notify(x=..., fun=..., **fields)`` passes an
    ``OptimizeResult`` of the fields (copies of the arrays) or a copy of ``x``, and returns
    True when the callback raised ``StopIteration``.
    """

    def __init__(self, callback):
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable or None, got {callback!r}")
        self._callback = callback
        self._wants_result = callback is not None and takes_intermediate_result(callback)

    def __bool__(self):
        return self._callback is not None

    def notify(self, x, **fields):
        if self._callback is None:
            return False
        try:
            if self._wants_result:
                fields = {k: np.copy(v) if isinstance(v, np.ndarray) else v
                          for k, v in fields.items()}
                self._callback(intermediate_result=OptimizeResult(x=np.copy(x), **fields))
            else:
                self._callback(np.copy(x))
        except StopIteration:
            return True
        return False


def is_positive_finite(value):
    """Whether ``value`` is a real number in (0, ∞) (a 0-d array too)."""
    try:
        value = float(value) if np.ndim(value) == 0 else math.nan
    except (TypeError, ValueError):
        return False
    return 0.0 < value < math.inf


def objective_value(f, name):
    """The value ``name`` returned, as a float (a size-1 array too, as SciPy accepts), or a
    clear error."""
    try:
        if f is None:  # NumPy would read it as NaN
            raise TypeError
        f = np.asarray(f, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must return a real number as the objective's value, "
                        f"got {type(f).__name__} {f!r:.60}") from None
    if f.size != 1:
        raise ValueError(f"{name} must return a scalar as the objective's value, "
                         f"got shape {f.shape}")
    return float(f.reshape(()))


def returned_pair(out, what, pair):
    """``out`` if it is a pair (a tuple or list of two, as SciPy takes ``jac=True``'s), or a
    clear error saying that ``what`` must return ``pair``."""
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"{what} must return the pair {pair}, got {type(out).__name__}")
    return out


def gradient_array(G, name):
    """The gradient ``name`` returned as a float64 array, or a clear error."""
    try:
        return np.ascontiguousarray(G, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} returned a gradient that is not an array of real numbers: "
                        f"{type(G).__name__}") from None


def checked_f_grad(f_grad, n, name):
    """``f_grad`` returning (float, float64 array of shape (n,)), or a clear error naming
    it as ``name`` (the solver's parameter)."""
    if not callable(f_grad):
        raise TypeError(f"{name} must be callable, got {type(f_grad).__name__}")

    def call(x):
        f, G = returned_pair(f_grad(x), f"{name}(x)", "(f(x), gradient)")
        f, G = objective_value(f, name), gradient_array(G, name)
        if G.size != n:
            raise ValueError(f"{name} returned a gradient of shape {G.shape}; expected ({n},)")
        return f, G.reshape(n)
    return call


def checked_hessp(hessp, name):
    """``hessp(x, free)`` whose operators are callable, or a clear error naming it as
    ``name``; their products are checked by :func:`hessian_product`."""
    if not callable(hessp):
        raise TypeError(f"{name} must be callable, got {type(hessp).__name__}")

    def call(x, free):
        return checked_operator(hessp(x, free), f"{name}(x, free)")
    return call


def checked_operator(H, name):
    """``H`` if it is callable, else a clear error saying that ``name`` must be an operator."""
    if not callable(H):
        raise TypeError(
            f"{name} must be an operator H, a callable with H(v) the product of the "
            f"Hessian with v, not the product itself (as SciPy's hessp(x, p) is); "
            f"got {type(H).__name__}")
    return H


def hessian_product(H, v):
    """``H(v)`` as a vector of ``v``'s shape (a list or a column is the vector it holds), or
    a clear error."""
    Hv = H(v)
    if getattr(Hv, "shape", None) == v.shape:
        return Hv
    try:
        Hv = np.asarray(Hv, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"the Hessian operator gave an H(v) that is not an array of real "
                        f"numbers: {type(Hv).__name__}") from None
    if Hv.size != v.size:
        raise ValueError(f"the Hessian operator gave H(v) of shape {Hv.shape} for v of shape "
                         f"{v.shape}")
    return Hv.reshape(v.shape)
