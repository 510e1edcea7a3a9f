"""ExtremeSoftmaxSGD kernels: reference epochs, unbiasedness, U-max reset (notes §1.3-1.6)."""
import itertools

import numpy as np
import scipy.sparse as sp
import pytest
from scipy.optimize import brentq
from scipy.special import expit, lambertw, logsumexp

import _softmax_reference as ref
from sparsekit._cython._implicit_sgd import implicit_step
from sparsekit._cython._softmax_sgd import METHODS, sampled_gradient, scale_flush
from sparsekit.losses import double_sum_gradient, optimal_u, ove_gradient, softmax_nll

EXPLICIT = ["umax", "sgd", "ove", "sampled_softmax", "nce"]


def _problem(seed=0, N=15, D=5, K=7, scale=0.7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    X[3] = 0.0                                   # an empty row
    X[rng.random((N, D)) < 0.3] = 0.0
    y = rng.integers(0, K, size=N)
    y[:K] = np.arange(K)
    W = rng.normal(scale=scale, size=(K, D))
    u = rng.uniform(0.0, 2.0, size=N)
    return X, y, W, u, rng.permutation(N)


@pytest.mark.parametrize("method", EXPLICIT)
@pytest.mark.parametrize("batch_size,alpha,m", [(1, 0.0, 1), (3, 0.0, 2), (1, 0.4, 3), (4, 0.2, 6)])
def test_explicit_epoch_matches_reference(method, batch_size, alpha, m):
    X, y, W, u, order = _problem()
    eta = 0.01 if method == "sgd" else 0.3      # vanilla SGD overflows at 0.3 here
    Wr, ur = ref.reference_epoch(method, X, y, W, u, order, 123, m, batch_size, eta, alpha, 1.0)
    for sparse in (False, True):
        Wk, uk, status, _ = ref.kernel_epoch(method, X, y, W, u, order, 123, m, batch_size,
                                             eta, alpha, 1.0, sparse=sparse)
        assert status == 0
        np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(uk, ur, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", EXPLICIT)
@pytest.mark.parametrize("batch_size,alpha,m", [(3, 0.0, 2), (4, 0.2, 6), (5, 0.4, 3)])
def test_shared_class_epoch_matches_reference(method, batch_size, alpha, m):
    """One class set per batch, the label swapped out where the set holds it (m = 6 of
    K = 7 classes: almost every example needs the swap)."""
    X, y, W, u, order = _problem()
    eta = 0.01 if method == "sgd" else 0.3
    Wr, ur = ref.reference_epoch(method, X, y, W, u, order, 7, m, batch_size, eta, alpha, 1.0,
                                 shared=True)
    Wi, _ = ref.reference_epoch(method, X, y, W, u, order, 7, m, batch_size, eta, alpha, 1.0)
    if m < W.shape[0] - 1:                       # else every wrong class is drawn either way
        assert np.abs(Wr - Wi).max() > 1e-3
    for write_intent in (False, True):
        Wk, uk, status, _ = ref.kernel_epoch(method, X, y, W, u, order, 7, m, batch_size,
                                             eta, alpha, 1.0, sparse=True, shared_classes=True,
                                             write_intent=write_intent)
        assert status == 0
        np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(uk, ur, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["implicit", "umax", "ove"])
def test_float32_kernel_close_to_float64(method):
    X, y, W, u, order = _problem(1)
    W64, u64, _, _ = ref.kernel_epoch(method, X, y, W, u, order, 5, 2 if method != "implicit"
                                      else 1, 1, 0.2, 0.1, 1.0)
    W32, u32, _, _ = ref.kernel_epoch(method, X, y, W, u, order, 5, 2 if method != "implicit"
                                      else 1, 1, 0.2, 0.1, 1.0, sparse=True, dtype=np.float32)
    np.testing.assert_allclose(W32, W64, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(u32, u64, rtol=1e-4, atol=1e-5)


def test_sample_weight_scales_the_step():
    X, y, W, u, order = _problem(2)
    sw = np.linspace(0.0, 2.0, X.shape[0])
    Wr, ur = ref.reference_epoch("umax", X, y, W, u, order, 9, 2, 1, 0.2, 0.1, 1.0, sw)
    Wk, uk, _, _ = ref.kernel_epoch("umax", X, y, W, u, order, 9, 2, 1, 0.2, 0.1, 1.0, sw)
    np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-12)


def _mc(method, X, y, W, u, m, alpha, draws=300_000, seed=3, shared_batch=0):
    K = W.shape[0]
    counts = np.bincount(y, minlength=K) / len(y)
    beta = 1.0 / (counts + (1 - counts) * m / (K - 1))
    return sampled_gradient(METHODS[method], X, y.astype(np.intp), W, u, beta, m, alpha, 1.0,
                            draws, seed, shared_batch)


@pytest.mark.parametrize("method,m,alpha", [("sgd", 1, 0.0), ("sgd", 3, 0.5), ("umax", 2, 0.3),
                                            ("ove", 1, 0.0), ("ove", 4, 0.2)])
def test_stochastic_gradient_is_unbiased(method, m, alpha):
    """Monte-Carlo mean of the one-example gradients = exact gradient (acceptance 1)."""
    rng = np.random.default_rng(0)
    N, D, K = 5, 3, 6
    X = rng.normal(size=(N, D)) / 2
    y = np.array([0, 1, 1, 4, 5])
    W = rng.normal(scale=0.5, size=(K, D))
    u = optimal_u(X, y, W) + rng.uniform(0, 0.5, N)   # >= the U-max bound: no reset
    gW, gu = _mc(method, X, y, W, u, m, alpha)
    if method == "ove":
        eW, eu = ove_gradient(X, y, W, alpha), np.zeros(N)
    else:
        eW, eu = double_sum_gradient(X, y, W, u, alpha)
    scale = max(np.abs(eW).max(), 1e-3)
    assert np.abs(gW - eW).max() < 0.02 * scale
    assert np.abs(gu - eu).max() < 0.02 * max(np.abs(eu).max(), 1e-3) + 1e-12


@pytest.mark.parametrize("method,m,alpha", [("sgd", 2, 0.0), ("umax", 3, 0.3), ("ove", 1, 0.0),
                                            ("ove", 4, 0.2)])
def test_shared_class_gradient_is_unbiased(method, m, alpha):
    """With one class set per group of 5 draws (``shared_classes``), each example's set is
    still uniform among its wrong classes: same mean as the exact gradient. K = 6 makes the
    set hold the label often (m = 4: two times in three), so a biased swap would show."""
    rng = np.random.default_rng(1)
    N, D, K = 5, 3, 6
    X = rng.normal(size=(N, D)) / 2
    y = np.array([0, 1, 1, 4, 5])
    W = rng.normal(scale=0.5, size=(K, D))
    u = optimal_u(X, y, W) + rng.uniform(0, 0.5, N)
    gW, gu = _mc(method, X, y, W, u, m, alpha, shared_batch=5)
    if method == "ove":
        eW, eu = ove_gradient(X, y, W, alpha), np.zeros(N)
    else:
        eW, eu = double_sum_gradient(X, y, W, u, alpha)
    assert np.abs(gW - eW).max() < 0.02 * max(np.abs(eW).max(), 1e-3)
    assert np.abs(gu - eu).max() < 0.02 * max(np.abs(eu).max(), 1e-3) + 1e-12


def test_biased_shared_swap_is_detected():
    """Negative control for the test above: keeping a batch's set as drawn (the label left
    in, as TensorFlow's samplers without remove_accidental_hits) is biased."""
    rng = np.random.default_rng(1)
    N, D, K, m = 5, 3, 6, 4
    X = rng.normal(size=(N, D)) / 2
    y = np.array([0, 1, 1, 4, 5])
    W = rng.normal(scale=0.5, size=(K, D))
    draws = 200_000
    sets = np.array([rng.choice(K, m, replace=False) for _ in range(draws // 5)])
    i = rng.integers(N, size=draws)
    S = np.repeat(sets, 5, axis=0)
    x = X[i]
    s = np.einsum("rjd,rd->rj", W[S], x) - np.einsum("rd,rd->r", W[y[i]], x)[:, None]
    g = (K - 1) / m * expit(s) * (S != y[i][:, None])
    gW = np.zeros((K, D))
    np.add.at(gW, S.ravel(), (g[:, :, None] * x[:, None, :]).reshape(-1, D))
    np.add.at(gW, y[i], -g.sum(1)[:, None] * x)
    gW /= draws
    eW = ove_gradient(X, y, W, 0.0)
    assert np.abs(gW - eW).max() > 0.1 * np.abs(eW).max()


def test_biased_baseline_is_detected():
    """Negative control: sampled softmax's mean step is not the NLL gradient."""
    rng = np.random.default_rng(0)
    N, D, K = 5, 3, 6
    X = rng.normal(size=(N, D))
    y = np.array([0, 1, 1, 4, 5])
    W = rng.normal(size=(K, D))
    gW, _ = _mc("sampled_softmax", X, y, W, np.zeros(N), 1, 0.0)
    eW, _ = double_sum_gradient(X, y, W, optimal_u(X, y, W))
    assert np.abs(gW - eW).max() > 0.05 * np.abs(eW).max()


def test_exact_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6, 3))
    y = np.array([0, 1, 2, 3, 0, 1])
    W = rng.normal(size=(4, 3))
    u = rng.uniform(0.5, 2.0, 6)
    from sparsekit.losses import double_sum_objective
    gW, gu = double_sum_gradient(X, y, W, u, 0.3)
    E = np.zeros_like(W)
    E[2, 1] = 1e-6
    fd = (double_sum_objective(X, y, W + E, u, 0.3)
          - double_sum_objective(X, y, W - E, u, 0.3)) / 2e-6
    assert abs(fd - gW[2, 1]) < 1e-7
    e = np.zeros(6)
    e[4] = 1e-6
    fd = (double_sum_objective(X, y, W, u + e, 0.3)
          - double_sum_objective(X, y, W, u - e, 0.3)) / 2e-6
    assert abs(fd - gu[4]) < 1e-7
    # at u = u*(W) the double sum equals the NLL (notes §1.2)
    us = optimal_u(X, y, W)
    assert abs(double_sum_objective(X, y, W, us) - softmax_nll(X, y, W)) < 1e-12


def test_umax_reset_keeps_gap_below_delta():
    """After the reset, s_ik - u_i <= delta for every sampled k (Algorithm 1)."""
    rng = np.random.default_rng(6)
    N, D, K = 40, 4, 8
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, N)
    W = rng.normal(scale=3.0, size=(K, D))
    u = np.zeros(N)
    delta = 0.5
    # eta = 0: the pass only resets; m = K - 1 samples every wrong class
    Wk, uk, status, resets = ref.kernel_epoch("umax", X, y, W, u, np.arange(N), 1, K - 1, 1,
                                              0.0, 0.0, delta)
    assert status == 0 and resets > 0
    S = X @ W.T
    gaps = S - S[np.arange(N), y][:, None]
    assert np.all(gaps - uk[:, None] <= delta + 1e-12)
    np.testing.assert_array_equal(Wk, W)
    # a reset sets u to log(1 + sum e^s) = u*, which lowers the double sum (Lemma 5)
    us = optimal_u(X, y, W)
    reset = uk != 0
    np.testing.assert_allclose(uk[reset], us[reset], rtol=1e-12)


def test_umax_projection_bounds_rows():
    X, y, W, u, order = _problem(7, scale=5.0)
    alpha = 2.0
    Wk, uk, _, _ = ref.kernel_epoch("umax", X, y, W * 10, u, order, 3, 2, 1, 0.5, alpha, 1.0)
    bound = np.sqrt(2 * np.log(W.shape[0]) / alpha)
    touched = np.unique(y)
    assert np.all(np.linalg.norm(Wk[touched], axis=1) <= bound * (1 + 1e-9))


def _log_a(X, y, W):
    """``log(1 + sum_{k != y_i} e^{s_ik})`` per row, straight from the scores (notes §1.2)."""
    S = X @ W.T
    out = np.empty(len(y))
    for i in range(len(y)):
        gaps = np.delete(S[i] - S[i, y[i]], y[i])
        out[i] = logsumexp(np.append(gaps, 0.0))
    return out


@pytest.mark.parametrize("m", [1, 3, 7])
def test_umax_reset_lowers_the_objective_by_delta_squared_over_two(m):
    """Lemma 5 (notes §4.2): a U-max reset lowers u_i + e^{-u_i} a_i (eq. (5)) by >= delta^2/2."""
    rng = np.random.default_rng(12)
    N, D, K = 60, 4, 8
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, N)
    W = rng.normal(scale=2.0, size=(K, D))
    u = rng.uniform(0.0, 6.0, N)
    delta = 0.7
    # eta = 0: the pass only resets; the sampled classes are replayed with the C sampler
    _, uk, status, resets = ref.kernel_epoch("umax", X, y, W, u, np.arange(N), 5, m, 1, 0.0,
                                             0.0, delta)
    assert status == 0
    S = X @ W.T
    draws = ref.SplitMix(5)
    bound = np.array([logsumexp(np.append(S[i, ref.sample_classes(draws, K, y[i], m)]
                                          - S[i, y[i]], 0.0)) for i in range(N)])
    hit = u < bound - delta
    assert resets == hit.sum() and 0 < resets < N
    np.testing.assert_array_equal(uk[~hit], u[~hit])
    np.testing.assert_allclose(uk[hit], bound[hit], rtol=1e-13)
    log_a = _log_a(X, y, W)
    f = lambda v: v + np.exp(log_a - v)                  # per-datapoint f, constant dropped
    drop = f(u) - f(uk)
    assert np.all(uk[hit] - u[hit] > delta)
    assert np.all(uk[hit] <= log_a[hit] + 1e-12)        # the new u is still <= u_i*
    assert np.all(drop[hit] >= delta**2 / 2)
    assert np.all(drop[hit] >= (uk[hit] - u[hit]) ** 2 / 2 * (1 - 1e-12))


@pytest.mark.parametrize("s,delta", [(3.0, 1.0), (40.0, 1.0), (0.3, 0.5), (-2.0, 0.1)])
def test_umax_reset_threshold_is_strict(s, delta):
    """§1.6 (a): U-max resets only if u_i < log(1 + e^{s_ik}) - delta (Algorithm 1, strict)."""
    X, y, W = np.array([[1.0]]), np.array([0]), np.array([[0.0], [s]])
    run = lambda u0: ref.kernel_epoch("umax", X, y, W, np.array([u0]), np.array([0]), 1, 1, 1,
                                      0.0, 0.0, delta)
    # the kernel's own bound, bit for bit: u = 0 is reset whenever delta is tiny
    _, (bound,), _, resets = run(0.0)
    assert resets == 1 and bound == pytest.approx(np.logaddexp(0.0, s), rel=1e-15)
    at = bound - delta
    assert at > 0.0                                      # no clipping at 0 in the way
    for u0, expect_reset in [(at, False), (np.nextafter(at, -np.inf), True),
                             (np.nextafter(at, np.inf), False), (at - 0.25, True)]:
        _, (uk,), status, resets = run(u0)
        assert status == 0 and resets == int(expect_reset)
        assert uk == (bound if expect_reset else u0)
        assert np.logaddexp(0.0, s) - uk <= delta * (1 + 1e-15)


@pytest.mark.parametrize("m", [1, 8])
def test_umax_projections_clip_u_and_every_touched_row(m):
    """§1.6 (b): u_i clipped to [0, B_u]; touched rows, absent classes too, projected on B_W."""
    rng = np.random.default_rng(21)
    N, D, K = 14, 4, 9
    X = rng.normal(size=(N, D))
    y = rng.integers(0, 4, N)                            # classes 4..8 never appear in y
    alpha, eta = 0.05, 0.5                               # mild ridge: the projection binds
    B_W = np.sqrt(2 * np.log(K) / alpha)
    W = rng.normal(size=(K, D))
    W *= 5 * B_W / np.linalg.norm(W, axis=1, keepdims=True)   # every row far outside B_W
    B_x = np.sqrt((X**2).sum(1).max())
    B_u = np.log1p((K - 1) * np.exp(2 * B_x * B_W))
    # half the rows start small with a big step (u pushed below 0), half above B_u
    low = rng.permutation(N) < N // 2
    u = np.where(low, rng.uniform(0.5, 3.0, N), rng.uniform(B_u + 2, 2 * B_u, N))
    sw = np.where(low, 10.0, 1.0)
    order = rng.permutation(N)
    Wk, uk, status, _ = ref.kernel_epoch("umax", X, y, W, u, order, 3, m, 1, eta, alpha, 1.0,
                                         sw)
    assert status == 0
    assert np.all(uk >= 0.0) and np.all(uk <= B_u * (1 + 1e-12))
    assert np.any(uk == 0.0) and np.any(np.isclose(uk, B_u, rtol=1e-12, atol=0))
    draws = ref.SplitMix(3)
    touched = set()
    for i in order:
        touched.update([y[i]] + ref.sample_classes(draws, K, y[i], m))
    touched = np.array(sorted(touched))
    untouched = np.setdiff1d(np.arange(K), touched)
    absent = np.setdiff1d(touched, y)
    assert absent.size > 0 and (m == K - 1 or untouched.size > 0)
    assert np.all(np.linalg.norm(Wk[touched], axis=1) <= B_W * (1 + 1e-9))
    np.testing.assert_array_equal(Wk[untouched], W[untouched])
    Wr, ur = ref.reference_epoch("umax", X, y, W, u, order, 3, m, 1, eta, alpha, 1.0, sw)
    np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(uk, ur, rtol=1e-10, atol=1e-12)


def _wexp(t):
    """Principal W(e^t) without forming e^t when t is large (Newton on w + log w = t)."""
    if t < 500.0:
        return float(lambertw(np.exp(t)).real)
    w = t - np.log(t)
    for _ in range(50):
        step = (w + np.log(w) - t) / (1.0 + 1.0 / w)
        w -= step
        if abs(step) <= 1e-16 * w:
            break
    return w


def test_implicit_one_class_root_lies_in_the_f1_bracket():
    """§1.7.1: the n = m = 1 step is the root of eq. (16)'s g, in the App. F.1 bracket, >= 0."""
    # per-example form (§5: eta N -> eta), K - 1 -> c = (K - 1)/m; s~ - u~ = gap up to +-1e3
    grid = itertools.product([-1e3, -30.0, -2.0, 0.0, 0.5, 3.0, 30.0, 1e3], [0.0, 0.7, 12.0],
                             [1e-3, 0.5, 20.0], [0.05, 1.0, 9.0], [1.0, 50.0])
    for gap, u0, eta, q, c in grid:
        z = np.array([0.37, 0.37 + u0 + gap])
        s = z[1] - z[0]

        def a(u):                                         # eq. (14)
            return _wexp(s - u + np.log(2 * eta * c * q))

        def g(u):                                         # eq. (16), simplified
            return 2 * eta * (1 - np.exp(-u)) + 2 * (u - u0) - a(u) / q

        hi = max(u0, s + np.log(c)) + 2 * eta + 10.0
        while g(hi) <= 0:
            hi *= 2
        assert g(-1.0) < 0
        root = brentq(g, -1.0, hi, xtol=1e-15, rtol=1e-15, maxiter=500)
        if g(u0) < 0:                                     # u~ <= u* <= log(1 + c e^{s~})
            lo_b, hi_b = u0, max(u0, np.logaddexp(0.0, np.log(c) + s))
        else:                                             # eqs. (17)-(18), clipped at 0
            lo_b, hi_b = max(0.0, np.log(c) + s - 2 * eta * q), u0
        slack = 1e-12 * max(1.0, abs(root))
        assert lo_b - slack <= root <= hi_b + slack
        u, coef = implicit_step(z, np.ones(2), u0, eta, q, c)
        assert u >= 0.0
        assert abs(u - root) <= 1e-10 * max(1.0, abs(root))
        assert coef[1] == -coef[0]                        # eq. (11): a* = 2 q coef_0
        assert abs(2 * q * coef[0] - a(root)) <= 1e-9 * max(1.0, a(root))


def test_vanilla_sgd_overflow_reports_status():
    X, y, W, u, order = _problem(8, scale=30.0)
    _, _, status, _ = ref.kernel_epoch("sgd", X * 50, y, W, np.zeros_like(u), order, 1, 1, 1,
                                       1e3, 0.0, 1.0)
    assert status == 1


def test_class_sampler_is_uniform_and_excludes_truth():
    counts = np.zeros(9)
    rng = ref.SplitMix(11)
    for _ in range(20000):
        s = ref.sample_classes(rng, 9, 4, 3)
        assert len(set(s)) == 3 and 4 not in s
        counts[s] += 1
    freq = np.delete(counts, 4) / counts.sum()
    assert np.abs(freq - 1 / 8).max() < 0.01


@pytest.mark.parametrize("method", ["ove", "sampled_softmax", "umax"])
def test_many_sampled_classes_match_reference(method):
    """Above SCAN_DRAWS classes a step, duplicate draws are found in a hash table instead
    of a scan (O(m), not O(m^2)): the same classes, so the same epoch (also for a batch's
    shared set, whose label swap then rejects draws among 45 of 60 classes)."""
    X, y, W, u, order = _problem(3, N=60, K=60)
    for m, b, shared in [(17, 1, False), (40, 2, False), (59, 3, False), (17, 4, True),
                         (45, 5, True)]:
        Wr, ur = ref.reference_epoch(method, X, y, W, u, order, 5, m, b, 0.3, 0.0, 1.0,
                                     shared=shared)
        Wk, uk, status, _ = ref.kernel_epoch(method, X, y, W, u, order, 5, m, b, 0.3, 0.0,
                                             1.0, sparse=True, shared_classes=shared)
        assert status == 0
        np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(uk, ur, rtol=1e-10, atol=1e-12)


def _collision_problem(K, seed, N=40, D=9, bias=False):
    """Few classes (every step's rows collide with the next steps'), empty and dense rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D)) * (rng.random((N, D)) < 0.5)
    X[[1, 7]] = 0.0
    X[5] = rng.normal(size=D)
    y = rng.integers(0, K, size=N)
    y[:K] = np.arange(K)
    W = rng.normal(scale=0.3, size=(K, D + bias))
    u = rng.uniform(0.0, 2.0, size=N)
    return X, y, W, u, rng.permutation(N)


def _raw_epoch(method, X, y, W, u, order, m, b, alpha, bias, dtype, dense, eta=None,
               **options):
    """softmax_epoch on (X, 1) rows for ``bias``; returns R, gamma, sqn, u, status."""
    from sparsekit._cython._softmax_sgd import softmax_epoch
    N, D = X.shape
    K = W.shape[0]
    counts = np.bincount(y, minlength=K) / N
    beta = 1.0 / (counts + (1 - counts) * m / (K - 1))
    xsq = (X**2).sum(1) + bias
    bw = np.sqrt(2 * np.log(K) / alpha) if alpha > 0 else np.inf
    bu = np.logaddexp(0.0, np.log(K - 1) + 2 * np.sqrt(xsq.max()) * bw) if alpha > 0 else np.inf
    R = np.array(W, dtype=dtype)
    gamma, sqn, u = np.ones(K), (R.astype(np.float64) ** 2).sum(1), u.copy()
    if dense:
        data, ind, ptr = np.ascontiguousarray(X, dtype=dtype).ravel(), np.zeros(1, np.intp), \
            np.zeros(1, np.intp)
    else:
        Xs = sp.csr_matrix(X.astype(dtype))
        data, ind, ptr = Xs.data, Xs.indices.astype(np.intp), Xs.indptr.astype(np.intp)
    status, _ = softmax_epoch(METHODS[method], data, ind, ptr, dense, D, bias,
                              y.astype(np.intp), np.ones(N), xsq, R, gamma, sqn, u, beta,
                              order.astype(np.intp), m, b,
                              eta or (0.05 if method == "sgd" else 0.4),
                              alpha, 1.0, bw, bu, 11, **options)
    return R, gamma, sqn, u, status


@pytest.mark.parametrize("method,b,m,shared", [
    ("implicit", 1, 1, False), ("implicit", 1, 2, False), ("umax", 1, 1, False),
    ("ove", 3, 2, False), ("nce", 4, 1, False), ("ove", 3, 2, True), ("umax", 8, 1, True),
    ("sampled_softmax", 5, 3, True)])
@pytest.mark.parametrize("K", [2, 3, 40])
def test_prefetch_policy_never_changes_results(method, b, m, shared, K):
    """Write-intent or plain prefetches (chosen by the size of R; with classes shared by a
    batch, its rows in slices) ask for lines, nothing else: bitwise-identical epochs, also
    when every step's classes collide with the next ones'."""
    m = min(m, K - 1)
    for bias, dtype, dense, alpha in [(False, np.float64, False, 0.0),
                                      (True, np.float32, True, 0.3),
                                      (True, np.float64, False, 0.3),
                                      (False, np.float32, True, 0.0)]:
        X, y, W, u, order = _collision_problem(K, K + b, bias=bias)
        runs = [_raw_epoch(method, X, y, W, u, order, m, b, alpha, bias, dtype, dense,
                           write_intent=wi, shared_classes=shared) for wi in (False, True)]
        for a, c in zip(*runs):
            np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("b", [2, 40])
def test_shared_rows_in_slices_or_by_features_same_epoch(b):
    """Wide sparse rows (2 nonzeros, 50 lines a weight row): a batch of 2 asks for its shared
    rows by its features, a batch of 40 in slices; either way the epoch is the same as with
    the prefetches at the draw."""
    rng = np.random.default_rng(b)
    N, D, K = 120, 400, 30
    X = np.zeros((N, D))
    for i in range(N):
        X[i, rng.choice(D, 2, replace=False)] = rng.normal(size=2)
    y = rng.integers(0, K, size=N)
    W = rng.normal(scale=0.3, size=(K, D))
    u = rng.uniform(0.0, 2.0, size=N)
    order = rng.permutation(N)
    runs = [_raw_epoch("ove", X, y, W, u, order, 3, b, 0.0, False, np.float64, False,
                       write_intent=wi, shared_classes=True) for wi in (False, True)]
    assert runs[0][-1] == 0
    for a, c in zip(*runs):
        np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("K,m,alpha", [(2, 1, 0.0), (3, 1, 0.0), (3, 2, 0.3), (7, 1, 0.0)])
def test_sampling_the_true_class_matches_reference(K, m, alpha):
    """exclude_true=False (the authors' Implicit SGD code) draws among all K classes; a draw
    of the true class moves u and leaves W unchanged but for rounding."""
    X, y, W, u, order = _collision_problem(K, 3 * K + m, N=20, D=5)
    Wr, ur = ref.reference_epoch("implicit", X, y, W, u, order, 123, m, 1, 0.6, alpha, 1.0,
                                 exclude=False)
    for sparse in (False, True):
        Wk, uk, status, _ = ref.kernel_epoch("implicit", X, y, W, u, order, 123, m, 1, 0.6,
                                             alpha, 1.0, sparse=sparse, exclude_true=False)
        assert status == 0
        np.testing.assert_allclose(Wk, Wr, rtol=1e-8, atol=1e-9)
        np.testing.assert_allclose(uk, ur, rtol=1e-8, atol=1e-9)
    rng = ref.SplitMix(5)
    draws = [ref.sample_classes(rng, K, 0, 1, exclude=False)[0] for _ in range(4000)]
    np.testing.assert_allclose(np.bincount(draws, minlength=K) / 4000, 1 / K, atol=0.03)


@pytest.mark.parametrize("b,m,width", [(0, 1, 5), (1, 0, 5), (1, 4, 5), (1, 1, 4)])
def test_epoch_driver_rejects_arguments_it_cannot_run(b, m, width):
    """A zero batch, no or too many classes to draw, or a weight row narrower than x give a
    ValueError, not a division by zero or an endless class draw (K = 4 here)."""
    from sparsekit._cython._softmax_sgd import softmax_epoch
    X = sp.csr_matrix(np.eye(3, 5))
    N, K = 3, 4
    with pytest.raises(ValueError, match="softmax_epoch: need batch_size"):
        softmax_epoch(METHODS["ove"], X.data, X.indices, X.indptr, False, 5, False,
                      np.arange(N, dtype=np.intp), np.ones(N), np.ones(N),
                      np.zeros((K, width)), np.ones(K), np.zeros(1), np.zeros(N), np.ones(K),
                      np.arange(N, dtype=np.intp), m, b, 0.1, 0.0, 1.0, np.inf, np.inf, 1)


def test_subnormals_are_flushed_during_a_pass_only():
    """OVE's sampled-row updates underflow float32 with many classes; the epoch driver
    flushes them to zero (x86 FTZ/DAZ) and gives the caller's floating-point mode back."""
    import platform
    from sparsekit import ExtremeSoftmaxSGD
    from sparsekit.datasets import make_extreme_softmax_teacher
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        pytest.skip("FTZ/DAZ is set on x86 only")
    X, y = make_extreme_softmax_teacher(2000, 50, 200, 10, dtype=np.float32, random_state=0)
    coef = ExtremeSoftmaxSGD("ove", learning_rate=1.0, n_epochs=3, eval_every=0,
                             random_state=0).fit(X, y).coef_
    tiny = np.finfo(np.float32).tiny
    assert coef.dtype == np.float32 and np.count_nonzero(coef) > coef.size // 2
    assert not np.any((coef != 0) & (np.abs(coef) < tiny))
    assert np.float32(1e-37) / np.float32(100) > 0      # the caller's mode is restored



def _walk_problem(D, n_long, seed=4):
    """600 rows of about 1% density with ``n_long`` rows of ~80% (over 1024 entries when D is
    1500), three empty rows, unit-norm or shorter rows, and an order of 700 steps that
    repeats rows."""
    rng = np.random.default_rng(seed)
    N, K = 600, 9
    X = rng.normal(size=(N, D)) * (rng.random((N, D)) < max(0.01, 3.0 / D))
    long_rows = rng.choice(N, n_long, replace=False)
    X[long_rows] = rng.normal(size=(n_long, D)) * (rng.random((n_long, D)) < 0.8)
    X[[5, 300, 599]] = 0.0
    X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0)
    y = rng.integers(0, K, size=N)
    W = rng.normal(scale=0.3, size=(K, D))
    u = rng.uniform(0.0, 2.0, size=N)
    order = np.concatenate([rng.permutation(N), rng.integers(0, N, size=100)])
    return X, y, W, u, order


@pytest.mark.parametrize("method,b,m,D", [("umax", 1, 2, 1500), ("ove", 120, 1, 1500),
                                          ("nce", 3, 2, 1500), ("implicit", 1, 1, 12)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_walk_across_copy_blocks_matches_reference(method, b, m, D, dtype):
    """The driver copies the walk's rows, a block of max(256, 4 b) examples (rounded up to a
    power of two) at a time, into
    two alternating buffers, and reads rows of over 1024 entries in place: 700 steps (two
    blocks and a partial one at b = 1) over short, long and empty rows, with an order that
    repeats rows, give the reference epoch; so does a dense X (rows read in place). The
    implicit reference solves a (1 + 2 D)-variable problem per step, hence its small D."""
    X, y, W, u, order = _walk_problem(D, 20 if D > 1024 else 0)
    if D > 1024:
        assert (np.count_nonzero(X, axis=1) > 1024).sum() == 20
    Wr, ur = ref.reference_epoch(method, X, y, W, u, order, 8, m, b, 0.5, 0.0, 1.0)
    tol = 1e-10 if dtype == np.float64 else 2e-5
    for sparse in (True, False):
        Wk, uk, status, _ = ref.kernel_epoch(method, X, y, W, u, order, 8, m, b, 0.5, 0.0,
                                             1.0, sparse=sparse, dtype=dtype)
        assert status == 0
        np.testing.assert_allclose(Wk, Wr, rtol=tol, atol=tol)
        np.testing.assert_allclose(uk, ur, rtol=tol, atol=tol)


@pytest.mark.parametrize("method,b,m,alpha", [
    ("umax", 1, 1, 0.0), ("umax", 2, 2, 0.3), ("ove", 3, 2, 0.3), ("sampled_softmax", 4, 3, 0.0),
    ("nce", 2, 1, 0.3), ("sgd", 3, 1, 0.0)])
@pytest.mark.parametrize("dense", [False, True])
def test_undo_log_gives_back_the_weights_of_a_failed_pass(method, b, m, alpha, dense):
    """With ``undo`` the driver logs every entry of R it writes: a pass that succeeds is
    bitwise the pass without the log, and a pass that overflows (vanilla sgd does here, some
    steps into the pass) puts R back bitwise (the ridge scales gamma live outside R)."""
    tried = []
    for bias, dtype in ((True, np.float64), (False, np.float32)):
        X, y, W, u, order = _collision_problem(7, 3, bias=bias)
        plain = _raw_epoch(method, X, y, W, u, order, m, b, alpha, bias, dtype, dense)
        logged = _raw_epoch(method, X, y, W, u, order, m, b, alpha, bias, dtype, dense,
                            undo=True)
        assert plain[4] == logged[4] == 0
        for a, c in zip(plain[:4], logged[:4]):
            np.testing.assert_array_equal(a, c)
        with np.errstate(over="ignore", invalid="ignore"):
            failing = _raw_epoch(method, X * 30, y, W, u, order, m, b, alpha, bias, dtype,
                                 dense, eta=1e6)
            failed = _raw_epoch(method, X * 30, y, W, u, order, m, b, alpha, bias, dtype,
                                dense, eta=1e6, undo=True)
        if failing[4]:     # an overflow some steps into the pass: R is given back bitwise
            assert failed[4] == failing[4]
            assert not np.array_equal(failing[0], np.array(W, dtype=dtype))
            np.testing.assert_array_equal(failed[0], np.array(W, dtype=dtype))
            tried.append(method)
    if method == "sgd":       # the others' steps stayed finite even at this rate
        assert tried, "no overflow was provoked"


# --- the parallel (Hogwild) driver


def _parallel_epoch(method, X, y, W, u, order, seed, m, eta, threads, sparse=True):
    from sparsekit._cython._softmax_sgd import softmax_epoch_parallel

    Xs = sp.csr_matrix(X)
    R = np.array(W, dtype=np.float64, order="C", copy=True)
    u = np.asarray(u, dtype=np.float64).copy()
    data, ind, ptr = ((Xs.data, Xs.indices.astype(np.intp), Xs.indptr.astype(np.intp))
                      if sparse else (np.ascontiguousarray(X).ravel(),
                                      np.zeros(1, np.intp), np.zeros(1, np.intp)))
    status, resets = softmax_epoch_parallel(
        METHODS[method], data, ind, ptr, not sparse, X.shape[1], False,
        np.asarray(y, dtype=np.intp), np.ones(len(y)), (X**2).sum(1), R, u,
        np.asarray(order, dtype=np.intp), m, eta, 1.0, np.inf, seed, threads)
    return R, u, status, resets


@pytest.mark.parametrize("method", ["implicit", *EXPLICIT])
@pytest.mark.parametrize("sparse", [True, False])
def test_parallel_driver_on_one_thread_is_the_epoch_of_its_part_seed(method, sparse):
    """One thread runs softmax_epoch's steps (batch 1, no ridge) with the part's seed: the
    first splitmix64 output of ``seed``."""
    X, y, W, u, order = _problem()
    eta = 0.01 if method == "sgd" else 0.3
    part_seed = ref.SplitMix(99).next()
    Wp, up, status, _ = _parallel_epoch(method, X, y, W, u, order, 99, 2, eta, 1, sparse)
    Wk, uk, kstatus, _ = ref.kernel_epoch(method, X, y, W, u, order, part_seed, 2, 1, eta,
                                          0.0, 1.0, sparse=sparse)
    assert status == kstatus == 0
    np.testing.assert_array_equal(Wp, Wk)
    np.testing.assert_array_equal(up, uk)


@pytest.mark.parametrize("method", ["implicit", "sampled_softmax", "umax"])
def test_parallel_parts_are_the_serial_epochs_of_their_seeds_when_they_share_no_row(method):
    """Two threads whose examples touch disjoint weight rows and columns (two independent
    problems stacked) do exactly the two serial epochs: every write is then race-free."""
    Xa, ya, Wa, ua, _ = _problem(seed=1, N=40, K=5)
    X = np.block([[Xa, np.zeros_like(Xa)], [np.zeros_like(Xa), Xa]])
    y = np.r_[ya, ya + 5]                 # part 0: classes 0-4, part 1: classes 5-9
    W = np.zeros((10, X.shape[1]))
    u = np.r_[ua, ua]
    order = np.r_[np.arange(40), 40 + np.arange(40)]
    m = 4                     # part 0 may draw classes 5-9 too, but writes its columns only
    R, up, status, _ = _parallel_epoch(method, X, y, W, u, order, 5, m, 0.3, 2)
    assert status == 0
    mix = ref.SplitMix(5)
    seeds = [mix.next(), mix.next()]
    for part, seed in enumerate(seeds):
        rows = order[part * 40:(part + 1) * 40]
        Wk, uk, _, _ = ref.kernel_epoch(method, X, y, W, u, rows, seed, m, 1, 0.3, 0.0, 1.0,
                                        sparse=True)
        cols = slice(part * Xa.shape[1], (part + 1) * Xa.shape[1])
        np.testing.assert_allclose(R[:, cols], Wk[:, cols], rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(up[rows], uk[rows])


def test_a_parallel_pass_that_overflows_stops_every_thread_and_says_so():
    X, y, W, u, order = _problem(N=4000, scale=0.1)
    R, _, status, _ = _parallel_epoch("sgd", X * 50.0, y, W, u, np.arange(len(y)), 3, 2, 50.0,
                                      2)
    assert status == 1


# --- hashed weights


def _hashed_inputs(X, sparse, dtype=np.float64):
    if sparse:
        Xs = sp.csr_matrix(np.asarray(X, dtype=dtype))
        return Xs.data, Xs.indices, Xs.indptr, False
    return (np.ascontiguousarray(X, dtype=dtype).ravel(), np.zeros(1, np.intp),
            np.zeros(1, np.intp), True)


def _hashed_pass(method, X, y, table, n, slots, u, order, seed, m, eta, bias, sparse=True,
                 threads=1, dtype=np.float64):
    from sparsekit._cython._softmax_sgd import softmax_epoch_parallel

    R = np.array(table, dtype=dtype)[None, :].copy()
    u = np.asarray(u, dtype=np.float64).copy()
    data, ind, ptr, dense = _hashed_inputs(X, sparse, dtype)
    status, _ = softmax_epoch_parallel(
        METHODS[method], data, ind, ptr, dense, X.shape[1], bias,
        np.asarray(y, dtype=np.intp), np.ones(len(y)), (X**2).sum(1) + bias, R, u,
        np.asarray(order, dtype=np.intp), m, eta, 1.0, np.inf, seed, threads,
        n_weights=n, slots=np.asarray(slots, dtype=np.intp))
    return R[0], u, status


@pytest.mark.parametrize("n", [1, 7, 64, 4096])
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_hashed_scores_are_the_decoded_weights_scores(n, sparse, bias):
    """Scores under hashed weights equal X @ W.T + b for the W and b the table stands for
    (``n`` = 1 and 7 < K: every class's span wraps around the table), with classes in a
    slot order that is not theirs, an empty row and float32 weights."""
    from sparsekit._cython._softmax_sgd import hashed_scores

    X, _, _, _, _ = _problem(seed=2, N=12, D=9, K=11)
    slots = np.random.default_rng(0).permutation(13)[:11]        # two slots unused
    table = np.random.default_rng(1).normal(size=n + 13)
    W, b = ref.decode(table, n, slots, X.shape[1], bias)
    for dtype in (np.float64, np.float32):
        data, ind, ptr, dense = _hashed_inputs(X, sparse)
        for threads in (1, 2):
            S = hashed_scores(data, ind, ptr, dense, X.shape[1], bias, table.astype(dtype), n,
                              slots.astype(np.intp), threads)
            Wd, bd = ref.decode(table.astype(dtype).astype(np.float64), n, slots, X.shape[1],
                                bias)
            np.testing.assert_allclose(S, X @ Wd.T + bd, rtol=1e-12, atol=1e-12)
    assert not np.allclose(W, 0)


@pytest.mark.parametrize("method", ["implicit", *EXPLICIT])
@pytest.mark.parametrize("sparse", [True, False])
def test_hashed_pass_without_collisions_is_the_dense_pass_bit_for_bit(method, sparse):
    """When no two (class, feature) pairs share an entry, hashed weights are the dense
    matrix with entries moved and signs flipped, both exact: the pass is the dense one."""
    X, y, _, u, order = _problem(seed=3, N=30, D=6, K=7)
    n, slots = 4096, np.arange(7)
    entry, _ = ref.hash_map(X.shape[1], slots, n)
    assert len(np.unique(entry)) == entry.size          # no collision for this n
    eta = 0.01 if method == "sgd" else 0.3
    for bias in (False, True):
        table, uh, status = _hashed_pass(method, X, y, np.zeros(n + 7), n, slots, u, order,
                                         11, 2, eta, bias, sparse)
        Xb = np.c_[X, np.ones(len(X))] if bias else X
        Wp, up, pstatus, _ = _parallel_epoch(method, Xb, y, np.zeros((7, Xb.shape[1])), u,
                                             order, 11, 2, eta, 1, sparse)
        assert status == pstatus == 0
        W, b = ref.decode(table, n, slots, X.shape[1], bias)
        np.testing.assert_array_equal(W, Wp[:, :X.shape[1]])
        if bias:
            np.testing.assert_array_equal(b, Wp[:, -1])
        np.testing.assert_array_equal(uh, up)


@pytest.mark.parametrize("method", EXPLICIT)
@pytest.mark.parametrize("n", [3, 16])
def test_hashed_pass_with_collisions_matches_reference(method, n):
    """A table far smaller than K x D (most entries shared): the pass is SGD on the table
    through the map, as the Python reference computes it."""
    X, y, _, u, order = _problem(seed=4, N=25, D=5, K=7)
    slots = np.array([3, 0, 6, 1, 5, 2, 4])
    table0 = np.random.default_rng(2).normal(scale=0.2, size=n + 7)
    eta = 0.01 if method == "sgd" else 0.3
    for bias, sparse in ((True, True), (False, False)):
        table, uh, status = _hashed_pass(method, X, y, table0, n, slots, u, order, 5, 3, eta,
                                         bias, sparse)
        tr, ur = ref.hashed_epoch(method, X, y, table0, n, slots, u, order,
                                  ref.SplitMix(5).next(), 3, eta, 1.0, bias)
        assert status == 0
        np.testing.assert_allclose(table, tr, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(uh, ur, rtol=1e-10, atol=1e-12)


def test_hashed_pass_float32_and_two_threads():
    """float32 tables follow float64 ones; two threads (lock-free) still learn."""
    X, y, _, u, order = _problem(seed=5, N=4000, D=8, K=6)
    slots = np.arange(6)
    t64, u64, s64 = _hashed_pass("sampled_softmax", X, y, np.zeros(70), 64, slots, u, order,
                                 1, 2, 0.1, True)
    t32, u32, s32 = _hashed_pass("sampled_softmax", X, y, np.zeros(70), 64, slots, u, order,
                                 1, 2, 0.1, True, dtype=np.float32)
    assert s64 == s32 == 0 and t32.dtype == np.float32
    np.testing.assert_allclose(t32, t64, rtol=1e-3, atol=1e-4)
    t2, _, s2 = _hashed_pass("sampled_softmax", X, y, np.zeros(70), 64, slots, u, order, 1,
                             2, 0.1, True, threads=2)
    assert s2 == 0 and np.isfinite(t2).all() and np.abs(t2).max() > 0


def test_hashed_pass_reports_overflow_and_rejects_bad_slots():
    from sparsekit._cython._softmax_sgd import hashed_scores

    X, y, _, u, order = _problem(seed=6, N=500, D=5, K=7)
    _, _, status = _hashed_pass("sgd", X * 50.0, y, np.zeros(32 + 7), 32, np.arange(7), u,
                                order, 1, 2, 50.0, True)
    assert status == 1
    for slots in (np.arange(8), np.array([0]), np.array([-1, 0, 1])):   # 8: one past R
        with pytest.raises(ValueError, match="slots"):
            _hashed_pass("sampled_softmax", X, y, np.zeros(32 + 7), 32, slots, u, order, 1,
                         2, 0.1, True)
    data, ind, ptr, dense = _hashed_inputs(X, True)
    with pytest.raises(ValueError, match="slots"):
        hashed_scores(data, ind, ptr, dense, 5, True, np.zeros(32 + 6), 32, np.arange(7))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scale_flush_leaves_no_subnormals(dtype):
    """Scaling weights near the smallest normal number would leave subnormals, which slow
    every later product: they are set to 0, the others scaled in R's precision, bit for
    bit as NumPy's ``R *= factor`` (a strided view too); NaN and infinities kept."""
    tiny = np.finfo(dtype).tiny
    R = np.array([[1.0, 1.5 * tiny, -3.0 * tiny], [-2.0, 0.0, 4.0 * tiny]], dtype=dtype)
    big = np.zeros((2, 6), dtype=dtype)
    big[:, ::2] = R
    for target in (R, big[:, ::2]):
        scale_flush(target, 0.5)
        np.testing.assert_array_equal(target, np.array([[0.5, 0.0, -1.5 * tiny],
                                                        [-1.0, 0.0, 2.0 * tiny]], dtype=dtype))
    assert not big[:, 1::2].any()
    rng = np.random.default_rng(0)
    R = (rng.standard_normal((7, 300)) * 10.0 ** rng.uniform(-40, 3, (7, 300))).astype(dtype)
    R[rng.random(R.shape) < 0.3] = 0
    R[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    R[1, :50] = tiny * rng.uniform(0.5, 3.0, 50)
    for factor in (0.7, 1e-3, 0.123456789):
        expected = R.copy()
        expected *= factor
        expected[np.abs(expected) < tiny] = 0
        scale_flush(R, factor)
        np.testing.assert_array_equal(R, expected)
        assert not np.any((R != 0) & (np.abs(R) < tiny))

