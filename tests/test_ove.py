"""One-vs-Each bound: the properties (a)-(k) of notes/one_vs_each.md §2.1 and those of §1.3."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize
from scipy.special import expit, logsumexp

import _softmax_reference as ref
from sparsekit._cython._softmax_sgd import METHODS, sampled_gradient
from sparsekit.datasets import make_ove_toy
from sparsekit.linear_model import ExtremeSoftmaxSGD
from sparsekit.losses import log_ove_bound, ove_gradient, ove_objective, softmax_log_proba

scores_st = arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 7)),
                   elements=st.floats(-30, 30))


@given(scores_st)
def test_a_bound_below_softmax_exact_for_two_classes(S):
    lo, exact = log_ove_bound(S), softmax_log_proba(S)
    assert np.all(lo <= exact + 1e-12)
    if S.shape[1] == 2:
        np.testing.assert_allclose(lo, exact, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("K", [2, 3, 10, 2919])
def test_b_all_equal_scores(K):
    S = np.full((1, K), 0.37) if K < 100 else None
    if S is not None:
        np.testing.assert_allclose(log_ove_bound(S), -(K - 1) * np.log(2), rtol=1e-12)
    # per-point value at W = 0 for AmazonCat-13K (notes §1.3 item 4)
    y = np.zeros(3, dtype=int)
    assert ove_objective(np.ones((3, 1)), y, np.zeros((K, 1))) == pytest.approx((K - 1) * np.log(2))


# Integer grids times a scale: exact ties are frequent, untied scores differ by >= one
# grid step (far above rounding), and scale 125 reaches +-1e3.
grid_st = arrays(np.int64, st.tuples(st.integers(1, 4), st.integers(2, 12)),
                 elements=st.integers(-8, 8))
_EPS = np.finfo(np.float64).eps


def _rounding_tol(K, *values):
    """Bound on the rounding of a K-term sum of log-sigmoids of magnitude ``max |values|``."""
    return 8 * K * _EPS * (1 + max(np.abs(v).max() for v in values))


def _ranking_grid(K, seed=5):
    """Scores in {-1000..1000} for K classes: huge (+-1e3) and, for K > 2001, tied."""
    return np.random.default_rng(seed).integers(-1000, 1001, size=(1, K)).astype(np.int64)


@settings(deadline=None)                    # the K = 2919 example builds K x K matrices
@given(grid_st, st.sampled_from([0.25, 1.0, 125.0]))
@example(np.array([[8, 8, -8], [8, -8, 0], [-8, -8, -8]]), 125.0)         # K = 3, +-1e3, ties
@example(np.array([[0, 1, 2, 3, 4, 5, 6, 7, 8, 7]]), 1.0)                  # one tie at the top
@example(_ranking_grid(2919), 1.0)                                         # AmazonCat K, ties
def test_c_same_ranking_as_scores(I, scale):
    """§1.3 item 9: f_k > f_j => OVE_k > OVE_j (margin >= f_k - f_j), ties equal, same argmax."""
    S = I * scale
    K = S.shape[1]
    lo = log_ove_bound(S)
    for s, b in zip(S, lo):
        tol = _rounding_tol(K, b, s)
        ds = s[:, None] - s[None, :]                  # [k, j] = f_k - f_j, exact on the grid
        db = b[:, None] - b[None, :]
        above = ds > 0
        # log OVE_k - log OVE_j = (f_k - f_j) + sum_{m != k,j} [log sig(f_k-f_m) - log sig(f_j-f_m)]
        # and every bracket is >= 0, so the margin is at least the score gap (> tol here).
        assert np.all(db[above] >= ds[above] - tol)
        assert np.all(np.abs(db[ds == 0]) <= tol)     # only exactly tied scores may tie
        top = np.flatnonzero(s == s.max())
        np.testing.assert_array_equal(np.flatnonzero(b >= b.max() - tol), top)
        assert np.argmax(b) in top


def _counts(K=7, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.choice(K, size=300, p=rng.dirichlet(np.ones(K)))
    y[:K] = np.arange(K)
    return y, np.bincount(y, minlength=K)


def test_d_full_batch_ove_recovers_ml_probabilities():
    y, Nk = _counts()
    K, N = len(Nk), len(y)
    X = np.ones((N, 1))
    fun = lambda f: (ove_objective(X, y, f[:, None]), ove_gradient(X, y, f[:, None]).ravel())
    res = minimize(fun, np.zeros(K), jac=True, method="BFGS", options={"gtol": 1e-12})
    np.testing.assert_allclose(np.exp(softmax_log_proba(res.x[None]))[0], Nk / N, atol=1e-7)
    # stationarity (Eq. 10) at f = log N_k
    f = np.log(Nk)
    for k in range(K):
        m = np.arange(K) != k
        total = np.sum((Nk[k] + Nk[m]) / Nk[k] * expit(f[k] - f[m]))
        assert total == pytest.approx(K - 1, rel=1e-12)


def test_e_bouchard_two_classes_is_biased():
    N1, N2 = 30, 10
    y = np.array([0] * N1 + [1] * N2)

    def neg_bound(theta):
        f, a = theta[:2], np.full(len(y), theta[2])
        return -ref.bouchard_log_bound(np.tile(f, (len(y), 1)), y, a).sum()

    res = minimize(neg_bound, np.zeros(3), method="BFGS", options={"gtol": 1e-10})
    p1 = np.exp(softmax_log_proba(res.x[None, :2]))[0, 0]
    assert p1 == pytest.approx(N1**2 / (N1**2 + N2**2), abs=1e-6)
    assert res.x[2] == pytest.approx(res.x[:2].mean(), abs=1e-5)     # Prop. 3


def test_f_doubly_stochastic_gradient_is_unbiased():
    rng = np.random.default_rng(2)
    N, D, K, M = 6, 3, 9, 3
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, N)
    W = rng.normal(size=(K, D))
    counts = np.bincount(y, minlength=K) / N
    beta = 1.0 / (counts + (1 - counts) * M / (K - 1))
    gW, _ = sampled_gradient(METHODS["ove"], X, y.astype(np.intp), W, np.zeros(N), beta, M,
                             0.1, 1.0, 400_000, 8)
    exact = ove_gradient(X, y, W, 0.1)
    assert np.abs(gW - exact).max() < 0.02 * np.abs(exact).max()


def test_g_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(8, 4))
    y = rng.integers(0, 5, 8)
    W = rng.normal(size=(5, 4))
    G = ove_gradient(X, y, W, 0.2)
    for k, j in [(0, 0), (2, 3), (4, 1)]:
        E = np.zeros_like(W)
        E[k, j] = 1e-6
        fd = (ove_objective(X, y, W + E, 0.2) - ove_objective(X, y, W - E, 0.2)) / 2e-6
        assert fd == pytest.approx(G[k, j], abs=1e-8)


@given(scores_st, st.floats(-100, 100))
def test_h_shift_invariance(S, c):
    np.testing.assert_allclose(log_ove_bound(S + c), log_ove_bound(S), rtol=1e-9, atol=1e-9)


def _fit_full_batch(X, y, K, lam, kind):
    D = X.shape[1] + 1
    Xb = np.hstack([X, np.ones((len(y), 1))])

    def fun(w):
        W = w.reshape(K, D)
        S = Xb @ W.T
        if kind == "softmax":
            logp = softmax_log_proba(S)
            P = np.exp(logp)
            P[np.arange(len(y)), y] -= 1
            return -logp[np.arange(len(y)), y].sum() + lam / 2 * w @ w, (P.T @ Xb + lam * W).ravel()
        if kind == "ove":
            n = len(y)
            return (n * ove_objective(Xb, y, W) + lam / 2 * w @ w,
                    (n * ove_gradient(Xb, y, W) + lam * W).ravel())
        a = ref.bouchard_optimal_a(S)                  # envelope theorem: a held at optimum
        G = expit(S - a[:, None])
        G[np.arange(len(y)), y] -= 1
        return (-ref.bouchard_log_bound(S, y, a).sum() + lam / 2 * w @ w,
                (G.T @ Xb + lam * W).ravel())

    res = minimize(fun, np.zeros(K * D), jac=True, method="L-BFGS-B",
                   options={"maxiter": 5000, "gtol": 1e-9})
    return res.x.reshape(K, D), -res.fun


def test_i_toy_linear_bounds_and_weights():
    X, y = make_ove_toy("T2", random_state=0)
    K = 5
    W_soft, L_soft = _fit_full_batch(X, y, K, 1.0, "softmax")
    W_ove, L_ove = _fit_full_batch(X, y, K, 1.0, "ove")
    W_bou, L_bou = _fit_full_batch(X, y, K, 1.0, "bouchard")
    assert L_bou <= L_ove <= L_soft + 1e-9
    rel = np.abs(W_ove - W_soft).sum() / np.abs(W_soft).sum()
    rel_b = np.abs(W_bou - W_soft).sum() / np.abs(W_soft).sum()
    assert rel < 0.5 and rel < rel_b


@pytest.mark.parametrize("method,kw,tol,nll_tol", [
    ("ove", dict(learning_rate=0.05, batch_size=100, n_sampled=10, n_epochs=60), 0.015, 1e-4),
    ("implicit", dict(learning_rate=0.1, lr_decay=0.97, n_sampled=1, n_epochs=60), 0.15, 5e-3),
])
def test_j_nonparametric_toy_recovers_counts(method, kw, tol, nll_tol):
    """T3 scaled down (N = 2e4, K = 200): softmax(f^) -> N_k / N (Fig. 2).

    Over 20 data/sampler seeds the L1 error was <= 0.0058 (OVE; the residual is the
    slowly moving classes with N_k = 1) and <= 0.115 (Implicit SGD, whose u_i move once
    per epoch), and the NLL within 2.1e-5 / 2.3e-3 of the ML optimum.
    """
    X, y = make_ove_toy("T3", n_samples=20_000, n_classes=200, random_state=0)
    Nk = np.bincount(y, minlength=200)
    keep = Nk > 0
    est = ExtremeSoftmaxSGD(method, fit_intercept=False, random_state=0, eval_every=0, **kw)
    est.fit(X, y)
    p_hat = np.zeros(200)
    p_hat[est.classes_] = est.predict_proba(X[:1])[0]
    target = Nk / Nk.sum()
    err = np.abs(p_hat - target).sum()
    uniform = np.abs(keep / keep.sum() - target).sum()
    assert err < tol < uniform
    best = -(target[keep] * np.log(target[keep])).sum()
    nll = -np.log(p_hat[y]).mean()
    assert nll < (1 + nll_tol) * best


def test_k_value_at_zero_weights():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = rng.integers(0, 6, 20)
    assert ove_objective(X, y, np.zeros((6, 3))) == pytest.approx(5 * np.log(2), rel=1e-14)


# ---------------------------------------------------------------- notes §1.3 properties
def _ref_log_ove(S):
    """Eq. 4 term by term: ``log OVE_k = -sum_{m != k} log(1 + e^{f_m - f_k})``."""
    S = np.asarray(S, dtype=np.float64)
    out = np.empty_like(S)
    for i, s in enumerate(S):
        for k in range(len(s)):
            out[i, k] = -np.logaddexp(0.0, np.delete(s, k) - s[k]).sum()
    return out


def _ref_log_gap(S):
    """``log softmax_k - log OVE_k = sum log(1 + a_m) - log(1 + sum a_m)``, a_m = e^{f_m - f_k}."""
    S = np.asarray(S, dtype=np.float64)
    out = np.empty_like(S)
    for i, s in enumerate(S):
        for k in range(len(s)):
            d = np.delete(s, k) - s[k]
            out[i, k] = np.logaddexp(0.0, d).sum() - np.logaddexp(0.0, logsumexp(d))
    return out


def _adversarial_scores():
    rng = np.random.default_rng(7)
    return {
        "K3-equal": np.full((1, 3), 0.37),
        "K3-huge-ties": np.array([[1e3, 1e3, -1e3], [1e3, -1e3, 0.0], [-1e3, -1e3, -1e3]]),
        "K3-ties-dominant": np.array([[2.0, 2.0, -1.0], [-1.0, -1.0, 2.0], [30.0, 0.0, 0.0]]),
        "K3-random": rng.normal(0, 3, size=(20, 3)),
        "K40-grid-ties": rng.integers(-4, 5, size=(3, 40)) * 0.5,
        "K40-huge": np.vstack([rng.uniform(-1e3, 1e3, size=(2, 40)),
                               np.r_[1e3, 1e3, -1e3:1e3:38j]]),     # a tie at the top
        "K2919-equal-huge": np.full((1, 2919), -1e3),
        "K2919-random": rng.normal(0, 3, size=(1, 2919)),
    }


_ADV = _adversarial_scores()
scores3_st = arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(3, 8)),
                    elements=st.floats(-30, 30))


def _check_strictly_below(S):
    lo, exact, gap = log_ove_bound(S), softmax_log_proba(S), _ref_log_gap(S)
    K = S.shape[1]
    tol = _rounding_tol(K, lo, exact, S)
    np.testing.assert_allclose(exact - lo, gap, rtol=1e-9, atol=tol)
    resolvable = gap > tol                    # e.g. a dominant class: gap ~ e^{-2 x 30}
    assert np.all(lo[resolvable] < exact[resolvable])
    # the lowest class has every a_m >= 1, so gap >= (K - 1) log 2 - log K > 0: never vacuous
    low = np.argmin(S, axis=1)
    rows = np.arange(len(S))
    assert np.all(resolvable[rows, low])
    assert np.all(exact[rows, low] - lo[rows, low] >= (K - 1) * np.log(2) - np.log(K) - tol)


@given(scores3_st)
def test_strict_below_softmax_for_three_or_more_classes(S):
    """§1.3 item 3: for K >= 3, log OVE_k < log softmax_k by the gap of Eq. 3 vs Eq. 4."""
    _check_strictly_below(S)


@pytest.mark.parametrize("name", list(_ADV))
def test_strict_below_softmax_adversarial(name):
    """§1.3 item 3 on ties, all-equal, dominant and +-1e3 scores, K = 3 to 2919."""
    _check_strictly_below(_ADV[name])


def _check_mass(S):
    lo = log_ove_bound(S)
    mass, ref = logsumexp(lo, axis=1), logsumexp(_ref_log_ove(S), axis=1)
    tol = _rounding_tol(S.shape[1], lo, S)
    np.testing.assert_allclose(mass, ref, rtol=0, atol=tol)
    assert np.all(mass <= tol)                                # sum_k OVE_k <= 1
    if S.shape[1] == 2:
        np.testing.assert_allclose(mass, 0.0, atol=tol)       # K = 2: exact, sums to one
        return np.zeros(len(S), dtype=bool)
    resolvable = ref < -tol               # not with a dominant class: 1 - sum ~ e^{-gap}
    assert np.all(mass[resolvable] < 0)
    return resolvable


@given(scores_st)
def test_ove_mass_at_most_one(S):
    """§1.3 item 9: sum_k OVE_k <= 1 (= 1 for K = 2), so OVE is not a distribution."""
    _check_mass(S)


@pytest.mark.parametrize("name", list(_ADV))
def test_ove_mass_at_most_one_adversarial(name):
    """§1.3 item 9: sum_k OVE_k < 1 on ties, all-equal, dominant and +-1e3 scores."""
    assert _check_mass(_ADV[name]).any()


@pytest.mark.parametrize("K,scale", [(3, 1.0), (3, 300.0), (40, 1.0), (40, 300.0)])
def test_ove_objective_midpoint_convex(K, scale):
    """§1.3 item 5: W -> ove_objective (Eq. 15 negated) is midpoint convex on random pairs."""
    rng = np.random.default_rng(K)
    X = rng.normal(size=(30, 4))
    y = rng.integers(0, K, 30)
    for t in range(200):
        W1, W2 = rng.normal(0, scale, size=(2, K, 4))
        if t % 4 == 0:
            W1[1] = W1[0]                       # tied scores for classes 0 and 1
            W2[:] = W2[0]                       # all scores tied: the point of max curvature
        alpha = 0.1 if t % 2 else 0.0
        f1, f2 = ove_objective(X, y, W1, alpha), ove_objective(X, y, W2, alpha)
        fm = ove_objective(X, y, (W1 + W2) / 2, alpha)
        tol = 1e-13 * K * (1 + abs(f1) + abs(f2))
        assert fm <= (f1 + f2) / 2 + tol


def _ref_ove_hessian(X, y, W, alpha):
    """Hessian of ove_objective: mean_i sum_{k != y_i} s(1-s) (e_k-e_y)(e_k-e_y)^T (x) x x^T."""
    K, D = W.shape
    H = alpha * np.eye(K * D)
    for x, yi in zip(X, y):
        z = W @ x
        for k in range(K):
            if k == yi:
                continue
            s = expit(z[k] - z[yi])
            a = np.zeros((K, D))
            a[k], a[yi] = x, -x
            H += s * (1 - s) * np.outer(a.ravel(), a.ravel()) / len(y)
    return H


@pytest.mark.parametrize("case", ["random", "ties", "huge"])
def test_ove_hessian_psd(case):
    """§1.3 item 5: the finite-difference Hessian of ove_objective (via ove_gradient) is PSD."""
    rng = np.random.default_rng(11)
    N, D, K = 9, 3, 4
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, N)
    W = rng.normal(size=(K, D)) * (300.0 if case == "huge" else 1.0)
    if case == "ties":
        W[1:3] = W[0]
    if case == "huge":                  # scores ~ +-1e3; one tied pair keeps some curvature
        W[1] = W[0]
    h, alpha = 1e-5, 0.0
    H = np.empty((K * D, K * D))
    for j in range(K * D):
        E = np.zeros(K * D)
        E[j] = h
        gp = ove_gradient(X, y, W + E.reshape(K, D), alpha).ravel()
        gm = ove_gradient(X, y, W - E.reshape(K, D), alpha).ravel()
        H[:, j] = (gp - gm) / (2 * h)
    np.testing.assert_allclose(H, H.T, atol=1e-8)
    ref = _ref_ove_hessian(X, y, W, alpha)
    np.testing.assert_allclose(H, ref, atol=1e-8)
    assert np.linalg.eigvalsh((H + H.T) / 2).min() >= -1e-8
    assert np.abs(ref).max() > 1e-3                # curvature present: the check is not 0 >= 0


def test_log_ove_bound_blocks_and_bad_input(monkeypatch):
    """log_ove_bound's blocked evaluation equals the one-block one (tiny budgets force blocks
    of rows, then of classes within a row); non-finite or non-2-D scores are refused."""
    import sparsekit.losses._softmax as module
    S = np.random.default_rng(3).normal(0, 5, size=(7, 13))
    whole = log_ove_bound(S)
    np.testing.assert_allclose(whole, _ref_log_ove(S), rtol=1e-13, atol=1e-13)
    for budget in (13 * 13 * 2, 13 * 4, 1):
        monkeypatch.setattr(module, "_CHUNK_ENTRIES", budget)
        np.testing.assert_array_equal(log_ove_bound(S), whole)
    for bad in (np.where(S > 5, np.inf, S), np.where(S > 5, np.nan, S), S[0]):
        with pytest.raises(ValueError, match="finite 2-D"):
            log_ove_bound(bad)


def test_softmax_log_proba_takes_one_row_as_a_1d_array():
    s = np.array([1.0, 2.0, 1e3])
    np.testing.assert_allclose(softmax_log_proba(s), softmax_log_proba(s[None])[0])
    assert softmax_log_proba(s).shape == (3,)
    np.testing.assert_allclose(np.exp(softmax_log_proba(s)).sum(), 1.0)


def test_softmax_helpers_reject_labels_and_weights_that_do_not_fit():
    from sparsekit.losses import softmax_nll
    rng = np.random.default_rng(0)
    X, W = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    for y in ([0, 1, 2, -1], [0, 1, 2, 5], [0, 1, 2], [0, 1, 2, 3, 4], [0.0, 1.0, 2.0, 3.0]):
        with pytest.raises(ValueError, match="class indices"):
            softmax_nll(X, np.array(y), W)
        with pytest.raises(ValueError, match="class indices"):
            ove_objective(X, np.array(y), W)
    for sw in (np.ones(5), -np.ones(4)):
        with pytest.raises(ValueError, match="sample_weight"):
            softmax_nll(X, np.arange(4), W, sample_weight=sw)


def test_objectives_without_ridge_ignore_an_overflowing_norm():
    from sparsekit.losses import double_sum_objective
    X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0, 1])
    W = np.array([[1e200, 0.0], [0.0, 1e200]])  # ||W||^2 overflows; the data terms do not
    assert ove_objective(X, y, W) == 0.0
    assert np.isfinite(double_sum_objective(X, y, W, np.zeros(2)))
