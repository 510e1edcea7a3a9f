"""minimize_newton_cg: Armijo backtracking, damping, stopping rules (and its CG)."""
import numpy as np
import pytest

from sparsekit.optimize import minimize_newton_cg
from sparsekit.optimize._newton_cg import _armijo


def test_armijo_accepts_a_full_step_with_sufficient_decrease():
    """f = x^2/2 from x = 1 along d = -1.9: f drops from 0.5 to 0.405, more than
    1e-4 * |slope|, so the full step is taken (a stricter constant halves it)."""
    def fun(x):
        return 0.5 * float(x @ x), x.copy()
    theta, d = np.array([1.0]), np.array([-1.9])
    f, g = fun(theta)
    step, f_new, _, _ = _armijo(fun, theta, f, g @ d, d)
    assert step == 1.0 and f_new == pytest.approx(0.405)
    # an ascent-like overshoot is refused: x -> -1.1 raises f
    step, f_new, _, _ = _armijo(fun, theta, f, g @ np.array([-2.1]), np.array([-2.1]))
    assert step == 0.5


def test_newton_cg_relative_reduction_stop_is_64_eps():
    """The stop on a small decrease uses 64 machine epsilons relative to f: on
    f = 1 + x^4/4 (Newton shrinks x by 1/3 a step) it stops only once x < ~1e-3."""
    def fun(x):
        return 1.0 + 0.25 * float(np.sum(x**4)), x**3

    def hessp_at(x):
        return (lambda v: 3 * x**2 * v), 1

    res = minimize_newton_cg(fun, np.array([0.05]), hessp_at, tol=0.0, max_iter=200)
    assert res.success and "64 eps" in res.message
    assert abs(res.x[0]) < 1e-3


def test_armijo_gives_up_after_max_halvings_on_an_ascent_direction():
    """f = x^2/2 from x = 1 along d = +1 (uphill): no step 2^-j meets sufficient
    decrease, so after exactly max_halvings evaluations Armijo returns Nones."""
    calls = []

    def fun(x):
        calls.append(x[0])
        return 0.5 * float(x @ x), x.copy()

    theta, d = np.array([1.0]), np.array([1.0])
    assert _armijo(fun, theta, 0.5, -1.0, d, max_halvings=7) == (None, None, None, 7)
    np.testing.assert_array_equal(calls, 1.0 + 0.5 ** np.arange(7))


def test_newton_cg_raises_the_damping_a_hundredfold_after_a_failed_line_search():
    """f = x^2/2 with a generalized Hessian that underestimates the curvature (1e-12):
    from x0 = 1e-4 the damped step -g / (H + 1e-3 |g|) is ~1000x too long, and 20
    halvings cannot fix it, so the solve is redone with the damping times 100; that
    step, -g / (H + 0.1 |g|), passes after some halvings."""
    trials = []

    def fun(x):
        trials.append(x[0])
        return 0.5 * float(x @ x), x.copy()

    def hessp_at(x):
        return (lambda v: 1e-12 * v), 1

    x0 = 1e-4
    res = minimize_newton_cg(fun, np.array([x0]), hessp_at, tol=0.0, max_iter=1)
    d0 = -x0 / (1e-12 + 1e-3 * x0)
    d1 = -x0 / (1e-12 + 1e-1 * x0)
    # trials[0] is the start; then 20 halvings along d0, then halvings along d1
    np.testing.assert_allclose(trials[1:21], x0 + 0.5 ** np.arange(20) * d0, rtol=1e-12)
    np.testing.assert_allclose(trials[21], x0 + d1, rtol=1e-12)
    step = 0.5 ** (len(trials) - 22)
    assert 0 < abs(res.x[0]) < x0 and res.nit == 1
    np.testing.assert_allclose(res.x[0], x0 + step * d1, rtol=1e-12)
    assert res.fun <= 0.5 * x0**2 + 1e-4 * step * (x0 * d1)


def test_newton_cg_stops_when_no_damping_gives_a_decrease():
    """A gradient that does not match the objective (f = x^2/2 at its minimum x = 0, but
    "gradient" x - 1) makes every Newton direction uphill: each of the 8 dampings
    (1e-3 |g| times 100^j) fails its 20 halvings, and the solve stops at the start,
    unsuccessful, with a line-search message, instead of running on to max_iter."""
    calls = []

    def fun(x):
        calls.append(x[0])
        return 0.5 * float(x @ x), x - 1.0

    def hessp_at(x):
        return (lambda v: v), 1

    x0 = np.array([0.0])
    res = minimize_newton_cg(fun, x0, hessp_at, tol=0.0, max_iter=50)
    assert not res.success and res.nit == 1
    assert res.message == "line search failed (the objective does not decrease)"
    np.testing.assert_array_equal(res.x, x0)
    assert res.fun == 0.0 and len(calls) == 1 + 8 * 20
    # the full steps tried: 1 / (1 + 1e-3 * 100^j) for j = 0..7
    np.testing.assert_allclose(calls[1::20], 1.0 / (1.0 + 1e-3 * 100.0 ** np.arange(8)),
                               rtol=1e-12)


def test_newton_cg_at_the_objectives_rounding_floor_is_a_success():
    """Where the Newton step promises less than 64 eps of f, an objective whose rounding
    noise hides the decrease (here 1e-14 added away from the start, with x·x / 2 =
    3.75e-15 left to gain) is as converged as f can tell: status 7, not a failed line
    search; a step that promised more and found no decrease still fails (the test
    above)."""
    x0 = np.full(3, 5e-8)

    def fun(x):
        noise = 0.0 if np.array_equal(x, x0) else 1e-14
        return 1.0 + 0.5 * float(x @ x) + noise, x.copy()

    def hessp_at(x):
        return (lambda v: v), 1

    res = minimize_newton_cg(fun, x0, hessp_at, tol=1e-10, max_iter=50)
    assert res.success and res.status == 7 and "64 eps" in res.message
    np.testing.assert_array_equal(res.x, x0)


def test_newton_cg_names_a_gradient_of_another_shape_and_a_start_that_is_not_finite():
    """As minimize_oba: the objective's output is checked where it comes back (a wrong
    gradient shape was NumPy's matmul error, a NaN objective at x0 'line search failed')."""
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    hessp_at = lambda x: ((lambda v: A @ v), 0)        # noqa: E731
    with pytest.raises(ValueError, match=r"fun returned a gradient of shape \(3,\); "
                                         r"expected \(2,\)"):
        minimize_newton_cg(lambda x: (0.5 * x @ A @ x, np.ones(3)), np.zeros(2), hessp_at)
    for value, grad in ((np.nan, np.zeros(2)), (0.0, np.array([np.inf, 0.0]))):
        with pytest.raises(ValueError, match=r"fun\(x0\) is not finite"):
            minimize_newton_cg(lambda x: (value, grad), np.zeros(2), hessp_at)
    res = minimize_newton_cg(lambda x: (0.5 * x @ A @ x - x.sum(), list(A @ x - 1.0)),
                             np.zeros(2), hessp_at, tol=1e-10)   # a list is a gradient too
    assert res.success and res.jac.dtype == np.float64
