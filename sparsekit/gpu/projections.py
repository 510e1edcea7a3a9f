"""GPU (CuPy) versions of ``sparsekit.projections``: same names, parameters and results.

``sparsekit.projections`` calls these functions when it receives a CuPy array or
``device="cuda"``; they may also be called directly. Inputs are moved to the current
device (NumPy inputs included) and the outputs are CuPy arrays. Each row is handled by one
warp (rows of at most 256 entries, eight to a block) or one thread block of
``kernels/projections.cu``, and few very long simplex rows by several blocks each
(:func:`split_rows`): an exact bracketing search for the threshold (no sort),
accumulation in float64, sparsemax computed on ``z - max(z)``.
"""
import numpy as np

from ..projections._checks import raise_on_overflow, resolve_polytope, solve_dtype
from ._cupy import require_cupy
from ._kernels import get_kernel, launch_rows

_KERNELS = "projections.cu"
#: simplex rows at least this long, when there are at most SPLIT_MAX_ROWS of them, are cut
#: into chunks of SPLIT_CHUNK entries with a block each (one block per row would leave most
#: of the device idle: a GPU runs a few blocks on each of its ~100 multiprocessors)
SPLIT_MIN_COLS = 65536
SPLIT_MAX_ROWS = 128
SPLIT_CHUNK = 16384
_SPLIT_THREADS = 256
_SPLIT_STATE = 8  # SK_SPLIT_STATE of projections.cu
_MAX_PASSES = 200  # SK_MAX_PASSES of row_common.cu
# polytope -> (mode of project_capped, fixed budget or None for the user's)
_CAPPED_MODES = {
    "capped_simplex": (0, None),
    "knapsack": (1, None),
    "budget": (1, None),
    "at_most_one": (1, 1.0),
    "at_least_one": (2, 1.0),
    "box": (3, 1.0),
}
_METHODS = ("pivot", "sort")
_EQUALITY = ("simplex", "capped_simplex")   # sum constraint always active (jvp)


def as_device_rows(Z, name="Z", check_finite=True):
    """Validate ``Z`` as CuPy rows: returns ``(cupy, Z2, one_d)`` with ``Z2`` a
    C-contiguous 2-D float32/float64 device array (other dtypes cast to float64). Without
    ``check_finite`` the caller's kernel checks the entries (no separate pass)."""
    cp = require_cupy()
    Z = cp.asarray(Z)
    one_d = Z.ndim == 1
    if one_d:
        Z = Z[None, :]
    if Z.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D (n_rows, n_classes), got shape {Z.shape}")
    if Z.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column")
    if Z.dtype.kind == "c":
        raise TypeError(f"{name} must be real, got complex values")
    if Z.dtype not in (cp.float32, cp.float64):
        Z = Z.astype(cp.float64)
    if check_finite and not bool(cp.isfinite(Z).all()):
        raise ValueError(f"{name} contains NaN or infinity")
    return cp, cp.ascontiguousarray(Z), one_d


def raise_if_nonfinite(flag, name="Z"):
    """Raise ValueError when a kernel set its non-finite ``flag`` (one int on the device)."""
    if int(flag.get()[0]):
        raise ValueError(f"{name} contains NaN or infinity")


def project_with_tau(Z, polytope, params):
    """Project validated device rows ``Z``; returns ``(P, tau, weights, weighted)``.

    ``P = clip(Z - tau[:, None] * w, 0, upper)`` as in ``sparsekit/_cython/_projections.pxd``;
    ``tau`` is float64; ``P`` and the weights are in the dtype the problem is solved in
    (:func:`solve_dtype`, as on the CPU), which the caller rounds back.
    """
    cp = require_cupy()
    n, k = Z.shape
    _, budget, weights, weighted = resolve_polytope(polytope, k, Z.dtype, params)
    if solve_dtype(Z.dtype, weighted) != Z.dtype:
        return project_with_tau(Z.astype(cp.float64), polytope, params)
    W = cp.asarray(weights) if weighted else Z  # never read when not weighted
    P = cp.empty_like(Z)
    tau = cp.empty(n, dtype=cp.float64)
    nonfinite = cp.zeros(1, dtype=cp.int32)
    if polytope == "simplex" and split_rows(n, k):
        _project_simplex_split(Z, P, tau, budget, nonfinite)
    elif polytope == "simplex":
        launch_rows(_KERNELS, "project_simplex", Z.dtype, n, k,
                    (Z, P, tau, np.int64(n), np.int64(k), np.float64(budget), nonfinite))
    else:
        mode, fixed = _CAPPED_MODES[polytope]
        launch_rows(_KERNELS, "project_capped", Z.dtype, n, k,
                    (Z, W, np.int32(weighted), P, tau, np.int64(n), np.int64(k),
                     np.float64(budget if fixed is None else fixed), np.int32(mode),
                     nonfinite))
    raise_if_nonfinite(nonfinite)
    if polytope != "simplex":
        raise_on_overflow(tau, weighted, cp)
    return P, tau, W, weighted


def split_rows(n_rows, n_cols):
    """Whether simplex rows of ``n_cols`` entries get several blocks each: rows of at least
    :data:`SPLIT_MIN_COLS` entries, at most :data:`SPLIT_MAX_ROWS` of them."""
    return n_cols >= SPLIT_MIN_COLS and 0 < n_rows <= SPLIT_MAX_ROWS


def _project_simplex_split(Z, P, tau, radius, nonfinite):
    """The simplex projection of few long rows, each cut into chunks with a block each
    (``simplex_split_*`` of ``kernels/projections.cu``): the search of the one-block kernel,
    one launch pair per pass, until no row is pending (one device-to-host read per pass)."""
    cp = require_cupy()
    n, k = Z.shape
    chunk = int(SPLIT_CHUNK)
    n_chunks = -(-k // chunk)
    pairs = n * n_chunks
    grid, block = (pairs,), (_SPLIT_THREADS,)
    rows_grid = (-(-n // _SPLIT_THREADS),)
    partial = cp.empty(3 * pairs, dtype=cp.float64)
    state = cp.empty(n * _SPLIT_STATE, dtype=cp.float64)
    pending = cp.zeros(1, dtype=cp.int32)
    args = (Z, np.int64(n), np.int64(k), np.int64(chunk))
    get_kernel(_KERNELS, "simplex_split_max", Z.dtype)(grid, block, args + (partial, nonfinite))
    get_kernel(_KERNELS, "simplex_split_start", np.float64)(
        rows_grid, block, (partial, np.int64(n), np.int64(n_chunks), np.float64(radius), state))
    sums = get_kernel(_KERNELS, "simplex_split_sums", Z.dtype)
    step = get_kernel(_KERNELS, "simplex_split_step", np.float64)
    for pass_ in range(_MAX_PASSES):
        pending.fill(0)
        sums(grid, block, args + (state, partial))
        step(rows_grid, block, (partial, np.int64(n), np.int64(n_chunks), np.float64(radius),
                                np.int32(pass_), state, pending))
        if not int(pending.get()[0]):
            break
    get_kernel(_KERNELS, "simplex_split_write", Z.dtype)(
        grid, block, (Z, P, tau, np.int64(n), np.int64(k), np.int64(chunk),
                      np.float64(radius), state))


def project(Z, polytope="simplex", **params):
    """GPU :func:`sparsekit.projections.project`: row-wise projection onto ``polytope``.

    Parameters
    ----------
    Z : cupy or numpy array of shape (n_rows, n_classes) or (n_classes,)
    polytope : str
        One of ``sparsekit.projections.POLYTOPES``.
    **params
        ``radius`` (simplex), ``budget`` and ``weights`` (capped simplex, knapsack),
        ``budget`` (budget polytope), validated as on the CPU.

    Returns
    -------
    P : cupy.ndarray of the shape and dtype of ``Z``
    """
    _, Z2, one_d = as_device_rows(Z, check_finite=False)      # checked by the kernel
    P = project_with_tau(Z2, polytope, params)[0].astype(Z2.dtype, copy=False)
    return P[0] if one_d else P


def jvp(Z, V, polytope="simplex", **params):
    """GPU :func:`sparsekit.projections.jvp`: ``J(z_r) v_r`` for every row.

    On the free set I ({p > 0} for the simplex, {0 < p < 1} otherwise),
    ``(Jv)_I = v_I - w_I (w_I.v_I) / (w_I.w_I)`` when the sum constraint is active, else
    ``v_I``; 0 off I (Niculae & Martins 2020, Prop. 6).
    """
    cp, Z2, one_d = as_device_rows(Z, check_finite=False)    # checked by the kernel
    _, V2, _ = as_device_rows(V, name="V")
    if V2.shape != Z2.shape:
        raise ValueError(f"V must have the shape of Z {Z2.shape}, got {V2.shape}")
    P, tau, W, weighted = project_with_tau(Z2, polytope, params)
    out = jvp_at(P, tau, V2, W, weighted, polytope).astype(Z2.dtype, copy=False)
    return out[0] if one_d else out


def jvp_at(P, tau, V, W, weighted, polytope):
    """``J v`` of every row at projections ``P`` with thresholds ``tau`` (from
    :func:`project_with_tau`), in ``P``'s dtype: float32 weights may round to 0."""
    cp = require_cupy()
    V = cp.ascontiguousarray(V, dtype=P.dtype)
    out = cp.empty_like(P)
    n, k = P.shape
    launch_rows(_KERNELS, "projection_jvp", P.dtype, n, k,
                (P, cp.ascontiguousarray(tau, dtype=cp.float64), V, W if weighted else P,
                 np.int32(weighted), out, np.int64(n), np.int64(k),
                 np.int32(polytope == "simplex"), np.int32(polytope in _EQUALITY)))
    return out


def sparsemax(Z, method="pivot"):
    """GPU :func:`sparsekit.projections.sparsemax` (Martins & Astudillo 2016).

    ``method`` is accepted for parity with the CPU function (``"pivot"`` or ``"sort"``);
    the GPU always uses the sort-free bracketing search, exact up to rounding.
    """
    if method not in _METHODS:
        raise ValueError(f"method must be 'pivot' or 'sort', got {method!r}")
    return project(Z, "simplex")


def project_simplex(Z, radius=1.0):
    """GPU :func:`sparsekit.projections.project_simplex`: onto {p >= 0, sum p = radius}."""
    return project(Z, "simplex", radius=radius)


def project_capped_simplex(Z, budget, weights=None):
    """GPU :func:`sparsekit.projections.project_capped_simplex`:
    onto {0 <= p <= 1, w.p = budget}."""
    return project(Z, "capped_simplex", budget=budget, weights=weights)


def project_knapsack(Z, budget, weights=None):
    """GPU :func:`sparsekit.projections.project_knapsack`: onto {0 <= p <= 1, w.p <= budget}."""
    return project(Z, "knapsack", budget=budget, weights=weights)


def project_budget(Z, budget):
    """GPU :func:`sparsekit.projections.project_budget`: onto {0 <= p <= 1, sum p <= budget}."""
    return project(Z, "budget", budget=budget)


def project_box(Z):
    """GPU :func:`sparsekit.projections.project_box`: ``clip(z, 0, 1)``."""
    return project(Z, "box")


def project_at_least_one(Z):
    """GPU :func:`sparsekit.projections.project_at_least_one`: onto {0 <= p <= 1, sum p >= 1}."""
    return project(Z, "at_least_one")


def project_at_most_one(Z):
    """GPU :func:`sparsekit.projections.project_at_most_one`: onto {0 <= p <= 1, sum p <= 1}."""
    return project(Z, "at_most_one")
