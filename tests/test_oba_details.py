"""OBA details the other files leave open: the corrective re-solve's warm start, the ISTA
fallback point, tau's growth and first value, l1_logistic_path's grid, order and warm
starts, the duality gap formula, the Lipschitz bound's intercept column (each found by a
bug the suite let through)."""
import numpy as np
import pytest

from sparsekit.losses._logistic_datafit import _ExplicitHessian
from sparsekit.optimize._oba import _corrective_cycle


def test_corrective_resolve_warm_starts_from_the_kept_direction():
    """After a violator is dropped from a decoupled (diagonal) system, the previous direction
    restricted to the kept coordinates is already the exact Newton step: the re-solve must
    start there (one product to check it) instead of running CG again from 0."""
    H = _ExplicitHessian(np.diag([2.0, 1.0, 4.0, 3.0, 5.0]), [0])
    g = np.array([1.0, 0.0, -2.0, 3.0, -1.0])   # d = -H⁻¹g, d₁ exactly 0: a violator
    zeta = np.array([-1.0, 1.0, 1.0, -1.0, 1.0])
    free, new = np.arange(5), np.array([False, True, True, False, False])
    opts = (0.0, 1e-12, 50, 1e3, False)      # plain CG: 4 distinct curvatures, 4 steps
    d, _, kept, _, loops, ncg = _corrective_cycle(H, None, None, g, zeta, free, new, opts)
    assert loops == 2
    np.testing.assert_array_equal(kept, [0, 2, 3, 4])
    np.testing.assert_allclose(d, [-0.5, 0.5, -1.0, 0.2], rtol=1e-12)
    # first pass: plain CG on 4 distinct eigenvalues; second: the warm start is exact (1 product)
    first = _corrective_cycle(H, None, None, g, zeta, free, np.zeros(5, bool), opts)[5]
    assert ncg == first + 1


def _logistic_problem(seed=6, n=80, d=30):
    from sparsekit.losses._logistic_datafit import Logistic
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.5] = 0.0
    w = np.zeros(d)
    w[:4] = [2.0, -1.5, 1.0, 0.5]
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return Logistic(X, y)


def test_ista_fallback_point_is_the_unit_1_over_L_prox_step():
    """When the OBA point is useless, Algorithm 2 lands on S_{μ/L}(x − ∇f(x)/L) with the
    given L (an upper bound: never doubled), not on a shorter prox step."""
    from sparsekit._cython import _oba_kernels as K
    from sparsekit.optimize import minimize_oba
    datafit = _logistic_problem()
    L, mu = datafit.lipschitz(), 0.01

    def useless_hessp(x, free):
        H = datafit.hessp(x, free)
        return lambda v: 1e-9 * H(v)  # Newton steps 1e9 too long: even 1e-4 of them fails

    x0 = np.zeros(30)
    res = minimize_oba(datafit.value_grad, useless_hessp, x0, mu, lipschitz=L, max_iter=1,
                       cg_radius=1e12, adaptive_radius=False, precondition=False)
    assert res.nit == 1 and res.n_ista == 1 and res.lipschitz == L
    G = datafit.value_grad(x0)[1]
    expected = np.empty(30)
    K.soft_threshold(x0 - G / L, np.full(30, mu / L), expected)
    assert np.any(expected != 0)
    np.testing.assert_allclose(res.x, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("tau_boost", [1, 2])
def test_tau_grows_by_twice_the_boost_after_an_iteration_without_corrections(capsys, tau_boost):
    """With tau_growth = 0 (thesis rule) τ changes only after an iteration whose corrective
    cycle made one pass, and then by 2 · tau_boost (up to n); otherwise it stays."""
    from sparsekit.optimize import minimize_oba
    datafit = _logistic_problem(seed=11, n=200, d=300)
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(300), 1e-3,
                       lipschitz=datafit.lipschitz(), tol=1e-9, tau0_flat=None,
                       tau_boost=tau_boost, verbose=1)
    taus = [int(line.rsplit("tau=", 1)[1]) for line in capsys.readouterr().out.splitlines()
            if "tau=" in line]
    assert res.success and len(taus) == res.nit + 1
    grew = 0
    for before, after, loops in zip(taus[:-1], taus[1:], res.corrective_loops):
        expected = min(before * 2 * tau_boost, 300) if loops == 1 else before
        assert after == expected
        grew += loops == 1 and before < 300
    assert grew >= 2


def test_warm_start_first_tau_is_at_least_its_penalized_support(capsys):
    """τ⁰ = max(1, ⌊η · #penalized⌋, nnz of the penalized part of x0): a warm start with 7
    nonzeros (plus a nonzero unpenalized one) starts with τ = 7, and its first free set
    holds the support and the 7 largest violators of 𝒰."""
    from sparsekit.optimize import minimize_oba
    datafit = _logistic_problem(seed=3, n=120, d=300)
    weights = np.ones(300)
    weights[-1] = 0.0
    x0 = np.zeros(300)
    x0[[0, 1, 2, 3, 10, 20, 30]] = [0.5, -0.5, 0.3, 0.2, 0.01, -0.01, 0.01]
    x0[-1] = 0.3                            # unpenalized: not counted
    sizes = []

    def hessp(x, free):
        sizes.append(free.size)
        return datafit.hessp(x, free)

    mu = 2e-3
    G = datafit.value_grad(x0)[1]
    violators = np.count_nonzero((x0 == 0) & (np.abs(G) > mu) & (weights > 0))
    assert violators > 7
    minimize_oba(datafit.value_grad, hessp, x0, mu, penalty_weights=weights, max_iter=1,
                 tau0_flat=None, lipschitz=datafit.lipschitz(), verbose=1)
    assert capsys.readouterr().out.splitlines()[0].endswith("tau=7")
    assert sizes[0] == 8 + 7               # support, the unpenalized one and 7 violators


def _binary(seed=0, n=150, d=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (X[:, 0] - X[:, 1] + 0.8 + 0.7 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def test_path_solves_from_the_smallest_C_with_warm_starts():
    """Cs given in decreasing order are still solved from the smallest up, each from the
    previous solution: the C below C_min is solved first, at the null start (0 iterations),
    and a repeated C restarts at its own solution (0 iterations)."""
    from sparsekit.linear_model import l1_logistic_path
    X, y = _binary()
    c_min = l1_logistic_path(X, y, Cs=1)[1][0]
    coefs, _, n_iter = l1_logistic_path(X, y, [100 * c_min, 0.5 * c_min])
    assert n_iter[1] == 0 and not np.any(coefs[1, :-1]) and n_iter[0] > 0
    _, _, n_iter = l1_logistic_path(X, y, [10 * c_min, 10 * c_min])
    assert sorted(n_iter.tolist())[0] == 0 and n_iter.max() > 0


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
    from sparsekit.linear_model._l1_logistic import _relative_duality_gap
    X, y = _binary(1, n=60, d=8)
    y_pm = np.where(y == 1, 1.0, -1.0)
    s = np.random.default_rng(2).uniform(0.2, 2.0, 60)
    w = np.zeros(8)
    w[[0, 3]] = [0.7, -0.2]
    got = _relative_duality_gap(X, y_pm, s, C, w, b)
    np.testing.assert_allclose(got, _gap_reference(X, y_pm, s, C, w, b), rtol=1e-10)
    assert got >= 0


def test_logistic_lipschitz_bound_covers_the_intercept_column():
    """L ≥ λ_max([X, 1]ᵀ diag(s/4) [X, 1]): with tiny features the intercept's column
    carries nearly all of the curvature."""
    from sparsekit.losses._logistic_datafit import Logistic
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    X = 1e-3 * rng.standard_normal((50, 4))
    y = np.where(rng.random(50) < 0.5, 1.0, -1.0)
    s = rng.uniform(0.5, 2.0, 50)
    A = np.column_stack([X, np.ones(50)])
    true = np.linalg.eigvalsh(A.T @ (A * (s / 50 / 4)[:, None])).max()
    for data in (X, sp.csc_matrix(X)):
        assert Logistic(data, y, s, fit_intercept=True).lipschitz() >= true


def test_path_grid_is_log_spaced_over_four_decades_from_C_min():
    """Cs = n: n values log-spaced on [C_min, 1e4 C_min] (the documented grid)."""
    from sparsekit.linear_model import l1_logistic_path
    X, y = _binary(2)
    _, Cs, _ = l1_logistic_path(X, y, Cs=5)
    c_min = Cs[0]
    np.testing.assert_allclose(Cs, c_min * np.logspace(0, 4, 5), rtol=1e-12)


def _three_classes(seed=0, n=90, d=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.integers(0, 3, n)
    X[:, 0] += y
    X[:, 1] -= 0.5 * y
    return X, y


def test_verbose_reports_each_class_with_its_scaled_objective(capsys):
    """verbose prints one line per one-vs-rest problem, in class order, with the fitted
    iterations, optimality and gap, and F/(C n) = (‖w‖₁ + C Σ sᵢ log(1+e^{−yᵢmᵢ}))/(C Σ sᵢ)
    recomputed here from coef_ and intercept_ (sample weights included)."""
    from sparsekit.linear_model import L1LogisticOBA
    X, y = _three_classes()
    s = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    C = 0.5
    clf = L1LogisticOBA(C=C, verbose=1).fit(X, y, sample_weight=s)
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("[L1LogisticOBA] class")]
    assert len(lines) == 3
    for k, line in enumerate(lines):
        assert line.startswith(f"[L1LogisticOBA] class {k}: {clf.n_iter_[k]} iterations, ")
        y_pm = np.where(y == k, 1.0, -1.0)
        m = X @ clf.coef_[k] + clf.intercept_[k]
        F = np.abs(clf.coef_[k]).sum() + C * np.sum(s * np.logaddexp(0.0, -y_pm * m))
        printed = float(line.split("F/(C n) ")[1].split(",")[0])
        np.testing.assert_allclose(printed, F / (C * s.sum()), rtol=1e-9)
        assert f"optimality {clf.optimality_[k]:.2e}" in line
        assert line.endswith(f"relative duality gap {clf.duality_gap_[k]:.2e}")
    # binary: a single line, named by the positive (larger) label
    L1LogisticOBA(C=C, verbose=1).fit(X, np.where(y == 2, "b", "a"))
    lines = [line for line in capsys.readouterr().out.splitlines()
             if line.startswith("[L1LogisticOBA] class")]
    assert len(lines) == 1 and lines[0].startswith("[L1LogisticOBA] class 'b': ")


def test_warm_start_from_a_fit_with_another_number_of_classes_is_a_cold_start():
    """A previous coef_ of another shape (3 one-vs-rest rows, then a binary y; or other
    features) cannot be a start: the fit is the cold fit, iterate for iterate."""
    from sparsekit.linear_model import L1LogisticOBA
    X, y = _three_classes()
    y2 = (y == 2).astype(int)
    cold = L1LogisticOBA(C=0.5).fit(X, y2)
    warm = L1LogisticOBA(C=0.5, warm_start=True).fit(X, y)
    warm.fit(X, y2)
    np.testing.assert_array_equal(warm.coef_, cold.coef_)
    np.testing.assert_array_equal(warm.intercept_, cold.intercept_)
    np.testing.assert_array_equal(warm.n_iter_, cold.n_iter_)
    cold = L1LogisticOBA(C=0.5).fit(X[:, :3], y2)
    warm.fit(X[:, :3], y2)
    np.testing.assert_array_equal(warm.coef_, cold.coef_)
    np.testing.assert_array_equal(warm.n_iter_, cold.n_iter_)


@pytest.mark.parametrize("sparse_coef", [False, True])
def test_warm_start_without_intercept_resumes_from_coef(sparse_coef):
    """fit_intercept=False: a second warm fit starts at the first's optimum, so it stops
    at once (0 iterations) with the same coef_ and a zero intercept."""
    from sparsekit.linear_model import L1LogisticOBA
    X, y = _three_classes()
    clf = L1LogisticOBA(C=0.5, fit_intercept=False, warm_start=True, sparse_coef=sparse_coef)
    clf.fit(X, y)
    first = clf.coef_.toarray() if sparse_coef else clf.coef_.copy()
    assert np.all(clf.n_iter_ > 0)
    clf.fit(X, y)
    second = clf.coef_.toarray() if sparse_coef else clf.coef_
    np.testing.assert_array_equal(clf.n_iter_, 0)
    np.testing.assert_array_equal(second, first)
    np.testing.assert_array_equal(clf.intercept_, 0.0)


def test_path_pos_class_picks_the_positive_label():
    """pos_class=k on three classes is the path of the binary labels (y == k); on two
    classes, the smaller label as pos_class flips the signs of w and b (the logistic loss
    is symmetric); a label not in y is refused."""
    from sparsekit.linear_model import l1_logistic_path
    X, y = _three_classes()
    Cs = [0.1, 1.0]
    for k in range(3):
        coefs, _, n_iter = l1_logistic_path(X, y, Cs, pos_class=k)
        expected, _, n_expected = l1_logistic_path(X, (y == k).astype(int), Cs)
        np.testing.assert_array_equal(coefs, expected)
        np.testing.assert_array_equal(n_iter, n_expected)
    y2 = np.where(y == 2, "b", "a")
    pos_b = l1_logistic_path(X, y2, Cs)[0]
    np.testing.assert_array_equal(l1_logistic_path(X, y2, Cs, pos_class="b")[0], pos_b)
    np.testing.assert_allclose(l1_logistic_path(X, y2, Cs, pos_class="a")[0], -pos_b,
                               atol=1e-7)
    with pytest.raises(ValueError, match="pos_class 5 is not a label of y"):
        l1_logistic_path(X, y, Cs, pos_class=5)
    with pytest.raises(ValueError, match="pos_class 'c' is not a label of y"):
        l1_logistic_path(X, y2, Cs, pos_class="c")


def test_path_warns_for_each_C_that_did_not_converge():
    """max_iter=1 and a tight tol: every C warns, naming its C; a loose run does not."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sparsekit.linear_model import l1_logistic_path
    X, y = _binary()
    with pytest.warns(ConvergenceWarning) as record:
        _, _, n_iter = l1_logistic_path(X, y, [2.0, 0.5], max_iter=1, tol=1e-12)
    messages = sorted(str(w.message) for w in record if w.category is ConvergenceWarning)
    assert messages == ["OBA did not converge for C=0.5", "OBA did not converge for C=2"]
    np.testing.assert_array_equal(n_iter, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        l1_logistic_path(X, y, [2.0, 0.5])
