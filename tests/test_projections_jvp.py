"""Jacobian-vector products: finite differences, the closed forms of
notes/sparsemax_report.md eq. 5 (with ||s||_1) and notes/lp_sparsemap.md Prop. 6,
symmetry, and edge cases."""
import numpy as np
import pytest
from numpy.testing import assert_allclose

import _projection_reference as ref
from sparsekit.projections import jvp, project, sparsemax

W6 = ref.W6
CASES = ref.POLYTOPE_CASES


@pytest.mark.parametrize("polytope, params", CASES)
def test_jvp_matches_finite_differences(polytope, params):
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 6)) * 1.5 + 0.3
    V = rng.normal(size=Z.shape)
    got = jvp(Z, V, polytope, **params)
    fd = ref.finite_difference_jvp(lambda x: project(x, polytope, **params), Z, V, eps=1e-7)
    # random rows lie farther than 1e-7 from every kink with overwhelming probability
    assert_allclose(got, fd, atol=1e-6)


@pytest.mark.parametrize("polytope, params", CASES)
def test_jvp_is_symmetric(polytope, params):
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(100, 6)) + 0.2
    U, V = rng.normal(size=Z.shape), rng.normal(size=Z.shape)
    assert_allclose((U * jvp(Z, V, polytope, **params)).sum(1),
                    (V * jvp(Z, U, polytope, **params)).sum(1), atol=1e-12)


def test_sparsemax_jvp_closed_form_and_full_jacobian():  # eq. 5, 4.1 item 7
    rng = np.random.default_rng(2)
    Z = rng.uniform(-3, 3, size=(100, 10))
    V = rng.normal(size=Z.shape)
    s = (sparsemax(Z) > 0).astype(float)
    l1 = s * (V - ((s * V).sum(1) / s.sum(1))[:, None])
    l2 = s * (V - ((s * V).sum(1) / np.linalg.norm(s, axis=1))[:, None])
    got = jvp(Z, V)
    assert_allclose(got, l1, atol=1e-14)
    assert np.abs(got - l2).max() > 0.1          # the ||s||_2 reading is wrong (4.3)
    J = s[:, :, None] * np.eye(10)[None] - s[:, :, None] * s[:, None, :] / s.sum(1)[:, None, None]
    assert_allclose(np.einsum("oij,oi->oj", J, V), got, atol=1e-14)


def test_two_dimensional_jacobian_against_numerical():  # 4.1 item 7
    for t in np.linspace(-2, 2, 41):
        if abs(abs(t) - 1) < 1e-3:
            continue
        z = np.array([t, 0.0])
        Jn = np.stack([ref.finite_difference_jvp(sparsemax, z, e) for e in np.eye(2)], 1)
        J = np.stack([jvp(z, e) for e in np.eye(2)], 1)
        assert_allclose(J, Jn, atol=1e-8)


def test_prop6_weighted_capped_simplex_jacobian():
    rng = np.random.default_rng(3)
    z = rng.normal(size=6)
    p = project(z, "capped_simplex", budget=3.0, weights=W6)
    free = (p > 0) & (p < 1)
    assert free.sum() >= 2
    wI = np.where(free, W6, 0.0)
    J = np.diag(free.astype(float)) - np.outer(wI, wI) / (wI @ wI)
    full = np.stack([jvp(z, e, "capped_simplex", budget=3.0, weights=W6) for e in np.eye(6)], 1)
    assert_allclose(full, J, atol=1e-14)


def test_degenerate_supports_give_zero_jacobian():
    V = np.random.default_rng(4).normal(size=(3, 4))
    Z = np.array([[10.0, 0, 0, 0], [0, 0, 5, 0], [1, 2, 3, 40]])
    assert np.array_equal(jvp(Z, V), np.zeros_like(V))           # one-hot output
    assert np.array_equal(jvp([[3.0]], [[2.0]]), [[0.0]])         # K = 1
    assert np.array_equal(jvp(np.full((1, 4), 5.0), V[:1], "box"), np.zeros((1, 4)))


def test_float32_and_shapes():
    rng = np.random.default_rng(5)
    Z, V = rng.normal(size=(20, 8)), rng.normal(size=(20, 8))
    got32 = jvp(Z.astype(np.float32), V, "budget", budget=2.0)
    assert got32.dtype == np.float32
    assert_allclose(got32, jvp(Z, V, "budget", budget=2.0), atol=1e-5)
    assert jvp(Z[0], V[0]).shape == (8,)
    with pytest.raises(ValueError, match="shape"):
        jvp(Z, V[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        jvp(Z, np.full_like(V, np.nan))


@pytest.mark.parametrize("polytope, z", [
    ("at_most_one", [0.4009107049254289, 0.5591461302268427, 0.039943164847728675]),
    ("at_least_one", [0.5078379052719173, 0.26594235387345205, 0.22621974085463062])])
def test_one_sided_simplex_jvp_is_active_when_its_threshold_rounds_to_zero(polytope, z):
    # clip(z) misses a sum of 1 by one rounding, so the simplex branch runs (sum pinned to
    # 1), and its threshold rounds to 0: it still counts as active, so sum(J v) = 0
    z = np.array([z])
    assert np.clip(z, 0, 1).sum() != 1.0
    v = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(jvp(z, v, polytope), v - v.mean(), atol=1e-12)


def test_budget_jvp_keeps_the_sum_when_the_budget_is_active_by_one_ulp():
    # clip(z) sums to just above the budget (by rounding): the projection pins the sum and
    # its threshold, tiny, still counts as active (> 0), so sum(J v) = 0
    from sparsekit.projections import project
    z = np.array([[0.5000000000000002, 0.5, 0.5000000000000001, 0.49999999999999983]])
    assert np.clip(z, 0, 1).sum() > 2.0
    assert abs(project(z, "budget", budget=2.0).sum() - 2.0) <= 1e-15
    v = np.array([[1.0, 2.0, 3.0, 4.0]])
    out = jvp(z, v, "budget", budget=2.0)
    np.testing.assert_allclose(out.sum(), 0.0, atol=1e-12)
    np.testing.assert_allclose(out, v - v.mean(), atol=1e-12)


@pytest.mark.parametrize("polytope, z, params", [
    ("budget", [0.5, 0.5, 0.5, 0.5], {"budget": 2.0}),
    ("knapsack", [0.5, 0.5, 0.5, 0.5], {"budget": 2.0}),
    ("at_most_one", [0.25, 0.25, 0.5, 0.0], {}),
    ("at_least_one", [0.25, 0.25, 0.5, 0.0], {}),
])
def test_inequality_met_exactly_by_the_clip_is_inactive(polytope, z, params):
    """clip(z) meets the inequality with equality (exactly, in binary): the clip is the
    projection, its multiplier is 0, so the kernel returns tau = 0 (_projections.pxd: tau =
    0 when an inequality constraint is inactive) and the JVP is that of the box, v on the
    free set (tau != 0 is the activity test of jvp_row)."""
    from sparsekit.projections import project
    from sparsekit.projections._dispatch import project_with_tau

    z = np.array([z])
    np.testing.assert_array_equal(project(z, polytope, **params), np.clip(z, 0, 1))
    _, tau, _ = project_with_tau(z, polytope, params)
    assert tau[0] == 0.0
    v = np.array([[1.0, 2.0, 3.0, 4.0]])
    free = (z > 0) & (z < 1)
    np.testing.assert_allclose(jvp(z, v, polytope, **params), np.where(free, v, 0.0),
                               atol=1e-12)


@pytest.mark.parametrize("polytope, params", [
    ("capped_simplex", {"budget": 1.5e-50}),
    ("knapsack", {"budget": 1.5e-50}),
])
def test_float32_jvp_with_weights_below_the_float32_range(polytope, params):
    # weighted float32 problems are solved in float64; the Jacobian must use that solution's
    # weights and tau, not their float32 roundings (w = 0, tau = inf: the box Jacobian)
    z = np.array([[0.3, 0.2, 0.9], [0.2, 0.6, 0.4]])
    v = np.array([[1.0, 0.0, 0.0], [0.5, -1.0, 2.0]])
    w = np.array([1e-50, 2e-50, 1e-50])
    want = jvp(z, v, polytope, weights=w, **params)
    assert np.abs(want).max() > 0 and not np.allclose(want, v)
    with np.errstate(over="raise"):           # nor warns of a tau overflowing float32
        got = jvp(z.astype(np.float32), v.astype(np.float32), polytope, weights=w, **params)
        P = project(z.astype(np.float32), polytope, weights=w, **params)
    assert got.dtype == P.dtype == np.float32
    assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert_allclose(P, project(z, polytope, weights=w, **params), rtol=1e-6)
