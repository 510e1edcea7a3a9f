"""Row statistics shared by the solvers and estimators, and a dense X's sparse copy."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.utils._rows import (COLUMN_UNITS_CAP, SPARSE_COPY_DENSITY, UNIT_RANGE,
                                   entry_scales, unit_power,
                                   mostly_zeros, row_sq_norms, sparse_copy, unit_factors,
                                   weighted_column_stats, weighted_scale_sums)


def test_row_sq_norms_of_dense_and_sparse_x_in_float64():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 4)) * (rng.random((7, 4)) < 0.5)
    X[3] = 0                                          # an empty row
    expected = (X ** 2).sum(axis=1)
    for given in (X, X.astype(np.float32), sp.csr_matrix(X), sp.csc_matrix(X),
                  sp.csr_matrix(X, dtype=np.float32)):
        squares = row_sq_norms(given)
        assert squares.dtype == np.float64 and squares.shape == (7,)
        np.testing.assert_allclose(squares, expected, rtol=1e-6)
    tiny = sp.csr_matrix(1e-25 * X, dtype=np.float32)  # squares below float32's range
    np.testing.assert_allclose(row_sq_norms(tiny), 1e-50 * expected, rtol=1e-6)


def test_column_counts_and_weighted_sums_skip_stored_zeros():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 5)) * (rng.random((6, 5)) < 0.5)
    X[2] = 0
    S = sp.csr_matrix(X)
    S.data[:2] = 0.0                                   # stored zeros are not entries
    dense = S.toarray()
    sw = rng.uniform(0.5, 2.0, 6)
    expected = [np.sum((dense ** 2).sum(axis=1) * sw), np.sum((dense != 0).sum(axis=1) * sw),
                sw.sum()]
    for given in (dense, dense.astype(np.float32), S, S.tocsc()):
        np.testing.assert_array_equal(weighted_column_stats(given)[1],
                                      (dense != 0).sum(axis=0))
        np.testing.assert_allclose(weighted_scale_sums(given, sw)[:3], expected, rtol=1e-6)
    np.testing.assert_allclose(weighted_scale_sums(S)[:3],
                               [np.sum(dense ** 2), np.sum(dense != 0), 6])


def test_row_statistics_of_other_sparse_forms():
    # COO with duplicate entries (summed by the conversion to CSR), 64-bit index arrays,
    # integer and boolean data, a sparse array
    rows, cols = np.array([0, 0, 2, 2, 2]), np.array([1, 1, 0, 3, 3])
    values = np.array([1.0, 2.0, -3.0, 0.0, 4.0])
    coo = sp.coo_matrix((values, (rows, cols)), shape=(4, 5))
    np.testing.assert_array_equal(row_sq_norms(coo), [9.0, 0.0, 25.0, 0.0])
    np.testing.assert_array_equal(weighted_column_stats(coo)[1], [1, 1, 0, 1, 0])
    wide = sp.csr_matrix(np.eye(3) * 2.0)
    wide.indices, wide.indptr = wide.indices.astype(np.int64), wide.indptr.astype(np.int64)
    np.testing.assert_array_equal(row_sq_norms(wide), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(row_sq_norms(coo.tocsc()), [9.0, 0.0, 25.0, 0.0])
    duplicated = sp.csc_matrix((values, rows, np.array([0, 0, 2, 2, 5, 5])), shape=(4, 5))
    assert not duplicated.has_canonical_format      # columns 1 and 3 store a row twice
    for given in (duplicated, duplicated.tocsr()):  # each row's entries summed: 1 + 2, -3 + 4
        np.testing.assert_array_equal(row_sq_norms(given), [9.0, 0.0, 1.0, 0.0])
    for data in (np.array([[0, 3], [1, 0]]), np.array([[False, True], [True, True]])):
        for given in (sp.csr_matrix(data), sp.csr_array(data), sp.csc_matrix(data),
                      sp.lil_matrix(data)):
            np.testing.assert_array_equal(row_sq_norms(given), (data.astype(float) ** 2).sum(1))
            np.testing.assert_array_equal(weighted_column_stats(given)[1],
                                          (data != 0).sum(0))


def test_row_sq_norms_kernel_refuses_offsets_outside_the_data():
    from sparsekit._cython._gram_kernels import row_sq_norms_csr
    data = np.ones(4)
    sq = np.empty(2)
    for indptr in ([0, 2, 5], [0, 3, 2], [-1, 1, 2], [0, 2]):
        with pytest.raises(ValueError, match="indptr"):
            row_sq_norms_csr(data, np.array(indptr, dtype=np.int32), sq)
    row_sq_norms_csr(data, np.array([0, 1, 4], dtype=np.int32), sq)
    np.testing.assert_array_equal(sq, [1, 3])


def test_weighted_column_stats_of_dense_and_sparse_x_in_float64():
    """Σᵢ sᵢ xᵢⱼ² and Σᵢ sᵢ [xᵢⱼ ≠ 0] per column, as the dense reference computes them,
    for every form of X (an empty column, stored zeros, float32 squares below float32's
    range, dense blocks of rows); the scale sums are their totals followed by them."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((9, 5)) * (rng.random((9, 5)) < 0.6)
    X[:, 3] = 0                                       # an empty column
    sw = rng.uniform(0.5, 2.0, 9)
    S = sp.csr_matrix(X)
    S.data[:1] = 0.0                                  # a stored zero counts in neither
    for given, dense in ((X, X), (X.astype(np.float32), X), (S, S.toarray()),
                         (S.tocsc(), S.toarray()), (sp.csr_matrix(X, dtype=np.float32), X),
                         (np.asfortranarray(X), X)):
        squares, counts = weighted_column_stats(given, sw)
        assert squares.dtype == counts.dtype == np.float64 and squares.shape == (5,)
        np.testing.assert_allclose(squares, sw @ dense ** 2, rtol=1e-6)
        np.testing.assert_allclose(counts, sw @ (dense != 0), rtol=1e-12)
        np.testing.assert_allclose(weighted_scale_sums(given, sw), np.concatenate(
            [[sw @ (dense ** 2).sum(axis=1), sw @ (dense != 0).sum(axis=1), sw.sum()],
             sw @ dense ** 2, sw @ (dense != 0)]), rtol=1e-6)
    squares, counts = weighted_column_stats(X)
    np.testing.assert_allclose(squares, (X ** 2).sum(axis=0))
    np.testing.assert_array_equal(counts, (X != 0).sum(axis=0))
    tiny = sp.csr_matrix(1e-25 * X, dtype=np.float32)
    np.testing.assert_allclose(weighted_column_stats(tiny, sw)[0], 1e-50 * (sw @ X ** 2),
                               rtol=1e-6)
    tall = rng.standard_normal((3000, 400))           # several blocks of rows
    np.testing.assert_allclose(weighted_column_stats(tall)[0], (tall ** 2).sum(axis=0),
                               rtol=1e-12)


@pytest.mark.parametrize("block_bytes", [8, 64, 1 << 23])
def test_column_stats_of_csc_x_in_blocks_of_columns(monkeypatch, block_bytes):
    """A CSC X's column sums are read in blocks of columns (of one entry, a few, or all):
    the dense reference's sums whatever the block (empty columns, one at the end, stored
    zeros, a column longer than a block), and no temporary of X's size: on 20,000 x 300
    entries at 5%, the temporaries stay below a quarter of X's data."""
    import tracemalloc

    from sparsekit.utils import _rows

    rng = np.random.default_rng(3)
    dense = rng.standard_normal((40, 9)) * (rng.random((40, 9)) < 0.4)
    dense[:, [2, 8]] = 0.0
    dense[:, 5] = rng.standard_normal(40)                   # longer than a block
    X = sp.csc_matrix(dense)
    X.data[:2] = 0.0                                        # stored zeros
    monkeypatch.setattr(_rows, "_SQUARES_BLOCK_BYTES", block_bytes)
    squares, counts = weighted_column_stats(X)
    np.testing.assert_allclose(squares, (X.toarray() ** 2).sum(axis=0), rtol=1e-12)
    np.testing.assert_array_equal(counts, (X.toarray() != 0).sum(axis=0))
    monkeypatch.setattr(_rows, "_SQUARES_BLOCK_BYTES", 1 << 16)
    big = sp.random(20000, 300, density=0.05, random_state=4, format="csc")
    tracemalloc.start()
    try:
        weighted_column_stats(big)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < big.data.nbytes / 4


def test_column_stats_kernel_refuses_structures_outside_the_columns():
    from sparsekit._cython._gram_kernels import column_stats_csr
    data, sw, squares, counts = np.ones(3), np.ones(2), np.empty(3), np.empty(3)
    for indices, indptr in (([0, 1, 3], [0, 1, 3]), ([0, -1, 2], [0, 1, 3]),
                            ([0, 1, 2], [0, 2, 1]), ([0, 1, 2], [0, 1, 4]), ([0, 1, 2], [0, 3])):
        with pytest.raises(ValueError, match="indptr or indices"):
            column_stats_csr(data, np.array(indices, dtype=np.int32),
                             np.array(indptr, dtype=np.int32), sw, squares, counts)
    with pytest.raises(ValueError, match="indptr or indices"):
        column_stats_csr(data, np.array([0, 1, 2], dtype=np.int32),
                         np.array([0, 1, 3], dtype=np.int32), sw, squares, np.empty(2))
    column_stats_csr(np.array([1.0, 2.0, 3.0]), np.array([0, 2, 2], dtype=np.int64),
                     np.array([0, 1, 3], dtype=np.int64), np.array([1.0, 0.5]), squares,
                     counts)
    np.testing.assert_array_equal(squares, [1.0, 0.0, 6.5])
    np.testing.assert_array_equal(counts, [1.0, 0.0, 1.0])


def test_unit_factors_and_entry_scales_of_columns_in_other_units():
    """Both read each column's mean square of nonzero entries against the median column's
    and are None until one passes COLUMN_UNITS_CAP times it; then unit_factors brings the
    columns above the cap down to it, entry_scales every column above the median down to
    it (1 for the others and for a column without an entry)."""
    squares = np.array([4.0, 1.0, 9.0, 0.0, 2.0])       # mean squares 2, 1, 3, -, 1
    counts = np.array([2.0, 1.0, 3.0, 0.0, 2.0])
    assert unit_factors(squares, counts) is None and entry_scales(squares, counts) is None
    assert entry_scales(np.zeros(3), np.zeros(3)) is None
    squares[1] = 1e-6                     # the median mean square is now (1 + 2) / 2
    median = 1.5
    squares[2] = 3 * 1.5 * COLUMN_UNITS_CAP * median        # 1.5 cap x the median's
    np.testing.assert_allclose(unit_factors(squares, counts), [1, 1, np.sqrt(1.5), 1, 1])
    np.testing.assert_allclose(entry_scales(squares, counts), np.sqrt(
        [2 / median, 1, 1.5 * COLUMN_UNITS_CAP, 1, 1]))


@pytest.mark.parametrize("layout", ["dense", "fortran", "csr", "csc"])
def test_unit_power_brings_the_median_column_near_1(layout):
    """The power of two of X's median column's root mean square entry (stored zeros and
    empty columns left out): 1 inside UNIT_RANGE, where X is solved as given; outside it
    the power that brings that median nearest 1, the same from every layout."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 9)) * rng.uniform(0.5, 2.0, 9)
    X[rng.random(X.shape) < 0.5] = 0.0
    X[:, 4] = 0.0                                        # an empty column
    X[:, 5] *= 1e6                                       # one column in other units
    make = {"dense": np.array, "fortran": np.asfortranarray, "csr": sp.csr_matrix,
            "csc": sp.csc_matrix}[layout]
    stored = np.array([np.sqrt(np.mean(c[c != 0] ** 2)) for c in X.T if np.any(c)])
    median = np.median(stored)
    for factor in (1.0, UNIT_RANGE[0] * 1.01, UNIT_RANGE[1] * 0.99, 2.0**-30, 1e-4,
                   1e4, 2.0**40):
        power = unit_power(*weighted_column_stats(make(X * factor / median)), X.dtype)
        if UNIT_RANGE[0] <= factor <= UNIT_RANGE[1]:
            assert power == 1.0
        else:
            assert np.log2(power) == -round(np.log2(factor)) and 2**-0.5 <= factor * power
            assert factor * power <= 2**0.5
    assert unit_power(*weighted_column_stats(make(np.zeros((3, 4)))), np.float64) == 1.0
    if layout in ("csr", "csc"):          # stored zeros count as no entry
        stored_zeros = make(X * 1e-4 / median)
        stored_zeros.data[::3] = 0.0
        dense = stored_zeros.toarray()
        assert weighted_column_stats(stored_zeros)[1].sum() == np.count_nonzero(dense)
        assert unit_power(*weighted_column_stats(stored_zeros), X.dtype) == unit_power(
            *weighted_column_stats(dense), X.dtype) != 1.0
    with np.errstate(over="ignore"):        # squares beyond float64's: left as given
        assert unit_power(*weighted_column_stats(make(np.full((3, 4), 1e200))), np.float64) == 1.0


def test_unit_power_keeps_every_entry_finite():
    """Where one column's entries are near the dtype's largest, the power that would bring
    the median near 1 is cut so that none overflows (by the largest column's norm, with a
    factor 2 to spare)."""
    X = np.full((4, 5), 1e-30, dtype=np.float32)
    X[:, 0] = 1e37
    power = unit_power(*weighted_column_stats(X), X.dtype)
    assert 1.0 < power < 2.0**100 and np.isfinite(X * np.float32(power)).all()
    assert X[0, 0] * power * 2 * 2 * np.sqrt(4) > np.finfo(np.float32).max  # cut no further


def test_units_of_columns_whose_squares_underflow_are_unknown():
    """A median column whose mean square is 0 or subnormal (entries below ~1e-154) tells no
    units: None, not inf or NaN factors; the ratios are capped to float64's largest."""
    counts = np.ones(4)
    for median in (0.0, 1e-310):
        squares = np.array([median, median, median, 1.0])
        assert unit_factors(squares, counts) is None and entry_scales(squares, counts) is None
    squares = np.array([1e-300, 1e-300, 1e-300, 1e300])
    for factors in (unit_factors(squares, counts), entry_scales(squares, counts)):
        assert np.all(np.isfinite(factors)) and factors[3] > 1e150


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_copy_of_a_dense_x_is_scipys_in_every_layout(dtype):
    rng = np.random.default_rng(2)
    X = (rng.standard_normal((9, 6)) * (rng.random((9, 6)) < 0.3)).astype(dtype)
    X[4] = 0                                                        # an empty row
    X[:, 2] = 0                                                     # an empty column
    X[0, 1], X[1, 3], X[2, 0] = -0.0, np.inf, 1e-40                 # not an entry; entries
    for given, form in ((X, "csr"), (np.asfortranarray(X), "csc"), (X[::2, ::2], "csr"),
                        (np.asfortranarray(X)[1:, ::3], "csr"), (X[:, :0], "csr"),
                        (np.zeros((0, 3), dtype), "csr"), (np.zeros((3, 4), dtype), "csr")):
        copy = sparse_copy(given)
        assert copy.format == form and copy.dtype == dtype and copy.shape == given.shape
        assert copy.indices.dtype == np.int32 and copy.has_canonical_format
        expected = sp.csr_matrix(given)
        np.testing.assert_array_equal(copy.tocsr().indptr, expected.indptr)
        np.testing.assert_array_equal(copy.tocsr().indices, expected.indices)
        np.testing.assert_array_equal(copy.tocsr().data, expected.data)


def test_sparse_copy_holds_little_more_than_its_result():
    """SciPy's conversion of a dense X holds two int64 coordinates and a value per nonzero
    at once (2.8 times the CSR it returns on this X); the copy counts each row's nonzeros,
    then fills the CSR's arrays."""
    from _memory import peak_allocated

    rng = np.random.default_rng(0)
    X = np.where(rng.random((20_000, 400)) < 0.15, 1.0, 0.0)
    csr, peak = peak_allocated(lambda: sparse_copy(X))
    result = csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes
    assert peak < 1.5 * result


def test_mostly_zeros_up_to_the_sparse_copys_share_of_nonzero_entries():
    X = np.zeros((10, 20))
    X.flat[:round(SPARSE_COPY_DENSITY * X.size)] = -0.5
    assert mostly_zeros(X) and mostly_zeros(np.zeros((0, 3)))
    X.flat[-1] = np.nan                                              # NaN is nonzero
    assert not mostly_zeros(X)


def test_dense_compression_kernels_refuse_arrays_of_other_sizes():
    from sparsekit._cython._gram_kernels import dense_compress_rows, dense_row_ends
    X = np.eye(3)
    with pytest.raises(ValueError, match="indptr"):
        dense_row_ends(X, np.empty(3, dtype=np.int64))
    for size in (2, 4):                                              # X has 3 entries
        with pytest.raises(ValueError, match="exactly"):
            dense_compress_rows(X, np.empty(size), np.empty(size, dtype=np.int32))
    with pytest.raises(ValueError, match="exactly"):
        dense_compress_rows(X, np.empty(3), np.empty(2, dtype=np.int32))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_divided_columns_are_a_copy_of_x_over_the_scales(dtype):
    from sparsekit.utils._rows import divided_columns

    rng = np.random.default_rng(0)
    X = (rng.standard_normal((9, 4)) * (rng.random((9, 4)) < 0.5)).astype(dtype)
    scales = np.array([1.0, 2.0, 1e3, 1.0], dtype=dtype)
    for given in (X, sp.csr_matrix(X)):
        kept = given.copy()
        got = divided_columns(given, scales)
        assert got.dtype == dtype and sp.issparse(got) == sp.issparse(given)
        np.testing.assert_array_equal(got.toarray() if sp.issparse(got) else got, X / scales)
        np.testing.assert_array_equal(given.toarray() if sp.issparse(given) else given,
                                      kept.toarray() if sp.issparse(kept) else kept)


def test_sample_rows_skip_rows_of_weight_zero_and_leave_the_generator_alone():
    from sparsekit.utils._rows import sample_rows

    weights = np.ones(100)
    assert sample_rows(weights, None, 0) == slice(None)
    assert sample_rows(weights, 100, 0) == slice(None)
    weights[::3] = 0.0
    np.testing.assert_array_equal(sample_rows(weights, None, 0), np.flatnonzero(weights))
    rows = sample_rows(weights, 10, 0)
    assert rows.size == 10 and np.all(np.diff(rows) > 0) and np.all(weights[rows] > 0)
    np.testing.assert_array_equal(sample_rows(weights, 10, 0), rows)   # seeded
    rs = np.random.RandomState(3)
    state = rs.get_state()[1].copy()
    first = sample_rows(weights, 10, rs)
    np.testing.assert_array_equal(rs.get_state()[1], state)          # read, not advanced
    np.testing.assert_array_equal(sample_rows(weights, 10, rs), first)
