"""The centering of dense columns far from 0 (sparsekit.utils._centering): its moments
against a direct weighted sum over the same rows, in blocks, from NumPy and from device
arrays; which columns it shifts and by what."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.utils import _centering
from sparsekit.utils._centering import (center_stride, column_moments, column_shifts,
                                        far_shifts)


def _table(n=301, dtype=np.float64, seed=0):
    """Standardized columns, a year (2012 ± 5), a timestamp (1.7e9 ± 1e7), zip codes (not
    far from 0 against their spread) and a constant column."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=(n, 2)), 2012.0 + 5.0 * rng.normal(size=n),
                         1.7e9 + rng.uniform(0, 3e7, n), rng.integers(10_000, 100_000, n),
                         np.full(n, 7.0)])
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("stride", [1, 7, 400])
@pytest.mark.parametrize("weighted", [False, True])
def test_moments_are_the_weighted_sums_over_the_rows_read(monkeypatch, dtype, stride,
                                                          weighted):
    """Σ s, Σ s x, Σ s x² over rows 0, stride, 2 stride, … in float64, also when the rows
    are converted a few at a time (blocks that end between two rows read)."""
    X = _table(dtype=dtype)
    F = np.asfortranarray(X)
    w = np.random.default_rng(1).uniform(0.1, 3.0, X.shape[0]) if weighted else None
    rows = X[::stride].astype(np.float64)
    s = np.ones(rows.shape[0]) if w is None else w[::stride]
    expected = (s.sum(), s @ rows, s @ rows ** 2)
    for block_bytes in (1 << 23, 8 * X.shape[1] * 3 + 5, 1):
        monkeypatch.setattr(_centering, "_BLOCK_BYTES", block_bytes)
        for given in (X, F, sp.csr_matrix(X), sp.csc_matrix(X)):   # every entry stored
            total, sums, squares, stored, n = column_moments(given, w, stride)
            assert total == pytest.approx(expected[0], rel=1e-14)
            assert sums.dtype == squares.dtype == np.float64
            np.testing.assert_allclose(sums, expected[1], rtol=1e-13)
            np.testing.assert_allclose(squares, expected[2], rtol=1e-13)
            np.testing.assert_array_equal(stored, np.full(X.shape[1], X.shape[0]))
            assert n == X.shape[0]


def test_sparse_moments_are_those_of_the_columns_stored_in_every_row():
    """The other columns' sums are 0 and their stored rows counted (duplicates once)."""
    X = _table()
    X[[3, 7], 1] = 0.0
    X[:, 0] = 0.0
    X[::2, 0] = 1.0
    given = sp.csr_matrix(X)
    total, sums, squares, stored, n = column_moments(given, None, 3)
    assert stored.tolist() == [151, 299, 301, 301, 301, 301] and n == 301
    assert sums[0] == sums[1] == squares[0] == squares[1] == 0.0
    np.testing.assert_allclose(sums[2:], X[::3, 2:].sum(axis=0), rtol=1e-14)
    assert total == X[::3].shape[0]
    assert column_moments(given[:, :2], None, 3)[1].tolist() == [0.0, 0.0]


def test_moments_of_empty_input_are_none():
    assert column_moments(sp.csr_matrix((5, 0))) is None
    assert column_moments(np.empty((5, 0))) is None
    assert column_shifts(sp.csr_matrix((5, 0))) is None
    assert far_shifts(None, np.float64) is None
    X = _table()
    assert far_shifts(column_moments(X, np.zeros(X.shape[0])), np.float64) is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_columns_far_from_zero_are_shifted_by_their_mean_in_the_dtype(dtype):
    """The year, the timestamp and the constant column (spread 0) are shifted by their
    weighted means rounded to X's dtype; the standardized columns and the zip codes (2
    standard deviations from 0) are not."""
    X = _table(dtype=dtype)
    w = np.random.default_rng(2).uniform(0.1, 3.0, X.shape[0])
    shifts = column_shifts(X, w)
    mean = w @ X.astype(np.float64) / w.sum()
    assert shifts.dtype == np.float64
    assert np.flatnonzero(shifts).tolist() == [2, 3, 5]
    np.testing.assert_array_equal(shifts[[2, 3, 5]], mean[[2, 3, 5]].astype(dtype))
    assert column_shifts(X[:, [0, 1, 4]]) is None


@pytest.mark.parametrize("layout", ["csr", "csc", "coo", "csr duplicates", "csc duplicates"])
def test_sparse_columns_that_store_every_row_are_shifted_as_dense_ones(layout):
    """A sparse X's columns with an entry in every row are shifted as the same columns of
    dense X would be; a column far from 0 with an empty row is not (its shift would fill
    that row); duplicate entries count once."""
    X = _table()
    X[5, 3] = 0.0                                   # the timestamp misses a row
    w = np.random.default_rng(5).uniform(0.1, 3.0, X.shape[0])
    given = sp.csr_matrix(X)
    if layout.endswith("duplicates"):               # every entry stored as two halves
        given = given.asformat(layout.split()[0])
        given = type(given)((np.repeat(0.5 * given.data, 2), np.repeat(given.indices, 2),
                             2 * given.indptr), X.shape)
        assert given.nnz == 2 * sp.csr_matrix(X).nnz and not given.has_canonical_format
    else:
        given = given.asformat(layout)
    shifts = column_shifts(given, w)
    dense = column_shifts(X, w)
    assert np.flatnonzero(shifts).tolist() == [2, 5]
    np.testing.assert_allclose(shifts[[2, 5]], dense[[2, 5]], rtol=1e-15)
    assert column_shifts(sp.csr_matrix(X[:, [0, 1, 3, 4]])) is None   # nothing shifted


def test_a_column_just_inside_the_ratio_is_left_alone():
    """A mean of 9.9 standard deviations is not shifted, 10.1 is (CENTER_RATIO = 10)."""
    z = np.random.default_rng(3).normal(size=5000)
    z = (z - z.mean()) / z.std()
    for mean, moved in ((9.9, False), (10.1, True)):
        assert (column_shifts((z + mean)[:, None]) is not None) == moved


def test_the_rows_read_are_about_ten_thousand():
    assert center_stride(5) == 1
    assert center_stride(19_999) == 1
    assert center_stride(1_000_000) == 100


@pytest.mark.parametrize("weighted", [False, True])
def test_device_moments_are_the_host_ones(cupy_backend, weighted):
    """On device X (and device weights) the moments are computed there and returned on the
    host: the host ones."""
    cp = cupy_backend
    X = _table()
    w = np.random.default_rng(4).uniform(0.1, 3.0, X.shape[0]) if weighted else None
    host = column_moments(X, w, 3)[:3]
    device = column_moments(cp.asarray(X), None if w is None else cp.asarray(w), 3)[:3]
    assert type(device[1]) is np.ndarray and type(device[2]) is np.ndarray
    assert device[0] == pytest.approx(host[0], rel=1e-14)
    np.testing.assert_allclose(device[1], host[1], rtol=1e-13)
    np.testing.assert_allclose(device[2], host[2], rtol=1e-13)


def test_squares_beyond_float64_leave_the_column_alone():
    """Entries near 1e154, whose squares' sum overflows: no warning, not centered."""
    import warnings

    X = np.column_stack([np.full(20_000, 1.2e154), np.full(20_000, 5.0)])
    X[::2, 0] *= 1.01
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shifts = far_shifts(column_moments(X), X.dtype)
    np.testing.assert_array_equal(shifts, [0.0, 5.0])
