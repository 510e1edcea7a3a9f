"""NQN Cython kernels and the free-set compact L-BFGS against slow, obvious references."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparsekit._cython import _nqn_kernels as K
from sparsekit.optimize._nqn_memory import FreeSetLBFGS


def _box(rng, n, at_bound=0.4):
    """Random box (with infinite sides), a feasible x with many coordinates at a bound."""
    lo = np.where(rng.random(n) < 0.2, -np.inf, rng.normal(size=n) - 1)
    hi = np.where(rng.random(n) < 0.2, np.inf, rng.normal(size=n) + 1)
    hi = np.maximum(hi, np.where(np.isfinite(lo), lo, hi))
    x = rng.normal(size=n)
    x = np.clip(x, lo, hi)
    u = rng.random(n)
    x = np.where((u < at_bound / 2) & np.isfinite(lo), lo, x)
    x = np.where((u > 1 - at_bound / 2) & np.isfinite(hi), hi, x)
    return x, lo, hi


def _T(x, p, lo, hi):
    out = p.copy()
    out[(x <= lo) & (p < 0)] = 0.0
    out[(x >= hi) & (p > 0)] = 0.0
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_elementwise_kernels_match_reference(n, seed):
    rng = np.random.default_rng(seed)
    x, lo, hi = _box(rng, n)
    p = rng.normal(size=n)
    p[rng.random(n) < 0.2] = 0.0  # ties: zero direction / gradient entries
    g = rng.normal(size=n)
    g[rng.random(n) < 0.2] = 0.0

    out = np.empty(n)
    K.project_point(x + 3 * p, lo, hi, out)
    np.testing.assert_array_equal(out, np.clip(x + 3 * p, lo, hi))
    K.trial_point(x, p, 0.7, lo, hi, out)
    with np.errstate(divide="ignore", invalid="ignore"):
        reached_hi = (p > 0) & (0.7 >= (hi - x) / p)
        reached_lo = (p < 0) & (0.7 >= (lo - x) / p)
    ref = np.where(reached_hi, hi, np.where(reached_lo, lo, np.clip(x + 0.7 * p, lo, hi)))
    np.testing.assert_array_equal(out, ref)

    nnz = K.project_direction(x, p, lo, hi, out)
    np.testing.assert_array_equal(out, _T(x, p, lo, hi))
    assert nnz == np.count_nonzero(_T(x, p, lo, hi))
    assert K.projected_gradient_norm(x, g, lo, hi) == np.max(np.abs(_T(x, -g, lo, hi)))
    assert np.isclose(K.projected_slope(x, g, p, lo, hi), g @ _T(x, p, lo, hi))

    active = np.zeros(n, dtype=np.uint8)
    count = K.binding_mask(x, g, lo, hi, active)
    ref = ((x <= lo) & (g >= 0)) | ((x >= hi) & (g <= 0))
    np.testing.assert_array_equal(active.astype(bool), ref)
    assert count == ref.sum()

    added = np.empty(n, dtype=np.intc)
    before = active.copy()
    c = K.correction_set(x, p, lo, hi, active, added)
    viol = (before == 0) & (_T(x, p, lo, hi) != p)
    np.testing.assert_array_equal(np.sort(added[:c]), np.flatnonzero(viol))
    np.testing.assert_array_equal(active.astype(bool), before.astype(bool) | viol)

    gam = np.full(n, -np.inf)
    up = (p > 0) & (x < hi)          # an infinite bound on the moving side: gamma = inf
    dn = (p < 0) & (x > lo)
    gam[up] = (hi[up] - x[up]) / p[up]
    gam[dn] = (lo[dn] - x[dn]) / p[dn]
    ref_u = gam.max() if (up | dn).any() else np.inf
    assert K.max_breakpoint(x, p, lo, hi) == ref_u


def test_gram_and_pair_products_match_numpy():
    rng = np.random.default_rng(0)
    n, m = 57, 5
    S, Y = rng.normal(size=(n, m)), rng.normal(size=(n, m))
    active = (rng.random(n) < 0.4).astype(np.uint8)
    free = active == 0
    SS, SY, YY = np.zeros((m, m)), np.zeros((m, m)), np.zeros((m, m))
    K.gram_update(S, Y, np.flatnonzero(free).astype(np.intc), 1.0, SS, SY, YY)
    np.testing.assert_allclose(SS, S[free].T @ S[free])
    np.testing.assert_allclose(SY, S[free].T @ Y[free])
    np.testing.assert_allclose(YY, Y[free].T @ Y[free])
    K.gram_update(S, Y, np.flatnonzero(free).astype(np.intc), -1.0, SS, SY, YY)
    np.testing.assert_allclose(SS, 0, atol=1e-12)

    s, y = rng.normal(size=n), rng.normal(size=n)
    full, fr = np.empty((4, m + 1)), np.empty((4, m + 1))
    K.pair_products(S, Y, s, y, active, full, fr)
    for rows, F in ((slice(None), full), (free, fr)):
        np.testing.assert_allclose(F[0, :m], S[rows].T @ s[rows])
        np.testing.assert_allclose(F[1, :m], S[rows].T @ y[rows])
        np.testing.assert_allclose(F[2, :m], Y[rows].T @ s[rows])
        np.testing.assert_allclose(F[3, :m], Y[rows].T @ y[rows])
        np.testing.assert_allclose(F[:3, m], [s[rows] @ s[rows], s[rows] @ y[rows],
                                              y[rows] @ y[rows]])

    g = rng.normal(size=n)
    sg, yg = np.empty(m), np.empty(m)
    K.free_products(S, Y, g, active, sg, yg)
    np.testing.assert_allclose(sg, S[free].T @ g[free])
    np.testing.assert_allclose(yg, Y[free].T @ g[free])


def _dense_bfgs(theta, pairs, n):
    """B from θI by the BFGS update (3.10), pairs oldest first."""
    B = theta * np.eye(n)
    for s, y in pairs:
        Bs = B @ s
        B = B + np.outer(y, y) / (y @ s) - np.outer(Bs, Bs) / (s @ Bs)
    return B


@pytest.mark.parametrize("m", [1, 3, 6])
def test_free_set_step_equals_dense_reduced_newton_step(m):
    """Compact free-set step == −B_FF⁻¹ g_F with B built densely, through many mask
    changes (incremental Gram updates) and more pushes than memory slots."""
    rng = np.random.default_rng(m)
    n = 30
    mem = FreeSetLBFGS(n, m)
    pairs = []
    for it in range(12):
        active = (rng.random(n) < 0.3).astype(np.uint8)
        mem.sync(active)
        g = rng.normal(size=n)
        theta = 0.5 + rng.random() * 3
        p = np.empty(n)
        mem.step(g, theta, p)
        # an Algorithm-3-style extra fixing of a few variables
        extra = np.flatnonzero(active == 0)[:2].astype(np.intc)
        active[extra] = 1
        mem.fix(extra)
        q = np.empty(n)
        mem.step(g, theta, q)
        for mask, step in ((active.copy(), q),):
            free = mask == 0
            B = _dense_bfgs(theta, pairs[-m:], n)
            ref = np.zeros(n)
            ref[free] = -np.linalg.solve(B[np.ix_(free, free)], g[free])
            np.testing.assert_allclose(step, ref, rtol=1e-8, atol=1e-10)
        s = rng.normal(size=n)
        y = s * (1 + rng.random(n)) + 0.1 * rng.normal(size=n)
        if s @ y > 0:
            mem.push(s, y)
            pairs.append((s, y))


def test_trial_point_just_short_of_the_breakpoint_stays_in_the_box():
    """alpha one ulp below the computed breakpoint fl((u - x)/d) can still carry x + alpha d
    past the bound (the division rounded up): the point is clipped, never left outside."""
    rng = np.random.default_rng(1)
    n = 4000
    x = -rng.random(n) * 10 ** rng.uniform(-3, 17, n)
    hi = rng.random(n) * 10 ** rng.uniform(-20, 3, n)
    d = rng.random(n) * 10 ** rng.uniform(-3, 3, n)
    alpha = np.nextafter((hi - x) / d, -np.inf)
    past = x + alpha * d > hi
    assert past.sum() >= 20   # the rounding case is common, not exotic
    out = np.empty(1)
    for i in np.flatnonzero(past)[:40]:
        inf = np.array([-np.inf])
        # upper side, and the mirrored lower side (x -> -x, d -> -d, l = -u)
        K.trial_point(x[i:i + 1], d[i:i + 1], alpha[i], inf, hi[i:i + 1], out)
        assert out[0] == hi[i]
        K.trial_point(-x[i:i + 1], -d[i:i + 1], alpha[i], -hi[i:i + 1], -inf, out)
        assert out[0] == -hi[i]


def test_binding_mask_counts_variables_already_active():
    """binding_mask ORs 𝓑(g) into ``active`` and returns the size of the union, counting
    variables fixed by an earlier call (_nqn calls it repeatedly on one mask)."""
    rng = np.random.default_rng(2)
    n = 50
    x, lo, hi = _box(rng, n)
    g = rng.normal(size=n)
    before = (rng.random(n) < 0.3).astype(np.uint8)
    active = before.copy()
    count = K.binding_mask(x, g, lo, hi, active)
    ref = before.astype(bool) | ((x <= lo) & (g >= 0)) | ((x >= hi) & (g <= 0))
    np.testing.assert_array_equal(active.astype(bool), ref)
    newly = ref & ~before.astype(bool)
    assert count == ref.sum() > newly.sum()


def _compact_inputs(m, k):
    """Gram matrices of k random pairs in m slots (slots in a rotated time order)."""
    rng = np.random.default_rng(k)
    n = 12
    S, Y = rng.normal(size=(n, m)), rng.normal(size=(n, m))
    order = np.roll(np.arange(m), 2)[:k].astype(np.intc)
    SS, SY = S.T @ S, S.T @ Y
    free = rng.random(n) < 0.6
    Sf, Yf = S[free], Y[free]
    g = rng.normal(size=n)
    return (SS, SY, Sf.T @ Sf, Sf.T @ Yf, Yf.T @ Yf, order), Sf.T @ g[free], Yf.T @ g[free]


def test_compact_coefficients_zero_the_slots_outside_the_order():
    """zs/zy receive z at the slots of ``order`` and exact zeros elsewhere, whatever they
    held (free_step multiplies every slot; a stale NaN would poison the step)."""
    m, k, theta = 5, 3, 1.7
    grams, sg, yg = _compact_inputs(m, k)
    SS, SY, SSf, SYf, YYf, order = grams
    zs, zy = np.full(m, np.nan), np.full(m, np.nan)
    A, rhs, ipiv = np.empty((2 * m, 2 * m), order="F"), np.empty(2 * m), np.empty(2 * m, np.intc)
    assert K.compact_coefficients(SS, SY, SSf, SYf, YYf, order, theta, sg, yg, zs, zy, A,
                                  rhs, ipiv) == 0
    # the 2k x 2k matrix of the docstring, built densely
    o = np.asarray(order)
    L = np.tril(SY[np.ix_(o, o)], -1)
    D = np.diag(np.diag(SY[np.ix_(o, o)]))
    Lf = L - SYf[np.ix_(o, o)]
    Mat = np.block([[-D - YYf[np.ix_(o, o)] / theta, Lf.T],
                    [Lf, theta * (SS[np.ix_(o, o)] - SSf[np.ix_(o, o)])]])
    z = np.linalg.solve(Mat, np.concatenate([yg[o], theta * sg[o]]))
    rest = np.setdiff1d(np.arange(m), o)
    np.testing.assert_array_equal(zs[rest], 0.0)
    np.testing.assert_array_equal(zy[rest], 0.0)
    np.testing.assert_allclose(zy[o], z[:k], rtol=1e-10)
    np.testing.assert_allclose(zs[o], z[k:], rtol=1e-10)


def test_compact_coefficients_report_a_non_finite_solution():
    """A nonsingular system whose solution overflows (s^T y ~ 1e-300 on the diagonal)
    returns -1, not LAPACK's 0; FreeSetLBFGS.step turns it into LinAlgError."""
    m, theta = 1, 1.0
    SS, SY, Z = np.ones((m, m)), np.full((m, m), 1e-300), np.zeros((m, m))
    order = np.zeros(1, np.intc)
    zs, zy = np.empty(m), np.empty(m)
    A, rhs, ipiv = np.empty((2, 2), order="F"), np.empty(2), np.empty(2, np.intc)
    sg, yg = np.ones(m), np.full(m, 1e10)   # zy = -1e10 / 1e-300 = -inf
    assert K.compact_coefficients(SS, SY, Z, Z, Z, order, theta, sg, yg, zs, zy, A, rhs,
                                  ipiv) == -1
    assert np.all(np.isfinite(zs)) and np.all(np.isfinite(zy))
