"""Input checks shared by the estimators and the array-level API."""
import functools
import numbers

import numpy as np
import scipy.sparse as sp

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
