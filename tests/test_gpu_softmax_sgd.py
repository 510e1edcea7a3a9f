"""ExtremeSoftmaxSGD's GPU epochs against the CPU epoch driver (the same class draws: the
results agree up to the order of floating-point additions), and the estimator with
device="cuda", on the CuPy stand-in and on real CuPy when a device is usable."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from sparsekit import ExtremeSoftmaxSGD
from sparsekit._cython._softmax_sgd import METHODS, sample_classes, softmax_epoch
from sparsekit.gpu.softmax_sgd import DeviceRows, softmax_epoch_gpu


def _problem(rng, n=40, d=12, K=7, dtype=np.float64, sparse=True):
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < (0.4 if sparse else 1.0))
    X[3] = 0.0                                          # an empty row
    y = rng.integers(0, K, n)
    return (sp.csr_matrix(X) if sparse else X).astype(dtype), y


def _cpu_inputs(X):
    if sp.issparse(X):
        return X.data, X.indices, X.indptr, False
    return X.ravel(), np.zeros(1, dtype=np.intp), np.zeros(1, dtype=np.intp), True


def test_sample_classes_are_the_cpu_epochs_draws():
    """The draws given to the GPU are those the CPU driver makes from the same seed:
    distinct, uniform over the wrong classes (all classes with exclude_true=False)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 50, 4000).astype(np.intp)
    C = sample_classes(labels, 50, 5, True, 123)
    assert C.shape == (4000, 6) and C.dtype == np.int64
    np.testing.assert_array_equal(C[:, 0], labels)
    assert all(len(set(row)) == 6 for row in C.tolist())      # distinct, none is the label
    counts = np.bincount(C[:, 1:].ravel(), minlength=50)
    assert counts.min() > 0.6 * counts.mean()
    np.testing.assert_array_equal(sample_classes(labels, 50, 5, True, 123), C)
    assert (sample_classes(labels, 50, 5, False, 7)[:, 1:] == labels[:, None]).any()
    with pytest.raises(ValueError, match="1 <= m"):
        sample_classes(labels, 5, 5, True, 0)


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("batch_size", [1, 6])
@pytest.mark.parametrize("dtype, sparse", [(np.float64, True), (np.float64, False),
                                           (np.float32, True)])
def test_gpu_epoch_matches_the_cpu_epoch(cupy_backend, method, batch_size, dtype, sparse):
    cp = cupy_backend
    rng = np.random.default_rng(1)
    X, y = _problem(rng, dtype=dtype, sparse=sparse)
    n, d = X.shape
    K, m, bias = 7, 3, True
    sw = rng.uniform(0.5, 2.0, n)
    R0 = (rng.normal(size=(K, d + bias)) * 0.3).astype(dtype)
    u0 = rng.uniform(0.0, 1.0, n)
    order = rng.permutation(n).astype(np.intp)
    data, indices, indptr, dense = _cpu_inputs(X)
    Xd = X.toarray() if sp.issparse(X) else X
    xsq = (Xd.astype(np.float64) ** 2).sum(axis=1) + bias
    R_cpu, u_cpu = R0.copy(), u0.copy()
    # the double sum's SGD overflows at larger steps; Implicit SGD's are stable at any
    eta = {"sgd": 1e-4, "implicit": 40.0}.get(method, 0.7)
    status, _ = softmax_epoch(METHODS[method], data, indices, indptr, dense, d, bias,
                              y.astype(np.intp), sw, xsq, R_cpu, np.ones(K), np.zeros(1),
                              u_cpu, np.ones(K), order, m, batch_size, eta, 0.0, 0.5,
                              np.inf, np.inf, 99)
    assert status == 0
    R_gpu, u_gpu = cp.asarray(R0), cp.asarray(u0)
    status = softmax_epoch_gpu(method, DeviceRows(X, dtype), bias, y, sw, R_gpu, u_gpu,
                               order, m, batch_size, eta, 0.5, np.inf, 99)
    assert status == 0
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(R_gpu.get(), R_cpu, rtol=tol, atol=tol)
    np.testing.assert_allclose(u_gpu.get(), u_cpu, rtol=tol, atol=tol)
    assert not np.allclose(R_cpu, R0)


def test_gpu_epoch_reports_overflow(cupy_backend):
    cp = cupy_backend
    rng = np.random.default_rng(2)
    X, y = _problem(rng)
    R = cp.asarray(rng.normal(size=(7, 13)) * 1e200)
    status = softmax_epoch_gpu("sgd", DeviceRows(X * 1e200, np.float64), True, y,
                               np.ones(X.shape[0]), R, cp.zeros(X.shape[0]),
                               np.arange(X.shape[0]), 3, 4, 1e10, 0.5, np.inf, 0)
    assert status == 1


@pytest.mark.parametrize("method", ["sampled_softmax", "implicit"])
@pytest.mark.parametrize("sparse", [True, False])
def test_extreme_softmax_sgd_fits_on_the_gpu_as_on_the_cpu(cupy_backend, sparse, method):
    """device="cuda" gives the CPU fit's model (same draws and batches); CuPy X in, CuPy
    predictions out; NumPy attributes, so the model predicts host input anywhere."""
    cp = cupy_backend
    rng = np.random.default_rng(3)
    X, y = _problem(rng, n=60, sparse=sparse)
    y = np.array(["a", "b", "c", "d", "e", "f", "g"])[y]
    params = {"method": method, "n_sampled": 3, "batch_size": 8, "n_epochs": 6,
              "random_state": 0}
    cpu = ExtremeSoftmaxSGD(**params).fit(X, y)
    gpu = ExtremeSoftmaxSGD(**params, device="cuda").fit(X, y)
    assert type(gpu.coef_) is np.ndarray
    np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=1e-9, atol=1e-9)
    # both the mean of the last two epochs' weights (average="auto", 7 classes)
    last = ExtremeSoftmaxSGD(**params, average=False, device="cuda").fit(X, y)
    assert not np.allclose(last.coef_, gpu.coef_)
    np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gpu.loss_curve_, cpu.loss_curve_, rtol=1e-9)
    Xd = cp.asarray(X.toarray()) if sparse else cp.asarray(X)
    scores = gpu.decision_function(Xd)
    assert type(scores).__module__.split(".")[0] == "cupy"
    np.testing.assert_allclose(scores.get(), cpu.decision_function(X), atol=1e-9)
    np.testing.assert_allclose(gpu.predict_proba(Xd).get(), cpu.predict_proba(X), atol=1e-9)
    np.testing.assert_allclose(gpu.predict_log_proba(Xd).get(), cpu.predict_log_proba(X),
                               atol=1e-9)
    np.testing.assert_array_equal(gpu.predict(Xd), cpu.predict(X))       # string labels
    np.testing.assert_array_equal(gpu.predict(X), cpu.predict(X))
    np.testing.assert_array_equal(gpu.predict_topk(Xd, 3), cpu.predict_topk(X, 3))
    tied = cp.zeros((2, X.shape[1]))                   # every score equal to the intercepts
    np.testing.assert_array_equal(gpu.predict_topk(tied, 7), cpu.predict_topk(
        np.zeros((2, X.shape[1])), 7))
    assert gpu.precision_at_k(Xd, y, 3) == cpu.precision_at_k(X, y, 3)
    # CuPy X for the fit itself
    again = ExtremeSoftmaxSGD(**params, device="cuda").fit(Xd, cp.asarray(np.unique(
        y, return_inverse=True)[1]))
    assert again.coef_.shape == cpu.coef_.shape


@pytest.mark.parametrize("sparse", [True, False])
def test_columns_in_other_units_fit_on_the_gpu_as_on_the_cpu(cupy_backend, sparse):
    """A column in other units: the device fit and stream run on the same divided columns
    (host X, divided before it moves) and return the CPU's coefficients of X's own
    columns."""
    rng = np.random.default_rng(4)
    X, y = _problem(rng, n=80, sparse=sparse)
    X = X @ sp.diags(np.r_[1e5, np.ones(X.shape[1] - 1)]) if sparse else X * np.r_[
        1e5, np.ones(X.shape[1] - 1)]
    params = {"n_sampled": 3, "batch_size": 8, "n_epochs": 6, "random_state": 0,
              "eval_every": 2}
    with warnings.catch_warnings(record=True) as seen:   # random labels: the NLL may rise
        warnings.simplefilter("always")
        cpu = ExtremeSoftmaxSGD(**params).fit(X, y)
        gpu = ExtremeSoftmaxSGD(**params, device="cuda").fit(X, y)
        streams = [ExtremeSoftmaxSGD(n_sampled=3, random_state=0, device=device)
                   for device in ("cpu", "cuda")]
        for stream in streams:
            for rows in np.array_split(np.arange(X.shape[0]), 4):
                stream.partial_fit(X[rows], y[rows], classes=np.arange(7))
    assert not any("units" in str(w.message) for w in seen)
    assert abs(cpu.coef_[:, 0]).max() < 1e-3 < abs(cpu.coef_[:, 1:]).max()
    np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(gpu.loss_curve_, cpu.loss_curve_, rtol=1e-9)
    np.testing.assert_allclose(streams[1].coef_, streams[0].coef_, rtol=1e-9, atol=1e-12)
    assert abs(streams[0].coef_[:, 0]).max() < 1e-3 < abs(streams[0].coef_[:, 1:]).max()


@pytest.mark.filterwarnings("ignore:.*(diverged|above the training NLL)")  # random labels
@pytest.mark.parametrize("sparse", [True, False])
def test_gpu_fit_records_the_cpu_fits_nll_history(cupy_backend, sparse, monkeypatch):
    """With eval_every, a device="cuda" fit computes its training NLL on the device (the
    rows moved there once per fit, float64 scores, log space): the CPU fit's history, for
    fit, a warm u from the NLL, and partial_fit; no device array is left on the model."""
    rng = np.random.default_rng(6)
    X, y = _problem(rng, n=80, sparse=sparse, dtype=np.float32)
    X = X * np.float32(0.3)
    on_device = []
    device_nll = ExtremeSoftmaxSGD._device_nll
    monkeypatch.setattr(ExtremeSoftmaxSGD, "_device_nll",
                        lambda self, *a: on_device.append(1) or device_nll(self, *a))
    params = {"method": "implicit", "n_sampled": 2, "batch_size": 4, "n_epochs": 3,
              "eval_every": 1, "eval_size": 50, "random_state": 0,
              "shrink": False}      # (a shrunk model's NLL would be one more evaluation)
    cpu = ExtremeSoftmaxSGD(**params).fit(X, y)
    gpu = ExtremeSoftmaxSGD(**params, device="cuda").fit(X, y)
    assert len(gpu.loss_curve_) == 4
    np.testing.assert_allclose(gpu.loss_curve_, cpu.loss_curve_, rtol=1e-5)
    for est in (cpu, gpu):
        est.set_params(warm_start=True, u_init="exact").fit(X, y)
        est.partial_fit(X[:30], y[:30])
    np.testing.assert_allclose(gpu.loss_curve_, cpu.loss_curve_, rtol=1e-5)
    np.testing.assert_allclose(gpu.u_, cpu.u_, rtol=1e-4, atol=1e-5)
    assert len(on_device) == 10       # 4 + 1 (warm u) + 4 + 1 (partial_fit); none on the CPU
    assert not any(type(v).__module__.split(".")[0] in ("cupy", "_cupy_standin")
                   for v in vars(gpu).values())


@pytest.mark.parametrize("sparse", [True, False])
def test_a_stream_averaged_on_the_gpu_is_the_cpu_stream(cupy_backend, sparse):
    """partial_fit with average=True and device="cuda": each call trains the stream's last
    weights on the device (a different host array from the model each call) and the model
    is their mean, as on the CPU."""
    X, y = _problem(np.random.default_rng(5), n=90, sparse=sparse)
    params = {"batch_size": 8, "lr_decay": 1.0, "average": True, "random_state": 0}
    cpu, gpu = ExtremeSoftmaxSGD(**params), ExtremeSoftmaxSGD(**params, device="cuda")
    for rows in (slice(0, 30), slice(30, 60), slice(60, 90), slice(0, 45)):
        for est in (cpu, gpu):
            est.partial_fit(X[rows], y[rows], classes=np.arange(7))
        np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(gpu._R_iterate, cpu._R_iterate, rtol=1e-9, atol=1e-9)
    assert gpu._n_averaged == 4 and not np.allclose(gpu._R_iterate, gpu._weights.R)


def test_extreme_softmax_sgd_gpu_refuses_what_it_does_not_run(cupy_backend):
    cp = cupy_backend
    rng = np.random.default_rng(4)
    X, y = _problem(rng, sparse=False)
    for params, match in (({"alpha": 1e-3}, "alpha"),
                          ({"n_weights": 64}, "n_weights"),
                          ({"shared_classes": True, "batch_size": 4}, "shared_classes"),
                          ({"n_sampled": 65}, "n_sampled")):
        with pytest.raises(ValueError, match=match):
            ExtremeSoftmaxSGD(device="cuda", **params).fit(X, y)
    with pytest.raises(TypeError, match="device='cpu'"):
        ExtremeSoftmaxSGD().fit(cp.asarray(X), y)


def test_a_batch_larger_than_the_rows_is_one_batch_on_the_gpu_too(cupy_backend):
    """batch_size beyond the rows: the device pass gets the rows' count, not buffers of
    batch_size examples."""
    X, y = _problem(np.random.default_rng(5), n=40, sparse=False)
    params = {"n_sampled": 3, "n_epochs": 2, "random_state": 0, "device": "cuda"}
    huge = ExtremeSoftmaxSGD(**params, batch_size=10**9).fit(X, y)
    np.testing.assert_array_equal(huge.coef_,
                                  ExtremeSoftmaxSGD(**params, batch_size=40).fit(X, y).coef_)
