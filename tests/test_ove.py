"""One-vs-Each bound: the properties (a)-(k) of notes/one_vs_each.md §2.1."""
import numpy as np
import pytest
from hypothesis import given, settings
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


@given(scores_st)
def test_c_same_ranking_as_scores(S):
    S = S + np.arange(S.shape[1]) * 1e-3          # no exact ties
    lo = log_ove_bound(S)
    for row_s, row_b in zip(S, lo):
        ties = np.isclose(row_b[:, None], row_b[None, :], rtol=0, atol=1e-9)
        order_s = np.argsort(row_s)
        assert np.all(np.diff(row_b[order_s]) >= -1e-9) or ties.any()


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


@pytest.mark.parametrize("method,kw,tol", [
    ("ove", dict(learning_rate=0.05, batch_size=100, n_sampled=10, n_epochs=20), 0.1),
    ("implicit", dict(learning_rate=0.05, n_sampled=1, n_epochs=10), 0.25),
])
def test_j_nonparametric_toy_recovers_counts(method, kw, tol):
    """T3 scaled down (N = 2e4, K = 200): softmax(f^) -> N_k / N (Fig. 2); the one-class
    Implicit SGD is noisier on this toy (each u_i moves once per epoch), hence its wider
    L1 tolerance, but its NLL is within 1% of the ML optimum."""
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
    assert nll < 1.01 * best


def test_k_value_at_zero_weights():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = rng.integers(0, 6, 20)
    assert ove_objective(X, y, np.zeros((6, 3))) == pytest.approx(5 * np.log(2), rel=1e-14)
