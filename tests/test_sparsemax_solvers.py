"""SparsemaxClassifier's solvers: the choice of ``solver="auto"``, each solver's memory, the
solve (every solver to the same objective), and SDCA's advice."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import Bounds

import sparsekit.linear_model._sparsemax_solvers as solvers
from _sparsemax_problems import make_data, make_datafit
from sparsekit.linear_model._sparsemax_problem import scale_sums
from sparsekit.linear_model._sparsemax_solvers import (AUTO_SDCA_MAX_CONDITION, auto_solver,
                                                       fits_at_once,
                                                       sdca_condition, sdca_hint, solve,
                                                       solver_within_memory, units_hint)


def _refused():
    raise AssertionError("the rows were asked for where SDCA cannot apply")


def test_auto_takes_sdca_for_sparse_rows_of_a_well_conditioned_dual():
    X = sp.random(200, 50, density=0.1, format="csr", random_state=0)
    mean_sq = X.multiply(X).sum() / 200
    edge = mean_sq / (AUTO_SDCA_MAX_CONDITION * 200)     # alpha at the bound
    assert sdca_condition(mean_sq, edge, 200) == pytest.approx(AUTO_SDCA_MAX_CONDITION)
    assert auto_solver(lambda: X, 1.01 * edge) == "sdca"
    assert auto_solver(lambda: X, 0.99 * edge) == "lbfgs"
    assert auto_solver(lambda: X, 1.01 * edge, intercept_scale=1.0) == "lbfgs"
    assert auto_solver(lambda: X.toarray(), 1.0) == "lbfgs"      # dense rows
    for kwargs in ({"bounded": True}, {"device": "cuda"}):
        assert auto_solver(_refused, 1.0, **kwargs) == "lbfgs"
    assert auto_solver(_refused, 0.0) == "lbfgs"


def test_a_solver_whose_arrays_do_not_fit_is_replaced_or_refused(monkeypatch):
    size = 1000                                              # float64 numbers
    monkeypatch.setattr(solvers, "physical_memory", lambda: 20 * 8.0 * size)
    assert solver_within_memory("sdca", size, False, ()) == "sdca"
    assert solver_within_memory("lbfgs", size, True, ("newton-cg", "sdca")) == "newton-cg"
    with pytest.raises(ValueError, match=r"solver='lbfgs' would hold about 0.0 GiB during the "
                                         r"fit, about 41 arrays .* use solver='newton-cg' "
                                         r"\(about 14 such arrays\) or solver='sdca'"):
        solver_within_memory("lbfgs", size, False, ("newton-cg", "sdca"))
    with fits_at_once(2):                                    # each fit gets half
        assert solver_within_memory("newton-cg", 0.7 * size, False, ()) == "newton-cg"
        with pytest.raises(ValueError, match=r"in the 2 fits that run at a time .* use "
                                             r"fewer n_jobs or solver='sdca'"):
            solver_within_memory("newton-cg", 0.8 * size, False, ("sdca",))
    monkeypatch.setattr(solvers, "physical_memory", lambda: None)       # unknown: no check
    assert solver_within_memory("nqn", 1e15, False, ()) == "nqn"


@pytest.mark.parametrize("polytope", ["simplex", "box"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_every_solver_reaches_the_same_objective(polytope, fit_intercept):
    X, y, sw = make_data(n=60, d=5, k=3, seed=1)
    X = sp.csr_matrix(X - X.mean(axis=0))
    values = {}
    for solver in ("lbfgs", "nqn", "newton-cg", "sdca"):
        datafit = make_datafit(X, y, sw, polytope=polytope, alpha=0.1,
                               fit_intercept=fit_intercept, penalize=solver == "sdca")
        if solver == "sdca" and fit_intercept:
            continue                      # SDCA's intercept is penalized: another objective
        res = solve(solver, datafit, np.zeros(datafit.size), None, 1e-10, 5000, 0)
        assert res.success, (solver, res.message)
        values[solver] = datafit.value_grad(res.x)[0]
    for solver, value in values.items():
        assert value == pytest.approx(values["lbfgs"], rel=1e-7), solver


def test_newton_cg_and_sdca_refuse_bounds():
    X, y, sw = make_data()
    datafit = make_datafit(X, y, sw)
    bounds = Bounds(np.zeros(datafit.size), np.full(datafit.size, np.inf))
    for solver in ("newton-cg", "sdca"):
        with pytest.raises(ValueError, match=f"solver='{solver}' does not support positive or "
                                             "bounds; use solver='lbfgs' or 'nqn'"):
            solve(solver, datafit, np.zeros(datafit.size), bounds, 1e-6, 10, 0)
    res = solve("nqn", datafit, np.zeros(datafit.size), bounds, 1e-8, 500, 0)
    assert res.success and np.all(res.x >= 0)


def test_sdca_advice_names_the_columns_units_then_the_duals_condition():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 4))
    sw = np.ones(100)
    sums = scale_sums(X, sw)
    assert units_hint(sums, str) is None
    assert sdca_hint(sums, 100, 0.0, 1.0, str) is None                  # condition ~0.04
    said = sdca_hint(sums, 100, 1.0, 1e-4, str)
    assert said.startswith("the rows' mean squared norm is ")
    assert said.endswith("use solver='lbfgs' or 'auto', or a larger alpha")
    X[:, 3] *= 1e4
    sums = scale_sums(X, sw)
    said = units_hint(sums, lambda j: f"'c{j}'")
    assert said.startswith("the nonzero entries of column 'c3' have a root mean square ")
    assert sdca_hint(sums, 100, 0.0, 1.0, lambda j: f"'c{j}'") == said
