"""Box constraints as the solvers take them (SciPy's ``Bounds`` or ``(lo, hi)`` pairs)."""
import numpy as np
from scipy.optimize import Bounds


def parse_bounds(bounds, n):
    """Lower and upper bound vectors from ``None``, a ``Bounds`` or ``(lo, hi)`` pairs."""
    if bounds is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    if isinstance(bounds, Bounds):
        try:
            lo = np.broadcast_to(np.asarray(bounds.lb, dtype=float), (n,)).copy()
            hi = np.broadcast_to(np.asarray(bounds.ub, dtype=float), (n,)).copy()
        except ValueError:
            raise ValueError(f"Bounds of shape {np.shape(bounds.lb)} do not fit x0 of "
                             f"size {n}") from None
    else:
        pairs = list(bounds)
        if len(pairs) != n:
            raise ValueError(f"bounds has {len(pairs)} entries, x0 has {n}")
        lo, hi = np.empty(n), np.empty(n)
        for i, pair in enumerate(pairs):
            try:
                a, b = pair
            except (TypeError, ValueError):
                raise ValueError(f"bounds[{i}] must be a (lo, hi) pair, got {pair!r}")
            lo[i] = -np.inf if a is None else float(a)
            hi[i] = np.inf if b is None else float(b)
    if np.isnan(lo).any() or np.isnan(hi).any():
        raise ValueError("bounds must not contain NaN")
    if (lo > hi).any():
        raise ValueError("every lower bound must be <= its upper bound")
    if (lo == np.inf).any() or (hi == -np.inf).any():
        raise ValueError("a lower bound of +inf or an upper bound of -inf leaves no "
                         "feasible point")
    return lo, hi
