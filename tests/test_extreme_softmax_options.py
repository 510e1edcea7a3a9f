"""ExtremeSoftmaxSGD options and paths the other files leave open: weights that are not
0/1, sample_true_class, n_sampled above K - 1, partial_fit with declared classes (unsorted,
absent from the chunk), the fold of tiny lazy ridge scales, the T3 prior, the driver's
length checks (each found by a bug the suite let through)."""
import numpy as np
import pytest

import _softmax_reference as ref
from sparsekit.linear_model import ExtremeSoftmaxSGD
from sparsekit.losses import softmax_log_proba, softmax_nll


def _small(seed=0, N=40, D=3, K=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, N)
    y[:K] = np.arange(K)
    return X, y


def _first_seed(random_state):
    """The sampler seed of fit's first epoch with shuffle=False (no permutation drawn)."""
    return int(np.random.RandomState(random_state).randint(0, 2**62))


@pytest.mark.parametrize("method", ["umax", "ove"])
def test_estimator_sample_weights_are_not_a_mask(method):
    """fit(sample_weight=w) runs the weighted epoch (K = 2: the draws are deterministic),
    and loss_curve_ is the weighted NLL."""
    X, y = _small(1, N=30, K=2)
    sw = np.random.default_rng(2).uniform(0.3, 3.0, len(y))
    kw = dict(learning_rate=0.4, shuffle=False, fit_intercept=False, random_state=0)
    est = ExtremeSoftmaxSGD(method, n_epochs=1, **kw).fit(X, y, sample_weight=sw)
    W, _ = ref.reference_epoch(method, X, y, np.zeros((2, 3)), np.full(len(y), np.log(2)),
                               np.arange(len(y)), 0, 1, 1, 0.4, 0.0, 1.0, sw)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-10, atol=1e-12)
    assert est.loss_curve_[-1] == pytest.approx(
        softmax_nll(X, y, est.coef_, sample_weight=sw), rel=1e-12)
    assert est.loss_curve_[-1] != pytest.approx(softmax_nll(X, y, est.coef_), rel=1e-6)


def test_sample_true_class_draws_among_all_classes():
    """sample_true_class=True is the exclude_true=False epoch (the authors' code)."""
    X, y = _small(3, N=25, K=4)
    seed = _first_seed(0)
    est = ExtremeSoftmaxSGD("implicit", sample_true_class=True, n_epochs=1, shuffle=False,
                            fit_intercept=False, random_state=0, eval_every=0,
                            learning_rate=0.6).fit(X, y)
    W, _ = ref.reference_epoch("implicit", X, y, np.zeros((4, 3)), np.full(len(y), np.log(4)),
                               np.arange(len(y)), seed, 1, 1, 0.6, 0.0, 1.0, exclude=False)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("method", ["umax", "ove"])
def test_n_sampled_above_k_minus_1_is_capped_everywhere(method):
    """n_sampled > K - 1 means every wrong class (m = K - 1), in the step and in beta."""
    X, y = _small(4, N=60, K=5)
    kw = dict(alpha=0.3, n_epochs=2, random_state=0, learning_rate=0.3, eval_every=0)
    a = ExtremeSoftmaxSGD(method, n_sampled=50, **kw).fit(X, y)
    b = ExtremeSoftmaxSGD(method, n_sampled=4, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_partial_fit_accepts_classes_in_any_order():
    X, y = _small(5, N=60, K=4)
    kw = dict(random_state=0, learning_rate=0.3, eval_every=0)
    a = ExtremeSoftmaxSGD(**kw).partial_fit(X, y, classes=[3, 1, 0, 2])
    b = ExtremeSoftmaxSGD(**kw).partial_fit(X, y, classes=[0, 1, 2, 3])
    np.testing.assert_array_equal(a.classes_, [0, 1, 2, 3])
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    a.partial_fit(X, y, classes=[2, 4, 0, 1, 3])        # a grown, unsorted declaration
    np.testing.assert_array_equal(a.classes_, [0, 1, 2, 3, 4])


@pytest.mark.parametrize("method", ["umax", "ove", "implicit"])
def test_tiny_lazy_scales_are_folded_back_exactly(method):
    """A strong ridge drives gamma_k below 1e-6 within the epoch: the driver folds it into
    R (and into U-max's tracked norms), which must not change W = gamma R."""
    rng = np.random.default_rng(9)
    N, D, K = 30, 4, 5
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, N)
    W = rng.normal(size=(K, D))
    u = rng.uniform(0, 2, N)
    order = rng.permutation(N)
    eta, alpha = 0.5, 60.0       # rho ~ 1 + 30 beta per touch: gamma < 1e-6 in a few touches
    Wr, ur = ref.reference_epoch(method, X, y, W, u, order, 3, 2, 1, eta, alpha, 1.0)
    Wk, uk, status, _ = ref.kernel_epoch(method, X, y, W, u, order, 3, 2, 1, eta, alpha, 1.0)
    assert status == 0
    scale = np.abs(Wr).max()
    assert scale > 1e-4                                  # not everything shrunk to zero
    np.testing.assert_allclose(Wk, Wr, rtol=1e-9, atol=1e-10 * scale)
    np.testing.assert_allclose(uk, ur, rtol=1e-9, atol=1e-12)


def test_log_softmax_shift_does_not_depend_on_column_order():
    """Exactness where the largest score is not in the first column."""
    S = np.array([[0.0, 1e3, 999.0], [-1e3, 5.0, 1e3]])
    logp = softmax_log_proba(S)
    assert np.all(np.isfinite(logp))
    np.testing.assert_allclose(np.exp(logp).sum(1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(logp[0], [-1e3 - np.log1p(np.exp(-1.0)), -np.log1p(np.exp(-1.0)),
                                         -1.0 - np.log1p(np.exp(-1.0))], rtol=1e-14)


def test_partial_fit_ridge_weights_cover_declared_classes_absent_from_the_chunk(monkeypatch):
    """beta has one entry per declared class; a class absent from the chunk is touched only
    as a sampled class: beta = (K - 1)/m (eq. (6) with n_j = 0)."""
    import sparsekit.linear_model._extreme_softmax as module
    X, y = _small(6, N=50, K=4)                           # labels 0..3
    seen = {}
    epoch = module.softmax_epoch

    def spy(*args, **kwargs):
        seen["beta"] = np.array(args[14])
        return epoch(*args, **kwargs)
    monkeypatch.setattr(module, "softmax_epoch", spy)
    K, m = 7, 2
    ExtremeSoftmaxSGD("umax", n_sampled=m, alpha=0.1, random_state=0,
                      eval_every=0).partial_fit(X, y, classes=np.arange(K))
    c = np.bincount(y, minlength=K) / len(y)
    assert seen["beta"].shape == (K,)
    np.testing.assert_allclose(seen["beta"] * (c + (1 - c) * m / (K - 1)), 1.0)
    np.testing.assert_allclose(seen["beta"][4:], (K - 1) / m)


def test_t3_prior_is_proportional_to_u_squared():
    """T3 (notes §2.1): p(k) ∝ u_k^2, u_k ~ U[0, 1], so K sum_k p_k^2 -> E[u^4]/E[u^2]^2
    = 9/5 (p ∝ u would give 4/3, uniform p gives 1)."""
    from sparsekit.datasets import make_ove_toy
    K = 20_000
    _, _, params = make_ove_toy("T3", n_samples=10, n_classes=K, return_params=True,
                                random_state=0)
    assert K * np.sum(params.class_prior**2) == pytest.approx(9 / 5, abs=0.08)


def test_the_epoch_driver_rejects_arrays_of_the_wrong_length():
    """A caller bug (say beta shorter than K) is an error, not an out-of-bounds read."""
    X, y = _small(7, N=20, K=4)
    W, u = np.zeros((4, 3)), np.zeros(20)
    with pytest.raises(ValueError, match="one entry per row"):
        ref.kernel_epoch("umax", X, y[:-1], W, u, np.arange(19), 0, 1, 1, 0.1, 0.0, 1.0)
    with pytest.raises(ValueError, match="one per class"):
        ref.kernel_epoch("umax", X, y, W[:3], u, np.arange(20), 0, 1, 1, 0.1, 0.5, 1.0)
