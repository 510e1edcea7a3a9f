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


@pytest.mark.parametrize("multinomial", [False, True])
@pytest.mark.parametrize("l1_ratio", [1.0, 0.3])
def test_relative_duality_gap_of_the_same_problem_in_other_units(multinomial, l1_ratio):
    """X times s with weights v = w / s at C / s is X's elastic net at C divided by s when
    the ridge weight is (1 − r) s: the relative gap is the same number."""
    from sparsekit.losses._duality import relative_duality_gap
    from sparsekit.losses._logistic_datafit import Logistic
    from sparsekit.losses._multinomial_datafit import Multinomial
    X, y = _dense_binary(3, n=80, d=6)
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, 80) if multinomial else np.where(y == 1, 1.0, -1.0)
    weights = rng.uniform(0.5, 1.5, 80)
    weights /= weights.mean()

    def datafit(A):
        return (Multinomial(A, codes, 3, weights, True) if multinomial
                else Logistic(A, codes, weights, fit_intercept=True))
    unit = datafit(X)
    x = rng.normal(scale=0.4, size=unit.n_params)
    penalized = unit.penalty_weights > 0
    for s in (2.0**-14, 2.0**10):
        v = np.where(penalized, x / s, x)
        got = relative_duality_gap(datafit(X * s), v, 2.0 / s, l1_ratio, (1 - l1_ratio) * s)
        want = relative_duality_gap(unit, x, 2.0, l1_ratio, 1 - l1_ratio)
        np.testing.assert_allclose(got, want, rtol=1e-9)
        assert got > 0
