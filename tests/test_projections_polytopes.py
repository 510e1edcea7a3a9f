"""Capped simplex, box, budget, knapsack, at-least-one, at-most-one: each fast kernel
against exact active-set enumeration and SLSQP (notes/lp_sparsemap.md sections 0, 1.7, 1.9,
4 item 3), on random and adversarial rows; parameter validation."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import _projection_reference as ref
from sparsekit.projections import (POLYTOPES, jvp, project, project_at_least_one,
                                   project_at_most_one, project_box, project_budget,
                                   project_capped_simplex, project_knapsack, sparsemax)

W5 = [1.0, 2.0, 0.5, 3.0, 1.5]
CASES = [
    ("simplex", {}),
    ("simplex", {"radius": 2.5}),
    ("capped_simplex", {"budget": 2.0}),
    ("capped_simplex", {"budget": 0.7}),
    ("capped_simplex", {"budget": 3.1, "weights": W5}),      # degree-weighted XOR (Eq. 78)
    ("knapsack", {"budget": 1.5, "weights": W5}),
    ("knapsack", {"budget": 2.0}),
    ("budget", {"budget": 2.0}),
    ("budget", {"budget": 0.5}),
    ("box", {}),
    ("at_least_one", {}),
    ("at_most_one", {}),
]


def rows_for(k, rng):
    rows = [rng.normal(size=k) * s + c for s in (0.3, 1, 4) for c in (-0.5, 0.3, 1.0)]
    rows += [rng.integers(-1, 3, size=k) / 2.0 for _ in range(6)]                    # ties
    rows += [np.zeros(k), np.full(k, 0.5), np.full(k, 1e6), np.full(k, -1e6)]
    return rows


def case_params(polytope, params, k):
    params = dict(params)
    if params.get("weights") is not None:
        params["weights"] = np.asarray(params["weights"][:k])
        if polytope == "capped_simplex":
            params["budget"] = min(params["budget"], 0.8 * params["weights"].sum())
    elif polytope == "capped_simplex":
        params["budget"] = min(params["budget"], 0.8 * k)
    return params


@pytest.mark.parametrize("polytope, params", CASES)
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_against_active_set_enumeration(polytope, params, k):
    params = case_params(polytope, params, k)
    rng = np.random.default_rng(k)
    for z in rows_for(k, rng):
        expected = ref.brute_force(z, polytope, **params)
        got = project(z, polytope, **params)
        assert_allclose(got, expected, atol=1e-12 * max(1, abs(z).max()))


@pytest.mark.parametrize("polytope, params", CASES)
def test_against_slsqp(polytope, params):
    k = 20
    params = dict(params)
    if params.get("weights") is not None:
        params["weights"] = np.random.default_rng(0).uniform(0.2, 3, size=k)
    rng = np.random.default_rng(11)
    for z in [rng.normal(size=k) * s + c for s in (0.5, 2) for c in (-0.3, 0.4)]:
        assert_allclose(project(z, polytope, **params), ref.slsqp(z, polytope, **params),
                        atol=2e-6)


@pytest.mark.parametrize("polytope, params", CASES)
def test_float32_matches_float64(polytope, params):
    rng = np.random.default_rng(3)
    z = (rng.normal(size=(50, 5)) * 2).astype(np.float32)
    p32 = project(z, polytope, **params)
    assert p32.dtype == np.float32
    assert_allclose(p32, project(z.astype(np.float64), polytope, **params), atol=2e-6)


def test_sifting_covers_both_branches():
    rng = np.random.default_rng(4)
    z = rng.normal(size=(400, 5)) * 0.8 + 0.3
    clip = np.clip(z, 0, 1)
    w = np.array(W5)
    for polytope, params, inactive in [
        ("budget", {"budget": 2.0}, clip.sum(1) <= 2),
        ("knapsack", {"budget": 1.5, "weights": w}, clip @ w <= 1.5),
        ("at_most_one", {}, clip.sum(1) <= 1),
        ("at_least_one", {}, clip.sum(1) >= 1),
    ]:
        assert 20 < inactive.sum() < 380
        p = project(z, polytope, **params)
        assert_array_equal(p[inactive], clip[inactive])
        for zi, pi in zip(z[~inactive][:10], p[~inactive][:10]):
            assert_allclose(pi, ref.brute_force(zi, polytope, **params), atol=1e-12)


def test_special_cases_agree():
    rng = np.random.default_rng(5)
    z = rng.normal(size=(300, 7)) * 2
    # sparsemax == Pardalos-Kovoor with w = 1, bounds [0, 1], B = 1 (notes section 0)
    assert_allclose(project_capped_simplex(z, 1.0), sparsemax(z), atol=1e-15)
    assert_allclose(project_capped_simplex(z, 1.0, weights=np.ones(7)), sparsemax(z),
                    atol=1e-15)
    assert_allclose(project_at_most_one(z), project_budget(z, 1.0), atol=1e-15)
    assert_allclose(project_knapsack(z, 2.5), project_budget(z, 2.5), atol=1e-15)
    assert_allclose(project_knapsack(z, 2.5, weights=np.ones(7)), project_budget(z, 2.5),
                    atol=1e-15)
    assert_array_equal(project_budget(z, 7.0), project_box(z))
    assert_array_equal(project_box(z), np.clip(z, 0, 1))
    assert_array_equal(project_capped_simplex(z, 0.0), 0.0)
    assert_array_equal(project_capped_simplex(z, 7.0), 1.0)
    w = rng.uniform(0.5, 2, size=7)
    assert_array_equal(project_capped_simplex(z, w.sum(), weights=w), 1.0)
    assert_array_equal(project_knapsack(z, 0.0, weights=w), 0.0)
    # scaling the weights by c and the budget by c leaves the polytope unchanged
    assert_allclose(project_knapsack(z, 1.2, weights=w),
                    project_knapsack(z, 2.4, weights=2 * w), atol=1e-14)


@pytest.mark.parametrize("polytope, params", CASES)
def test_one_column(polytope, params):
    params = case_params(polytope, params, 1)
    z = np.array([[-3.0], [0.25], [5.0]])
    expected = np.array([ref.brute_force(zi, polytope, **params) for zi in z])
    assert_allclose(project(z, polytope, **params), expected, atol=1e-15)


def test_large_weighted_rows_against_bisection():
    rng = np.random.default_rng(6)
    k = 3000
    w = rng.uniform(0.1, 5, size=k)
    z = rng.normal(size=(3, k)) * 3
    z[1] = np.round(z[1])
    for zi, pi in zip(z, project_capped_simplex(z, 40.0, weights=w)):
        lo, hi = -100.0, 100.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if w @ np.clip(zi - mid * w, 0, 1) > 40 else (lo, mid)
        assert_allclose(pi, np.clip(zi - lo * w, 0, 1), atol=1e-9)
        assert abs(w @ pi - 40) < 1e-9


@pytest.mark.parametrize("polytope", ["capped_simplex", "knapsack"])
def test_float32_rows_with_weights_over_many_orders_of_magnitude(polytope):
    """Weights spread over 1e-5..1e4 put several float32 breakpoint keys on one value: the
    float32 result is the float64 one rounded (it used to come out all zeros, infeasible)."""
    w = np.array([1.18e-2, 4.9e-5, 5872.6, 1284.3, 97.2])
    z = np.array([[0.96, 1.87, 0.15, -0.57, 1.27]])
    rng = np.random.default_rng(7)
    z = np.vstack([z, rng.normal(size=(200, 5))])
    budget = 5588.0 if polytope == "capped_simplex" else 300.0
    p64 = project(z, polytope, budget=budget, weights=w)
    p32 = project(z.astype(np.float32), polytope, budget=budget, weights=w)
    assert p32.dtype == np.float32
    assert_allclose(p32, p64, atol=1e-6)
    if polytope == "capped_simplex":
        assert_allclose(p64 @ w, budget, rtol=1e-7)  # the shift by max z/w costs digits here


@pytest.mark.parametrize("call, err, match", [
    (lambda z: project(z, "l1_ball"), ValueError, "polytope"),
    (lambda z: project(z, "budget"), TypeError, "requires"),
    (lambda z: project(z, "box", budget=2), TypeError, "no parameter"),
    (lambda z: project_budget(z, -1.0), ValueError, "budget"),
    (lambda z: project_budget(z, np.nan), ValueError, "budget"),
    (lambda z: project_budget(z, "2"), TypeError, "budget"),
    (lambda z: project_capped_simplex(z, 3.5), ValueError, "exceeds"),
    (lambda z: project_capped_simplex(z, 1.0, weights=[1, 2]), ValueError, "shape"),
    (lambda z: project_knapsack(z, 1.0, weights=[1, 0, 1]), ValueError, "> 0"),
    (lambda z: project_knapsack(z, 1.0, weights=[1, np.inf, 1]), ValueError, "> 0"),
    (lambda z: project_knapsack(z, 1.0, weights=[1, 2j, 1]), TypeError, "weights must be real"),
    (lambda z: project_knapsack(z, 1.0, weights=["a", "b", "c"]), TypeError, "weights must be"),
    (lambda z: project_knapsack(np.float32(z), 1.0, weights=[1, 1e300, 1]), ValueError,
     "float32"),
    (lambda z: project(z, "simplex", radius=-1), ValueError, "radius"),
    (lambda z: project_at_least_one(z, device="gpu"), ValueError, "device"),
    (lambda z: project_box([[np.nan, 0, 0]]), ValueError, "NaN"),
])
def test_parameter_validation(call, err, match):
    with pytest.raises(err, match=match):
        call(np.zeros((2, 3)))


def test_polytope_names():
    assert set(POLYTOPES) == {"simplex", "budget", "knapsack", "capped_simplex", "box",
                              "at_least_one", "at_most_one"}


def test_one_dimensional_input_returns_one_row():
    z = np.array([0.3, 1.2, -0.4])
    for polytope, params in CASES:
        params = case_params(polytope, params, 3)
        p = project(z, polytope, **params)
        assert p.shape == (3,)
        assert_allclose(p, project(z[None], polytope, **params)[0])


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-6), (np.float64, 1e-9)])
@pytest.mark.parametrize("offset", [1e6, -1e6])
def test_capped_simplex_is_shift_invariant_at_huge_offsets(dtype, tol, offset):
    # p = clip(z - tau, 0, 1) with sum p = B absorbs a common shift into tau
    rng = np.random.default_rng(7)
    z = rng.uniform(-2, 2, size=(100, 8)).astype(dtype)
    zo = (z.astype(np.float64) + offset).astype(dtype)
    shifted = project_capped_simplex(zo, 3.0)
    assert_allclose(shifted, project_capped_simplex(zo.astype(np.float64) - offset, 3.0),
                    atol=tol)
    assert_allclose(shifted.sum(axis=1), 3.0, atol=10 * tol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("scale", [1e16, 1e30, "max"])
def test_capped_family_keeps_its_constraints_at_huge_scores(dtype, scale):
    """Past 2^53 (2^24 in float32) z - 1 rounds to z: the breakpoints are shifted by the
    largest one first, so the projection keeps its [0, 1] resolution at any magnitude."""
    c = np.finfo(dtype).max / 4 if scale == "max" else dtype(scale)
    Z = np.array([[c, c, -c], [c, c / 2, -c], [-c, -c, -c], [c, 0.25, -c]], dtype=dtype)
    expected = {"budget": [[0.5, 0.5, 0], [1, 0, 0], [0, 0, 0], [1, 0, 0]],
                "capped_simplex": [[0.5, 0.5, 0], [1, 0, 0], [1 / 3, 1 / 3, 1 / 3],
                                   [1, 0, 0]]}
    for polytope, P_expected in expected.items():
        P = project(Z, polytope, budget=1.0)
        np.testing.assert_allclose(P, P_expected, atol=1e-6, err_msg=polytope)
    P = project(Z, "budget", budget=2.0)  # inactive: the clip alone
    np.testing.assert_allclose(P[3], [1, 0.25, 0], atol=1e-6)
    np.testing.assert_allclose(P[0], [1, 1, 0])
    weights = np.array([1.0, 2.0, 3.0])  # knapsack: c/1 is the largest ratio
    P = project(Z[:1], "knapsack", budget=1.0, weights=weights)
    assert (P @ weights)[0] <= 1.0 + 1e-6
    np.testing.assert_allclose(P, [[1, 0, 0]], atol=1e-6)


def test_fenchel_young_loss_is_zero_not_nan_at_the_largest_finite_scores():
    from sparsekit.losses import fenchel_young_loss

    z = np.array([[1e308, -1e308]])
    for polytope in ("simplex", "box", "budget"):
        params = {"budget": 1.0} if polytope == "budget" else {}
        y = project(z, polytope, **params)
        assert fenchel_young_loss(z, y, polytope, **params)[0] == 0.0


def test_capped_simplex_budget_equal_to_the_weight_sum_in_another_order():
    w = np.array([0.1, 0.2, 0.3, 0.4, 0.7])
    budget = 0.0
    for v in w[::-1]:  # the user's sum, in another order: one ulp above w.sum()
        budget += v
    assert budget > w.sum()
    assert_allclose(project(np.zeros(5), "capped_simplex", budget=budget, weights=w), 1.0)


@pytest.mark.parametrize("polytope", ["capped_simplex", "budget", "knapsack"])
@pytest.mark.parametrize("dtype,top", [(np.float64, 1e12), (np.float64, 1e16),
                                       (np.float32, 3.4e7)])
def test_scores_capped_far_above_the_answer_keep_its_resolution(polytope, dtype, top):
    """The shift by max z/w keeps the top exact; the coordinates the answer depends on,
    far below it, are solved again around the answer (exact: [1, .55, .45])."""
    p = project(np.array([top, 0.9, 0.8], dtype=dtype), polytope, budget=2.0)
    assert_allclose(p, [1.0, 0.55, 0.45], atol=1e-12 if dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("polytope", ["capped_simplex", "knapsack"])
@pytest.mark.parametrize("tiny", [1e-8, 1e-12, 1e-17])
def test_a_tiny_weight_does_not_cost_the_others_their_resolution(polytope, tiny):
    w = np.array([1.0, tiny, 1.0])
    p = project([0.9, 0.8, 0.2], polytope, budget=1.0, weights=w)
    assert_allclose(p, [0.85, 0.8, 0.15], atol=1e-12)
    assert abs(w @ p - 1.0) < 1e-12


@pytest.mark.parametrize("z, budget, w", [
    ([0.9, -0.8, 0.2], 1.0, [1e-17, 1, 1]),                     # gave w.p = 0.2
    ([0.4, 1.0, -0.9], 8e8, [1e-10, 1e3, 1e9]),                 # gave w.p = 1e9
    ([-1.643023371405677e16, -2567301263654940.5], 1.372195468024335, None),    # [0, 1]
    ([-1.0715285177413546e16, -2.048317594914385e16, -4.122334763082323e16],
     1.9603989153993757, None),
])
def test_capped_simplex_is_exact_at_extreme_scores_and_weights(z, budget, w):
    """Weights ~1e16 apart or scores past 2^53 apart lose the answer in the sweep's running
    sums (or collapse a coordinate's breakpoints z' - 1 and z'): caught by the budget check
    and searched again, in a frame moved to the answer."""
    p = project(z, "capped_simplex", budget=budget, weights=w)
    assert_allclose(p, ref.exact_capped(z, budget, w), atol=1e-9)


@pytest.mark.parametrize("regime", ["weights", "scores", "float32"])
def test_capped_family_matches_rational_reference_across_scales(regime):
    rng = np.random.default_rng(["weights", "scores", "float32"].index(regime))
    for _ in range(150):
        k = int(rng.integers(2, 7))
        w = None
        if regime == "weights":      # |z| <= 1.5, weights spread over 1e-10 .. 1e8
            z, w = rng.uniform(-1, 1.5, size=k), 10.0 ** rng.uniform(-10, 8, size=k)
        elif regime == "scores":     # unit weights, scores 1e12 .. 1e17
            z = rng.normal(size=k) * 10.0 ** rng.uniform(12, 17)
        else:
            z = (rng.normal(size=k) * 10.0 ** rng.uniform(5, 9)).astype(np.float32)
        total = k if w is None else w.sum()
        budget = float(rng.uniform(0.05, 0.95) * total)
        expected = ref.exact_capped(np.asarray(z, dtype=np.float64), budget, w)
        tol = 1e-5 if regime == "float32" else 1e-9
        assert_allclose(project(z, "capped_simplex", budget=budget, weights=w), expected,
                        atol=tol, err_msg=f"z={z!r} w={w!r} budget={budget!r}")
        clipped = np.clip(np.asarray(z, dtype=np.float64), 0, 1)
        if clipped @ (np.ones(k) if w is None else w) > budget:     # the knapsack is active
            assert_allclose(project(z, "knapsack", budget=budget, weights=w), expected,
                            atol=tol)


def test_float32_parameter_limits_use_the_exact_weights_and_the_dtype_range():
    w = np.array([0.3, 0.7000001, 1.9])          # sum(w) is not a float32 number
    p = project(np.zeros(3, np.float32), "capped_simplex", budget=float(w.sum()), weights=w)
    assert_array_equal(p, [1, 1, 1])
    with pytest.raises(ValueError, match="not finite in float32"):
        project(np.float32([0.1, 0.5, -0.2]), "simplex", radius=1e300)


@pytest.mark.parametrize("polytope, budget", [("capped_simplex", 1.0), ("knapsack", 0.5)])
def test_a_ratio_of_score_to_weight_that_overflows_is_a_clear_error(polytope, budget):
    """Finite scores and positive weights whose ratio z_i / w_i overflows: the kernels'
    shift is then infinite and the row NaN; every entry point says so instead."""
    from sparsekit.losses import fenchel_young_loss

    Z = np.array([[1e299, 0.5, 0.2], [0.3, 0.2, 0.1]])
    w = np.array([1e-10, 1.0, 1.0])
    with pytest.raises(ValueError, match="overflows"):
        project(Z, polytope, budget=budget, weights=w)
    with pytest.raises(ValueError, match="overflows"):
        jvp(Z, np.ones_like(Z), polytope, budget=budget, weights=w)
    with pytest.raises(ValueError, match="overflows"):
        fenchel_young_loss(Z, np.array([[0.0, 0.5, 0.5]] * 2) * budget, polytope,
                           budget=budget, weights=w)
    assert np.isfinite(project(Z / 10, polytope, budget=budget, weights=w)).all()


@pytest.mark.parametrize("polytope, quarter", [("capped_simplex", [1.0, 0.0, 0.5]),
                                               ("knapsack", [1.0, 0.0, 0.25]),
                                               ("budget", [1.0, 0.0, 0.25])])
def test_scores_spanning_more_than_the_float64_range_are_a_clear_error(polytope, quarter):
    """Unweighted rows whose scores lie further apart than the float64 range: shifted by
    their largest score they overflow, and the row was NaN, silently."""
    from sparsekit.losses import fenchel_young_loss

    Z = np.array([[1.7e308, -1.7e308, 1.0], [0.3, 0.2, 0.1]])
    with pytest.raises(ValueError, match="spread of a row's scores overflows"):
        project(Z, polytope, budget=1.5)
    with pytest.raises(ValueError, match="spread of a row's scores overflows"):
        jvp(Z, np.ones_like(Z), polytope, budget=1.5)
    with pytest.raises(ValueError, match="spread of a row's scores overflows"):
        fenchel_young_loss(Z, np.array([[1.0, 0.0, 0.5]] * 2), polytope, budget=1.5)
    assert_allclose(project(Z / 4, polytope, budget=1.5)[0], quarter)   # Z / 4 spans less
    Z32 = np.array([[3e38, -3e38, 0.25]], dtype=np.float32)   # swept in float64: no overflow
    assert_allclose(project(Z32, polytope, budget=1.5)[0], quarter)
