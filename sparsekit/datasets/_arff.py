"""A plain, vectorized ARFF parser for numeric Mulan files, dense and sparse.

Dense rows are ``v1,v2,...``; sparse rows are ``{i v,i v,...}`` with 0-based attribute
indices (Weka's sparse ARFF). Nominal ``{0,1}`` attributes hold the digits 0/1, so every
value is parsed as a number; a non-numeric value (e.g. ``?``) raises ``ValueError``.
"""
import re

import numpy as np
import scipy.sparse as sp

_ATTRIBUTE = re.compile(
    r"""^@attribute\s+('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\S+)\s+(.+?)\s*$""",
    re.IGNORECASE,
)


_DATA = re.compile(r"^@data[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)


def _unquote(name):
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
        return re.sub(r"\\(.)", r"\1", name[1:-1])
    return name


def _to_float(tokens, source):
    try:
        return np.array(tokens, dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{source}: non-numeric ARFF value ({exc})") from None


def parse_arff(text, source="ARFF"):
    """Parse numeric ARFF text.

    Parameters
    ----------
    text : str
        Whole file content.
    source : str
        Name used in error messages.

    Returns
    -------
    names : list of str
        Attribute names in file order.
    data : ndarray of shape (n_rows, n_attributes) or scipy.sparse.csr_matrix
        Dense array for dense ARFF, CSR for sparse ARFF.
    """
    parts = _DATA.split(text, maxsplit=1)
    if len(parts) != 2:
        raise ValueError(f"{source}: no @data line")
    header, body = parts
    names = []
    for line in header.splitlines():
        line = line.strip()
        if line[:10].lower() == "@attribute":
            match = _ATTRIBUTE.match(line)
            if match is None:
                raise ValueError(f"{source}: cannot parse attribute line {line!r}")
            names.append(_unquote(match.group(1)))
    n_attributes = len(names)
    rows = [ln.strip() for ln in body.splitlines()]
    rows = [ln for ln in rows if ln and not ln.startswith("%")]
    if rows and rows[0].startswith("{"):
        return names, _parse_sparse_rows(rows, n_attributes, source)
    values = _to_float(",".join(rows).split(","), source) if rows else np.empty(0)
    if values.size != len(rows) * n_attributes:
        raise ValueError(
            f"{source}: {values.size} values for {len(rows)} rows of {n_attributes} attributes"
        )
    return names, values.reshape(len(rows), n_attributes)


def _parse_sparse_rows(rows, n_attributes, source):
    """CSR matrix from ``{i v,i v,...}`` rows (indices 0-based, any order)."""
    contents = []
    counts = np.empty(len(rows), dtype=np.int64)
    for r, row in enumerate(rows):
        if not (row.startswith("{") and row.endswith("}")):
            raise ValueError(f"{source}: sparse row {r} is not of the form {{i v,...}}")
        inner = row[1:-1].strip()
        counts[r] = inner.count(",") + 1 if inner else 0
        if inner:
            contents.append(inner)
    tokens = _to_float(" ".join(contents).replace(",", " ").split(), source)
    if tokens.size != 2 * counts.sum():
        raise ValueError(f"{source}: sparse entries are not all 'index value' pairs")
    indices = tokens[0::2]
    if indices.size and (indices.min() < 0 or indices.max() >= n_attributes
                         or not np.all(indices == np.floor(indices))):
        raise ValueError(f"{source}: sparse attribute index out of range 0..{n_attributes - 1}")
    indptr = np.concatenate(([0], np.cumsum(counts)))
    matrix = sp.csr_matrix(
        (tokens[1::2], indices.astype(np.int64), indptr), shape=(len(rows), n_attributes)
    )
    matrix.sum_duplicates()
    matrix.sort_indices()
    return matrix
