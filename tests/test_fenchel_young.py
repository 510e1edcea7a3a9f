"""Sparsemax and Fenchel-Young losses: notes/sparsemax_report.md 4.1 items 9-13 and 4.2-4.3,
notes/lp_sparsemap.md sections 0 and 2 (closed forms, gradients, target validation)."""
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import _projection_reference as ref
from sparsekit.losses import fenchel_young_loss, fenchel_young_loss_and_grad, sparsemax_loss
from sparsekit.projections import project, sparsemax

# the unit simplex only: FY targets of the simplex are probability rows
CASES = [case for case in ref.POLYTOPE_CASES if "radius" not in case[1]]


def one_hot(labels, k):
    return np.eye(k)[labels]


def eq8(z, q):
    """Martins & Astudillo closed form (notes eq. 8) with a sort-based tau."""
    p = ref.numpy_sparsemax(z[None])[0]
    s = p > 0
    tau = (z[s].sum() - 1) / s.sum()
    return 0.5 * (z[s] ** 2 - tau ** 2).sum() + 0.5 * q @ q - q @ z


@pytest.mark.parametrize("z, label, expected", [
    ([5, 3, 7, 0], 2, 0.0),                   # 4.1 item 13
    ([3.6, 2.7, 3.5, 0], 2, 0.3025),
])
def test_hard_coded_examples(z, label, expected):
    z = np.array(z, dtype=float)
    assert_allclose(sparsemax_loss(z, one_hot(label, 4)), expected, atol=1e-14)
    assert_allclose(sparsemax_loss(z[None], np.array([label])), [expected], atol=1e-14)


def test_two_class_huber_shape():  # 4.2
    t = np.arange(-3, 3.01, 0.5)
    Z = np.c_[t, np.zeros_like(t)]
    got = sparsemax_loss(Z, np.zeros(len(t), dtype=int))
    assert_allclose(got, [3.0, 2.5, 2.0, 1.5, 1.0, 0.5625, 0.25, 0.0625, 0, 0, 0, 0, 0],
                    atol=1e-15)


def test_closed_forms_agree():  # eq. 8 == eq. 10 == FY form, multi-label q (4.2)
    rng = np.random.default_rng(0)
    Z = rng.uniform(-3, 3, size=(100, 10))
    Y = (rng.random((100, 10)) < 0.3).astype(float)
    Y[Y.sum(1) == 0, 0] = 1
    Q = Y / Y.sum(1, keepdims=True)
    loss = sparsemax_loss(Z, Q)
    assert_allclose(loss, [eq8(z, q) for z, q in zip(Z, Q)], atol=1e-13)
    P = sparsemax(Z)
    fy = 0.5 * ((Q - Z) ** 2).sum(1) - 0.5 * ((P - Z) ** 2).sum(1)
    assert_allclose(loss, fy, atol=1e-12)
    assert (loss >= 0).all()
    # L(q + c 1; q) = 0, and 1/2 ||q||^2 (not the 1/2 sum q of the reference code, 4.3)
    assert_allclose(sparsemax_loss(Q + rng.normal(size=(100, 1)), Q), 0.0, atol=1e-14)


def test_shift_invariance_nonnegativity_margin():  # 4.1 items 9-11
    rng = np.random.default_rng(1)
    Z = rng.uniform(-3, 3, size=(100, 10))
    labels = rng.integers(0, 10, size=100)
    loss = sparsemax_loss(Z, labels)
    assert (loss >= 0).all()
    assert_allclose(sparsemax_loss(Z + rng.uniform(-3, 3, size=(100, 1)), labels), loss,
                    atol=1e-13)
    Zm = Z.copy()
    Zm[:, 0] = Z.max(1) + 1.05
    assert_array_equal(sparsemax_loss(Zm, np.zeros(100, dtype=int)), 0.0)
    assert_array_equal(sparsemax(Zm), one_hot(np.zeros(100, dtype=int), 10))
    Zm[:, 0] = Z[:, 1:].max(1) + 0.9
    assert (sparsemax_loss(Zm, np.zeros(100, dtype=int)) > 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loss_with_huge_offsets(dtype):  # 2.3: float32 loss 6.25e4 instead of 3.148
    rng = np.random.default_rng(2)
    Z = rng.uniform(-3, 3, size=(200, 10))
    labels = rng.integers(0, 10, size=200)
    expected = sparsemax_loss(Z, labels)
    for offset in (1e6, -1e6):
        Zo = (Z + offset).astype(dtype)
        exact = sparsemax_loss(Zo.astype(np.float64) - offset, labels)
        assert_allclose(sparsemax_loss(Zo, labels), exact, atol=2e-5)
        assert_allclose(exact, expected, atol=0.2)


@pytest.mark.parametrize("polytope, params", CASES)
def test_gradient_is_projection_minus_target(polytope, params):
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(50, 6)) * 1.5
    Y = project(rng.normal(size=(50, 6)) * 2, polytope, **params)       # targets inside
    loss, grad = fenchel_young_loss_and_grad(Z, Y, polytope, **params)
    assert_allclose(grad, project(Z, polytope, **params) - Y, atol=1e-15)
    assert_allclose(loss, fenchel_young_loss(Z, Y, polytope, **params))
    V = rng.normal(size=Z.shape)
    fd = ref.finite_difference_jvp(
        lambda x: fenchel_young_loss(x, Y, polytope, **params), Z, V, eps=1e-6)
    assert_allclose(fd, (grad * V).sum(1), atol=1e-7)
    assert (loss >= -1e-14).all()
    # zero exactly at targets that are their own projection
    assert_allclose(fenchel_young_loss(Y, Y, polytope, **params), 0.0, atol=1e-14)


def test_box_loss_is_modified_huber():  # lp_sparsemap section 2, multilabel box
    eta = np.linspace(-2, 2, 41)
    on = fenchel_young_loss(eta[:, None], np.ones((41, 1)), "box")
    assert_allclose(on, np.where(eta >= 1, 0, np.where(eta >= 0, (1 - eta) ** 2 / 2,
                                                       0.5 - eta)), atol=1e-15)
    off = fenchel_young_loss(-eta[:, None] + 1, np.zeros((41, 1)), "box")
    assert_allclose(off, on, atol=1e-15)


def test_budget_target_outside_polytope_is_rejected():  # lp_sparsemap section 2 caveat
    with pytest.raises(ValueError, match="label count"):
        fenchel_young_loss([1, 1, 1, -1], [1, 1, 1, 0], "budget", budget=2)
    # the same target is fine once the budget covers its label count
    assert fenchel_young_loss([1, 1, 1, -1], [1, 1, 1, 0], "budget", budget=3) >= 0


@pytest.mark.parametrize("Y, polytope, params, match", [
    ([[0.5, 0.6, -0.1]], "simplex", {}, "negative"),
    ([[0.5, 0.6, 0.1]], "simplex", {}, "outside"),
    ([[0.0, 0.0, 0.0]], "at_least_one", {}, "outside"),
    ([[1.0, 1.0, 0.0]], "at_most_one", {}, "outside"),
    ([[1.5, 0.0, 0.0]], "box", {}, "> 1"),
    ([[1.0, 0.5, 0.0]], "capped_simplex", {"budget": 2.0}, "outside"),
    ([[1.0, 1.0, 0.0]], "knapsack", {"budget": 2.0, "weights": [1, 2, 1]}, "outside"),
    ([[np.nan, 1.0, 0.0]], "simplex", {}, "NaN"),
    ([[1.0, 0.0]], "simplex", {}, "shape"),
])
def test_bad_targets(Y, polytope, params, match):
    with pytest.raises(ValueError, match=match):
        fenchel_young_loss([[0.2, 0.1, 0.0]], Y, polytope, **params)


def test_labels_and_shapes():
    Z = np.random.default_rng(4).normal(size=(5, 4))
    labels = np.array([0, 3, 1, 1, 2])
    assert_allclose(sparsemax_loss(Z, labels), sparsemax_loss(Z, one_hot(labels, 4)))
    assert isinstance(sparsemax_loss(Z[0], one_hot(0, 4)), float)
    assert sparsemax_loss(Z.astype(np.float32), labels).dtype == np.float64
    for bad in (np.array([0, 4, 1, 1, 2]), np.array([0, -1, 1, 1, 2]), np.array([0, 1])):
        with pytest.raises(ValueError):
            sparsemax_loss(Z, bad)
    loss, grad = fenchel_young_loss_and_grad(Z[0], one_hot(1, 4))
    assert isinstance(loss, float) and grad.shape == (4,)
    # simplex rows within float32 rounding of 1 are accepted
    Y32 = (np.full((5, 4), 1 / 3 * 0.75)).astype(np.float32)
    assert fenchel_young_loss(Z.astype(np.float32), Y32).shape == (5,)


def test_weighted_float32_losses_are_solved_in_float64():
    """As project(): float32 weights and sort keys misorder the weighted sweep, and a
    weight below the float32 range rounds to 0; the loss at y = proj(z) is 0."""
    z = np.float32([3.43, -3.36, 3.03, -4.19, -1.03, 3.73, -4.17, -1.36, 0.61])
    w = [398.3, 1.45, 0.0238, 0.163, 1.96, 2.24e-4, 7319.6, 26.4, 6.18e-4]
    y = project(z, "capped_simplex", budget=7392.0, weights=w)
    loss, grad = fenchel_young_loss_and_grad(z, y, "capped_simplex", budget=7392.0, weights=w)
    assert abs(loss) < 1e-5 and grad.dtype == np.float32
    assert_allclose(grad, 0, atol=1e-6)
    loss, grad = fenchel_young_loss_and_grad(np.float32([0.9, 0.8, 0.2]),
                                             np.float32([0.5, 0, 0.5]), "capped_simplex",
                                             budget=1.0, weights=[1, 1e-50, 1])
    assert_allclose(grad, [0.35, 0.8, -0.35], atol=1e-6)
    assert np.isfinite(loss)


@pytest.mark.parametrize("polytope, params", [("box", {}), ("budget", {"budget": 1.0}),
                                              ("at_most_one", {})])
def test_loss_is_finite_where_its_value_is(polytope, params):
    """1/2 ||y - z||^2 - 1/2 ||p - z||^2 = 1e308 here; summing 2 d z before halving gave inf."""
    assert fenchel_young_loss([1e308, 0.0], [0.0, 1.0], polytope, **params) == 1e308
