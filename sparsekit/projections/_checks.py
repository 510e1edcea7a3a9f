"""Input handling shared by the projection and loss functions.

Rows are validated with :func:`sparsekit.utils._validation.check_finite_2d`; a 1-D input is
one row. CuPy arrays are routed to ``sparsekit.gpu.projections`` (imported only then).
Negated coordinates (``negated=``) are validated by :func:`negated_columns` and applied by
:func:`reflect_columns` (Niculae & Martins 2020, Prop. 7 and Cor. 7.1).
"""
import importlib
import numbers

import numpy as np
import scipy.sparse as sp

from .._cython._projections import POLYTOPE_CODES
from ..gpu._cupy import is_cupy_array  # a type test: CuPy itself is never imported here
from ..utils._validation import check_device, check_finite_2d

POLYTOPES = tuple(POLYTOPE_CODES)


def raise_on_overflow(values, weighted, xp=np):
    """Raise for a projection whose per-row ``values`` (threshold tau or loss) hold a NaN,
    which happens only when the kernels' shifted scores overflow: a ratio z_i / w_i, or the
    distance of a score from the row's largest ratio, the reference they shift by (scores
    spanning more than the floating-point range, e.g. 1e308 and -1e308)."""
    if bool(xp.isnan(values).any()):
        what = "a ratio z_i / w_i of scores to weights, or " if weighted else ""
        raise ValueError(f"{what}the spread of a row's scores overflows the floating-point "
                         "range; rescale the scores" + (" or the weights" if weighted else ""))

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
    one_d = np.ndim(Z) == 1      # a sparse Z is 2-D: check_finite_2d rejects it
    return check_finite_2d(np.asarray(Z)[None, :] if one_d else Z, name=name), one_d


def gpu_function(name, Z, device):
    """The CuPy implementation ``sparsekit.gpu.projections.<name>`` when ``Z`` is a CuPy
    array or ``device='cuda'``; ``None`` for the CPU path.

    Raises ``ValueError`` for an unknown device and ``TypeError`` for a CuPy array with
    ``device='cpu'``.
    """
    is_cupy = is_cupy_array(Z)
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
    total = float(n_classes)        # sum(weights) before any rounding to ``dtype``
    weighted = values.get("weights") is not None
    if weighted:
        weights = values["weights"]
        try:
            weights = np.asarray(weights.get() if is_cupy_array(weights) else weights,
                                 dtype=np.float64)
        except (TypeError, ValueError) as exc:      # complex numbers, text, ragged lists
            raise TypeError(f"weights must be real numbers ({exc})") from None
        if weights.shape != (n_classes,):
            raise ValueError(f"weights must have shape ({n_classes},), got {weights.shape}")
        if not (np.isfinite(weights).all() and (weights > 0).all()):
            raise ValueError("weights must be finite and > 0")
        if weights.max() > np.finfo(dtype).max:
            raise ValueError(f"weights must be finite in {np.dtype(dtype).name}")
        total = float(weights.sum())
        weights = np.ascontiguousarray(weights, dtype=dtype)
    budget = 1.0
    if polytope == "simplex":
        budget = _positive_scalar(values["radius"], "radius")
        if budget > float(np.finfo(dtype).max):
            raise ValueError(f"radius={budget} is not finite in {np.dtype(dtype).name}")
    elif "budget" in values:
        budget = _positive_scalar(values["budget"], "budget", allow_zero=True)
        if polytope == "capped_simplex" and budget > total * (1 + 1e-12):
            raise ValueError(
                f"budget={budget} exceeds sum(weights)={total}: "
                "the capped simplex {0 <= p <= 1, w.p = budget} is empty")
    return POLYTOPE_CODES[polytope], budget, weights, weighted


def solve_dtype(dtype, weighted):
    """The dtype the CPU kernels solve a problem of ``dtype`` in: the capped kernels order
    the 2K breakpoints (z'_i - 1)/w_i, z'_i/w_i by keys of that type, and with weights
    spread over orders of magnitude float32 keys tie and misorder the sweep (and weights
    below the float32 range round to 0), so weighted float32 problems go through float64."""
    return np.dtype(np.float64) if weighted and dtype == np.float32 else np.dtype(dtype)


def negated_columns(negated, n_classes):
    """Validate a mask of negated coordinates; return their indices as a list of ints.

    Parameters
    ----------
    negated : None or array-like of shape (n_classes,)
        Booleans (or 0/1 numbers); True marks a negated coordinate. A CuPy array is copied
        to the host. None means no coordinate is negated.
    n_classes : int
        Number of columns of the scores.

    Returns
    -------
    columns : list of int
        The negated coordinates, increasing; empty for None or an all-False mask. A plain
        list indexes NumPy and CuPy arrays alike.

    Raises
    ------
    ValueError
        ``negated`` does not have shape (n_classes,) or holds values other than
        True/False/0/1 (NaN included).
    """
    if negated is None:
        return []
    if sp.issparse(negated):
        raise ValueError("negated must be a dense boolean mask, got a sparse matrix")
    if is_cupy_array(negated):
        negated = negated.get()
    mask = np.asarray(negated)
    if mask.shape != (n_classes,):
        raise ValueError(f"negated must be a boolean mask of shape ({n_classes},) "
                         f"(one entry per class), got shape {mask.shape}")
    if mask.dtype != np.bool_:
        if mask.dtype.kind not in "iuf":
            raise ValueError(f"negated must hold booleans (or 0/1), got dtype {mask.dtype}")
        bad = ~((mask == 0) | (mask == 1))
        if bad.any():
            raise ValueError("negated must hold booleans (or 0/1), got "
                             f"{mask[bad][0].item()!r} at index {int(np.flatnonzero(bad)[0])}")
    return np.flatnonzero(mask).tolist()


def reflect_columns(X, columns, offset=1):
    """Copy of ``X`` with ``offset - X[..., k]`` on the columns ``k`` in ``columns``.

    ``offset=1`` is the flip of Niculae & Martins 2020, Prop. 7 (delta = 1): x_k -> 1 - x_k on
    the negated coordinates, an isometry and an involution. ``offset=0`` is the sign matrix
    ``L = diag(+-1)`` of Cor. 7.1 (``0 - x`` rather than ``-x``: no negative zeros).

    Uses only integer-list indexing and scalar arithmetic, so ``X`` may be a NumPy or a
    CuPy array, of any number of dimensions (a 1-D row included). Returns ``X`` itself
    when ``columns`` is empty.
    """
    if not columns:
        return X
    X = X.copy()
    X[..., columns] = offset - X[..., columns]
    return X
