"""Input on the GPU for the linear estimators: CuPy arrays and cupyx sparse matrices.

The rules (scikit-learn's array API conventions where they apply): X given as a CuPy array
or a cupyx.scipy.sparse matrix is computed on the device it lives on, and predictions
come back as CuPy arrays; ``device="cuda"`` moves host X to the current device for the fit.
Fitted attributes (``coef_``, ``intercept_``, ``classes_``) are NumPy arrays, so a model
fitted on a GPU predicts NumPy input on any machine. Labels and sample weights, one number
per row, are read on the host. Nothing here imports CuPy before it is needed.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import _check_sample_weight, column_or_1d

from ..gpu._cupy import require_cupy
from ..gpu.datafits import is_device_matrix
from ..losses._softmax import _chunks
from ..utils._rows import scale_sums_of
from ..utils._validation import check_device


def _host(v):
    """A host copy of a CuPy array or cupyx matrix (other inputs as they are)."""
    return v.get() if is_device_matrix(v) else v


def on_host(*values):
    """``values`` with the CuPy arrays and cupyx matrices among them copied to the host,
    for scikit-learn's metrics (which refuse device arrays); the others as they are."""
    return tuple(_host(v) for v in values)


def fit_device(device, X):
    """Whether a fit runs on the GPU: ``device="cuda"``, or X on a device (which
    ``device="cpu"`` refuses with a clear TypeError)."""
    check_device(device)
    if is_device_matrix(X) and device == "cpu":
        raise TypeError("X is on the GPU (CuPy) but device='cpu': pass device='cuda', or "
                        "X.get() to fit on the CPU")
    return device == "cuda"


def check_device_X(X, n_features=None):
    """Validate device X (CuPy 2-D array or cupyx sparse matrix): float32/float64 (other
    real dtypes cast to float64), finite, at least one row, ``n_features`` columns when
    given. Returns X as a C-contiguous array or a canonical CSR matrix."""
    cp = require_cupy()
    if hasattr(X, "tocsr"):
        X = X.tocsr()
        values = X.data
    else:
        X = cp.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"Expected a 2D array, got an array of shape {X.shape}")
        values = X
    if values.dtype.kind == "c":
        raise TypeError("X must be real, got complex values")
    if X.dtype not in (cp.float32, cp.float64):
        X = X.astype(cp.float64)
        values = X.data if hasattr(X, "tocsr") else X
    if X.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum "
                         "of 1 is required.")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but the model is expecting "
                         f"{n_features} features as input.")
    if values.size and not bool(cp.isfinite(values).all()):
        raise ValueError("Input X contains NaN or infinity.")
    return X if hasattr(X, "tocsr") else cp.ascontiguousarray(X)


def to_device(X):
    """Validated host X (NumPy or SciPy sparse) as a CuPy array or cupyx CSR matrix."""
    cp = require_cupy()
    if sp.issparse(X):
        import cupyx.scipy.sparse as cusp

        return cusp.csr_matrix(X.tocsr())
    return cp.asarray(np.ascontiguousarray(X))


def host_targets(X, y, sample_weight, multi_output=False):
    """y and sample_weight on the host, checked against the rows of device X (y of shape
    (n_samples,), or with ``multi_output`` also (n_samples, n_outputs), dense or sparse)."""
    y = _host(y)
    if not sp.issparse(y):
        y = np.asarray(y)
        if not multi_output and y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)      # a column of labels, as for host X
    shapes = f"({X.shape[0]},)" + (f" or ({X.shape[0]}, n_outputs)" if multi_output else "")
    if y.ndim not in ((1, 2) if multi_output else (1,)) or y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have shape {shapes} to match X, got {y.shape}")
    if sample_weight is None:
        return y, np.ones(X.shape[0])
    # scikit-learn's checks and messages, as for host X (only X's row count is read)
    return y, _check_sample_weight(_host(sample_weight), np.empty((X.shape[0], 0)),
                                   dtype=np.float64, ensure_non_negative=True)


def device_row_sq_norms(X):
    """‖xᵢ‖² of every row of a CuPy array or cupyx sparse matrix X, summed in float64 on
    the device, on the host."""
    cp = require_cupy()
    X = X.astype(cp.float64)                 # a float32 entry's square may overflow
    squares = X.multiply(X) if hasattr(X, "tocsr") else X * X
    return cp.asnumpy(cp.asarray(squares.sum(axis=1))).ravel()


def device_scale_sums(X, sw):
    """:func:`~sparsekit.utils._rows.weighted_scale_sums` of a CuPy array or cupyx sparse
    matrix X under the host weights ``sw`` (float64, largest 1: they are cast to X's
    dtype), its columns' sums taken on the device."""
    weights = to_device(sw).astype(X.dtype)
    if hasattr(X, "multiply"):                       # cupyx sparse
        squared, nonzero = X.multiply(X), X.copy()
        nonzero.data = (nonzero.data != 0).astype(X.dtype)
    else:
        squared, nonzero = X * X, (X != 0).astype(X.dtype)
    return scale_sums_of(*(np.asarray(_host(A.T @ weights), dtype=np.float64).ravel()
                           for A in (squared, nonzero)), sw.sum())


#: bytes of float64 entries of a device X's rows that :func:`device_column_stats` squares
#: at a time (its temporaries: device memory is scarce)
DEVICE_BLOCK_BYTES = 1 << 26


def device_column_stats(X):
    """Unweighted :func:`~sparsekit.utils._rows.weighted_column_stats` of a CuPy array or
    cupyx sparse matrix X (float64 on the host), summed on the device over blocks of rows
    (:func:`device_scale_sums` of each: temporaries of at most DEVICE_BLOCK_BYTES)."""
    n, d = X.shape
    step = max(1, DEVICE_BLOCK_BYTES // (8 * max(d, 1)))
    sums = np.zeros(2 * d)
    for start in range(0, n, step):
        block = X[start:start + step]
        sums += device_scale_sums(block, np.ones(block.shape[0]))[3:]
    return sums[:d], sums[d:]


def device_scores(X, coef, intercept):
    """X coefᵀ + intercept on X's device, in float32 only when both X and coef are (X as a
    user gave it: validated here)."""
    return device_product(check_device_X(X, coef.shape[1]), coef, intercept)


def device_product(X, coef, intercept):
    """:func:`device_scores` of device X already validated (host X validated and moved,
    or rows of validated device X): no second pass over X's values."""
    cp = require_cupy()
    dtype = np.result_type(X.dtype, coef.dtype)
    coef = coef.toarray() if sp.issparse(coef) else coef
    scores = X.astype(dtype) @ cp.asarray(np.ascontiguousarray(coef.T, dtype=dtype))
    return cp.asarray(scores) + cp.asarray(intercept.astype(dtype))


def device_nll(X, coef, intercept, y_idx):
    """Per-row NLL of the labels ``y_idx`` (class indices, on the host) under the linear
    softmax model (``coef``, ``intercept``: float64 host arrays) for the rows of validated
    device ``X``: the scores of a chunk of rows at a time, the exact log-softmax in log
    space; a host array out."""
    cp = require_cupy()
    nll = np.empty(X.shape[0])
    for rows in _chunks(X.shape[0], coef.shape[0]):
        S = device_product(X[rows], coef, intercept)
        Z = S - S.max(axis=1, keepdims=True)
        labels = cp.asarray(y_idx[rows])
        nll[rows] = (cp.log(cp.exp(Z).sum(axis=1))
                     - Z[cp.arange(Z.shape[0]), labels]).get()
    return nll


def device_outputs(S, kind, classes, dtype):
    """A classifier's predictions from its float64 device scores ``S``: ``kind``
    "scores", "log_proba", "proba" (in ``dtype``), "labels" or an int k, the top k labels
    (a CuPy array for numeric ``classes``)."""
    cp = require_cupy()
    if kind == "labels" or isinstance(kind, int):
        best = (S.argmax(axis=1) if kind == "labels"   # top k: ties to the lower class
                else cp.argsort(-S, axis=1, kind="stable")[:, :kind])
        if classes.dtype.kind in "biuf":
            return cp.asarray(classes)[best]
        return classes[best.get()]
    if kind != "scores":
        Z = S - S.max(axis=1, keepdims=True)
        S = Z - cp.log(cp.exp(Z).sum(axis=1, keepdims=True))
        if kind == "proba":
            S = cp.exp(S)
    return S.astype(dtype)
