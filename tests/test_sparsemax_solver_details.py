"""SparsemaxClassifier solver details the other files leave open: the Hessian product and
the gradient as derivatives (sample weights, centering), the predict threshold, newton-cg's
Armijo, CG and 64-eps stop, nqn's float32-only no-decrease success, sdca's intercept in the
step size and its warm starts (each found by a bug the suite let through)."""
import numpy as np
import pytest

from sparsekit.linear_model import SparsemaxClassifier
from sparsekit.losses._fenchel_young_datafit import FenchelYoungLinear
from sparsekit.optimize import minimize_newton_cg
from sparsekit.optimize._cg import steihaug_cg
from sparsekit.optimize._newton_cg import _armijo


def _datafit(X, y, sw, polytope="simplex", alpha=0.1, fit_intercept=True, penalize=False):
    """The solvers' objective for labels ``y``, as SparsemaxClassifier builds it."""
    clf = SparsemaxClassifier(alpha=alpha, polytope=polytope, fit_intercept=fit_intercept,
                              penalize_intercept=penalize)
    budget = clf._check_budget()
    Yt, _ = clf._encode_targets(y, budget)
    return FenchelYoungLinear(X, Yt, sw, polytope=polytope, budget=budget, alpha=alpha,
                              fit_intercept=fit_intercept, penalize_intercept=penalize,
                              center=fit_intercept and not penalize)


def _data(n=40, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) + 2.0          # a nonzero feature mean: centering
    y = rng.integers(0, k, n)
    sw = rng.uniform(0.2, 3.0, n)
    sw[:3] = 0.0                                   # zero weights too
    return X, y, sw


@pytest.mark.parametrize("polytope", ["simplex", "at_least_one"])
@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
def test_hessian_product_is_the_derivative_of_the_gradient(polytope, fit_intercept,
                                                           penalize):
    """newton-cg's generalized Hessian-vector product, with sample weights, the implicit
    centering and the intercept options, equals a central difference of the gradient
    (the loss is piecewise quadratic: exact away from kinks, up to float32 products)."""
    X, y, sw = _data()
    k, d = 3, X.shape[1]
    datafit = _datafit(X, y, sw, polytope, 0.1, fit_intercept, penalize)
    fun, hessp_at = datafit.value_grad, datafit.hessp_at
    rng = np.random.default_rng(1)
    for _ in range(3):
        theta = 0.5 * rng.standard_normal((d + 1) * k)
        if not fit_intercept:    # the solver's b stays 0 then (hessp_at reads theta's b)
            theta[d * k:] = 0.0
        v = rng.standard_normal(theta.size)
        hessp, _ = hessp_at(theta)
        eps = 1e-6
        fd = (fun(theta + eps * v)[1] - fun(theta - eps * v)[1]) / (2 * eps)
        hv = hessp(v)
        np.testing.assert_allclose(hv, fd, rtol=1e-4, atol=1e-5 * np.abs(fd).max())


def test_armijo_accepts_a_full_step_with_sufficient_decrease():
    """f = x^2/2 from x = 1 along d = -1.9: f drops from 0.5 to 0.405, more than
    1e-4 * |slope|, so the full step is taken (a stricter constant halves it)."""
    def fun(x):
        return 0.5 * float(x @ x), x.copy()
    theta, d = np.array([1.0]), np.array([-1.9])
    f, g = fun(theta)
    step, f_new, _, _ = _armijo(fun, theta, f, g @ d, d)
    assert step == 1.0 and f_new == pytest.approx(0.405)
    # an ascent-like overshoot is refused: x -> -1.1 raises f
    step, f_new, _, _ = _armijo(fun, theta, f, g @ np.array([-2.1]), np.array([-2.1]))
    assert step == 0.5


def test_conjugate_gradient_solves_an_spd_system():
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
    A = Q @ np.diag(np.logspace(0, 3, 12)) @ Q.T
    g = rng.standard_normal(12)
    x, _, n_cg = steihaug_cg(lambda v: A @ v, g, rtol=1e-10, maxiter=24)
    np.testing.assert_allclose(A @ x, -g, atol=1e-8)
    assert n_cg <= 24


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
    ("simplex", {}, [0.6, 0.4, -1.0], [0.6, 0.4, 0.0], [1, 1, 0]),   # the support
    ("box", {}, [1.0, 0.2, -1.0], [1.0, 0.2, 0.0], [1, 0, 0]),       # marginals > 0.5
    ("budget", {"budget": 2}, [1.0, 0.2, -1.0], [1.0, 0.2, 0.0], [1, 0, 0]),
])
def test_auto_threshold_is_the_support_on_the_simplex_and_one_half_elsewhere(
        polytope, params, intercept, proba, expected):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 2))
    Y = np.eye(3, dtype=int)[rng.integers(0, 3, 30)]
    clf = SparsemaxClassifier(polytope=polytope, **params).fit(X, Y)
    clf.coef_ = np.zeros_like(clf.coef_)
    clf.intercept_ = np.array(intercept)
    np.testing.assert_allclose(clf.predict_proba(X[:1]), [proba])
    np.testing.assert_array_equal(clf.predict(X[:1]), [expected])


def test_nqn_no_decrease_is_a_success_in_float32_only(monkeypatch):
    """status 4 (line search found no decrease) is the rounding floor of a float32
    objective only: in float64 it is a failure and must warn."""
    import warnings

    from scipy.optimize import OptimizeResult
    from sklearn.exceptions import ConvergenceWarning

    import sparsekit.linear_model._sparsemax as sparsemax_module

    def stub(fun, x0, **kwargs):
        return OptimizeResult(x=np.zeros_like(x0), fun=fun(x0)[0], nit=1, status=4,
                              success=False, message="ABNORMAL: LINE SEARCH FOUND NO DECREASE")

    monkeypatch.setattr(sparsemax_module, "minimize_nqn", stub)
    X, y, _ = _data()
    with pytest.warns(ConvergenceWarning):
        SparsemaxClassifier(solver="nqn").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        SparsemaxClassifier(solver="nqn").fit(X.astype(np.float32), y)


@pytest.mark.parametrize("polytope", ["simplex", "box", "at_least_one"])
def test_sdca_one_row_with_a_penalized_intercept_is_solved_in_one_epoch(polytope):
    """With a single row and a penalized intercept (the weight of a constant feature 1),
    the whole dual is one block: its exact update, with q = c (||x||^2 + 1), solves the
    problem in one epoch."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X = np.array([[0.7, -1.2, 0.4]])
    Y = np.array([[0.2, 0.8, 0.0]]) if polytope == "simplex" else np.array([[1, 1, 0]])
    clf = SparsemaxClassifier(solver="sdca", polytope=polytope, alpha=0.3,
                              penalize_intercept=True, tol=1e-10, max_iter=1,
                              random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf.fit(X, Y)
    ref = SparsemaxClassifier(solver="lbfgs", polytope=polytope, alpha=0.3,
                              penalize_intercept=True, tol=1e-12).fit(X, Y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=1e-6)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=1e-6)


def test_newton_cg_relative_reduction_stop_is_64_eps():
    """The stop on a small decrease uses 64 machine epsilons relative to f: on
    f = 1 + x^4/4 (Newton shrinks x by 1/3 a step) it stops only once x < ~1e-3."""
    def fun(x):
        return 1.0 + 0.25 * float(np.sum(x**4)), x**3

    def hessp_at(x):
        return (lambda v: 3 * x**2 * v), 1

    res = minimize_newton_cg(fun, np.array([0.05]), hessp_at, tol=0.0, max_iter=200)
    assert res.success and "64 eps" in res.message
    assert abs(res.x[0]) < 1e-3


def test_sdca_warm_start_keeps_the_start_intercept(monkeypatch):
    """A warm start replaces W by W(mu0) with mu0 = proj(scores of theta0) but keeps the
    start's free intercept: b + wb(mu0) == b0 before any update (epochs stubbed out)."""
    import sparsekit.optimize._sdca as sdca

    monkeypatch.setattr(sdca, "dual_epoch_dense", lambda *args: 0.0)
    X, y, _ = _data(n=20)
    datafit = _datafit(X, y, np.ones(20), fit_intercept=True, penalize=True)
    datafit.penalize_intercept = False    # a free intercept on an uncentered datafit
    datafit.value_grad = lambda th: (0.0, np.ones_like(th))
    rng = np.random.default_rng(2)
    theta0 = rng.standard_normal((X.shape[1] + 1) * 3)
    res = sdca.minimize_sdca(datafit, theta0, tol=1e-12, max_iter=1,
                             rng=np.random.default_rng(0))
    np.testing.assert_allclose(res.x[-3:], theta0[-3:], atol=1e-12)


@pytest.mark.parametrize("fit_intercept,penalize", [(True, False), (True, True),
                                                    (False, False)])
def test_objective_gradient_is_the_derivative_of_the_objective(fit_intercept, penalize):
    """The gradient of the solvers' objective, in the centered coordinates (b + W^T mu)
    with sample weights, matches central differences of the objective."""
    X, y, sw = _data()
    k, d = 3, X.shape[1]
    fun = _datafit(X, y, sw, "simplex", 0.1, fit_intercept, penalize).value_grad
    theta = 0.5 * np.random.default_rng(3).standard_normal((d + 1) * k)
    g = fun(theta)[1]
    eps = 1e-6
    fd = np.array([(fun(theta + eps * e)[0] - fun(theta - eps * e)[0]) / (2 * eps)
                   for e in np.eye(theta.size)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_sdca_warm_start_with_a_penalized_intercept_from_another_problem():
    """A penalized intercept is all in wb (the fixed offset b must restart at 0): a warm
    start from another alpha's solution reaches the cold solution."""
    import warnings

    X, y, _ = _data(n=50)
    kw = dict(solver="sdca", penalize_intercept=True, tol=1e-10, max_iter=5000,
              random_state=0)
    warm = SparsemaxClassifier(alpha=1.0, warm_start=True, **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm.set_params(alpha=0.1).fit(X, y)
    cold = SparsemaxClassifier(alpha=0.1, **kw).fit(X, y)
    np.testing.assert_allclose(warm.intercept_, cold.intercept_, atol=1e-7)
    np.testing.assert_allclose(warm.coef_, cold.coef_, atol=1e-7)


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
    return (sw * loss).sum() / sw.sum() + 0.5 * clf.alpha * (clf.coef_ ** 2).sum()


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


def test_verbose_nqn_prints_the_objective_of_each_iterate(capsys):
    """nqn's callback prints the objective at each accepted iterate: n_iter_ lines, the
    last one the objective of the fitted model."""
    X, y, sw = _data()
    clf = SparsemaxClassifier(alpha=0.1, solver="nqn", tol=1e-10, verbose=1)
    clf.fit(X, y, sample_weight=sw)
    lines = _verbose_lines(capsys, "nqn objective ")
    assert len(lines) == clf.n_iter_ >= 2
    f = [float(line.rsplit(" ", 1)[1]) for line in lines]
    np.testing.assert_allclose(f[-1], _objective_of_fit(clf, X, y, sw), rtol=1e-9)
    assert f[-1] < f[0] < 1 / 3 - 1e-3      # 1/3: the objective at the zero start
    # verbose=0 prints nothing
    SparsemaxClassifier(alpha=0.1, solver="nqn", tol=1e-10).fit(X, y, sample_weight=sw)
    assert capsys.readouterr().out == ""


def test_verbose_sdca_prints_each_epoch_and_the_final_objective(capsys):
    """sdca prints one line per epoch, numbered 1..n_iter_, the last with the objective
    of the fitted model and a max|grad| within tol."""
    X, y, sw = _data()
    clf = SparsemaxClassifier(alpha=0.1, solver="sdca", tol=1e-8, verbose=1, random_state=0,
                              max_iter=2000)
    clf.fit(X, y, sample_weight=sw)
    lines = _verbose_lines(capsys, "sdca epoch")
    assert len(lines) == clf.n_iter_ >= 2
    for it, line in enumerate(lines, 1):
        assert line.startswith(f"[SparsemaxClassifier] sdca epoch {it}: objective ")
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


def test_armijo_gives_up_after_max_halvings_on_an_ascent_direction():
    """f = x^2/2 from x = 1 along d = +1 (uphill): no step 2^-j meets sufficient
    decrease, so after exactly max_halvings evaluations Armijo returns Nones."""
    calls = []

    def fun(x):
        calls.append(x[0])
        return 0.5 * float(x @ x), x.copy()

    theta, d = np.array([1.0]), np.array([1.0])
    assert _armijo(fun, theta, 0.5, -1.0, d, max_halvings=7) == (None, None, None, 7)
    np.testing.assert_array_equal(calls, 1.0 + 0.5 ** np.arange(7))


def test_conjugate_gradient_stops_at_nonpositive_curvature():
    """H = 0: the first direction has no curvature and CG returns the steepest descent
    -g. H = diag(2, -1), g = (1, 1): the first step (curvature 1) lands on x = (-2, -2),
    the second direction (-6, -12) has curvature -72, and CG returns that iterate (still
    a descent direction) instead of stepping along negative curvature."""
    g = np.array([1.0, -3.0, 0.5])
    x, _, n_cg = steihaug_cg(lambda v: 0.0 * v, g, rtol=1e-12)
    np.testing.assert_array_equal(x, -g)
    assert n_cg == 1
    H = np.diag([2.0, -1.0])
    g = np.array([1.0, 1.0])
    x, _, n_cg = steihaug_cg(lambda v: H @ v, g, rtol=1e-12)
    np.testing.assert_allclose(x, [-2.0, -2.0], rtol=1e-15)
    assert n_cg == 2 and g @ x < 0


def test_newton_cg_raises_the_damping_a_hundredfold_after_a_failed_line_search():
    """f = x^2/2 with a generalized Hessian that underestimates the curvature (1e-12):
    from x0 = 1e-4 the damped step -g / (H + 1e-3 |g|) is ~1000x too long, and 20
    halvings cannot fix it, so the solve is redone with the damping times 100; that
    step, -g / (H + 0.1 |g|), passes after some halvings."""
    trials = []

    def fun(x):
        trials.append(x[0])
        return 0.5 * float(x @ x), x.copy()

    def hessp_at(x):
        return (lambda v: 1e-12 * v), 1

    x0 = 1e-4
    res = minimize_newton_cg(fun, np.array([x0]), hessp_at, tol=0.0, max_iter=1)
    d0 = -x0 / (1e-12 + 1e-3 * x0)
    d1 = -x0 / (1e-12 + 1e-1 * x0)
    # trials[0] is the start; then 20 halvings along d0, then halvings along d1
    np.testing.assert_allclose(trials[1:21], x0 + 0.5 ** np.arange(20) * d0, rtol=1e-12)
    np.testing.assert_allclose(trials[21], x0 + d1, rtol=1e-12)
    step = 0.5 ** (len(trials) - 22)
    assert 0 < abs(res.x[0]) < x0 and res.nit == 1
    np.testing.assert_allclose(res.x[0], x0 + step * d1, rtol=1e-12)
    assert res.fun <= 0.5 * x0**2 + 1e-4 * step * (x0 * d1)


def test_newton_cg_stops_when_no_damping_gives_a_decrease():
    """A gradient that does not match the objective (f = x^2/2 at its minimum x = 0, but
    "gradient" x - 1) makes every Newton direction uphill: each of the 8 dampings
    (1e-3 |g| times 100^j) fails its 20 halvings, and the solve stops at the start,
    unsuccessful, with a line-search message, instead of running on to max_iter."""
    calls = []

    def fun(x):
        calls.append(x[0])
        return 0.5 * float(x @ x), x - 1.0

    def hessp_at(x):
        return (lambda v: v), 1

    x0 = np.array([0.0])
    res = minimize_newton_cg(fun, x0, hessp_at, tol=0.0, max_iter=50)
    assert not res.success and res.nit == 1
    assert res.message == "line search failed (the objective does not decrease)"
    np.testing.assert_array_equal(res.x, x0)
    assert res.fun == 0.0 and len(calls) == 1 + 8 * 20
    # the full steps tried: 1 / (1 + 1e-3 * 100^j) for j = 0..7
    np.testing.assert_allclose(calls[1::20], 1.0 / (1.0 + 1e-3 * 100.0 ** np.arange(8)),
                               rtol=1e-12)
