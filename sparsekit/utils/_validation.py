"""Input checks shared by the estimators and the array-level API."""
import functools
import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import validate_data

_DEVICES = ("cpu", "cuda")


def is_positive_integer(value):
    """Whether ``value`` is a whole number >= 1 (an int, or a float such as 5.0), not a bool
    nor None."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and float(value).is_integer() and value >= 1)


def unchanged_on_error(fit):
    """Decorator for an estimator's ``fit``: a call that raises leaves the estimator's
    attributes as they were, so that a refit on bad input keeps the fitted model usable
    (validation sets ``n_features_in_``, and target encoding ``classes_``, before later
    checks fail)."""
    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        state = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(state)
            raise
    return guarded


def with_uniform_indices(X):
    """A CSR/CSC matrix whose ``indices`` and ``indptr`` share one integer type (the kernels
    take one): ``X`` itself, or, when they differ (arrays assigned by hand; SciPy's
    constructors unify them), the same matrix rebuilt on int64 index arrays."""
    if X.indices.dtype == X.indptr.dtype:
        return X
    X = X.copy()
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    return X


def check_sparse_structure(X, name="X"):
    """Raise ``ValueError`` when a sparse ``X``'s index arrays point outside its shape, so
    that no kernel (nor SciPy's format conversions) reads or writes out of bounds.

    O(nnz), vectorized; dense input and formats without raw index arrays pass unchecked.
    CSR/CSC/BSR: ``indptr`` of length (rows or columns) + 1, from 0, non-decreasing, up
    to at most ``len(indices)`` (and ``len(data)``), ``indices`` in [0, other dimension);
    COO: ``row`` and ``col`` inside the shape.
    """
    if not sp.issparse(X):
        return
    if X.format == "coo":
        for coords, size in ((X.row, X.shape[0]), (X.col, X.shape[1])):
            if coords.size and (coords.min() < 0 or coords.max() >= size):
                raise ValueError(f"{name} (COO) has coordinates outside its shape {X.shape}")
        return
    if X.format not in ("csr", "csc", "bsr"):
        return
    indptr, indices = X.indptr, X.indices
    major, minor = X.shape if X.format != "csc" else X.shape[::-1]
    if X.format == "bsr":
        major, minor = major // X.blocksize[0], minor // X.blocksize[1]
    if (indptr.ndim != 1 or indptr.size != major + 1 or indptr[0] != 0
            or np.any(np.diff(indptr) < 0) or indptr[-1] > min(indices.size, len(X.data))):
        raise ValueError(f"{name} ({X.format.upper()}) has an invalid indptr: it must start at "
                         "0, never decrease and end at most at the number of stored entries")
    stored = indices[:indptr[-1]]
    if stored.size and (stored.min() < 0 or stored.max() >= minor):
        raise ValueError(f"{name} ({X.format.upper()}) has indices outside [0, {minor})")


def validate_input(estimator, X, y="no_validation", **check_params):
    """scikit-learn's ``validate_data`` after ``check_sparse_structure`` of ``X`` (and of a
    sparse ``y``): the entry point of every estimator's input."""
    check_sparse_structure(X)
    check_sparse_structure(y, "y")
    return validate_data(estimator, X, y, **check_params)


def check_entry_magnitude(X, dtype):
    """Raise ``ValueError`` when ``X`` (dense or sparse, finite) has entries so large that
    its squared row norms may overflow ``dtype``, the type the solver computes in."""
    values = X.data if sp.issparse(X) else X
    largest = max(float(values.max()), -float(values.min())) if values.size else 0.0
    if largest > np.sqrt(np.finfo(dtype).max / max(X.shape[1], 1)):
        raise ValueError(f"X has entries up to {largest:.3g} in magnitude, whose squared row "
                         f"norms overflow {np.dtype(dtype).name}; rescale the features (e.g. "
                         "MaxAbsScaler)")


def check_two_classes(classes):
    """Raise, as scikit-learn's LogisticRegression does, when the sorted labels ``classes``
    hold fewer than two classes."""
    if classes.size < 2:
        raise ValueError("This solver needs samples of at least 2 classes in the data, but "
                         f"the data contains only one class: {classes[0].tolist()!r}")


def check_device(device):
    """Return ``device`` if it names a supported device, else raise ``ValueError``."""
    if device not in _DEVICES:
        raise ValueError(f"device must be one of {_DEVICES}, got {device!r}")
    return device


def check_finite_2d(Z, name="Z"):
    """Validate a dense 2-D float array row-wise kernels can consume.

    Returns a C-contiguous float32/float64 array (float64 for other dtypes).
    Raises ``ValueError`` on wrong dimensionality, empty columns, NaN or inf, and
    ``TypeError`` on sparse or complex input.
    """
    if sp.issparse(Z):
        raise TypeError(f"{name} must be a dense array, got a sparse matrix")
    Z = np.asarray(Z)
    if Z.dtype.kind == "c":
        raise TypeError(f"{name} must be real, got complex values")
    if Z.dtype not in (np.float64, np.float32):
        Z = Z.astype(np.float64)
    if Z.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_rows, n_classes), got shape {Z.shape}")
    if Z.shape[1] == 0:
        raise ValueError(f"{name} must have at least one column")
    if not np.isfinite(Z).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return np.ascontiguousarray(Z)
