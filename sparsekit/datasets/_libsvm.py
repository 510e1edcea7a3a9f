"""LIBSVM / svmlight text files, compressed or not (MANIFEST.md, "LIBSVM files")."""
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


def load_libsvm(name_or_path, n_features=None, data_home=None, dtype=np.float64):
    """Load a LIBSVM-format file as a CSR matrix and a label vector.

    Parameters
    ----------
    name_or_path : str or path-like
        ``"a9a"``, ``"a9a.t"`` or ``"w8a"`` (files of the data home), or a path to a
        LIBSVM file, plain or compressed (``.xz``, ``.gz``).
    n_features : int, default=None
        Number of columns. For the named sets it defaults to the LIBSVM page's count
        (123 for a9a and a9a.t, whose test rows never use feature 123; 300 for w8a);
        for a path, to the largest index present.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.
    dtype : numpy dtype, default=np.float64
        dtype of ``X``.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), float64
        Labels as stored in the file (``-1``/``+1`` for the binary sets).
    """
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
    try:
        with _open_binary(path) as f:
            X, y = load_svmlight_file(f, n_features=n_features, dtype=dtype)
    except CORRUPT as exc:
        raise ValueError(f"{path}: corrupt or truncated file ({exc})") from None
    return X.tocsr(), np.asarray(y)
