"""Label containers of multi-label data: indicator matrices and label collections."""
import numpy as np
import scipy.sparse as sp

from ._validation import check_sparse_structure


def first_label(Y):
    """First-label policy for multi-label targets (Titsias 2016; Fagan & Iyengar 2018).

    Parameters
    ----------
    Y : {array-like, sparse matrix} of shape (n, L), or sequence of label sequences
        A label-indicator matrix (the first label is the lowest active column) or, per
        example, a list of labels in file order (the first one listed is kept; a set has no
        order, so its smallest label is kept) or a single label.

    Returns
    -------
    y : ndarray of shape (n,)

    Raises
    ------
    ValueError
        If an example has no label; drop such rows before fitting.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.linear_model import first_label
    >>> first_label([[3, 1], [2], (5, 0)])
    array([3, 2, 5])
    >>> first_label(np.array([[0, 1, 1], [1, 0, 0]])).tolist()
    [1, 0]
    """
    if sp.issparse(Y) or getattr(Y, "ndim", 1) == 2:  # also an ndarray or a DataFrame
        Y = _indicator(Y)
        bad = np.flatnonzero(np.diff(Y.indptr) == 0)
        if bad.size:
            raise ValueError(f"{bad.size} examples have no label (first: row {bad[0]}); "
                             "drop them before fitting")
        Y.sort_indices()
        return Y.indices[Y.indptr[:-1]].copy()
    out = []
    for i, labels in enumerate(_label_entries(Y, "Y")):
        if not isinstance(labels, _COLLECTIONS):
            out.append(labels)          # one label (a string too, not its characters)
            continue
        if isinstance(labels, (set, frozenset)):
            try:
                labels = sorted(labels)
            except TypeError:
                raise ValueError(f"example {i}: a set of labels has no first label, and "
                                 "these cannot be sorted; pass a list in file order") from None
        labels = list(labels)
        if not labels:
            raise ValueError(f"example {i} has no label; drop such rows before fitting")
        out.append(labels[0])
    return np.asarray(out)


def _label_sets(y_true):
    """One set of labels per example from an indicator matrix (dense, sparse or DataFrame),
    one label per example, or one collection (list, tuple, set, array) of labels each; read
    by position, so a pandas Series with any index works. A dense single column holds one
    label per example, as ``fit`` reads it."""
    if not sp.issparse(y_true) and getattr(y_true, "ndim", 1) == 2 and y_true.shape[1] == 1:
        y_true = np.asarray(y_true).ravel()
    if sp.issparse(y_true) or getattr(y_true, "ndim", 1) == 2:
        Y = _indicator(y_true)
        return [set(Y.indices[Y.indptr[i]:Y.indptr[i + 1]].tolist())
                for i in range(Y.shape[0])]
    try:
        return [set(np.asarray(v).tolist()) if isinstance(v, np.ndarray)
                else set(v) if isinstance(v, _COLLECTIONS) else {v}
                for v in _label_entries(y_true, "y_true")]
    except TypeError as exc:            # a label that is itself a list, a dict, ...
        raise ValueError(f"y_true holds an unhashable label ({exc}): one label or one "
                         "collection of labels (numbers, strings) per example") from None


_COLLECTIONS = (list, tuple, set, frozenset, np.ndarray)


def refuse_label_collections(y, estimator):
    """ValueError for ``y`` holding one collection of labels per example (``[[0, 3], [1]]``,
    sets, a pandas Series of lists), which ``estimator`` takes as a 0/1 indicator matrix
    instead; rows of numbers of one length are such a matrix, and pass."""
    if isinstance(y, (list, tuple)):
        entries = list(y)
    elif (hasattr(y, "tolist") and getattr(y, "ndim", None) == 1
          and getattr(y, "dtype", None) is not None and y.dtype.kind == "O"):
        entries = y.tolist()            # an object array, a pandas Series
    else:                               # anything else is the array checks' to judge
        return
    if not entries or not isinstance(entries[0], _COLLECTIONS):
        return
    if any(isinstance(e, (set, frozenset)) for e in entries) or len(
            {len(e) if isinstance(e, _COLLECTIONS) else -1 for e in entries}) > 1:
        raise ValueError(f"y holds a collection of labels per example; {estimator} takes "
                         "label sets as a 0/1 indicator matrix, a column per label: "
                         "sklearn.preprocessing.MultiLabelBinarizer().fit_transform(y) makes "
                         "one (its classes_ name the columns)")


def _label_entries(Y, name):
    """The entries of a 1-D label container (list, tuple, array, pandas Series) by
    position: one label or one collection of labels per example."""
    if (not hasattr(Y, "__len__") or isinstance(Y, (str, bytes))
            or getattr(Y, "ndim", 1) != 1):
        raise ValueError(f"{name} must hold one label or one collection of labels per "
                         f"example (or be an indicator matrix), got {type(Y).__name__} of "
                         f"shape {getattr(Y, 'shape', ())}")
    return Y.tolist() if isinstance(Y, np.ndarray) else list(Y)


def _label_kinds(labels, name):
    """{"string"} or {"numeric"} (both for mixed labels); NaN labels are refused."""
    if any(isinstance(v, (float, np.floating)) and v != v for v in labels):
        raise ValueError(f"{name} contains NaN labels")
    return {"string" if isinstance(v, str) else "numeric" for v in labels}


def _indicator(Y):
    """A label-indicator matrix (dense, sparse or DataFrame) as a CSR copy (the caller's
    arrays are never reordered) without explicit zeros. Its entries must be 0 or 1: a 2-D
    array of label ids would otherwise be read as an indicator."""
    check_sparse_structure(Y, "y")
    Y = sp.csr_matrix(Y, copy=True) if sp.issparse(Y) else sp.csr_matrix(np.asarray(Y))
    Y.eliminate_zeros()
    if not np.all(Y.data == 1):
        raise ValueError("a 2-D target must be a 0/1 label-indicator matrix (column j is "
                         "label j); pass label ids as one sequence of labels per example")
    return Y


def _declared_classes(classes):
    """``partial_fit``'s ``classes``, sorted and unique: a 1-D array of labels, none NaN."""
    classes = np.asarray(classes)
    if classes.ndim != 1:
        raise ValueError(f"classes must be 1-D, got shape {classes.shape}")
    _label_kinds(classes.tolist(), "classes")          # refuses NaN
    try:
        return np.unique(classes)
    except TypeError:
        raise ValueError("classes must be labels of one sortable type (e.g. all ints or "
                         "all strings)") from None


def _is_multilabel(y):
    """Whether ``y`` holds several labels per example (indicator matrix or label
    collections, in a list, tuple, array or pandas object)."""
    if sp.issparse(y):
        return True
    if getattr(y, "ndim", 1) == 2:
        return y.shape[1] > 1
    if isinstance(y, np.ndarray) and y.dtype != object:
        return False
    items = y if isinstance(y, (list, tuple, np.ndarray)) else getattr(y, "values", None)
    return (items is not None and len(items) > 0
            and isinstance(items[0], (list, tuple, set, frozenset, np.ndarray)))
