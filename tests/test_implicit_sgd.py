"""Implicit SGD: Lambert-W of e^t and the proximal step (Fagan & Iyengar 2018, section 3)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import lambertw

import _softmax_reference as ref
from sparsekit._cython._lambertw import lambertw_exp
from sparsekit._cython._implicit_sgd import implicit_step


def test_lambertw_exp_matches_scipy_where_exp_is_finite():
    t = np.linspace(-700, 700, 2001)
    expected = lambertw(np.exp(t)).real
    np.testing.assert_allclose(lambertw_exp(t), expected, rtol=1e-14, atol=1e-300)


def test_lambertw_exp_at_the_infinities():
    out = lambertw_exp(np.array([np.inf, -np.inf, np.nan]))
    assert out[0] == np.inf and out[1] == 0.0 and np.isnan(out[2])   # inf once gave NaN


@given(st.floats(min_value=-1e300, max_value=1e300, allow_nan=False))
def test_lambertw_exp_solves_w_plus_log_w(t):
    w = float(lambertw_exp(t))
    assert np.isfinite(w) and w >= 0.0
    if w > 1e-300:
        assert abs(w + np.log(w) - t) <= 1e-14 * max(1.0, abs(t))
    else:
        assert t < -690


@pytest.mark.parametrize("factor", [0.4, 0.5, 1.5, 1.9, 2.5])
def test_lambertw_exp_warm_start_is_accurate_in_relative_terms(factor):
    """The Implicit SGD root search restarts W from its previous value; where W(e^t) ~ e^t is
    tiny an absolute stopping test had stopped after one Newton step (80% off at t = -39)."""
    t = np.array([-45.0, -39.5, -37.0, -35.0, -30.0, -20.0, -1.0, 0.0, 5.0, 50.0, 700.0])
    cold = lambertw_exp(t)
    np.testing.assert_allclose(cold, lambertw(np.exp(t)).real, rtol=1e-14)
    np.testing.assert_allclose(lambertw_exp(t, cold * factor), cold, rtol=1e-13)
    big = np.array([1e4, 1e8, 1e300])
    np.testing.assert_allclose(lambertw_exp(big, lambertw_exp(big) * factor),
                               lambertw_exp(big), rtol=1e-14)


def test_lambertw_exp_monotone_and_shape():
    t = np.sort(np.random.default_rng(0).normal(scale=200, size=(50, 4)).ravel())
    w = lambertw_exp(t.reshape(50, 4))
    assert w.shape == (50, 4)
    assert np.all(np.diff(w.ravel()) >= 0)


def _check_step(z, rho, u0, eta, q, c, alpha, beta, rng, tol=1e-10):
    m = len(z) - 1
    D = 3
    x = rng.normal(size=D)
    x *= np.sqrt(q) / np.linalg.norm(x)
    # old rows whose scores are z: w~_j = z_j x / q + (part orthogonal to x)
    wt = np.outer(z, x) / q
    perp = rng.normal(size=(m + 1, D))
    perp -= np.outer(perp @ x, x) / q
    wt += perp
    u_ref, W_ref, res = ref.solve_prox(x, wt, u0, eta, eta, alpha, beta, c)
    assert np.linalg.norm(res.jac) < 1e-9 * max(1.0, abs(u0) + np.abs(z).max())
    u, coef = implicit_step(np.ascontiguousarray(z, dtype=float), rho, u0, eta, q, c)
    W = wt / rho[:, None] + np.outer(coef, x)
    scale = max(1.0, abs(u_ref))
    assert abs(u - u_ref) <= tol * scale
    np.testing.assert_allclose(W, W_ref, rtol=0, atol=tol * max(1.0, np.abs(W_ref).max()))
    return u, coef


@pytest.mark.parametrize("gap", [-1e3, -30.0, -1.0, 0.0, 1.0, 30.0, 1e3])
@pytest.mark.parametrize("u0", [0.0, 0.5, 7.0])
def test_implicit_one_class_equals_prox_minimiser(gap, u0):
    """n = m = 1, no ridge: s~ - u~ = gap, including +-1e3 (acceptance 1)."""
    rng = np.random.default_rng(1)
    z = np.array([0.3, 0.3 + u0 + gap])
    _check_step(z, np.ones(2), u0, 0.5, 1.0, 9.0, 0.0, np.ones(2), rng)


@pytest.mark.parametrize("gap", [-1e3, -2.0, 0.0, 3.0, 1e3])
@pytest.mark.parametrize("m", [1, 3])
def test_implicit_with_ridge_and_classes_equals_prox_minimiser(gap, m):
    rng = np.random.default_rng(m)
    eta, alpha, q = 0.3, 0.7, 2.5
    beta = rng.uniform(1.0, 4.0, size=m + 1)
    rho = 1 + eta * alpha * beta
    z = rng.normal(size=m + 1)
    z[1:] += gap
    _check_step(z, rho, 1.3, eta, q, 20.0 / m, alpha, beta, rng)


@pytest.mark.parametrize("u0", [0.0, 0.2, 4.0, 60.0])
@pytest.mark.parametrize("gap", [-1e3, -5.0, 0.0, 5.0, 1e3])
def test_implicit_multi_from_either_side_of_the_root(u0, gap):
    """m = 5: the root search starts from u~ whether the new u lies above it (bracket up to
    the bound V) or below it (bracket [0, u~])."""
    rng = np.random.default_rng(int(u0 * 10) + 7)
    eta, q = 0.8, 1.7
    z = rng.normal(size=6)
    z[1:] += gap
    u, _ = _check_step(z, np.ones(6), u0, eta, q, 1e4 / 5, 0.0, np.ones(6), rng)
    assert u >= 0.0     # u* > 0 (eq. (17)), but below 1e-300 for gap -1e3 from u~ = 0


def test_scalar_u_and_v_equations_agree_for_one_class():
    rng = np.random.default_rng(3)
    for _ in range(200):
        z = rng.normal(scale=50, size=2)
        rho = 1 + rng.uniform(0, 2, size=2)
        args = (abs(rng.normal(scale=5)), 10 ** rng.uniform(-3, 3), rng.uniform(0.1, 3), 99.0)
        u1, c1 = implicit_step(z, rho, *args, scalar_u=True)
        u2, c2 = implicit_step(z, rho, *args, scalar_u=False)
        assert abs(u1 - u2) <= 1e-9 * max(1, abs(u1))
        np.testing.assert_allclose(c1, c2, rtol=1e-9, atol=1e-12)


def test_implicit_step_is_linear_in_the_gap_prop2():
    """Prop. 2: the W step grows like s~ - u~, never exponentially."""
    sizes = []
    for gap in [10.0, 100.0, 1000.0, 10000.0]:
        _, coef = implicit_step(np.array([0.0, gap]), np.ones(2), 0.0, 1.0, 1.0, 1.0)
        sizes.append(abs(coef[0]))
    ratios = np.array(sizes[1:]) / np.array(sizes[:-1])
    assert np.all(ratios < 11) and np.all(ratios > 5)


def test_empty_row_only_moves_u():
    u, coef = implicit_step(np.array([0.0, 0.0]), np.ones(2), 2.0, 0.5, 0.0, 4.0)
    # q = 0: the step minimises 2 eta (u + e^{-u}(1 + c)) + (u - u0)^2 in u alone
    g = 0.5 * (1 - np.exp(-u) * 5) + (u - 2.0)
    assert abs(g) < 1e-12


@pytest.mark.parametrize("eta", [0.5, 1e4, 1e12])
def test_empty_row_with_classes_only_moves_u(eta):
    """m = 5, q = 0: u* solves eta (1 - A e^{-u}) + u - u~ = 0, A = 1 + c sum_k e^{s_k}; for
    a large eta it lies at the root search's upper bound log(A)."""
    z = np.array([0.0, 1.0, -2.0, 0.5, 3.0, -1.0])
    c = 7.0
    u, coef = implicit_step(z, np.ones(6), 0.3, eta, 0.0, c)
    A = 1.0 + c * np.exp(z[1:] - z[0]).sum()
    assert abs(1.0 - A * np.exp(-u) + (u - 0.3) / eta) < 1e-12
    assert u <= np.log(A) + 1e-12
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("m,alpha,batch_size", [(1, 0.0, 1), (2, 0.2, 1), (1, 0.0, 3),
                                                (3, 0.0, 5)])
def test_implicit_epoch_matches_reference(m, alpha, weighted, batch_size):
    """Weights multiply the data term of the proximal step (eta_i = eta w_i / b); a batch's
    steps all start from the weights at its start (classes repeat within a batch)."""
    rng = np.random.default_rng(5)
    N, D, K = 12, 4, 6
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, size=N)
    W = rng.normal(scale=0.5, size=(K, D))
    u = rng.uniform(0, 2, size=N)
    order = rng.permutation(N)
    sw = rng.uniform(0.2, 3.0, N) if weighted else None
    eta = 0.8 * batch_size
    Wr, ur = ref.reference_epoch("implicit", X, y, W, u, order, 77, m, batch_size, eta, alpha,
                                 1.0, sw)
    for sparse in (False, True):
        Wk, uk, status, _ = ref.kernel_epoch("implicit", X, y, W, u, order, 77, m, batch_size,
                                             eta, alpha, 1.0, sw, sparse=sparse)
        assert status == 0
        np.testing.assert_allclose(Wk, Wr, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(uk, ur, rtol=1e-8, atol=1e-9)


def test_lambertw_exp_ignores_a_far_warm_start():
    """A start w0 with |w0 + log w0 - t| >= 1 is not used (Newton from 1e300 needs ~1000
    halvings, from 1e-300 over a hundred steps: 80 iterations would stop far off); the
    result equals the cold one. Non-positive starts are ignored too."""
    t = np.array([-39.0, -5.0, 0.0, 0.5, 3.0, 40.0, 1e5])
    cold = lambertw_exp(t)
    for w0 in (1e300, 1e-300, 1e-30, 1e6, 0.0, -1.0, np.inf, np.nan):
        np.testing.assert_allclose(lambertw_exp(t, w0), cold, rtol=1e-14)
    w0 = np.where(np.arange(t.size) % 2 == 0, 1e200, cold * 1.5).reshape(1, -1)
    np.testing.assert_allclose(lambertw_exp(np.tile(t, (3, 1)), w0),
                               np.tile(cold, (3, 1)), rtol=1e-14)
