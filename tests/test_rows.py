"""Row statistics shared by the solvers and estimators."""
import numpy as np
import scipy.sparse as sp

from sparsekit.utils._rows import row_sq_norms


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
