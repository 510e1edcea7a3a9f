"""Negated coordinates (``negated=``): notes/lp_sparsemap.md Prop. 7 and Cor. 7.1.

With flip(x)_k = 1 - x_k on the negated set N: proj_{flip M}(z) = flip(proj_M(flip z)),
J_{flip M}(z) = L J_M(flip z) L (L = diag(+-1), -1 on N), and the Fenchel-Young loss of
flip(M) at (z, y) is that of M at (flip z, flip y), gradient proj_{flip M}(z) - y. Checked
against exact active-set enumeration of the flipped problem, against independent
descriptions of NAND / IMPLY / negated at-most-one and simplex, finite differences, and the
closed form of the loss; invalid masks are rejected.
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize

import _projection_reference as ref
import sparsekit.projections._dispatch as dispatch
from sparsekit.losses import fenchel_young_loss, fenchel_young_loss_and_grad
from sparsekit.projections import jvp, project

CASES = ref.POLYTOPE_CASES


def flip(x, mask):
    """Reference flip, written independently of the package: 1 - x on the mask."""
    mask = np.asarray(mask, dtype=bool)
    return np.where(mask, 1 - np.asarray(x), x)


def signs(mask):
    """Diagonal of L: -1 on the negated coordinates, +1 elsewhere."""
    return np.where(np.asarray(mask, dtype=bool), -1.0, 1.0)


def case_params(polytope, params, k):
    """The case's parameters for rows of k entries (weights cut to k, capped-simplex
    budget kept below the sum of the weights)."""
    params = dict(params)
    if params.get("weights") is not None:
        params["weights"] = np.asarray(params["weights"][:k])
    if polytope == "capped_simplex":
        total = params["weights"].sum() if "weights" in params else k
        params["budget"] = min(params["budget"], 0.8 * total)
    return params


def masks_for(k, rng):
    """None, all False, all True, the first k - 1 (IMPLY), one, and random masks."""
    masks = [np.zeros(k, bool), np.ones(k, bool), np.arange(k) < k - 1, np.arange(k) == 0]
    masks += [rng.random(k) < 0.5 for _ in range(3)]
    return masks


def rows_for(k, rng):
    rows = [rng.normal(size=k) * s + c for s in (0.3, 1, 4) for c in (-0.5, 0.3, 1.0)]
    rows += [rng.integers(-1, 3, size=k) / 2.0 for _ in range(5)]                    # ties
    rows += [np.zeros(k), np.full(k, 0.5), np.full(k, 1.0), np.full(k, 1e6), np.full(k, -1e6),
             np.where(np.arange(k) % 2 == 0, 1e6, -1e6), np.full(k, 1e-12)]
    return rows


def binary_points(k):
    return np.array(list(itertools.product((0.0, 1.0), repeat=k)))


# --------------------------------------------------------------------------- (a) forward

@pytest.mark.parametrize("polytope, params", CASES)
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_projection_is_flipped_projection_of_flipped_scores(polytope, params, k):
    params = case_params(polytope, params, k)
    rng = np.random.default_rng(k)
    rows = np.array(rows_for(k, rng))
    for mask in masks_for(k, rng):
        expected = np.array([flip(ref.brute_force(flip(z, mask), polytope, **params), mask)
                             for z in rows])
        got = project(rows, polytope, negated=mask, **params)
        atol = 1e-12 * np.maximum(1, abs(rows).max(axis=1, keepdims=True))
        assert np.all(np.abs(got - expected) <= atol), (polytope, mask)
        # a single 1-D row gives the same row
        for z, e in zip(rows[::7], expected[::7]):
            p = project(z, polytope, negated=mask, **params)
            assert p.shape == (k,)
            assert_allclose(p, e, atol=1e-12 * max(1, abs(z).max()))


@pytest.mark.parametrize("polytope, params", CASES)
def test_no_negation_is_the_plain_projection(polytope, params):
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(40, 6)) * 2
    plain = project(Z, polytope, **params)
    assert_array_equal(project(Z, polytope, negated=None, **params), plain)
    assert_array_equal(project(Z, polytope, negated=np.zeros(6, bool), **params), plain)
    assert_array_equal(project(Z, polytope, negated=[0] * 6, **params), plain)


@pytest.mark.parametrize("polytope, params", CASES)
def test_negation_is_an_involution_and_leaves_the_input_alone(polytope, params):
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(40, 6)) * 2
    Z_before = Z.copy()
    mask = np.array([True, False, True, True, False, False])
    P = project(Z, polytope, negated=mask, **params)
    assert_array_equal(Z, Z_before)
    # flip(M) negated again on the same set is M
    assert_allclose(flip(project(flip(Z, mask), polytope, negated=mask, **params), mask),
                    project(Z, polytope, **params), atol=1e-14)
    # the output lies in flip(M): flipping it gives a point of M, its own projection
    assert_allclose(project(flip(P, mask), polytope, **params), flip(P, mask), atol=1e-13)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_nand_is_the_budget_polytope(k):
    # at_least_one with every coordinate negated: {0 <= p <= 1, sum p <= k - 1}
    rng = np.random.default_rng(10 + k)
    rows = np.array(rows_for(k, rng))
    nand = project(rows, "at_least_one", negated=np.ones(k, bool))
    assert_allclose(nand, project(rows, "budget", budget=k - 1), atol=1e-12)
    if k <= 4:
        for z, p in zip(rows, nand):
            assert_allclose(p, ref.brute_force(z, "budget", budget=k - 1),
                            atol=1e-12 * max(1, abs(z).max()))


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_negated_simplex_is_a_capped_simplex(k):
    # {sum (1 - p) = 1, 1 - p >= 0} = {0 <= p <= 1, sum p = k - 1}
    rng = np.random.default_rng(20 + k)
    rows = np.array(rows_for(k, rng))
    got = project(rows, "simplex", negated=np.ones(k, bool))
    for z, p in zip(rows, got):
        assert_allclose(p, ref.brute_force(z, "capped_simplex", budget=k - 1),
                        atol=1e-12 * max(1, abs(z).max()))


def _enumerate_ge(z, b):
    """Exact projection onto {0 <= p <= 1, sum p >= b} by enumerating active sets, built
    from the reference's KKT candidates (its SPECS have no ">= b" entry for b != 1)."""
    w = np.ones(z.size)
    best = None
    for assign in itertools.product((0, 1, 2), repeat=z.size):
        for p in ref._candidates(z, 1.0, "ge", b, w, np.array(assign)):
            if ref._feasible(p, 1.0, "ge", b, w):
                d = ((p - z) ** 2).sum()
                if best is None or d < best[0]:
                    best = (d, p)
    return best[1]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_negated_at_most_one_is_at_least_k_minus_one(k):
    rng = np.random.default_rng(30 + k)
    rows = [rng.normal(size=k) * s + c for s in (0.3, 1, 4) for c in (-0.5, 0.3, 1.0)]
    rows += [np.zeros(k), np.full(k, 0.5), np.full(k, 1e6), np.full(k, -1e6)]
    got = project(np.array(rows), "at_most_one", negated=np.ones(k, bool))
    for z, p in zip(rows, got):
        assert p.sum() >= k - 1 - 1e-12
        assert_allclose(p, _enumerate_ge(z, k - 1), atol=1e-12 * max(1, abs(z).max()))


@pytest.mark.parametrize("k", [2, 3, 5])
def test_imply_against_a_generic_qp(k):
    # (not p_1, ..., not p_{k-1}, p_k) in OR  <=>  sum_{i<k} p_i - p_k <= k - 2
    a = np.r_[np.ones(k - 1), -1.0]
    mask = np.arange(k) < k - 1
    rng = np.random.default_rng(40 + k)
    for z in rng.normal(size=(12, k)) * 1.5 + 0.5:
        res = minimize(lambda p: 0.5 * ((p - z) ** 2).sum(), np.full(k, 0.5),
                       jac=lambda p: p - z, bounds=[(0, 1)] * k, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda p: k - 2 - a @ p,
                                     "jac": lambda p: -a}],
                       options={"ftol": 1e-15, "maxiter": 1000})
        assert_allclose(project(z, "at_least_one", negated=mask), res.x, atol=2e-6)


@pytest.mark.parametrize("name, polytope, mask_of, truth", [
    ("NAND", "at_least_one", lambda k: np.ones(k, bool), lambda y: not y.all()),
    ("IMPLY", "at_least_one", lambda k: np.arange(k) < k - 1,
     lambda y: (not y[:-1].all()) or bool(y[-1])),
    ("AT_LEAST_K-1", "at_most_one", lambda k: np.ones(k, bool), lambda y: y.sum() >= y.size - 1),
])
@pytest.mark.parametrize("k", [2, 3, 4])
def test_binary_points_follow_the_truth_table(name, polytope, mask_of, truth, k):
    # a binary point is its own projection exactly when it lies in the (negated) polytope,
    # i.e. when it satisfies the logic formula
    Y = binary_points(k)
    P = project(Y, polytope, negated=mask_of(k))
    for y, p in zip(Y, P):
        assert np.array_equal(p, y) == truth(y), (name, y, p)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_hypothesis_against_flipped_enumeration(data):
    k = data.draw(st.integers(1, 4))
    polytope, params = data.draw(st.sampled_from(CASES))
    params = case_params(polytope, params, k)
    values = st.one_of(st.floats(-20, 20, allow_nan=False, width=64),
                       st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0]))
    z = np.array(data.draw(st.lists(values, min_size=k, max_size=k)))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)))
    expected = flip(ref.brute_force(flip(z, mask), polytope, **params), mask)
    assert_allclose(project(z, polytope, negated=mask, **params), expected,
                    atol=1e-12 * max(1, abs(z).max()))


# ----------------------------------------------------------------- (b) adversarial rows

@pytest.mark.parametrize("polytope, params", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adversarial_rows_in_both_dtypes(polytope, params, dtype):
    k = 4
    params = case_params(polytope, params, k)
    rows = np.array([[1e6, -1e6, 1e6, -1e6], [1e6, 1e6, 1e6, 1e6], [-1e6] * 4,
                     [1e-7, -1e-7, 1e-7, 0.0], [0.5, 0.5, 0.5, 0.5], [1.0, 1.0, 0.0, 0.0],
                     [1e6, 0.3, -0.2, 0.9], [0.0, 0.0, 0.0, 0.0]]).astype(dtype)
    eps = np.finfo(dtype).eps
    one = dtype(1)
    for mask in (np.ones(k, bool), np.array([True, False, True, False]),
                 np.array([False, False, False, True])):
        got = project(rows, polytope, negated=mask, **params)
        assert got.dtype == dtype and got.shape == rows.shape
        assert np.isfinite(got).all()
        # the same arithmetic in the input's dtype: flip, plain kernel, flip back
        plain = project(np.where(mask, one - rows, rows), polytope, **params)
        assert_array_equal(got, np.where(mask, one - plain, plain))
        for z, p in zip(rows.astype(np.float64), got):
            # the exact answer for the input, up to the rounding of 1 - z and the kernel's
            expected = flip(ref.brute_force(flip(z, mask), polytope, **params), mask)
            assert_allclose(p, expected, atol=8 * eps * max(1, abs(z).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_scores_give_exact_vertices(dtype):
    z = np.array([1e6, -1e6, 1e6, -1e6], dtype=dtype)
    mask = np.array([True, True, False, False])
    # the box is its own flip: clip(z, 0, 1) whatever the mask, exactly
    assert_array_equal(project(z, "box", negated=mask), np.clip(z, 0, 1))
    # NAND at all-huge scores: k - 1 ones and one zero (a vertex), up to the tie
    p = project(np.full(3, 1e6, dtype=dtype), "at_least_one", negated=np.ones(3, bool))
    assert p.dtype == dtype
    assert_allclose(p.sum(), 2.0, atol=8 * np.finfo(dtype).eps)
    # IMPLY with the premises far on and the conclusion far off: the flipped row
    # (1 - 1e6, 1 - 1e6, -1e6) goes to the simplex branch, (1/2, 1/2, 0), flipped back
    p = project(np.array([1e6, 1e6, -1e6], dtype=dtype), "at_least_one",
                negated=[True, True, False])
    assert p.dtype == dtype
    assert_allclose(p, [0.5, 0.5, 0.0], atol=8 * np.finfo(dtype).eps)


@pytest.mark.parametrize("polytope, params", CASES)
def test_one_column(polytope, params):
    params = case_params(polytope, params, 1)
    z = np.array([[-3.0], [0.25], [0.5], [1.0], [5.0], [1e6], [-1e6]])
    for mask in ([True], [False]):
        expected = np.array([flip(ref.brute_force(flip(zi, mask), polytope, **params), mask)
                             for zi in z])
        assert_allclose(project(z, polytope, negated=mask, **params), expected, atol=1e-15)
    # at_least_one on one coordinate is {1}; negated, {0}
    assert_array_equal(project(z, "at_least_one", negated=[True]), 0.0)
    assert_array_equal(project(z, "at_least_one"), 1.0)


def test_two_columns_closed_forms():
    t = np.linspace(-3, 3, 61)
    Z = np.c_[t, 0.4 * np.ones_like(t)]
    # NAND on two coordinates is {p1 + p2 <= 1} = at_most_one
    assert_allclose(project(Z, "at_least_one", negated=[True, True]),
                    project(Z, "at_most_one"), atol=1e-15)
    # negating the first coordinate of the 2-simplex: {p1 = p2} inside [0, 1]^2
    P = project(Z, "simplex", negated=[True, False])
    assert_allclose(P[:, 0], P[:, 1], atol=1e-15)
    assert_allclose(P[:, 0], np.clip((t + 0.4) / 2, 0, 1), atol=1e-15)


# ------------------------------------------------------------------------------ (c) jvp

@pytest.mark.parametrize("polytope, params", CASES)
def test_jvp_matches_finite_differences(polytope, params):
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(200, 6)) * 1.5 + 0.3
    V = rng.normal(size=Z.shape)
    for mask in masks_for(6, rng):
        got = jvp(Z, V, polytope, negated=mask, **params)
        fd = ref.finite_difference_jvp(
            lambda x: project(x, polytope, negated=mask, **params), Z, V, eps=1e-7)
        assert_allclose(got, fd, atol=1e-6, err_msg=str(mask))
        # a 1-D row
        assert_allclose(jvp(Z[3], V[3], polytope, negated=mask, **params), got[3])


@pytest.mark.parametrize("polytope, params", CASES)
def test_jvp_is_symmetric_and_sandwiched(polytope, params):
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(100, 6)) + 0.2
    U, V = rng.normal(size=Z.shape), rng.normal(size=Z.shape)
    mask = np.array([False, True, True, False, True, False])
    assert_allclose((U * jvp(Z, V, polytope, negated=mask, **params)).sum(1),
                    (V * jvp(Z, U, polytope, negated=mask, **params)).sum(1), atol=1e-12)
    # Cor. 7.1 written out with the reference flip: L J_M(flip z) L v
    L = signs(mask)
    assert_allclose(jvp(Z, V, polytope, negated=mask, **params),
                    L * jvp(flip(Z, mask), L * V, polytope, **params), atol=1e-15)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_nand_full_jacobian_equals_budget_jacobian(k):
    rng = np.random.default_rng(50 + k)
    for z in rng.normal(size=(10, k)) + 0.8:
        nand = np.stack([jvp(z, e, "at_least_one", negated=np.ones(k, bool))
                         for e in np.eye(k)], 1)
        budget = np.stack([jvp(z, e, "budget", budget=k - 1) for e in np.eye(k)], 1)
        assert_allclose(nand, budget, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_jvp_dtype_and_one_column(dtype):
    rng = np.random.default_rng(2)
    Z, V = rng.normal(size=(20, 5)).astype(dtype), rng.normal(size=(20, 5))
    mask = [True, False, False, True, True]
    got = jvp(Z, V, "budget", negated=mask, budget=2.0)
    assert got.dtype == dtype
    assert_allclose(got, jvp(Z.astype(np.float64), V, "budget", negated=mask, budget=2.0),
                    atol=1e-5)
    # one free coordinate of the box, negated: derivative of 1 - clip(1 - z) is +1
    assert_array_equal(jvp([[0.3]], [[2.0]], "box", negated=[True]), [[2.0]])
    assert_array_equal(jvp([[0.3]], [[2.0]], "at_least_one", negated=[True]), [[0.0]])


# -------------------------------------------------------------------- (d) Fenchel-Young

@pytest.mark.parametrize("polytope, params", CASES)
def test_fenchel_young_loss_with_negation(polytope, params):
    rng = np.random.default_rng(3)
    k = 6
    Z = rng.normal(size=(60, k)) * 1.5 + 0.3
    for mask in masks_for(k, rng):
        # targets inside flip(M): projections onto it, half of them binary-ish vertices
        Y = project(rng.normal(size=(60, k)) * 3, polytope, negated=mask, **params)
        loss, grad = fenchel_young_loss_and_grad(Z, Y, polytope, negated=mask, **params)
        mu = project(Z, polytope, negated=mask, **params)
        closed = 0.5 * ((Y - Z) ** 2).sum(1) - 0.5 * ((mu - Z) ** 2).sum(1)
        assert_allclose(loss, closed, atol=1e-12)
        assert_allclose(loss, fenchel_young_loss(Z, Y, polytope, negated=mask, **params))
        assert_allclose(grad, mu - Y, atol=1e-14)
        # the loss of M at the flipped scores and targets (the flip is an isometry)
        assert_allclose(loss, fenchel_young_loss(flip(Z, mask), flip(Y, mask), polytope,
                                                 **params), atol=1e-12)
        # >= 1/2 ||mu - y||^2 for y in the polytope: zero only where mu = y
        assert (loss >= 0.5 * ((mu - Y) ** 2).sum(1) - 1e-12).all()
        # zero at targets that are their own projection
        assert_allclose(fenchel_young_loss(Y, Y, polytope, negated=mask, **params), 0.0,
                        atol=1e-13)
        V = rng.normal(size=Z.shape)
        fd = ref.finite_difference_jvp(
            lambda x: fenchel_young_loss(x, Y, polytope, negated=mask, **params), Z, V)
        assert_allclose(fd, (grad * V).sum(1), atol=1e-7)


def test_fenchel_young_loss_against_enumeration():
    # mu* from the exact enumeration of the negated polytope, not from the package
    rng = np.random.default_rng(4)
    k, mask = 4, np.array([True, True, True, False])              # IMPLY
    for z in rng.normal(size=(10, k)) * 2:
        mu = flip(ref.brute_force(flip(z, mask), "at_least_one"), mask)
        for y in binary_points(k):
            if y[:-1].all() and not y[-1]:
                continue                                         # 1 1 1 0 violates IMPLY
            loss, grad = fenchel_young_loss_and_grad(z, y, "at_least_one", negated=mask)
            assert isinstance(loss, float) and grad.shape == (k,)
            assert_allclose(loss, 0.5 * ((y - z) ** 2).sum() - 0.5 * ((mu - z) ** 2).sum(),
                            atol=1e-12)
            assert_allclose(grad, mu - y, atol=1e-12)


def test_fenchel_young_loss_is_zero_exactly_at_the_target():
    y = np.array([1.0, 0.0, 1.0])                    # NAND holds: not all ones
    nand = np.ones(3, bool)
    # scores pushing towards y: mu* = y and the loss vanishes
    assert fenchel_young_loss(y + 5 * (2 * y - 1), y, "at_least_one", negated=nand) == 0.0
    # scores pushing towards 1 1 1 (outside NAND): mu* != y and the loss is positive
    z = np.array([3.0, 3.0, 3.0])
    loss, grad = fenchel_young_loss_and_grad(z, y, "at_least_one", negated=nand)
    assert loss > 0.1 and np.abs(grad).max() > 0.1
    # the all-zero target lies in NAND (not in OR) and is accepted
    assert fenchel_young_loss(z, np.zeros(3), "at_least_one", negated=nand) > 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fenchel_young_dtypes(dtype):
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(30, 5)).astype(dtype)
    mask = [True, False, True, False, False]
    Y = project(rng.normal(size=(30, 5)) * 3, "budget", negated=mask, budget=2.0)
    loss, grad = fenchel_young_loss_and_grad(Z, Y.astype(dtype), "budget", negated=mask,
                                             budget=2.0)
    assert loss.dtype == np.float64 and grad.dtype == dtype
    ref64 = fenchel_young_loss_and_grad(Z.astype(np.float64), Y, "budget", negated=mask,
                                        budget=2.0)
    assert_allclose(loss, ref64[0], atol=1e-5)
    assert_allclose(grad, ref64[1], atol=1e-5)


@pytest.mark.parametrize("Y, polytope, mask, params", [
    ([[1.0, 1.0, 1.0]], "at_least_one", [True, True, True], {}),     # violates NAND
    ([[1.0, 1.0, 0.0]], "at_least_one", [True, True, False], {}),    # violates IMPLY
    ([[1.5, 0.0, 0.0]], "at_least_one", [True, True, True], {}),     # > 1 on a negated col
    ([[-0.5, 1.0, 1.0]], "at_most_one", [True, True, True], {}),     # < 0 on a negated col
    ([[0.0, 0.0, 1.0]], "at_most_one", [True, True, True], {}),      # sum < K - 1
    ([[1.0, 0.0, 0.0]], "simplex", [True, True, True], {}),           # sum != K - 1
    ([[1.0, 1.0, 0.0]], "budget", [False, False, True], {"budget": 2.0}),
])
def test_targets_outside_the_negated_polytope_are_rejected(Y, polytope, mask, params):
    with pytest.raises(ValueError, match=r"negated.*1 - Y"):
        fenchel_young_loss([[0.2, 0.1, 0.0]], Y, polytope, negated=mask, **params)
    with pytest.raises(ValueError, match="negated"):
        fenchel_young_loss_and_grad([[0.2, 0.1, 0.0]], Y, polytope, negated=mask, **params)


def test_targets_valid_only_after_negation_are_accepted():
    # each target lies outside M but inside flip(M)
    for Y, polytope, mask in [([0.0, 0.0, 0.0], "at_least_one", [True] * 3),
                              ([1.0, 1.0, 0.0], "at_most_one", [True] * 3),
                              ([1.0, 1.0, 0.0], "simplex", [True] * 3),
                              ([1.0, 1.0, 1.0], "budget", [True, False, False])]:
        params = {"budget": 2.0} if polytope == "budget" else {}
        with pytest.raises(ValueError):
            fenchel_young_loss([0.2, 0.1, 0.0], Y, polytope, **params)
        assert fenchel_young_loss(Y, Y, polytope, negated=mask, **params) == 0.0
        assert fenchel_young_loss([0.2, 0.1, 0.0], Y, polytope, negated=mask, **params) > 0


# ----------------------------------------------------------------------- (e) bad masks

BAD_MASKS = [
    ([True, False], "shape"),                      # too short
    ([True, False, True, False], "shape"),         # too long
    ([[True, False, True]], "shape"),              # 2-D
    (True, "shape"),                               # scalar
    ([0, 2, 1], "booleans"),
    ([0.5, 0.0, 1.0], "booleans"),
    ([np.nan, 0.0, 1.0], "booleans"),
    ([np.inf, 0.0, 1.0], "booleans"),
    ([-1, 0, 1], "booleans"),
    (["a", "b", "c"], "booleans"),
    ([None, True, False], "booleans"),
]


@pytest.mark.parametrize("mask, match", BAD_MASKS)
def test_invalid_masks_are_rejected(mask, match):
    Z = np.zeros((2, 3))
    calls = [lambda: project(Z, "box", negated=mask),
             lambda: project(Z[0], "at_least_one", negated=mask),
             lambda: jvp(Z, Z, "budget", negated=mask, budget=1.0),
             lambda: fenchel_young_loss(Z, Z, "box", negated=mask),
             lambda: fenchel_young_loss_and_grad(Z, Z, "box", negated=mask)]
    for call in calls:
        with pytest.raises(ValueError, match=match):
            call()


def test_equivalent_mask_spellings():
    Z = np.random.default_rng(6).normal(size=(10, 4))
    expected = project(Z, "at_least_one", negated=np.array([True, False, True, False]))
    for mask in ([1, 0, 1, 0], np.array([1.0, 0.0, 1.0, 0.0]), (True, False, True, False),
                 np.array([1, 0, 1, 0], dtype=np.uint8)):
        assert_array_equal(project(Z, "at_least_one", negated=mask), expected)


# ------------------------------------------------------ the GPU branch, with a fake device

def test_gpu_branch_flips_around_the_device_function(monkeypatch):
    """The ``device="cuda"`` branch, with the CuPy functions replaced by the CPU ones
    (which must receive flipped inputs and no ``negated``)."""
    seen = []

    def fake_project(Z, polytope, **params):
        assert "negated" not in params
        seen.append(("project", type(Z)))
        return project(Z, polytope, device="cpu", **params)

    def fake_jvp(Z, V, polytope, **params):
        assert "negated" not in params
        seen.append(("jvp", type(Z)))
        return jvp(Z, V, polytope, device="cpu", **params)

    fakes = {"project": fake_project, "jvp": fake_jvp}
    monkeypatch.setattr(dispatch, "gpu_function",
                        lambda name, Z, device: fakes[name] if device == "cuda" else None)
    rng = np.random.default_rng(7)
    Z, V = rng.normal(size=(30, 5)) + 0.5, rng.normal(size=(30, 5))
    Z_before = Z.copy()
    mask = [True, False, False, True, True]
    for polytope, params in CASES[:1] + CASES[5:]:
        params = case_params(polytope, params, 5)
        cpu = project(Z, polytope, negated=mask, **params)
        assert_array_equal(project(Z, polytope, negated=mask, device="cuda", **params), cpu)
        assert_array_equal(project(Z[4], polytope, negated=mask, device="cuda", **params),
                           cpu[4])
        assert_array_equal(project(Z.tolist(), polytope, negated=mask, device="cuda",
                                   **params), cpu)
        assert_array_equal(jvp(Z, V, polytope, negated=mask, device="cuda", **params),
                           jvp(Z, V, polytope, negated=mask, **params))
        assert_array_equal(jvp(Z[2], V[2], polytope, negated=mask, device="cuda", **params),
                           jvp(Z, V, polytope, negated=mask, **params)[2])
    assert_array_equal(Z, Z_before)
    assert {name for name, _ in seen} == {"project", "jvp"}
    with pytest.raises(ValueError, match="shape"):
        project(Z, "box", negated=[True], device="cuda")
    with pytest.raises(ValueError, match="booleans"):
        jvp(Z, V, "box", negated=[2, 0, 0, 0, 0], device="cuda")
    with pytest.raises(ValueError, match="shape of Z"):
        jvp(Z, V[:, :3], "box", negated=mask, device="cuda")
    with pytest.raises(ValueError, match="1-D or 2-D"):
        project(Z[None], "box", negated=mask, device="cuda")
    for ints in (np.array([[5, 0, 0, 2, 1]], dtype=np.uint8), np.array([[True, False] * 2
                                                                       + [True]])):
        # flipped after the conversion to floating, as on the CPU (uint8: 1 - 5 = 252)
        assert_array_equal(project(ints, "box", negated=mask, device="cuda"),
                           project(ints, "box", negated=mask))
        assert_array_equal(jvp(ints, ints, "box", negated=mask, device="cuda"),
                           jvp(ints, ints, "box", negated=mask))


# ------------------------------------------------ mask containers and the named functions

def test_sparse_masks_are_rejected_with_a_clear_message():
    """A SciPy sparse mask is refused as such (np.asarray would make it a 0-d object
    array and the message would wrongly be about its shape)."""
    import scipy.sparse as sp

    Z = np.zeros((2, 3))
    mask = sp.csr_matrix(np.array([[1, 0, 1]], dtype=bool))
    for call in (lambda: project(Z, "box", negated=mask),
                 lambda: jvp(Z, Z, "budget", negated=mask, budget=1.0),
                 lambda: fenchel_young_loss(Z, Z, "box", negated=mask)):
        with pytest.raises(ValueError, match="negated must be a dense boolean mask, got a "
                                             "sparse matrix"):
            call()


def test_a_cupy_mask_is_copied_to_the_host():
    """A CuPy mask (here a stand-in whose type lives in a ``cupy`` module, which is all
    is_cupy_array looks at) with NumPy scores is read through its ``.get()``: the result
    is that of the same mask given as a NumPy array."""
    class FakeCupyArray:
        __module__ = "cupy._core.core"

        def __init__(self, values):
            self.values = np.asarray(values)
            self.copies = 0

        def get(self):
            self.copies += 1
            return self.values.copy()

    rng = np.random.default_rng(8)
    Z, V = rng.normal(size=(10, 4)) + 0.5, rng.normal(size=(10, 4))
    host = np.array([True, False, True, True])
    mask = FakeCupyArray(host)
    assert_array_equal(project(Z, "at_least_one", negated=mask),
                       project(Z, "at_least_one", negated=host))
    assert_array_equal(jvp(Z, V, "budget", negated=mask, budget=2.0),
                       jvp(Z, V, "budget", negated=host, budget=2.0))
    assert mask.copies == 2
    with pytest.raises(ValueError, match="shape"):
        project(Z, "box", negated=FakeCupyArray([True, False]))


NAMED = [("sparsemax", (), {}, "simplex", {}),
         ("project_simplex", (2.5,), {}, "simplex", {"radius": 2.5}),
         ("project_capped_simplex", (1.5, [0.5, 1.0, 2.0, 1.5]), {}, "capped_simplex",
          {"budget": 1.5, "weights": [0.5, 1.0, 2.0, 1.5]}),
         ("project_knapsack", (1.5,), {"weights": [0.5, 1.0, 2.0, 1.5]}, "knapsack",
          {"budget": 1.5, "weights": [0.5, 1.0, 2.0, 1.5]}),
         ("project_budget", (2.0,), {}, "budget", {"budget": 2.0}),
         ("project_box", (), {}, "box", {}),
         ("project_at_least_one", (), {}, "at_least_one", {}),
         ("project_at_most_one", (), {}, "at_most_one", {})]


@pytest.mark.parametrize("name, args, kwargs, polytope, params", NAMED)
def test_named_projections_go_to_the_gpu_function_of_the_same_name(
        monkeypatch, name, args, kwargs, polytope, params):
    """device="cuda": each named function hands Z and its parameters to the function of
    the same name in sparsekit.gpu.projections (the real wrappers, with their
    signatures), here ending in a NumPy stand-in for the GPU ``project``; the answer is
    the CPU projection onto the same polytope with the same parameters."""
    import sparsekit.gpu.projections as gpu_projections
    import sparsekit.projections as projections

    seen = []

    def fake_gpu_project(Z, polytope, **params):
        seen.append((polytope, params))
        return project(Z, polytope, device="cpu", **params)

    monkeypatch.setattr(gpu_projections, "project", fake_gpu_project)
    Z = np.random.default_rng(9).normal(size=(7, 4)) * 2
    got = getattr(projections, name)(Z, *args, device="cuda", **kwargs)
    assert len(seen) == 1 and seen[0][0] == polytope
    assert {k: v for k, v in seen[0][1].items() if v is not None} == params
    assert_array_equal(got, project(Z, polytope, **params))
    assert_array_equal(got, getattr(projections, name)(Z, *args, **kwargs))


@pytest.mark.parametrize("name, args, kwargs, polytope, params", NAMED)
def test_named_projections_on_cuda_without_cupy_are_a_clear_error(
        monkeypatch, name, args, kwargs, polytope, params):
    import sys

    import sparsekit.projections as projections

    monkeypatch.setitem(sys.modules, "cupy", None)      # makes `import cupy` fail
    with pytest.raises(ImportError, match="need CuPy"):
        getattr(projections, name)(np.zeros((2, 4)), *args, device="cuda", **kwargs)
