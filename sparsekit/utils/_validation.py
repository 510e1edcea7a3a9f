"""Input checks shared by the estimators and the array-level API."""
import itertools
import numbers
import os

import numpy as np
import scipy.sparse as sp
from sklearn import config_context, get_config
from sklearn.utils.validation import assert_all_finite, validate_data

_DEVICES = ("cpu", "cuda")


def is_positive_integer(value):
    """Whether ``value`` is a whole number >= 1 (an int, or a float such as 5.0), not a bool
    nor None."""
    return (isinstance(value, numbers.Real) and not isinstance(value, bool)
            and float(value).is_integer() and value >= 1)


def with_uniform_indices(X):
    """A CSR/CSC matrix whose ``indices`` and ``indptr`` are both int32 or both int64 (the
    kernels take one of those two types): ``X`` itself, or the same matrix rebuilt on int64
    index arrays when they differ or are of another integer type (uint32, int16, uint64...:
    arrays assigned by hand; SciPy's constructors never make them). Call it after
    :func:`check_sparse_structure`, which has checked that every index fits."""
    if X.indices.dtype == X.indptr.dtype and X.indices.dtype in _INDEX_TYPES:
        return X
    X = X.copy()
    X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    return X


_INDEX_TYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _check_index_array(values, name, what):
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        raise TypeError(f"{name} has {what} of dtype {values.dtype}; sparse index arrays "
                        "must hold integers")
    return values


def _check_range(values, size, name, what):
    """``ValueError`` unless every entry of the integer array ``values`` is in [0, size)."""
    if values.size and (values.min() < 0 or values.max() >= size):
        raise ValueError(f"{name} has {what} outside [0, {size}): "
                         f"{int(values.min())}..{int(values.max())}")


def check_sparse_structure(X, name="X"):
    """Raise when a sparse ``X``'s stored structure points outside its shape, so that no
    kernel (nor SciPy's format conversions, which trust it) reads or writes out of bounds.

    Checks every scipy.sparse format in O(nnz), vectorized (LIL and DOK in Python, as their
    storage is):

    - CSR/CSC/BSR: ``indptr`` of length (rows or columns) + 1, from 0, non-decreasing, up to
      at most ``len(indices)`` and ``len(data)``; ``indices`` in [0, other dimension);
    - COO: ``row``, ``col`` and ``data`` of one length, coordinates inside the shape;
    - LIL: one index list per row, as long as its value list, indices inside the shape;
    - DOK: keys inside the shape; DIA: one data row per offset.

    Index arrays must hold integers (``TypeError`` otherwise); ``ValueError`` names the
    defect. Dense input passes unchecked.
    """
    if not sp.issparse(X):
        return
    fmt = X.format
    label = f"{name} ({fmt.upper()})"
    n_rows, n_cols = X.shape
    if fmt == "coo":
        row = _check_index_array(X.row, label, "row coordinates")
        col = _check_index_array(X.col, label, "column coordinates")
        if not row.shape == col.shape == np.shape(X.data):
            raise ValueError(f"{label} has row, col and data arrays of different lengths "
                             f"({row.size}, {col.size}, {np.size(X.data)})")
        _check_range(row, n_rows, label, "row coordinates")
        _check_range(col, n_cols, label, "column coordinates")
    elif fmt in ("csr", "csc", "bsr"):
        _check_compressed(X, label)
    elif fmt == "lil":
        _check_lil(X, label)
    elif fmt == "dok":
        if len(X):
            keys = np.array(list(X.keys()))
            if keys.ndim != 2 or keys.shape[1] != 2 or keys.dtype.kind not in "iu":
                raise ValueError(f"{label} has keys that are not (row, column) integer pairs")
            _check_range(keys[:, 0], n_rows, label, "row indices")
            _check_range(keys[:, 1], n_cols, label, "column indices")
    elif fmt == "dia":
        _check_index_array(X.offsets, label, "offsets")
        if np.ndim(X.data) != 2 or np.shape(X.data)[0] != np.size(X.offsets):
            raise ValueError(f"{label} must hold one data row per offset, got data of shape "
                             f"{np.shape(X.data)} for {np.size(X.offsets)} offsets")


def _check_compressed(X, label):
    indptr = _check_index_array(X.indptr, label, "an indptr")
    indices = _check_index_array(X.indices, label, "indices")
    major, minor = X.shape if X.format != "csc" else X.shape[::-1]
    if X.format == "bsr":
        major, minor = major // X.blocksize[0], minor // X.blocksize[1]
    if (indptr.ndim != 1 or indptr.size != major + 1 or indptr[0] != 0
            or np.any(indptr[1:] < indptr[:-1]) or indptr[-1] > min(indices.size, len(X.data))):
        raise ValueError(f"{label} has an invalid indptr: it must hold {major + 1} entries, "
                         "start at 0, never decrease and end at most at the number of stored "
                         f"entries ({min(indices.size, len(X.data))})")
    _check_range(indices[:indptr[-1]], minor, label, "indices")


def _check_lil(X, label):
    rows, data = X.rows, X.data
    if np.shape(rows) != (X.shape[0],) or np.shape(data) != (X.shape[0],):
        raise ValueError(f"{label} must hold one index list and one value list per row")
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    if not np.array_equal(lengths, np.fromiter(map(len, data), np.int64, count=len(data))):
        raise ValueError(f"{label} has a row whose index and value lists differ in length")
    if lengths.sum():
        # one pass over the lists (read as floats: a non-integer entry is then seen, not cast)
        try:
            indices = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.float64,
                                  count=int(lengths.sum()))
        except (TypeError, ValueError):
            indices = np.array([np.nan])
        if np.any(indices != np.floor(indices)):
            raise TypeError(f"{label} has column indices that are not integers; sparse index "
                            "arrays must hold integers")
        _check_range(indices, X.shape[1], label, "column indices")


def validate_input(estimator, X, y="no_validation", **check_params):
    """scikit-learn's ``validate_data`` between two :func:`check_sparse_structure` checks:
    the input as given (SciPy's conversions trust its structure) and what the kernels
    receive (CSR/CSC with int32 or int64 index arrays, see :func:`with_uniform_indices`).
    The entry point of every estimator's input; returns what ``validate_data`` returns."""
    check_sparse_structure(X)
    check_sparse_structure(y, "y")
    check_column_kinds(X, type(estimator).__name__)
    out = validate_data(estimator, X, y, **check_params)
    if isinstance(out, tuple):
        return tuple(checked_sparse(v, n) for v, n in zip(out, ("X", "y")))
    return checked_sparse(out)


def check_column_kinds(X, model="the model"):
    """Raise a ``ValueError`` naming the column when X (a pandas or dask DataFrame, a NumPy or
    dask array) holds dates or durations (datetime64, timedelta64, time-zone-aware or Arrow
    timestamps), or when a pandas DataFrame's text column holds a value that is not a
    number: scikit-learn's conversion reports the first as NumPy's "DType could not be
    promoted" and the second as "could not convert string to float", without the column."""
    if type(X).__module__.startswith("polars"):
        return _check_polars_text(X, model)
    dtypes = getattr(X, "dtypes", None)
    columns = (list(dtypes.items()) if hasattr(dtypes, "items")
               else [(None, getattr(X, "dtype", None))])
    for position, (name, dtype) in enumerate(columns):
        kind = getattr(dtype, "kind", None)
        where = "X" if name is None else f"X's column {name!r}"
        them = "them" if name is None else "it"
        if kind in ("M", "m"):
            what, how = (("dates", "seconds since a date, or the year, month and weekday as "
                          "columns") if kind == "M" else ("durations", "seconds, e.g. pandas' "
                                                          ".dt.total_seconds()"))
            raise ValueError(f"{where} holds {what} ({dtype}); {model} takes numbers: convert "
                             f"{them} first ({how}) or drop {them}")
        if name is not None and kind == "O" and not hasattr(X, "compute"):   # pandas' text
            text = _first_text(X.iloc[:, position])
            if text is not None:
                raise _text_error(name, text, model)


def _check_polars_text(X, model):
    """:func:`check_column_kinds` of a polars DataFrame: its text columns (polars turns
    its dates into numbers for scikit-learn)."""
    import polars as pl

    for name, dtype in X.schema.items():
        if isinstance(dtype, (pl.String, pl.Categorical, pl.Enum)):
            column = X.get_column(name).cast(pl.String)
            numbers = column.cast(pl.Float64, strict=False)
            text = column.filter(numbers.is_null() & column.is_not_null())
            if len(text):
                raise _text_error(name, text[0], model)


def _text_error(name, value, model):
    """The ValueError of :func:`check_column_kinds` for X's column ``name`` holding
    ``value``, which is not a number."""
    what = "text" if isinstance(value, str) else "values that are not numbers"
    return ValueError(f"X's column {name!r} holds {what} ({value!r}); {model} takes numbers: "
                      "encode it first (OneHotEncoder for categories, TfidfVectorizer for free "
                      "text, in a ColumnTransformer) or drop it")


def _first_text(column):
    """The first value of a pandas column (of objects, strings or categories) that is
    neither missing nor a number as scikit-learn converts it, or None."""
    import pandas as pd

    values = column.dropna()
    numbers = pd.to_numeric(values.astype(object), errors="coerce")
    text = values[numbers.isna().to_numpy()]
    return None if text.empty else text.iloc[0]


def checked_sparse(X, name="X"):
    """``X`` after :func:`check_sparse_structure`, CSR/CSC on int32 or int64 indices (a
    sparse matrix of another format is returned as it is, checked)."""
    check_sparse_structure(X, name)
    if sp.issparse(X) and X.format in ("csr", "csc"):
        return with_uniform_indices(X)
    return X


def raise_unchecked_nonfinite(estimator, inputs, error):
    """Under ``sklearn.set_config(assume_finite=True)`` scikit-learn's check of NaN and
    infinite input values is skipped, and such values reach the solvers, which fail later
    with errors about what they saw instead (an underflow, an objective that is not finite,
    a diverging step). When ``error`` is such a failure, raise scikit-learn's own message
    for the first of ``inputs`` (``{name: value}``, NumPy, SciPy sparse, pandas, polars or
    lists) that holds one, chained to ``error``; return when none does (the check costs a
    pass over them, on this error path only)."""
    if not (get_config()["assume_finite"] and isinstance(error, (ValueError, ArithmeticError))):
        return
    for name, value in inputs.items():
        if (isinstance(value, (list, tuple))
                or type(value).__module__.split(".")[0] in ("pandas", "polars")):
            try:
                value = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):    # text columns: not this error's cause
                continue
        if not (isinstance(value, np.ndarray) or sp.issparse(value)):
            continue
        try:
            with config_context(assume_finite=False):
                assert_all_finite(value, estimator_name=type(estimator).__name__,
                                  input_name=name)
        except ValueError as nonfinite:
            first, newline, rest = str(nonfinite).partition("\n")
            raise ValueError(f"{first.rstrip('.')} (assume_finite=True skipped scikit-learn's "
                             f"check of the input).{newline}{rest}") from error


def check_entry_magnitude(X, dtype):
    """Raise ``ValueError`` when ``X`` (dense or sparse, finite; NumPy/SciPy or CuPy/cupyx)
    has entries so large that its squared row norms may overflow ``dtype``, the type the
    solver computes in."""
    values = X.data if sp.issparse(X) or hasattr(X, "tocsr") else X
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


def physical_memory():
    """This machine's physical memory in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def check_dense_size(name, dims, itemsize, remedy):
    """Refuse, before a fit starts, a dense result larger than half of the machine's memory
    (wide or hashed columns with many classes), which would otherwise run out of memory
    at the fit's end. ``dims``: (label, size) pairs whose sizes multiply to the shape."""
    size = float(itemsize) * np.prod([n for _, n in dims], dtype=np.float64)
    memory = physical_memory()
    if memory is not None and size > memory / 2:
        shape = " x ".join(f"{n:,} {label}" for label, n in dims)
        raise ValueError(f"{name} would take {size / 2**30:.1f} GiB as a dense array ({shape}), "
                         f"more than half of this machine's {memory / 2**30:.1f} GiB: {remedy}")
