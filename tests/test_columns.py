"""UsedColumns: the solvers' view of a sparse X without its empty columns."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.utils._columns import MAX_USED_SHARE, UsedColumns, stored_columns


def _wide(n_used=6, n_features=40, seed=0):
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.choice(n_features, n_used, replace=False))
    dense = np.zeros((8, n_features))
    dense[:, cols] = rng.normal(size=(8, n_used))
    return dense, cols


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_index_lists_the_columns_that_store_an_entry(layout):
    dense, cols = _wide()
    X = sp.csr_matrix(dense).asformat(layout)
    used = UsedColumns(X)
    np.testing.assert_array_equal(used.index, cols)
    assert used.n_used == cols.size and used.n_features == 40
    taken = used.take(X)
    assert taken.format == layout and taken.has_sorted_indices
    np.testing.assert_array_equal(taken.toarray(), dense[:, cols])


def test_an_explicit_zero_counts_as_used():
    X = sp.csr_matrix((np.array([0.0, 1.0]), np.array([3, 7]), np.array([0, 2])),
                      shape=(1, 40))
    np.testing.assert_array_equal(UsedColumns(X).index, [3, 7])


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_an_X_that_stores_no_entry_keeps_its_first_column(layout):
    """The solvers (and scikit-learn's checks) are never given a matrix of no columns."""
    X = sp.csr_matrix((8, 40)).asformat(layout)
    used = UsedColumns(X)
    np.testing.assert_array_equal(used.index, [0])
    assert used.take(X).shape == (8, 1)
    for coef in (np.array([[2.0, 3.0]]), sp.csr_matrix([[2.0, 3.0]])):  # weight, intercept
        expanded = used.expand(coef)
        assert expanded.shape == (1, 41) and sp.issparse(expanded) == sp.issparse(coef)
        assert expanded[0, 0] == 2.0 and expanded[0, 40] == 3.0
    assert UsedColumns(sp.csr_matrix((8, 1)).asformat(layout)).n_used == 1


def test_dense_mostly_used_and_keep_all_pass_through():
    dense, _ = _wide()
    n_full = int(MAX_USED_SHARE * 40) + 1          # one column more than the share
    mostly = sp.csr_matrix(np.hstack([np.ones((2, n_full)), np.zeros((2, 40 - n_full))]))
    for used in (UsedColumns(dense), UsedColumns(mostly),
                 UsedColumns(sp.csr_matrix(dense), keep_all=True)):
        assert used.index is None and used.n_used == 40
        assert used.take(dense) is dense
        coef = np.arange(82.0).reshape(2, 41)
        assert used.restrict(coef) is coef and used.expand(coef) is coef
    at_share = sp.csr_matrix(np.hstack([np.ones((2, n_full - 1)), np.zeros((2, 41 - n_full))]))
    assert UsedColumns(at_share).n_used == n_full - 1 < 40      # restricted from the share


def test_restrict_and_expand_keep_trailing_columns_and_leading_axes():
    dense, cols = _wide()
    used = UsedColumns(sp.csr_matrix(dense))
    rng = np.random.default_rng(1)
    full = np.zeros((3, 2, 41))                    # (..., n_features + an intercept)
    full[..., cols] = rng.normal(size=(3, 2, cols.size))
    full[..., 40] = rng.normal(size=(3, 2))
    small = used.restrict(full)
    assert small.shape == (3, 2, cols.size + 1)
    np.testing.assert_array_equal(small[..., -1], full[..., 40])
    np.testing.assert_array_equal(used.expand(small), full)
    assert used.expand(small[..., :-1]).shape == (3, 2, 40)       # no trailing column
    assert used.restrict(None) is None


@pytest.mark.parametrize("order", ["C", "F"])
def test_expand_keeps_the_memory_order(order):
    """A Fortran-ordered coef (its transpose feature-major, as the scores of CSR rows read
    it) expands Fortran-ordered; a C-ordered one C-ordered."""
    dense, cols = _wide()
    used = UsedColumns(sp.csr_matrix(dense))
    small = np.asarray(np.random.default_rng(2).normal(size=(5, cols.size)), order=order)
    out = used.expand(small)
    assert out.flags.f_contiguous == (order == "F") and out.flags.c_contiguous == (order == "C")
    np.testing.assert_array_equal(out[:, cols], small)


def test_expand_keeps_a_sparse_coef_sparse():
    dense, cols = _wide()
    used = UsedColumns(sp.csc_matrix(dense))
    small = np.zeros((4, cols.size + 1))
    small[0, 1], small[2, 0], small[3, -1] = 2.0, -1.0, 0.5      # the last: an intercept
    out = used.expand(sp.csr_matrix(small))
    assert sp.issparse(out) and out.format == "csr" and out.shape == (4, 41)
    np.testing.assert_array_equal(out.toarray(), used.expand(small))
    assert out.nnz == 3


def test_hashed_columns_cost_memory_of_the_entries_not_of_the_columns():
    """2**40 columns (SciPy's column indexing and a bincount would take terabytes)."""
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([5, 2**39, 2**40 - 1]),
                       np.array([0, 2, 2, 3])), shape=(3, 2**40))
    used = UsedColumns(X)
    np.testing.assert_array_equal(used.index, [5, 2**39, 2**40 - 1])
    taken = used.take(X)
    np.testing.assert_array_equal(taken.toarray(), [[1.0, 2.0, 0.0], [0, 0, 0], [0, 0, 3.0]])
    other = sp.csr_matrix((np.array([4.0, 5.0]), np.array([7, 2**39]), np.array([0, 2])),
                          shape=(1, 2**40))              # an entry in an unused column
    np.testing.assert_array_equal(used.take(other).toarray(), [[0.0, 5.0, 0.0]])


def test_stored_columns_of_csr_and_csc_agree():
    X = sp.csr_matrix(np.array([[0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]))
    X.data[0] = 0.0                                   # a stored zero still stores an entry
    for given in (X, X.tocsc(), sp.csr_array(X)):
        np.testing.assert_array_equal(stored_columns(given), [0, 1])


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_column_counts_in_blocks_equal_bincount(monkeypatch, index_dtype):
    from sparsekit.utils import _columns

    rng = np.random.default_rng(0)
    indices = rng.integers(0, 50, 1000).astype(index_dtype)
    want = np.bincount(indices, minlength=60)
    for block in (1, 7, 64, 1 << 20):
        monkeypatch.setattr(_columns, "COUNT_BLOCK", block)
        np.testing.assert_array_equal(_columns.column_counts(indices, 60), want)
    np.testing.assert_array_equal(_columns.column_counts(indices[:0], 5), np.zeros(5))


def test_stored_columns_of_csr_makes_no_copy_of_the_indices():
    """np.bincount makes an intp copy of the indices it counts (8 bytes an entry: 69 MiB
    for MNIST's, 0.67 of X's size with int32 indices); counted a block at a time, the
    columns of a 4-million-entry CSR take a block's worth (8 MiB) at most."""
    from _memory import peak_allocated

    X = sp.random(40_000, 2_000, density=0.05, format="csr", random_state=0)
    assert X.indices.dtype == np.int32
    columns, peak = peak_allocated(lambda: stored_columns(X))
    np.testing.assert_array_equal(columns, np.flatnonzero(X.getnnz(axis=0)))
    assert peak < 9 * 2**20 < 0.5 * X.indices.size * 8
