"""Bad input to the softmax / One-vs-Each helpers of ``sparsekit.losses`` gets a clear
``ValueError`` (``TypeError`` for non-numbers or sparse scores), not NaN nor an internal error;
array-likes are accepted and a sparse X stays sparse."""
import numpy as np
import pytest
import scipy.sparse as sp

import sparsekit.losses as losses
from scipy.special import logsumexp
from sparsekit.losses import (double_sum_objective, fenchel_young_loss,
                              optimal_u, softmax_nll,
                              sparsemax_loss)

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 3))
Y = np.array([0, 1, 2, 1])
W = RNG.normal(size=(3, 3))
U = np.ones(4)

X_FUNCTIONS = ["softmax_scores", "softmax_nll", "optimal_u", "double_sum_objective",
               "double_sum_gradient", "ove_objective", "ove_gradient"]
U_FUNCTIONS = ["double_sum_objective", "double_sum_gradient"]
ALPHA_FUNCTIONS = ["double_sum_objective", "double_sum_gradient", "ove_objective",
                   "ove_gradient"]
SCORES_FUNCTIONS = ["softmax_log_proba", "log_ove_bound"]


def _call(name, X=X, u=U, alpha=0.0, sample_weight=None):
    """``name`` on the problem (X, Y, W), with ``u`` and ``alpha`` where it takes them."""
    function = getattr(losses, name)
    if name == "softmax_scores":
        return function(X, W)
    if name == "softmax_nll":
        return function(X, Y, W, sample_weight=sample_weight)
    if name == "optimal_u":
        return function(X, Y, W)
    if name in U_FUNCTIONS:
        return function(X, Y, W, u, alpha)
    return function(X, Y, W, alpha)


def _flat(result):
    """The values of a result (an array, a number or a tuple of them) in one 1-D array."""
    parts = result if isinstance(result, tuple) else (result,)
    return np.concatenate([np.ravel(part) for part in parts])


def _with(value, array=X):
    bad = array.copy()
    bad[1, 2] = value
    return bad


@pytest.mark.parametrize("name", X_FUNCTIONS)
@pytest.mark.parametrize("bad", [_with(np.nan), _with(np.inf), sp.csr_matrix(_with(-np.inf))],
                         ids=["nan", "inf", "sparse-minus-inf"])
def test_non_finite_X_is_refused(name, bad):
    with pytest.raises(ValueError, match="X must be a finite 2-D array or sparse matrix"):
        _call(name, X=bad)


@pytest.mark.parametrize("name", X_FUNCTIONS)
def test_X_of_non_numbers_is_refused(name):
    with pytest.raises(TypeError, match="X must be .* of real numbers"):
        _call(name, X=X.astype(str))


@pytest.mark.parametrize("name", X_FUNCTIONS)
def test_X_that_is_not_2d_is_refused(name):
    with pytest.raises(ValueError, match=r"X must be a 2-D array .* got shape \(3,\)"):
        _call(name, X=X[0])


@pytest.mark.parametrize("name", X_FUNCTIONS)
def test_X_as_a_list_gives_the_array_result(name):
    np.testing.assert_allclose(_flat(_call(name, X=X.tolist())), _flat(_call(name)),
                               rtol=1e-12)


@pytest.mark.parametrize("name", X_FUNCTIONS)
@pytest.mark.parametrize("to_sparse", [sp.csc_matrix, sp.coo_array])
def test_sparse_X_is_still_accepted_without_densifying(name, to_sparse, monkeypatch):
    """Regression guard of the checks (sparse X was accepted before them): any format, the
    dense result, and X is never made dense."""
    def refuse(*args, **kwargs):
        raise AssertionError("X was densified")
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_array):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)
    expected = _flat(_call(name))
    np.testing.assert_allclose(_flat(_call(name, X=to_sparse(X))), expected, rtol=1e-12)


@pytest.mark.parametrize("name", U_FUNCTIONS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_u_is_refused(name, value):
    u = U.copy()
    u[2] = value
    with pytest.raises(ValueError, match="u must be a finite 1-D array"):
        _call(name, u=u)


@pytest.mark.parametrize("name", ALPHA_FUNCTIONS)
@pytest.mark.parametrize("alpha", [-1.0, np.nan, np.inf, "a", None, True, [0.1]])
def test_bad_alpha_is_refused(name, alpha):
    with pytest.raises(ValueError, match="alpha must be a finite number >= 0"):
        _call(name, alpha=alpha)


def test_sample_weight_of_non_numbers_is_refused():
    with pytest.raises(TypeError, match="sample_weight must be .* of real numbers"):
        _call("softmax_nll", sample_weight=["a"] * 4)


@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("ndim", [1, 2])
def test_non_finite_scores_are_refused_by_softmax_log_proba(value, ndim):
    scores = _with(value) if ndim == 2 else _with(value)[1]
    with pytest.raises(ValueError, match="scores must be a finite 1-D or 2-D array, got NaN"):
        losses.softmax_log_proba(scores)


def test_minus_inf_scores_are_classes_of_probability_zero():
    np.testing.assert_array_equal(losses.softmax_log_proba([[-np.inf, 0.0], [0.0, 0.0]]),
                                  [[-np.inf, 0.0], [np.log(0.5), np.log(0.5)]])
    with pytest.raises(ValueError, match="every row needs a finite score"):
        losses.softmax_log_proba([[0.0, 1.0], [-np.inf, -np.inf]])


@pytest.mark.parametrize("name", SCORES_FUNCTIONS)
def test_sparse_scores_are_refused(name):
    with pytest.raises(TypeError, match="scores must be a dense .*got a sparse matrix"):
        getattr(losses, name)(sp.csr_matrix(X))


@pytest.mark.parametrize("name", SCORES_FUNCTIONS)
@pytest.mark.parametrize("shape", [(3, 0), (0,)])
def test_scores_without_classes_are_refused(name, shape):
    with pytest.raises(ValueError, match=r"at least one class .* got shape \(" + str(shape[0])):
        getattr(losses, name)(np.zeros(shape))


@pytest.mark.parametrize("name", SCORES_FUNCTIONS)
def test_scores_of_non_numbers_are_refused(name):
    with pytest.raises(TypeError, match="scores must be .* of real numbers"):
        getattr(losses, name)(X.astype(str))


# --- Loss and projection details from a mutation review of sparsekit/losses and

def _nll_rows(S, y):
    """Slow reference: per-row NLL ``logsumexp(s) - s_y`` (scipy, float64)."""
    return logsumexp(S, axis=1) - S[np.arange(len(y)), y]


# ---------------------------------------------------------------- softmax helpers

def test_optimal_u_is_the_per_example_nll_at_huge_gaps():
    """u* = log(1 + sum_{k != y} e^{s_k}) is evaluated in log space: gaps of 1e3 give
    u* = 1e3 + O(1), not inf."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    W = np.array([[0.0, 0.0], [1000.0, 0.0], [0.0, 2000.0]])
    y = np.array([0, 0, 1])
    u = optimal_u(X, y, W)
    assert np.all(np.isfinite(u))
    np.testing.assert_allclose(u, _nll_rows(X @ W.T, y), rtol=1e-14)


def test_double_sum_objective_equals_nll_at_optimal_u_for_huge_gaps():
    """At u = u* the double-sum objective is the NLL even where e^{u*} overflows
    (the ratio (1 + sum e^s) / e^u is formed in log space)."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    W = np.array([[0.0, 0.0], [800.0, 0.0], [0.0, 900.0]])
    y = np.array([0, 0])
    u = _nll_rows(X @ W.T, y)                       # the exact u*, ~ 800 and 900
    value = double_sum_objective(X, y, W, u)
    assert np.isfinite(value)
    assert value == pytest.approx(softmax_nll(X, y, W), rel=1e-13)


# ---------------------------------------------------------------- Fenchel-Young targets

@pytest.mark.parametrize("dtype", [np.uint8, np.uint64, np.int32])
def test_sparsemax_loss_takes_unsigned_labels(dtype):
    """Unsigned integer labels are class indices, as signed ones are (not distributions)."""
    Z = np.array([[0.5, 0.1, -0.2], [1.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    labels = np.array([0, 2, 1])
    onehot = np.eye(3)[labels]
    np.testing.assert_allclose(sparsemax_loss(Z, labels.astype(dtype)),
                               fenchel_young_loss(Z, onehot), rtol=1e-14)


def test_target_tolerance_is_1e6_in_float64_and_1e4_in_float32():
    """A simplex target whose sum is off by 2e-5 is refused in float64 and accepted in
    float32 (documented tolerances of check_target)."""
    z = np.array([0.5, 0.1, -0.2])
    y = np.array([0.5, 0.5 + 2e-5, 0.0])
    with pytest.raises(ValueError, match="outside the 'simplex' polytope"):
        fenchel_young_loss(z, y)
    assert np.isfinite(fenchel_young_loss(z.astype(np.float32), y.astype(np.float32)))
    y_far = np.array([0.5, 0.5 + 2e-3, 0.0], dtype=np.float32)
    with pytest.raises(ValueError, match="outside the 'simplex' polytope"):
        fenchel_young_loss(z.astype(np.float32), y_far)


def test_target_sum_tolerance_scales_with_the_radius():
    """The sum check is relative for a large radius: a target of radius 1e12 whose float64
    sum carries only rounding error (~1e-4 absolute, 1e-16 relative) is inside."""
    r = 1e12
    y = np.array([r / 3, r / 3, r - 2 * (r / 3) + 2e-4])
    assert abs(y.sum() - r) > 1e-6                 # far above an absolute 1e-6 slack
    z = np.array([0.5, 0.1, -0.2])
    assert fenchel_young_loss(z, y, "simplex", radius=r) >= 0
    with pytest.raises(ValueError, match="outside"):    # a real 1e-3 relative miss is not
        fenchel_young_loss(z, y * (1 + 1e-3), "simplex", radius=r)


def test_target_error_names_the_flip_only_with_negated_columns():
    z = np.array([0.5, 0.1, -0.2])
    y = np.array([0.7, 0.7, 0.0])
    with pytest.raises(ValueError) as info:
        fenchel_young_loss(z, y)
    assert "negated" not in str(info.value)
    with pytest.raises(ValueError, match=r"columns \[2\] negated"):
        fenchel_young_loss(z, np.array([0.7, 0.7, 0.5]), negated=[False, False, True])
