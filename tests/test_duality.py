"""The relative duality gap of the ℓ1 problems (sparsekit.losses._duality) against its
formula written out in NumPy."""
import numpy as np
import pytest

from test_l1_logistic import _dense_binary


def _gap_reference(X, y_pm, s, C, w, b):
    """The relative duality gap written out from its docstring (plain NumPy)."""
    m = y_pm * (X @ w + b)
    primal = np.abs(w).sum() + C * np.sum(s * np.logaddexp(0.0, -m))
    t = 1.0 / (1.0 + np.exp(m))
    t = t / max(1.0, C * np.abs(X.T @ (y_pm * s * t)).max())
    H = -t * np.log(t) - (1 - t) * np.log(1 - t)
    return (primal - C * np.sum(s * (H - t * y_pm * b))) / primal


@pytest.mark.parametrize("b", [-1.0, 0.0, 0.4, 2.0])
@pytest.mark.parametrize("C", [0.05, 3.0])
def test_relative_duality_gap_matches_its_formula_at_any_point(b, C):
    """At an arbitrary (w, b), not only at the fitted intercept where Σ sᵢ yᵢ tᵢ ≈ 0 hides
    the sign of the b term; C = 0.05 keeps θ feasible unscaled, C = 3 scales it."""
    from sparsekit.losses._duality import relative_duality_gap
    from sparsekit.losses._logistic_datafit import Logistic
    X, y = _dense_binary(1, n=60, d=8)
    y_pm = np.where(y == 1, 1.0, -1.0)
    s = np.random.default_rng(2).uniform(0.2, 2.0, 60)
    w = np.zeros(8)
    w[[0, 3]] = [0.7, -0.2]
    got = relative_duality_gap(Logistic(X, y_pm, s, fit_intercept=True), np.r_[w, b], C)
    np.testing.assert_allclose(got, _gap_reference(X, y_pm, s, C, w, b), rtol=1e-10)
    assert got >= 0
