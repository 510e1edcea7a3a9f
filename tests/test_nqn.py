"""NQN optimizer: thesis examples, Lemma 3.2.1, line-search conditions, flags, SciPy parity."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import Bounds, OptimizeWarning, fmin_l_bfgs_b, minimize, rosen, rosen_der

import sparsekit.optimize._nqn as nqn_module
from sparsekit._cython import _nqn_kernels as K
from sparsekit.optimize import fmin_nqn, minimize_nqn
from sparsekit.optimize._eps_subgradient import min_norm_subgradient
from sparsekit.optimize._nqn_linesearch import DECREASE, FAILED, WOLFE, projected_wolfe
from sparsekit.optimize._nqn_memory import FreeSetLBFGS
from sparsekit.optimize._test_problems import PROBLEMS, BoundedProblem


def example_36(x):
    """(3.6): |x1 − x2| + ½(x1 + 0.1 x2)², solved subject to x1 ≤ −0.5."""
    d, q = x[0] - x[1], x[0] + 0.1 * x[1]
    return abs(d) + 0.5 * q * q, np.array([np.sign(d) + q, -np.sign(d) + 0.1 * q])


BOUNDS_36 = [(None, -0.5), (None, None)]


def _reference_simplex_projection(Z):
    """Sort-based Euclidean projection of each row onto the probability simplex."""
    Z = np.atleast_2d(Z)
    U = -np.sort(-Z, axis=1)
    css = np.cumsum(U, axis=1) - 1
    k = np.arange(1, Z.shape[1] + 1)
    rho = (U - css / k > 0).sum(axis=1)
    tau = css[np.arange(Z.shape[0]), rho - 1] / rho
    return np.maximum(Z - tau[:, None], 0)


# --- worked example (3.6) ---------------------------------------------------------------

@pytest.mark.parametrize("variant", [1, 2, 3, 4])
def test_example_36_solution(variant):
    rng = np.random.default_rng(variant)
    for x0 in [np.array([-0.5, -3.0]), *rng.uniform(-5, 5, size=(3, 2))]:
        res = minimize_nqn(example_36, x0, jac=True, bounds=BOUNDS_36,
                           options={"variant": variant, "ftol": 0, "maxiter": 300})
        np.testing.assert_allclose(res.x, [-0.5, -0.5], atol=1e-6)
        assert res.fun == pytest.approx(0.5 * 0.55**2, abs=1e-6)


@pytest.mark.parametrize("project", [None, _reference_simplex_projection])
def test_example_36_eps_min_norm_subgradient(project):
    # gradients of the two smooth pieces near x* = (−0.5, −0.5) (notes §3.3)
    G = np.array([[0.45, -1.055], [-1.55, 0.945]])
    g_tilde, lam = min_norm_subgradient(G, project=project)
    np.testing.assert_allclose(g_tilde, [-0.3025, -0.3025], atol=1e-6)
    np.testing.assert_allclose(lam, [0.62375, 0.37625], atol=1e-6)
    # x1 = −0.5 is at its upper bound: 𝓑(∇f) misses it, 𝓑(g̃) finds it
    x, lo, hi = np.array([-0.5, -2.0]), np.array([-np.inf, -np.inf]), np.array([-0.5, np.inf])
    a = -2.0
    grad = np.array([0.5 + 0.1 * a, -1.05 + 0.01 * a])
    for g, expect in ((grad, [0, 0]), (g_tilde, [1, 0])):
        active = np.zeros(2, dtype=np.uint8)
        K.binding_mask(x, g, lo, hi, active)
        np.testing.assert_array_equal(active, expect)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.integers(1, 12), st.integers(0, 2**31 - 1))
def test_min_norm_subgradient_kkt(l, n, seed):
    """λ* is optimal for (3.8): (G g̃)_i ≥ ‖g̃‖² for all i, equality on the support."""
    G = np.random.default_rng(seed).normal(size=(l, n))
    g_tilde, lam = min_norm_subgradient(G, project=_reference_simplex_projection)
    assert lam.min() >= 0 and lam.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(g_tilde, G.T @ lam, atol=1e-12)
    slack = G @ g_tilde - g_tilde @ g_tilde
    scale = max(1.0, np.abs(G).max() ** 2)
    assert slack.min() >= -1e-5 * scale
    assert np.all(np.abs(slack[lam > 1e-3]) <= 1e-5 * scale)


def test_min_norm_subgradient_edge_cases():
    g, lam = min_norm_subgradient(np.array([[1.0, -2.0]]))
    np.testing.assert_array_equal(g, [1.0, -2.0])
    g, lam = min_norm_subgradient(np.zeros((3, 4)))
    np.testing.assert_array_equal(g, 0.0)
    with pytest.raises(ValueError):
        min_norm_subgradient(np.zeros(3))


# --- Lemma 3.2.1 and Algorithm 3 ----------------------------------------------------------

def _random_memory(rng, n, m):
    mem = FreeSetLBFGS(n, m)
    for _ in range(rng.integers(0, m + 3)):
        s = rng.normal(size=n)
        y = rng.normal(size=n) + 2 * s
        if s @ y > 1e-3 * np.linalg.norm(s) * np.linalg.norm(y):
            mem.push(s, y)
    return mem


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 25), st.integers(0, 2**31 - 1), st.booleans())
def test_lemma_321_correction_loop(n, seed, stationary):
    """Algorithm 3 from 𝒜⁰ = 𝓑(∇f): the returned p satisfies T(x, p) = p, is a descent
    direction unless it is 0, and p = 0 only at points satisfying (3.5)."""
    rng = np.random.default_rng(seed)
    lo, hi = -np.ones(n), np.ones(n)
    x = rng.choice([-1.0, 1.0, 0.0], size=n) * rng.choice([1.0, 0.5], size=n)
    g = rng.normal(size=n)
    if stationary:  # satisfy (3.5): zero on free, right signs at bounds
        g[(x > -1) & (x < 1)] = 0.0
        g[x == -1] = np.abs(g[x == -1])
        g[x == 1] = -np.abs(g[x == 1])
    mem = _random_memory(rng, n, 4)
    active = np.zeros(n, dtype=np.uint8)
    added = np.empty(n, dtype=np.intc)
    p, d = np.empty(n), np.empty(n)
    opts = dict(nqn_module._DEFAULTS, variant=3)
    flag = nqn_module._direction(x, g, g, lo, hi, mem, None, active, added, p, d, opts)
    K.project_direction(x, p, lo, hi, d)
    np.testing.assert_array_equal(d, p)
    pg = K.projected_gradient_norm(x, g, lo, hi)
    if np.all(p == 0):
        assert flag == 3 and pg == 0.0
    else:
        assert flag is None and g @ p < 0
    if stationary:
        assert np.all(p == 0)


# --- line search (3.21)-(3.22) ------------------------------------------------------------

def test_line_search_conditions_at_accepted_steps(monkeypatch):
    from sparsekit.optimize._test_problems import BoundedProblem

    records = []

    def spy(fun, x, f0, g0, d, lo, hi, c1, c2, *args):
        res = projected_wolfe(fun, x, f0, g0, d, lo, hi, c1, c2, *args)
        records.append((x.copy(), f0, g0.copy(), d.copy(), lo, hi, c1, c2, res))
        return res

    monkeypatch.setattr(nqn_module, "projected_wolfe", spy)
    for name in ("Myopic_Coupled", "Chained_LQ", "Nesterov_3"):
        P = BoundedProblem(name, 20)
        minimize_nqn(P.fun, P.starting_points(1, 0)[0], jac=True, bounds=P.bounds,
                     options={"maxiter": 200, "ftol": 0})
    assert len(records) > 100
    n_wolfe = 0
    for x, f0, g0, d, lo, hi, c1, c2, res in records:
        if res.status not in (WOLFE, DECREASE):
            continue
        np.testing.assert_array_equal(res.x, np.clip(x + res.alpha * d, lo, hi))
        assert res.f <= f0 + c1 * res.alpha * (g0 @ d)  # (3.21)
        if res.status == WOLFE:
            n_wolfe += 1
            t_dir = np.empty_like(d)
            K.project_direction(res.x, d, lo, hi, t_dir)
            assert res.g @ t_dir >= c2 * (g0 @ d)  # (3.22)
    assert n_wolfe > 0.8 * len(records)


def test_line_search_bisects_when_first_trial_at_umax_fails():
    """Fix of §5.5: the first trial α = U_max ≤ 1 failing (3.21) must not collapse to 0."""
    lo, hi = np.array([0.0]), np.array([np.inf])

    def fun(x):  # minimum at 1.4, path from 2 toward the bound at 0 (U_max = 1)
        return (x[0] - 1.4) ** 2 * 10 + 5 * abs(x[0] - 1.4), np.array(
            [20 * (x[0] - 1.4) + 5 * np.sign(x[0] - 1.4)])

    x = np.array([2.0])
    f0, g0 = fun(x)
    res = projected_wolfe(fun, x, f0, g0, np.array([-2.0]), lo, hi, alpha0=1.0)
    assert fun(np.array([0.0]))[0] > f0  # the trial at U_max fails (3.21)
    assert res.status == WOLFE and res.alpha == 0.5 and res.nfev == 2


def test_line_search_failure_on_inconsistent_gradient():
    def fun(x):
        return float(x @ x), np.zeros_like(x)

    x = np.array([1.0])
    res = projected_wolfe(fun, x, 1.0, np.array([-2.0]), np.array([1.0]),
                          np.array([-np.inf]), np.array([np.inf]), maxls=5)
    # no decrease exists: bisection continues past maxls down to the resolution of x
    assert res.status == FAILED and res.x is None and res.alpha == 0.0
    assert 50 <= res.nfev <= 60 and len(res.trial_grads) == res.nfev
    res = projected_wolfe(fun, x, 1.0, np.array([-2.0]), np.array([1.0]),
                          np.array([-np.inf]), np.array([np.inf]), max_evals=7)
    assert res.status == FAILED and res.nfev == 7


# --- agreement with L-BFGS-B on smooth problems -------------------------------------------

@pytest.mark.parametrize("seed, theta, step0", [(0, "thesis", "previous"), (1, "code", "unit"),
                                               (2, "scaled", "previous")])
def test_agrees_with_lbfgsb_on_bounded_quadratic(seed, theta, step0):
    rng = np.random.default_rng(seed)
    n = 40
    A = rng.normal(size=(n, n))
    H = A @ A.T / n + 0.1 * np.eye(n)
    b = rng.normal(size=n) * 3

    def fg(x):
        return 0.5 * x @ H @ x - b @ x, H @ x - b

    bounds = [(-1, 1)] * n
    x0 = rng.uniform(-1, 1, n)
    opts = {"ftol": 1e-14, "gtol": 1e-9, "maxiter": 5000}
    # θ = max(1, ‖g‖₂) ("code") converges only linearly here: at these tolerances the
    # stall test (flag 9, relative progress 1e-8) would end it first, so it is off
    ours = minimize_nqn(fg, x0, jac=True, bounds=bounds,
                        options={**opts, "theta": theta, "step0": step0, "stall_tol": 0})
    ref = minimize(fg, x0, jac=True, bounds=bounds, method="L-BFGS-B", options=opts)
    assert ours.success
    assert ours.fun == pytest.approx(ref.fun, rel=1e-8, abs=1e-9)
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-4)


def test_agrees_with_lbfgsb_on_bounded_rosenbrock():
    n = 30
    x0 = np.full(n, -1.0)
    bounds = Bounds(np.full(n, -2.0), np.full(n, 0.5))
    opts = {"ftol": 1e-15, "gtol": 1e-8, "maxiter": 5000}
    ours = minimize_nqn(lambda x: (rosen(x), rosen_der(x)), x0, jac=True, bounds=bounds,
                        options={**opts, "stall_tol": 0})  # tighter than the stall test
    ref = minimize(rosen, x0, jac=rosen_der, bounds=bounds, method="L-BFGS-B", options=opts)
    assert ours.fun == pytest.approx(ref.fun, rel=1e-8)
    np.testing.assert_allclose(ours.x, ref.x, atol=1e-4)
    assert ours.nfev < 4 * ref.nfev


# --- termination flags ----------------------------------------------------------------------

def _quad(x):
    return float(x @ x), 2 * x


def test_flag_0_1_2_7_99():
    x0 = np.arange(1.0, 6.0)
    assert minimize_nqn(_quad, x0, jac=True).status == 0
    assert minimize_nqn(_quad, x0, jac=True, options={"gtol": 0, "ftol": 1e-3}).status in (0, 7)
    r = minimize_nqn(rosen, x0, jac=rosen_der, options={"gtol": 0, "ftol": 1e-2})
    assert r.status == 7 and r.success
    r = minimize_nqn(rosen, x0, jac=rosen_der, options={"maxiter": 2})
    assert r.status == 1 and r.nit == 2 and not r.success
    r = minimize_nqn(rosen, x0, jac=rosen_der, options={"maxfun": 5})
    assert r.status == 2 and r.nfev <= 5 + 1

    def stop(xk):
        raise StopIteration

    r = minimize_nqn(rosen, x0, jac=rosen_der, callback=stop)
    # SciPy's status and message for a callback's StopIteration (scipy.optimize.minimize)
    assert (r.status, r.message, r.success) == (99, "`callback` raised `StopIteration`.", False)


def test_flag_3_no_descent_direction_and_restart():
    """Variant 2 at x = 0 after a step from 2: g̃ = 0 marks x binding although
    ∇f = −1 says it may move (the gradient sample straddles the kink at 0.5)."""
    def f(x):
        return abs(x[0] - 0.5), np.array([np.sign(x[0] - 0.5)])

    opts = {"variant": 2, "restart": False, "step0": "unit"}
    r = minimize_nqn(f, [2.0], jac=True, bounds=[(0, 10)], options=opts)
    assert r.status == 3 and r.x[0] == 0.0
    r = minimize_nqn(f, [2.0], jac=True, bounds=[(0, 10)], options={**opts, "restart": True})
    assert r.nrestart >= 1 and abs(r.x[0] - 0.5) < 1e-6


def test_flag_4_line_search_failure():
    r = minimize_nqn(lambda x: (float(x @ x), -2 * x), [1.0, 2.0], jac=True)
    assert r.status == 4 and not r.success
    np.testing.assert_array_equal(r.x, [1.0, 2.0])
    # no decrease, but the model promised less than ftol · |f|: converged (flag 7)
    r = minimize_nqn(lambda x: (1.0, np.full_like(x, 1e-12)), [1.0], jac=True,
                     options={"gtol": 0})
    assert r.status == 7 and r.success and r.nit == 0


def test_flag_5_nan():
    r = minimize_nqn(lambda x: (np.nan, x), [1.0], jac=True)
    assert r.status == 5
    r = minimize_nqn(lambda x: (float(x @ x), np.full_like(x, np.nan) if x[0] < 1 else 2 * x),
                     [2.0], jac=True)
    assert r.status == 5


def test_the_edge_of_the_domain_is_flag_5_not_a_convergence():
    """f = (x − 2)² is NaN from x = 1 on: the steps shrink towards the edge (each line
    search cut short by a NaN trial, the slope still −2), their decrease fell below ftol
    and the run reported a convergence (flag 7, success) at a point that is no minimum.
    It is now flag 5 at the last point where f is defined; a minimum inside the domain
    whose line searches met NaN on the way (x − log x from 20) still converges."""
    def edge(x):
        if x[0] >= 1:
            return np.nan, np.full_like(x, np.nan)
        return float((x[0] - 2) ** 2), 2 * (x - 2)

    r = minimize_nqn(edge, [0.0], jac=True)
    assert r.status == 5 and not r.success and "NaN" in r.message
    assert 0.99 < r.x[0] < 1 and np.isfinite(r.fun) and r.fun == edge(r.x)[0]
    # the line search finds no decrease and the model promises less than ftol: same flag
    r = minimize_nqn(lambda x: (1.0, np.full_like(x, -1e-12)) if x[0] <= 0
                     else (np.nan, np.full_like(x, np.nan)), [0.0], jac=True,
                     options={"gtol": 0})
    assert r.status == 5 and r.nit == 0

    def barrier(x):
        if x[0] <= 0:
            return np.nan, np.full_like(x, np.nan)
        return float(x[0] - np.log(x[0])), 1 - 1 / x

    r = minimize_nqn(barrier, [20.0], jac=True)
    assert r.success and r.status == 0 and abs(r.x[0] - 1) < 1e-5


@pytest.mark.filterwarnings("error::RuntimeWarning")   # the overflow is the flag, no warning
def test_flag_6_numerical():
    r = minimize_nqn(lambda x: (float(x.sum()), np.full_like(x, 1e308)), [1.0, 1.0], jac=True)
    assert r.status == 6
    assert set(nqn_module.MESSAGES) == {0, 1, 2, 3, 4, 5, 6, 7, 9, 99}


def test_flag_9_stall():
    """Linear convergence on |x| + bounds: the stall test ends the run once the last w
    iterations gained at most τ of the total decrease; without it the run goes on."""
    from sparsekit.optimize._test_problems import BoundedProblem

    P = BoundedProblem("L1", 20)
    x0 = P.starting_points(1, 0)[0]
    opts = {"ftol": 0, "gtol": 0, "maxfun": 20000, "stall_tol": 1e-8}
    seen = []
    r = minimize_nqn(P.fun, x0, jac=True, bounds=P.bounds, options=opts,
                     callback=lambda xk: seen.append(P.fun(xk)[0]))
    assert r.status == 9 and not r.success    # accuracy relative to f(x0), not stationarity
    f0 = P.fun(np.clip(x0, P.lb, P.ub))[0]
    assert seen[-11] - seen[-1] <= 1e-8 * (f0 - seen[-1])
    assert all(seen[k - 10] - seen[k] > 1e-8 * (f0 - seen[k]) for k in range(10, len(seen) - 1))
    off = minimize_nqn(P.fun, x0, jac=True, bounds=P.bounds, options={**opts, "stall_tol": 0})
    assert off.status != 9 and off.nfev > r.nfev and off.fun <= r.fun
    assert r.fun - off.fun <= 1e-6 * (f0 - off.fun)


# --- interfaces -----------------------------------------------------------------------------

def test_fmin_nqn_is_a_drop_in_for_fmin_l_bfgs_b():
    x0 = np.array([-1.2, 1.0, 0.3])
    bounds = [(-2, 2), (None, 0.8), (0, None)]

    def fun(x, a):
        return a * rosen(x)

    def grad(x, a):
        return a * rosen_der(x)

    def both(x, a):
        return fun(x, a), grad(x, a)

    ref = fmin_l_bfgs_b(both, x0, args=(2.0,), bounds=bounds, factr=10, pgtol=1e-9)
    for kwargs in ({"func": both}, {"func": fun, "fprime": grad},
                   {"func": fun, "approx_grad": True, "pgtol": 1e-4, "factr": 1e7}):
        kwargs = {"factr": 10, "pgtol": 1e-9, **kwargs}
        x, f, d = fmin_nqn(x0=x0, args=(2.0,), bounds=bounds, **kwargs)
        assert set(ref[2]) <= set(d)
        assert d["warnflag"] == 0 and d["funcalls"] > 0 and d["nit"] > 0
        tol = 1e-3 if kwargs.get("approx_grad") else 1e-6
        np.testing.assert_allclose(x, ref[0], atol=tol)
        assert f == pytest.approx(ref[1], abs=1e-6)
    x, f, d = fmin_nqn(both, x0, args=(2.0,), maxiter=1)
    assert d["warnflag"] == 1 and d["nit"] == 1


def test_minimize_nqn_interface_and_validation():
    r = minimize_nqn(_quad, [3.0, -4.0], jac=True, bounds=Bounds([1, -np.inf], [np.inf, -2]))
    np.testing.assert_allclose(r.x, [1.0, -2.0])
    assert r.active.tolist() == [True, True]
    assert {"x", "fun", "jac", "nit", "nfev", "njev", "status", "success",
            "message"} <= set(r)
    r = minimize_nqn(lambda x: float(x @ x), [3.0], bounds=[(1, 2)])
    np.testing.assert_allclose(r.x, [1.0])  # x0 projected, finite differences
    with pytest.raises(ValueError, match="lower bound"):
        minimize_nqn(_quad, [0.0], jac=True, bounds=[(1, 0)])
    with pytest.raises(ValueError, match="entries"):
        minimize_nqn(_quad, [0.0, 1.0], jac=True, bounds=[(0, 1)])
    with pytest.raises(ValueError, match="finite"):
        minimize_nqn(_quad, [np.nan], jac=True)
    with pytest.raises(ValueError, match="variant"):
        minimize_nqn(_quad, [1.0], jac=True, options={"variant": 5})
    with pytest.raises(ValueError, match="shape"):
        minimize_nqn(lambda x: (1.0, np.ones(3)), [1.0], jac=True)
    with pytest.warns(OptimizeWarning):
        minimize_nqn(_quad, [1.0], jac=True, options={"bogus": 1})


# --- thesis test problems -----------------------------------------------------------------

def test_myopic_optimal_active_set_and_nesterov_3():
    from sparsekit.optimize._test_problems import BoundedProblem

    for name in ("Myopic_Coupled", "Myopic_Decoupled"):
        P = BoundedProblem(name, 20)
        r = minimize_nqn(P.fun, P.starting_points(1, 3)[0], jac=True, bounds=P.bounds,
                         options={"ftol": 0, "maxfun": 2000, "maxcor": 20})
        # at a bound to rounding: with NumPy 1.24 one coordinate ends 1 ulp inside it
        at_bound = (r.x <= P.lb + 1e-12) | (r.x >= P.ub - 1e-12)
        assert at_bound.sum() == 10 and at_bound[1::2].all()
    P = BoundedProblem("Nesterov_3", 20)
    r = minimize_nqn(P.fun, P.starting_points(1, 0)[0], jac=True, bounds=P.bounds,
                     options={"ftol": 0, "maxfun": 2000, "maxcor": 20})
    assert r.fun < 0.2501


# --- audit: θ (§5.4), skip rule (§3.6), bracket stop and Armijo ties (§5.5) ------------

@pytest.mark.parametrize("g, thesis, code", [
    ([3.0, -4.0], 4.0, 5.0),                 # ‖g‖_∞ = 4, ‖g‖₂ = 5
    ([-7.5, 1e-3, 2.0], 7.5, np.sqrt(7.5**2 + 1e-6 + 4.0)),
    ([0.1, -0.2], 1.0, 1.0),                 # floor at 1
    ([0.0, 0.0, 0.0], 1.0, 1.0),
    ([2e9, -1e9], 1e8, np.sqrt(5.0) * 1e9),  # the thesis caps at 1e8, the code does not
])
def test_theta_matches_thesis_formula(g, thesis, code):
    """Default θ = max(1, min(‖∇f‖_∞, 1e8)); "code": θ = max(1, ‖∇f‖₂) (notes §3.2, §5.4)."""
    g = np.array(g)
    mem = FreeSetLBFGS(g.size, 3)
    assert nqn_module._DEFAULTS["theta"] == "thesis"
    assert nqn_module._theta(g, "thesis", mem) == thesis
    assert nqn_module._theta(g, "code", mem) == pytest.approx(code, rel=1e-15)


class _FirstStep(Exception):
    """Raised by the line-search spy to end a run after its first call."""


@pytest.mark.parametrize("g0, options, theta", [
    ([3.0, -4.0, 0.5], {}, 4.0),
    ([3.0, -4.0, 0.5], {"theta": "code"}, np.sqrt(25.25)),
    ([0.25, -0.5, 0.125], {}, 1.0),
    ([2e9, -1e9, 0.0], {}, 2e9),     # the band [1, 1e8] moves up by ‖∇f(x⁰)‖_∞ / 1e8
])
def test_theta_scales_first_step_of_minimize_nqn(monkeypatch, g0, options, theta):
    """With empty memory the first direction is −∇f/θ, θ as in the options (notes §5.4)."""
    calls = []

    def spy(fun, x, f0, g, d, *args):
        calls.append((g.copy(), d.copy()))
        raise _FirstStep

    monkeypatch.setattr(nqn_module, "projected_wolfe", spy)
    g0 = np.array(g0)
    with pytest.raises(_FirstStep):
        minimize_nqn(lambda x: (float(g0 @ x + 0.5 * x @ x), g0 + x), np.zeros(3), jac=True,
                     options=options)
    (g, d), = calls
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_allclose(d, -g0 / theta, rtol=1e-15)


def _skip_rule_problem(c, K):
    """−x₀ + c x₀²/2 + K x₀x₁: from 0 one unit step to (1, 0), s = e₀, y = (c, K)."""
    def fun(x):
        return (float(-x[0] + 0.5 * c * x[0] ** 2 + K * x[0] * x[1]),
                np.array([-1.0 + c * x[0] + K * x[1], K * x[0]]))
    return fun


@pytest.mark.parametrize("c, K, upper, eps_skip, stored", [
    (0.5, 0.0, None, 1e-8, True),        # cos(s, y) = 1
    (0.5, 2.5e7, None, 1e-8, True),      # cos(s, y) = 2e-8 > ε_skip
    (0.5, 1e8, None, 1e-8, False),       # cos(s, y) = 5e-9 ≤ ε_skip although sᵀy = 0.5 > 0
    (0.5, 1e8, None, 1e-9, True),        # the same pair with ε_skip = 1e-9
    (-0.5, 0.0, 1.0, 1e-8, False),       # projected step: sᵀy = −0.5 < 0
    (0.0, 0.0, 1.0, 1e-8, False),        # y = 0: sᵀy = 0 is not > 0
])
def test_lbfgs_skip_rule_stores_only_pairs_passing_it(monkeypatch, c, K, upper, eps_skip,
                                                       stored):
    """A pair enters the L-BFGS memory iff sᵀy > ε_skip‖s‖‖y‖ (notes §3.6, Table 3.1)."""
    memories = []

    class Recording(FreeSetLBFGS):
        def __init__(self, n, m):
            super().__init__(n, m)
            memories.append(self)

    monkeypatch.setattr(nqn_module, "FreeSetLBFGS", Recording)
    fun = _skip_rule_problem(c, K)
    r = minimize_nqn(fun, [0.0, 0.0], jac=True, bounds=[(None, upper), (None, None)],
                     options={"maxiter": 1, "eps_skip": eps_skip})
    assert r.nit == 1
    s, y = np.array([1.0, 0.0]), np.array([c, K])
    np.testing.assert_array_equal(r.x, s)  # the unit step θ = 1, α = 1 was taken
    np.testing.assert_array_equal(r.jac - fun(np.zeros(2))[1], y)
    assert (s @ y > eps_skip * np.linalg.norm(s) * np.linalg.norm(y)) == stored
    (mem,) = memories
    assert len(mem) == int(stored)
    if stored:
        np.testing.assert_array_equal(mem.S[:, mem.order[0]], s)
        np.testing.assert_array_equal(mem.Y[:, mem.order[0]], y)
        assert mem.SY[0, 0] == s @ y


def _cliff(a):
    """−t for t ≤ a, +1 beyond: (3.21) holds exactly on (0, a], (3.22) nowhere."""
    def fun(x):
        return (-x[0], np.array([-1.0])) if x[0] <= a else (1.0, np.array([0.0]))
    return fun


def test_line_search_stops_at_relative_bracket_tolerance():
    """The bracket ends at the first U − L < ε_abs + ε_rel·L and returns L (notes §5.5)."""
    a, trials = 0.7, []
    cliff = _cliff(a)

    def fun(x):
        trials.append(x[0])
        return cliff(x)

    inf = np.array([np.inf])
    res = projected_wolfe(fun, np.array([0.0]), 0.0, np.array([-1.0]), np.array([1.0]), -inf,
                          inf, maxls=1000)
    widths, lower = [], 0.0
    for k in range(1, len(trials) + 1):
        lower = max([t for t in trials[:k] if t <= a], default=0.0)
        upper = min([t for t in trials[:k] if t > a], default=np.inf)
        widths.append((upper - lower, 1e-16 + 1e-6 * lower))
    assert all(w >= tol for w, tol in widths[:-1])
    assert widths[-1][0] < widths[-1][1] and widths[-1][0] > 1e-7  # not the x-resolution stop
    assert res.status == DECREASE and res.alpha == lower and res.nfev == len(trials) == 22
    # a looser ε_rel ends the bracket earlier (2⁻¹¹ < 1e-3·L ≤ 2⁻¹⁰)
    res = projected_wolfe(cliff, np.array([0.0]), 0.0, np.array([-1.0]), np.array([1.0]), -inf,
                          inf, eps_rel=1e-3, maxls=1000)
    assert res.status == DECREASE and res.nfev == 12 and a - 2.0**-11 < res.alpha <= a


@pytest.mark.parametrize("eps_abs, nfev", [(None, 55), (2.0**-20, 22), (0.0, 63)])
def test_line_search_stops_at_absolute_bracket_tolerance(eps_abs, nfev):
    """With L = 0 the search fails once U < ε_abs (1e-16: U = 2⁻⁵⁴), strictly (notes §5.5)."""
    trials = []

    def fun(x):  # |x| at its kink, with the left derivative −1 as the gradient at 0
        trials.append(x[0])
        return abs(x[0]), np.array([np.sign(x[0])])

    inf = np.array([np.inf])
    kwargs = {} if eps_abs is None else {"eps_abs": eps_abs}
    # ‖d‖ = 2¹⁰ keeps the x-resolution stop (U·‖d‖ ≤ 2⁻⁵², U = 2⁻⁶²) behind the ε_abs one
    res = projected_wolfe(fun, np.array([0.0]), 0.0, np.array([-1.0]), np.array([1024.0]),
                          -inf, inf, **kwargs)
    assert res.status == FAILED and res.nfev == nfev
    assert trials == [1024.0 * 2.0**-j for j in range(nfev)]


def test_line_search_tolerance_defaults_are_table_31():
    """ε_abs = 1e-16, ε_rel = 1e-6 in the line search and in minimize_nqn (Table 3.1, §5.5)."""
    import inspect

    params = inspect.signature(projected_wolfe).parameters
    assert (params["eps_abs"].default, params["eps_rel"].default) == (1e-16, 1e-6)
    assert (params["c1"].default, params["c2"].default) == (1e-8, 0.9)
    opts = nqn_module._parse_options(None, {})
    assert (opts["eps_abs"], opts["eps_rel"], opts["eps_skip"]) == (1e-16, 1e-6, 1e-8)


@pytest.mark.parametrize("c1", [1e-8, 2.0**-4])
@pytest.mark.parametrize("shift, alphas", [(0, [1.0, 0.5, 0.75]), (1, [1.0])])
def test_line_search_armijo_equality_is_failure(c1, shift, alphas):
    """f(x(α)) = f(x) + c₁α∇fᵀd̄ fails (3.21), one ulp below passes (notes §3.5 [CODE], §5.5)."""
    drop = np.nextafter(c1, np.inf) if shift else c1
    trials = []

    def fun(x):  # max(−t, t − 1 − drop): at t = 1 the value is −drop, the Armijo bound at α = 1
        trials.append(x[0])
        left, right = -x[0], (x[0] - 1.0) - drop
        return max(left, right), np.array([-1.0 if left >= right else 1.0])

    inf = np.array([np.inf])
    f1, bound = fun(np.array([1.0]))[0], 0.0 + c1 * 1.0 * -1.0  # (3.21) at α = 1, f(x) = 0
    assert f1 < bound if shift else f1 == bound
    trials.clear()
    res = projected_wolfe(fun, np.array([0.0]), 0.0, np.array([-1.0]), np.array([1.0]), -inf,
                          inf, c1=c1)
    assert res.status == WOLFE and res.alpha == alphas[-1] and trials == alphas


def test_scipy_calling_conventions():
    x0 = np.array([-1.2, 1.0, 0.5])
    res = minimize_nqn(rosen, x0, jac=rosen_der, options={"maxiter": 0})
    assert res.status == 1 and res.nit == 0 and res.nfev == 1
    np.testing.assert_array_equal(res.x, x0)
    f = lambda x, a: float(np.sum((x - a) ** 2))  # noqa: E731
    res = minimize_nqn(f, np.zeros(2), args=3.0, jac=lambda x, a: 2 * (x - a))
    np.testing.assert_allclose(res.x, [3.0, 3.0], atol=1e-6)
    res = minimize_nqn(lambda x: np.array([rosen(x)]), x0, jac=rosen_der)
    assert res.success and isinstance(res.fun, float)
    with pytest.raises(ValueError, match="scalar"):
        minimize_nqn(lambda x: np.array([1.0, 2.0]), x0, jac=rosen_der)
    seen = []
    minimize_nqn(rosen, x0, jac=rosen_der, options={"maxiter": 2},
                 callback=lambda intermediate_result: seen.append(intermediate_result))
    assert len(seen) == 2 and seen[-1].nit == 2 and seen[-1].fun == rosen(seen[-1].x)
    seen = []
    minimize_nqn(rosen, x0, jac=rosen_der, options={"maxiter": 2}, callback=seen.append)
    assert len(seen) == 2 and isinstance(seen[0], np.ndarray)
    with pytest.raises(ValueError, match="do not fit x0"):
        minimize_nqn(rosen, x0, jac=rosen_der, bounds=Bounds([0, 0], [1, 1]))


def test_x0_is_projected_before_the_first_evaluation():
    seen = []

    def f(x):
        seen.append(x.copy())
        return float(x @ x), 2 * x
    bounds = [(1, 2), (-3, -2)]
    for options in (None, {"maxiter": 0}):
        seen.clear()
        res = minimize_nqn(f, [5.0, -5.0], jac=True, bounds=bounds, options=options)
        for x in seen + [res.x]:
            assert 1 <= x[0] <= 2 and -3 <= x[1] <= -2
    np.testing.assert_allclose(res.x, [2.0, -3.0])


def test_a_failed_step_restarts_from_an_empty_memory():
    """Without the memory reset after a failed line search, retries reuse the direction
    that failed: on L1 (f* = 5 on the thesis' box) the run stalls above the minimum."""
    from sparsekit.optimize._test_problems import BoundedProblem
    P = BoundedProblem("L1", 20)
    x0 = P.starting_points(1, random_state=0)[0]
    res = minimize_nqn(P.fun, x0, jac=True, bounds=P.bounds,
                       options={"maxfun": 3000, "ftol": 0.0, "stall_tol": 0.0, "gtol": 0.0})
    assert res.fun <= 5.0 + 1e-9


@pytest.mark.parametrize("options", [{"maxcor": 2.5}, {"maxfun": True}, {"gtol": -1.0},
                                     {"ftol": np.nan}, {"maxiter": np.inf}, {"maxiter": "9"}])
def test_integer_and_tolerance_options_are_checked(options):
    with pytest.raises(ValueError):
        minimize_nqn(rosen, np.zeros(3), jac=rosen_der, options=options)
    assert minimize_nqn(rosen, np.zeros(3), jac=rosen_der, options={"maxiter": 1e2}).nit <= 100


def test_finite_differences_stay_inside_the_bounds():
    """Without jac, every point evaluated lies in the box: a fixed variable (lo == hi) has
    derivative 0, a box narrower than the step is stepped across on its wider side (the
    difference step once left the box, and sqrt of a negative gave NaN at the start)."""
    seen = []

    def f(x):
        seen.append(x.copy())
        return float(np.sqrt(x[0]) + np.sqrt(x[2] - 1.0) + (x[1] - 3.0) ** 2)

    bounds = [(0.0, 0.0), (1.0, 5.0), (1.0, 1.0 + 1e-12)]
    res = minimize_nqn(f, [0.0, 2.0, 1.0], bounds=bounds)
    assert res.success
    np.testing.assert_allclose(res.x[:2], [0.0, 3.0], atol=1e-6)
    lo, hi = np.array(bounds).T
    assert all(np.all(lo <= x) and np.all(x <= hi) for x in seen)


def test_a_coordinate_without_a_bound_on_its_side_is_not_capped():
    """U_max was the largest *finite* breakpoint: a coordinate moving toward an infinite
    bound stopped there (f = 17 for 4.5, reported as success), and a coordinate that
    reached its bound one ulp short gave the next step a 1e-17 cap (22 of 200 starts)."""
    c = np.array([5.0, 3.0])

    def f(x):
        return 0.5 * ((x - c) ** 2).sum(), x - c
    res = minimize_nqn(f, [0.0, 0.0], jac=True, bounds=[(None, None), (None, 1e-9)])
    assert res.success
    np.testing.assert_allclose(res.x, [5.0, 1e-9], rtol=1e-12)
    rng = np.random.default_rng(1)
    for x0 in rng.uniform(-3, 1, size=(200, 2)):
        res = minimize_nqn(f, x0, jac=True, bounds=[(None, None), (None, 1.0)])
        assert res.fun == pytest.approx(2.0, abs=1e-9), x0


def test_maxfun_counts_the_calls_of_finite_differences():
    c = np.logspace(0, 4, 50)
    res = minimize_nqn(lambda x: float(c @ x**2), np.full(50, 1e-3), options={"maxfun": 60})
    assert res.nfev <= 60 + 51                         # one point's differences over (510)


@pytest.mark.parametrize("options, match", [({"eps": 0.0}, "eps must be > 0"),
                                            ({"eps": -1e-8}, "eps must be > 0"),
                                            ({"step0": "prev"}, "step0"),
                                            ({"eps_rel": -1.0}, "eps_rel"),
                                            ({"eps_abs": np.nan}, "eps_abs"),
                                            ({"eps_skip": -1.0}, "eps_skip")])
def test_options_are_validated(options, match):
    with pytest.raises(ValueError, match=match):
        minimize_nqn(rosen, np.zeros(3), options=options)


# --- SciPy's L-BFGS-B tests' intent, as a drop-in ---------------------------------------------
@pytest.mark.parametrize("start", [1000.0, 10.0, 3.0])
def test_a_far_start_is_no_success_far_from_a_stationary_point(start):
    """Rosenbrock in 7-D from ``start * ones``: the run may only report success at a point
    where f has stopped decreasing near a minimizer (the stall test once stopped at
    f = 1.6e5, max|g| = 7e4 from 1000 * ones, with success=True)."""
    r = minimize_nqn(rosen, np.full(7, start), jac=rosen_der)
    assert r.success and r.status in (0, 7)
    # the global minimum (f = 0 at ones) or the local one near (-1, 1, ..., 1), f ~ 3.98
    assert r.fun < 1e-6 or abs(r.fun - 3.9836) < 1e-3
    # within 1e-6 of the minimum, |g| <= sqrt(2 λmax (f - f*)) ~ 0.06 (the Hessian's largest
    # eigenvalue there is ~1,700): from 10 * ones one run stops at f = 8.7e-8, |g| = 0.011
    assert np.max(np.abs(rosen_der(r.x))) < 0.06


@pytest.mark.parametrize("c", [1e-8, 1.0, 1e8, 1e20, 1e50])
@pytest.mark.parametrize("x0", [[0.0], [0.0, 0.0, 0.0], [3.0, -2.0]])
def test_steps_do_not_depend_on_the_scale_of_f(c, x0):
    """c (x - 1)² converges in a few evaluations at any scale c, as L-BFGS-B does (3 at
    c = 1e50, where NQN's first trial once landed 2e42 away)."""
    def f(x):
        return c * float(np.sum((x - 1) ** 2)), 2 * c * (x - 1)

    r = minimize_nqn(f, x0, jac=True, options={"gtol": 1e-5 * c})
    assert r.success and r.nfev <= 6
    np.testing.assert_allclose(r.x, 1.0, rtol=0, atol=1e-6)


@pytest.mark.parametrize("jac", ["together", "callable", "differences"])
def test_an_objective_that_edits_its_argument_does_not_move_the_iterate(jac):
    def edits(x):
        value = rosen(x)
        x[:] = 1e3         # a careless objective: SciPy hands it copies
        return value

    def edits_jac(x):
        g = rosen_der(x)
        x[:] = -1e3
        return g

    x0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
    clean = {"together": lambda x: (rosen(x), rosen_der(x)), "callable": rosen,
             "differences": rosen}[jac]
    def edits_both(x):
        value, g = rosen(x), rosen_der(x)
        x[:] = 7.0
        return value, g

    dirty = {"together": edits_both, "callable": edits, "differences": edits}[jac]
    how = {"together": True, "callable": rosen_der, "differences": None}[jac]
    a = minimize_nqn(clean, x0, jac=how)
    b = minimize_nqn(dirty, x0, jac=edits_jac if jac == "callable" else how)
    np.testing.assert_array_equal(a.x, b.x)
    assert (a.nfev, a.nit) == (b.nfev, b.nit)


def test_a_keyword_only_callback_gets_the_intermediate_result():
    seen = []

    def callback(*, intermediate_result):
        seen.append(intermediate_result)
        if intermediate_result.nit == 3:
            raise StopIteration

    r = minimize_nqn(rosen, np.zeros(4), jac=rosen_der, callback=callback)
    assert [s.nit for s in seen] == [1, 2, 3] and r.status == 99 and r.nit == 3
    np.testing.assert_array_equal(seen[-1].x, r.x)
    assert seen[-1].fun == r.fun


@pytest.mark.parametrize("maxiter, nit", [(100.1, 101), (2.5, 3), (3, 3)])
def test_limits_may_be_real_numbers_as_in_scipy(maxiter, nit):
    """SciPy compares its counts with the limits: maxiter=100.1 allows 101 iterations."""
    r = minimize_nqn(rosen, np.zeros(6), jac=rosen_der,
                     options={"maxiter": maxiter, "gtol": 0, "ftol": 0})
    assert r.nit == nit and r.status == 1
    r = minimize_nqn(rosen, np.zeros(6), jac=rosen_der, options={"maxfun": 10.5})
    assert r.status == 2 and r.nfev <= 12


# --- NQN details the other files leave open: the restart sequence (gradient, then gradient

def _v_kink(x):
    """3|x₀| + ½(x₁ − 1)²: from x₀ = 1e-20 the direction −∇f/θ crosses the kink and gives
    no decrease at the resolution of x; the gradient sample {(3, 2), (−3, ~2)} does."""
    return 3 * abs(x[0]) + 0.5 * (x[1] - 1) ** 2, np.array([3 * np.sign(x[0]), x[1] - 1])


def test_second_retry_uses_the_gradient_sampling_direction():
    """Two failed line searches along −∇f (the step, then the restart along the projected
    gradient) must be followed by a third try along the ε-minimum-norm subgradient of the
    sample and the failed trials' gradients (flag 4 only after three failures)."""
    r = minimize_nqn(_v_kink, [1e-20, 3.0], jac=True, options={"maxiter": 2})
    assert r.status == 1 and r.nit == 2 and r.nrestart == 2
    assert r.fun < 0.5 * _v_kink(np.array([1e-20, 3.0]))[0]


def test_trial_point_at_the_breakpoint_lands_on_the_bound():
    """α = γᵢ = (uᵢ − xᵢ)/dᵢ puts xᵢ on its bound exactly although x + γᵢdᵢ rounds one ulp
    short (both sides); the rule is α ≥ γᵢ, not α > γᵢ."""
    from sparsekit._cython import _nqn_kernels as K

    x, d, hi = 0.726093788947765, 0.843732662303268, 4.164863981111028
    gam = (hi - x) / d
    assert x + gam * d < hi  # the rounding the kernel must not reproduce
    out = np.empty(1)
    K.trial_point(np.array([x]), np.array([d]), gam, np.array([-np.inf]), np.array([hi]), out)
    assert out[0] == hi
    # mirrored: a lower bound reached from above
    gam = (-hi - (-x)) / (-d)
    assert -x + gam * -d > -hi
    K.trial_point(np.array([-x]), np.array([-d]), gam, np.array([-hi]), np.array([np.inf]), out)
    assert out[0] == -hi


# --- test problems: the formulas of the docstrings, and x* as the minimizer --------------

def _tridiag_ref(x, left, right, term):
    xe = np.concatenate(([left], x, [right]))
    return max(abs(term(i, xe[i]) - xe[i - 1] - xe[i + 1]) for i in range(1, x.size + 1))


def test_problem_values_match_the_docstring_formulas():
    from sparsekit.optimize import _test_problems as tp

    rng = np.random.default_rng(5)
    n = 8
    h = 1.0 / (n + 1)
    for x in rng.uniform(-1.5, 1.5, size=(3, n)):
        assert tp.test29_6(x)[0] == pytest.approx(
            _tridiag_ref(x, 0.0, 0.0, lambda i, v: (3 - 2 * v) * v + 1), rel=1e-12)
        assert tp.test29_22(x)[0] == pytest.approx(
            _tridiag_ref(x, 0.0, 0.0, lambda i, v: 2 * v + h * h * (v + i * h + 1) ** 3 / 2),
            rel=1e-12)
        assert tp.test29_24(x)[0] == pytest.approx(
            _tridiag_ref(x, 0.0, 1.0, lambda i, v: 2 * v + 10 * h * h * np.sinh(10 * v)),
            rel=1e-12)
        H = np.array([[1.0 / (i + j - 1) for j in range(1, n + 1)] for i in range(1, n + 1)])
        assert tp.maxhilb(x)[0] == pytest.approx(np.max(np.abs(H @ x)), rel=1e-12)
        assert tp.l1hilb(x)[0] == pytest.approx(np.sum(np.abs(H @ x)), rel=1e-12)
        nest1 = (x[0] - 1) ** 2 / 4 + sum(abs(x[i + 1] - 2 * x[i] ** 2 + 1) for i in range(n - 1))
        assert tp.nesterov_1(x)[0] == pytest.approx(nest1, rel=1e-12)
        nest2 = abs(x[0] - 1) / 4 + sum(abs(x[i + 1] - 2 * abs(x[i]) + 1) for i in range(n - 1))
        assert tp.nesterov_2(x)[0] == pytest.approx(nest2, rel=1e-12)
        ros1 = sum(8 * abs(x[i + 1] - x[i] ** 2) + (1 - x[i]) ** 2 for i in range(n - 1))
        assert tp.modified_rosenbrock_1(x)[0] == pytest.approx(ros1, rel=1e-12)


@pytest.mark.parametrize("name", [p for p in PROBLEMS
                                  if p != "Chained_Mifflin_2"])  # x* = 0 is a convention
def test_x_uncon_is_a_local_minimizer(name):
    """The bound recipe's x* is the unconstrained minimizer: no coordinate step or small
    random step from it decreases f."""
    n = 10
    P = BoundedProblem(name, n)
    xs = P.x_uncon
    f0 = P.fun(xs)[0]
    rng = np.random.default_rng(0)
    steps = [s * e for e in np.eye(n) for s in (1e-4, -1e-4)]
    steps += list(1e-4 * rng.normal(size=(40, n)))
    worst = min(P.fun(xs + s)[0] - f0 for s in steps)
    assert worst >= -1e-10 * max(1.0, abs(f0))


# --- PanelGram: the lagged weights across two updates, and the rtol reference -----------

def _panel_setting(seed=0, n=1500, d=120):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    R = sp.random(n, d, density=0.4, random_state=rng, format="csr", dtype=np.float32)
    return rng, R, rng.uniform(0.01, 0.25, n)


def _gram_of(R, cols, D):
    A = R.toarray()[:, cols].astype(np.float64)
    return A.T @ (D[:, None] * A)


def test_panel_gram_second_update_starts_from_the_refreshed_weights(monkeypatch):
    """After an update the kept weights are the lagged ones (far rows refreshed); a second
    call with the same weights must not apply the far rows' change again."""
    from sparsekit._cython import _gram_kernels as GK
    from sparsekit.losses._panel_gram import PanelGram

    rng, R, D0 = _panel_setting()
    gram = PanelGram(R, 0.05)
    cols = np.arange(0, 100, dtype=np.int64)
    gram(cols, D0, False)
    far = rng.choice(R.shape[0], 20, replace=False)
    D1 = D0.copy()
    D1[far] *= 3.0
    calls = []
    syrk = GK.gram_csr_syrk
    monkeypatch.setattr(GK, "gram_csr_syrk", lambda *a, **kw: calls.append(kw["accumulate"])
                        or syrk(*a, **kw))
    exact = _gram_of(R, cols, D1)
    for _ in range(2):
        np.testing.assert_allclose(gram(cols, D1, False), exact, rtol=0,
                                   atol=1e-6 * D1.sum())
    assert calls and all(calls), "the update route was not taken"


def test_panel_gram_rtol_is_relative_to_the_new_weight():
    """|D̃ᵢ − Dᵢ| ≤ rtol·Dᵢ with Dᵢ the weight asked for: a weight that shrank by 4.9% with
    rtol = 5% is beyond rtol of the new value (0.049 > 0.05 · 0.951) and is refreshed."""
    from sparsekit.losses._panel_gram import PanelGram

    rng, R, D0 = _panel_setting(1)
    gram = PanelGram(R, 0.05)
    cols = np.arange(0, 100, dtype=np.int64)
    gram(cols, D0, False)
    D1 = D0.copy()
    D1[:40] *= 1 - 0.049
    np.testing.assert_allclose(gram(cols, D1, False), _gram_of(R, cols, D1), rtol=0,
                               atol=1e-7 * D1.sum())


# --- termination tests: the max(|f|, 1) floors -------------------------------------------

def test_no_decrease_at_f_zero_converges_with_flag_7():
    """f ≡ 0 with a tiny gradient: the model's decrease 1e-24 is below ftol·max(|f|, 1)."""
    r = minimize_nqn(lambda x: (0.0, np.full_like(x, 1e-12)), [1.0], jac=True,
                     options={"gtol": 0})
    assert r.status == 7 and r.success and r.nit == 0


# --- variant 4, θ = "scaled", first trial step -----------------------------------------------

@pytest.mark.parametrize("variant, binding", [(1, 0), (2, 1), (3, 0), (4, 1)])
def test_variants_2_and_4_add_the_binding_set_of_the_eps_min_norm_subgradient(variant,
                                                                            binding):
    """Example (3.6) at x = (−0.5, −2): ∇f does not bind x₁ at its upper bound, g̃ of the
    gradient sample does (Variants 2 and 4 start from 𝓑(g̃) ∪ 𝓑(∇f))."""
    from collections import deque

    import sparsekit.optimize._nqn as nqn_module
    from sparsekit.optimize._nqn_memory import FreeSetLBFGS

    x, lo, hi = np.array([-0.5, -2.0]), np.array([-np.inf, -np.inf]), np.array([-0.5, np.inf])
    g = np.array([0.5 - 0.2, -1.05 - 0.02])
    sample = deque([np.array([0.45, -1.055]), np.array([-1.55, 0.945])])
    active, added = np.zeros(2, dtype=np.uint8), np.empty(2, dtype=np.intc)
    p, d = np.empty(2), np.empty(2)
    opts = dict(nqn_module._DEFAULTS, variant=variant)
    flag = nqn_module._direction(x, g, g, lo, hi, FreeSetLBFGS(2, 3), sample, active, added,
                                 p, d, opts)
    assert flag is None
    assert active[0] == binding and (d[0] == 0.0) == bool(binding)


@pytest.mark.parametrize("variant", [3, 4])
def test_variant_4_runs_the_correction_loop(variant):
    """Variants 3 and 4 end Algorithm 3 with T(x, p) = p (Lemma 3.2.1), also with memory."""
    import sparsekit.optimize._nqn as nqn_module
    from sparsekit._cython import _nqn_kernels as K
    from sparsekit.optimize._nqn_memory import FreeSetLBFGS

    n_bad = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = 12
        lo, hi = -np.ones(n), np.ones(n)
        x = rng.choice([-1.0, 1.0, 0.0], size=n)
        g = rng.normal(size=n)
        mem = FreeSetLBFGS(n, 4)
        for _ in range(4):
            s = rng.normal(size=n)
            y = rng.normal(size=n) + 2 * s
            if s @ y > 1e-3 * np.linalg.norm(s) * np.linalg.norm(y):
                mem.push(s, y)
        active, added = np.zeros(n, dtype=np.uint8), np.empty(n, dtype=np.intc)
        p, d = np.empty(n), np.empty(n)
        opts = dict(nqn_module._DEFAULTS, variant=variant)
        flag = nqn_module._direction(x, g, g, lo, hi, mem, None, active, added, p, d, opts)
        K.project_direction(x, p, lo, hi, d)
        n_bad += not np.array_equal(d, p)
        assert flag is None or np.all(p == 0)
    assert n_bad == 0


def test_scaled_theta_is_yty_over_sty_of_the_newest_pair():
    from sparsekit.optimize._nqn import _theta
    from sparsekit.optimize._nqn_memory import FreeSetLBFGS

    mem = FreeSetLBFGS(3, 2)
    mem.push(np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0]))
    mem.push(np.array([0.0, 2.0, 0.0]), np.array([0.0, 1.0, 3.0]))  # yᵀy = 10, sᵀy = 2
    assert _theta(np.ones(3), "scaled", mem) == pytest.approx(5.0, rel=1e-15)


def test_first_trial_step_rule(monkeypatch):
    """step0="previous": the first trial is 1 after a step taken with an empty memory,
    else min(1, 2 α_prev)."""
    import sparsekit.optimize._nqn as nqn_module
    from sparsekit.optimize._nqn_linesearch import projected_wolfe
    from sparsekit.optimize._test_problems import BoundedProblem

    memories, calls = [], []

    class Recording(nqn_module.FreeSetLBFGS):
        def __init__(self, n, m):
            super().__init__(n, m)
            memories.append(self)

    def spy(*args):
        res = projected_wolfe(*args)
        calls.append((args[-1], len(memories[0]), res))
        return res

    monkeypatch.setattr(nqn_module, "FreeSetLBFGS", Recording)
    monkeypatch.setattr(nqn_module, "projected_wolfe", spy)
    P = BoundedProblem("Chained_LQ", 10)
    minimize_nqn(P.fun, P.starting_points(1, 0)[0], jac=True, bounds=P.bounds,
                 options={"maxiter": 60, "ftol": 0})
    checked = 0
    for (_, mem_len, prev), (alpha0, _, _) in zip(calls, calls[1:]):
        if prev.x is None:  # failed search: the retry keeps alpha_prev
            continue
        expect = 1.0 if mem_len == 0 else min(1.0, 2.0 * prev.alpha)
        assert alpha0 == expect
        checked += prev.alpha < 0.5 or (mem_len == 0 and prev.alpha != 1.0)
    assert checked > 0


def test_a_zero_slope_is_no_descent_direction():
    """d ≠ 0 but ∇fᵀd = 0 in floating point (1e-170 · −1e-170 underflows): _direction
    returns flag 3, and the run ends with it (status 3, not a success) after the retries."""
    import sparsekit.optimize._nqn as nqn_module
    from sparsekit.optimize._nqn_memory import FreeSetLBFGS

    g = np.array([1e-170])
    active, added = np.zeros(1, dtype=np.uint8), np.empty(1, dtype=np.intc)
    p, d = np.empty(1), np.empty(1)
    flag = nqn_module._direction(np.zeros(1), g, g, np.array([-np.inf]), np.array([np.inf]),
                                 FreeSetLBFGS(1, 3), None, active, added, p, d,
                                 dict(nqn_module._DEFAULTS))
    assert d[0] != 0.0 and float(g @ d) == 0.0
    assert flag == 3
    r = minimize_nqn(lambda x: (float(1e-170 * x[0]), g), [1.0], jac=True,
                     options={"gtol": 0})
    assert r.status == 3 and not r.success and r.nrestart == 2


def test_min_norm_subgradient_kkt_with_nqn_sized_samples():
    """(3.8) at NQN's sample sizes (l up to M = 20+, correlated gradients): λ* on the simplex
    and (G g̃)_i ≥ ‖g̃‖² for all i. The active-set ratio test must drop the *first* weight
    to reach zero (smallest step), else λ leaves the simplex's face and the result is not
    optimal."""
    for seed in range(40):
        rng = np.random.default_rng(seed)
        l, n = rng.integers(8, 25), rng.integers(2, 12)
        G = rng.normal(size=(l, n)) + rng.normal(size=n)
        g, lam = min_norm_subgradient(G)
        assert lam.min() >= 0 and lam.sum() == pytest.approx(1.0, abs=1e-9)
        slack = G @ g - g @ g
        assert slack.min() >= -1e-6 * max(1.0, np.abs(G).max() ** 2), seed


# --- input validation, driver branches (callback, disp, maxfun), numerical failure -----------

def _half_sq(x):
    return 0.5 * float(x @ x), x.copy()


@pytest.mark.parametrize("kwargs, match", [
    ({"bounds": [(0, 1), 5]}, r"bounds\[1\] must be a \(lo, hi\) pair, got 5"),
    ({"bounds": [(0, 1), (0, 1, 2)]}, r"bounds\[1\] must be a \(lo, hi\) pair"),
    ({"bounds": [(0, 1), (np.nan, 1)]}, "bounds must not contain NaN"),
    ({"bounds": [(0, 1), (np.inf, np.inf)]}, "no feasible point"),
    ({"bounds": [(-np.inf, -np.inf), (0, 1)]}, "no feasible point"),
    ({"options": {"theta": "newton"}}, "theta must be 'thesis', 'code' or 'scaled'"),
    ({"options": {"c1": 0.9, "c2": 0.5}}, r"0 < c1 < c2 < 1"),
    ({"options": {"c2": 1.0}}, r"0 < c1 < c2 < 1"),
    ({"options": {"stall_tol": -1e-8}}, "stall_tol must be >= 0"),
    ({"options": {"stall_tol": np.nan}}, "stall_tol must be >= 0"),
])
def test_bad_bounds_and_options_are_value_errors(kwargs, match):
    """Each malformed bound / option is a ValueError naming it (not a crash or a silent use)."""
    with pytest.raises(ValueError, match=match):
        minimize_nqn(_half_sq, [0.5, 0.5], jac=True, **kwargs)


def test_empty_x0_is_an_error():
    with pytest.raises(ValueError, match="x0 must not be empty"):
        minimize_nqn(_half_sq, [], jac=True)


def test_callback_without_a_signature_gets_xk():
    """A builtin with no introspectable signature (deque.append) is called with xk (an
    ndarray), as SciPy does, not with an OptimizeResult."""
    import inspect
    from collections import deque

    seen = deque()
    try:
        inspect.signature(seen.append)
    except (TypeError, ValueError):
        pass
    else:
        pytest.skip("deque.append has a signature on this Python")
    r = minimize_nqn(_half_sq, [3.0, -1.0], jac=True, callback=seen.append,
                     options={"maxiter": 2, "gtol": 0})
    assert len(seen) == r.nit == 2
    assert all(type(xk) is np.ndarray for xk in seen)
    np.testing.assert_array_equal(seen[-1], r.x)


@pytest.mark.parametrize("maxfun, nit", [(1, 0), (2, 1)])
def test_maxfun_reached_after_an_accepted_step_is_flag_2(maxfun, nit):
    """½‖x‖² from (3, −1): the start alone (maxfun=1), or the start and one accepted unit
    step x/3 → 2x/3 (maxfun=2), use up the budget; the run stops with flag 2 at once
    instead of starting another line search."""
    from sparsekit.optimize._nqn import MESSAGES

    r = minimize_nqn(_half_sq, [3.0, -1.0], jac=True, options={"maxfun": maxfun})
    assert r.status == 2 and not r.success and r.message == MESSAGES[2]
    assert r.nfev == maxfun and r.nit == nit
    np.testing.assert_allclose(r.x, np.array([3.0, -1.0]) * (2.0 / 3.0) ** nit, rtol=1e-15)


def test_disp_prints_one_line_per_iteration(capsys):
    """disp=True: line k reports nit = k, f(x_k) to 11 digits, the evaluations so far and
    |A| of the step's direction, taken at x_{k−1}: x₁ binds where it is at its bound 0.5
    with ∂f/∂x₁ < 0 (only at x⁰ = (−1.2, 1) projected: x¹ stays on the bound, but there
    ∂f/∂x₁ > 0)."""
    import re

    from scipy.optimize import rosen, rosen_der

    seen = []
    r = minimize_nqn(rosen, [-1.2, 1.0], jac=rosen_der, bounds=[(None, None), (None, 0.5)],
                     callback=lambda intermediate_result: seen.append(intermediate_result),
                     options={"maxiter": 5, "disp": True})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == r.nit == 5
    nfevs, prev = [], [np.array([-1.2, 0.5])] + [res.x for res in seen]
    for k, (line, res) in enumerate(zip(lines, seen), start=1):
        m = re.fullmatch(r"NQN it\s+(\d+)\s+f\s+(\S+)\s+nfev\s+(\d+)\s+\|A\|\s+(\d+)", line)
        assert m, line
        assert int(m[1]) == k == res.nit
        assert m[2] == f"{res.fun:.10e}"
        nfevs.append(int(m[3]))
        binds = prev[k - 1][1] == 0.5 and rosen_der(prev[k - 1])[1] < 0
        assert int(m[4]) == binds == (k == 1)
    assert nfevs == sorted(nfevs) and nfevs[-1] == r.nfev
    assert minimize_nqn(rosen, [-1.2, 1.0], jac=rosen_der,
                        options={"maxiter": 5}).nit == 5 and capsys.readouterr().out == ""


def test_non_finite_subspace_step_is_flag_6(monkeypatch):
    """A compact system that is singular or not finite (below: a subnormal sᵀy, whose
    skip test ε‖s‖‖y‖ underflows to 0 so that the pair is stored) raises LinAlgError in
    the memory. The driver reports flag 6 without restarts; with them the memory is
    dropped and the run goes on."""
    from sparsekit.optimize._nqn import MESSAGES
    from sparsekit.optimize._nqn_memory import FreeSetLBFGS

    step = FreeSetLBFGS.step

    def failing_step(self, g, theta, out):
        if len(self) and not failing_step.done:
            failing_step.done = True
            raise np.linalg.LinAlgError("singular or non-finite compact L-BFGS system")
        return step(self, g, theta, out)

    monkeypatch.setattr(FreeSetLBFGS, "step", failing_step)
    f = lambda x: (0.25 * float(x @ x) + float(x.sum()), 0.5 * x + 1.0)  # noqa: E731
    opts = {"gtol": 1e-10, "maxiter": 50}
    failing_step.done = False
    r = minimize_nqn(f, [3.0, -1.0], jac=True, options=dict(opts, restart=False))
    assert r.status == 6 and not r.success and r.message == MESSAGES[6] and r.nit == 1
    failing_step.done = False
    r = minimize_nqn(f, [3.0, -1.0], jac=True, options=opts)
    assert r.nrestart == 1 and r.success
    np.testing.assert_allclose(r.x, [-2.0, -2.0], atol=1e-8)
    mem = FreeSetLBFGS(1, 3)
    mem.push(np.array([-5e-161]), np.array([-2.5e-161]))
    with pytest.raises(np.linalg.LinAlgError, match="singular or non-finite"):
        mem.step(np.array([2.5e-161]), 1.0, np.empty(1))


def test_min_norm_subgradient_active_set_cap():
    """max_iter caps the active-set stage: with no FISTA steps and max_iter=0 the weights
    stay uniform (g̃ = mean of the rows); one pass already lands on the exact λ* of a
    two-point problem, whose segment's minimum-norm point is known in closed form."""
    G = np.array([[1.0, 2.0], [3.0, -1.0], [-2.0, 0.5]])
    g, lam = min_norm_subgradient(G, warm_iter=0, max_iter=0)
    np.testing.assert_allclose(lam, np.full(3, 1 / 3), rtol=1e-15)
    np.testing.assert_allclose(g, G.mean(axis=0), rtol=1e-14)
    a, b = np.array([2.0, 1.0]), np.array([-1.0, 3.0])
    t = float(b @ (b - a) / ((b - a) @ (b - a)))  # λ_a of argmin ‖λa + (1 − λ)b‖
    g, lam = min_norm_subgradient(np.array([a, b]), warm_iter=0, max_iter=1)
    np.testing.assert_allclose(lam, [t, 1 - t], rtol=1e-12)
    np.testing.assert_allclose(g, t * a + (1 - t) * b, atol=1e-14)


def test_newton_zero_damps_an_overshooting_step():
    """The x* helper of TEST29_*: on r(x) = atan(x) − ½ from x = 10 the full Newton step
    lands at −88 with a larger residual; the damped iteration still finds tan(½)."""
    from sparsekit.optimize._test_problems import _newton_zero

    x = _newton_zero(lambda x: (np.arctan(x) - 0.5, 1.0 / (1.0 + x * x)), np.array([10.0]))
    assert x[0] == pytest.approx(np.tan(0.5), abs=1e-12)


def test_scipy_minimize_runs_it_as_a_callable_method():
    """scipy.optimize.minimize(method=minimize_nqn) passes hess, hessp and constraints and
    the options one by one: the same run as the direct call, tol setting ftol and gtol as
    for L-BFGS-B (unless given), fun returning (f, g) with jac=True, a Hessian ignored with
    a warning, a constraint refused, an option given twice refused."""
    x0, box = np.array([-1.2, 1.0, 0.5]), [(0, 0.5), (None, None), (None, 2)]
    direct = minimize_nqn(rosen, x0, jac=rosen_der, bounds=box, options={"maxiter": 9})
    via = minimize(rosen, x0, jac=rosen_der, bounds=box, method=minimize_nqn,
                   options={"maxiter": 9})
    assert via.nit == direct.nit == 9
    np.testing.assert_array_equal(via.x, direct.x)
    keyword = minimize_nqn(rosen, x0, jac=rosen_der, bounds=box, maxiter=9)
    np.testing.assert_array_equal(keyword.x, direct.x)
    tight = minimize(lambda x: (rosen(x), rosen_der(x)), x0, jac=True, method=minimize_nqn,
                     tol=1e-12)
    loose = minimize(rosen, x0, jac=rosen_der, method=minimize_nqn, tol=1e-2)
    same = minimize_nqn(rosen, x0, jac=rosen_der, options={"ftol": 1e-2, "gtol": 1e-2})
    assert tight.success and np.abs(tight.x - 1).max() < 1e-5
    assert loose.nit == same.nit < tight.nit
    kept = minimize(rosen, x0, jac=rosen_der, method=minimize_nqn, tol=1e-2,
                    options={"gtol": 1e-12, "ftol": 1e-15})
    assert kept.nit > loose.nit                      # the options given win over tol
    with pytest.warns(RuntimeWarning, match=r"Hessian information \(hessp\)"):
        minimize(rosen, x0, jac=rosen_der, hessp=lambda x, p: p, method=minimize_nqn)
    with pytest.raises(ValueError, match="bounds only, not constraints"):
        minimize(rosen, x0, jac=rosen_der, method=minimize_nqn,
                 constraints={"type": "ineq", "fun": lambda x: x[0]})
    with pytest.raises(TypeError, match="'maxiter' given twice"):
        minimize_nqn(rosen, x0, jac=rosen_der, options={"maxiter": 3}, maxiter=4)
    with pytest.warns(OptimizeWarning, match="Unknown solver options: xtol"):
        minimize(rosen, x0, jac=rosen_der, method=minimize_nqn, options={"xtol": 1e-3})
