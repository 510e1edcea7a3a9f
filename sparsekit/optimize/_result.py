"""The convention every solver of :mod:`sparsekit.optimize` follows: SciPy's.

- The result is a :class:`scipy.optimize.OptimizeResult` with ``x``, ``fun``, ``jac``,
  ``nit``, ``nfev``, ``status``, ``success`` and ``message``.
- ``callback(intermediate_result)`` receives an ``OptimizeResult`` after each iteration
  when its only parameter is named ``intermediate_result``; any other callback receives a
  copy of ``xk``. Raising ``StopIteration`` ends the run with status 99 and SciPy's
  message (:func:`scipy.optimize.minimize`).
- The solver works on a copy of ``x0``: the user's array is never written to.
- The objective and gradient it is given are checked where they come back: a float and
  a float64 gradient of the shape of ``x`` (:func:`checked_f_grad`).
"""
import inspect

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


def checked_f_grad(f_grad, n, name):
    """``f_grad`` returning (float, float64 array of shape (n,)), or a clear error naming
    it as ``name`` (the solver's parameter)."""
    def call(x):
        f, G = f_grad(x)
        G = np.ascontiguousarray(G, dtype=np.float64)
        if G.size != n:
            raise ValueError(f"{name} returned a gradient of shape {G.shape}; expected ({n},)")
        return float(f), G.reshape(n)
    return call
