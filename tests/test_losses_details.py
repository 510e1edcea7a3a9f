"""Loss and projection details from a mutation review of sparsekit/losses and
sparsekit/projections (the Python layer): float64 scoring, log-space double-sum terms at
huge gaps, unsigned labels, target-membership tolerances and errors."""
import numpy as np
import pytest
from scipy.special import logsumexp

from sparsekit.losses import (double_sum_objective, fenchel_young_loss,
                              optimal_u, softmax_nll,
                              sparsemax_loss)


def _nll_rows(S, y):
    """Slow reference: per-row NLL ``logsumexp(s) - s_y`` (scipy, float64)."""
    return logsumexp(S, axis=1) - S[np.arange(len(y)), y]


# ---------------------------------------------------------------- softmax helpers

def test_optimal_u_is_the_per_example_nll_at_huge_gaps():
    """u* = log(1 + sum_{k != y} e^{s_k}) is evaluated in log space: gaps of 1e3 give
    u* = 1e3 + O(1), not inf."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    W = np.array([[0.0, 0.0], [1000.0, 0.0], [0.0, 2000.0]])
    y = np.array([0, 0, 1])
    u = optimal_u(X, y, W)
    assert np.all(np.isfinite(u))
    np.testing.assert_allclose(u, _nll_rows(X @ W.T, y), rtol=1e-14)


def test_double_sum_objective_equals_nll_at_optimal_u_for_huge_gaps():
    """At u = u* the double-sum objective is the NLL even where e^{u*} overflows
    (the ratio (1 + sum e^s) / e^u is formed in log space)."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    W = np.array([[0.0, 0.0], [800.0, 0.0], [0.0, 900.0]])
    y = np.array([0, 0])
    u = _nll_rows(X @ W.T, y)                       # the exact u*, ~ 800 and 900
    value = double_sum_objective(X, y, W, u)
    assert np.isfinite(value)
    assert value == pytest.approx(softmax_nll(X, y, W), rel=1e-13)


# ---------------------------------------------------------------- Fenchel-Young targets

@pytest.mark.parametrize("dtype", [np.uint8, np.uint64, np.int32])
def test_sparsemax_loss_takes_unsigned_labels(dtype):
    """Unsigned integer labels are class indices, as signed ones are (not distributions)."""
    Z = np.array([[0.5, 0.1, -0.2], [1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    labels = np.array([0, 2, 1])
    onehot = np.eye(3)[labels]
    np.testing.assert_allclose(sparsemax_loss(Z, labels.astype(dtype)),
                               fenchel_young_loss(Z, onehot), rtol=1e-14)


def test_target_tolerance_is_1e6_in_float64_and_1e4_in_float32():
    """A simplex target whose sum is off by 2e-5 is refused in float64 and accepted in
    float32 (documented tolerances of check_target)."""
    z = np.array([0.5, 0.1, -0.2])
    y = np.array([0.5, 0.5 + 2e-5, 0.0])
    with pytest.raises(ValueError, match="outside the 'simplex' polytope"):
        fenchel_young_loss(z, y)
    assert np.isfinite(fenchel_young_loss(z.astype(np.float32), y.astype(np.float32)))
    y_far = np.array([0.5, 0.5 + 2e-3, 0.0], dtype=np.float32)
    with pytest.raises(ValueError, match="outside the 'simplex' polytope"):
        fenchel_young_loss(z.astype(np.float32), y_far)


def test_target_sum_tolerance_scales_with_the_radius():
    """The sum check is relative for a large radius: a target of radius 1e12 whose float64
    sum carries only rounding error (~1e-4 absolute, 1e-16 relative) is inside."""
    r = 1e12
    y = np.array([r / 3, r / 3, r - 2 * (r / 3) + 2e-4])
    assert abs(y.sum() - r) > 1e-6                 # far above an absolute 1e-6 slack
    z = np.array([0.5, 0.1, -0.2])
    assert fenchel_young_loss(z, y, "simplex", radius=r) >= 0
    with pytest.raises(ValueError, match="outside"):    # a real 1e-3 relative miss is not
        fenchel_young_loss(z, y * (1 + 1e-3), "simplex", radius=r)


def test_target_error_names_the_flip_only_with_negated_columns():
    z = np.array([0.5, 0.1, -0.2])
    y = np.array([0.7, 0.7, 0.0])
    with pytest.raises(ValueError) as info:
        fenchel_young_loss(z, y)
    assert "negated" not in str(info.value)
    with pytest.raises(ValueError, match=r"columns \[2\] negated"):
        fenchel_young_loss(z, np.array([0.7, 0.7, 0.5]), negated=[False, False, True])

