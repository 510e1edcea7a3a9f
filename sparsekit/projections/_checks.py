"""Input handling shared by the projection and loss functions.

Rows are validated with :func:`sparsekit.utils._validation.check_finite_2d`; a 1-D input is
one row. CuPy arrays are routed to ``sparsekit.gpu.projections`` (imported only then).
"""
import importlib
import numbers

import numpy as np
import scipy.sparse as sp

from .._cython._projections import POLYTOPE_CODES
from ..utils._validation import check_device, check_finite_2d

POLYTOPES = tuple(POLYTOPE_CODES)

# parameters each polytope accepts; None marks a required one
_PARAMS = {
    "simplex": {"radius": 1.0},
    "capped_simplex": {"budget": None, "weights": None},
    "knapsack": {"budget": None, "weights": None},
    "budget": {"budget": None},
    "box": {},
    "at_least_one": {},
    "at_most_one": {},
}


def as_rows(Z, name="Z"):
    """Return ``(Z2, one_d)``: a validated C-contiguous 2-D float array and whether the
    input was one 1-D row."""
    if sp.issparse(Z):
        raise TypeError(f"{name} must be a dense array, got a sparse matrix")
    Z = np.asarray(Z)
    one_d = Z.ndim == 1
    return check_finite_2d(Z[None, :] if one_d else Z, name=name), one_d


def gpu_function(name, Z, device):
    """The CuPy implementation ``sparsekit.gpu.projections.<name>`` when ``Z`` is a CuPy
    array or ``device='cuda'``; ``None`` for the CPU path.

    Raises ``ValueError`` for an unknown device and ``TypeError`` for a CuPy array with
    ``device='cpu'``.
    """
    is_cupy = type(Z).__module__.startswith("cupy")
    if device is None:
        device = "cuda" if is_cupy else "cpu"
    check_device(device)
    if device == "cuda":
        return getattr(importlib.import_module("sparsekit.gpu.projections"), name)
    if is_cupy:
        raise TypeError("Z is a CuPy array but device='cpu'; pass Z.get() or device='cuda'")
    return None


def _positive_scalar(value, name, allow_zero=False):
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value}")
    return value


def resolve_polytope(polytope, n_classes, dtype, params):
    """Validate ``polytope`` and its parameters for rows of ``n_classes`` entries.

    Returns ``(code, budget, weights, weighted)`` as the Cython kernels take them:
    ``budget`` is the radius for the simplex (1 for box / at-least-one / at-most-one, where
    it is unused) and ``weights`` is always a length-``n_classes`` array of ``dtype``.
    """
    if polytope not in _PARAMS:
        raise ValueError(f"polytope must be one of {POLYTOPES}, got {polytope!r}")
    allowed = _PARAMS[polytope]
    unknown = set(params) - set(allowed)
    if unknown:
        raise TypeError(f"polytope {polytope!r} takes no parameter(s) {sorted(unknown)}; "
                        f"it accepts {sorted(allowed) or 'none'}")
    values = {**allowed, **params}
    missing = [k for k, v in values.items() if v is None and k != "weights"]
    if missing:
        raise TypeError(f"polytope {polytope!r} requires {missing}")
    weights = np.ones(n_classes, dtype=dtype)
    weighted = values.get("weights") is not None
    if weighted:
        weights = np.asarray(values["weights"], dtype=np.float64)
        if weights.shape != (n_classes,):
            raise ValueError(f"weights must have shape ({n_classes},), got {weights.shape}")
        if not (np.isfinite(weights).all() and (weights > 0).all()):
            raise ValueError("weights must be finite and > 0")
        weights = np.ascontiguousarray(weights, dtype=dtype)
    budget = 1.0
    if polytope == "simplex":
        budget = _positive_scalar(values["radius"], "radius")
    elif "budget" in values:
        budget = _positive_scalar(values["budget"], "budget", allow_zero=True)
        if polytope == "capped_simplex" and budget > weights.sum(dtype=np.float64) * (1 + 1e-12):
            raise ValueError(
                f"budget={budget} exceeds sum(weights)={weights.sum(dtype=np.float64)}: "
                "the capped simplex {0 <= p <= 1, w.p = budget} is empty")
    return POLYTOPE_CODES[polytope], budget, weights, weighted
