"""The logistic and quadratic datafits of OBA (sparsekit.losses._logistic_datafit): their
input checks, free-set Hessian products, formed and matrix-free subspace Hessians, and
Lipschitz bounds."""
import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit.losses._logistic_datafit import Logistic, Quadratic, _SubspaceHessian
from test_oba import _problem


@pytest.mark.parametrize("sparse", [False, True])
def test_restricted_operator_keeps_the_diagonal(sparse):
    X, y = _problem(12, n=70, d=25, sparse=sparse)
    datafit = Logistic(X, y, fit_intercept=True)
    x = np.zeros(26)
    x[:3] = [0.5, -0.2, 0.1]
    datafit.value_grad(x)
    free = np.array([0, 2, 3, 7, 11, 24, 25])
    datafit.max_explicit = 0  # the matrix-free operator
    H = datafit.hessp(x, free)
    keep = np.array([True, False, True, True, False, True, True])
    diag_before = H.diagonal()
    R = H.restrict(keep)
    fresh = datafit.hessp(x, free[keep])
    np.testing.assert_allclose(R.diagonal(), fresh.diagonal(), rtol=1e-13)
    np.testing.assert_allclose(R.diagonal(), diag_before[keep], rtol=1e-13)
    v = np.random.default_rng(0).standard_normal(keep.sum())
    np.testing.assert_allclose(R(v), fresh(v), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("layout", ["dense", "csr", "explicit"])
def test_quadratic_form_reads_only_the_listed_columns(layout):
    X, y = _problem(13, n=60, d=20, sparse=layout == "csr")
    datafit = Logistic(X, y, fit_intercept=True)
    x = np.zeros(21)
    x[[1, 4]] = [0.3, -0.7]
    datafit.value_grad(x)
    free = np.array([0, 1, 3, 4, 9, 15, 20])
    datafit.max_explicit = 1000 if layout == "explicit" else 0
    H = datafit.hessp(x, free)
    assert hasattr(H, "_G") == (layout == "explicit")
    for positions in ([2], [0, 5], [1, 3, 6]):  # 6 is the intercept's coordinate
        positions = np.array(positions)
        c = np.zeros(free.size)
        c[positions] = np.random.default_rng(len(positions)).standard_normal(positions.size)
        np.testing.assert_allclose(H.quadratic_form(positions, c[positions]), c @ H(c),
                                   rtol=1e-12)


def test_matrix_free_operator_forms_itself_after_its_budget():
    """Ski-rental switch: after ``explicit_after`` products the operator forms the Gram once and
    answers from it (same products, diagonal, quadratic forms and restrictions), counting on."""
    X, y = _problem(14, n=80, d=12, sparse=True)
    datafit = Logistic(X, y, fit_intercept=True)
    x = np.zeros(13)
    x[[2, 5]] = [0.4, -0.2]
    datafit.value_grad(x)
    free = np.array([0, 2, 3, 5, 8, 12])
    datafit.max_explicit = 0
    reference = datafit.hessp(x, free)  # matrix-free, never switches
    formed = []

    def gram(cols, intercept):
        formed.append(cols.size + intercept)
        return datafit._gram(cols, intercept, walk_all=True)

    H = _SubspaceHessian(datafit.X, free[:-1], datafit._D, True, np.empty(80), [0],
                         gram=gram, explicit_after=2)
    v = np.random.default_rng(0).standard_normal(free.size)
    for _ in range(4):
        np.testing.assert_allclose(H(v), reference(v), rtol=1e-12, atol=1e-15)
    assert formed == [free.size] and H._calls[0] == 4 and H._explicit is not None
    np.testing.assert_allclose(H.diagonal(), reference.diagonal(), rtol=1e-12)
    positions = np.array([1, 5])
    np.testing.assert_allclose(H.quadratic_form(positions, v[positions]),
                               reference.quadratic_form(positions, v[positions]), rtol=1e-12)
    keep = np.array([True, False, True, True, False, True])
    np.testing.assert_allclose(H.restrict(keep)(v[keep]), reference.restrict(keep)(v[keep]),
                               rtol=1e-12, atol=1e-15)
    assert formed == [free.size]  # the restriction is a sub-matrix, not a new Gram


@pytest.mark.parametrize("layout", ["dense", "csc"])
def test_a_panel_route_hessian_forms_its_gram_once_products_cost_as_much(layout):
    """On the float32-panel route (here 80 free columns, dense or sparse X), a Hessian that
    starts matrix-free because the solver lately made few products per Hessian forms its
    Gram once its products have cost as much: a solve that then makes many products pays at
    most about twice the cheaper route (a raw-pixel MNIST digit as a NumPy array took 36 ms
    a product, 372 of them, before the switch was armed for a dense X too)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 80))
    X = sp.csc_matrix(X) if layout == "csc" else X
    y = np.where(rng.random(3000) < 0.5, -1.0, 1.0)
    datafit = Logistic(X, y, fit_intercept=True)
    x = np.r_[0.01 * rng.standard_normal(80), 0.1]
    datafit.value_grad(x)
    free = np.arange(81)
    reference = Logistic(X, y, fit_intercept=True)
    reference.max_explicit = 0  # matrix-free, never switches
    Href = reference.hessp(x, free)
    datafit._products_per_hessian = 0.5  # few products lately: start matrix-free
    H = datafit.hessp(x, free)
    assert not H.is_explicit
    v = rng.standard_normal(81)
    for _ in range(4):
        np.testing.assert_allclose(H(v), Href(v), rtol=1e-5, atol=1e-8)
    assert H.is_explicit and H._calls[0] == 4


def test_datafits_check_their_inputs_against_X():
    """The kernels read y and the weights without bounds checks: a short array is an error."""
    X = np.random.default_rng(0).standard_normal((30, 5))
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        Quadratic(X, np.ones(30), sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="y must have shape"):
        Logistic(X, np.ones(10))
    with pytest.raises(ValueError, match=r"\{-1, \+1\}"):
        Logistic(X, np.r_[np.zeros(15), np.ones(15)])
    with pytest.raises(ValueError, match="finite"):
        Quadratic(X, np.full(30, np.nan))


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_integer_X_is_taken_as_float64(layout):
    """An integer X (dense or sparse) gives the values, gradients and Hessian products of
    the same X as float64 (the kernels only take float32/float64)."""
    rng = np.random.default_rng(3)
    Xi = rng.integers(-3, 4, size=(40, 6))
    y = rng.standard_normal(40)
    wrap = sp.csr_matrix if layout == "sparse" else np.asarray
    d_int, d_ref = Quadratic(wrap(Xi), y, fit_intercept=True), \
        Quadratic(wrap(Xi.astype(np.float64)), y, fit_intercept=True)
    assert d_int.X.dtype == np.float64
    x = rng.standard_normal(7)
    f, g = d_int.value_grad(x)
    f_ref, g_ref = d_ref.value_grad(x)
    assert f == f_ref
    np.testing.assert_array_equal(g, g_ref)
    free, v = np.array([0, 2, 5, 6]), rng.standard_normal(4)
    np.testing.assert_allclose(d_int.hessp(x, free)(v), d_ref.hessp(x, free)(v), rtol=1e-14)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_hessp_at_a_new_point_uses_the_weights_there(layout):
    """hessp(x, F) after value_grad at another point (or with none yet) uses D(x):
    Xᵀ diag(s σ(m)(1 − σ(m))/n) X on F, m = Xw, not the stored weights."""
    X, y = _problem(21, sparse=layout == "sparse")
    Xd = X.toarray() if sp.issparse(X) else X
    rng = np.random.default_rng(21)
    x_old, x_new = 0.3 * rng.standard_normal(30), 0.3 * rng.standard_normal(30)
    free, v = np.array([1, 4, 7, 20]), rng.standard_normal(4)
    sig = 1.0 / (1.0 + np.exp(-(Xd @ x_new)))
    ref_Hv = Xd[:, free].T @ (sig * (1 - sig) / Xd.shape[0] * (Xd[:, free] @ v))
    for before in (None, x_old):
        datafit = Logistic(X, y)
        if before is not None:
            datafit.value_grad(before)
        np.testing.assert_allclose(datafit.hessp(x_new, free)(v), ref_Hv, rtol=1e-12)


def test_logistic_lipschitz_bound_covers_the_intercept_column():
    """L ≥ λ_max([X, 1]ᵀ diag(s/4) [X, 1]): with tiny features the intercept's column
    carries nearly all of the curvature."""
    rng = np.random.default_rng(0)
    X = 1e-3 * rng.standard_normal((50, 4))
    y = np.where(rng.random(50) < 0.5, 1.0, -1.0)
    s = rng.uniform(0.5, 2.0, 50)
    A = np.column_stack([X, np.ones(50)])
    true = np.linalg.eigvalsh(A.T @ (A * (s / 50 / 4)[:, None])).max()
    for data in (X, sp.csc_matrix(X)):
        assert Logistic(data, y, s, fit_intercept=True).lipschitz() >= true


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matrix_free_products_on_a_free_slice_are_the_column_walks(dtype):
    """A matrix-free operator on a sparse X copies its free columns by rows (where the solver
    makes many products per Hessian, once the Hessian's products pass ``free_slice_after``)
    and gives the column walk's products bit for bit, restricted too; a later operator on a
    subset of those columns reads the same copy; once another copy replaces it, the earlier
    operator walks the columns again."""
    X, y = _problem(21, n=300, d=60, sparse=True, dtype=dtype)
    x = np.zeros(61)
    x[[1, 4, 9]] = [0.4, -0.3, 0.2]
    walks, copies = (Logistic(X, y, fit_intercept=True) for _ in range(2))
    walks.free_slice_min_products = np.inf
    copies.free_slice_min_products = 0
    copies.free_slice_after = 2
    for datafit in (walks, copies):
        datafit.max_explicit = 0       # the matrix-free operator
        datafit.value_grad(x)
    rng = np.random.default_rng(0)

    def same(free, keep=None):
        A, B = walks.hessp(x, free), copies.hessp(x, free)
        if keep is not None:
            A, B = A.restrict(keep), B.restrict(keep)
        for _ in range(3):
            v = rng.standard_normal(A.shape[0])
            np.testing.assert_array_equal(B(v), A(v))
        return B

    free = np.r_[np.arange(0, 60, 3), 60]             # a third of X: copied (at most half)
    few = copies.hessp(x, free)
    few(np.ones(free.size)), few(np.ones(free.size))  # two products: no copy yet
    assert few._free_slice is None and copies._slice is None
    H = same(free)                                     # the third product reads a copy
    assert H._free_slice is not None and copies._slice.valid
    same(free, keep=rng.random(free.size) < 0.7)
    first = copies._slice
    again = same(np.r_[np.arange(0, 60, 3)[:-2], 60])  # most of it: the same copy
    assert again._free_slice[0] is first
    same(np.arange(1, 60, 3))                          # other columns: a new copy
    assert copies._slice is not first and not first.valid
    v = rng.standard_normal(free.size)
    np.testing.assert_array_equal(H(v), walks.hessp(x, free)(v))    # the columns again
