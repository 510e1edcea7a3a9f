"""minimize_oba: internal invariants, optimality, Lasso against scikit-learn, LIBLINEAR."""
import functools
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from hypothesis import given, settings, strategies as st

import _oba_reference as ref
from sparsekit._cython import _gram_kernels as GK
from sparsekit._cython import _oba_kernels as K
from sparsekit.datasets import make_thesis_synthetic
from sparsekit.optimize import minimize_oba
from sparsekit.losses._logistic_datafit import (Logistic, Quadratic, _ExplicitHessian,
                                          _SubspaceHessian)
from sparsekit.optimize._cg import radius_metric, steihaug_cg as _cg
from sparsekit.optimize._oba import (STALL_ITERATIONS, _corrective_cycle, _estimate_lipschitz,
                                    _flat_violations, _free_set, _model_search, _pinned_step,
                                    _updated_radius)


_DATA_HOME = Path(os.environ.get("SPARSEKIT_DATA")
                  or Path(__file__).resolve().parents[1].parent / "shared" / "datasets")
needs_mulan = pytest.mark.skipif(not (_DATA_HOME / "mulan").is_dir(),
                                 reason=f"no Mulan data at {_DATA_HOME}")

def _problem(seed, n=80, d=30, sparse=False, dtype=np.float64, corr=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if corr:  # correlated columns: a non-diagonally-dominant Hessian
        X = X + corr * X[:, :1]
    X[rng.random((n, d)) < 0.5] = 0.0
    w = np.zeros(d)
    w[:4] = [2.0, -1.5, 1.0, 0.5]
    y = np.where(X @ w + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    X = X.astype(dtype)
    return (sp.csr_matrix(X) if sparse else X), y


def _state(datafit, x, mu):
    f, G = datafit.value_grad(x)
    muw = mu * datafit.penalty_weights
    g, zeta, code = np.empty(x.size), np.empty(x.size), np.empty(x.size, dtype=np.int8)
    K.subgradient_and_sets(x, G, muw, g, zeta, code)
    return f, G, muw, g, zeta, code


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_corrective_cycle_and_model_decrease_invariants(sparse, seed):
    X, y = _problem(seed, sparse=sparse, corr=2.0)
    datafit = Logistic(X, y, fit_intercept=True)
    mu = 0.02
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(datafit.n_params) < 0.3, rng.standard_normal(datafit.n_params), 0)
    f, G, muw, g, zeta, code = _state(datafit, x, mu)
    for tau in (1, 5, 1000):
        free, new = _free_set(code, g, tau)
        assert new.sum() == min(tau, np.count_nonzero(code == 2))
        if 0 < new.sum() < np.count_nonzero(code == 2):  # greedy: the largest |g| are chosen
            unchosen = np.setdiff1d(np.flatnonzero(code == 2), free[new])
            assert np.abs(g[free[new]]).min() >= np.abs(g[unchosen]).max()
        H = datafit.hessp(x, free)
        opts = (1e-8, 0.1, 1000, 1e3, True)
        d, Hd, free2, H2, loops, _ = _corrective_cycle(H, datafit.hessp, x, g, zeta, free, new,
                                                       opts)
        # the cycle ends, each pass removing at least one new variable
        assert 1 <= loops <= new.sum() + 1
        assert set(free2) <= set(free) and set(free) - set(free2) <= set(free[new])
        kept_new = np.isin(free2, free[new])
        assert np.all(d[kept_new] * zeta[free2[kept_new]] > 0)  # orthant-consistent
        assert d @ g[free2] <= 0  # CG from 0 gives descent on the model
        np.testing.assert_allclose(Hd, H2(d) + 1e-8 * d, rtol=1e-9, atol=1e-13)
        x_hat, alpha, q, q0, _ = _model_search(x, G, zeta, muw, free2, d, Hd, H2, 1e-8,
                                              K.weighted_l1(muw, x))
        assert q <= q0 + 1e-15 and 0 < alpha <= 1
        # orthant projection: nonzeros keep their sign, zeros move only along -g
        pen = muw > 0
        moved = pen & (x_hat != 0)
        assert np.all(x_hat[moved] * zeta[moved] > 0)
        assert np.all(x_hat[pen & (zeta == 0)] == 0)
        # the model value is what (2.2) says with the operator it was given (x̂ − x lives on
        # the free set)
        delta = x_hat - x
        assert np.all(np.delete(delta, free2) == 0)
        dF = delta[free2]
        q_direct = G @ delta + 0.5 * (dF @ H2(dF) + 1e-8 * delta @ delta)
        np.testing.assert_allclose(q, q_direct + muw @ np.abs(x_hat), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_radius_in_the_diagonal_norm_reaches_the_same_minimum(sparse):
    """radius_norm="diagonal" on columns of scales 1e-2 to 1e2: the same minimum as the
    Euclidean radius (the same small cg_radius in either norm), at tol 1e-10."""
    X, y = _problem(5, n=150, d=30, sparse=sparse, corr=1.0)
    X = X @ sp.diags(np.logspace(-2, 2, 30)) if sparse else X * np.logspace(-2, 2, 30)
    datafit = Logistic(X, y, fit_intercept=True)
    x0 = np.zeros(31)
    results = [minimize_oba(datafit.value_grad, datafit.hessp, x0, 0.01, tol=1e-10,
                            penalty_weights=np.append(np.ones(30), 0.0), cg_radius=0.3,
                            radius_norm=norm, max_iter=2000)
               for norm in ("euclidean", "diagonal")]
    assert all(res.success for res in results)
    np.testing.assert_allclose(results[1].fun, results[0].fun, rtol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_objective_monotone_and_orthant_steps(sparse):
    X, y = _problem(3, n=120, d=40, sparse=sparse, corr=1.0)
    datafit = Logistic(X, y, fit_intercept=False)
    iterates = [np.zeros(40)]
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(40), 0.01,
                       lipschitz=datafit.lipschitz(), tol=1e-10,
                       callback=lambda x: iterates.append(x.copy()) and False)
    assert res.success and res.optimality <= 1e-10
    phis = [datafit.value(x) + 0.01 * np.abs(x).sum() for x in iterates]
    assert np.all(np.diff(phis) <= 1e-12 * abs(phis[0]))
    assert res.n_ista == 0  # the ISTA backup is not needed here (as in the thesis)
    for x0, x1 in zip(iterates[:-1], iterates[1:]):  # no orthant is crossed in one step
        assert np.all(x0 * x1 >= 0)
        _, _, _, g, _, _ = _state(datafit, x0, 0.01)
        entered = (x0 == 0) & (x1 != 0)
        assert np.all(np.sign(x1[entered]) == -np.sign(g[entered]))
    assert res.corrective_loops.size == res.nit and res.corrective_loops.min() >= 1


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("layout", ["dense", "csr", "f32"])
def test_logistic_optimum_matches_reference(fit_intercept, layout):
    X, y = _problem(4, sparse=layout == "csr", dtype=np.float32 if layout == "f32" else float)
    n, C = X.shape[0], 0.5
    datafit = Logistic(X, y, fit_intercept=fit_intercept)
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(datafit.n_params),
                       1 / (C * n), penalty_weights=datafit.penalty_weights,
                       lipschitz=datafit.lipschitz, tol=1e-10)
    w, b = res.x[:30], (res.x[-1] if fit_intercept else 0.0)
    w_ref, b_ref, F_ref = ref.l1_logistic_lbfgsb(X, y, C, fit_intercept)
    F = ref.l1_logistic_objective(X, y, w, b, C)
    np.testing.assert_allclose(res.fun * C * n, F, rtol=1e-6 if layout == "f32" else 1e-12)
    assert F <= F_ref * (1 + 1e-9)
    np.testing.assert_allclose(w, w_ref, atol=2e-4)
    np.testing.assert_array_equal(w != 0, np.abs(w_ref) > 1e-6)


def test_no_lipschitz_given_uses_an_estimate():
    X, y = _problem(5)
    datafit = Logistic(X, y)
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.01, tol=1e-9)
    res2 = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.01,
                        lipschitz=datafit.lipschitz(), tol=1e-9)
    assert res.success and res.lipschitz > 0
    np.testing.assert_allclose(res.x, res2.x, atol=1e-7)


def test_ista_globalization_rescues_bad_directions():
    """A Hessian that is far too flat gives overlong steps: Algorithm 2 must cut them."""
    X, y = _problem(6)
    datafit = Logistic(X, y)

    def bad_hessp(x, free):
        H = datafit.hessp(x, free)
        return lambda v: 0.02 * H(v)  # Newton steps 50 times too long

    phis = []
    res = minimize_oba(datafit.value_grad, bad_hessp, np.zeros(30), 0.01,
                       lipschitz=datafit.lipschitz(), tol=1e-9, max_iter=300,
                       callback=lambda x: phis.append(datafit.value(x) + 0.01 * np.abs(x).sum()))
    good = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.01,
                        lipschitz=datafit.lipschitz(), tol=1e-10)
    assert res.n_ista > 0
    assert np.all(np.diff(phis) <= 1e-13)  # Algorithm 2 keeps φ decreasing (φ ≤ Γ ≤ φ)
    np.testing.assert_allclose(res.fun, good.fun, rtol=1e-4)


def test_too_small_lipschitz_is_doubled_with_a_warning():
    """A given L below the true constant must not let φ increase (it once rose 0.29 -> 1.8e4)."""
    X, y = _problem(6)
    datafit = Logistic(X, y)

    def flat_hessp(x, free):
        H = datafit.hessp(x, free)
        return lambda v: 1e-4 * H(v)  # Newton steps 1e4 times too long: ISTA every time

    phis = []
    with pytest.warns(RuntimeWarning, match="below the curvature"):
        res = minimize_oba(datafit.value_grad, flat_hessp, np.zeros(30), 0.01, lipschitz=1e-6,
                           tol=1e-9, max_iter=100,
                           callback=lambda x: phis.append(datafit.value(x)
                                                          + 0.01 * np.abs(x).sum()))
    good = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.01,
                        lipschitz=datafit.lipschitz(), tol=1e-10)
    assert np.all(np.diff(phis) <= 1e-13)
    assert res.lipschitz > 1e-6
    np.testing.assert_allclose(res.fun, good.fun, rtol=1e-8)


@pytest.mark.parametrize("sparse", [False, True])
def test_lasso_matches_sklearn(sparse):
    from sklearn.linear_model import Lasso

    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 25))
    y = X[:, :3] @ [1.0, -2.0, 0.5] + 0.1 * rng.standard_normal(60) + 3.0
    Xin = sp.csr_matrix(X) if sparse else X
    alpha = 0.05
    datafit = Quadratic(Xin, y, fit_intercept=True)
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(26), alpha,
                       penalty_weights=datafit.penalty_weights, lipschitz=datafit.lipschitz(),
                       tol=1e-12)
    sk = Lasso(alpha=alpha, tol=1e-14, max_iter=100000).fit(X, y)
    np.testing.assert_allclose(res.x[:25], sk.coef_, atol=1e-8)
    np.testing.assert_allclose(res.x[-1], sk.intercept_, atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.002, 0.2), st.booleans())
def test_random_problems_reach_kkt(seed, mu, sparse):
    X, y = _problem(seed, n=50, d=20, sparse=sparse, corr=float(seed % 3))
    datafit = Logistic(X, y, fit_intercept=bool(seed % 2))
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(datafit.n_params), mu,
                       penalty_weights=datafit.penalty_weights, lipschitz=datafit.lipschitz(),
                       tol=1e-9)
    assert res.success
    _, G = datafit.value_grad(res.x)
    pen = datafit.penalty_weights > 0
    nz, z = pen & (res.x != 0), pen & (res.x == 0)
    np.testing.assert_allclose(G[nz], -mu * np.sign(res.x[nz]), atol=1e-8)
    assert np.all(np.abs(G[z]) <= mu + 1e-8)
    np.testing.assert_allclose(G[~pen], 0, atol=1e-8)


def test_input_errors():
    X, y = _problem(8)
    datafit = Logistic(X, y)
    with pytest.raises(ValueError, match="mu"):
        minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), -1.0)
    with pytest.raises(ValueError, match="penalty_weights"):
        minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 1.0,
                     penalty_weights=-np.ones(30))


def test_max_iter_and_callback_stop():
    X, y = _problem(9)
    datafit = Logistic(X, y)
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.001, max_iter=1,
                       lipschitz=datafit.lipschitz(), tol=1e-14)
    assert not res.success and res.status == 1 and res.nit == 1
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.001,
                       lipschitz=datafit.lipschitz(), tol=1e-14, callback=_stop)
    assert res.status == 99 and res.nit == 1 and not res.success
    assert res.message == "`callback` raised `StopIteration`."
    seen = []
    minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.001, max_iter=2,
                 lipschitz=datafit.lipschitz(), tol=1e-14,
                 callback=lambda intermediate_result: seen.append(intermediate_result))
    assert [r.nit for r in seen] == [1, 2]
    assert seen[-1].fun == pytest.approx(datafit.value_grad(seen[-1].x)[0]
                                         + 0.001 * np.abs(seen[-1].x).sum())


def test_confirm_is_asked_only_where_tol_is_met_and_holds_the_stop_until_it_agrees():
    """``confirm`` sees the iterates whose measure meets tol, in order, with their F and
    measure; the solve goes on while it refuses, to the first it accepts (the iterates are
    those of the solve without it), ends at max_iter if it never does, and a callback that
    stops at an iterate confirm refuses is a stop by callback, not a success."""
    X, y = _problem(4)
    datafit = Logistic(X, y)
    args = (datafit.value_grad, datafit.hessp, np.zeros(30), 0.01)
    kw = dict(lipschitz=datafit.lipschitz(), tol=1e-2)
    trace = []
    minimize_oba(*args, **{**kw, "tol": 1e-13},
                 callback=lambda intermediate_result: trace.append(intermediate_result))
    asked = []

    def later(state):
        asked.append((state.nit, state.fun, state.optimality))
        return state.nit >= 7
    res = minimize_oba(*args, **kw, confirm=later)
    first = minimize_oba(*args, **kw)
    assert res.success and res.nit == 7 and first.nit == 4
    nits = [a[0] for a in asked]
    assert nits[0] == 4 and nits[-1] == 7 and nits == sorted(set(nits))
    assert all(opt <= 1e-2 for _, _, opt in asked)
    assert asked[-1][1] == res.fun
    np.testing.assert_array_equal(res.x, trace[6].x)      # the same iterates as without it
    never = minimize_oba(*args, **kw, max_iter=9, confirm=lambda state: False)
    assert never.status == 1 and not never.success and never.nit == 9
    np.testing.assert_array_equal(never.x, trace[8].x)
    stopped = minimize_oba(*args, **{**kw, "tol": 1.0}, confirm=lambda state: False,
                           callback=_stop)
    assert stopped.status == 99 and stopped.optimality <= 1.0 and not stopped.success


def test_a_solve_whose_tol_is_below_the_gradients_rounding_stalls():
    """X times 1e12 (the penalty too: the same problem in coefficients 1e-12 as large):
    ∇f's rounding error is about 1e-6, above tol, and the solve stops as stalled (status 2)
    once neither F nor the measure improve, at the minimum, where it ran to max_iter."""
    X, y = _problem(9)
    plain = Logistic(X, y)
    ref = minimize_oba(plain.value_grad, plain.hessp, np.zeros(30), 0.001, tol=1e-10)
    assert ref.status == 0
    scaled = Logistic(X * 1e12, y)
    res = minimize_oba(scaled.value_grad, scaled.hessp, np.zeros(30), 0.001 * 1e12,
                       tol=1e-10, max_iter=500)
    assert res.status == 2 and not res.success and "rounding" in res.message
    assert STALL_ITERATIONS < res.nit < 100 and res.optimality > 1e-10
    assert res.fun == pytest.approx(ref.fun, rel=1e-12)
    np.testing.assert_allclose(res.x * 1e12, ref.x, atol=1e-6)


def _stop(xk):
    raise StopIteration


def test_small_liblinear_comparison():
    liblinearutil = pytest.importorskip("liblinear.liblinearutil")
    X, y = _problem(10, n=300, d=50, sparse=True, corr=1.0)
    n = X.shape[0]
    for C in (0.1, 1.0, 10.0):
        model = liblinearutil.train(y, X, f"-s 6 -B -1 -e 1e-10 -q -c {C}")
        w_ll = np.array([model.w[i] for i in range(50)]) * (1 if model.get_labels()[0] == 1 else -1)
        datafit = Logistic(X, y)
        res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(50), 1 / (C * n),
                           lipschitz=datafit.lipschitz(), tol=1e-10)
        F_ll = ref.l1_logistic_objective(X, y, w_ll, 0.0, C)
        F = ref.l1_logistic_objective(X, y, res.x, 0.0, C)
        assert F <= F_ll * (1 + 1e-9)
        assert abs(F - F_ll) <= 1e-6 * F_ll
        np.testing.assert_array_equal(np.abs(res.x) > 1e-6, np.abs(w_ll) > 1e-6)


def test_tau_growth_variants_reach_the_same_solution():
    X, y = _problem(11, n=200, d=60, corr=1.0)
    datafit = Logistic(X, y)
    sols = [minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(60), 0.003,
                         lipschitz=datafit.lipschitz(), tol=1e-10, tau_growth=tg)
            for tg in (0.0, 0.5, 1.0)]
    for res in sols[1:]:
        np.testing.assert_allclose(res.x, sols[0].x, atol=1e-7)
    assert sols[2].nit <= sols[0].nit  # τ doubles every iteration with tau_growth = 1


def test_tau0_cap_limits_the_first_free_set_and_keeps_the_solution(capsys):
    """``tau0_max`` caps the thesis' 1% first free set (6 of 600 columns here) and the
    minimizer is unchanged."""
    X, y = _problem(12, n=150, d=600, sparse=True, corr=1.0)
    datafit = Logistic(X, y)
    sols = []
    for cap in (None, 2):
        sols.append(minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(600), 0.002,
                                 lipschitz=datafit.lipschitz(), tol=1e-10, tau0_max=cap,
                                 verbose=1))
        first = capsys.readouterr().out.splitlines()[0]
        assert first.endswith(f"tau={6 if cap is None else 2}")
    assert np.count_nonzero(sols[0].x) > 2
    np.testing.assert_allclose(sols[1].x, sols[0].x, atol=1e-7)
    for bad in (0, 2.5, -3):
        with pytest.raises(ValueError, match="tau0_max"):
            minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(600), 0.002, tau0_max=bad)


@pytest.mark.parametrize("d,tau0", [(30, 1), (99, 1), (100, 1), (250, 2)])
def test_first_free_set_is_one_percent_of_the_columns_and_at_least_one(d, tau0):
    """τ⁰ = max(1, ⌊η · #penalized⌋) with η = 0.01 (notes §1.6, §5.1): from x = 0 the
    first subspace Newton step frees exactly τ⁰ coordinates, one below 200 columns."""
    X, y = _problem(13, n=60, d=d)
    datafit = Logistic(X, y)
    sizes = []

    def hessp(x, free):
        sizes.append(free.size)
        return datafit.hessp(x, free)

    minimize_oba(datafit.value_grad, hessp, np.zeros(d), 1e-3, max_iter=1,
                 lipschitz=datafit.lipschitz())
    assert sizes[0] == tau0


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_flat_violations_free_every_violator_at_the_start(C):
    """On the thesis' Synthetic matrix at C ≥ 1 every coordinate violates about equally at 0
    (median ≥ 1/3 of the largest violation): the first free set is all of 𝒰 (``tau0_flat``)
    instead of the thesis' 1% (2 of 200), and the same minimizer takes fewer iterations."""
    X, y = make_thesis_synthetic(200, random_state=0)
    datafit = Logistic(np.asfortranarray(X), y)
    mu = 1.0 / (C * 200)
    violators = np.count_nonzero(np.abs(datafit.value_grad(np.zeros(200))[1]) > mu)
    assert violators > 150
    runs = {}
    for flat in (1 / 3, None):
        sizes = []

        def hessp(x, free):
            sizes.append(free.size)
            return datafit.hessp(x, free)

        runs[flat] = minimize_oba(datafit.value_grad, hessp, np.zeros(200), mu, tol=1e-9,
                                  lipschitz=datafit.lipschitz, tau0_flat=flat)
        assert runs[flat].success and sizes[0] == (violators if flat else 2)
    np.testing.assert_allclose(runs[1 / 3].fun, runs[None].fun, rtol=1e-12)
    np.testing.assert_allclose(runs[1 / 3].x, runs[None].x, atol=1e-5)
    assert runs[1 / 3].nit < runs[None].nit


def test_flat_violation_profile():
    """The median violation over 𝒰 (code 2) against ``contrast`` × the largest; coordinates
    outside 𝒰 do not count."""
    code = np.array([2, 2, 2, 1, 0], dtype=np.int8)
    assert _flat_violations(code, np.array([1.0, -0.5, 0.4, 9.0, 0.0]), 1 / 3)
    assert not _flat_violations(code, np.array([1.0, -0.2, 0.3, 9.0, 0.0]), 1 / 3)
    assert not _flat_violations(np.zeros(3, dtype=np.int8), np.ones(3), 1 / 3)
    X, y = _problem(16, n=40, d=8)
    datafit = Logistic(X, y)
    for bad in (0, 1.5, -1, "x"):
        with pytest.raises(ValueError, match="tau0_flat"):
            minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(8), 0.01, tau0_flat=bad)


def test_corrective_sgn_test_counts_a_newly_freed_coordinate_that_stays_at_zero():
    """Thesis sgn test (notes §5.3): a newly freed coordinate whose Newton component is
    exactly 0 violates (d_i ζ_i ≤ 0, not < 0) and leaves the free set."""
    H = _ExplicitHessian(np.diag([2.0, 1.0, 4.0]), [0])
    g = np.array([1.0, 0.0, -2.0])          # d = -H⁻¹g = (-0.5, 0, 0.5): d₁ is exactly 0
    zeta = np.array([-1.0, 1.0, 1.0])
    free, new = np.arange(3), np.array([False, True, True])
    opts = (0.0, 1e-12, 50, 1e3, True)
    d, _, kept, _, loops, _ = _corrective_cycle(H, None, None, g, zeta, free, new, opts)
    assert loops == 2
    np.testing.assert_array_equal(kept, [0, 2])
    np.testing.assert_allclose(d, [-0.5, 0.5], rtol=1e-14)


@pytest.mark.parametrize("sparse", [False, True])
def test_adaptive_radius_and_warm_start_reach_the_same_solution(sparse):
    """The adaptive Steihaug radius (ours) and a warm start leave the minimizer unchanged;
    a warm start at the solution's support starts with τ ≥ that support (no regrowth)."""
    from sparsekit.datasets import make_thesis_synthetic

    X, y = make_thesis_synthetic(60, random_state=0)  # square, nearly separable
    X = sp.csr_matrix(X) if sparse else np.asfortranarray(X)
    datafit = Logistic(X, y)
    mu = 1.0 / X.shape[0]
    run = dict(lipschitz=datafit.lipschitz(), tol=1e-10)
    fixed = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(60), mu,
                         adaptive_radius=False, **run)
    adaptive = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(60), mu, **run)
    assert fixed.success and adaptive.success
    np.testing.assert_allclose(adaptive.x, fixed.x, atol=1e-7)
    np.testing.assert_allclose(adaptive.fun, fixed.fun, rtol=1e-12)
    # warm start from a perturbed solution: converges to the same point (its iteration
    # count against the cold start's moves with the BLAS kernel's rounding)
    warm = minimize_oba(datafit.value_grad, datafit.hessp, fixed.x * 1.1, mu, **run)
    np.testing.assert_allclose(warm.x, fixed.x, atol=1e-7)
    # at the solution: no iteration, and the first free set holds the whole support
    free_sizes = []

    def spy(x, free):
        free_sizes.append(free.size)
        return datafit.hessp(x, free)
    at = minimize_oba(datafit.value_grad, spy, fixed.x, mu, **run)
    assert at.nit == 0 and at.success
    nudged = minimize_oba(datafit.value_grad, spy, fixed.x * (1 + 1e-3), mu, **run)
    assert nudged.success and free_sizes[0] >= np.count_nonzero(fixed.x)


@pytest.mark.parametrize("sparse", [False, True])
def test_reg_decay_restores_fast_local_convergence(sparse):
    """With a Hessian regularization far above the curvature (1e-2 here, 1e-8 on weakly
    regularized text data), fixed regularization crawls like a gradient method; reg_decay
    (min(hess_reg, optimality)) converges in a few dozen iterations to the minimizer found
    with the thesis' 1e-8."""
    X, y = _problem(0, n=200, d=300, sparse=sparse)
    datafit = Logistic(X, y)
    run = dict(lipschitz=datafit.lipschitz(), tol=1e-10, max_iter=300)
    thesis = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(300), 1e-4, **run)
    fixed = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(300), 1e-4,
                         hess_reg=1e-2, **run)
    decay = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(300), 1e-4,
                         hess_reg=1e-2, reg_decay=True, **run)
    assert thesis.success and decay.success and not fixed.success
    assert decay.nit < 50
    np.testing.assert_allclose(decay.fun, thesis.fun, rtol=1e-12)


def test_cg_returns_its_residual_at_every_exit():
    """r = b + (H + reg I) p at a converged, a truncated-at-the-boundary, a negative-curvature
    and a warm-started exit (the model search reads (H + reg I) p = r − b from it)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((12, 12))
    spd, indefinite = A @ A.T + 0.1 * np.eye(12), A + A.T
    b = rng.standard_normal(12)
    cases = [(spd, 1e3, None), (spd, 0.05, None), (indefinite, 1e3, None),
             (spd, 1e3, -0.01 * np.linalg.solve(spd, b))]
    for M, radius, p0 in cases:
        p, r, it = _cg(lambda v, M=M: M @ v, b, 1e-3, 1e-6, 100, radius, False, p0=p0)
        assert it >= 1
        np.testing.assert_allclose(r, b + M @ p + 1e-3 * p, rtol=1e-10, atol=1e-12)
        assert np.linalg.norm(p) <= radius * (1 + 1e-12)


class _Operator:
    """A formed matrix seen only through products (and its diagonal): _cg's Python loop."""

    def __init__(self, M):
        self.M = M

    def __call__(self, v):
        return self.M @ v

    def diagonal(self):
        return self.M.diagonal().copy()


@pytest.mark.parametrize("formed", [False, True])
def test_the_diagonal_radius_norm_is_blind_to_rescaled_coordinates(formed):
    """With radius_norm="diagonal" the Jacobi-preconditioned CG's truncated step is the
    same step for coordinates rescaled by S (A -> S A S, b -> S b, p -> S⁻¹ p) and ends on
    the boundary of the norm (Σ Aᵢᵢ pᵢ²)^½; the Euclidean radius gives another step. On
    the compiled loop (a formed matrix) and the Python one alike."""
    rng = np.random.default_rng(7)
    k = 30
    Q = rng.standard_normal((k, k))
    A = Q @ Q.T + np.eye(k)
    b = rng.standard_normal(k)
    s = np.logspace(-2, 2, k)
    rng.shuffle(s)
    As, bs = s[:, None] * A * s, s * b

    def step(M, v, radius_norm):
        H = _ExplicitHessian(M, [0]) if formed else _Operator(M)
        return _cg(H, v, 0.0, 1e-14, 1000, 0.5, True, radius_norm)[0]

    p, ps = step(A, b, "diagonal"), step(As, bs, "diagonal")
    assert np.sqrt(p @ (np.diag(A) * p)) == pytest.approx(0.5, rel=1e-12)
    np.testing.assert_allclose(s * ps, p, rtol=1e-8, atol=1e-12 * np.abs(p).max())
    q, qs = step(A, b, "euclidean"), step(As, bs, "euclidean")
    assert np.linalg.norm(q) == pytest.approx(0.5, rel=1e-12)
    assert not np.allclose(s * qs, q, rtol=1e-2)


@pytest.mark.parametrize("radius_norm", ["euclidean", "diagonal"])
@pytest.mark.parametrize("precondition", [False, True])
def test_compiled_cg_on_a_formed_matrix_matches_the_python_loop(precondition, radius_norm):
    """On an explicit Hessian _cg runs the compiled loop (cg_dense): the same iterates,
    residuals, exits (converged, radius, negative curvature, iteration cap, warm start) and
    counts as the Python loop on the same matrix, with the radius in either norm, and the
    products are recorded."""
    rng = np.random.default_rng(1)
    for k in (1, 2, 7, 40):
        A = rng.standard_normal((k, k)) * np.exp(rng.uniform(-1, 1, k))  # unevenly scaled
        spd, indefinite = A @ A.T + 1e-3 * np.eye(k), A + A.T
        b = rng.standard_normal(k)
        cases = [(spd, 1e3, 100, None), (spd, 0.05, 100, None), (indefinite, 1e3, 100, None),
                 (spd, 1e3, 2, None), (spd, 1e3, 100, -0.01 * np.linalg.solve(spd, b))]
        for M, radius, maxiter, p0 in cases:
            calls = [0]
            H = _ExplicitHessian(M.copy(), calls)
            args = (b, 1e-8, 1e-6, maxiter, radius, precondition, radius_norm)
            p, r, it = _cg(H, *args, p0=p0)
            p_ref, r_ref, it_ref = _cg(_Operator(M), *args, p0=p0)
            # a converged run on the ill-conditioned k = 40 matrix takes 65-70 steps: its
            # count moves with the rounding of the BLAS kernel (Sandybridge: 66 against 67)
            long = k == 40 and maxiter == 100 and radius > 1 and M is spd
            assert abs(it - it_ref) <= (2 if long else 0) and calls[0] == it
            weights = radius_metric(_Operator(M), 1e-8, radius_norm)
            weights = np.ones(k) if weights is None else weights
            size = np.sqrt(p @ (weights * p))
            assert size <= radius * (1 + 1e-12)
            np.testing.assert_allclose(r, b + M @ p + 1e-8 * p, rtol=1e-9,
                                       atol=1e-11 * np.abs(b).max())
            if long and radius_norm == "diagonal":
                # there the radius ends the long run after ~55 steps, by when the two
                # loops' rounding has moved the iterate (their models differ by ~1%): both
                # end on the boundary, at a descent
                assert size == pytest.approx(radius, rel=1e-12)
                assert b @ p + 0.5 * p @ (r - b) < 0
                continue
            # the two loops round differently: their iterates agree to the CG's accuracy
            np.testing.assert_allclose(p, p_ref, rtol=1e-6, atol=1e-9 * np.abs(p_ref).max())


@pytest.mark.parametrize("model", ["logistic", "multinomial"])
@pytest.mark.parametrize("operator_has_form", [True, False])
def test_model_search_on_crossing_steps_matches_the_direct_model(operator_has_form, model):
    """Steps that cross zero on several coordinates: the model value from the CG's H d and the
    crossing columns equals the direct (2.2), also for a bare operator (one product); the
    multinomial operator's quadratic form is a product on the crossing entries alone."""
    from sparsekit.losses._multinomial_datafit import Multinomial

    X, y = _problem(14, n=90, d=25, corr=1.0, sparse=model == "multinomial")
    if model == "logistic":
        datafit = Logistic(X, y)
    else:
        datafit = Multinomial(X, np.arange(90) % 3, 3)
        datafit.max_explicit = 0                               # the matrix-free operator
    n = datafit.n_params
    mu = 0.01
    x = np.random.default_rng(3).standard_normal(n)
    f, G, muw, g, zeta, code = _state(datafit, x, mu)
    free = np.arange(n)
    H = datafit.hessp(x, free)
    op = H if operator_has_form else (lambda v: H(v))
    d = -3.0 * x + 0.1 * np.random.default_rng(4).standard_normal(n)   # most cross zero
    Hd = H(d) + 1e-8 * d
    x_hat, alpha, q, q0, products = _model_search(x, G, zeta, muw, free, d, Hd, op, 1e-8,
                                                  K.weighted_l1(muw, x))
    assert np.count_nonzero((x_hat == 0) & (x + alpha * d != 0)) >= 5
    assert products == (0 if operator_has_form else int(np.log2(1 / alpha)) + 1)
    delta = x_hat - x
    direct = G @ delta + 0.5 * (delta @ H(delta) + 1e-8 * delta @ delta) + muw @ np.abs(x_hat)
    np.testing.assert_allclose(q, direct, rtol=1e-10)
    assert q <= q0


_TIGHT_CG = (1e-8, 1e-13, 500, np.inf, False)   # reg, rtol, maxiter, radius, precondition


@pytest.mark.parametrize("operator_has_restrict", [True, False])
def test_pinned_step_pins_what_d_carries_through_zero_and_solves_the_rest(
        operator_has_restrict):
    """The pinned direction on a model whose orthant-face minimizer is ``star``: the
    coordinates d crosses move exactly to zero, the newly freed ones that would leave their
    orthant stay there, and the rest minimizes the model (2.2) given those: the reduced
    Newton system of a dense solve. On a formed Hessian the direction is the model's
    minimizer over the closed orthant (L-BFGS-B on the same quadratic with its bounds);
    without ``restrict`` the operator comes from ``hessp``."""
    rng = np.random.default_rng(5)
    n = 25
    M = rng.standard_normal((n, n))
    A = np.eye(n) * n + 0.5 * (M + M.T)                # coupled, positive definite
    star = rng.choice([-1.0, 1.0], n) * rng.uniform(1.0, 2.0, n)
    x = star.copy()
    x[:8] = -0.1 * np.sign(star[:8])                   # the wrong side of zero: d crosses
    x[8:14] = 0.0                                      # newly freed
    new = x == 0.0
    zeta = np.sign(np.where(new, star, x))
    zeta[12:14] *= -1.0                                # two new ones that must stay at zero
    g = A @ (x - star)
    free = np.arange(n)

    def hessp(point, cols):
        return _ExplicitHessian(A[np.ix_(cols, cols)], [0])

    H = hessp(x, free) if operator_has_restrict else (lambda v: A @ v)
    d = star - x
    delta, Hdelta, cg_its, products = _pinned_step(H, hessp, x, g, zeta, free, d, new,
                                                   _TIGHT_CG, _TIGHT_CG)
    pinned = (x != 0) & (delta == -x)
    held = new & (delta == 0.0)
    rest = ~(pinned | held)
    moved = rest & (x != 0)
    assert np.all(pinned[:8]) and held[12:14].all() and moved.sum() >= 8
    assert np.all(x[moved] * (x[moved] + delta[moved]) > 0.0)
    assert np.all(delta[rest & new] * zeta[rest & new] > 0.0)
    dense = A + _TIGHT_CG[0] * np.eye(n)
    expected = np.where(pinned, -x, 0.0)
    expected[rest] = np.linalg.solve(dense[np.ix_(rest, rest)],
                                     -(g[rest] + dense[np.ix_(rest, ~rest)] @ expected[~rest]))
    np.testing.assert_allclose(delta, expected, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(Hdelta, dense @ delta, rtol=1e-12, atol=1e-12)
    assert products >= cg_its + 2                  # the pinned part's product, and H δ
    if operator_has_restrict:   # formed: δ minimizes the model over the closed orthant
        lower = np.where(zeta > 0, -x, -np.inf)
        upper = np.where(zeta < 0, -x, np.inf)
        qp = minimize(lambda v: (g @ v + 0.5 * v @ dense @ v, g + dense @ v), np.zeros(n),
                      jac=True, method="L-BFGS-B", bounds=list(zip(lower, upper)),
                      options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000})
        np.testing.assert_allclose(delta, qp.x, atol=1e-6)
    assert _pinned_step(H, hessp, x, g, zeta, free, np.where(x != 0, x, zeta), new,
                        _TIGHT_CG, _TIGHT_CG) is None   # away from zero: nothing crosses


@pytest.mark.parametrize("seed", range(12))
def test_pinned_step_on_a_formed_hessian_minimizes_the_model_over_the_closed_orthant(seed):
    """Strongly coupled random models from points with some coordinates at zero: the
    active-set loop (pin what crosses, release what the model pushes back into its orthant)
    ends at the minimizer of the model over the closed orthant, which L-BFGS-B finds on the
    same quadratic with its bounds (pinning alone misses it on 14 of 20 such seeds)."""
    rng = np.random.default_rng(seed)
    n = 12
    M = rng.standard_normal((n, n))
    A = M @ M.T / n + 0.05 * np.eye(n)
    star = 2.0 * rng.standard_normal(n)              # the face's unconstrained minimizer
    x = 0.5 * rng.standard_normal(n)
    x[rng.random(n) < 0.2] = 0.0
    new = x == 0.0
    zeta = np.where(new, np.sign(star), np.sign(x))
    g = A @ (x - star)
    free = np.arange(n)

    def hessp(point, cols):
        return _ExplicitHessian(A[np.ix_(cols, cols)], [0])

    out = _pinned_step(hessp(x, free), hessp, x, g, zeta, free, star - x, new, _TIGHT_CG,
                       _TIGHT_CG)
    if out is None:
        pytest.skip("the step crosses nothing")
    dense = A + _TIGHT_CG[0] * np.eye(n)
    bounds = list(zip(np.where(zeta > 0, -x, -np.inf), np.where(zeta < 0, -x, np.inf)))
    qp = minimize(lambda v: (g @ v + 0.5 * v @ dense @ v, g + dense @ v), np.zeros(n),
                  jac=True, method="L-BFGS-B", bounds=bounds,
                  options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10_000})
    np.testing.assert_allclose(out[0], qp.x, atol=1e-6)


def test_pinned_direction_keeps_the_step_the_projection_would_cut():
    """Two coupled coordinates whose orthant-face minimizer is (−5, 6) from x = (0.1, 3):
    the projected Newton step lands at (0, 6) and the model search halves α to 1/32 for a
    model decrease of ~0.02; pinned at x₁ = 0, the model's minimizer over x₂ is
    6 − 0.99·5 = 1.05, reached at α = 1 for a decrease of ~2.1."""
    A = np.array([[1.0, 0.99], [0.99, 1.0]])
    x, star = np.array([0.1, 3.0]), np.array([-5.0, 6.0])
    zeta, muw, free = np.sign(x), np.full(2, 1e-3), np.arange(2)
    g = A @ (x - star)                  # the subgradient: the face's model is minimal at star
    G = g - muw * zeta
    H = _ExplicitHessian(A, [0])
    d = star - x
    q0 = K.weighted_l1(muw, x)
    plain = _model_search(x, G, zeta, muw, free, d, A @ d, H, 0.0, q0)
    opts = (0.0, 1e-12, 10, np.inf, False)
    delta, Hdelta, _, _ = _pinned_step(H, None, x, g, zeta, free, d, np.zeros(2, bool), opts,
                                       opts)
    pinned = _model_search(x, G, zeta, muw, free, delta, Hdelta, H, 0.0, q0)
    assert plain[1] == 1 / 32
    np.testing.assert_allclose(pinned[0], [0.0, 1.05], atol=1e-12)
    assert pinned[1] == 1.0
    assert pinned[2] - pinned[3] < 50 * (plain[2] - plain[3]) < 0.0


@needs_mulan
def test_pinned_direction_cuts_the_iterations_on_a_many_class_problem(monkeypatch):
    """Bibtex (first label, 146 classes) at C = 0.05: the first iterations' Newton steps
    cross many coordinates; with the pinned direction OBA reaches the same objective in
    at most half the iterations (39 against 11 when measured)."""
    from sparsekit.datasets import load_mulan
    from sparsekit.linear_model import _l1_solve
    from sparsekit.losses._multinomial_datafit import Multinomial
    from sparsekit.utils._labels import first_label

    X, Y = load_mulan("bibtex", subset="train")
    Y = sp.csr_matrix(Y)
    keep = np.diff(Y.indptr) > 0
    X, y = sp.csr_matrix(X)[keep], first_label(Y[keep])
    codes = np.searchsorted(np.unique(y), y)
    results = {}
    for pin in (False, True):
        monkeypatch.setattr(_l1_solve, "minimize_oba",
                            functools.partial(minimize_oba, pin_crossings=pin))
        datafit = Multinomial(X, codes, codes.max() + 1, fit_intercept=True)
        results[pin] = _l1_solve.oba_solve(datafit, 0.05, 1e-8, 500, None, 0, 1.0,
                                           _l1_solve.MULTINOMIAL_CG_MAXITER)
    assert results[False].success and results[True].success
    np.testing.assert_allclose(results[True].fun, results[False].fun, rtol=1e-9)
    assert 2 * results[True].nit <= results[False].nit


def test_shift_invariant_blocks_return_to_the_solution_at_once():
    """A softmax datafit is constant along each feature's K class weights (and the K
    intercepts) shifted together: with ``shift_invariant=K`` a start moved along those
    directions is shifted back by the blocks' medians, at the solution already (without it,
    9 Newton iterations), and every block of the solution has 0 as its median."""
    from sparsekit.losses._multinomial_datafit import Multinomial

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 8))
    y = (X[:, :3] @ rng.standard_normal((3, 3)) + rng.standard_normal((300, 3))).argmax(1)
    datafit = Multinomial(X, y, 3, fit_intercept=True)
    assert datafit.shift_invariant == 3

    def solve(x0, shift):
        return minimize_oba(datafit.value_grad, datafit.hessp, x0, 0.02, tol=1e-10,
                            penalty_weights=datafit.penalty_weights,
                            lipschitz=datafit.lipschitz, shift_invariant=shift)

    cold = solve(np.zeros(27), 3)
    W = cold.x[:24].reshape(8, 3)
    assert cold.success and ((W > 0).sum(axis=1) <= 1).all() and ((W < 0).sum(axis=1) <= 1).all()
    start = cold.x + np.repeat(rng.standard_normal(9), 3)
    moved, blind = solve(start, 3), solve(start, None)
    assert moved.success and moved.nit == 0 and blind.success and blind.nit > 3
    np.testing.assert_allclose(moved.x[:24], cold.x[:24], atol=1e-15)
    np.testing.assert_allclose(moved.fun, cold.fun, rtol=1e-13)
    for shift in (2, 0, 1.5):
        with pytest.raises(ValueError, match="shift_invariant must be None or a positive"):
            solve(np.zeros(27), shift)


def test_radius_follows_the_reduction_ratio():
    assert _updated_radius(10.0, 0.1, 8.0, 1e3) == 2.0      # poor agreement: a quarter step
    assert _updated_radius(10.0, -3.0, 10.0, 1e3) == 2.5
    assert _updated_radius(10.0, 0.9, 10.0, 1e3) == 20.0    # good, on the boundary: doubles
    assert _updated_radius(800.0, 0.9, 800.0, 1e3) == 1e3   # up to the cap
    assert _updated_radius(10.0, 0.9, 3.0, 1e3) == 10.0     # good, inside: unchanged
    assert _updated_radius(10.0, 0.5, 10.0, 1e3) == 10.0
    assert _updated_radius(10.0, 0.3, 8.0, 1e3) == 10.0      # fair agreement: unchanged


def test_lipschitz_bound_is_asked_for_only_when_an_ista_step_is_made():
    X, y = _problem(15)
    datafit = Logistic(X, y)

    def no_bound():
        raise AssertionError("an optimal start needs no Lipschitz bound")

    mu_max = np.abs(datafit.value_grad(np.zeros(30))[1]).max()
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 2 * mu_max,
                       lipschitz=no_bound, tol=1e-10)
    assert res.success and res.nit == 0 and res.lipschitz is None and not res.x.any()
    calls = []
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.1 * mu_max,
                       lipschitz=lambda: calls.append(1) or datafit.lipschitz(), tol=1e-10)
    assert res.success and res.nit > 1 and len(calls) == 1


def test_cg_warm_start_product_that_forms_the_gram():
    """A corrective re-solve may start on a restricted operator whose shared product count has
    already reached the switch: its warm-start product forms the Gram, and the CG must then
    run on that matrix (it used to ask the matrix-free operator for a matrix it did not have)."""
    X, y = _problem(15, n=80, d=12, sparse=False)
    datafit = Logistic(X, y, fit_intercept=False)
    x = np.zeros(12)
    datafit.value_grad(x)
    free = np.arange(12)
    H = _SubspaceHessian(datafit.X, free, datafit._D, False, np.empty(80), [5],
                         gram=lambda cols, intercept: datafit._gram(cols, intercept,
                                                                   walk_all=True),
                         explicit_after=5)
    b = np.random.default_rng(1).standard_normal(12)
    p, r, it = _cg(H, b, 1e-8, 1e-10, 100, 1e3, True, p0=-0.01 * b)
    assert H.is_explicit and it >= 1
    dense = datafit._gram(free, False, walk_all=True) + 1e-8 * np.eye(12)
    np.testing.assert_allclose(dense @ p, -b, atol=1e-9 * np.abs(b).max())
    np.testing.assert_allclose(r, b + dense @ p, atol=1e-12)


@pytest.mark.parametrize("layout", ["csr", "dense"])
@pytest.mark.parametrize("intercept", [False, True])
def test_float32_gram_route_reaches_the_float64_solution(intercept, layout, monkeypatch):
    """A free slice of k >= 64 columns (half of the entries nonzero) takes the float32 BLAS
    Gram, updated between late iterates (PanelGram), for sparse and dense X; the solution is
    the one the solve with exact matrix-free float64 Hessian products finds."""
    X, y = _problem(15, n=400, d=120, sparse=True)
    name = "gram_csr_syrk" if layout == "csr" else "gram_dense_syrk"
    calls = []
    syrk = getattr(GK, name)
    monkeypatch.setattr(GK, name, lambda *a, **kw: calls.append(kw.get("accumulate", False))
                        or syrk(*a, **kw))
    results = []
    for A, max_explicit in ((X.tocsc() if layout == "csr" else X.toarray(), 3000),
                            (X.toarray(), 0)):
        datafit = Logistic(A, y, fit_intercept=intercept)
        datafit.max_explicit = max_explicit
        results.append(minimize_oba(datafit.value_grad, datafit.hessp,
                                    np.zeros(datafit.n_params), 0.002,
                                    penalty_weights=datafit.penalty_weights,
                                    lipschitz=datafit.lipschitz, tol=1e-10))
    assert False in calls, "the float32 route was not taken"
    assert True in calls, "the Gram was never updated"
    assert all(r.success for r in results)
    assert np.count_nonzero(results[0].x) >= 64
    np.testing.assert_allclose(results[0].fun, results[1].fun, rtol=1e-12)
    np.testing.assert_allclose(results[0].x, results[1].x, atol=1e-7)


@pytest.mark.parametrize("intercept", [False, True])
def test_tall_dense_x_takes_the_float32_gram_with_few_free_columns(intercept, monkeypatch):
    """A dense X of 2**16 rows: its formed Hessians over 16 to 20 columns (2**20 entries of
    the slice or more) go through the float32 panels, and the solution is the one exact
    matrix-free float64 products find; the same X cut to 2**12 rows takes NumPy's float64
    products (a slice of fewer entries than 2**20)."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1 << 16, 20))
    y = np.where(X[:, :6] @ rng.standard_normal(6) + rng.logistic(size=1 << 16) > 0, 1.0, -1.0)
    calls = []
    syrk = GK.gram_dense_syrk
    monkeypatch.setattr(GK, "gram_dense_syrk", lambda *a, **kw: calls.append(a[3].size)
                        or syrk(*a, **kw))

    def solve(A, b, max_explicit):
        datafit = Logistic(A, b, fit_intercept=intercept)
        datafit.max_explicit = max_explicit
        return minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(datafit.n_params),
                            1e-4, penalty_weights=datafit.penalty_weights, tol=1e-10)
    panels, exact = solve(X, y, 3000), solve(X, y, 0)
    assert calls and min(calls) * X.shape[0] >= 1 << 20 and max(calls) < 64
    assert panels.success and exact.success
    np.testing.assert_allclose(panels.fun, exact.fun, rtol=1e-12)
    np.testing.assert_allclose(panels.x, exact.x, atol=1e-7)
    calls.clear()
    assert solve(X[:1 << 12], y[:1 << 12], 3000).success and not calls


def test_formed_hessian_gets_its_own_cg_tolerance():
    """``explicit_opts`` apply to a formed operator only: its CG residual meets their tolerance,
    while the matrix-free operator stops at the looser ``cg_opts`` one."""
    X, y = _problem(16, n=120, d=25, sparse=True)
    datafit = Logistic(X, y)
    x = np.zeros(25)
    f, G, muw, g, zeta, code = _state(datafit, x, 0.01)
    free, new = _free_set(code, g, 25)
    loose, tight = (1e-8, 0.5, 1000, 1e3, True), (1e-8, 1e-9, 1000, 1e3, True)
    for max_explicit, rtol in ((1000, 1e-9), (0, 0.5)):
        datafit.max_explicit = max_explicit
        H = datafit.hessp(x, free)
        assert getattr(H, "is_explicit", False) == (max_explicit > 0)
        d, Hd, free2, H2, _, _ = _corrective_cycle(H, datafit.hessp, x, g, zeta, free, new,
                                                   loose, tight)
        residual = Hd + g[free2]
        assert np.abs(residual).max() <= rtol * np.abs(g[free2]).max() * (1 + 1e-9)
        if max_explicit == 0:  # the loose solve stopped well before the tight tolerance
            assert np.abs(residual).max() > 1e-6 * np.abs(g[free2]).max()


def test_invalid_arguments_and_non_finite_values_are_errors_not_success():
    X, y = _problem(8)
    datafit = Logistic(X, y)
    x0 = np.zeros(30)

    def call(**kw):
        args = dict(f_grad=datafit.value_grad, hessp=datafit.hessp, x0=x0, mu=0.01)
        args.update(kw)
        return minimize_oba(args.pop("f_grad"), args.pop("hessp"), args.pop("x0"),
                            args.pop("mu"), **args)

    bad = np.zeros(30)
    bad[3] = np.nan
    for kwargs, match in [({"x0": bad}, "x0"), ({"max_iter": -1}, "max_iter"),
                          ({"tol": -1.0}, "tol"), ({"mu": np.full(30, 0.01)}, "mu"),
                          ({"lipschitz": 0.0}, "lipschitz"), ({"lipschitz": np.inf}, "lipschitz"),
                          ({"lipschitz": lambda: -1.0}, "lipschitz")]:
        with pytest.raises(ValueError, match=match):
            call(**kwargs)
    with pytest.raises(ValueError, match="not finite"):
        call(f_grad=lambda x: (np.nan, np.zeros(30)))
    with pytest.raises(ValueError, match="shape"):
        call(f_grad=lambda x: (1.0, np.zeros(29)))

    calls = [0]

    def breaks_after_the_start(x):  # NaN everywhere but at x0: never reported as success
        calls[0] += 1
        f, G = datafit.value_grad(x)
        return (f, G) if calls[0] == 1 else (np.nan, G * np.nan)
    for lipschitz in (None, datafit.lipschitz()):
        calls[0] = 0
        with pytest.raises(FloatingPointError, match="not finite"):
            call(f_grad=breaks_after_the_start, lipschitz=lipschitz)


def test_gradients_of_any_float_layout_are_accepted():
    X, y = _problem(9)
    datafit = Logistic(X, y)
    ref_res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.01, tol=1e-10)
    for wrap in (lambda G: G.tolist(), lambda G: G[:, None], lambda G: np.repeat(G, 2)[::2]):
        res = minimize_oba(lambda x: (np.float64(datafit.value_grad(x)[0]),
                                      wrap(datafit.value_grad(x)[1])),
                           datafit.hessp, np.zeros(30), 0.01, tol=1e-10)
        assert res.success
        np.testing.assert_allclose(res.x, ref_res.x, atol=1e-9)


def test_an_optimal_start_stops_at_once_even_with_tol_zero():
    X, y = _problem(16)
    datafit = Logistic(X, y)
    mu = 2 * np.abs(datafit.value_grad(np.zeros(30))[1]).max()  # w = 0 is optimal
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), mu, tol=0.0,
                       max_iter=5, lipschitz=datafit.lipschitz)
    assert res.success and res.nit == 0 and res.optimality == 0.0


def test_estimated_lipschitz_constant_bounds_the_true_one():
    H = np.diag([1.0, 2.0, 3.0])
    assert _estimate_lipschitz(lambda x, free: (lambda v: H @ v), np.zeros(3), 3) == \
        pytest.approx(6.0, rel=1e-3)  # twice the power-iteration estimate of ||H||
    X, y = _problem(17)
    datafit = Quadratic(X, y)
    res = minimize_oba(datafit.value_grad, datafit.hessp, np.zeros(30), 0.01, tol=1e-10)
    assert res.lipschitz >= np.linalg.norm(X.T @ X / X.shape[0], 2)


@pytest.mark.parametrize("option,value", [("eta", -1.0), ("eta", 2.0), ("cg_rtol", -1.0),
                                          ("cg_rtol_explicit", 1.5), ("cg_maxiter", 0),
                                          ("cg_maxiter_explicit", 2.5), ("confirm", 1.0),
                                          ("radius_norm", "l2")])
def test_minimize_oba_rejects_options_it_cannot_use(option, value):
    X = np.random.default_rng(1).standard_normal((20, 4))
    d = Quadratic(X, X[:, 0])
    with pytest.raises(ValueError, match=option):
        minimize_oba(d.value_grad, d.hessp, np.zeros(4), 0.1, **{option: value})


def test_zero_hessian_gets_the_floor_lipschitz_estimate():
    """A linear f (∇²f = 0): the power iteration meets Hv = 0 and stops with the floor 1e-12
    (not NaN from normalizing 0), and OBA with no L given still solves
    min cᵀx + 2‖x‖₁ (x* = 0 as 2 > ‖c‖_∞)."""
    c = np.array([1.0, -1.0, 0.5])
    zero = lambda x, free: (lambda v: np.zeros(len(free)))  # noqa: E731
    assert _estimate_lipschitz(zero, np.zeros(3), 3) == 1e-12
    res = minimize_oba(lambda x: (float(c @ x), c.copy()), zero, np.array([1.0, -1.0, 2.0]),
                       2.0, tol=1e-12)
    assert res.success and res.lipschitz == 1e-12
    np.testing.assert_array_equal(res.x, np.zeros(3))


def test_a_hessian_of_nan_products_is_told_as_such():
    """A Hessian operator whose products are NaN made the power iteration's estimate NaN,
    and the error came from a kernel deep inside ("ista_point: L must be positive, got
    nan"); it now names the operator."""
    A = np.diag([2.0, 1.0, 3.0])
    nan = lambda x, free: (lambda v: np.full(len(free), np.nan))  # noqa: E731
    with pytest.raises(ValueError, match="Hessian operator's products are not finite"):
        minimize_oba(lambda x: (float(0.5 * x @ A @ x - x.sum()), A @ x - 1.0), nan,
                     np.zeros(3), 0.1)


# --- OBA details the other files leave open: the corrective re-solve's warm start, the ISTA

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
    K.ista_point(x0, G, np.full(30, mu), L, expected)
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
