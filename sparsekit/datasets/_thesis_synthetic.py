"""The "Synthetic" set of the OBA experiments (Keskar 2017, thesis section 2.7)."""
import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from sklearn.utils import check_random_state

from ..utils._validation import is_positive_integer

_DENSE_EIGH_MAX = 300  # above this size, Lanczos (eigsh) finds lambda_min much faster


def _smallest_eigenvalue(A):
    """Smallest eigenvalue of the symmetric ``A`` (LAPACK for small, Lanczos for large)."""
    if A.shape[0] <= _DENSE_EIGH_MAX:
        return scipy.linalg.eigh(A, eigvals_only=True, subset_by_index=[0, 0])[0]
    start = np.random.default_rng(0).uniform(-1.0, 1.0, A.shape[0])  # ARPACK's own start
    return scipy.sparse.linalg.eigsh(A, k=1, which="SA", tol=1e-12, ncv=64, v0=start,
                                     return_eigenvectors=False)[0]   # is unseeded


def make_thesis_synthetic(n_samples=5000, n_features=None, *, random_state=None):
    """Generate the thesis' random, non-diagonally-dominant logistic-regression problem.

    The MATLAB generator of thesis section 2.7 ("Synthetic
    generator"), step by step:

    1. ``y = -1 + 2 (u > 0.5)`` with ``u ~ U[0, 1)^n``;
    2. ``A = U + U^T`` with ``U ~ U[0, 1)^{n x n}``;
    3. if ``lambda_min(A) < 0``: ``A <- A - 2 lambda_min(A) I``;
    4. ``X = chol(A)``, the upper Cholesky factor, is the data matrix.

    The thesis uses ``n = 5000`` (Table 2.1: 5000 points, 5000 features); that size takes
    seconds (Lanczos for ``lambda_min``, then a 5000 x 5000 Cholesky) and ~400 MB at
    its peak (the 200 MB factor and the matrix it is taken from).

    Parameters
    ----------
    n_samples : int, default=5000
        Number of points; the matrix is square.
    n_features : int, default=None
        Must be None or equal to ``n_samples`` (the generator only makes square data).
    random_state : int, RandomState instance or None, default=None
        Seed of the uniform draws.

    Returns
    -------
    X : ndarray of shape (n_samples, n_samples), float64
        Upper-triangular Cholesky factor.
    y : ndarray of shape (n_samples,), float64
        Labels in {-1, +1}.

    References
    ----------
    .. [1] Keskar, N. S. (2017). Second-order methods for stochastic and nonsmooth optimization.
       PhD thesis, Northwestern University, chapter 2 (OBA, Algorithms 1 and 2).

    Examples
    --------
    >>> from sparsekit.datasets import make_thesis_synthetic
    >>> X, y = make_thesis_synthetic(n_samples=200, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((200, 200), [-1.0, 1.0])
    """
    if not is_positive_integer(n_samples):
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    n = int(n_samples)
    if n_features is not None and n_features != n:
        raise ValueError(
            f"the thesis generator is square: n_features must be None or {n}, got {n_features!r}"
        )
    rng = check_random_state(random_state)
    y = -1.0 + 2.0 * (rng.random_sample(n) > 0.5)
    A = rng.random_sample((n, n))
    A += A.T
    lambda_min = _smallest_eigenvalue(A)
    if lambda_min < 0:
        A[np.diag_indices(n)] -= 2.0 * lambda_min
    X = scipy.linalg.cholesky(A, lower=False, overwrite_a=True, check_finite=False)
    return X, y
