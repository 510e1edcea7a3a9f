"""Toy sets of the One-vs-Each experiments (Titsias 2016)."""
import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..utils._validation import is_positive_integer

# kind -> (default n_samples, default n_classes)
_TOY_DEFAULTS = {"T1": (200, 10), "T2": (200, 5), "T3": (10**6, 10**4)}


def _sample_rows(P, rng):
    """One categorical draw per row of the row-stochastic matrix ``P``."""
    u = rng.random_sample(P.shape[0])[:, None]
    y = (np.cumsum(P, axis=1) < u).sum(axis=1)
    return np.minimum(y, P.shape[1] - 1)


def make_ove_toy(kind="T1", n_samples=None, n_classes=None, *, return_params=False,
                 random_state=None):
    """Generate a One-vs-Each toy set.

    - ``"T1"`` (Fig. 1a) and ``"T3"``, non-parametric: ``p(k) ∝ u_k^2`` with
      ``u_k ~ U[0, 1]`` (the paper states this law for T3; T1's law is not stated and
      the same one is used), ``y_n ~ p``. ``X`` is a constant column of ones, so a
      linear model without intercept has one free score per class.
      Defaults: T1 200 points / 10 classes, T3 10^6 points / 10^4 classes.
    - ``"T2"`` (Fig. 1b/1c), 2-D linear classification, 200 points, 5 classes. The
      paper does not state the generator: here ``x_n ~ U([-3, 2] x [-2, 2])`` (the
      figure's axes), teacher weights ``w_k ~ N(0, 2^2 I)``, biases ``b_k ~ N(0, 1)``,
      and ``y_n ~ softmax(W x_n + b)``.

    Parameters
    ----------
    kind : {"T1", "T2", "T3"}, default="T1"
    n_samples, n_classes : int, default=None
        Override the paper's sizes (e.g. T3 scaled down to 10^5 / 10^3 for a quick test).
    return_params : bool, default=False
        Also return the generating parameters.
    random_state : int, RandomState instance or None, default=None
        Seed of the generator, for reproducible output across calls.

    Returns
    -------
    X : ndarray of shape (n_samples, 1) (T1, T3) or (n_samples, 2) (T2), float64
    y : ndarray of shape (n_samples,), int64 in ``0..n_classes-1``
    params : sklearn.utils.Bunch, only if ``return_params``
        ``class_prior`` (n_classes,) for T1/T3; ``coef`` (n_classes, 2) and
        ``intercept`` (n_classes,) for T2.

    References
    ----------
    .. [1] Titsias, M. K. (2016). One-vs-each approximation to softmax for scalable estimation
       of probabilities. NIPS, eqs. 5-6.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekit.datasets import make_ove_toy
    >>> X, y = make_ove_toy("T1", random_state=0)
    >>> X.shape, len(np.unique(y))
    ((200, 1), 10)
    """
    if kind not in _TOY_DEFAULTS:
        raise ValueError(f"kind must be one of {sorted(_TOY_DEFAULTS)}, got {kind!r}")
    default_n, default_k = _TOY_DEFAULTS[kind]
    n = default_n if n_samples is None else n_samples
    k = default_k if n_classes is None else n_classes
    if not (is_positive_integer(n) and is_positive_integer(k) and k >= 2):
        raise ValueError(f"need n_samples >= 1 and n_classes >= 2, got {n!r}, {k!r}")
    n, k = int(n), int(k)
    rng = check_random_state(random_state)
    if kind == "T2":
        X = np.column_stack([rng.uniform(-3.0, 2.0, n), rng.uniform(-2.0, 2.0, n)])
        coef = rng.normal(0.0, 2.0, size=(k, 2))
        intercept = rng.normal(0.0, 1.0, size=k)
        scores = X @ coef.T + intercept
        scores -= scores.max(axis=1, keepdims=True)
        P = np.exp(scores)
        P /= P.sum(axis=1, keepdims=True)
        y = _sample_rows(P, rng).astype(np.int64)
        params = Bunch(coef=coef, intercept=intercept)
    else:
        u = rng.random_sample(k)
        prior = u**2 / np.sum(u**2)
        y = rng.choice(k, size=n, p=prior).astype(np.int64)
        X = np.ones((n, 1))
        params = Bunch(class_prior=prior)
    return (X, y, params) if return_params else (X, y)
