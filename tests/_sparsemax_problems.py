"""Small weighted problems of SparsemaxClassifier and the datafit its solvers see."""
import numpy as np

from sparsekit.linear_model import SparsemaxClassifier
from sparsekit.losses._fenchel_young_datafit import FenchelYoungLinear


def make_data(n=40, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 2.0          # a nonzero feature mean: centering
    y = rng.integers(0, k, n)
    sw = rng.uniform(0.2, 3.0, n)
    sw[:3] = 0.0                                   # zero weights too
    return X, y, sw


def make_datafit(X, y, sw, polytope="simplex", alpha=0.1, fit_intercept=True, penalize=False,
                 weight_scale=1.0):
    """The solvers' objective for labels ``y``, as SparsemaxClassifier builds it."""
    clf = SparsemaxClassifier(alpha=alpha, polytope=polytope, fit_intercept=fit_intercept,
                              penalize_intercept=penalize)
    budget = clf._check_budget()
    Yt = clf._encode_targets(y, budget)[0]
    return FenchelYoungLinear(X, Yt, sw, polytope=polytope, budget=budget, alpha=alpha,
                              fit_intercept=fit_intercept, penalize_intercept=penalize,
                              center=fit_intercept and not penalize,
                              weight_scale=weight_scale)
