"""NQN details the other files leave open: the restart sequence (gradient, then gradient
sampling), the flag-7 and zero-slope rules, the first trial step, direction variants 2-4,
theta scaling, trial points at a breakpoint, the epsilon-min-norm subgradient with larger
samples, the test problems against their docstring formulas, PanelGram's weight updates
(each found by a bug the suite let through)."""
import numpy as np
import pytest

from sparsekit.optimize import minimize_nqn
from sparsekit.optimize._eps_subgradient import min_norm_subgradient
from sparsekit.optimize.test_problems import PROBLEMS, BoundedProblem


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
    from sparsekit.optimize import test_problems as tp

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
    from sparsekit.optimize._panel_gram import PanelGram

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
    from sparsekit.optimize._panel_gram import PanelGram

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
    from sparsekit.optimize.test_problems import BoundedProblem

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
