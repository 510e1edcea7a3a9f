"""LIBSVM / svmlight text files, compressed or not."""
import codecs
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from ._home import CORRUPT, _find_file, _open_binary

# name -> (file under the data home, number of features on the LIBSVM data page)
_LIBSVM_FILES = {
    "a9a": ("libsvm/a9a.xz", 123),
    "a9a.t": ("libsvm/a9a.t.xz", 123),
    "w8a": ("libsvm/w8a.xz", 300),
}


def load_libsvm(name_or_path, n_features=None, data_home=None, dtype=np.float64,
                zero_based=False, multilabel=False):
    r"""Load a LIBSVM-format file as a CSR matrix and a label vector.

    Parameters
    ----------
    name_or_path : str or path-like
        ``"a9a"``, ``"a9a.t"`` or ``"w8a"`` (files of the data home), or a path to a
        LIBSVM file, plain or compressed (``.xz``, ``.gz``, ``.bz2``).
    n_features : int, default=None
        Number of columns. For the named sets it defaults to the LIBSVM page's count
        (123 for a9a and a9a.t, whose test rows never use feature 123; 300 for w8a);
        for a path, to the largest index present.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.
    dtype : numpy dtype, default=np.float64
        dtype of ``X``.
    zero_based : bool or "auto", default=False
        Whether the file numbers its columns from 0. LIBSVM files number them from 1 (column
        ``j`` of ``X`` is written ``j+1:``), and the default reads them so: a ``0:`` token is
        then an error, never a silent shift of every column. ``True`` reads zero-based
        files; ``"auto"`` guesses as :func:`sklearn.datasets.load_svmlight_file` does
        (zero-based as soon as one index is 0).
    multilabel : bool, default=False
        Read a multi-label file, whose rows start with comma-separated labels
        (``0,4 1:0.64 ...``; an empty label list is allowed).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64, or list of tuples
        Labels as stored in the file (``-1``/``+1`` for the binary sets); with
        ``multilabel=True``, a tuple of float labels per row (scikit-learn's convention:
        :class:`sklearn.preprocessing.MultiLabelBinarizer` turns them into an indicator
        matrix).

    Raises
    ------
    ValueError
        For a file that is not in the LIBSVM format, is truncated, or holds an index of 0
        while ``zero_based=False``; the message gives the number of the first line that
        cannot be read (from 1, comments and blank lines counted) and what is wrong in it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from sparsekit.datasets import load_libsvm
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.svm"
    >>> _ = path.write_text("+1 1:0.5 3:1\n-1 2:2\n")
    >>> X, y = load_libsvm(path)
    >>> X.toarray()
    array([[0.5, 0. , 1. ],
           [0. , 2. , 0. ]])
    >>> y
    array([ 1., -1.])
    >>> _ = path.write_text("0,2 1:0.5\n 2:2\n1 3:1\n")    # label sets; the second is empty
    >>> load_libsvm(path, multilabel=True)[1]
    [(0.0, 2.0), (), (1.0,)]
    """
    if zero_based not in (True, False, "auto"):
        raise ValueError(f"zero_based must be True, False or 'auto', got {zero_based!r}")
    if isinstance(name_or_path, str) and name_or_path in _LIBSVM_FILES:
        relative, default_n_features = _LIBSVM_FILES[name_or_path]
        path = _find_file(relative, data_home)
        if n_features is None:
            n_features = default_n_features
    else:
        path = Path(name_or_path)
        if not path.exists() and not path.suffix and len(path.parts) == 1:
            raise FileNotFoundError(f"{name_or_path!r} is neither a known data set "
                                    f"({', '.join(sorted(_LIBSVM_FILES))}) nor a file")
    f = _open_binary(path)       # a missing file or a folder: its own error, not CORRUPT
    try:
        with f:
            if f.peek(3)[:3] == codecs.BOM_UTF8:    # a UTF-8 byte order mark (Windows tools)
                f.read(3)
            X, y = load_svmlight_file(f, n_features=n_features, dtype=dtype,
                                      zero_based=zero_based, multilabel=multilabel)
    except CORRUPT as exc:
        raise ValueError(f"{path}: corrupt or truncated file ({exc})") from None
    except (OverflowError, ValueError) as exc:
        found = _first_bad_line(path, zero_based, multilabel)
        if found is not None:
            raise ValueError(f"{path}, line {found[0]}: {found[1]}") from None
        raise ValueError(f"{path}: {exc}") from None
    X = X.tocsr()
    if X.nnz < 2**31 and X.shape[1] < 2**31:
        # int32 indices, as SciPy builds them: scikit-learn's saga, skglm and celer refuse
        # int64 ones
        X.indices, X.indptr = X.indices.astype(np.int32), X.indptr.astype(np.int32)
    return X, (y if multilabel else np.asarray(y))


def _first_bad_line(path, zero_based, multilabel):
    """(number from 1, what is wrong) of the first line of the LIBSVM file ``path`` that
    scikit-learn's reader refuses, read again by its rules; None when none is found (then
    its own message stands). Only an error pays for this second pass."""
    try:
        with _open_binary(path) as f:
            for number, line in enumerate(f, start=1):
                if number == 1 and line.startswith(codecs.BOM_UTF8):
                    line = line[3:]
                fault = _line_fault(line.split(b"#", 1)[0].split(), zero_based, multilabel)
                if fault is not None:
                    return number, fault
    except CORRUPT:
        pass
    return None


def _line_fault(tokens, zero_based, multilabel):
    """What is wrong with one line's ``tokens`` (the label or label set, an optional
    ``qid:``, then ``index:value`` pairs of increasing indices), or None."""
    if not tokens:
        return None
    label, pairs = tokens[0], tokens[1:]
    if multilabel and b":" in label:        # a row without labels
        label, pairs = b"", tokens
    for part in (label.split(b",") if multilabel and label else [label] if label else []):
        if not _is_number(part):
            several = not multilabel and all(map(_is_number, label.split(b",")))
            hint = "; a row of labels separated by commas needs multilabel=True" * several
            return f"the label {_shown(tokens[0])} is not a number{hint}"
    if pairs and pairs[0].startswith(b"qid"):
        pairs = pairs[1:]
    first = 0 if zero_based else 1
    previous = first - 1
    for pair in pairs:
        seen = _shown(pair)
        index, colon, value = pair.partition(b":")
        if not colon:
            return f"{seen} is not an index:value pair"
        try:
            index = int(index)
        except ValueError:
            return f"the index of {seen} is not an integer"
        if index < first:
            return (f"the index of {seen} is below {first}" + (
                " (column indices start at 1 in LIBSVM files; pass zero_based=True for a "
                "file numbered from 0)" if index == 0 else ""))
        if index >= 2**31:
            return (f"the index of {seen} is too large to read (the parser takes indices "
                    "below 2**31)")
        if index <= previous:
            return (f"the indices of a row must increase, and {seen} follows index "
                    f"{previous} (LIBSVM's own reader refuses such a row too)")
        if not _is_number(value):
            return f"the value of {seen} is not a number"
        previous = index
    return None


def _shown(token):
    """A token of the file as a message quotes it (its first 40 characters)."""
    return repr(token.decode(errors="replace")[:40])


def _is_number(token):
    try:
        float(token)
    except ValueError:
        return False
    return True


def load_a9a():
    """Load a9a, the binary data set shipped inside sparsekit (32561 x 123, labels -1/+1).

    The training set of the LIBSVM data page: the UCI Adult census income data (CC BY 4.0)
    with its 14 attributes binarized into 123 0/1 features by Platt (1998); the task is
    whether a person's income exceeds $50K a year. It needs no download and no data home
    (``sparsekit-compare``'s default); ``load_libsvm("a9a")`` reads the data home's copy.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (32561, 123), float64
    y : ndarray of shape (32561,), float64
        ``-1`` (24720 rows) or ``+1`` (7841 rows).

    References
    ----------
    .. [1] Kohavi, R. (1996). Scaling up the accuracy of Naive-Bayes classifiers: a
       decision-tree hybrid. KDD (the Adult data set, UCI Machine Learning Repository).
    .. [2] Platt, J. C. (1998). Fast training of support vector machines using sequential
       minimal optimization. In Advances in Kernel Methods (the a9a binarization).
    .. [3] Chang, C.-C. & Lin, C.-J. (2011). LIBSVM: a library for support vector
       machines. ACM TIST 2(3) (the LIBSVM data page).

    Examples
    --------
    >>> from sparsekit.datasets import load_a9a
    >>> X, y = load_a9a()
    >>> X.shape, int((y == 1).sum())
    ((32561, 123), 7841)
    """
    return load_libsvm(Path(__file__).with_name("data") / "a9a.xz", n_features=123)
