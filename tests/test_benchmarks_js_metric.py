"""The Jensen-Shannon metric of the SparsemaxClassifier benchmark (notes/sparsemax_report.md 1.10).

``mean_js`` scores the accuracy tables of doc/benchmarks.md, so it is checked here against
SciPy's independent implementation and the divergence's closed-form values.
"""
import importlib
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def mean_js(monkeypatch):
    """The benchmark's function; the BLAS pins its import sets are undone afterwards."""
    if not (BENCHMARKS / "bench_sparsemax_classifier.py").exists():
        pytest.skip("benchmarks/ is not beside the tests")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "SPARSEKIT_BENCH_THREADS"):
        if var in os.environ:
            monkeypatch.setitem(os.environ, var, os.environ[var])
        else:
            monkeypatch.delitem(os.environ, var, raising=False)
    # the package imported first: the script puts the checkout first on sys.path (for an
    # in-place build), whose sources lack the compiled modules of an installed package
    importlib.import_module("sparsekit")
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("_report", "bench_sparsemax_classifier"):
        monkeypatch.delitem(__import__("sys").modules, name, raising=False)
    return importlib.import_module("bench_sparsemax_classifier").mean_js


def _random_rows(rng, n, k, zero_fraction):
    A = rng.random((n, k)) * (rng.random((n, k)) > zero_fraction)
    A[np.arange(n), rng.integers(0, k, n)] += 0.1  # no empty row
    return A / A.sum(axis=1, keepdims=True)


def test_matches_scipy_on_random_rows_with_zeros(mean_js):
    rng = np.random.default_rng(0)
    Q, P = _random_rows(rng, 50, 7, 0.5), _random_rows(rng, 50, 7, 0.5)
    expected = np.mean([jensenshannon(q, p) ** 2 for q, p in zip(Q, P)])  # natural log
    assert mean_js(Q, P) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_closed_form_values(mean_js):
    Q = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    assert mean_js(Q, Q) == pytest.approx(0.0, abs=1e-15)
    disjoint = np.array([[0.0, 0.5, 0.5], [0.0, 0.0, 1.0]])
    assert mean_js(Q[:2], disjoint) == pytest.approx(np.log(2.0), rel=1e-14)
    # a point mass against the uniform pair: M = (3/4, 1/4), JS = (KL(q‖M) + KL(p‖M)) / 2
    q, p = np.array([[1.0, 0.0]]), np.array([[0.5, 0.5]])
    exact = 0.5 * np.log(1.0 / 0.75) + 0.5 * (0.5 * np.log(0.5 / 0.75) + 0.5 * np.log(0.5 / 0.25))
    assert mean_js(q, p) == pytest.approx(exact, rel=1e-14)


def test_symmetric_and_bounded(mean_js):
    rng = np.random.default_rng(1)
    Q, P = _random_rows(rng, 40, 5, 0.6), _random_rows(rng, 40, 5, 0.6)
    value = mean_js(Q, P)
    assert value == pytest.approx(mean_js(P, Q), rel=1e-13)
    assert 0.0 < value <= np.log(2.0)


def test_prediction_is_cleaned_and_normalized_without_touching_the_caller(mean_js):
    rng = np.random.default_rng(2)
    Q, P = _random_rows(rng, 20, 6, 0.5), _random_rows(rng, 20, 6, 0.5)
    noisy = 3.0 * P + np.where(P == 0.0, 1e-40, 0.0)  # unnormalized, underflow-level mass
    before = noisy.copy()
    assert mean_js(Q, noisy) == pytest.approx(mean_js(Q, P), rel=1e-12)
    np.testing.assert_array_equal(noisy, before)
