"""ExtremeSoftmaxSGD options and paths the other files leave open: weights that are not
0/1, sample_true_class, n_sampled above K - 1, partial_fit with declared classes (unsorted,
absent from the chunk), the fold of tiny lazy ridge scales, the T3 prior, the driver's
length checks (each found by a bug the suite let through)."""
import numpy as np
import pytest

import _softmax_reference as ref
import sparsekit.linear_model._extreme_softmax as est_module
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


@pytest.mark.parametrize("method", ["umax", "ove", "sampled_softmax"])
def test_shared_classes_is_the_one_set_per_batch_epoch(method):
    """shared_classes=True runs the reference epoch with one class set per batch."""
    X, y = _small(5, N=30, K=6)
    est = ExtremeSoftmaxSGD(method, shared_classes=True, batch_size=4, n_sampled=2,
                            n_epochs=1, shuffle=False, fit_intercept=False, random_state=0,
                            eval_every=0, learning_rate=0.5).fit(X, y)
    W, _ = ref.reference_epoch(method, X, y, np.zeros((6, 3)), np.full(len(y), np.log(6)),
                               np.arange(len(y)), _first_seed(0), 2, 4, 0.5, 0.0, 1.0,
                               shared=True)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-10, atol=1e-12)


def test_shared_classes_needs_a_batch():
    """With batch_size=1 (and so for Implicit SGD) the option changes nothing, bit for bit."""
    X, y = _small(6, N=50, K=5)
    for method in ("implicit", "umax"):
        kw = dict(n_epochs=2, random_state=0, learning_rate=0.3, eval_every=0)
        a = ExtremeSoftmaxSGD(method, shared_classes=True, **kw).fit(X, y)
        b = ExtremeSoftmaxSGD(method, **kw).fit(X, y)
        np.testing.assert_array_equal(a.coef_, b.coef_)


def test_shared_classes_fit_as_well_as_independent_draws():
    """On a 40-class problem at a well-chosen learning rate, sharing the draws within
    batches of 20 leaves the fitted NLL within 1% of independent draws (seeds averaged;
    1.700 against 1.695 when written). Sharing adds variance: at three times that rate
    it was 2% worse."""
    rng = np.random.default_rng(7)
    N, D, K = 2000, 10, 40
    X = rng.normal(size=(N, D))
    y = (X @ rng.normal(size=(D, K)) + rng.gumbel(size=(N, K))).argmax(1)
    nll = {}
    for shared in (False, True):
        nll[shared] = np.mean([
            ExtremeSoftmaxSGD("ove", shared_classes=shared, batch_size=20, n_sampled=3,
                              learning_rate=0.1, n_epochs=30, random_state=seed,
                              eval_size=None).fit(X, y).loss_curve_[-1] for seed in range(3)])
    assert nll[True] < 1.01 * nll[False]
    assert nll[False] < 0.5 * np.log(K)


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


def _spy_epoch(monkeypatch):
    """Record the u each softmax_epoch call starts from (the driver updates it in place)."""
    import sparsekit.linear_model._extreme_softmax as module
    starts = []
    epoch = module.softmax_epoch

    def spy(*args, **kwargs):
        starts.append(np.array(args[13]))
        return epoch(*args, **kwargs)
    monkeypatch.setattr(module, "softmax_epoch", spy)
    return starts


def _exact_nll(X, y, coef, intercept):
    """-log p_y per row, by a direct log-sum-exp of the scores."""
    from scipy.special import logsumexp
    S = X @ coef.T + intercept
    return logsumexp(S, axis=1) - S[np.arange(len(y)), y]


def test_u_init_exact_on_nonzero_weights_is_the_per_example_nll(monkeypatch):
    """A later partial_fit call with u_init='exact' starts u at -log p_y of the current
    weights (over more than one 4096-row scoring chunk), and the pass runs from that u."""
    starts = _spy_epoch(monkeypatch)
    rng = np.random.default_rng(11)
    N, D, K = 5000, 4, 5
    X = rng.normal(size=(N, D))
    y = rng.integers(0, K, N)
    est = ExtremeSoftmaxSGD("umax", u_init="exact", shuffle=False, fit_intercept=False,
                            random_state=0, eval_every=0, learning_rate=0.5)
    est.partial_fit(X[:300], y[:300], classes=np.arange(K))
    np.testing.assert_array_equal(starts[0], np.log(K))      # zero weights: u* = log K
    W0 = est.coef_.copy()
    est.set_params(learning_rate=0.05).partial_fit(X, y)   # a step at which U-max is not
    u0 = _exact_nll(X, y, W0, 0.0)                         # chaotic: 1e-14 stays 1e-14
    assert np.ptp(u0) > 1.0                                  # far from the constant log K
    np.testing.assert_allclose(starts[1], u0, rtol=1e-12, atol=1e-13)
    rs = np.random.RandomState(0)
    rs.randint(0, 2**62)
    seed = int(rs.randint(0, 2**62))                        # the second call's sampler seed
    run = {name: ref.kernel_epoch("umax", X, y, W0, u, np.arange(N), seed, 1, 1, 0.05 * 0.9,
                                  0.0, 1.0)[0]
           for name, u in (("exact", u0), ("log_k", np.full(N, np.log(K))))}
    np.testing.assert_allclose(est.coef_, run["exact"], rtol=1e-9, atol=1e-12)
    assert not np.allclose(est.coef_, run["log_k"], rtol=1e-3)


def test_u_init_exact_in_a_warm_fit_on_new_rows(monkeypatch):
    """A warm fit whose data size differs from the previous one cannot reuse u_: with
    u_init='exact' it starts from the NLL of the previous weights (intercept included)."""
    starts = _spy_epoch(monkeypatch)
    X, y = _small(12, N=80, K=4)
    est = ExtremeSoftmaxSGD("umax", u_init="exact", warm_start=True, n_epochs=2,
                            random_state=0, eval_every=0, learning_rate=0.5).fit(X[:50], y[:50])
    W0, b0 = est.coef_.copy(), est.intercept_.copy()
    assert np.any(b0 != 0)
    est.set_params(n_epochs=1).fit(X, y)
    np.testing.assert_allclose(starts[2], _exact_nll(X, y, W0, b0), rtol=1e-12, atol=1e-13)


def test_u_init_zero_starts_every_u_at_zero():
    """u_init='zero' (the authors' code) is the epoch from u = 0, not from log K."""
    X, y = _small(13, N=30, K=2)
    kw = dict(learning_rate=0.4, shuffle=False, fit_intercept=False, random_state=0)
    est = ExtremeSoftmaxSGD("umax", u_init="zero", n_epochs=1, **kw).fit(X, y)
    W, u = ref.reference_epoch("umax", X, y, np.zeros((2, 3)), np.zeros(len(y)),
                               np.arange(len(y)), 0, 1, 1, 0.4, 0.0, 1.0)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.u_, u, rtol=1e-10, atol=1e-12)
    W_logk, _ = ref.reference_epoch("umax", X, y, np.zeros((2, 3)), np.full(len(y), np.log(2)),
                                    np.arange(len(y)), 0, 1, 1, 0.4, 0.0, 1.0)
    assert not np.allclose(est.coef_, W_logk, rtol=1e-3)


@pytest.mark.parametrize("method", ["umax", "implicit"])
def test_non_canonical_csr_fits_as_its_canonical_copy_and_is_left_alone(method):
    """Duplicate entries and unsorted indices: the fit is bitwise the fit on the
    summed-and-sorted copy, and the caller's arrays are neither summed nor reordered."""
    import scipy.sparse as sp
    rng = np.random.default_rng(14)
    N, D, K = 60, 8, 4
    rows, indices, data = [], [], []
    for i in range(N):
        cols = rng.choice(D, 3, replace=False)
        cols = np.r_[cols, cols[:2]][::-1]                 # two duplicates, not sorted
        rows.append(len(cols))
        indices.extend(cols.tolist())
        data.extend(rng.normal(size=len(cols)).tolist())
    X = sp.csr_matrix((np.array(data), np.array(indices, dtype=np.int32),
                       np.r_[0, np.cumsum(rows)]), shape=(N, D))
    assert not X.has_canonical_format
    y = rng.integers(0, K, N)
    saved = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    Xc = X.copy()
    Xc.sum_duplicates()
    Xc.sort_indices()
    assert Xc.nnz < X.nnz
    kw = dict(n_epochs=2, random_state=0, learning_rate=0.3, alpha=0.01)
    a = ExtremeSoftmaxSGD(method, **kw).fit(X, y)
    b = ExtremeSoftmaxSGD(method, **kw).fit(Xc, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)
    np.testing.assert_array_equal(a.u_, b.u_)
    np.testing.assert_allclose(a.loss_curve_, b.loss_curve_, rtol=1e-12)
    for before, after in zip(saved, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(after, before)
    a.partial_fit(X, y)
    b.partial_fit(Xc, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    for before, after in zip(saved, (X.data, X.indices, X.indptr)):
        np.testing.assert_array_equal(after, before)


def test_the_l2_cache_size_is_the_c_librarys():
    """The driver spreads its prefetches for weights larger than the core's L2 cache, which
    it reads from the C library (sysfs says the same on Linux)."""
    from pathlib import Path

    from sparsekit._cython._softmax_sgd import L2_CACHE_BYTES, spreads_prefetches
    assert L2_CACHE_BYTES >= 64 * 2**10
    assert spreads_prefetches(L2_CACHE_BYTES + 1) and not spreads_prefetches(L2_CACHE_BYTES)
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        if (index / "level").read_text().strip() == "2":
            text = (index / "size").read_text().strip().upper()
            scale = {"K": 2**10, "M": 2**20}.get(text[-1:], 1)
            assert int(text.rstrip("KM")) * scale == L2_CACHE_BYTES


def test_the_driver_decides_the_prefetch_path_and_results_never_depend_on_it():
    X, y = _small(16, N=60, K=5)
    coefs = []
    for write_intent in (None, False, True):
        est = ExtremeSoftmaxSGD(n_epochs=2, random_state=0)
        epoch = est_module.softmax_epoch

        def forced(*args, _epoch=epoch, _wi=write_intent, **kwargs):
            return _epoch(*args, write_intent=_wi, **kwargs)

        est_module.softmax_epoch = forced
        try:
            coefs.append(est.fit(X, y).coef_)
        finally:
            est_module.softmax_epoch = epoch
    np.testing.assert_array_equal(coefs[0], coefs[1])
    np.testing.assert_array_equal(coefs[0], coefs[2])


def test_multilabel_first_rejects_an_example_without_labels():
    """multilabel='first' with label lists: an empty list is a clear error naming the row."""
    X, _ = _small(15, N=4, K=2)
    est = ExtremeSoftmaxSGD(multilabel="first", n_epochs=1, random_state=0)
    with pytest.raises(ValueError, match="example 2 has no label"):
        est.fit(X, [[0, 1], [1], [], [0]])
    from sparsekit.linear_model import first_label
    with pytest.raises(ValueError, match="example 1 has no label"):
        first_label([(3,), ()])


def test_precision_at_k_needs_one_label_set_per_row():
    """y_true and top_labels of different lengths is an error, in both directions."""
    from sparsekit.linear_model import precision_at_k
    top = np.array([[1, 2], [0, 3]])
    with pytest.raises(ValueError, match="y_true has 3 examples, top_labels has 2"):
        precision_at_k([1, 2, 3], top)
    with pytest.raises(ValueError, match="y_true has 1 examples, top_labels has 2"):
        precision_at_k([[1, 2]], top)


def test_sparse_label_indicator_is_multilabel():
    """A sparse y is an indicator matrix: an error by default, its lowest active column
    per row with multilabel='first' (the same fit as on those labels)."""
    import scipy.sparse as sp
    X, y = _small(16, N=40, K=4)
    Y = np.zeros((40, 6), dtype=int)
    Y[np.arange(40), y] = 1
    Y[np.arange(40), np.minimum(y + 2, 5)] = 1            # a second, higher label per row
    kw = dict(n_epochs=2, random_state=0, learning_rate=0.3)
    with pytest.raises(ValueError, match="multilabel='first'"):
        ExtremeSoftmaxSGD(**kw).fit(X, sp.csr_matrix(Y))
    a = ExtremeSoftmaxSGD(multilabel="first", **kw).fit(X, sp.csr_matrix(Y))
    b = ExtremeSoftmaxSGD(**kw).fit(X, y)
    np.testing.assert_array_equal(a.classes_, np.arange(4))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    a.partial_fit(X, sp.csr_matrix(Y))
    b.partial_fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_partial_fit_first_call_needs_two_declared_classes():
    """A first chunk declaring one class is refused and leaves the estimator unfitted."""
    from sklearn.exceptions import NotFittedError
    X, _ = _small(17, N=10, K=2)
    est = ExtremeSoftmaxSGD(random_state=0)
    with pytest.raises(ValueError, match="at least 2 declared classes"):
        est.partial_fit(X, np.zeros(10, dtype=int), classes=[0, 0])
    assert not hasattr(est, "classes_")
    assert not hasattr(est, "n_features_in_")      # was left behind by the validation
    with pytest.raises(NotFittedError):
        est.predict(X)
    with pytest.raises(ValueError, match="not declared in classes"):
        est.partial_fit(X[:, :3], np.full(10, 2), classes=[0, 1])
    assert not hasattr(est, "n_features_in_")
    est.partial_fit(X, np.zeros(10, dtype=int), classes=[0, 1])   # a later first call works
    with pytest.raises(ValueError, match="not declared in classes"):
        est.partial_fit(X, np.full(10, 2))
    assert est.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(est.classes_, [0, 1])


@pytest.mark.parametrize("y_true, top, match", [
    (np.array([np.nan, 1.0]), np.array([[1], [0]]), "y_true contains NaN labels"),
    (np.array([1, 0]), np.full((2, 1), np.nan), "top_labels contains NaN labels"),
    (np.array(["a", "b"]), np.array([[1], [0]]), "y_true holds string labels but top_labels "
                                                  "numeric"),
    (None, np.array([[1], [0]]), "y_true must hold one label or one collection"),
    (3, np.array([[1], [0]]), "y_true must hold one label or one collection"),
])
def test_precision_at_k_refuses_labels_it_cannot_compare(y_true, top, match):
    from sparsekit.linear_model import precision_at_k
    with pytest.raises(ValueError, match=match):
        precision_at_k(y_true, top)


def test_first_label_reads_single_labels_and_refuses_non_containers():
    """A plain label (a string too, not its first character) is its own first label."""
    from sparsekit.linear_model import first_label
    np.testing.assert_array_equal(first_label(np.array([1, 2, 3])), [1, 2, 3])
    np.testing.assert_array_equal(first_label(["cat", ["dog", "x"]]), ["cat", "dog"])
    for bad in (np.ones((2, 2, 2)), 5, None):
        with pytest.raises(ValueError, match="Y must hold one label or one collection"):
            first_label(bad)


@pytest.mark.parametrize("classes, match", [
    ([0, 1, np.nan], "classes contains NaN labels"),
    ([[0, 1]], "classes must be 1-D"),
    (np.array([0, 1, None], dtype=object), "one sortable type"),
])
def test_partial_fit_refuses_malformed_classes(classes, match):
    X, y = _small(3, N=6, K=2)
    with pytest.raises(ValueError, match=match):
        ExtremeSoftmaxSGD().partial_fit(X, y, classes=classes)
