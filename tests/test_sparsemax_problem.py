"""A SparsemaxClassifier fit's data as its solvers take it: X's weighted sums and the scales
they set, the rows SDCA walks, the model of a solver's point and the coefficients' bounds."""
import numpy as np
import pytest
import scipy.sparse as sp

from _sparsemax_problems import make_data, make_datafit
from sparsekit.linear_model._sparsemax_problem import (ALPHA_SCALE, TWO_CLASS_OFFSET, Problem,
                                                       coefficient_bounds, data_scales,
                                                       scale_sums, solution_model)
from sparsekit.losses._fenchel_young_datafit import FenchelYoungLinear
from sparsekit.utils._columns import UsedColumns
from sparsekit.utils._rows import weighted_scale_sums


def test_scale_sums_do_not_depend_on_the_weights_scale():
    X, _, sw = make_data()
    for given in (X, sp.csr_matrix(X)):
        np.testing.assert_allclose(scale_sums(given, sw), scale_sums(given, 1e300 * sw),
                                   rtol=1e-12)
        np.testing.assert_allclose(scale_sums(given, sw),
                                   weighted_scale_sums(given, sw / sw.max()), rtol=1e-12)


def test_alpha_scale_is_a_share_of_the_mean_squared_row_norm():
    rng = np.random.default_rng(0)
    X, sw = rng.standard_normal((50, 4)), rng.uniform(0.5, 2.0, 50)
    alpha, scale, factors = data_scales(scale_sums(X, sw), "scale")
    assert alpha == pytest.approx(ALPHA_SCALE * np.sum(sw * (X ** 2).sum(axis=1)) / sw.sum())
    assert scale == pytest.approx(np.sqrt(np.sum(sw[:, None] * X ** 2) / (4 * sw.sum())))
    assert factors is None
    assert data_scales(scale_sums(X, sw), 0.25)[0] == 0.25
    assert data_scales(scale_sums(np.zeros((5, 3)), np.ones(5)), "scale") == (ALPHA_SCALE,
                                                                                1.0, None)
    X[:, 2] *= 1e5                                       # a column in other units
    alpha_units, _, factors = data_scales(scale_sums(X, sw), "scale")
    assert factors is not None and factors[2] > 1e3 and np.all(factors[[0, 1, 3]] == 1.0)
    # the scale of X with that column in the others' units
    assert alpha_units == pytest.approx(data_scales(scale_sums(X / factors, sw), "scale")[0])
    with pytest.raises(ValueError, match="squares underflow float64"):
        data_scales(scale_sums(np.full((4, 2), 1e-160), np.ones(4)), "scale")


def test_sdca_walks_a_dense_x_of_mostly_zeros_as_its_csr_copy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 10)) * (rng.random((40, 10)) < 0.1)
    problem = Problem(X, X, None, None, "simplex", None, (), None, None, 1.0, None, None)
    rows = problem.sdca_rows()
    assert sp.issparse(rows) and rows.format == "csr" and problem.sdca_rows() is rows
    np.testing.assert_array_equal(rows.toarray(), X)
    dense = rng.standard_normal((40, 10))
    assert Problem(dense, dense, None, None, "simplex", None, (), None, None, 1.0, None,
                   None).sdca_rows() is dense
    made = []
    assert problem.datafit(True, lambda: made.append(1) or "sdca's") == "sdca's"
    assert problem.datafit(True, lambda: made.append(1)) == "sdca's" and made == [1]


def test_the_model_of_a_solution_and_of_a_two_class_fit_of_one_output():
    X, y, sw = make_data(k=2)
    used = UsedColumns(X, keep_all=True)
    rng = np.random.default_rng(0)
    general = make_datafit(X, y, sw, polytope="box")
    x = rng.standard_normal(general.size)
    model = solution_model(general, x, (), used)
    W, b = general.from_solver(x)
    assert model["coef_"].shape == (2, X.shape[1]) and model["coef_"].flags.f_contiguous
    np.testing.assert_allclose(model["coef_"], W.T)
    np.testing.assert_allclose(model["intercept_"], b)
    Yt = sp.csr_matrix(np.eye(2)[y][:, :1])
    one = FenchelYoungLinear(X, Yt, sw, polytope="box", budget=1.0, alpha=0.1,
                             fit_intercept=True, penalize_intercept=False,
                             offset=np.full(1, TWO_CLASS_OFFSET))
    x = rng.standard_normal(one.size)
    model = solution_model(one, x, (), used)
    w, c = one.from_solver(x)
    np.testing.assert_allclose(model["coef_"], np.hstack([w, -w]).T)
    np.testing.assert_allclose(model["intercept_"], np.concatenate([c, -c]))


def test_coefficient_bounds_on_the_solver_variable():
    assert coefficient_bounds(None, False, 3, 2) is None
    with pytest.raises(ValueError, match="either positive=True or bounds, not both"):
        coefficient_bounds((0, 1), True, 3, 2)
    with pytest.raises(ValueError, match="a pair"):
        coefficient_bounds((0, 1, 2), False, 3, 2)
    with pytest.raises(ValueError, match=r"broadcastable to \(n_classes, n_features\) = "
                                         r"\(2, 3\)"):
        coefficient_bounds((np.zeros(4), None), False, 3, 2)
    positive = coefficient_bounds(None, True, 3, 2)
    np.testing.assert_array_equal(positive.lb, [0.0] * 6 + [-np.inf] * 2)     # intercepts free
    np.testing.assert_array_equal(positive.ub, [np.inf] * 8)
    lower = np.array([[-1.0, -2.0, -3.0], [-4.0, -5.0, -6.0]])
    scaled = coefficient_bounds((lower, 1.0), False, 3, 2, columns=[1], weight_scale=2.0)
    # feature-major solver variable; class 1 negated: [-upper, -lower]
    np.testing.assert_array_equal(scaled.lb[:6], 2.0 * np.array([-1.0, -1.0, -2.0, -1.0,
                                                                 -3.0, -1.0]))
    np.testing.assert_array_equal(scaled.ub[:6], 2.0 * np.array([1.0, 4.0, 1.0, 5.0, 1.0,
                                                                 6.0]))
