"""Tests of SparsemaxClassifier and its fused loss/gradient kernel."""
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparsekit._cython._sparsemax_loss import loss_grad_csr, loss_grad_dense
from _sparsemax_problems import make_data as _data
from sparsekit.linear_model import SparsemaxClassifier
from sparsekit.losses._fenchel_young_datafit import FenchelYoungLinear
from sparsekit._cython._projections import POLYTOPE_CODES as _POLYTOPE_CODES

DATA = Path(os.environ.get("SPARSEKIT_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "datasets"))

POLYTOPES = ["simplex", "budget", "box", "at_most_one", "at_least_one"]


# ----------------------------------------------------------- slow references
def _clip_sum(z, tau):
    return np.clip(z - tau, 0.0, 1.0).sum()


def _bisect_tau(z, target, upper=1.0):
    """tau with sum(clip(z - tau, 0, upper)) == target, by 200 bisection steps."""
    lo, hi = z.min() - target - 1.0, z.max() + 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.clip(z - mid, 0.0, upper).sum() > target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def project_ref(z, polytope, budget=1.0):
    """Euclidean projection of one row, written for clarity (sort / bisection)."""
    z = np.asarray(z, dtype=np.float64)
    if polytope == "simplex":
        zs = np.sort(z)[::-1]
        cs = np.cumsum(zs)
        k = np.arange(1, z.size + 1)
        kz = k[1 + k * zs > cs].max()
        return np.maximum(z - (cs[kz - 1] - 1) / kz, 0.0)
    clipped = np.clip(z, 0.0, 1.0)
    if polytope == "box":
        return clipped
    if polytope in ("budget", "at_most_one"):
        bound = budget if polytope == "budget" else 1.0
        if clipped.sum() <= bound:
            return clipped
        return np.clip(z - _bisect_tau(z, bound), 0.0, 1.0)
    if clipped.sum() >= 1.0:  # at_least_one
        return clipped
    return np.clip(z - _bisect_tau(z, 1.0), 0.0, 1.0)


def objective_ref(W, b, X, Y, sw, alpha, polytope="simplex", budget=1.0):
    """(1/sum sw) sum_i sw_i FY(W^T x_i + b; y_i) + alpha/2 ||W||^2, row by row."""
    X = X.toarray() if sp.issparse(X) else X
    total = 0.0
    for x, y, w in zip(X, Y, sw):
        z = x @ W + b
        p = project_ref(z, polytope, budget)
        total += w * (0.5 * np.sum((y - z) ** 2) - 0.5 * np.sum((p - z) ** 2))
    return total / sw.sum() + 0.5 * alpha * np.sum(W**2)


def _targets(rng, n, k, kind):
    if kind == "labels":
        return np.eye(k)[rng.integers(0, k, n)]
    if kind == "multilabel":
        Y = (rng.random((n, k)) < 0.4).astype(float)
        Y[np.arange(n), rng.integers(0, k, n)] = 1
        return Y / Y.sum(1, keepdims=True)
    P = rng.random((n, k)) ** 3
    return P / P.sum(1, keepdims=True)


def _kernel(X, W, b, Y, sw, polytope, budget=1.0, block=7):
    Ycsr = sp.csr_matrix(Y)
    dt = W.dtype
    args = (W, b.astype(dt), Ycsr.indptr.astype(np.int64), Ycsr.indices.astype(np.int64),
            Ycsr.data.astype(dt), sw.astype(dt), _POLYTOPE_CODES[polytope], budget)
    gW = np.empty_like(W)
    gb = np.empty(W.shape[1], dtype=dt)
    if sp.issparse(X):
        loss = loss_grad_csr(X.data, X.indices, X.indptr, *args, gW, gb)
    else:
        loss = loss_grad_dense(X, *args, gW, gb, block)
    return loss, gW, gb


# ------------------------------------------------------------ kernel tests
@pytest.mark.parametrize("polytope", POLYTOPES)
@pytest.mark.parametrize("kind", ["labels", "multilabel", "proportions"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("k", [4, 9])     # dense products: one GEMV per output, or a GEMM
def test_kernel_matches_reference_and_finite_differences(polytope, kind, sparse, k):
    rng = np.random.default_rng(0)
    n, d = 23, 5
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.4] = 0
    X[3] = 0  # an empty row
    Xin = sp.csr_matrix(X) if sparse else X
    Y = _targets(rng, n, k, kind)
    budget = 2.0 if polytope == "budget" else 1.0  # the simplex reads it as radius
    sw = rng.random(n) + 0.5
    sw[5] = 0.0
    W = rng.standard_normal((d, k))
    b = rng.standard_normal(k)
    loss, gW, gb = _kernel(Xin, W, b, Y, sw, polytope, budget)
    ref = objective_ref(W, b, X, Y, sw, 0.0, polytope, budget) * sw.sum()
    assert loss == pytest.approx(ref, rel=1e-10, abs=1e-10)
    eps = 1e-6
    for (i, j) in [(0, 0), (2, 3), (4, 1)]:
        Wp, Wm = W.copy(), W.copy()
        Wp[i, j] += eps
        Wm[i, j] -= eps
        fd = (_kernel(Xin, Wp, b, Y, sw, polytope, budget)[0]
              - _kernel(Xin, Wm, b, Y, sw, polytope, budget)[0]) / (2 * eps)
        assert gW[i, j] == pytest.approx(fd, rel=1e-5, abs=1e-6)
    for j in range(k):
        bp, bm = b.copy(), b.copy()
        bp[j] += eps
        bm[j] -= eps
        fd = (_kernel(Xin, W, bp, Y, sw, polytope, budget)[0]
              - _kernel(Xin, W, bm, Y, sw, polytope, budget)[0]) / (2 * eps)
        assert gb[j] == pytest.approx(fd, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("k", [2, 5, 16, 17])    # CSR: blocks of rows up to 16 classes
@pytest.mark.parametrize("sparse", [False, True])
def test_simplex_rows_projected_in_blocks_match_the_reference(k, sparse):
    """The simplex kernels' blocks of rows (scored, then projected together): several
    blocks and a partial one, rows of zero weight, empty rows, label sets; the reference
    objective and gradient ``Xᵀ sw (p - y)``."""
    rng = np.random.default_rng(3)
    n, d = 150, 7
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.5] = 0
    X[[4, 70]] = 0                                  # empty rows
    Y = _targets(rng, n, k, "multilabel")
    sw = rng.random(n) + 0.5
    sw[[9, 64, 149]] = 0.0
    W = rng.standard_normal((d, k))
    b = rng.standard_normal(k)
    Xin = sp.csr_matrix(X) if sparse else X
    loss, gW, gb = _kernel(Xin, W, b, Y, sw, "simplex", block=33)
    ref = objective_ref(W, b, X, Y, sw, 0.0, "simplex") * sw.sum()
    G = sw[:, None] * (np.array([project_ref(z, "simplex") for z in X @ W + b]) - Y)
    assert loss == pytest.approx(ref, rel=1e-10)
    np.testing.assert_allclose(gW, X.T @ G, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gb, G.sum(axis=0), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("block", [1, 7, 64])
def test_one_box_output_kernel_matches_the_reference(dtype, sparse, block):
    """A two-class fit's one box output (its rows' loss inline, the dense products by
    GEMV): the reference objective and gradient, in blocks of 1 row, a last partial
    block, or one; rows of zero weight (one with huge scores: no NaN), an empty row, a
    row whose target is written as two entries, scores on both sides of the box."""
    rng = np.random.default_rng(1)
    n, d = 23, 6
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.3] = 0
    X[3] = 0                                     # an empty row
    X[9] *= 1e150 if dtype == np.float64 else 1e30     # huge scores, weight 0
    y = (rng.random(n) < 0.5).astype(float)
    sw = rng.random(n) + 0.5
    sw[[5, 9]] = 0.0
    W = rng.standard_normal((d, 1)) * 2
    b = np.array([0.3])
    Xin = sp.csr_matrix(X.astype(dtype)) if sparse else X.astype(dtype)
    loss, gW, gb = _kernel(Xin, W.astype(dtype), b, y[:, None], sw, "box", block=block)
    keep = sw > 0
    ref = objective_ref(W, b, X[keep], y[keep, None], sw[keep], 0.0, "box") * sw.sum()
    Z = X[keep] @ W + b
    G = sw[keep, None] * (np.clip(Z, 0, 1) - y[keep, None])
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    assert np.isfinite(loss) and loss == pytest.approx(ref, rel=rtol)
    np.testing.assert_allclose(gW, X[keep].T @ G, rtol=rtol, atol=rtol * np.abs(G).sum())
    np.testing.assert_allclose(gb, G.sum(axis=0), rtol=rtol, atol=rtol * np.abs(G).sum())
    # targets written as two entries of a row's one column (0.5 + 0.5) read the same
    Ycsr = sp.csr_matrix(y[:, None])
    twice = (W.astype(dtype), np.asarray(b, dtype), 2 * Ycsr.indptr.astype(np.int64),
             np.repeat(Ycsr.indices, 2).astype(np.int64), np.repeat(Ycsr.data / 2, 2)
             .astype(dtype), sw.astype(dtype), _POLYTOPE_CODES["box"], 1.0)
    g2W, g2b = np.empty_like(gW), np.empty_like(gb)
    loss2 = (loss_grad_csr(Xin.data, Xin.indices, Xin.indptr, *twice, g2W, g2b) if sparse
             else loss_grad_dense(Xin, *twice, g2W, g2b, block))
    assert loss2 == pytest.approx(loss, rel=rtol)
    np.testing.assert_allclose(g2W, gW, rtol=rtol, atol=rtol * np.abs(G).sum())


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernel_of_one_box_output_matches_reference_and_finite_differences(sparse, dtype):
    """One output (a two-class fit's box problem): rows of 0-9 entries, the scores in four
    chains of additions and the gradient scattered without the class loop."""
    rng = np.random.default_rng(3)
    n, d = 60, 9
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.3] = 0
    X[3] = 0                                         # an empty row
    Y = rng.random((n, 1)).round(1)                  # targets in [0, 1], 0 and 1 among them
    sw = rng.random(n) + 0.5
    sw[5] = 0.0
    W, b = rng.standard_normal((d, 1)), rng.standard_normal(1)
    Xin = sp.csr_matrix(X.astype(dtype)) if sparse else X.astype(dtype)
    loss, gW, gb = _kernel(Xin, W.astype(dtype), b, Y, sw, "box")
    Xr = X.astype(dtype).astype(np.float64)
    S = Xr @ W + b
    P = np.clip(S, 0.0, 1.0)
    G = sw[:, None] * (P - Y)
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    assert loss == pytest.approx(objective_ref(W, b, Xr, Y, sw, 0.0, "box") * sw.sum(),
                                 rel=rtol)
    np.testing.assert_allclose(gW, Xr.T @ G, rtol=rtol, atol=rtol * np.abs(Xr.T @ G).max())
    np.testing.assert_allclose(gb, G.sum(axis=0), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("block", [1, 3, 50])
def test_kernel_dense_equals_csr_and_float32(block):
    rng = np.random.default_rng(1)
    n, d, k = 40, 6, 5
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.5] = 0
    Y = _targets(rng, n, k, "multilabel")
    sw = rng.random(n)
    W = rng.standard_normal((d, k))
    b = rng.standard_normal(k)
    dense = _kernel(X, W, b, Y, sw, "simplex", block=block)
    csr = _kernel(sp.csr_matrix(X), W, b, Y, sw, "simplex")
    for a, c in zip(dense, csr):
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    X32 = sp.csr_matrix(X.astype(np.float32))
    f32 = _kernel(X32, W.astype(np.float32), b, Y, sw, "simplex")
    d32 = _kernel(X.astype(np.float32), W.astype(np.float32), b, Y, sw, "simplex",
                  block=block)
    for a, c, e in zip(dense, f32, d32):
        np.testing.assert_allclose(c, a, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(e, a, rtol=1e-4, atol=1e-4)


def test_kernel_csr_on_a_W_beyond_the_caches_equals_the_dense_kernel():
    """With W larger than CACHED_BYTES (8 MiB; here 70,000 features x 16 classes) the CSR
    kernel prefetches the rows of W and of the gradient ahead of the entries: the same loss
    and gradient as the dense kernel, which reads no such rows."""
    rng = np.random.default_rng(2)
    n, d, k = 60, 70_000, 16
    X = sp.random(n, d, density=0.0005, random_state=2).toarray()
    X[7] = 0.0
    Y = _targets(rng, n, k, "labels")
    sw = rng.random(n)
    W = rng.standard_normal((d, k))
    b = rng.standard_normal(k)
    assert d * k * 8 > 2**23
    dense = _kernel(X, W, b, Y, sw, "simplex", block=16)
    csr = _kernel(sp.csr_matrix(X), W, b, Y, sw, "simplex")
    for a, c in zip(dense, csr):
        np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("polytope", ["simplex", "box", "budget"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernel_csr_on_many_classes_with_sparse_projections_matches_reference(polytope,
                                                                              dtype):
    """Many classes, spread scores: most rows' gradient p - y has a few nonzero classes
    (their scatter walks those only), some rows many (a flat score row, whole rows), an
    empty row and a zero weight: the reference's loss and gradient, and the dense kernel's."""
    rng = np.random.default_rng(7)
    n, d, k = 30, 8, 40
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.6] = 0
    X[:, 0] = 0
    X[4] = 0                                       # empty: p = proj(b)
    Y = np.zeros((n, k))
    Y[np.arange(n), rng.integers(0, k, n)] = 1
    Y[::3, 5] = 1
    if polytope == "simplex":
        Y /= Y.sum(1, keepdims=True)
    W = 4 * rng.standard_normal((d, k))
    b = 0.05 * rng.standard_normal(k) - (0 if polytope == "simplex" else 3)
    W[0] = 3.5 + 0.01 * rng.standard_normal(k)    # feature 0, row 9's only one: flat
    X[9] = 0                                       # scores (near 1/2 on the box), a wide
    X[9, 0] = 1.0                                  # support, scattered whole
    sw = rng.random(n) + 0.5
    sw[11] = 0.0
    budget = 3.0 if polytope == "budget" else 1.0
    Xc, Wc = X.astype(dtype), W.astype(dtype)
    loss, gW, gb = _kernel(sp.csr_matrix(Xc), Wc, b, Y, sw, polytope, budget)
    P = np.array([project_ref(z, polytope, budget) for z in X @ W + b])
    R = sw[:, None] * (P - Y)
    assert 1 <= np.median(np.count_nonzero(R, axis=1)) <= k // 4   # the sparse scatter
    assert np.count_nonzero(R[9]) > k // 4                          # and whole rows
    rtol = 1e-10 if dtype == np.float64 else 1e-4
    assert loss == pytest.approx(objective_ref(W, b, X, Y, sw, 0.0, polytope, budget)
                                 * sw.sum(), rel=rtol)
    np.testing.assert_allclose(gW, X.T @ R, rtol=rtol, atol=rtol * np.abs(X.T @ R).max())
    np.testing.assert_allclose(gb, R.sum(axis=0), rtol=rtol, atol=rtol * np.abs(R).max())
    dense = _kernel(Xc, Wc, b, Y, sw, polytope, budget)
    for a, c in zip((loss, gW, gb), dense):
        np.testing.assert_allclose(a, c, rtol=rtol, atol=rtol * np.max(np.abs(c)))

def test_kernel_huge_logits_float32():
    """The loss is shift invariant on the simplex; a 1e6 offset must not break float32.

    Scores are multiples of 1/16, exact in float32 near 1e6, so only the kernel can err
    (notes/sparsemax_report.md 2.3: the naive loss gives 6.25e4 instead of 3.148).
    """
    rng = np.random.default_rng(2)
    n, d, k = 10, 3, 6
    X = rng.integers(-2, 3, (n, d)).astype(np.float32)
    Y = _targets(rng, n, k, "labels")
    W = (rng.integers(-16, 17, (d, k)) / 16).astype(np.float32)
    b = np.zeros(k)
    sw = np.ones(n)
    base = _kernel(X, W, b, Y, sw, "simplex")
    shifted = _kernel(X, W, b + 1e6, Y, sw, "simplex")
    assert shifted[0] == pytest.approx(base[0], rel=1e-4)
    np.testing.assert_allclose(shifted[1], base[1], atol=1e-4)


# --------------------------------------------------------- estimator tests
def _blobs(n=60, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = 2 * rng.standard_normal((k, d))
    y = rng.integers(0, k, n)
    X = centers[y] + rng.standard_normal((n, d))
    return X, y


def _flat_theta(clf):
    return np.concatenate([clf.coef_.T.ravel(), clf.intercept_])


def _objective_at(clf, X, Y, sw=None):
    sw = np.ones(X.shape[0]) if sw is None else sw
    return objective_ref(clf.coef_.T, clf.intercept_, X, Y, sw, clf.alpha_, clf.polytope,
                         clf.budget or 1.0)


@pytest.mark.parametrize("polytope", POLYTOPES)
def test_internal_objective_equals_reference(polytope):
    rng = np.random.default_rng(3)
    X, _ = _blobs(n=25)
    Y = (rng.random((25, 3)) < 0.5).astype(float)
    Y[:, 0] = 1
    if polytope == "at_most_one":
        Y[:, 1:] = 0
        Y[::4, 0] = 0
    clf = SparsemaxClassifier(alpha=0.3, polytope=polytope,
                              budget=3 if polytope == "budget" else None)
    sw = rng.random(25)
    Yt, keep, _ = clf._encode_targets(Y, clf._check_budget())
    fun = FenchelYoungLinear(X, Yt, sw, polytope=polytope, budget=clf._check_budget(),
                             alpha=0.3, fit_intercept=True,
                             penalize_intercept=False).value_grad
    theta = rng.standard_normal(5 * 3)
    W, b = theta[:12].reshape(4, 3), theta[12:]
    expected = objective_ref(W, b, X, Yt.toarray(), sw, 0.3, polytope, 3.0)
    assert fun(theta)[0] == pytest.approx(expected, rel=1e-12)


def test_fit_reaches_reference_optimum_and_csr_equals_dense():
    X, y = _blobs()
    Y = np.eye(3)[y]
    dense = SparsemaxClassifier(alpha=1e-2, tol=1e-10).fit(X, y)
    csr = SparsemaxClassifier(alpha=1e-2, tol=1e-10).fit(sp.csr_matrix(X), y)
    csc = SparsemaxClassifier(alpha=1e-2, tol=1e-10).fit(sp.csc_matrix(X), y)
    f = _objective_at(dense, X, Y)
    assert _objective_at(csr, X, Y) == pytest.approx(f, rel=1e-9)
    assert _objective_at(csc, X, Y) == pytest.approx(f, rel=1e-9)
    np.testing.assert_allclose(csr.predict_proba(X), dense.predict_proba(X), atol=1e-5)
    # no perturbation of the solution decreases the reference objective
    rng = np.random.default_rng(0)
    for _ in range(20):
        pert = SparsemaxClassifier(alpha=1e-2)
        pert.coef_ = dense.coef_ + 1e-3 * rng.standard_normal(dense.coef_.shape)
        pert.intercept_ = dense.intercept_ + 1e-3 * rng.standard_normal(3)
        pert.polytope, pert.budget, pert.alpha_ = "simplex", None, dense.alpha_
        assert _objective_at(pert, X, Y) >= f - 1e-12


def _assert_locally_optimal(clf, X, Y, lo=-np.inf, hi=np.inf):
    """No feasible perturbation of (coef_, intercept_) lowers the reference objective."""
    f = _objective_at(clf, X, Y)
    rng = np.random.default_rng(0)
    for _ in range(20):
        pert = clone(clf)
        pert.alpha_ = clf.alpha_
        pert.coef_ = np.clip(clf.coef_ + 1e-3 * rng.standard_normal(clf.coef_.shape), lo, hi)
        pert.intercept_ = clf.intercept_ + clf.fit_intercept * 1e-3 * rng.standard_normal(
            clf.intercept_.shape)
        assert _objective_at(pert, X, Y) >= f - 1e-12


def test_predict_proba_sparse_rows_and_accuracy():
    X, y = _blobs(n=120, seed=4)
    clf = SparsemaxClassifier(alpha=1e-3).fit(X, y)
    P = clf.predict_proba(X)
    np.testing.assert_allclose(P.sum(1), 1, atol=1e-12)
    assert (P >= 0).all() and (P == 0).any()
    assert clf.score(X, y) > 0.9
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[P.argmax(1)])
    assert clf.decision_function(X).shape == (120, 3)
    assert clf.n_iter_ > 0 and clf.n_features_in_ == 4


@pytest.mark.parametrize("polytope", ["simplex", "box", "budget"])
def test_predict_log_proba_is_the_log_of_predict_proba_without_warnings(polytope):
    """log P on the support, -inf at the exact zeros, no divide-by-zero warning; label
    sets, two classes, huge scores, sparse and float32 X, and scikit-learn's BaggingClassifier
    (which reads it) too."""
    from sklearn.ensemble import BaggingClassifier

    X, y = _blobs(n=120, seed=4)
    Y = np.c_[y == 0, y != 1, y != 0].astype(int)
    params = {"budget": 2.0} if polytope == "budget" else {}
    for target in (y, Y, y == 1):
        clf = SparsemaxClassifier(alpha=1e-3, polytope=polytope, **params).fit(X, target)
        for given in (X, 1e6 * X, sp.csr_matrix(X), X.astype(np.float32)):
            P = clf.predict_proba(given)
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                logP = clf.predict_log_proba(given)
            assert logP.dtype == P.dtype and logP.shape == P.shape
            assert (P == 0).any() and not np.isnan(logP).any()
            np.testing.assert_array_equal(logP[P == 0], -np.inf)
            np.testing.assert_allclose(np.exp(logP), P, rtol=1e-6, atol=0)
    bag = BaggingClassifier(SparsemaxClassifier(alpha=1e-3), n_estimators=3,
                            random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(np.exp(bag.predict_log_proba(X)), bag.predict_proba(X),
                                   atol=1e-12)


def test_string_labels_and_binary_decision_function():
    X, y = _blobs(k=2)
    labels = np.array(["neg", "pos"])[y]
    clf = SparsemaxClassifier().fit(X, labels)
    d = clf.decision_function(X)
    assert d.ndim == 1
    np.testing.assert_array_equal(clf.predict(X), np.where(d > 0, "pos", "neg"))


def test_float32_input():
    X, y = _blobs()
    c64 = SparsemaxClassifier(alpha=1e-2).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        c32 = SparsemaxClassifier(alpha=1e-2).fit(X.astype(np.float32), y)
    np.testing.assert_allclose(c32.coef_, c64.coef_, atol=1e-3)
    assert c32.predict_proba(X.astype(np.float32)).dtype == np.float32
    # a model and X of different dtypes score in the wider one, as scikit-learn's models do
    for given in (X.astype(np.float32), sp.csr_matrix(X, dtype=np.float32),
                  sp.csc_matrix(X, dtype=np.float32)):
        scores = c64.decision_function(given)
        assert scores.dtype == c64.predict_proba(given).dtype == np.float64
        np.testing.assert_allclose(scores, given @ c64.coef_.T + c64.intercept_, rtol=1e-12)
    assert c32.decision_function(X).dtype == np.float64


def test_multilabel_targets_uniform_and_empty_rows_dropped():
    rng = np.random.default_rng(5)
    X, _ = _blobs(n=50)
    Y = (rng.random((50, 3)) < 0.5).astype(int)
    Y[np.arange(50), rng.integers(0, 3, 50)] = 1
    Y[:3] = 0
    with pytest.warns(UserWarning, match="no active label"):
        clf = SparsemaxClassifier(alpha=1e-2, tol=1e-10).fit(X, Y)
    assert clf.target_type_ == "multilabel"
    ref = SparsemaxClassifier(alpha=1e-2, tol=1e-10).fit(X[3:], Y[3:] / Y[3:].sum(1,
                                                                                 keepdims=True))
    assert ref.target_type_ == "proportions"
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=1e-6)
    pred = clf.predict(X)
    assert pred.shape == Y.shape and pred.dtype == Y.dtype
    np.testing.assert_array_equal(pred, (clf.predict_proba(X) > clf.threshold_).astype(int))
    assert 0 <= clf.score(X, Y) <= 1
    sparse_fit = SparsemaxClassifier(alpha=1e-2, tol=1e-10)
    with pytest.warns(UserWarning):
        sparse_fit.fit(X, sp.csr_matrix(Y))
    np.testing.assert_allclose(sparse_fit.coef_, clf.coef_, atol=1e-6)
    with pytest.raises(ValueError, match="sum to zero"), pytest.warns(UserWarning):
        SparsemaxClassifier().fit(X, np.zeros_like(Y))


def test_proportion_targets():
    rng = np.random.default_rng(6)
    X, _ = _blobs(n=40)
    Q = rng.random((40, 3)) ** 4
    Q /= Q.sum(1, keepdims=True)
    clf = SparsemaxClassifier(alpha=1e-3).fit(X, Q)
    assert clf.target_type_ == "proportions"
    np.testing.assert_allclose(clf.predict_proba(X).sum(1), 1)
    # a one-hot proportion matrix is the same problem as labels
    X2, y2 = _blobs()
    a = SparsemaxClassifier(tol=1e-10).fit(X2, y2)
    b = SparsemaxClassifier(tol=1e-10).fit(X2, np.eye(3)[y2])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)


@pytest.mark.parametrize("polytope,budget", [("budget", 2), ("box", None),
                                             ("at_most_one", None),
                                             ("at_least_one", None)])
def test_other_polytopes_fit_marginals(polytope, budget):
    rng = np.random.default_rng(7)
    X, _ = _blobs(n=60)
    Y = np.zeros((60, 3), dtype=int)
    Y[np.arange(60), rng.integers(0, 3, 60)] = 1
    if polytope in ("budget", "box"):
        Y[::3, 0] = 1
    if polytope in ("at_most_one", "box", "budget"):
        Y[::7] = 0
    clf = SparsemaxClassifier(alpha=1e-2, polytope=polytope, budget=budget,
                              tol=1e-10).fit(X, Y)
    P = clf.predict_proba(X)
    assert ((P >= 0) & (P <= 1)).all()
    bound = {"budget": 2, "at_most_one": 1}.get(polytope)
    if bound:
        assert (P.sum(1) <= bound + 1e-9).all()
    if polytope == "at_least_one":
        assert (P.sum(1) >= 1 - 1e-9).all()
    Yt = clf._encode_targets(Y, clf._check_budget())[0].toarray()
    _assert_locally_optimal(clf, X, Yt)


@pytest.mark.parametrize("kwargs,y,match", [
    ({}, "proportions_bad_sum", "sum to 1"),
    ({}, "negative", r"\[0, 1\]"),
    ({"polytope": "budget", "budget": 1}, "two_labels", "budget"),
    ({"polytope": "at_most_one"}, "two_labels", "more than 1"),
    ({"polytope": "at_least_one"}, "empty_row", "less than 1"),
    ({"polytope": "budget"}, "labels", "needs a positive budget"),
    ({"budget": 2}, "labels", "only used with"),
    ({"positive": True, "bounds": (0, 1)}, "labels", "either"),
    ({"bounds": (1, 0)}, "labels", "lower bound must be <= its upper"),
    ({"bounds": (np.inf, None)}, "labels", "no feasible"),
    ({"bounds": (None, -np.inf)}, "labels", "no feasible"),
    ({"bounds": (np.inf, None), "solver": "nqn"}, "labels", "no feasible"),
    ({"bounds": (0, 1, 2)}, "labels", "pair"),
    ({"polytope": "cube"}, "labels", "polytope"),
    ({"alpha": -1}, "labels", "alpha"),
    ({"device": "tpu"}, "labels", "device"),
])
def test_bad_inputs(kwargs, y, match):
    X, labels = _blobs(n=10)
    targets = {
        "labels": labels,
        "proportions_bad_sum": np.full((10, 3), 0.5),
        "negative": np.tile([-0.5, 1.0, 0.5], (10, 1)),
        "two_labels": np.tile([1, 1, 0], (10, 1)),
        "empty_row": np.vstack([np.zeros((1, 3), int), np.eye(3, dtype=int)[labels[1:]]]),
    }
    with pytest.raises(ValueError, match=match):
        SparsemaxClassifier(**kwargs).fit(X, targets[y])


def test_bad_X_and_unfitted():
    X, y = _blobs(n=10)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SparsemaxClassifier().fit(bad, y)
    clf = SparsemaxClassifier().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError):
        SparsemaxClassifier().fit(X, y[:5])
    with pytest.raises(ValueError, match="(?i)negative"):
        SparsemaxClassifier().fit(X, y, sample_weight=-np.ones(10))


def test_sample_weight_equals_repetition_objective():
    X, y = _blobs(n=30)
    rng = np.random.default_rng(8)
    sw = rng.integers(0, 4, 30).astype(float)
    weighted = SparsemaxClassifier(alpha=1e-2, tol=1e-10).fit(X, y, sample_weight=sw)
    rep = SparsemaxClassifier(alpha=1e-2, tol=1e-10).fit(X.repeat(sw.astype(int), 0),
                                                           y.repeat(sw.astype(int)))
    Y = np.eye(3)[y]
    f_w = _objective_at(weighted, X, Y, sw)
    f_r = _objective_at(rep, X, Y, sw)
    assert f_w == pytest.approx(f_r, rel=1e-7)
    np.testing.assert_allclose(weighted.coef_, rep.coef_, atol=1e-4)


def test_warm_start_and_convergence_warning():
    X, y = _blobs(n=200, d=8, k=4)
    with pytest.warns(ConvergenceWarning):
        clf = SparsemaxClassifier(alpha=1e-4, max_iter=2, warm_start=True, tol=1e-6).fit(X, y)
    clf.set_params(max_iter=1000)
    clf.fit(X, y)
    cold = SparsemaxClassifier(alpha=1e-4, tol=1e-6).fit(X, y)
    again = clf.fit(X, y).n_iter_
    assert again < cold.n_iter_
    np.testing.assert_allclose(clf.predict_proba(X), cold.predict_proba(X), atol=1e-3)


def test_positive_bounds_and_no_intercept():
    X, y = _blobs()
    Y = np.eye(3)[y]
    clf = SparsemaxClassifier(positive=True, tol=1e-10).fit(X, y)
    assert (clf.coef_ >= 0).all() and (clf.coef_ > 0).any()
    _assert_locally_optimal(clf, X, Y, lo=0.0)
    box = SparsemaxClassifier(bounds=(-0.1, 0.2), tol=1e-10).fit(X, y)
    assert (box.coef_ >= -0.1).all() and (box.coef_ <= 0.2).all()
    _assert_locally_optimal(box, X, Y, lo=-0.1, hi=0.2)
    upper = np.array([[0.0], [1.0], [1.0]])
    per = SparsemaxClassifier(bounds=(None, upper), tol=1e-10).fit(X, y)
    assert (per.coef_[0] <= 0).all()
    _assert_locally_optimal(per, X, Y, hi=upper)
    free = SparsemaxClassifier(fit_intercept=False).fit(X, y)
    np.testing.assert_array_equal(free.intercept_, 0)
    pen = SparsemaxClassifier(alpha=10.0, penalize_intercept=True).fit(X, y)
    unpen = SparsemaxClassifier(alpha=10.0).fit(X, y)
    assert np.linalg.norm(pen.intercept_) < np.linalg.norm(unpen.intercept_)


@pytest.mark.parametrize("sparse", [False, True])
def test_default_alpha_follows_the_scale_of_x(sparse):
    """alpha="scale" is 5e-5 times the weighted mean squared row norm, so that multiplying X
    by a constant divides the coefficients by it and leaves the probabilities as they are
    (the sparsemax support depends on the scale of the scores)."""
    X, y = _blobs(n=80, d=5)
    sw = np.random.default_rng(1).uniform(0.5, 2.0, 80)
    fits = {}
    for c in (1.0, 30.0, 0.05):
        Xc = sp.csr_matrix(c * X) if sparse else c * X
        fits[c] = SparsemaxClassifier(tol=1e-10).fit(Xc, y, sample_weight=sw)
        expected = 5e-5 * np.average(np.sum((c * X) ** 2, axis=1), weights=sw)
        assert fits[c].alpha_ == pytest.approx(expected, rel=1e-12)
    for c in (30.0, 0.05):
        np.testing.assert_allclose(c * fits[c].coef_, fits[1.0].coef_, atol=1e-4)
        np.testing.assert_allclose(fits[c].predict_proba(c * X), fits[1.0].predict_proba(X),
                                   atol=1e-4)
    assert SparsemaxClassifier(alpha=0.25).fit(X, y).alpha_ == 0.25
    assert SparsemaxClassifier().fit(np.zeros((6, 2)), y[:6]).alpha_ == 5e-5  # X = 0


@pytest.mark.parametrize("solver,sparse", [("lbfgs", False), ("nqn", False),
                                           ("newton-cg", True), ("sdca", True)])
def test_the_fit_does_not_depend_on_the_units_of_x(solver, sparse):
    """The solvers see the weights times the root-mean-square of X's nonzero entries, and
    SDCA's free intercept a constant feature of that size, so at the default tol a fit on
    c X runs the iterations of the fit on X and gives its probabilities: before, X x 1e-6
    stopped at once with the class frequencies (the gradient below tol at W = 0), X x 1e6
    ran into max_iter, and SDCA's intercept crawled at either end; X x 1e±100 made
    newton-cg's float32 Hessian products overflow or vanish."""
    X, y = _blobs(n=300, d=6, seed=3)
    X[np.abs(X) < 1.0] = 0.0                          # sparse rows, entries not of size 1
    fits = {}
    factors = (1e-100, 1e-6, 1e6, 1e100)              # 1e±100: outside float32's range
    for c in (1.0, *factors):
        Xc = sp.csr_matrix(c * X) if sparse else c * X
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            fits[c] = SparsemaxClassifier(solver=solver, random_state=0).fit(Xc, y)
    base = fits[1.0]
    assert base.score(X, y) > 0.8
    for c in factors:
        assert abs(fits[c].n_iter_ - base.n_iter_) <= max(2, base.n_iter_ // 10)
        np.testing.assert_allclose(fits[c].predict_proba(c * X), base.predict_proba(X),
                                   atol=1e-5)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_column_in_other_units_does_not_set_the_scale(sparse):
    """alpha="scale" and the solvers' scale read X's squared norms with a column whose
    nonzero entries have a mean square above 1000 times the median column's counted as if
    its entries were of that size: standardized features beside an identifier (0, 1, 2,
    ...) or a timestamp fit about as the features alone do (before, alpha followed the
    extra column's squares, 1e5 to 1e18 times the features', and the fits predicted near
    chance), and in about their iterations (the solvers' variable scales that column's
    weight by its own factor); entries 30 times larger, or a column 2000 times rarer (as
    a rare word's), keep the plain mean squared norm."""
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(1200, 8, n_informative=5, random_state=0)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(4)
    sw = rng.uniform(0.5, 2.0, y.size)
    train, test = np.arange(800), np.arange(800, 1200)
    given = sp.csr_matrix if sparse else np.asarray
    alone = SparsemaxClassifier().fit(given(X[train]), y[train], sample_weight=sw[train])
    for extra in (np.arange(y.size, dtype=float), 1.7e9 + rng.uniform(0, 3e7, y.size)):
        Xe = np.column_stack([X, extra])
        fit = SparsemaxClassifier().fit(given(Xe[train]), y[train], sample_weight=sw[train])
        squares, counts = sw[train] @ Xe[train] ** 2, sw[train] @ (Xe[train] != 0)
        cap = 1000 * np.median(squares / counts)
        capped = np.minimum(squares, cap * counts).sum()
        assert capped < 0.01 * squares.sum()
        assert fit.alpha_ == pytest.approx(5e-5 * capped / sw[train].sum(), rel=1e-10)
        assert fit.score(given(Xe[test]), y[test]) >= alone.score(given(X[test]), y[test]) - 0.03
        # its solver weight scaled by its own factor: about the features' iterations (one
        # scale for all columns took 150 there)
        assert fit.n_iter_ <= 3 * alone.n_iter_ + 10
    rare = np.zeros(y.size)
    rare[7] = 1.0
    for within in (X * np.where(np.arange(8) == 0, 30.0, 1.0), np.column_stack([X, rare])):
        fit = SparsemaxClassifier().fit(given(within), y, sample_weight=sw)
        expected = 5e-5 * np.average(np.sum(within ** 2, axis=1), weights=sw)
        assert fit.alpha_ == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_columns_whose_squares_underflow_beside_others_fit(sparse):
    """Most columns of entries ~1e-170 (squares 0 in float64) beside two of unit scale:
    the median column's mean square is 0, so no column counts as in other units (before,
    every factor was inf or NaN and the fit ended in "non-finite coefficients")."""
    X, y = _blobs(d=6)
    X = X * np.where(np.arange(6) < 4, 1e-170, 1.0)
    given = sp.csr_matrix if sparse else np.asarray
    fit = SparsemaxClassifier().fit(given(X), y)
    assert np.all(np.isfinite(fit.coef_)) and fit.score(given(X), y) > 0.5


@pytest.mark.parametrize("sparse", [False, True])
def test_entries_whose_squares_underflow_are_refused(sparse):
    """The weight scale is the root-mean-square of X's entries: below ~1e-154 the squares
    underflow float64 and the fit would be the fit of X = 0 (before, silently). float32
    entries of 1e-30, whose squares underflow float32, fit as X does (their squares are
    summed in float64: sparse float32 X at 1e-25 fit the class frequencies)."""
    X, y = _blobs()
    given = sp.csr_matrix if sparse else np.asarray
    with pytest.raises(ValueError, match="underflow float64; rescale"):
        SparsemaxClassifier().fit(given(1e-160 * X), y)
    small = given((1e-30 * X).astype(np.float32))
    expected = SparsemaxClassifier().fit(X, y).predict_proba(X)
    np.testing.assert_allclose(SparsemaxClassifier().fit(small, y).predict_proba(small),
                               expected, atol=1e-4)


def test_verbose_prints(capsys):
    X, y = _blobs()
    SparsemaxClassifier(verbose=1, max_iter=3).fit(X, y)
    assert "objective" in capsys.readouterr().out


def test_nqn_solver_parity():
    pytest.importorskip("sparsekit.optimize", reason="NQN not available")
    from sparsekit import optimize

    if not hasattr(optimize, "minimize_nqn"):
        pytest.skip("minimize_nqn not available")
    X, y = _blobs()
    lb = SparsemaxClassifier(alpha=1e-2, tol=1e-8).fit(X, y)
    nqn = SparsemaxClassifier(alpha=1e-2, tol=1e-8, solver="nqn").fit(X, y)
    Y = np.eye(3)[y]
    assert _objective_at(nqn, X, Y) == pytest.approx(_objective_at(lb, X, Y), rel=1e-6)
    pos = SparsemaxClassifier(alpha=1e-2, tol=1e-8, solver="nqn", positive=True).fit(X, y)
    assert (pos.coef_ >= 0).all()
    pos_lb = SparsemaxClassifier(alpha=1e-2, tol=1e-8, positive=True).fit(X, y)
    assert _objective_at(pos, X, Y) == pytest.approx(_objective_at(pos_lb, X, Y), rel=1e-6)


def test_pipeline_gridsearch_pickle():
    X, y = _blobs(n=90)
    pipe = make_pipeline(StandardScaler(), SparsemaxClassifier())
    search = GridSearchCV(pipe, {"sparsemaxclassifier__alpha": [1e-3, 1e-1]}, cv=3)
    search.fit(X, y)
    assert search.best_score_ > 0.8
    clone = pickle.loads(pickle.dumps(search.best_estimator_))
    np.testing.assert_array_equal(clone.predict_proba(X), search.predict_proba(X))


def test_cuda_device_errors_without_gpu():
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed")
    except ImportError:
        pass
    X, y = _blobs(n=10)
    with pytest.raises(ImportError, match="CuPy"):
        SparsemaxClassifier(device="cuda").fit(X, y)


def test_tags_let_the_multilabel_checks_run():
    """scikit-learn's multi-label checks (tests/test_common.py) run only with these tags."""
    tags = SparsemaxClassifier().__sklearn_tags__()
    assert tags.classifier_tags.multi_label and tags.target_tags.multi_output


@pytest.mark.parametrize("polytope", ["simplex", "budget", "at_least_one"])
@pytest.mark.parametrize("sparse", [False, True])
def test_newton_cg_matches_lbfgs(polytope, sparse):
    rng = np.random.default_rng(9)
    X, y = _blobs(n=80, d=5, k=4)
    X = np.abs(X) + 3.0  # a large feature mean: the centered coordinates matter
    Y = np.eye(4, dtype=int)[y]
    if polytope != "simplex":
        Y[rng.random(80) < 0.3, 0] = 1
    Xin = sp.csr_matrix(X) if sparse else X
    kw = dict(alpha=1e-2, tol=1e-9, polytope=polytope, max_iter=5000,
              budget=2 if polytope == "budget" else None)
    newton = SparsemaxClassifier(solver="newton-cg", **kw).fit(Xin, Y)
    lbfgs = SparsemaxClassifier(**kw).fit(Xin, Y)
    Yt = newton._encode_targets(Y, newton._check_budget())[0].toarray()
    assert _objective_at(newton, X, Yt) == pytest.approx(_objective_at(lbfgs, X, Yt),
                                                         rel=1e-7)
    assert newton.n_iter_ < 50


def test_newton_cg_options():
    X, y = _blobs()
    with pytest.raises(ValueError, match="newton-cg"):
        SparsemaxClassifier(solver="newton-cg", positive=True).fit(X, y)
    pen = SparsemaxClassifier(solver="newton-cg", penalize_intercept=True, alpha=1.0,
                              tol=1e-10).fit(X, y)
    ref = SparsemaxClassifier(penalize_intercept=True, alpha=1.0, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(pen.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(pen.intercept_, ref.intercept_, atol=1e-6)
    free = SparsemaxClassifier(solver="newton-cg", fit_intercept=False).fit(X, y)
    np.testing.assert_array_equal(free.intercept_, 0)
    with pytest.warns(ConvergenceWarning):
        SparsemaxClassifier(solver="newton-cg", alpha=1e-6, max_iter=1).fit(X, y)


def test_newton_cg_converging_on_its_last_allowed_step_does_not_warn():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 5))
    y = np.argmax(X @ rng.standard_normal((5, 4)) + rng.standard_normal((80, 4)), axis=1)
    free = SparsemaxClassifier(alpha=1e-2, tol=1e-4, solver="newton-cg").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        capped = SparsemaxClassifier(alpha=1e-2, tol=1e-4, solver="newton-cg",
                                     max_iter=free.n_iter_).fit(X, y)
    np.testing.assert_array_equal(capped.coef_, free.coef_)


@pytest.mark.parametrize("X, y", [_blobs(), _blobs(n=400, d=8, k=5, seed=3)])
def test_nqn_on_float32_stops_at_the_rounding_floor_without_a_warning(X, y):
    """No decrease of a float32 objective is its floor (L-BFGS-B calls it a success);
    the fit is as close to the float64 optimum as L-BFGS-B's."""
    X32, Y = X.astype(np.float32), np.eye(y.max() + 1)[y]
    ref = SparsemaxClassifier(alpha=1e-2, solver="newton-cg", tol=1e-12).fit(X, y)
    f_ref = _objective_at(ref, X, Y)
    gaps = {}
    for solver in ["lbfgs", "nqn"]:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            clf = SparsemaxClassifier(alpha=1e-2, solver=solver).fit(X32, y)
        gaps[solver] = _objective_at(clf, X, Y) - f_ref
    assert gaps["nqn"] <= max(10 * gaps["lbfgs"], 1e-8)


@pytest.mark.parametrize("solver", ["lbfgs", "newton-cg"])
def test_mostly_zero_dense_input(solver):
    """Dense X with few nonzeros is fit through the CSR kernel: same optimum."""
    rng = np.random.default_rng(10)
    X, y = _blobs(n=60, d=8)
    X[rng.random(X.shape) < 0.85] = 0
    Y = np.eye(3)[y]
    dense = SparsemaxClassifier(alpha=1e-2, tol=1e-9, solver=solver).fit(X, y)
    csr = SparsemaxClassifier(alpha=1e-2, tol=1e-9).fit(sp.csr_matrix(X), y)
    assert _objective_at(dense, X, Y) == pytest.approx(_objective_at(csr, X, Y), rel=1e-8)



@pytest.mark.parametrize("solver, sparse", [("lbfgs", False), ("sdca", True)])
def test_class_weight_equals_sample_weight(solver, sparse):
    """class_weight multiplies the rows' weights by their class's: the fit given those
    weights as sample_weight (times the user's own)."""
    X, y = _blobs(n=90, seed=4)
    X = sp.csr_matrix(X) if sparse else X
    labels = np.array(["a", "b", "c"])[y]
    sw = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    kw = dict(alpha=1e-2, solver=solver, tol=1e-10, max_iter=5000, random_state=0)
    a = SparsemaxClassifier(class_weight={"a": 1.0, "b": 3.0, "c": 0.5}, **kw).fit(
        X, labels, sample_weight=sw)
    b = SparsemaxClassifier(**kw).fit(X, labels, sample_weight=sw * np.array([1, 3, .5])[y])
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-7)
    np.testing.assert_allclose(a.intercept_, b.intercept_, atol=1e-7)


def test_balanced_class_weight_counts_sample_weight_as_repeated_rows():
    X, y = _blobs(n=70, seed=5)
    counts = np.random.default_rng(0).integers(1, 4, len(y))
    rows = np.repeat(np.arange(len(y)), counts)
    est = SparsemaxClassifier(class_weight="balanced", tol=1e-10)
    a = est.fit(X, y, sample_weight=counts).coef_.copy()
    np.testing.assert_allclose(est.fit(X[rows], y[rows]).coef_, a, atol=1e-7)


def test_balanced_class_weight_recovers_a_rare_class():
    """A class of 5% of the rows, overlapping the others: 'balanced' predicts it far more
    often (its recall rises), as with scikit-learn's LogisticRegression."""
    rng = np.random.default_rng(3)
    y = (rng.random(2000) < 0.05).astype(int)
    X = rng.standard_normal((2000, 3)) + 1.2 * y[:, None]
    plain = SparsemaxClassifier().fit(X, y)
    balanced = SparsemaxClassifier(class_weight="balanced").fit(X, y)
    recall = [np.mean(m.predict(X)[y == 1] == 1) for m in (plain, balanced)]
    assert recall[1] > recall[0] + 0.3
    assert 0.5 < np.mean(balanced.predict(X)[y == 0] == 0) < 1.0


def test_class_weight_needs_class_labels_and_weight():
    X, y = _blobs(n=40, seed=6)
    with pytest.raises(ValueError, match="for 2-D targets"):
        SparsemaxClassifier(class_weight="balanced").fit(X, np.eye(3)[y])
    with pytest.raises(ValueError, match="has none"):
        SparsemaxClassifier(class_weight="balanced").fit(
            X, y, sample_weight=np.where(y == 2, 0.0, 1.0))
    with pytest.raises(ValueError, match="finite and non-negative"):
        SparsemaxClassifier(class_weight={0: 1.0, 1: -1.0, 2: 1.0}).fit(X, y)


# ------------------------------------- smoke tests (notes/sparsemax_report.md §4.1 item 14)
def _cv_sparsemax_loss_and_misses(clf, X, y, seed):
    """Per-fold sparsemax loss (report eq. 8, via project_ref) and misses, 5-fold stratified."""
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold
    from threadpoolctl import threadpool_limits

    folds = []
    for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y):
        # one BLAS/OpenMP thread: ~0.1 s per digits fit, 50x slower when oversubscribed
        with warnings.catch_warnings(), threadpool_limits(1):
            warnings.simplefilter("error", ConvergenceWarning)
            fitted = clone(clf).fit(X[train], y[train])
        Z = fitted.decision_function(X[test])
        Y = (y[test][:, None] == fitted.classes_).astype(float)
        P = np.array([project_ref(z, "simplex") for z in Z])
        loss = np.mean(0.5 * ((Y - Z) ** 2).sum(1) - 0.5 * ((P - Z) ** 2).sum(1))
        folds.append((loss, int(np.sum(fitted.predict(X[test]) != y[test])), test.size))
    return folds


@pytest.mark.parametrize("seed", [42, 0, 1])
def test_iris_smoke_cv_loss_and_miss_rate(seed):
    """Iris, default estimator: CV fold loss < 0.2 and miss rate < 0.1 (report §4.1 item 14).

    Measured over 30 shuffles: fold loss <= 0.075, pooled miss rate <= 0.04 (6/150). The
    report's per-fold miss rate < 0.1 is checked on the pooled out-of-fold predictions:
    with 30 rows a fold has 3 misses (= 0.1) in 3 of those 150 folds.
    """
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    folds = _cv_sparsemax_loss_and_misses(SparsemaxClassifier(), X, y, seed)
    assert max(loss for loss, _, _ in folds) < 0.2
    assert sum(miss for _, miss, _ in folds) / y.size < 0.1


@pytest.mark.parametrize("seed", [42, 0])
def test_digits_smoke_cv_loss_and_miss_rate(seed):
    """Digits, alpha = 0.1: every CV fold has loss < 0.2, miss rate < 0.1 (report §4.1 item 14).

    The report's lambda = 1e-1 with its penalized bias (eq. 11); the default alpha = 1e-3
    stops at max_iter on the unscaled pixels. Measured over 7 shuffles: fold loss
    <= 0.041, fold miss rate <= 0.053.
    """
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    clf = SparsemaxClassifier(alpha=0.1, penalize_intercept=True)
    for loss, miss, size in _cv_sparsemax_loss_and_misses(clf, X, y, seed):
        assert loss < 0.2 and miss / size < 0.1


@pytest.mark.parametrize("solver", ["lbfgs", "newton-cg", "nqn", "sdca"])
def test_warm_start_into_a_fit_without_intercept_carries_none(solver):
    X, y = _blobs()
    kw = dict(solver=solver, alpha=0.1, tol=1e-8)
    clf = SparsemaxClassifier(warm_start=True, **kw).fit(X, y)
    assert np.any(clf.intercept_)
    clf.set_params(fit_intercept=False).fit(X, y)
    cold = SparsemaxClassifier(fit_intercept=False, **kw).fit(X, y)
    np.testing.assert_array_equal(clf.intercept_, 0.0)
    np.testing.assert_allclose(clf.predict_proba(X), cold.predict_proba(X), atol=1e-5)


def test_sdca_takes_csr_with_index_arrays_of_two_types():
    X, y = _blobs()
    Xs = sp.csr_matrix(X)
    Xs.indptr = Xs.indptr.astype(np.int64)  # indices stay int32
    assert Xs.indices.dtype != Xs.indptr.dtype
    kw = dict(solver="sdca", alpha=0.1, tol=1e-8, random_state=0)
    np.testing.assert_allclose(SparsemaxClassifier(**kw).fit(Xs, y).coef_,
                               SparsemaxClassifier(**kw).fit(X, y).coef_, atol=1e-6)


def test_proportion_targets_with_rounding_noise_are_accepted():
    X, y = _blobs()
    Y = np.eye(3)[y] * 0.93 + 0.07 * np.eye(3)[(y + 1) % 3]
    Y[:, 2] = 1.0 - Y[:, 0] - Y[:, 1]  # exact zeros become +-1e-16 here and there
    Y[0] = [0.07, 0.93, 1.0 - 0.07 - 0.93]
    assert Y.min() < 0
    clf = SparsemaxClassifier(alpha=0.1).fit(X, Y)
    assert clf.target_type_ == "proportions"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        SparsemaxClassifier().fit(X, Y - 1e-3)


def test_bounds_with_nan_or_the_wrong_shape_are_clear_errors():
    X, y = _blobs()
    with pytest.raises(ValueError, match="NaN"):
        SparsemaxClassifier(bounds=(np.nan, 0.01)).fit(X, y)
    with pytest.raises(ValueError, match="broadcastable"):
        SparsemaxClassifier(bounds=(np.zeros(7), None)).fit(X, y)


def test_fit_never_modifies_a_sparse_float64_target():
    """The target cleaning (duplicates summed, zeros dropped, rounding noise clipped) works
    on a copy, also when fit then rejects the target."""
    X = np.random.RandomState(0).randn(6, 3)
    Y = sp.csr_matrix(np.tile(np.eye(3), (2, 1)) * [1 + 5e-7, 1, 1])
    data = Y.data.copy()
    SparsemaxClassifier().fit(X, Y)
    np.testing.assert_array_equal(Y.data, data)
    Y2 = sp.csr_matrix((np.ones(7), [0, 1, 2, 0, 1, 2, 2], [0, 1, 2, 3, 4, 5, 7]), shape=(6, 3))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        SparsemaxClassifier(polytope="box").fit(X, Y2)
    assert Y2.nnz == 7 and not Y2.has_canonical_format


def test_a_refit_that_fails_keeps_the_fitted_model():
    """Target encoding set classes_ and target_type_ before the polytope check failed: the
    old coefficients were then decoded as proportions."""
    X = np.random.default_rng(0).normal(size=(8, 3))
    y = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    model = SparsemaxClassifier().fit(X, y)
    before = model.predict(X)
    with pytest.raises(ValueError, match="sum to 1"):
        model.fit(X, np.full((8, 3), 0.5))
    with pytest.raises(ValueError):
        model.fit(X[:, :2], np.linspace(0, 1, 8))
    assert model.target_type_ == "multiclass" and model.n_features_in_ == 3
    np.testing.assert_array_equal(model.predict(X), before)


def test_a_sparse_label_column_is_read_as_the_dense_one():
    X, y = _blobs(k=2)
    col = y[:, None].astype(float)
    with pytest.warns(DataConversionWarning):
        dense = SparsemaxClassifier().fit(X, col)
    with pytest.warns(DataConversionWarning):
        sparse = SparsemaxClassifier().fit(X, sp.csr_matrix(col))
    assert sparse.target_type_ == dense.target_type_ == "multiclass"
    np.testing.assert_array_equal(sparse.classes_, [0.0, 1.0])
    np.testing.assert_array_equal(sparse.coef_, dense.coef_)


def test_sdca_warm_refit_at_the_optimum_does_not_warn():
    """The stall test's scale does not come from the first epoch of a warm start."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    clf = SparsemaxClassifier(alpha=0.1, solver="sdca", tol=0.0, max_iter=20000,
                              random_state=0, warm_start=True).fit(X, y)
    coef = clf.coef_.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(X, y)
    np.testing.assert_allclose(clf.coef_, coef, atol=1e-12)


def test_sdca_on_a_column_in_other_units_names_it_when_it_does_not_converge():
    """SDCA's steps follow the rows' norms, which a column of zip codes sets: its fit does
    not converge (chance accuracy after max_iter epochs), and the warning names the column
    and advises standardizing or L-BFGS, which fits it; without such a column the advice
    stays the general one."""
    pd = pytest.importorskip("pandas")
    from sklearn.datasets import make_classification

    X, y = make_classification(2000, 6, n_informative=4, n_redundant=0, n_classes=3,
                               random_state=0)
    X[:, 5] = np.random.default_rng(0).integers(10_000, 100_000, 2000)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(5)] + ["zip"])
    match = (r"the nonzero entries of column 'zip' have a root mean square .* times the "
             r"median column's: SDCA's steps .*\(StandardScaler.* solver='lbfgs'")
    with pytest.warns(ConvergenceWarning, match=match):
        SparsemaxClassifier(solver="sdca", max_iter=50, random_state=0).fit(frame, y)
    with pytest.warns(ConvergenceWarning, match=r"entries of column 5 have"):
        SparsemaxClassifier(solver="sdca", max_iter=50, random_state=0).fit(X, y)
    from sklearn.preprocessing import StandardScaler
    scaled = StandardScaler().fit_transform(X)
    assert (SparsemaxClassifier(solver="lbfgs").fit(frame, y).score(frame, y)
            >= SparsemaxClassifier().fit(scaled, y).score(scaled, y) - 0.01)
    with pytest.warns(ConvergenceWarning, match=r"increase max_iter or scale the data"):
        SparsemaxClassifier(solver="sdca", max_iter=1, tol=0.0).fit(X[:, :5], y)


def test_sdca_on_an_ill_conditioned_dual_says_so_when_it_does_not_converge():
    """At the default alpha SDCA's dual is ill-conditioned on few rows (mean ||x||^2 over
    alpha n grows as 1/n): the warning gives that ratio against solver='auto''s bound and
    advises L-BFGS or a larger alpha, not rescaling (alpha='scale' follows the data's
    scale); L-BFGS fits the same data at once, and so does SDCA at a larger alpha."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 8))
    y = np.argmax(X[:, :3] + 0.5 * rng.standard_normal((200, 3)), axis=1)
    match = (r"mean squared norm is 11\d times alpha_ \* n_samples \(alpha_ = .*, 200 rows\)"
             r".* up to 20 times\): use solver='lbfgs' or 'auto', or a larger alpha")
    with pytest.warns(ConvergenceWarning, match=match):
        SparsemaxClassifier(solver="sdca", max_iter=100, random_state=0).fit(X, y)
    with pytest.warns(ConvergenceWarning, match=match):      # the same ratio at 10x the scale
        SparsemaxClassifier(solver="sdca", max_iter=100, random_state=0).fit(10 * X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SparsemaxClassifier(solver="lbfgs").fit(X, y)
        SparsemaxClassifier(solver="sdca", alpha=0.05, random_state=0).fit(X, y)


@pytest.mark.parametrize("sparse_x", [False, True])
def test_kernel_sums_duplicate_target_entries(sparse_x):
    """Targets arrive as CSR arrays; a non-canonical CSR with duplicate column entries means
    their sum (scipy semantics), e.g. a label split into two halves of 0.5."""
    rng = np.random.default_rng(3)
    n, d, k = 6, 3, 4
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, k))
    b = rng.standard_normal(k)
    sw = np.ones(n)
    labels = rng.integers(0, k, n)
    # canonical one-hot targets
    yptr_c = np.arange(n + 1, dtype=np.int64)
    yind_c = labels.astype(np.int64)
    ydat_c = np.ones(n)
    # the same targets, each 1 written as 0.5 + 0.5 on the same column
    yptr_d = (2 * np.arange(n + 1)).astype(np.int64)
    yind_d = np.repeat(labels, 2).astype(np.int64)
    ydat_d = np.full(2 * n, 0.5)
    code = _POLYTOPE_CODES["simplex"]
    out = []
    for yptr, yind, ydat in [(yptr_c, yind_c, ydat_c), (yptr_d, yind_d, ydat_d)]:
        gW, gb = np.empty_like(W), np.empty(k)
        args = (W, b, yptr, yind, ydat, sw, code, 1.0)
        if sparse_x:
            Xc = sp.csr_matrix(X)
            loss = loss_grad_csr(Xc.data, Xc.indices, Xc.indptr, *args, gW, gb)
        else:
            loss = loss_grad_dense(X, *args, gW, gb, 4)
        out.append((loss, gW, gb))
    for a, c in zip(*out):
        np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-12)


def test_a_single_class_is_an_error_as_in_scikit_learn():
    """A constant model (proba 1 everywhere) hid e.g. a CV fold holding one class."""
    X = np.random.default_rng(0).normal(size=(20, 3))
    for y in (np.zeros(20, dtype=int), np.array(["a"] * 20)):
        with pytest.raises(ValueError, match="only one class"):
            SparsemaxClassifier().fit(X, y)
    assert SparsemaxClassifier().fit(X, np.arange(20) % 2).classes_.tolist() == [0, 1]


def test_lbfgs_float32_line_search_warning_says_what_it_means(monkeypatch):
    """L-BFGS-B's ABNORMAL stop (no decrease in its line search) is, for a float32
    objective, usually its rounding floor: the warning says so instead of "ABNORMAL: "."""
    import sparsekit.linear_model._sparsemax_solvers as solvers

    def abnormal(*args, **kwargs):
        res = minimize(*args, **kwargs)
        res.success, res.status, res.message = False, 2, "ABNORMAL: "
        return res

    from sklearn.datasets import load_iris

    minimize = solvers.minimize
    monkeypatch.setattr(solvers, "minimize", abnormal)
    X, y = load_iris(return_X_y=True)
    with pytest.warns(ConvergenceWarning, match=r"\(ABNORMAL\); its line search found no "
                                                r"decrease, which for float32 X"):
        SparsemaxClassifier().fit(X.astype(np.float32), y)
    with pytest.warns(ConvergenceWarning, match=r"\(ABNORMAL\); increase max_iter"):
        SparsemaxClassifier().fit(X, y)


@pytest.mark.parametrize("solver", ["lbfgs", "nqn", "newton-cg"])
def test_huge_sample_weights_fit_as_their_scaled_copy(solver):
    """The objective is a weighted mean: weights of 1e307 (whose sum overflows) fit exactly
    as unit weights, in float64 and float32 (they once left a NaN intercept)."""
    X, y = _blobs(n=20)
    for dtype in (np.float64, np.float32):
        ref = SparsemaxClassifier(solver=solver).fit(X.astype(dtype), y)
        big = SparsemaxClassifier(solver=solver).fit(X.astype(dtype), y,
                                                    sample_weight=np.full(len(y), 1e307))
        np.testing.assert_array_equal(big.coef_, ref.coef_)
        np.testing.assert_array_equal(big.intercept_, ref.intercept_)


def test_features_whose_squares_overflow_the_working_precision_are_rejected():
    X, y = _blobs(n=20)
    with pytest.raises(ValueError, match="overflow float32; rescale the features"):
        SparsemaxClassifier().fit((X * 1e37).astype(np.float32), y)
    SparsemaxClassifier().fit(X * 1e37, y)              # float64 squares are still finite


@pytest.mark.parametrize("bad, match", [
    (lambda Y: np.where(Y == 1, np.nan, 0.0), "NaN or infinity"),
    (lambda Y: -Y, r"\[0, 1\]"),
    (lambda Y: Y[:, :2], r"shape \(n_samples, 3\)"),
])
def test_score_checks_two_dimensional_targets_as_fit_does(bad, match):
    X, y = _blobs(n=30)
    Y = np.eye(3)[y]
    clf = SparsemaxClassifier(polytope="box").fit(X, Y)
    with pytest.raises(ValueError, match=match):
        clf.score(X, bad(Y))
    assert clf.score(X, sp.csr_matrix(Y)) == clf.score(X, Y)


def _label_collections(Y):
    """Y's label sets as a list of labels per example, as sets, as an object array of
    tuples (a pandas Series of lists is one)."""
    rows = [np.flatnonzero(row).tolist() for row in Y]
    tuples = np.empty(len(rows), dtype=object)
    tuples[:] = [tuple(r) for r in rows]
    return [rows, [set(r) for r in rows], tuples]


def test_label_sets_as_collections_of_labels_name_the_binarizer():
    """Label sets written as a collection of labels per example (ExtremeSoftmaxSGD's
    multi-label input, a JSON field of tags) are refused with the conversion to an indicator
    matrix; rows of 0/1 of one length are that matrix; a matrix of text is named as text."""
    X, y = _blobs(n=30)
    Y = np.eye(3, dtype=int)[y]
    Y[::4, (y[::4] + 1) % 3] = 1
    for labels in _label_collections(Y):
        with pytest.raises(ValueError, match="y holds a collection of labels per example; "
                                             "SparsemaxClassifier takes label sets as a 0/1 "
                                             "indicator matrix.*MultiLabelBinarizer"):
            SparsemaxClassifier().fit(X, labels)
    assert SparsemaxClassifier().fit(X, Y.tolist()).predict(X).shape == (30, 3)
    with pytest.raises(ValueError, match="2-D targets are label-indicator .* numbers .*'yes'"
                                         ".*: map text such as yes/no to 1/0"):
        SparsemaxClassifier().fit(X, np.where(Y == 1, "yes", "no"))


def test_newton_cg_float32_intercept_does_not_drift_along_the_common_shift():
    """On the simplex a constant added to every intercept changes nothing; float32 rounding
    in that direction, divided by the Newton damping, once moved the intercepts by ~-1088."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 6))
    y = np.arange(60) % 3
    f32 = SparsemaxClassifier(solver="newton-cg").fit(X.astype(np.float32), y)
    f64 = SparsemaxClassifier(solver="newton-cg").fit(X, y)
    np.testing.assert_allclose(f32.intercept_, f64.intercept_, atol=1e-5)


# --- solver options seen from the estimator: threshold, verbose lines, float32 stops

def test_threshold_decides_the_predicted_labels_strictly():
    """predict is proba > threshold: strict, and the threshold is used."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    Y = (rng.random((30, 3)) < 0.5).astype(int)
    clf = SparsemaxClassifier(polytope="box", threshold=0.5).fit(X, Y)
    clf.coef_ = np.zeros_like(clf.coef_)
    clf.intercept_ = np.array([0.5, 0.2, 0.8])     # box: proba = clip(scores, 0, 1)
    np.testing.assert_array_equal(clf.predict(X[:2]), [[0, 0, 1], [0, 0, 1]])
    clf.set_params(threshold=0.0)                  # the support
    np.testing.assert_array_equal(clf.predict(X[:2]), [[1, 1, 1], [1, 1, 1]])


@pytest.mark.parametrize("polytope, params, intercept, proba, expected", [
    ("budget", {"budget": 2}, [1.0, 0.2, -1.0], [1.0, 0.2, 0.0], [1, 0, 0]),
    ("at_most_one", {}, [0.7, 0.3, -1.0], [0.7, 0.3, 0.0], [1, 0, 0]),
    ("box", {"negated": [True, False, False]}, [1.0, 0.2, -1.0], [1.0, 0.2, 0.0],
     [1, 0, 0]),
])
def test_auto_threshold_is_one_half_on_coupled_marginals(polytope, params, intercept, proba,
                                                         expected):
    """Marginals of the polytopes that couple the labels (and negated ones) are cut at
    1/2: a lower cut could predict two labels of an at-most-one polytope."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    Y = np.eye(3, dtype=int)[rng.integers(0, 3, 30)]
    clf = SparsemaxClassifier(polytope=polytope, **params).fit(X, Y)
    assert clf.threshold_ == 0.5
    clf.coef_ = np.zeros_like(clf.coef_)
    clf.intercept_ = np.array(intercept)
    np.testing.assert_allclose(clf.predict_proba(X[:1]), [proba])
    np.testing.assert_array_equal(clf.predict(X[:1]), [expected])


def _label_sets(n=200, d=6, k=5, seed=0):
    """Rows whose labels follow their features loosely: 1-3 labels each."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    scores = X @ rng.standard_normal((d, k)) + 1.5 * rng.standard_normal((n, k))
    Y = (scores > np.quantile(scores, 0.7, axis=1, keepdims=True)).astype(int)
    Y[np.arange(n), scores.argmax(axis=1)] = 1
    return X, Y


def _micro_f1(Y, predicted, sw=None):
    from sklearn.metrics import f1_score
    return f1_score(Y, predicted, average="micro", sample_weight=sw, zero_division=0.0)


@pytest.mark.parametrize("polytope", ["simplex", "box"])
@pytest.mark.parametrize("sparse, dtype", [(False, np.float64), (True, np.float32)])
def test_auto_threshold_on_label_sets_has_the_best_training_micro_f1(sparse, dtype,
                                                                     polytope):
    """On the simplex and the box, label sets are cut where the training rows' micro-F1
    is largest: no cut of their projections (the support included) does better."""
    X, Y = _label_sets()
    X = sp.csr_matrix(X, dtype=dtype) if sparse else X.astype(dtype)
    clf = SparsemaxClassifier(polytope=polytope).fit(X, Y)
    P = clf.predict_proba(X)
    best = _micro_f1(Y, clf.predict(X))
    cuts = [np.nextafter(v, -np.inf) for v in np.unique(P[P > 0])] + [0.0]
    assert best >= max(_micro_f1(Y, P > t) for t in cuts) - 1e-12
    assert 0.0 < clf.threshold_ < P.max()
    assert best > _micro_f1(Y, P > 0)            # the support holds more labels than rows
    if polytope == "box":                        # 1/2 predicts fewer labels than the rows
        assert clf.threshold_ < 0.5 and best > _micro_f1(Y, P > 0.5)
    np.testing.assert_array_equal(clf.predict(X), P > clf.threshold_)
    clf.set_params(threshold=0.0)                # the sparsemax rule, on demand
    np.testing.assert_array_equal(clf.predict(X), P > 0)


def test_auto_threshold_weighs_the_rows_as_the_fit():
    X, Y = _label_sets(n=120, seed=2)
    sw = np.random.default_rng(0).random(120) * 3
    clf = SparsemaxClassifier().fit(X, Y, sample_weight=sw)
    P = clf.predict_proba(X)
    cuts = [np.nextafter(v, -np.inf) for v in np.unique(P[P > 0])] + [0.0]
    assert _micro_f1(Y, clf.predict(X), sw) >= max(_micro_f1(Y, P > t, sw)
                                                   for t in cuts) - 1e-12


def test_auto_threshold_is_the_support_for_proportions_and_negation():
    X, Y = _label_sets(n=80)
    proportions = SparsemaxClassifier().fit(X, Y / Y.sum(1, keepdims=True))
    assert proportions.target_type_ == "proportions" and proportions.threshold_ == 0.0
    one_hot = np.eye(5, dtype=int)[Y.argmax(axis=1)]
    one_hot[:, 0] = 1 - one_hot[:, 0]            # one active label once column 0 is flipped
    negated = SparsemaxClassifier(negated=[True, False, False, False, False]).fit(X, one_hot)
    assert negated.threshold_ == 0.0
    clf = SparsemaxClassifier().fit(X, Y)
    assert clf.threshold_ > 0
    clf.fit(X, Y.argmax(axis=1))                 # class labels: the argmax, no threshold
    assert not hasattr(clf, "threshold_")


@pytest.mark.skipif(not (DATA / "mulan" / "scene-train.arff.xz").exists(),
                    reason="datasets absent")
def test_label_sets_of_mulan_scene_at_the_defaults():
    """Scene (one label per row mostly): the support predicts 2.3 labels per test row at
    micro-F1 0.59; the training rows' cut 1.06 and 0.74."""
    from sparsekit.datasets import load_mulan
    X, Y = load_mulan("scene", "train")[:2]
    X_test, Y_test = load_mulan("scene", "test")[:2]
    clf = SparsemaxClassifier().fit(X, Y)
    predicted = clf.predict(X_test)
    assert _micro_f1(Y_test, predicted) > 0.7 > 0.6 > _micro_f1(Y_test,
                                                                clf.predict_proba(X_test) > 0)
    assert predicted.sum(axis=1).mean() < 1.3


def test_nqn_no_decrease_is_a_success_in_float32_only(monkeypatch):
    """status 4 (line search found no decrease) is the rounding floor of a float32
    objective only: in float64 it is a failure and must warn."""
    import warnings

    from scipy.optimize import OptimizeResult
    from sklearn.exceptions import ConvergenceWarning

    import sparsekit.linear_model._sparsemax_solvers as solvers

    def stub(fun, x0, **kwargs):
        return OptimizeResult(x=np.zeros_like(x0), fun=fun(x0)[0], nit=1, status=4,
                              success=False, message="ABNORMAL: LINE SEARCH FOUND NO DECREASE")

    monkeypatch.setattr(solvers, "minimize_nqn", stub)
    X, y, _ = _data()
    with pytest.warns(ConvergenceWarning):
        SparsemaxClassifier(solver="nqn").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SparsemaxClassifier(solver="nqn").fit(X.astype(np.float32), y)


def _sparsemax_rows(Z):
    """Sort-based sparsemax (Martins & Astudillo 2016, Algorithm 1), row by row."""
    P = np.empty_like(Z)
    for i, z in enumerate(Z):
        u = np.sort(z)[::-1]
        css = np.cumsum(u) - 1
        k = np.flatnonzero(u - css / np.arange(1, z.size + 1) > 0)[-1]
        P[i] = np.maximum(z - css[k] / (k + 1), 0)
    return P


def _objective_of_fit(clf, X, y, sw):
    """The simplex objective at coef_ / intercept_, from its definition: the sw-weighted
    mean of the sparsemax loss 1/2 ||y - z||^2 - 1/2 ||p - z||^2 plus alpha/2 ||W||^2."""
    Z = X @ clf.coef_.T + clf.intercept_
    Y = np.eye(len(clf.classes_))[np.searchsorted(clf.classes_, y)]
    P = _sparsemax_rows(Z)
    loss = 0.5 * ((Y - Z) ** 2).sum(1) - 0.5 * ((P - Z) ** 2).sum(1)
    return (sw * loss).sum() / sw.sum() + 0.5 * clf.alpha_ * (clf.coef_ ** 2).sum()


def _verbose_lines(capsys, marker):
    return [line for line in capsys.readouterr().out.splitlines()
            if line.startswith(f"[SparsemaxClassifier] {marker}")]


def test_verbose_newton_cg_prints_each_iteration_and_the_final_objective(capsys):
    """One line per Newton iteration, numbered 1..n_iter_, with the objective after the
    step, nonincreasing (Armijo), the last the objective of the fitted model; the first
    Hessian has every positively weighted row active (at theta = 0 the simplex support is
    all of the classes)."""
    X, y, sw = _data()
    clf = SparsemaxClassifier(alpha=0.1, solver="newton-cg", tol=1e-10, verbose=1)
    clf.fit(X, y, sample_weight=sw)
    lines = _verbose_lines(capsys, "newton")
    assert len(lines) == clf.n_iter_ >= 2
    f = []
    for it, line in enumerate(lines, 1):
        assert line.startswith(f"[SparsemaxClassifier] newton {it}: objective ")
        f.append(float(line.split("objective ")[1].split(",")[0]))
    # the objective after each step: the first below its value 1/2 - 1/6 at the zero start
    # (uniform p, one-hot y), none above the previous one
    assert f[0] < 1 / 3 - 1e-3
    assert all(b <= a for a, b in zip(f, f[1:]))
    np.testing.assert_allclose(f[-1], _objective_of_fit(clf, X, y, sw), rtol=1e-9)
    assert float(lines[-1].split("max|grad| ")[1].split(",")[0]) <= 1e-10
    assert lines[0].endswith(f"CG steps, {np.count_nonzero(sw)} active rows")


@pytest.mark.parametrize("solver", ["nqn", "lbfgs"])
def test_verbose_nqn_and_lbfgs_print_the_objective_of_each_iterate(capsys, solver):
    """The callback prints the objective at each accepted iterate: n_iter_ lines numbered
    1..n_iter_, the last one the objective of the fitted model."""
    X, y, sw = _data()
    clf = SparsemaxClassifier(alpha=0.1, solver=solver, tol=1e-10, verbose=1)
    clf.fit(X, y, sample_weight=sw)
    lines = _verbose_lines(capsys, f"{solver} ")
    assert len(lines) == clf.n_iter_ >= 2
    for it, line in enumerate(lines, 1):
        assert line.startswith(f"[SparsemaxClassifier] {solver} {it}: objective ")
    f = [float(line.rsplit(" ", 1)[1]) for line in lines]
    np.testing.assert_allclose(f[-1], _objective_of_fit(clf, X, y, sw), rtol=1e-9)
    assert f[-1] < f[0] < 1 / 3 - 1e-3      # 1/3: the objective at the zero start
    # verbose=0 prints nothing
    SparsemaxClassifier(alpha=0.1, solver=solver, tol=1e-10).fit(X, y, sample_weight=sw)
    assert capsys.readouterr().out == ""


def test_verbose_sdca_prints_each_epoch_and_the_final_objective(capsys):
    """sdca prints one line per epoch, numbered 1..n_iter_, with the objective on the
    epochs where it is evaluated (1, then each gap at most half the epochs run, one epoch
    within 100 x tol: the schedule of minimize_sdca), the last with the objective of the
    fitted model and a max|grad| within tol."""
    X, y, sw = _data()
    clf = SparsemaxClassifier(alpha=0.1, solver="sdca", tol=1e-8, verbose=1, random_state=0,
                              max_iter=2000)
    clf.fit(X, y, sample_weight=sw)
    lines = _verbose_lines(capsys, "sdca epoch")
    assert len(lines) == clf.n_iter_ >= 20
    evaluated = [it for it, line in enumerate(lines, 1) if "objective" in line]
    assert evaluated[0] == 1 and evaluated[-1] == clf.n_iter_
    assert len(evaluated) < clf.n_iter_ / 2
    for last, it in zip(evaluated, evaluated[1:]):
        assert it - last <= -(-last // 2)
    for it, line in enumerate(lines, 1):
        assert line.startswith(f"[SparsemaxClassifier] sdca epoch {it}: "
                               + ("objective " if it in evaluated else "largest dual change"))
    f = float(lines[-1].split("objective ")[1].split(",")[0])
    np.testing.assert_allclose(f, _objective_of_fit(clf, X, y, sw), rtol=1e-9)
    assert float(lines[-1].split("max|grad| ")[1].split(",")[0]) <= 1e-8


@pytest.mark.parametrize("bad", [np.inf, -np.inf, "inf"])
def test_non_finite_entries_of_a_label_matrix_are_rejected(bad):
    """An object-dtype label matrix passes scikit-learn's check with an infinity in it (it
    only looks for NaN there): the classifier rejects it with its own message, as the
    float and sparse spellings of the same y are rejected for the infinity."""
    import scipy.sparse as sp

    X, y, _ = _data(n=12)
    Y = np.eye(3)[y].astype(object)
    Y[4, 1] = bad
    with pytest.raises(ValueError, match="y contains NaN or infinity"):
        SparsemaxClassifier(polytope="box").fit(X, Y)
    Yf = np.eye(3)[y]
    Yf[4, 1] = float(bad)
    for same in (Yf, sp.csr_matrix(Yf)):
        with pytest.raises(ValueError, match="infinity"):
            SparsemaxClassifier(polytope="box").fit(X, same)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_dense_coef_larger_than_half_the_memory_is_refused_before_the_fit(monkeypatch,
                                                                            dtype):
    """Hashed features with many classes: coef_ (classes x columns, in X's dtype) would
    fill the memory (2**31 columns and 3 classes: killed by the OS); refused at the start."""
    import sparsekit.utils._validation as validation
    rng = np.random.default_rng(0)
    X = sp.random(60, 5000, density=0.002, random_state=1, format="csr", dtype=dtype)
    y = rng.integers(0, 3, 60)
    size = 3 * 5000 * np.dtype(dtype).itemsize
    monkeypatch.setattr(validation, "physical_memory", lambda: 2 * size - 2)
    clf = SparsemaxClassifier()
    with pytest.raises(ValueError, match=r"coef_ would take 0.0 GiB as a dense array \(3 "
                                         r"classes x 5,000 columns\), more than half .*"
                                         r"\(HashingVectorizer's n_features\)"):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")
    monkeypatch.setattr(validation, "physical_memory", lambda: 2 * size)
    assert clf.fit(X, y).coef_.shape == (3, 5000)


def test_auto_takes_newton_cg_where_lbfgs_would_not_fit_in_memory(monkeypatch):
    """A dense X (L-BFGS's) whose solver arrays would exceed the machine's memory: auto
    runs Newton-CG, whose arrays fit, and gives its model; with room, L-BFGS."""
    from sklearn.datasets import load_digits

    import sparsekit.linear_model._sparsemax_solvers as solvers
    X, y = load_digits(return_X_y=True)
    weights = (64 + 1) * 10 * 8
    monkeypatch.setattr(solvers, "physical_memory", lambda: 20 * weights)
    clf = SparsemaxClassifier().fit(X, y)
    assert clf.solver_ == "newton-cg"
    newton = SparsemaxClassifier(solver="newton-cg").fit(X, y)
    np.testing.assert_array_equal(clf.coef_, newton.coef_)
    monkeypatch.setattr(solvers, "physical_memory",
                        lambda: solvers.SOLVER_ARRAYS["lbfgs"] * weights)
    assert SparsemaxClassifier().fit(X, y).solver_ == "lbfgs"


@pytest.mark.parametrize("params, remedy", [
    ({"solver": "lbfgs"}, r"use solver='newton-cg' \(about 14 such arrays\) or "
                          r"solver='sdca' \(about 5 such arrays\), or hash"),
    ({"solver": "nqn"}, r"use solver='newton-cg' .* or solver='sdca' .*, or hash"),
    ({"positive": True}, r"hash the features"),           # auto: bounds, L-BFGS only
    ({"solver": "sdca", "alpha": 0.1}, r"hash the features"),   # none fits
])
def test_a_solver_that_would_not_fit_in_memory_is_refused_before_the_fit(monkeypatch,
                                                                        params, remedy):
    """A solver whose arrays would exceed the machine's memory (the OS would kill the
    process during the fit) is refused at the start, naming what it would hold and the
    solvers that fit; the estimator stays unfitted."""
    import sparsekit.linear_model._sparsemax_solvers as solvers
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 8)), np.arange(60) % 3
    weights = (8 + 1) * 3 * 8
    memory = (20 if params.get("solver") != "sdca" else 4) * weights
    monkeypatch.setattr(solvers, "physical_memory", lambda: memory)
    clf = SparsemaxClassifier(**params)
    with pytest.raises(ValueError, match=r"SparsemaxClassifier with solver='\w+' would hold "
                                         r"about 0.0 GiB during the fit, about \d+ arrays of "
                                         r"its 0 MiB of weights, more than this machine's "
                                         r"0.0 GiB: " + remedy):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_")


@pytest.mark.parametrize("solver", ["sdca", "newton-cg", "lbfgs", "nqn"])
def test_each_solver_holds_at_most_its_counted_arrays(solver):
    """The peak a fit allocates, on a model far larger than X, stays within the arrays of
    the weights' size that the check before a fit counts for its solver, and the count is
    not far above it."""
    from _memory import peak_allocated

    import sparsekit.linear_model._sparsemax_solvers as solvers
    X = sp.random(1000, 20000, density=0.001, format="csr", random_state=0)
    X = sp.csr_matrix(X[:, np.flatnonzero(X.getnnz(axis=0))])
    y = np.arange(1000) % 20               # weights of 2 MiB: the fixed overheads are small
    clf = SparsemaxClassifier(solver=solver, alpha=1e-3, max_iter=15, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, peak = peak_allocated(lambda: clf.fit(X, y))
    weights = (X.shape[1] + 1) * 20 * 8
    assert 0.75 * solvers.SOLVER_ARRAYS[solver] < peak / weights \
        < solvers.SOLVER_ARRAYS[solver]       # NQN's history grows with its iterations


# --- solver="auto"


@pytest.mark.parametrize("sparse, scale, alpha, options, expected", [
    (False, 1.0, 1e-3, {}, "lbfgs"),
    (True, 1.0, 1e-3, {}, "sdca"),                   # mean ||x||^2 / (alpha n) = 2.4 / 1.2
    (True, 1.0, 1e-6, {}, "lbfgs"),                  # 2000: SDCA's dual would crawl
    (True, 0.1, 1e-5, {}, "sdca"),                   # 0.024 / 0.012: small alpha n, small rows
    (True, 10.0, 1e-3, {}, "lbfgs"),                 # 240 / 1.2: large rows
    (True, 1.0, 1e-3, {"positive": True}, "lbfgs"),  # SDCA takes no bounds
    (True, 1.0, 0.0, {}, "lbfgs"),                   # nor alpha = 0
])
def test_auto_picks_sdca_for_sparse_well_conditioned_problems(sparse, scale, alpha, options,
                                                              expected):
    """SDCA where its dual's condition number, the mean squared row norm over alpha n, is
    at most AUTO_SDCA_MAX_CONDITION (20)."""
    rng = np.random.default_rng(0)
    X = scale * rng.standard_normal((1200, 6)) * (rng.random((1200, 6)) < 0.4)
    y = np.argmax(X[:, :3] + 0.5 * scale * rng.standard_normal((1200, 3)), axis=1)
    X = sp.csr_matrix(X) if sparse else X
    clf = SparsemaxClassifier(alpha=alpha, random_state=0, **options).fit(X, y)
    assert clf.get_params()["solver"] == "auto" and clf.solver_ == expected
    explicit = SparsemaxClassifier(alpha=alpha, solver=expected, random_state=0,
                                   **options).fit(X, y)
    np.testing.assert_array_equal(clf.coef_, explicit.coef_)


@pytest.mark.parametrize("n_classes, share", [(3, 0.1), (5, 0.2)])
def test_auto_picks_sdca_on_the_csr_copy_of_a_dense_x_of_mostly_zeros(n_classes, share,
                                                                      monkeypatch):
    """SDCA's updates touch only the rows' nonzeros: a dense X of at most
    SPARSE_COPY_DENSITY nonzero entries is walked as its CSR copy, and "auto" picks SDCA as
    for the CSR input (it took L-BFGS on the array: 3.4 times SDCA's time on MNIST's
    pixels), also where L-BFGS's data term reads the array (5 classes at 20% nonzero:
    fits_through_csr's share is 17.5%); the same model. A denser X keeps L-BFGS."""
    import sparsekit.linear_model._sparsemax as sparsemax
    from sparsekit.losses._fenchel_young_datafit import fits_through_csr

    read = []
    real = sparsemax.FenchelYoungLinear

    def spied(X, *args, **kwargs):
        read.append(type(X))
        return real(X, *args, **kwargs)
    monkeypatch.setattr(sparsemax, "FenchelYoungLinear", spied)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 8)) * (rng.random((1500, 8)) < share)
    y = np.argmax(X[:, :n_classes] + 0.5 * rng.standard_normal((1500, n_classes)), axis=1)
    assert fits_through_csr(X, n_classes) == (share < 0.125)
    kw = dict(alpha=1e-3, random_state=0, tol=1e-8)
    dense = SparsemaxClassifier(**kw).fit(X, y)
    csr = SparsemaxClassifier(**kw).fit(sp.csr_matrix(X), y)
    assert dense.solver_ == csr.solver_ == "sdca" and read == [sp.csr_matrix] * 2
    np.testing.assert_allclose(dense.coef_, csr.coef_, rtol=1e-10, atol=1e-12)
    read.clear()
    assert SparsemaxClassifier(solver="lbfgs", **kw).fit(X, y).solver_ == "lbfgs"
    assert read == [sp.csr_matrix if share < 0.125 else np.ndarray]
    X[:, 3:] = rng.standard_normal((1500, 5))                    # 65% nonzero
    assert SparsemaxClassifier(**kw).fit(X, y).solver_ == "lbfgs"


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_auto_counts_the_intercepts_constant_feature(fit_intercept):
    """On an X with (nearly) no stored entry SDCA's free intercept, a constant feature of
    the entries' scale, alone sets its dual's condition: at the default alpha on 7 rows it
    ran 1000 epochs and stopped far from the optimum; "auto" now takes L-BFGS there, and a
    zero X gives the model of the dense zero X, the class frequencies."""
    y = np.array([0, 1, 2, 0, 1, 2, 0])
    zero, one = sp.csr_matrix((7, 5)), sp.csr_matrix(([1.0], ([0], [0])), shape=(7, 5))
    for X in (zero, one):
        clf = SparsemaxClassifier(fit_intercept=fit_intercept).fit(X, y)
        assert clf.solver_ == ("lbfgs" if fit_intercept or X is one else "sdca")
        dense = SparsemaxClassifier(fit_intercept=fit_intercept).fit(X.toarray(), y)
        np.testing.assert_allclose(clf.predict_proba(X), dense.predict_proba(X.toarray()),
                                   atol=1e-6)
        if X is zero:
            np.testing.assert_allclose(clf.predict_proba(X)[0],
                                       [3 / 7, 2 / 7, 2 / 7] if fit_intercept else 1 / 3,
                                       atol=1e-6)


@pytest.mark.parametrize("params", [{}, {"solver": "newton-cg"}, {"solver": "nqn"},
                                    {"solver": "sdca"},
                                    {"positive": True}, {"polytope": "box"}])
def test_empty_columns_cost_nothing_and_get_zero_weights(params, monkeypatch):
    import sparsekit.linear_model._sparsemax as module
    from _hashed import spread_columns

    X, y, _ = _data(n=60, d=8, k=3, seed=2)
    X = X * (np.random.default_rng(2).random(X.shape) < 0.5)
    wide, places = spread_columns(X, 900)
    seen = []
    datafit = module.FenchelYoungLinear
    monkeypatch.setattr(module, "FenchelYoungLinear",
                        lambda X, *a, **k: (seen.append(X.shape[1]), datafit(X, *a, **k))[1])
    est = SparsemaxClassifier(alpha=0.05, random_state=0, **params).fit(wide, y)
    assert seen == [8]                                   # the solvers saw the used columns
    ref = SparsemaxClassifier(alpha=0.05, random_state=0, **params).fit(sp.csr_matrix(X), y)
    assert est.coef_.shape == (3, 900)
    np.testing.assert_array_equal(est.coef_[:, places], ref.coef_)
    assert not np.any(np.delete(est.coef_, places, axis=1))
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    warm = clone(est).set_params(warm_start=True)
    warm.coef_, warm.intercept_ = est.coef_ + 1.0, est.intercept_   # weights on empty columns
    warm.fit(wide, y)
    assert not np.any(np.delete(warm.coef_, places, axis=1))


def test_bounds_on_every_coefficient_keep_every_column():
    from _hashed import spread_columns

    X, y, _ = _data(n=60, d=8, k=3, seed=2)
    wide, places = spread_columns(X, 90)
    lower = np.full((3, 90), -1.0)
    lower[:, np.delete(np.arange(90), places)[:2]] = 0.5   # two empty columns held off 0
    est = SparsemaxClassifier(alpha=0.05, bounds=(lower, 2.0)).fit(wide, y)
    assert est.coef_.shape == (3, 90)
    np.testing.assert_allclose(est.coef_[:, np.delete(np.arange(90), places)[:2]], 0.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_scores_of_x_wider_than_its_entries_are_the_product(dtype, fmt):
    """Hashed features: X of many more columns than entries is scored on its used columns
    only (the same numbers as X coef_ᵀ + intercept_), rows of other sizes as before."""
    rng = np.random.default_rng(3)
    X = sp.random(200, 5000, density=0.002, random_state=4, format="csr", dtype=dtype)
    X.data = rng.uniform(0.1, 1.0, X.nnz).astype(dtype)
    y = rng.integers(0, 4, 200)
    clf = SparsemaxClassifier(alpha=1e-3).fit(X, y)
    assert X.shape[1] > X.nnz
    for rows in (X, X[:1], sp.vstack([X] * 8)):   # the last has more entries than columns
        rows = rows.asformat(fmt)
        expected = (rows.astype(np.float64) @ clf.coef_.T.astype(np.float64)
                    + clf.intercept_.astype(np.float64))
        scores = clf.decision_function(rows)
        assert scores.dtype == dtype and scores.shape == (rows.shape[0], 4)
        np.testing.assert_allclose(scores, expected, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-6 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_coef_is_feature_major_for_the_scores_of_csr_rows(dtype):
    """coef_ is Fortran-ordered (its transpose C-ordered, read in place by the scores of
    CSR rows), with empty columns too; the scores equal those of the same rows dense."""
    rng = np.random.default_rng(5)
    X = sp.random(200, 60, density=0.1, format="csr", random_state=rng, dtype=dtype)
    X = X @ sp.diags(np.r_[np.ones(50), np.zeros(10)]).astype(dtype)   # 10 empty columns
    y = rng.integers(0, 4, 200)
    est = SparsemaxClassifier().fit(X, y)
    assert est.coef_.shape == (4, 60) and est.coef_.T.flags.c_contiguous
    assert est.coef_.dtype == dtype
    np.testing.assert_allclose(est.decision_function(X),
                               est.decision_function(X.toarray()),
                               rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)



@pytest.mark.parametrize("solver", ["lbfgs", "sdca"])
def test_the_callbacks_model_is_laid_out_as_the_fitted_one(solver):
    """The model a callback is shown after each iteration has the fitted coef_'s dtype and
    feature-major layout; after the last iteration it is the fitted model."""
    from _callbacks import Recorder

    class Models(Recorder):
        def on_fit_task_end(self, estimator, context, *, X=None, y=None,
                            fitted_estimator=None):
            if fitted_estimator is not None and context.parent is not None:
                self.scores.append((fitted_estimator.coef_, fitted_estimator.intercept_))

    rng = np.random.default_rng(2)
    X = sp.random(150, 30, density=0.2, format="csr", random_state=rng, dtype=np.float32)
    X = X @ sp.diags(np.r_[np.ones(25), np.zeros(5)]).astype(np.float32)   # empty columns
    y = rng.integers(0, 3, 150)
    models = Models()
    est = SparsemaxClassifier(alpha=0.01, solver=solver, random_state=0)
    est.set_callbacks(models).fit(X, y)
    assert len(models.scores) == est.n_iter_
    for coef, intercept in models.scores:
        assert coef.dtype == intercept.dtype == np.float32 and coef.T.flags.c_contiguous
    np.testing.assert_array_equal(models.scores[-1][0], est.coef_)
    np.testing.assert_array_equal(models.scores[-1][1], est.intercept_)


def _simplex_fits(monkeypatch, estimator, X, Y, fit_params):
    """(the fit of two classes as one box output, the same fit over both simplex columns,
    the number of outputs each solver saw)."""
    from sparsekit.linear_model import _sparsemax as module

    outputs = []
    datafit = module.FenchelYoungLinear

    def spy(*args, **kwargs):
        outputs.append(args[1].shape[1])
        return datafit(*args, **kwargs)
    monkeypatch.setattr(module, "FenchelYoungLinear", spy)
    one = clone(estimator).fit(X, Y, **fit_params)
    monkeypatch.setattr(SparsemaxClassifier, "_two_classes", lambda self, *args: False)
    both = clone(estimator).fit(X, Y, **fit_params)
    return one, both, outputs


@pytest.mark.parametrize("solver", ["lbfgs", "nqn", "newton-cg", "sdca"])
@pytest.mark.parametrize("kind", ["labels", "multilabel", "proportions"])
@pytest.mark.parametrize("intercept", ["free", "penalized", "none"])
def test_two_classes_fit_as_one_box_output_is_the_simplex_fit(monkeypatch, solver, kind,
                                                              intercept):
    if solver == "sdca" and intercept == "penalized" and kind != "labels":
        pytest.skip("covered by the other SDCA cases")
    rng = np.random.default_rng(7)
    n, d = 120, 6
    X = rng.standard_normal((n, d)) + 0.5
    X[rng.random((n, d)) < 0.3] = 0
    Y = _targets(rng, n, 2, kind)
    y = Y.argmax(axis=1) if kind == "labels" else Y
    sw = rng.uniform(0.2, 3.0, n)
    est = SparsemaxClassifier(alpha=0.05, solver=solver, tol=1e-10, max_iter=5000,
                              fit_intercept=intercept != "none",
                              penalize_intercept=intercept == "penalized", threshold=0.5)
    one, both, outputs = _simplex_fits(monkeypatch, est, sp.csr_matrix(X), y,
                                       {"sample_weight": sw})
    assert outputs == [1, 2]
    assert one.coef_.shape == both.coef_.shape == (2, d)
    np.testing.assert_allclose(one.coef_[1], -one.coef_[0], rtol=0, atol=0)
    np.testing.assert_allclose(one.coef_, both.coef_, rtol=1e-6, atol=1e-6)
    targets = Y if kind != "multilabel" else Y / Y.sum(axis=1, keepdims=True)
    f_one = objective_ref(one.coef_.T, one.intercept_, X, targets, sw, one.alpha_)
    f_both = objective_ref(both.coef_.T, both.intercept_, X, targets, sw, both.alpha_)
    if intercept == "penalized":
        f_one += 0.5 * one.alpha_ * np.sum(one.intercept_**2)
        f_both += 0.5 * both.alpha_ * np.sum(both.intercept_**2)
    assert f_one == pytest.approx(f_both, rel=1e-9)
    np.testing.assert_allclose(one.predict_proba(X), both.predict_proba(X), atol=1e-6)


def test_two_classes_warm_start_from_either_fit(monkeypatch):
    """A warm two-class fit starts from the previous model's antisymmetric part: after a
    fit over both simplex columns (whose intercepts need not be antisymmetric) as after
    one of its own, it reaches the cold fit."""
    X, y = _blobs(k=2)
    cold = SparsemaxClassifier(alpha=0.01, tol=1e-9, max_iter=5000).fit(X, y)
    warm = SparsemaxClassifier(alpha=0.1, tol=1e-9, max_iter=5000, warm_start=True)
    warm.fit(X, y)
    warm.set_params(alpha=0.01).fit(X, y)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-6)
    other = SparsemaxClassifier(alpha=0.1, warm_start=True)
    with monkeypatch.context() as m:
        m.setattr(SparsemaxClassifier, "_two_classes", lambda self, *args: False)
        other.fit(X, y)
    other.intercept_ = other.intercept_ + 3.0          # the simplex's free shift
    other.set_params(alpha=0.01, tol=1e-9, max_iter=5000).fit(X, y)
    np.testing.assert_allclose(other.coef_, cold.coef_, atol=1e-6)
