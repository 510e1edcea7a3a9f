"""NQN details the other files leave open: the restart sequence (gradient, then gradient
sampling), the flag-7 and zero-slope rules, the first trial step, direction variants 2-4,
theta scaling, trial points at a breakpoint, the epsilon-min-norm subgradient with larger
samples, the test problems against their docstring formulas, PanelGram's weight updates
(each found by a bug the suite let through)."""
import numpy as np
import pytest

from sparsekit.optimize import minimize_nqn
from sparsekit.optimize._eps_subgradient import min_norm_subgradient
from sparsekit.optimize._test_problems import PROBLEMS, BoundedProblem


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
    from sparsekit._cython import _oba_kernels as K
    from sparsekit.losses._panel_gram import PanelGram

    rng, R, D0 = _panel_setting()
    gram = PanelGram(R, 0.05)
    cols = np.arange(0, 100, dtype=np.int64)
    gram(cols, D0, False)
    far = rng.choice(R.shape[0], 20, replace=False)
    D1 = D0.copy()
    D1[far] *= 3.0
    calls = []
    syrk = K.gram_csr_syrk
    monkeypatch.setattr(K, "gram_csr_syrk", lambda *a, **kw: calls.append(kw["accumulate"])
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
