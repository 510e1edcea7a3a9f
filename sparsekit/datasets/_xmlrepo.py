"""Extreme Classification Repository text format: a header line "n_points n_features
n_labels", then one point per line, "l1,l2,... f1:v1 f2:v2 ...".

First line ``N D L``; then one line per point, ``l1,l2,... f:v f:v ...`` with 0-based
label and feature indices; a point with no labels starts with a single space.
"""
import numpy as np
import scipy.sparse as sp

from ._home import _find_file, _read_text

_XMLREPO_SETS = {"bibtex": "Bibtex", "delicious": "Delicious"}


def _parse_xmlrepo(text, source):
    lines = text.split("\n")
    try:
        n_rows, n_features, n_labels = (int(v) for v in lines[0].split())
    except ValueError:
        raise ValueError(f"{source}: first line must be 'N D L', got {lines[0]!r}") from None
    rows = [ln.rstrip("\r") for ln in lines[1:]]
    while rows and not rows[-1].strip():
        rows.pop()
    if len(rows) != n_rows:
        raise ValueError(f"{source}: header says {n_rows} rows, found {len(rows)}")
    label_parts, feature_parts = [], []
    label_counts = np.zeros(n_rows, dtype=np.int64)
    feature_counts = np.zeros(n_rows, dtype=np.int64)
    for r, row in enumerate(rows):
        labels, _, features = row.partition(" ")
        if labels:
            label_counts[r] = labels.count(",") + 1
            label_parts.append(labels)
        features = features.strip()
        if features:
            feature_counts[r] = features.count(":")
            feature_parts.append(features)
    pairs = " ".join(feature_parts).replace(":", " ").split()
    if len(pairs) != 2 * feature_counts.sum():
        raise ValueError(f"{source}: features are not all 'index:value' pairs")
    try:
        label_idx = np.array(",".join(label_parts).split(",") if label_parts else [],
                             dtype=np.int64)
        feature_idx = np.array(pairs[0::2], dtype=np.int64)
        values = np.array(pairs[1::2], dtype=np.float64)
    except ValueError as exc:   # e.g. a row without its 'labels ' field
        raise ValueError(f"{source}: rows must read 'l1,l2 i:v i:v ...' ({exc})") from None
    for idx, bound, what in ((feature_idx, n_features, "feature"), (label_idx, n_labels, "label")):
        if idx.size and (idx.min() < 0 or idx.max() >= bound):
            raise ValueError(f"{source}: {what} index out of range 0..{bound - 1}")
    X = sp.csr_matrix(
        (values, feature_idx, np.concatenate(([0], np.cumsum(feature_counts)))),
        shape=(n_rows, n_features),
    )
    Y = sp.csr_matrix(
        (np.ones(label_idx.size, dtype=np.int64), label_idx,
         np.concatenate(([0], np.cumsum(label_counts)))),
        shape=(n_rows, n_labels),
    )
    for M in (X, Y):
        M.sum_duplicates()
        M.sort_indices()
    Y.data[:] = 1
    return X, Y


def load_xmlrepo(name, subset="train", data_home=None):
    """Load an Extreme Classification Repository-format set (Bhatia et al. 2016).

    Parameters
    ----------
    name : {"Bibtex", "Delicious"} (case-insensitive) or a path to a file in this format
        The named files were converted from Mulan's ARFF train/test files
        ; a path may be plain or compressed (``.xz``, ``.gz``).
    subset : {"train", "test"}, default="train"
        Ignored when ``name`` is a path.
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), float64
    Y : scipy.sparse.csr_matrix of shape (n_samples, n_labels), int64 0/1
        Rows with no labels are empty rows.

    Examples
    --------
    >>> from sparsekit.datasets import load_xmlrepo
    >>> X, Y = load_xmlrepo("Bibtex", subset="test")
    >>> X.shape[1], Y.shape[1]
    (1836, 159)
    """
    key = str(name).lower()
    if key in _XMLREPO_SETS:
        if subset not in ("train", "test"):
            raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
        path = _find_file(f"xmlrepo/{_XMLREPO_SETS[key]}_{subset}.txt.xz", data_home)
    else:
        path = name
    return _parse_xmlrepo(_read_text(path), str(path))
