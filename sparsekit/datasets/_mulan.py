"""Mulan multi-label ARFF files with their label XML files."""
import xml.etree.ElementTree as ET

import numpy as np
import scipy.sparse as sp

from ._arff import parse_arff
from ._home import _find_file, _read_text

# Mulan's own train/test splits; cal500 ships as a single file.
_MULAN_SETS = {"bibtex", "delicious", "emotions", "scene", "cal500"}
_UNSPLIT = {"cal500"}


def _label_names(xml_path):
    """Label names from a Mulan label XML (``<label name=...>``, possibly nested)."""
    try:
        root = ET.parse(xml_path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"{xml_path}: not well-formed XML ({exc})") from None
    names = [el.get("name") for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "label"]
    if not names or any(n is None for n in names):
        raise ValueError(f"{xml_path}: no <label name=...> elements")
    return names


def _load_file(path, label_names):
    names, data = parse_arff(_read_text(path), source=str(path))
    position = {n: i for i, n in enumerate(names)}
    missing = [n for n in label_names if n not in position]
    if missing:
        raise ValueError(f"{path}: labels {missing[:5]} of the label XML are not attributes")
    label_idx = np.array([position[n] for n in label_names], dtype=np.int64)
    is_label = np.zeros(len(names), dtype=bool)
    is_label[label_idx] = True
    feature_idx = np.flatnonzero(~is_label)
    if sp.issparse(data):
        X = data[:, feature_idx].tocsr()
        Y = data[:, label_idx].tocsr()
        Y.eliminate_zeros()
    else:
        X = np.ascontiguousarray(data[:, feature_idx])
        Y = np.ascontiguousarray(data[:, label_idx])
    if not np.isin(Y.data if sp.issparse(Y) else Y, (0, 1)).all():  # before the cast:
        raise ValueError(f"{path}: label attributes hold values other than 0/1")  # 0.5 -> 0
    return X, Y.astype(np.int64)


def load_mulan(name, subset=None, data_home=None):
    """Load a Mulan multi-label data set (features and label-indicator matrix).

    Label columns are the attributes named in the set's label XML; every other attribute
    is a feature, in file order.

    Parameters
    ----------
    name : {"bibtex", "delicious", "emotions", "scene", "cal500"}
    subset : {"train", "test"} or None, default=None
        Mulan's own split. None returns the whole set: train then test rows stacked
        (cal500 has no split and accepts only None).
    data_home : str or path-like, default=None
        See :func:`get_data_home`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features) or csr_matrix
        The features in float64; CSR for the sparse ARFF sets (bibtex, delicious).
    Y : ndarray of shape (n_samples, n_labels) or csr_matrix
        The label indicators, int64 0/1; CSR (int64) for the sparse sets.

    Examples
    --------
    >>> from sparsekit.datasets import load_mulan
    >>> X, Y = load_mulan("scene", subset="train")
    >>> X.shape, Y.shape
    ((1211, 294), (1211, 6))
    """
    name = str(name).lower()
    if name not in _MULAN_SETS:
        raise ValueError(f"unknown Mulan set {name!r}; choose from {sorted(_MULAN_SETS)}")
    if subset not in (None, "train", "test"):
        raise ValueError(f"subset must be 'train', 'test' or None, got {subset!r}")
    if name in _UNSPLIT and subset is not None:
        raise ValueError(f"{name} has no train/test split in Mulan; use subset=None")
    label_names = _label_names(_find_file(f"mulan/{name}.xml", data_home))
    if name in _UNSPLIT:
        files = [f"mulan/{name}.arff.xz"]
    elif subset is None:
        files = [f"mulan/{name}-train.arff.xz", f"mulan/{name}-test.arff.xz"]
    else:
        files = [f"mulan/{name}-{subset}.arff.xz"]
    parts = [_load_file(_find_file(f, data_home), label_names) for f in files]
    if len(parts) == 1:
        return parts[0]
    if sp.issparse(parts[0][0]):
        return (sp.vstack([p[0] for p in parts], format="csr"),
                sp.vstack([p[1] for p in parts], format="csr"))
    return np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])
