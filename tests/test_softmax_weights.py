"""SoftmaxWeights: the layouts of ExtremeSoftmaxSGD's weights, their attributes, scores and
NLL against the weights they stand for, and new objects for new arrays."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import logsumexp

import _softmax_reference as ref
import sparsekit.linear_model._softmax_weights as weights_module
from sparsekit.linear_model._softmax_weights import SoftmaxWeights


def _random(layout, bias, dtype=np.float64, K=5, D=7, n_weights=64, seed=0):
    rng = np.random.default_rng(seed)
    weights = SoftmaxWeights.zeros(K, D, dtype, bias, n_weights if layout == "hashed" else None)
    weights.R[...] = rng.standard_normal(weights.R.shape)
    return weights


def _dense_form(weights, D):
    """The (K, D) weights and (K,) intercepts that ``weights`` stand for."""
    if weights.n_weights is None:
        return weights.attributes()["coef_"], weights.attributes()["intercept_"]
    return ref.decode(weights.R[0], weights.n_weights, weights.slots, D, weights.bias)


@pytest.mark.parametrize("layout", ["dense", "hashed"])
@pytest.mark.parametrize("bias", [True, False])
def test_zeros_lay_out_every_class(layout, bias):
    weights = SoftmaxWeights.zeros(5, 7, np.float32, bias, 64 if layout == "hashed" else None)
    shape = (5, 7 + bias) if layout == "dense" else (1, 64 + 5)
    assert weights.R.shape == shape and weights.R.dtype == np.float32 and not weights.R.any()
    assert weights.n_classes == 5 and weights.slots.tolist() == list(range(5))
    attributes = weights.attributes()
    assert attributes["intercept_"].shape == (5,) and ("coef_" in attributes) == (
        layout == "dense")
    assert weights.fits(7, bias, weights.n_weights) and not weights.fits(7, not bias,
                                                                         weights.n_weights)
    assert (weights.fits(8, bias, weights.n_weights)) == (layout == "hashed")


def test_dense_attributes_are_views_of_the_weights():
    weights = _random("dense", True)
    coef, intercept = weights.attributes().values()
    assert np.shares_memory(coef, weights.R) and np.shares_memory(intercept, weights.R)
    np.testing.assert_array_equal(coef, weights.R[:, :7])
    np.testing.assert_array_equal(intercept, weights.R[:, 7])


@pytest.mark.parametrize("layout", ["dense", "hashed"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_scores_and_nll_are_those_of_the_weights_they_stand_for(layout, bias, sparse):
    weights = _random(layout, bias)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((40, 7))
    X[rng.random(X.shape) < 0.5] = 0.0
    X[3] = 0.0                                        # an empty row
    coef, intercept = _dense_form(weights, 7)
    expected = X @ coef.T + intercept
    Xin = sp.csr_matrix(X) if sparse else X
    np.testing.assert_allclose(weights.scores(Xin), expected, rtol=1e-12, atol=1e-12)
    y = rng.integers(0, 5, 40)
    np.testing.assert_allclose(weights.nll(Xin, y),
                               logsumexp(expected, axis=1) - expected[np.arange(40), y],
                               rtol=1e-12, atol=1e-12)
    chunks = list(weights.chunk_scores(Xin))
    assert sum(np.arange(40)[rows].size for rows, _ in chunks) == 40


@pytest.mark.parametrize("layout", ["dense", "hashed"])
def test_sampled_scores_are_the_scores_of_the_sampled_rows(monkeypatch, layout):
    """A sample's rows are scored a block of about SAMPLED_ENTRIES entries at a time (one
    row a block at 1), with the scores of ``X[rows]``; every row scores X itself."""
    weights = _random(layout, True, D=40)
    X = sp.random(300, 40, density=0.2, format="csr", random_state=0)
    rows = np.sort(np.random.default_rng(1).choice(300, 120, replace=False))
    for entries in (1, 50, 2**20):
        monkeypatch.setattr(weights_module, "SAMPLED_ENTRIES", entries)
        np.testing.assert_array_equal(weights.sampled_scores(X, rows), weights.scores(X[rows]))
        np.testing.assert_array_equal(weights.sampled_scores(X, slice(None)), weights.scores(X))
        np.testing.assert_allclose(weights.sampled_scores(X.toarray(), rows),      # GEMMs
                                   weights.scores(X.toarray()[rows]), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("layout", ["dense", "hashed"])
def test_grown_weights_keep_each_class_and_give_the_new_ones_zero(layout):
    """Classes 0-4 become positions 1, 2, 4, 5, 6 of 8: their weights and intercepts are
    unchanged (hashed: new slots after the others), the new classes have zero weights
    (hashed: zero intercepts; their weights are the shared table's), and the weights grown
    from are left as they were."""
    weights = _random(layout, True)
    before = weights.R.copy()
    coef, intercept = _dense_form(weights, 7)
    where = np.array([1, 2, 4, 5, 6])
    grown = weights.grown(where, 8)
    np.testing.assert_array_equal(weights.R, before)
    assert grown.n_classes == 8 and grown is not weights
    if layout == "hashed":
        assert grown.slots.tolist() == [5, 0, 1, 6, 2, 3, 4, 7]
    new_coef, new_intercept = _dense_form(grown, 7)
    np.testing.assert_array_equal(new_coef[where], coef)
    np.testing.assert_array_equal(new_intercept[where], intercept)
    new = np.setdiff1d(np.arange(8), where)
    np.testing.assert_array_equal(new_intercept[new], 0.0)
    if layout == "dense":
        np.testing.assert_array_equal(new_coef[new], 0.0)


def test_replaced_and_copied_weights_are_new_objects_over_their_arrays():
    """An estimator's failed call puts back the object it held: what replaces the array
    makes a new object, and the old one keeps its array."""
    weights = _random("hashed", True)
    R = weights.R
    copied = weights.copy()
    assert copied is not weights and copied.R is not R and weights.R is R
    np.testing.assert_array_equal(copied.R, R)
    assert copied.slots.tolist() == weights.slots.tolist() and copied.n_weights == 64
    other = np.zeros_like(R)
    replaced = weights.replaced(other)
    assert replaced.R is other and weights.R is R


def test_scale_columns_scales_the_first_columns_in_place_and_back():
    weights = _random("dense", True)
    before = weights.R.copy()
    scales = np.array([2.0, 4.0, 0.5])
    weights.scale_columns(scales)
    np.testing.assert_array_equal(weights.R[:, :3], before[:, :3] * scales)
    np.testing.assert_array_equal(weights.R[:, 3:], before[:, 3:])
    weights.scale_columns(scales, inverse=True)
    np.testing.assert_allclose(weights.R, before, rtol=1e-15)


def test_weights_too_large_for_memory_are_refused_before_allocation():
    with pytest.raises((ValueError, MemoryError), match="n_weights"):
        SoftmaxWeights.zeros(10**6, 10**7, np.float64, True)


@pytest.mark.parametrize("layout", ["dense", "hashed"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_mapped_and_reduced_a_chunk_at_a_time_are_those_of_all_the_scores(
        monkeypatch, layout, dtype):
    weights = _random(layout, True, dtype)
    rng = np.random.default_rng(1)
    for X in (rng.standard_normal((23, 7)).astype(dtype),
              sp.csr_matrix(rng.standard_normal((23, 7)) * (rng.random((23, 7)) < 0.4))):
        S = weights.scores(X)
        whole_map = weights.map_rows(X, lambda s: 2.0 * s)
        whole_reduce = weights.reduce_rows(X, lambda s: s.argmax(axis=1))
        monkeypatch.setattr(weights_module, "_chunks",
                            lambda n, K: [slice(i, min(i + 5, n)) for i in range(0, n, 5)])
        mapped = weights.map_rows(X, lambda s: 2.0 * s)
        reduced = weights.reduce_rows(X, lambda s: s.argmax(axis=1))
        monkeypatch.undo()
        out = np.result_type(X.dtype, dtype)
        for got in (mapped, whole_map):
            assert got.dtype == out and got.shape == (23, weights.n_classes)
            np.testing.assert_allclose(got, (2.0 * S).astype(out), rtol=1e-6)
        np.testing.assert_array_equal(reduced, S.argmax(axis=1))
        np.testing.assert_array_equal(whole_reduce, reduced)
