"""FenchelYoungLinear: the gradient and the generalized Hessian product are derivatives."""
import numpy as np
import pytest

from _sparsemax_problems import make_data as _data, make_datafit as _datafit


@pytest.mark.parametrize("polytope", ["simplex", "at_least_one"])
@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
@pytest.mark.parametrize("weight_scale", [1.0, 7.0, (7.0, 0.5, 30.0, 1.0)],
                         ids=["1", "7", "per column"])
@pytest.mark.parametrize("sparse", [False, True])
def test_hessian_product_is_the_derivative_of_the_gradient(polytope, fit_intercept,
                                                           penalize, weight_scale, sparse):
    """newton-cg's generalized Hessian-vector product, with sample weights, the implicit
    centering, the intercept options and scaled weights (one factor, or one per column),
    on dense and CSR X, equals a central difference of the gradient (the loss is piecewise
    quadratic: exact away from kinks, up to float32 products)."""
    import scipy.sparse as sp

    X, y, sw = _data()
    X = sp.csr_matrix(X) if sparse else X
    weight_scale = np.asarray(weight_scale) if np.ndim(weight_scale) else weight_scale
    k, d = 3, X.shape[1]
    datafit = _datafit(X, y, sw, polytope, 0.1, fit_intercept, penalize, weight_scale)
    fun, hessp_at = datafit.value_grad, datafit.hessp_at
    rng = np.random.default_rng(1)
    for _ in range(3):
        theta = 0.5 * rng.standard_normal((d + 1) * k)
        if not fit_intercept:    # the solver's b stays 0 then (hessp_at reads theta's b)
            theta[d * k:] = 0.0
        v = rng.standard_normal(theta.size)
        hessp, _ = hessp_at(theta)
        eps = 1e-6
        fd = (fun(theta + eps * v)[1] - fun(theta - eps * v)[1]) / (2 * eps)
        hv = hessp(v)
        np.testing.assert_allclose(hv, fd, rtol=1e-4, atol=1e-5 * np.abs(fd).max())


@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
@pytest.mark.parametrize("weight_scale", [1.0, 0.2, (0.2, 5.0, 1.0, 40.0)],
                         ids=["1", "0.2", "per column"])
def test_objective_gradient_is_the_derivative_of_the_objective(fit_intercept, penalize,
                                                               weight_scale):
    """The gradient of the solvers' objective, in the centered coordinates (b + W^T mu)
    with sample weights and the weights scaled (one factor, or one per column), matches
    central differences of the objective."""
    X, y, sw = _data()
    weight_scale = np.asarray(weight_scale) if np.ndim(weight_scale) else weight_scale
    k, d = 3, X.shape[1]
    fun = _datafit(X, y, sw, "simplex", 0.1, fit_intercept, penalize, weight_scale).value_grad
    theta = 0.5 * np.random.default_rng(3).standard_normal((d + 1) * k)
    g = fun(theta)[1]
    eps = 1e-6
    fd = np.array([(fun(theta + eps * e)[0] - fun(theta - eps * e)[0]) / (2 * eps)
                   for e in np.eye(theta.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("k", [2, 3])     # two classes: the CSR scores summed in registers
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_csr_objective_and_gradient_equal_the_dense_ones(k, dtype, index):
    """The CSR walk (empty rows and columns included) gives the dense BLAS route's objective
    and gradient, for float32 and float64 X and both index types of SciPy's CSR."""
    import scipy.sparse as sp

    X, y, sw = _data(k=k)
    X[X < 2.0] = 0.0                  # about half the entries, and empty rows
    X[:, 1] = 0.0                     # an empty column
    X, sw = X.astype(dtype), sw.astype(dtype)     # the estimator's weights follow X
    Xs = sp.csr_matrix(X)
    Xs.indices, Xs.indptr = Xs.indices.astype(index), Xs.indptr.astype(index)
    theta = 0.5 * np.random.default_rng(5).standard_normal((X.shape[1] + 1) * k)
    f, g = _datafit(X, y, sw, "simplex", 0.1, True, False).value_grad(theta)
    fs, gs = _datafit(Xs, y, sw, "simplex", 0.1, True, False).value_grad(theta)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(fs, f, rtol=rtol)
    np.testing.assert_allclose(gs, g, rtol=rtol, atol=rtol * np.abs(g).max())


@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
@pytest.mark.parametrize("r", [4.0, (4.0, 1.0, 1e3, 0.5)], ids=["one", "per column"])
def test_scaled_weights_are_a_change_of_variables(fit_intercept, penalize, r):
    """With weight_scale r (one factor, or one per column) the solver variable holds r W
    (row j of W times r_j): the same model round-trips, the objective at the same model is
    the same, and the weights' gradient is divided by r."""
    X, y, sw = _data()
    k, d = 3, X.shape[1]
    r = np.asarray(r) if np.ndim(r) else r
    rows = np.broadcast_to(np.reshape(r, (-1, 1)), (d, k)).ravel()
    plain = _datafit(X, y, sw, "simplex", 0.1, fit_intercept, penalize)
    scaled = _datafit(X, y, sw, "simplex", 0.1, fit_intercept, penalize, weight_scale=r)
    rng = np.random.default_rng(5)
    W, b = rng.standard_normal((d, k)), rng.standard_normal(k) * fit_intercept
    theta, theta_r = plain.to_solver(W, b), scaled.to_solver(W, b)
    np.testing.assert_allclose(theta_r[: d * k], rows * theta[: d * k])
    for got, want in zip(scaled.from_solver(theta_r), (W, b)):
        np.testing.assert_allclose(got, want, atol=1e-14)
    (f, g), (f_r, g_r) = plain.value_grad(theta), scaled.value_grad(theta_r)
    assert f_r == pytest.approx(f, rel=1e-14)
    np.testing.assert_allclose(g_r[: d * k], g[: d * k] / rows, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(g_r[d * k:], g[d * k:], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("units", [1e-100, 1e100])
@pytest.mark.parametrize("sparse", [False, True])
def test_in_the_solver_variable_the_problem_does_not_depend_on_the_units_of_x(units, sparse):
    """On c X with weight scale c and ridge c² alpha (alpha="scale"'s) the objective,
    gradient and Hessian products in the solver's variable are those on X with scale 1,
    also where c X is far outside float32's range (the Hessian products run in float32 on
    the rows divided by the weight scale)."""
    import scipy.sparse as sp

    X, y, sw = _data()
    X[X < 2.0] = 0.0
    as_given = (lambda Z: sp.csr_matrix(Z)) if sparse else (lambda Z: Z)
    plain = _datafit(as_given(X), y, sw)
    scaled = _datafit(as_given(units * X), y, sw, alpha=0.1 * units**2, weight_scale=units)
    rng = np.random.default_rng(6)
    for _ in range(3):
        theta, v = 0.5 * rng.standard_normal((2, plain.n_features * 3 + 3))
        (f, g), (f_c, g_c) = plain.value_grad(theta), scaled.value_grad(theta)
        assert f_c == pytest.approx(f, rel=1e-12)
        np.testing.assert_allclose(g_c, g, rtol=1e-10, atol=1e-12)
        hv, hv_c = plain.hessp_at(theta)[0](v), scaled.hessp_at(theta)[0](v)
        np.testing.assert_allclose(hv_c, hv, rtol=1e-5, atol=1e-6 * np.abs(hv).max())


def test_a_dense_x_is_fit_through_csr_by_its_share_of_nonzeros_and_outputs():
    """At most 25% nonzero entries, but from 2 to GEMV_MAX_OUTPUTS outputs (where the
    dense products are GEMVs) 5% + 2.5% an output; a sparse X is never copied."""
    import scipy.sparse as sp

    from sparsekit._cython._sparsemax_loss import GEMV_MAX_OUTPUTS
    from sparsekit.losses._fenchel_young_datafit import fits_through_csr

    X = np.zeros((20, 10))
    assert GEMV_MAX_OUTPUTS == 7        # the shares below: 25%, 10%, 17.5%, 22.5%, 25%
    for share, routes in ((0.05, [True] * 5), (0.15, [True, False, True, True, True]),
                          (0.2, [True, False, False, True, True]),
                          (0.24, [True, False, False, False, True]), (0.3, [False] * 5)):
        X.flat[:round(share * X.size)] = 1.0
        outputs = (1, 2, 5, GEMV_MAX_OUTPUTS, GEMV_MAX_OUTPUTS + 1)
        assert [fits_through_csr(X, k) for k in outputs] == routes, share
    assert not fits_through_csr(sp.csr_matrix(np.eye(20)), 1)


@pytest.mark.parametrize("weight_scale", [1.0, 3.0])
def test_value_grad_allocates_one_array_of_the_model_size(weight_scale):
    """The scaled weights W = theta / r lie in the gradient's storage until the gradient
    overwrites them: one new array of the model's size per call, not two (on 58 classes
    of 353,595 columns each is 164 MB); the objective and gradient as with r = 1 on the
    weights scaled back."""
    import scipy.sparse as sp
    from _memory import peak_allocated

    rng = np.random.default_rng(0)
    X = sp.random(200, 20_000, density=0.001, format="csr", random_state=0)
    y = rng.integers(0, 20, 200)
    datafit = _datafit(X, y, np.ones(200), fit_intercept=False, weight_scale=weight_scale)
    theta = rng.normal(size=20_000 * 20 + 20) * 0.01
    datafit.value_grad(theta)                          # the data term's buffers, once
    (f, grad), peak = peak_allocated(lambda: datafit.value_grad(theta))
    assert peak < 1.3 * theta.nbytes
    plain = _datafit(X, y, np.ones(200), fit_intercept=False)
    W = theta.copy()
    W[:-20] /= weight_scale
    f1, grad1 = plain.value_grad(W)
    np.testing.assert_allclose(f, f1, rtol=1e-13)
    np.testing.assert_allclose(grad[:-20], grad1[:-20] / weight_scale, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
@pytest.mark.parametrize("weight_scale", [1.0, 3.0, (0.2, 5.0, 1.0, 40.0)],
                         ids=["1", "3", "per column"])
def test_value_grad_given_the_weights_is_the_same(dtype, sparse, fit_intercept, penalize,
                                                  weight_scale):
    """The model's W handed to value_grad (as dual coordinate ascent does) gives the same
    objective and gradient as W made from theta, for float32 and float64 X, dense and
    CSR, every intercept and weight scale (the centered datafit ignores it), and a
    gradient in fresh storage: neither theta nor W is written."""
    import scipy.sparse as sp

    X, y, sw = _data()
    X, sw = X.astype(dtype), sw.astype(dtype)
    X = sp.csr_matrix(X) if sparse else X
    weight_scale = np.asarray(weight_scale) if np.ndim(weight_scale) else weight_scale
    datafit = _datafit(X, y, sw, "simplex", 0.1, fit_intercept, penalize, weight_scale)
    datafit.center = None            # as dual coordinate ascent's datafit
    rng = np.random.default_rng(7)
    W, b = rng.standard_normal((X.shape[1], 3)), rng.standard_normal(3)
    theta = datafit.to_solver(W, b)
    W = datafit.from_solver(theta)[0].copy()
    theta_before, W_before = theta.copy(), W.copy()
    f, g = datafit.value_grad(theta)
    f_w, g_w = datafit.value_grad(theta, weights=W)
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert f_w == pytest.approx(f, rel=rtol)
    np.testing.assert_allclose(g_w, g, rtol=rtol, atol=rtol * np.abs(g).max())
    np.testing.assert_array_equal(theta, theta_before)
    np.testing.assert_array_equal(W, W_before)
    assert not np.shares_memory(g_w, W) and not np.shares_memory(g_w, theta)
