"""Synthetic generators: shapes, reproducibility, and the laws they claim to follow."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import softmax

from sparsekit.datasets import make_extreme_softmax_teacher, make_ove_toy, make_thesis_synthetic


def test_thesis_synthetic_follows_the_matlab_recipe():
    X, y = make_thesis_synthetic(60, random_state=3)
    assert X.shape == (60, 60)
    np.testing.assert_array_equal(X, np.triu(X))
    assert set(np.unique(y)) <= {-1.0, 1.0}
    rng = np.random.RandomState(3)
    y_ref = -1 + 2 * (rng.random_sample(60) > 0.5)
    A = rng.random_sample((60, 60))
    A = A + A.T
    lam = np.linalg.eigvalsh(A)[0]
    assert lam < 0
    A -= 2 * lam * np.eye(60)
    np.testing.assert_array_equal(y, y_ref)
    np.testing.assert_allclose(X.T @ X, A, rtol=1e-10, atol=1e-10)
    # shifted by twice the most negative eigenvalue: smallest eigenvalue of X^T X is -lam
    np.testing.assert_allclose(np.linalg.eigvalsh(X.T @ X)[0], -lam, rtol=1e-8)


def test_thesis_synthetic_lanczos_path_matches_dense_eigenvalue():
    n = 320  # above the size where Lanczos replaces LAPACK for lambda_min
    X, _ = make_thesis_synthetic(n, random_state=1)
    rng = np.random.RandomState(1)
    rng.random_sample(n)
    A = rng.random_sample((n, n))
    A = A + A.T
    lam = np.linalg.eigvalsh(A)[0]
    np.testing.assert_allclose(np.linalg.eigvalsh(X.T @ X)[0], -lam, rtol=1e-8)
    np.testing.assert_array_equal(X, np.triu(X))


def test_thesis_synthetic_reproducible_and_validated():
    a = make_thesis_synthetic(30, 30, random_state=0)
    b = make_thesis_synthetic(30, random_state=0)
    np.testing.assert_array_equal(a[0], b[0])
    big = [make_thesis_synthetic(400, random_state=0)[0] for _ in range(3)]  # Lanczos path:
    for other in big[1:]:                  # ARPACK's unseeded start once moved X by 1e-14
        np.testing.assert_array_equal(other, big[0])
    assert not np.array_equal(a[0], make_thesis_synthetic(30, random_state=1)[0])
    with pytest.raises(ValueError, match="square"):
        make_thesis_synthetic(30, 20)
    for bad in (0, None, True, 2.5):
        with pytest.raises(ValueError, match="positive"):
            make_thesis_synthetic(bad)


@pytest.mark.parametrize("kind, n, k", [("T1", 200, 10), ("T2", 200, 5)])
def test_ove_toy_default_sizes(kind, n, k):
    X, y, params = make_ove_toy(kind, return_params=True, random_state=0)
    assert X.shape == (n, 1 if kind == "T1" else 2) and y.shape == (n,)
    assert y.dtype == np.int64 and y.min() >= 0 and y.max() < k
    X2, y2 = make_ove_toy(kind, random_state=0)
    np.testing.assert_array_equal(y, y2)
    np.testing.assert_array_equal(X, X2)


def test_ove_toy_nonparametric_prior():
    X, y, params = make_ove_toy("T3", n_samples=200_000, n_classes=50, return_params=True,
                                random_state=1)
    assert np.all(X == 1.0)
    np.testing.assert_allclose(params.class_prior.sum(), 1.0)
    freq = np.bincount(y, minlength=50) / y.size
    np.testing.assert_allclose(freq, params.class_prior, atol=4e-3)


def test_ove_toy_t2_is_a_softmax_teacher():
    X, y, params = make_ove_toy("T2", n_samples=40_000, n_classes=3, return_params=True,
                                random_state=2)
    assert X[:, 0].min() >= -3 and X[:, 0].max() <= 2 and np.abs(X[:, 1]).max() <= 2
    P = softmax(X @ params.coef.T + params.intercept, axis=1)
    # mean predicted class frequencies equal the empirical ones (law of large numbers)
    np.testing.assert_allclose(np.bincount(y, minlength=3) / y.size, P.mean(axis=0), atol=0.01)
    with pytest.raises(ValueError, match="kind"):
        make_ove_toy("T4")


def test_extreme_teacher_shapes_norms_reproducibility():
    X, y = make_extreme_softmax_teacher(500, 300, 40, 7, random_state=0, dtype=np.float32)
    assert sp.isspmatrix_csr(X) and X.shape == (500, 300) and X.dtype == np.float32
    assert np.all(X.getnnz(axis=1) >= 1) and np.all(X.getnnz(axis=1) <= 7)
    np.testing.assert_allclose(sp.linalg.norm(X, axis=1), 1.0, rtol=1e-6)
    X2, y2 = make_extreme_softmax_teacher(500, 300, 40, 7, random_state=0, dtype=np.float32)
    assert (X != X2).nnz == 0
    np.testing.assert_array_equal(y, y2)


def test_extreme_teacher_power_law_class_sizes():
    a = 1.2
    X, y, teacher = make_extreme_softmax_teacher(
        200_000, 50, 100, 3, power_law_exponent=a, return_teacher=True, random_state=0
    )
    np.testing.assert_allclose(teacher.class_prior, np.arange(1, 101) ** -a / np.sum(
        np.arange(1, 101) ** -a))
    sizes = np.bincount(y, minlength=100)
    top = np.arange(1, 11)
    slope = np.polyfit(np.log(top), np.log(sizes[:10]), 1)[0]
    assert abs(slope + a) < 0.05
    _, y0 = make_extreme_softmax_teacher(20_000, 50, 10, 3, power_law_exponent=0,
                                         random_state=0)
    np.testing.assert_allclose(np.bincount(y0) / 20_000, 0.1, atol=0.01)


def test_extreme_teacher_posterior_is_the_bayes_posterior():
    # brute-force Bayes posterior of the generative model equals softmax(W c + b)
    n, d, k, L, beta, s = 300, 12, 4, 5, 0.6, 3
    X, y, t = make_extreme_softmax_teacher(n, d, k, L, class_signal=beta, support_size=s,
                                           return_teacher=True, random_state=5)
    C = t.counts.toarray()
    np.testing.assert_allclose(C.sum(axis=1), L)
    M = t.coef.copy()
    M.data = np.expm1(M.data) * s * (1 - beta) / (beta * d)  # recover multiplicities
    theta = (1 - beta) / d + beta * M.toarray() / s  # per-draw feature law of each class
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    log_joint = C @ np.log(theta).T + np.log(t.class_prior)
    expected = softmax(log_joint, axis=1)
    got = softmax(t.counts @ t.coef.T.toarray() + t.intercept, axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # labels are informative: the teacher beats the prior
    assert np.mean(got.argmax(axis=1) == y) > np.max(np.bincount(y)) / n


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_classes=1), "n_classes"),
        (dict(nnz_per_row=0), "nnz_per_row"),
        (dict(class_signal=1.0), "class_signal"),
        (dict(power_law_exponent=-1), "power_law_exponent"),
        (dict(n_samples=None), "n_samples"),
        (dict(n_samples=True), "n_samples"),
        (dict(dtype=np.int32), "dtype"),
        (dict(dtype=np.float16), "dtype"),
    ],
)
def test_extreme_teacher_validation(kwargs, match):
    params = dict(n_samples=10, n_features=5, n_classes=3, nnz_per_row=2)
    params.update(kwargs)
    with pytest.raises(ValueError, match=match):
        make_extreme_softmax_teacher(**params)


@pytest.mark.parametrize("n_samples", [True, np.inf, 2.5, 0])
def test_ove_toy_rejects_sizes_that_are_not_positive_integers(n_samples):
    with pytest.raises(ValueError, match="n_samples"):
        make_ove_toy("T1", n_samples=n_samples)
