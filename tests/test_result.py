"""The solvers' shared contract (sparsekit.optimize._result): what a user's callables
return is checked where it comes back, with an error naming the callable."""
import numpy as np
import pytest

from sparsekit.optimize import minimize_newton_cg, minimize_nqn, minimize_oba
from sparsekit.optimize._result import (checked_f_grad, checked_hessp, hessian_product,
                                        is_positive_finite, objective_value)

A = np.random.default_rng(0).standard_normal((20, 5))
b = np.random.default_rng(1).standard_normal(20)


def f_grad(x):
    r = A @ x - b
    return 0.5 * r @ r, A.T @ r


def hessp(x, free):
    return lambda v: A[:, free].T @ (A[:, free] @ v)


def test_is_positive_finite():
    for value in (1, 0.5, np.float32(2), np.array(3.0), True, 1e308):
        assert is_positive_finite(value)
    for value in (0, -1.0, np.nan, np.inf, "a", None, 1j, np.ones(2), [1.0], np.array([1.0])):
        assert not is_positive_finite(value)


def test_objective_value():
    assert objective_value(np.array([2.5]), "fun") == 2.5
    assert objective_value(np.float32(1.5), "fun") == 1.5
    with pytest.raises(ValueError, match=r"fun must return a scalar .* got shape \(2,\)"):
        objective_value(np.ones(2), "fun")
    for bad in ("a", None, 1j, {}):
        with pytest.raises(TypeError, match="fun must return a real number"):
            objective_value(bad, "fun")


def test_checked_f_grad_names_what_came_back():
    with pytest.raises(TypeError, match="f_grad must be callable, got str"):
        checked_f_grad("f", 5, "f_grad")
    call = checked_f_grad(f_grad, 5, "f_grad")
    f, G = call(np.zeros(5))
    assert isinstance(f, float) and G.dtype == np.float64 and G.shape == (5,)
    for bad, error, match in [
            (lambda x: 1.0, TypeError, r"f_grad\(x\) must return the pair .* got float"),
            (lambda x: None, TypeError, "got NoneType"),
            (lambda x: (1.0, 2.0, 3.0), TypeError, "got tuple"),
            (lambda x: (1j, np.zeros(5)), TypeError, "real number"),
            (lambda x: (1.0, np.zeros(4)), ValueError, r"gradient of shape \(4,\)"),
            (lambda x: (1.0, np.zeros((5, 2))), ValueError, r"gradient of shape \(5, 2\)"),
            (lambda x: (1.0, "abcde"), TypeError, "gradient that is not an array of real")]:
        with pytest.raises(error, match=match):
            checked_f_grad(bad, 5, "f_grad")(np.zeros(5))
    # the pair as a list (as SciPy takes it); a list gradient, a column, float32: accepted
    # as the vector they hold
    assert checked_f_grad(lambda x: [1.0, np.zeros(5)], 5, "f_grad")(np.zeros(5))[0] == 1.0
    for G in (list(range(5)), np.arange(5.0)[:, None], np.arange(5, dtype=np.float32)):
        _, out = checked_f_grad(lambda x, G=G: (1, G), 5, "f_grad")(np.zeros(5))
        np.testing.assert_array_equal(out, np.arange(5.0))


def test_hessian_product():
    H = hessp(np.zeros(5), np.arange(4))
    v = np.arange(4.0)
    np.testing.assert_array_equal(hessian_product(H, v), H(v))
    with pytest.raises(ValueError, match=r"gave H\(v\) of shape \(3,\) for v of shape \(4,\)"):
        hessian_product(lambda v: np.ones(3), np.ones(4))
    with pytest.raises(TypeError, match=r"gave an H\(v\) that is not an array of real"):
        hessian_product(lambda v: "abcd", np.ones(4))
    # a product given as a list or a column is the vector it holds (as a gradient is)
    for product in (lambda v: list(v), lambda v: v[:, None]):
        out = hessian_product(product, np.arange(4.0))
        assert out.shape == (4,) and out.dtype == np.float64


def test_hessp_returning_the_product_is_told_apart_from_scipy_convention():
    with pytest.raises(TypeError, match="hessp must be callable"):
        checked_hessp(np.eye(5), "hessp")
    H = checked_hessp(lambda x, free: np.eye(len(free)), "hessp")
    with pytest.raises(TypeError, match=r"hessp\(x, free\) must be an operator H.*SciPy's "
                                        r"hessp\(x, p\).*got ndarray"):
        H(np.zeros(5), np.arange(5))


@pytest.mark.parametrize("bad_hessp, error, match", [
    (lambda x, free: np.eye(len(free)), TypeError, r"hessp\(x, free\) must be an operator"),
    (lambda x, free: None, TypeError, "got NoneType"),
    (lambda x, free: (lambda v: np.ones(2)), ValueError, r"H\(v\) of shape \(2,\)"),
    (lambda x, free: (lambda v: np.ones((len(v), 2))), ValueError, "H\\(v\\) of shape"),
    ("hessp", TypeError, "hessp must be callable")])
def test_minimize_oba_names_a_wrong_hessp(bad_hessp, error, match):
    with pytest.raises(error, match=match):
        minimize_oba(f_grad, bad_hessp, np.zeros(5), 0.1)


@pytest.mark.parametrize("kwargs, match", [
    ({"mu": "a"}, "mu must be a positive finite number, got 'a'"),
    ({"mu": 1j}, "mu must be"), ({"mu": None}, "mu must be"),
    ({"lipschitz": "a"}, "lipschitz must be"),
    ({"lipschitz": lambda: "a"}, r"lipschitz\(\) must return")])
def test_minimize_oba_names_a_wrong_number(kwargs, match):
    args = {"mu": 0.1, **kwargs}
    with pytest.raises(ValueError, match=match):
        minimize_oba(f_grad, hessp, np.zeros(5), args.pop("mu"), tol=1e-12, **args)


def test_the_checked_operator_leaves_the_solution_unchanged():
    res = minimize_oba(f_grad, hessp, np.zeros(5), 0.1, tol=1e-12)
    g = A.T @ (A @ res.x - b)
    nz = res.x != 0
    np.testing.assert_allclose(g[nz], -0.1 * np.sign(res.x[nz]), atol=1e-9)
    assert np.all(np.abs(g[~nz]) <= 0.1 + 1e-9)


def test_minimize_newton_cg_names_a_wrong_hessp_at():
    def hessp_at(x):
        return (lambda v: A.T @ (A @ v)), 0
    res = minimize_newton_cg(f_grad, np.zeros(5), hessp_at, tol=1e-10)
    np.testing.assert_allclose(res.x, np.linalg.lstsq(A, b, rcond=None)[0], atol=1e-8)
    for bad, error, match in [
            ("h", TypeError, "hessp_at must be callable"),
            (lambda x: (lambda v: A.T @ (A @ v)), TypeError,
             r"hessp_at\(x\) must return the pair \(hessp, n_active\), got function"),
            (lambda x: (A.T @ A, 0), TypeError, r"hessp_at\(x\)\[0\] must be an operator"),
            (lambda x: ((lambda v: v[:2]), 0), ValueError, r"H\(v\) of shape \(2,\)")]:
        with pytest.raises(error, match=match):
            minimize_newton_cg(f_grad, np.zeros(5), bad)
    with pytest.raises(TypeError, match=r"fun\(x\) must return the pair"):
        minimize_newton_cg(lambda x: 1.0, np.zeros(5), hessp_at)


def test_minimize_nqn_names_what_fun_returned():
    with pytest.raises(TypeError, match=r"with jac=True, fun must return the pair .* got float"):
        minimize_nqn(lambda x: f_grad(x)[0], np.zeros(5), jac=True)
    with pytest.raises(TypeError, match="fun must return a real number"):
        minimize_nqn(lambda x: "a", np.zeros(5))
    with pytest.raises(TypeError, match="jac returned a gradient that is not an array of real"):
        minimize_nqn(lambda x: f_grad(x)[0], np.zeros(5), jac=lambda x: "abcde")
    with pytest.raises(TypeError, match="options must be a dict or None, got str"):
        minimize_nqn(lambda x: f_grad(x)[0], np.zeros(5), options="maxiter=10")
