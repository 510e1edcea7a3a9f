"""SparsemaxClassifier solver details the other files leave open: the Hessian product and
the gradient as derivatives (sample weights, centering), the predict threshold, newton-cg's
Armijo, CG and 64-eps stop, nqn's float32-only no-decrease success, sdca's intercept in the
step size and its warm starts (each found by a bug the suite let through)."""
import numpy as np
import pytest

from sparsekit.linear_model import SparsemaxClassifier
from sparsekit.linear_model._sparsemax import _armijo, _conjugate_gradient


def _data(n=40, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 2.0          # a nonzero feature mean: centering
    y = rng.integers(0, k, n)
    sw = rng.uniform(0.2, 3.0, n)
    sw[:3] = 0.0                                   # zero weights too
    return X, y, sw


@pytest.mark.parametrize("polytope", ["simplex", "at_least_one"])
@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
def test_hessian_product_is_the_derivative_of_the_gradient(polytope, fit_intercept,
                                                           penalize):
    """newton-cg's generalized Hessian-vector product, with sample weights, the implicit
    centering and the intercept options, equals a central difference of the gradient
    (the loss is piecewise quadratic: exact away from kinks, up to float32 products)."""
    X, y, sw = _data()
    k, d = 3, X.shape[1]
    clf = SparsemaxClassifier(alpha=0.1, polytope=polytope, solver="newton-cg",
                              fit_intercept=fit_intercept, penalize_intercept=penalize)
    budget = clf._check_budget()
    Yt, _ = clf._encode_targets(y, budget)
    center = X.T @ sw / sw.sum() if fit_intercept and not penalize else None
    offset = np.zeros(k)
    fun = clf._objective(X, Yt, sw, budget, center, offset)
    hessp_at = clf._hessian_at(X, X, sw, budget, k, center, offset)
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


def test_armijo_accepts_a_full_step_with_sufficient_decrease():
    """f = x^2/2 from x = 1 along d = -1.9: f drops from 0.5 to 0.405, more than
    1e-4 * |slope|, so the full step is taken (a stricter constant halves it)."""
    def fun(x):
        return 0.5 * float(x @ x), x.copy()
    theta, d = np.array([1.0]), np.array([-1.9])
    f, g = fun(theta)
    step, f_new, _ = _armijo(fun, theta, f, g @ d, d)
    assert step == 1.0 and f_new == pytest.approx(0.405)
    # an ascent-like overshoot is refused: x -> -1.1 raises f
    step, f_new, _ = _armijo(fun, theta, f, g @ np.array([-2.1]), np.array([-2.1]))
    assert step == 0.5


def test_conjugate_gradient_solves_an_spd_system():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    A = Q @ np.diag(np.logspace(0, 3, 12)) @ Q.T
    g = rng.standard_normal(12)
    x, n_cg = _conjugate_gradient(lambda v: A @ v, g, 1e-10 * np.linalg.norm(g))
    np.testing.assert_allclose(A @ x, -g, atol=1e-8)
    assert n_cg <= 24


def test_threshold_decides_the_predicted_labels_strictly():
    """predict is proba > threshold: strict, and the threshold is used."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    Y = (rng.random((30, 3)) < 0.5).astype(int)
    clf = SparsemaxClassifier(polytope="box", threshold=0.5).fit(X, Y)
    clf.coef_ = np.zeros_like(clf.coef_)
    clf.intercept_ = np.array([0.5, 0.2, 0.8])     # box: proba = clip(scores, 0, 1)
    np.testing.assert_array_equal(clf.predict(X[:2]), [[0, 0, 1], [0, 0, 1]])
    clf.set_params(threshold=0.0)                  # the support
    np.testing.assert_array_equal(clf.predict(X[:2]), [[1, 1, 1], [1, 1, 1]])


@pytest.mark.parametrize("polytope, params, intercept, proba, expected", [
    ("simplex", {}, [0.6, 0.4, -1.0], [0.6, 0.4, 0.0], [1, 1, 0]),   # the support
    ("box", {}, [1.0, 0.2, -1.0], [1.0, 0.2, 0.0], [1, 0, 0]),       # marginals > 0.5
    ("budget", {"budget": 2}, [1.0, 0.2, -1.0], [1.0, 0.2, 0.0], [1, 0, 0]),
])
def test_auto_threshold_is_the_support_on_the_simplex_and_one_half_elsewhere(
        polytope, params, intercept, proba, expected):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    Y = np.eye(3, dtype=int)[rng.integers(0, 3, 30)]
    clf = SparsemaxClassifier(polytope=polytope, **params).fit(X, Y)
    clf.coef_ = np.zeros_like(clf.coef_)
    clf.intercept_ = np.array(intercept)
    np.testing.assert_allclose(clf.predict_proba(X[:1]), [proba])
    np.testing.assert_array_equal(clf.predict(X[:1]), [expected])


def test_nqn_no_decrease_is_a_success_in_float32_only(monkeypatch):
    """status 4 (line search found no decrease) is the rounding floor of a float32
    objective only: in float64 it is a failure and must warn."""
    import warnings

    from scipy.optimize import OptimizeResult
    from sklearn.exceptions import ConvergenceWarning

    import sparsekit.optimize as optimize

    def stub(fun, x0, **kwargs):
        return OptimizeResult(x=np.zeros_like(x0), fun=fun(x0)[0], nit=1, status=4,
                              success=False, message="ABNORMAL: LINE SEARCH FOUND NO DECREASE")

    monkeypatch.setattr(optimize, "minimize_nqn", stub)
    X, y, _ = _data()
    with pytest.warns(ConvergenceWarning):
        SparsemaxClassifier(solver="nqn").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SparsemaxClassifier(solver="nqn").fit(X.astype(np.float32), y)


@pytest.mark.parametrize("polytope", ["simplex", "box", "at_least_one"])
def test_sdca_one_row_with_a_penalized_intercept_is_solved_in_one_epoch(polytope):
    """With a single row and a penalized intercept (the weight of a constant feature 1),
    the whole dual is one block: its exact update, with q = c (||x||^2 + 1), solves the
    problem in one epoch."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X = np.array([[0.7, -1.2, 0.4]])
    Y = np.array([[0.2, 0.8, 0.0]]) if polytope == "simplex" else np.array([[1, 1, 0]])
    clf = SparsemaxClassifier(solver="sdca", polytope=polytope, alpha=0.3,
                              penalize_intercept=True, tol=1e-10, max_iter=1,
                              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(X, Y)
    ref = SparsemaxClassifier(solver="lbfgs", polytope=polytope, alpha=0.3,
                              penalize_intercept=True, tol=1e-12).fit(X, Y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=1e-6)


def test_newton_cg_relative_reduction_stop_is_64_eps():
    """The stop on a small decrease uses 64 machine epsilons relative to f: on
    f = 1 + x^4/4 (Newton shrinks x by 1/3 a step) it stops only once x < ~1e-3."""
    from sparsekit.linear_model._sparsemax import _newton_cg

    def fun(x):
        return 1.0 + 0.25 * float(np.sum(x**4)), x**3

    def hessp_at(x):
        return (lambda v: 3 * x**2 * v), 1

    res = _newton_cg(fun, hessp_at, np.array([0.05]), tol=0.0, max_iter=200, verbose=0)
    assert res.success and "64 eps" in res.message
    assert abs(res.x[0]) < 1e-3


def test_sdca_warm_start_keeps_the_start_intercept(monkeypatch):
    """A warm start replaces W by W(mu0) with mu0 = proj(scores of theta0) but keeps the
    start's free intercept: b + wb(mu0) == b0 before any update (epochs stubbed out)."""
    import scipy.sparse as sp

    import sparsekit.linear_model._sparsemax_dual as dual
    from sparsekit._cython._projections import POLYTOPE_CODES

    monkeypatch.setattr(dual, "dual_epoch_dense", lambda *args: 0.0)
    X, y, _ = _data(n=20)
    Y = sp.csr_matrix(np.eye(3)[y])
    rng = np.random.default_rng(2)
    theta0 = rng.standard_normal((X.shape[1] + 1) * 3)
    res = dual.dual_coordinate_ascent(
        X, Y, np.ones(20), lambda th: (0.0, np.ones_like(th)), theta0, alpha=0.1,
        code=POLYTOPE_CODES["simplex"], budget=1.0, fit_intercept=True,
        penalize_intercept=False, tol=1e-12, max_iter=1, rng=np.random.default_rng(0),
        verbose=0)
    np.testing.assert_allclose(res.x[-3:], theta0[-3:], atol=1e-12)


@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
def test_objective_gradient_is_the_derivative_of_the_objective(fit_intercept, penalize):
    """The gradient of the solvers' objective, in the centered coordinates (b + W^T mu)
    with sample weights, matches central differences of the objective."""
    X, y, sw = _data()
    k, d = 3, X.shape[1]
    clf = SparsemaxClassifier(alpha=0.1, fit_intercept=fit_intercept,
                              penalize_intercept=penalize)
    Yt, _ = clf._encode_targets(y, 1.0)
    center = X.T @ sw / sw.sum() if fit_intercept and not penalize else None
    fun = clf._objective(X, Yt, sw, 1.0, center, np.zeros(k))
    theta = 0.5 * np.random.default_rng(3).standard_normal((d + 1) * k)
    g = fun(theta)[1]
    eps = 1e-6
    fd = np.array([(fun(theta + eps * e)[0] - fun(theta - eps * e)[0]) / (2 * eps)
                   for e in np.eye(theta.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_sdca_warm_start_with_a_penalized_intercept_from_another_problem():
    """A penalized intercept is all in wb (the fixed offset b must restart at 0): a warm
    start from another alpha's solution reaches the cold solution."""
    import warnings

    X, y, _ = _data(n=50)
    kw = dict(solver="sdca", penalize_intercept=True, tol=1e-10, max_iter=5000,
              random_state=0)
    warm = SparsemaxClassifier(alpha=1.0, warm_start=True, **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm.set_params(alpha=0.1).fit(X, y)
    cold = SparsemaxClassifier(alpha=0.1, **kw).fit(X, y)
    np.testing.assert_allclose(warm.intercept_, cold.intercept_, atol=1e-7)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-7)
