"""Extreme-K softmax data with power-law class sizes and an exact softmax teacher."""
import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import normalize
from sklearn.utils import Bunch, check_random_state

from ..utils._validation import is_positive_integer


def make_extreme_softmax_teacher(n_samples, n_features, n_classes, nnz_per_row,
                                 power_law_exponent=1.0, *, class_signal=0.5,
                                 support_size=None, return_teacher=False,
                                 dtype=np.float64, random_state=None):
    """Sparse bag-of-features data for softmax regression with very many classes.

    Generative model (a multinomial "naive Bayes" mixture, whose Bayes posterior is
    exactly a linear softmax):

    - class prior ``pi_k ∝ (k + 1)^(-a)`` (Zipf, ``a = power_law_exponent``), so class
      sizes follow a power law with class 0 the largest; ``y_n ~ pi``;
    - each class owns ``s = support_size`` feature slots ``S_k`` (drawn uniformly);
    - a point draws ``L = nnz_per_row`` features with replacement, each from
      ``S_{y_n}`` with probability ``beta = class_signal``, else uniformly from all
      ``D`` features; ``c_n`` holds the counts, and ``x_n = c_n / ||c_n||_2``.

    The teacher then is exact: ``p(y = k | c) = softmax(W c + b)_k`` with
    ``b_k = log pi_k`` and ``W_kj = log(1 + beta D m_kj / (s (1 - beta)))``, where
    ``m_kj`` counts the slots of ``S_k`` equal to feature ``j`` (class-independent
    terms cancel because every point has ``L`` draws). Cost O(n L + K s).

    Parameters
    ----------
    n_samples, n_features, n_classes : int
        ``N``, ``D`` and ``K``.
    nnz_per_row : int
        ``L``, the number of draws; rows have at most ``L`` non-zeros (duplicates merge).
    power_law_exponent : float, default=1.0
        Zipf exponent ``a >= 0`` of the class sizes (0 gives balanced classes).
    class_signal : float in [0, 1), default=0.5
        ``beta``, the share of draws from the class's own features.
    support_size : int, default=None
        ``s``; defaults to ``min(2 L, D)``.
    return_teacher : bool, default=False
        Also return the teacher.
    dtype : {np.float64, np.float32}, default=np.float64
    random_state : int, RandomState instance or None, default=None
        Seed of the generator, for reproducible output across calls.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), rows of unit L2 norm
    y : ndarray of shape (n_samples,), int64
    teacher : sklearn.utils.Bunch, only if ``return_teacher``
        ``coef`` (CSR, K x D), ``intercept`` (K,), ``class_prior`` (K,) and ``counts``
        (CSR, N x D, the ``c_n``), so that ``softmax(counts @ coef.T + intercept)`` is
        the exact posterior.

    References
    ----------
    .. [1] Fagan, F. & Iyengar, G. (2018). Unbiased scalable softmax optimization.
       arXiv:1803.08577 (Implicit SGD, section 3.2; U-max, section 3.1; eq. 3).

    Examples
    --------
    >>> from sparsekit.datasets import make_extreme_softmax_teacher
    >>> X, y = make_extreme_softmax_teacher(1000, 200, 50, nnz_per_row=10, random_state=0)
    >>> X.shape, X.nnz, int(y.max()) < 50
    ((1000, 200), 9299, True)
    """
    sizes = {"n_samples": n_samples, "n_features": n_features, "n_classes": n_classes,
             "nnz_per_row": nnz_per_row}
    for name, value in sizes.items():
        if not is_positive_integer(value):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    n, d, k, L = (int(v) for v in sizes.values())
    if k < 2:
        raise ValueError(f"n_classes must be at least 2, got {k}")
    if not power_law_exponent >= 0:
        raise ValueError(f"power_law_exponent must be >= 0, got {power_law_exponent!r}")
    if not 0.0 <= class_signal < 1.0:
        raise ValueError(f"class_signal must lie in [0, 1), got {class_signal!r}")
    s = min(2 * L, d) if support_size is None else support_size
    if not is_positive_integer(s):
        raise ValueError(f"support_size must be a positive integer, got {support_size!r}")
    s = int(s)
    rng = check_random_state(random_state)

    prior = np.arange(1, k + 1, dtype=np.float64) ** (-float(power_law_exponent))
    prior /= prior.sum()
    y = rng.choice(k, size=n, p=prior).astype(np.int64)
    supports = rng.randint(0, d, size=(k, s))
    own = rng.random_sample((n, L)) < class_signal
    slots = rng.randint(0, s, size=(n, L))
    features = np.where(own, supports[y[:, None], slots], rng.randint(0, d, size=(n, L)))
    rows = np.repeat(np.arange(n), L)
    counts = sp.csr_matrix((np.ones(n * L), (rows, features.ravel())), shape=(n, d))
    counts.sum_duplicates()
    X = normalize(counts, norm="l2").astype(dtype)
    if not return_teacher:
        return X, y
    multiplicity = sp.csr_matrix(
        (np.ones(k * s), (np.repeat(np.arange(k), s), supports.ravel())), shape=(k, d)
    )
    multiplicity.sum_duplicates()
    coef = multiplicity.copy()
    coef.data = np.log1p(class_signal * d * multiplicity.data / (s * (1.0 - class_signal)))
    teacher = Bunch(coef=coef, intercept=np.log(prior), class_prior=prior, counts=counts)
    return X, y, teacher
