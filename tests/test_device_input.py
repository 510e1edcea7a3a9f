"""Scores of device (CuPy) input: the estimators' ``score`` and ``precision_at_k`` on a CuPy
X, labels and weights are the CPU's, on the CuPy stand-in and on real CuPy when a device is
usable."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit import (ExtremeSoftmaxSGD, L1LogisticOBA, L1LogisticOBACV, SparsemaxClassifier,
                       SparsemaxClassifierCV)


def _on_device(cp, v, sparse=False):
    if sparse:
        import cupyx.scipy.sparse as cusp

        return cusp.csr_matrix(sp.csr_matrix(v))
    return cp.asarray(v)


@pytest.mark.parametrize("make", [
    lambda: L1LogisticOBA(), lambda: L1LogisticOBA(multiclass="multinomial"),
    lambda: SparsemaxClassifier(), lambda: ExtremeSoftmaxSGD(random_state=0),
    lambda: L1LogisticOBACV(Cs=3), lambda: L1LogisticOBACV(Cs=3, scoring="accuracy"),
    lambda: SparsemaxClassifierCV(alphas=[1e-3, 1e-1])],
    ids=["oba", "oba-multinomial", "sparsemax", "esgd", "oba-cv", "oba-cv-accuracy",
         "sparsemax-cv"])
@pytest.mark.parametrize("sparse", [False, True])
def test_scores_of_device_input_are_the_cpu_scores(cupy_backend, make, sparse):
    """A model fit on the device (weights on the device too) scores a CuPy X against
    labels and weights on the device or the host as the CPU model scores host input:
    scikit-learn's metrics, which refuse device arrays, get them on the host."""
    cp = cupy_backend
    with pytest.raises(TypeError):        # the stand-in refuses implicit copies, as CuPy
        np.asarray(cp.asarray(np.ones(2)))
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 6))
    X[rng.random(X.shape) < 0.4] = 0.0
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 0.5)
    sw = rng.uniform(0.5, 2.0, 60)
    X_test = rng.normal(size=(40, 6))
    y_test, sw_test = rng.integers(0, 3, 40), rng.uniform(0.5, 2.0, 40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # tiny fits, short of their tolerances
        cpu = make().fit(X, y, sample_weight=sw)
        gpu = make().set_params(device="cuda").fit(_on_device(cp, X, sparse), cp.asarray(y),
                                                   sample_weight=cp.asarray(sw))
    want = cpu.score(X_test, y_test, sample_weight=sw_test)
    X_dev = _on_device(cp, X_test, sparse)
    for labels, weights in ((y_test, sw_test), (cp.asarray(y_test), cp.asarray(sw_test))):
        assert gpu.score(X_dev, labels, sample_weight=weights) == pytest.approx(want,
                                                                               abs=1e-6)
    assert gpu.score(X_dev, y_test) == pytest.approx(cpu.score(X_test, y_test), abs=1e-6)
    if isinstance(gpu, ExtremeSoftmaxSGD):
        assert gpu.precision_at_k(X_dev, cp.asarray(y_test), k=2) == pytest.approx(
            cpu.precision_at_k(X_test, y_test, k=2))


def test_label_sets_on_the_device_are_scored_as_on_the_host(cupy_backend):
    """SparsemaxClassifier's subset accuracy of a CuPy indicator is the host one's."""
    cp = cupy_backend
    rng = np.random.default_rng(4)
    X = rng.normal(size=(50, 5))
    Y = (X[:, :3] + rng.normal(scale=0.5, size=(50, 3)) > 0).astype(int)
    Y[Y.sum(axis=1) == 0, 0] = 1
    clf = SparsemaxClassifier(device="cuda").fit(cp.asarray(X), cp.asarray(Y))
    assert clf.score(cp.asarray(X), cp.asarray(Y)) == clf.score(X, Y) > 0.3


def test_device_nll_and_outputs_are_the_hosts(cupy_backend):
    """The softmax NLL and a classifier's outputs from device scores: the host's values
    (NumPy out for the NLL and for labels of other kinds than numbers)."""
    from scipy.special import log_softmax

    from sparsekit.linear_model._device_input import device_nll, device_outputs
    from sparsekit.metrics._ranking import top_k

    cp = cupy_backend
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    coef, intercept = rng.standard_normal((6, 4)), rng.standard_normal(6)
    y_idx = rng.integers(0, 6, 30)
    S = X @ coef.T + intercept
    S[3, [1, 4]] = S[3].max() + 1.0                       # a tie for the best class
    expected = -log_softmax(S, axis=1)[np.arange(30), y_idx]
    X[3] = 0.0
    S[3] = intercept
    expected[3] = -log_softmax(intercept)[y_idx[3]]
    np.testing.assert_allclose(device_nll(cp.asarray(X), coef, intercept, y_idx), expected,
                               rtol=1e-12)
    numbers, names = np.arange(10, 16), np.array(list("abcdef"), dtype=object)
    got = {kind: device_outputs(cp.asarray(S), kind, numbers, np.float32)
           for kind in ("scores", "log_proba", "proba", "labels", 3)}
    np.testing.assert_allclose(got["scores"].get(), S.astype(np.float32))
    np.testing.assert_allclose(got["log_proba"].get(), log_softmax(S, axis=1), rtol=1e-6)
    np.testing.assert_allclose(got["proba"].get(), np.exp(log_softmax(S, axis=1)), rtol=1e-6)
    assert got["proba"].dtype == np.float32
    np.testing.assert_array_equal(got["labels"].get(), numbers[S.argmax(axis=1)])
    np.testing.assert_array_equal(got[3].get(), numbers[top_k(S, 3)])
    labels = device_outputs(cp.asarray(S), "labels", names, np.float64)
    assert isinstance(labels, np.ndarray)
    np.testing.assert_array_equal(labels, names[S.argmax(axis=1)])


@pytest.mark.parametrize("block_rows", [1, 7, 1000])
@pytest.mark.parametrize("sparse", [False, True])
def test_device_column_stats_are_the_host_ones_over_any_blocks(cupy_backend, sparse,
                                                               block_rows, monkeypatch):
    """The columns' sums of squares and nonzero counts of device X, taken over blocks of
    rows (one row, a block that leaves a remainder, all of X), are the host's: an empty
    column, a column of tiny entries and a zero stored in a sparse X (not counted)
    included."""
    from sparsekit.linear_model import _device_input
    from sparsekit.utils._rows import weighted_column_stats

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 6)) * (rng.random((40, 6)) < 0.5)
    X[:, 2] = 0.0
    X[:, 4] *= 1e-30
    monkeypatch.setattr(_device_input, "DEVICE_BLOCK_BYTES", 8 * 6 * block_rows)
    host = sp.csr_matrix(X) if sparse else X
    if sparse:
        host.data[0] = 0.0                         # stored, not counted
    got = _device_input.device_column_stats(_on_device(cupy_backend, host, sparse))
    want = weighted_column_stats(host)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
