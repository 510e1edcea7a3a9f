"""The data of an ℓ1 logistic fit laid out for its solves."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.linear_model import L1LogisticOBA


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_dense_x_of_mostly_zeros_is_solved_as_its_sparse_copy(order):
    """A dense X with at most SPARSE_COPY_DENSITY nonzero entries (after the centering's
    shifts) is laid out as its sparse copy (CSC, and the CSR copy made from a C-ordered X
    or for several problems), and fits as the same X given as CSR: the same iterates,
    one-vs-rest, multinomial and binary, with a column far from 0 centered; a denser X
    stays dense."""
    import sparsekit.linear_model._l1_problems as module
    rng = np.random.default_rng(7)
    X = rng.standard_normal((600, 40)) * (rng.random((600, 40)) < 0.15)
    y = (X[:, :10] @ rng.standard_normal(10) > 0).astype(int) + (X[:, 10] > 0.5)
    X = np.asarray(X, order=order)
    layout, rows = module.column_layout(X)          # CSR kept when made (from C order)
    assert layout.format == "csc" and (rows is None) == (order == "F")
    np.testing.assert_array_equal(layout.toarray(), X)
    assert module.column_layout(X, 3)[1].format == "csr"
    np.testing.assert_array_equal(module.column_layout(X, 3)[1].toarray(), X)
    given, shifts = X.copy(), np.zeros(40)
    given[:, 3], shifts[3] = 1e4 + rng.standard_normal(600), 1e4   # a column far from 0
    layout, rows = module.column_layout(given, 1, shifts)
    assert sp.issparse(layout) and layout.nnz == np.count_nonzero(given - shifts)
    np.testing.assert_array_equal(layout.toarray(), given - shifts)
    full = np.where(X == 0, 1.0, X)
    layout, rows = module.column_layout(full)
    assert isinstance(layout, np.ndarray) and layout.flags.f_contiguous and rows is None
    X[:, 5] += 1e4                                         # centered: fits on X - 1e4
    for multiclass, labels in (("ovr", y), ("multinomial", y), ("ovr", y > 0)):
        a = L1LogisticOBA(C=3.0, multiclass=multiclass).fit(X, labels)
        b = L1LogisticOBA(C=3.0, multiclass=multiclass).fit(sp.csr_matrix(X), labels)
        assert a.n_iter_.tolist() == b.n_iter_.tolist()
        np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-12)
