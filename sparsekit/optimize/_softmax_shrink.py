"""The line search on a softmax model's scale that ends ExtremeSoftmaxSGD's fit.

:func:`best_shrink` finds the factor s in [SHRINK_FLOOR, 1] by which to scale the weights
(every class score s times its value: the scores' order, hence the predicted classes, kept)
that minimizes the mean NLL of training rows plus the ridge, as temperature scaling does on
held-out rows (Guo et al. 2017, with the temperature 1/s). The estimator decides when to
shrink and on which rows, and scales its weights by the factor found
(:func:`~sparsekit._cython._softmax_sgd.scale_flush`).
"""
import numpy as np

#: the factor is never below this (a positive one keeps the scores' order, ``predict``)
SHRINK_FLOOR = 1e-3
#: the factor stays 1 unless the objective's slope at 1 exceeds this many of its standard
#: errors over the rows (the rows may be a sample of the training rows)
SHRINK_Z = 2.0


def best_shrink(S, y_idx, weights, ridge):
    """The factor s in [SHRINK_FLOOR, 1] minimizing phi(s) = sum_i w_i NLL_i(s S_i) +
    ridge s^2 / 2 (``weights`` summing to 1, S the rows' scores, ``y_idx`` their classes):
    1 where phi does not rise through s = 1 by more than SHRINK_Z standard errors of its
    slope there, else phi's convex minimum found by Newton's method inside a shrinking
    bracket, to a relative 1e-4. Non-finite scores give 1."""
    if not np.isfinite(S).all():
        return 1.0
    S = S - S.max(axis=1, keepdims=True)        # s > 0: the shift of every s S_i
    # exp(s S) is 0 below -745 / SHRINK_FLOOR at every factor tried: clipped there, so that
    # the squares of a diverged fit's scores stay finite
    np.maximum(S, -745.0 / SHRINK_FLOOR, out=S)
    S_squared = S * S
    true = S[np.arange(S.shape[0]), y_idx]
    E = np.empty_like(S)

    def slopes_curvature(s):
        """Each row's slope, phi's slope and phi's curvature at s."""
        np.multiply(S, s, out=E)
        np.exp(E, out=E)
        total = E.sum(axis=1)
        mean = np.einsum("ij,ij->i", E, S) / total
        variance = np.einsum("ij,ij->i", E, S_squared) / total - mean * mean
        rows = mean - true
        return (rows, float(weights @ rows) + ridge * s,
                float(weights @ np.maximum(variance, 0.0)) + ridge)

    low, high, s = SHRINK_FLOOR, 1.0, 1.0
    rows, slope, curvature = slopes_curvature(s)
    # the rows are a sample: shrink only where phi's slope at 1 exceeds SHRINK_Z standard
    # errors (a model at the optimum of all the rows has a slope of about 0 on any sample)
    error = float(np.sqrt(weights * weights @ (rows - (slope - ridge)) ** 2))
    if slope <= SHRINK_Z * error:
        return 1.0
    while high - low > 1e-4 * high:
        if slope > 0.0:
            high = s
        else:
            low = s
        step = s - slope / curvature if curvature > 0.0 else -np.inf
        previous, s = s, step if low < step < high else 0.5 * (low + high)
        if abs(s - previous) <= 1e-4 * s:
            break
        _, slope, curvature = slopes_curvature(s)
    return float(s)
