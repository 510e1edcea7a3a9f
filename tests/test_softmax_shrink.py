"""The line search on a softmax model's scale (sparsekit/optimize/_softmax_shrink.py):
the factor against a bounded scalar minimizer of the exact objective, scores of a diverged
fit, a calibrated model on a sample, and weights scaled without subnormals. The shrink in
ExtremeSoftmaxSGD's fits is tested in test_extreme_softmax.py."""
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from sparsekit.optimize._softmax_shrink import SHRINK_FLOOR, best_shrink


def _shrink_objective(s, S, y_idx, weights, ridge):
    """phi(s) of best_shrink, straight from its definition."""
    Z = s * S
    nll = logsumexp(Z, axis=1) - Z[np.arange(len(y_idx)), y_idx]
    return float(weights @ nll) + 0.5 * ridge * s * s


@pytest.mark.parametrize("spread, ridge", [(8.0, 0.0), (8.0, 0.5), (40.0, 0.0), (0.3, 0.0)])
def test_best_shrink_minimizes_the_objective_on_its_interval(spread, ridge):
    """The factor is the minimum over [SHRINK_FLOOR, 1] of the exact weighted NLL (plus the
    ridge) at s times the scores, found by a bounded scalar minimizer: below 1 for
    overconfident scores (most of the spread random), 1 where the minimum lies above 1
    (informative scores shrunk by 0.3)."""
    from scipy.optimize import minimize_scalar

    rng = np.random.default_rng(int(spread))
    y_idx = rng.integers(0, 7, 300)
    S = rng.normal(size=(300, 7)) * spread
    S[np.arange(300), y_idx] += 1.5 * spread         # the true class usually on top
    weights = rng.uniform(0.5, 2.0, 300)
    weights /= weights.sum()
    found = best_shrink(S, y_idx, weights, ridge)
    best = minimize_scalar(_shrink_objective, bounds=(SHRINK_FLOOR, 1.0),
                           args=(S, y_idx, weights, ridge), method="bounded",
                           options={"xatol": 1e-9})
    if spread < 1:                     # under-confident: phi still falls at s = 1
        assert found == 1.0 and best.x > 1.0 - 1e-6
    else:
        assert found < 1.0
        assert found == pytest.approx(best.x, rel=2e-4)
    assert _shrink_objective(found, S, y_idx, weights, ridge) <= best.fun + 1e-9


def test_best_shrink_of_a_diverged_fit_stays_finite():
    """Scores near 1e200 (a diverged fit's) are clipped where exp underflows at every
    factor: the factor is finite and in range, with no overflow warning; non-finite scores
    leave the weights as they are."""
    rng = np.random.default_rng(3)
    S = rng.normal(size=(50, 4)) * 1e200
    y_idx = rng.integers(0, 4, 50)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = best_shrink(S, y_idx, np.full(50, 1 / 50), 0.0)
    assert SHRINK_FLOOR <= found <= 1.0
    S[3, 2] = np.inf
    assert best_shrink(S, y_idx, np.full(50, 1 / 50), 0.0) == 1.0




def test_best_shrink_keeps_a_calibrated_model_on_a_sample():
    """Labels drawn from softmax(S) itself: the slope of the NLL at factor 1 is 0 in
    expectation, and a sample's noise in it (positive for some seeds) is not a reason to
    shrink (under SHRINK_Z standard errors); the same rows with the scores spread 3-fold
    are shrunk, by about 1/3."""
    kept = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        S = rng.normal(size=(400, 6)) * 2.0
        P = np.exp(S - logsumexp(S, axis=1, keepdims=True))
        y_idx = np.array([rng.choice(6, p=p) for p in P])
        weights = np.full(400, 1 / 400)
        kept.append(best_shrink(S, y_idx, weights, 0.0))
        assert best_shrink(3.0 * S, y_idx, weights, 0.0) == pytest.approx(
            1 / 3, rel=0.25)
    assert kept.count(1.0) >= 18
