"""l1_logistic_path: warm-started solves from the smallest C, its grid of C values, its
warnings and its parameters."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from sparsekit.linear_model import L1LogisticOBA, l1_logistic_path
from test_l1_logistic import _binary, _dense_binary, _multiclass, _three_classes


def test_path_grid_needs_a_feature_that_can_enter():
    X, y = _binary(8)
    with pytest.raises(ValueError, match="every C"):
        l1_logistic_path(np.zeros_like(X), y, Cs=5)
    coefs = l1_logistic_path(np.zeros_like(X), y, Cs=[0.1, 1.0])[0]
    assert not np.any(coefs[:, :X.shape[1]])        # only the intercept moves


def test_path_matches_independent_fits_and_orders_Cs():
    X, y = _binary(6, n=200, d=30, sparse=True)
    Cs = [1.0, 0.01, 0.1, 10.0]
    coefs, Cs_out, n_iter = l1_logistic_path(X, y, Cs, tol=1e-10)
    np.testing.assert_array_equal(Cs_out, Cs)
    for C, c in zip(Cs, coefs):
        est = L1LogisticOBA(C=C, tol=1e-10).fit(X, y)
        np.testing.assert_allclose(c[:-1], est.coef_[0], atol=1e-7)
        np.testing.assert_allclose(c[-1], est.intercept_[0], atol=1e-7)
    coefs, Cs_out, _ = l1_logistic_path(X, y, 5, tol=1e-8)
    assert np.abs(coefs[0, :-1]).max() < 1e-7 and np.count_nonzero(coefs[-1, :-1]) > 5
    with pytest.raises(ValueError, match="pos_class"):
        l1_logistic_path(X, np.arange(200) % 3, [1.0])
    with pytest.raises(ValueError, match="Cs"):
        l1_logistic_path(X, y, [1.0, -1.0])


def test_path_rejects_a_single_class_and_invalid_parameters():
    X, y = _binary(4)
    with pytest.raises(ValueError, match="only one class"):    # as the estimator says it
        l1_logistic_path(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="only one class"):
        l1_logistic_path(X, np.zeros(len(y)), pos_class=0.0)
    # the messages name the function the user called, not the estimator it delegates to
    with pytest.raises(ValueError, match="'max_iter' parameter of l1_logistic_path"):
        l1_logistic_path(X, y, max_iter=-1)
    with pytest.raises(ValueError, match="'tol' parameter of l1_logistic_path"):
        l1_logistic_path(X, y, tol=-1.0)
    with pytest.raises(ValueError, match="'multiclass' parameter of l1_logistic_path"):
        l1_logistic_path(X, y, multiclass="softmax")
    for Cs in (0, -3, True, [1.0, -1.0]):
        with pytest.raises(ValueError, match="Cs"):
            l1_logistic_path(X, y, Cs=Cs)
    # subnormal entries: the smallest active C overflows, no grid (it was one of nan and inf)
    with pytest.raises(ValueError, match="smallest C that gives a nonzero w is inf"):
        l1_logistic_path(X * 1e-310, y)


def test_path_grid_starts_at_the_smallest_active_C_on_unbalanced_classes():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 10))
    y = (X[:, 0] + 1.5 + 0.5 * rng.standard_normal(200) > 0).astype(int)
    assert y.mean() > 0.8  # the free intercept is far from 0 at w = 0
    coefs, Cs, _ = l1_logistic_path(X, y, Cs=5)
    assert not np.any(coefs[0, :-1])
    below = L1LogisticOBA(C=0.98 * Cs[0]).fit(X, y)
    assert not np.any(below.coef_)
    assert np.all(below.n_iter_ == 0)  # the null start (w = 0, its best intercept) is optimal
    np.testing.assert_allclose(below.intercept_, np.log(y.mean() / (1 - y.mean())), rtol=1e-12)
    assert np.any(L1LogisticOBA(C=1.02 * Cs[0]).fit(X, y).coef_)


def test_path_warns_once_naming_the_Cs_that_did_not_converge():
    """l1_logistic_path warns once for the Cs whose solve did not converge (their number and
    the first five), not once per C; a single C keeps its name; a loose run does not warn."""
    X, y = _binary()
    Cs = np.logspace(-1, 1, 7)

    def messages(**kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            n_iter = l1_logistic_path(X, y, **kwargs)[2]
        return [str(w.message) for w in caught if w.category is ConvergenceWarning], n_iter

    found, n_iter = messages(Cs=Cs, max_iter=1, tol=1e-12)
    np.testing.assert_array_equal(n_iter, 1)
    assert len(found) == 1
    assert found[0].startswith("OBA did not converge for 7 of 7 values of C (C=0.1, "
                               "C=0.215443, C=0.464159, C=1, C=2.15443 and 2 more) in 1 "
                               "iterations (optimality up to ")
    assert found[0].endswith(" > tol 1.00e-12); increase max_iter.")
    found, _ = messages(Cs=[2.0], max_iter=1, tol=1e-12)
    assert len(found) == 1 and found[0].startswith("OBA did not converge for C=2 in 1 "
                                                   "iterations (optimality ")
    assert messages(Cs=Cs)[0] == []


def test_path_on_empty_columns_is_the_path_on_the_used_ones():
    from _hashed import spread_columns

    X, y = _binary(sparse=True)
    wide, places = spread_columns(X, 700)
    coefs, Cs, n_iter = l1_logistic_path(wide, y, Cs=4)
    ref, ref_Cs, ref_iter = l1_logistic_path(X, y, Cs=4)
    assert coefs.shape == (4, 701)
    np.testing.assert_array_equal(Cs, ref_Cs)
    np.testing.assert_array_equal(coefs[:, np.r_[places, 700]], ref)
    assert not np.any(np.delete(coefs[:, :700], places, axis=1))
    multi, _, _ = l1_logistic_path(spread_columns(_multiclass()[0], 50)[0], _multiclass()[1],
                                   Cs=[1.0], multiclass="multinomial")
    assert multi.shape == (1, 3, 51)


def test_path_solves_from_the_smallest_C_with_warm_starts():
    """Cs given in decreasing order are still solved from the smallest up, each from the
    previous solution: the C below C_min is solved first, at the null start (0 iterations),
    and a repeated C restarts at its own solution (0 iterations)."""
    X, y = _dense_binary()
    c_min = l1_logistic_path(X, y, Cs=1)[1][0]
    coefs, _, n_iter = l1_logistic_path(X, y, [100 * c_min, 0.5 * c_min])
    assert n_iter[1] == 0 and not np.any(coefs[1, :-1]) and n_iter[0] > 0
    _, _, n_iter = l1_logistic_path(X, y, [10 * c_min, 10 * c_min])
    assert sorted(n_iter.tolist())[0] == 0 and n_iter.max() > 0


def test_path_grid_is_log_spaced_over_four_decades_from_C_min():
    """Cs = n: n values log-spaced on [C_min, 1e4 C_min] (the documented grid)."""
    X, y = _dense_binary(2)
    _, Cs, _ = l1_logistic_path(X, y, Cs=5)
    c_min = Cs[0]
    np.testing.assert_allclose(Cs, c_min * np.logspace(0, 4, 5), rtol=1e-12)


def test_path_pos_class_picks_the_positive_label():
    """pos_class=k on three classes is the path of the binary labels (y == k); on two
    classes, the smaller label as pos_class flips the signs of w and b (the logistic loss
    is symmetric); a label not in y is refused."""
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
