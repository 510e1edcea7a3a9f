"""Property-based tests (hypothesis): output in the polytope, idempotence, KKT conditions,
shift invariance (simplex, unweighted capped simplex), permutation equivariance, and the
Fenchel-Young loss's non-negativity and zero at its own projection."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import _projection_reference as ref
from sparsekit.losses import fenchel_young_loss
from sparsekit.projections import project, sparsemax

FINITE = st.floats(-50, 50, allow_nan=False, allow_infinity=False, width=64)
TIES = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0])
ROWS = st.integers(1, 8).flatmap(
    lambda k: st.lists(st.one_of(FINITE, TIES), min_size=k, max_size=k)).map(np.array)


@st.composite
def polytopes(draw, k):
    name = draw(st.sampled_from(["simplex", "capped_simplex", "knapsack", "budget", "box",
                                 "at_least_one", "at_most_one"]))
    params = {}
    weighted = name in ("capped_simplex", "knapsack") and draw(st.booleans())
    w = np.array(draw(st.lists(st.floats(0.25, 4), min_size=k, max_size=k))) if weighted \
        else np.ones(k)
    if weighted:
        params["weights"] = w
    if name == "simplex":
        params["radius"] = draw(st.sampled_from([1.0, 0.5, 3.0]))
    elif name == "capped_simplex":
        params["budget"] = draw(st.floats(0.0, 1.0)) * w.sum()
    elif name in ("knapsack", "budget"):
        params["budget"] = draw(st.floats(0.0, 2.0 * k))
    return name, params


def kkt_holds(z, p, name, params, tol=1e-8):
    """p = clip(z - tau w, 0, upper) for some tau with the sign/complementarity of the
    polytope's sum constraint (interval intersection over the coordinates)."""
    upper, rel, b, w = ref._spec(name, z.size, params)
    if not ref._feasible(p, upper, rel, b, w, tol=1e-9 * max(1, abs(z).max())):
        return False
    lo, hi = -np.inf, np.inf
    scale = tol * max(1.0, abs(z).max())
    for zi, pi, wi in zip(z, p, w):
        if pi <= scale:
            lo = max(lo, (zi - scale) / wi)
        elif pi >= upper - scale:
            hi = min(hi, (zi - upper + scale) / wi)
        else:
            t = (zi - pi) / wi
            lo, hi = max(lo, t - scale / wi), min(hi, t + scale / wi)
    s = w @ p
    if rel is None or (rel == "le" and s < b - scale) or (rel == "ge" and s > b + scale):
        lo, hi = max(lo, -scale), min(hi, scale)                 # tau = 0
    elif rel == "le":
        lo = max(lo, -scale)
    elif rel == "ge":
        hi = min(hi, scale)
    return lo <= hi + scale


@settings(max_examples=300, deadline=None)
@given(data=st.data(), z=ROWS)
def test_projection_kkt_idempotence(data, z):
    name, params = data.draw(polytopes(z.size))
    p = project(z, name, **params)
    assert kkt_holds(z, p, name, params)
    assert_allclose(project(p, name, **params), p, atol=1e-12 * max(1, abs(z).max()))
    y = project(z[::-1] * 0.5 + 0.25, name, **params)       # some target in the polytope
    assert fenchel_young_loss(z, y, name, **params) >= -1e-9 * max(1, abs(z).max()) ** 2
    assert abs(fenchel_young_loss(p, p, name, **params)) <= 1e-12 * max(1, abs(z).max())


@settings(max_examples=200, deadline=None)
@given(z=ROWS, c=FINITE, seed=st.integers(0, 2**32 - 1))
def test_sparsemax_shift_permutation(z, c, seed):
    p = sparsemax(z)
    assert_allclose(sparsemax(z + c), p, atol=1e-12)
    assert_allclose(sparsemax(z, method="sort"), p, atol=1e-12)
    perm = np.random.default_rng(seed).permutation(z.size)
    assert_allclose(sparsemax(z[perm]), p[perm], atol=1e-15)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), z=ROWS, seed=st.integers(0, 2**32 - 1))
def test_permutation_equivariance_and_capped_shift(data, z, seed):
    name, params = data.draw(polytopes(z.size))
    params.pop("weights", None)
    if name == "capped_simplex":
        params["budget"] = min(params["budget"], z.size)
        c = data.draw(FINITE)
        assert_allclose(project(z + c, name, **params), project(z, name, **params),
                        atol=1e-12 * max(1, abs(z).max(), abs(c)))
    perm = np.random.default_rng(seed).permutation(z.size)
    assert_allclose(project(z[perm], name, **params), project(z, name, **params)[perm],
                    atol=1e-13 * max(1, abs(z).max()))


@settings(max_examples=100, deadline=None)
@given(z=st.integers(1, 5).flatmap(
    lambda k: st.lists(st.sampled_from([-1.0, 0.0, 0.5, 1.0, 1.5]), min_size=k,
                       max_size=k)).map(np.array), data=st.data())
def test_tie_heavy_rows_against_enumeration(z, data):
    name, params = data.draw(polytopes(z.size))
    assert_allclose(project(z, name, **params), ref.brute_force(z, name, **params),
                    atol=1e-12)
