"""The GPU logistic datafit and L1LogisticOBA(device="cuda") against the CPU path, on the
CuPy stand-in (kernels in the CPU emulation) and on real CuPy when a device is usable."""
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, DataConversionWarning

from _gpu import on_device
from sparsekit import L1LogisticOBA
from sparsekit.losses._logistic_datafit import Logistic
from sparsekit.losses._multinomial_datafit import Multinomial


def _problem(rng, n=60, d=12, dtype=np.float64, density=None):
    X = rng.normal(size=(n, d))
    if density is not None:
        X[rng.random((n, d)) > density] = 0.0
    y = np.where(X[:, :3].sum(axis=1) + rng.normal(size=n) > 0, 1.0, -1.0)
    return X.astype(dtype), y


def _device(cp, X, sparse):
    return on_device(cp, sp.csr_matrix(X) if sparse else X)


def _assert_same_datafit(cpu, gpu, x, free, rng, rtol, attrs):
    """The device datafit's value, gradient, Hessian operator (products, diagonal,
    restriction), Lipschitz bound, dual terms and null intercept are the CPU datafit's."""
    for attr in attrs:
        assert getattr(gpu, attr) == getattr(cpu, attr)
    np.testing.assert_array_equal(gpu.penalty_weights, cpu.penalty_weights)
    f_c, g_c = cpu.value_grad(x)
    f_g, g_g = gpu.value_grad(x)
    assert isinstance(g_g, np.ndarray) and np.isfinite(f_g)
    np.testing.assert_allclose(f_g, f_c, rtol=rtol)
    np.testing.assert_allclose(g_g, g_c, rtol=rtol, atol=rtol * np.abs(g_c).max())
    np.testing.assert_allclose(gpu.value(x), cpu.value(x), rtol=rtol)
    H_c, H_g = cpu.hessp(x, free), gpu.hessp(x, free)
    assert H_g.shape == H_c.shape
    v = rng.normal(size=free.size)
    np.testing.assert_allclose(H_g(v), H_c(v), rtol=rtol, atol=rtol * np.abs(H_c(v)).max())
    np.testing.assert_allclose(H_g.diagonal(), H_c.diagonal(), rtol=rtol,
                               atol=rtol * H_c.diagonal().max())
    keep = rng.random(free.size) < 0.6
    w = rng.normal(size=int(keep.sum()))
    np.testing.assert_allclose(H_g.restrict(keep)(w), H_c.restrict(keep)(w), rtol=rtol,
                               atol=rtol * np.abs(H_c.restrict(keep)(w)).max())
    np.testing.assert_allclose(H_g.restrict(keep).diagonal(), H_c.restrict(keep).diagonal(),
                               rtol=rtol, atol=rtol * H_c.diagonal().max())
    np.testing.assert_allclose(gpu.lipschitz(), cpu.lipschitz(), rtol=rtol)
    np.testing.assert_allclose(gpu.dual_terms(x, 0.7), cpu.dual_terms(x, 0.7), rtol=rtol)
    np.testing.assert_allclose(gpu.null_intercept(), cpu.null_intercept(), rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_device_logistic_matches_cpu(cupy_backend, sparse, dtype, fit_intercept):
    from sparsekit.gpu.datafits import DeviceLogistic

    cp = cupy_backend
    rng = np.random.default_rng(0)
    X, y = _problem(rng, dtype=dtype, density=0.4 if sparse else None)
    sw = rng.uniform(0.0, 2.0, X.shape[0])
    cpu = Logistic(sp.csc_matrix(X) if sparse else X, y, sample_weight=sw,
                   fit_intercept=fit_intercept)
    gpu = DeviceLogistic(_device(cp, X, sparse), y, sample_weight=sw,
                         fit_intercept=fit_intercept)
    x = rng.normal(size=cpu.n_params) * 3
    x[::3] = 0.0
    free = np.flatnonzero(rng.random(cpu.n_params) < 0.7)
    if fit_intercept:
        free = np.union1d(free, [cpu.n_features])
    _assert_same_datafit(cpu, gpu, x, free, rng, 1e-10 if dtype == np.float64 else 1e-4,
                         ("n_params", "n_features", "n_samples", "fit_intercept"))


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_device_multinomial_matches_cpu(cupy_backend, sparse, dtype, fit_intercept):
    from sparsekit.gpu.datafits import DeviceMultinomial

    cp = cupy_backend
    rng = np.random.default_rng(4)
    X, _ = _problem(rng, n=70, d=9, dtype=dtype, density=0.4 if sparse else None)
    X[5] = 0.0                                          # an empty row
    y = rng.integers(0, 4, 70)
    sw = rng.uniform(0.0, 2.0, 70)
    cpu = Multinomial(sp.csr_matrix(X) if sparse else X, y, 4, sample_weight=sw,
                      fit_intercept=fit_intercept)
    gpu = DeviceMultinomial(_device(cp, X, sparse), y, 4, sample_weight=sw,
                            fit_intercept=fit_intercept)
    x = rng.normal(size=cpu.n_params) * 2
    x[rng.random(x.size) < 0.4] = 0.0
    x[:4] = [300.0, -300.0, 0.0, 1e-3]                  # margins far out in the tails
    free = np.flatnonzero(rng.random(cpu.n_params) < 0.6)
    if fit_intercept:
        free = np.union1d(free, cpu.n_features * 4 + np.array([0, 2]))
    _assert_same_datafit(cpu, gpu, x, free, rng, 1e-10 if dtype == np.float64 else 1e-4,
                         ("n_params", "n_features", "n_samples", "n_classes", "fit_intercept"))
    with pytest.raises(ValueError, match="class indices"):
        DeviceMultinomial(_device(cp, X, sparse), y + 1, 4)


def test_device_logistic_terms_at_huge_margins(cupy_backend):
    """Margins of ±1e150 (entries whose squares still fit float64, as the estimators
    check): finite loss terms, residuals and curvature (no overflow), equal to the CPU's."""
    from sparsekit.gpu.datafits import DeviceLogistic

    cp = cupy_backend
    X = np.array([[1e150], [-1e150], [1e-300], [0.0], [700.0], [-700.0]])
    y = np.array([1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
    cpu = Logistic(X, y)
    gpu = DeviceLogistic(cp.asarray(X), y)
    for x in (np.array([1.0]), np.array([-1.0])):
        f_c, g_c = cpu.value_grad(x)
        f_g, g_g = gpu.value_grad(x)
        assert np.isfinite(f_g) and np.isfinite(g_g).all()
        np.testing.assert_allclose(f_g, f_c, rtol=1e-14)
        np.testing.assert_allclose(g_g, g_c, rtol=1e-14)
        np.testing.assert_allclose(gpu.hessp(x, [0]).diagonal(), cpu.hessp(x, [0]).diagonal(),
                                   rtol=1e-14)


def test_one_vs_rest_threads_solve_on_the_callers_device(cupy_backend, monkeypatch):
    """CuPy's current device belongs to each thread, and joblib's threads start on device
    0: a one-vs-rest fit with ``n_jobs`` inside ``with Device(1):`` must evaluate every
    class's datafit on device 1 (it sent them to device 0)."""
    cp = cupy_backend
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two CUDA devices")
    from sparsekit.gpu.datafits import DeviceLogistic

    rng = np.random.default_rng(3)
    X, _ = _problem(rng, n=80, d=6)
    y = np.argmax(X[:, :4] + 0.3 * rng.normal(size=(80, 4)), axis=1)
    seen, value_grad = set(), DeviceLogistic.value_grad

    def spy(self, x):
        seen.add(cp.cuda.Device().id)
        return value_grad(self, x)
    monkeypatch.setattr(DeviceLogistic, "value_grad", spy)
    with cp.cuda.Device(1):
        gpu = L1LogisticOBA(device="cuda", n_jobs=4).fit(X, y)
    assert seen == {1}
    np.testing.assert_allclose(gpu.coef_, L1LogisticOBA().fit(X, y).coef_, atol=1e-6)


@pytest.mark.parametrize("sparse", [False, True])
def test_l1_logistic_oba_on_the_gpu_matches_cpu(cupy_backend, sparse):
    """Binary and one-vs-rest fits with sample weights and an elastic net: the device fit's
    coefficients are the CPU fit's; CuPy X in, CuPy predictions out; NumPy attributes."""
    cp = cupy_backend
    rng = np.random.default_rng(1)
    X, _ = _problem(rng, n=80, d=10, density=0.5 if sparse else None)
    y3 = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(80, 3)), axis=1)
    sw = rng.uniform(0.5, 2.0, 80)
    Xh = sp.csr_matrix(X) if sparse else X
    for y, params in ((y3 > 0, {}), (y3, {"l1_ratio": 0.6, "class_weight": "balanced"})):
        cpu = L1LogisticOBA(C=2.0, tol=1e-10, **params).fit(Xh, y, sample_weight=sw)
        for X_fit, device in ((Xh, "cuda"), (_device(cp, X, sparse), "cuda")):
            gpu = L1LogisticOBA(C=2.0, tol=1e-10, device=device, **params).fit(
                X_fit, cp.asarray(y) if not isinstance(X_fit, type(Xh)) else y,
                sample_weight=sw)
            assert type(gpu.coef_) is np.ndarray and type(gpu.intercept_) is np.ndarray
            np.testing.assert_allclose(gpu.coef_, cpu.coef_, atol=1e-7)
            np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, atol=1e-7)
            np.testing.assert_array_equal(gpu.classes_, cpu.classes_)
        Xd = _device(cp, X, sparse)
        scores = gpu.decision_function(Xd)
        assert type(scores).__module__.split(".")[0] == "cupy"
        np.testing.assert_allclose(scores.get(), cpu.decision_function(Xh), atol=1e-6)
        np.testing.assert_array_equal(gpu.predict(Xd).get(), cpu.predict(Xh))
        np.testing.assert_allclose(gpu.predict_proba(Xd).get(), cpu.predict_proba(Xh),
                                   atol=1e-7)
        np.testing.assert_allclose(gpu.predict_log_proba(Xd).get(),
                                   cpu.predict_log_proba(Xh), atol=1e-6)
        # the fitted model predicts host input on the CPU, also after a pickle round trip
        again = pickle.loads(pickle.dumps(gpu))
        np.testing.assert_allclose(again.predict_proba(Xh), cpu.predict_proba(Xh), atol=1e-7)


@pytest.mark.parametrize("sparse", [False, True])
def test_multinomial_l1_logistic_oba_on_the_gpu_matches_cpu(cupy_backend, sparse):
    """The multinomial model with weights and an elastic net, fitted from host and from
    device X: the CPU fit's coefficients; CuPy predictions for CuPy X."""
    cp = cupy_backend
    rng = np.random.default_rng(5)
    X, _ = _problem(rng, n=90, d=8, density=0.5 if sparse else None)
    y = np.argmax(X[:, :3] + 0.4 * rng.normal(size=(90, 3)), axis=1)
    sw = rng.uniform(0.5, 2.0, 90)
    Xh = sp.csr_matrix(X) if sparse else X
    params = dict(C=3.0, tol=1e-10, multiclass="multinomial", l1_ratio=0.7,
                  class_weight="balanced")
    cpu = L1LogisticOBA(**params).fit(Xh, y, sample_weight=sw)
    Xd = _device(cp, X, sparse)
    for X_fit in (Xh, Xd):
        gpu = L1LogisticOBA(device="cuda", **params).fit(X_fit, y, sample_weight=sw)
        np.testing.assert_allclose(gpu.coef_, cpu.coef_, atol=1e-7)
        np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, atol=1e-7)
    proba = gpu.predict_proba(Xd)
    assert type(proba).__module__.split(".")[0] == "cupy"
    np.testing.assert_allclose(proba.get(), cpu.predict_proba(Xh), atol=1e-7)
    np.testing.assert_array_equal(gpu.predict(Xd).get(), cpu.predict(Xh))


def test_multinomial_on_the_gpu_checks_the_solvers_host_memory(cupy_backend, monkeypatch):
    """On a GPU the multinomial solver's arrays are on the host too (OBA's sets and points):
    a fit whose arrays would not fit there is refused before it starts, the path's too."""
    import sparsekit.linear_model._l1_problems as l1
    from sparsekit import l1_logistic_path

    rng = np.random.default_rng(5)
    X, _ = _problem(rng, n=90, d=8)
    y = np.arange(90) % 3
    arrays = l1.MULTINOMIAL_ARRAYS
    need = 8 * 3 * (arrays["weights"] * (8 + 1) + arrays["rows"] * 90)
    monkeypatch.setattr(l1, "physical_memory", lambda: need - 1)
    for fit in (lambda: L1LogisticOBA(device="cuda", multiclass="multinomial").fit(X, y),
                lambda: l1_logistic_path(X, y, Cs=2, multiclass="multinomial",
                                         device="cuda")):
        with pytest.raises(ValueError, match=r"the multinomial fit would hold .* \(8 columns "
                                             r"x 3 classes\)(, 2 of them the solutions kept "
                                             r".*,)? and 6 of 90 rows x 3 classes, "
                                             r".*: use multiclass='ovr'"):
            fit()
    monkeypatch.setattr(l1, "physical_memory", lambda: need)
    L1LogisticOBA(device="cuda", multiclass="multinomial").fit(X, y)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_l1_logistic_path_on_the_gpu_matches_cpu(cupy_backend, multiclass):
    """l1_logistic_path(device="cuda") from device X and from host X: the CPU path's grid
    and solutions (a binary path with weights, a multinomial one; the iterations differ,
    the device's Hessians being matrix-free)."""
    from sparsekit import l1_logistic_path

    cp = cupy_backend
    rng = np.random.default_rng(6)
    X, _ = _problem(rng, n=90, d=8, density=0.5)
    y = np.argmax(X[:, :3] + 0.4 * rng.normal(size=(90, 3)), axis=1)
    params = dict(Cs=4, tol=1e-10, multiclass=multiclass,
                  sample_weight=rng.uniform(0.5, 2.0, 90))
    if multiclass == "ovr":
        params["pos_class"] = 2
    cpu = l1_logistic_path(sp.csr_matrix(X), y, **params)
    for X_fit in (_device(cp, X, True), X):
        coefs, Cs, n_iter = l1_logistic_path(X_fit, y, device="cuda", **params)
        assert type(coefs) is np.ndarray
        np.testing.assert_allclose(Cs, cpu[1], rtol=1e-12)
        np.testing.assert_allclose(coefs, cpu[0], atol=1e-7)
        assert n_iter[0] == cpu[2][0] == 0 and np.all(n_iter[1:] >= 1)   # C_min: w = 0
    with pytest.raises(TypeError, match="X is on the GPU"):
        l1_logistic_path(_device(cp, X, False), y, **params)


def _fit_quietly(X, y, **params):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return L1LogisticOBA(**params).fit(X, y)


@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
def test_columns_far_from_zero_are_centered_on_the_gpu_as_on_the_cpu(cupy_backend,
                                                                     multiclass):
    """A column far from 0 (1e6 plus a standardized one) is centered on the device as on
    the CPU: the CPU's model in a few dozen iterations, without a warning, from device and
    from host X, in float64 and float32 (whose intercepts of X as given are rounded at
    1e5: its coefficients compared); the path and the CV too."""
    from sklearn.datasets import make_classification

    from sparsekit import L1LogisticOBACV, l1_logistic_path

    cp = cupy_backend
    X, y = make_classification(300, 5, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=4)
    X[:, 0] = 1e6 + X[:, 0]
    models = None                                      # the float64 ones
    for dtype, tol, atol in ((np.float64, 1e-8, 1e-6), (np.float32, 1e-5, 1e-3)):
        Xt = X.astype(dtype)
        cpu = L1LogisticOBA(multiclass=multiclass, tol=tol).fit(Xt, y)
        for X_fit in (cp.asarray(Xt), Xt):
            gpu = _fit_quietly(X_fit, y, multiclass=multiclass, tol=tol, device="cuda")
            assert gpu.n_iter_.sum() < 20 * gpu.n_iter_.size
            np.testing.assert_allclose(gpu.coef_, cpu.coef_, atol=atol)
        models = models or (gpu, cpu)
    gpu, cpu = models
    # the intercepts of the centered columns (those of X as given are 1e6 times larger)
    np.testing.assert_allclose(gpu.intercept_ + 1e6 * gpu.coef_[:, 0],
                               cpu.intercept_ + 1e6 * cpu.coef_[:, 0], atol=1e-5)
    np.testing.assert_allclose(gpu.predict_proba(X), cpu.predict_proba(X), atol=1e-6)
    path = dict(Cs=[0.1, 1.0], multiclass=multiclass,
                pos_class=None if multiclass == "multinomial" else 2)
    coefs = [l1_logistic_path(X_fit, y, **path, **kw)[0]
             for X_fit, kw in ((cp.asarray(X), dict(device="cuda")), (X, {}))]
    for c in coefs:
        c[..., -1] += 1e6 * c[..., 0]
    np.testing.assert_allclose(*coefs, atol=1e-5)
    cv = dict(Cs=[0.05, 0.5, 5.0], cv=3, multiclass=multiclass)
    np.testing.assert_allclose(L1LogisticOBACV(device="cuda", **cv).fit(X, y).scores_,
                               L1LogisticOBACV(**cv).fit(X, y).scores_, rtol=1e-5)


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
@pytest.mark.parametrize("multiclass", ["ovr", "multinomial"])
@pytest.mark.parametrize("sparse", [False, True])
def test_features_in_other_units_are_solved_on_the_gpu_as_on_the_cpu(cupy_backend, sparse,
                                                                      multiclass, l1_ratio):
    """X times 1e-4 at C times 1e4 (the ℓ1 problem of X at C; the elastic net's of X at
    another C and ratio, test_l1_logistic's unit_elastic_net): the device layout is
    multiplied by the power of two the CPU uses (from its column sums, taken on the
    device), so that the device fit is the CPU's, in the iterations of the device fit of X,
    without a warning, from device and host X (the user's device X left as it was); the
    path and the CV too."""
    from sklearn.datasets import load_digits

    from sparsekit import L1LogisticOBACV, l1_logistic_path
    from test_l1_logistic import unit_elastic_net

    cp = cupy_backend
    X, y = load_digits(return_X_y=True)
    unit, y = X[:300] / 16.0, y[:300] % 3
    X = unit * 1e-4
    C_unit, r_unit = unit_elastic_net(1e5, l1_ratio, 1e-4)
    params = dict(C=1e5, tol=1e-10, multiclass=multiclass, l1_ratio=l1_ratio, max_iter=300)
    cpu = L1LogisticOBA(**params).fit(sp.csr_matrix(X) if sparse else X, y)
    unit_fit = L1LogisticOBA(**{**params, "C": C_unit, "l1_ratio": r_unit},
                             device="cuda").fit(cp.asarray(unit), y)
    device_X = _device(cp, X, sparse)
    for X_fit in (device_X, sp.csr_matrix(X) if sparse else X):
        gpu = _fit_quietly(X_fit, y, device="cuda", **params)
        np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=2e-5, atol=1e-2)
        np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, rtol=1e-6, atol=1e-6)
        assert np.sum(gpu.n_iter_) <= 1.5 * np.sum(unit_fit.n_iter_) + 2
    kept = device_X.toarray() if sparse else device_X
    np.testing.assert_array_equal(cp.asnumpy(kept), X)
    path = dict(Cs=[1e4, 1e5], multiclass=multiclass, l1_ratio=l1_ratio, tol=1e-10,
                pos_class=None if multiclass == "multinomial" else 2)
    np.testing.assert_allclose(l1_logistic_path(device_X, y, device="cuda", **path)[0],
                               l1_logistic_path(X, y, **path)[0], rtol=2e-5, atol=1e-2)
    cv = dict(Cs=[1e4, 1e5], l1_ratios=[l1_ratio], cv=3, multiclass=multiclass)
    np.testing.assert_allclose(L1LogisticOBACV(device="cuda", **cv).fit(device_X, y).scores_,
                               L1LogisticOBACV(**cv).fit(X, y).scores_, rtol=1e-5)


def far_and_tiny(sparse):
    """(host X, X as a dense array, y): digits' first 300 rows / 16 in units of 1e-4 and
    three classes, dense with a column far from 0 (1e6 plus another), or as CSR (which is
    not centered)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X, y = X[:300] / 16.0 * 1e-4, y[:300] % 3
    if not sparse:
        X[:, 5] = 1e6 + X[:, 13]
    return (sp.csr_matrix(X) if sparse else X), X, y


@pytest.mark.parametrize("sparse", [False, True])
def test_host_x_is_laid_out_on_the_gpu_in_its_one_copy(cupy_backend, sparse, monkeypatch):
    """Host float64 X moved to the device is centered (a dense column far from 0) and
    scaled (X in units of 1e-4) in that copy, not in a second one: the datafits' X is the
    array the move made, holding (X - shifts) * scale; the advice reads it in the user's
    units, as the CPU's does."""
    from sparsekit.linear_model import _l1_logistic
    from sparsekit.linear_model._l1_problems import DeviceProblems, MemoryProblems

    cp = cupy_backend
    X_host, X, y = far_and_tiny(sparse)
    moved = []

    def to_device(X):
        moved.append(_l1_logistic.to_device.__wrapped__(X))
        return moved[-1]

    to_device.__wrapped__ = _l1_logistic.to_device
    monkeypatch.setattr(_l1_logistic, "to_device", to_device)
    est = L1LogisticOBA(device="cuda")
    data = DeviceProblems(est, X_host, y, None)
    assert len(moved) == 1 and data.datafit(0).X is data.datafit(None).X is moved[0]
    cpu = MemoryProblems(L1LogisticOBA(), X_host, y, None)
    assert data.scale == cpu.scale != 1.0
    solved = cpu.columns.take(cp.asnumpy(data.X.toarray() if sparse else data.X))
    np.testing.assert_allclose(solved, cpu.X.toarray() if sparse else cpu.X, rtol=1e-12,
                               atol=1e-12)                 # the CPU's, on its used columns
    assert data.advice() == cpu.advice()
    np.testing.assert_array_equal(X_host.toarray() if sparse else X_host, X)   # untouched


def test_l1_logistic_oba_float32_on_the_gpu(cupy_backend):
    cp = cupy_backend
    rng = np.random.default_rng(2)
    X, y = _problem(rng, n=70, d=8, dtype=np.float32)
    cpu = L1LogisticOBA(C=1.0, tol=1e-8).fit(X, y)
    gpu = L1LogisticOBA(C=1.0, tol=1e-8, device="cuda").fit(cp.asarray(X), y)
    assert gpu.coef_.dtype == np.float32
    np.testing.assert_allclose(gpu.coef_, cpu.coef_, rtol=1e-4, atol=1e-4)
    assert gpu.decision_function(cp.asarray(X)).dtype == np.float32


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")   # the stand-in's NumPy
@pytest.mark.parametrize("sparse", [False, True])
def test_a_device_fit_that_long_rows_hold_back_names_them(cupy_backend, sparse):
    """As on the CPU: a solve that stops at max_iter on rows of very different lengths
    names the long rows (their lengths computed on the device, float32 squares summed in
    float64), in a fit, a path and a cross-validation; rows of weight 0 are not named."""
    from sparsekit import L1LogisticOBACV, l1_logistic_path
    from sparsekit.linear_model._device_input import device_row_sq_norms
    from test_l1_logistic import _long_rows

    cp = cupy_backend
    X, y = _long_rows()
    Xd = _device(cp, X, sparse)
    named = "; X[65], X[70] and X[131] are up to "
    for fit in (lambda: L1LogisticOBA(C=0.15, max_iter=10, device="cuda").fit(Xd, y),
                lambda: l1_logistic_path(Xd, y, Cs=[0.15], max_iter=10, device="cuda"),
                lambda: L1LogisticOBACV(Cs=[0.15], cv=2, max_iter=10,
                                        device="cuda").fit(Xd, y)):
        with pytest.warns(ConvergenceWarning) as record:
            fit()
        assert any(named in str(w.message) for w in record)
    weights = np.ones(len(y))
    weights[70] = 0.0
    with pytest.warns(ConvergenceWarning) as record:
        L1LogisticOBA(C=0.15, max_iter=10, device="cuda").fit(Xd, y, sample_weight=weights)
    assert "; X[65] and X[131] are up to " in str(record[0].message)
    big = np.array([[3e20, 4e20], [1.0, 0.0]], dtype=np.float32)   # squares past float32's
    np.testing.assert_allclose(device_row_sq_norms(_device(cp, big, sparse)), [2.5e41, 1.0],
                               rtol=1e-6)


@pytest.mark.filterwarnings("ignore:overflow encountered in exp")   # the stand-in's NumPy
@pytest.mark.parametrize("sparse", [False, True])
def test_a_device_fit_on_large_entries_advises_scaling_them(cupy_backend, sparse):
    """As on the CPU: a solve that stops at max_iter on large entries (their squares and
    counts summed on the device) advises scaling X's columns, in a fit and a
    cross-validation; rows of weight 0 do not count."""
    from sparsekit import L1LogisticOBACV
    from sparsekit.linear_model._device_input import device_scale_sums
    from sparsekit.linear_model._l1_advice import large_entries
    from sparsekit.utils._rows import weighted_scale_sums
    from test_l1_logistic import _large_entries

    cp = cupy_backend
    X, y = _large_entries()
    Xd = _device(cp, X, sparse)
    ones = np.ones(X.shape[0])
    np.testing.assert_allclose(device_scale_sums(Xd, ones), weighted_scale_sums(X, ones),
                               rtol=1e-12)
    assert device_scale_sums(Xd, ones)[1] == np.count_nonzero(X)
    assert large_entries(Xd) == large_entries(X)
    for fit in (lambda: L1LogisticOBA(max_iter=2, device="cuda").fit(Xd, y),
                lambda: L1LogisticOBACV(Cs=[1.0], cv=2, max_iter=2, device="cuda").fit(Xd, y)):
        with pytest.warns(ConvergenceWarning) as record:
            fit()
        assert any(large_entries(X) in str(w.message) for w in record)
    small = X / 300.0
    small[:5] *= 1e3
    weights = np.ones(len(y))
    weights[:5] = 0.0
    assert large_entries(_device(cp, small, sparse), weights) is None
    assert large_entries(_device(cp, small, sparse)) is not None


def test_l1_logistic_oba_device_input_errors(cupy_backend):
    cp = cupy_backend
    X = cp.asarray(np.random.default_rng(3).normal(size=(20, 3)))
    y = np.arange(20) % 2
    with pytest.raises(TypeError, match="device='cpu'"):
        L1LogisticOBA().fit(X, y)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        L1LogisticOBA(device="cuda").fit(bad, y)
    with pytest.raises(ValueError, match=r"y must have shape \(20,\)"):
        L1LogisticOBA(device="cuda").fit(X, y[:5])
    with pytest.raises(ValueError, match="2D array"):
        L1LogisticOBA(device="cuda").fit(X[0], y)
    model = L1LogisticOBA(device="cuda").fit(X, y)
    with pytest.raises(ValueError, match="expecting 3 features"):
        model.decision_function(X[:, :2])
    with pytest.warns(DataConversionWarning):      # a column of labels, as for host X
        column = L1LogisticOBA(device="cuda").fit(X, y.reshape(-1, 1))
    np.testing.assert_array_equal(column.coef_, model.coef_)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("polytope", ["simplex", "budget", "at_least_one"])
@pytest.mark.parametrize("units", [1.0, 1e60])
def test_device_active_rows_match_cpu(cupy_backend, sparse, polytope, units):
    """Newton-CG's Hessian products on the GPU: the same active rows and products as the
    CPU's (both in float32, on the rows divided by the weight scale: X in units of 1e60
    would overflow float32)."""
    from sparsekit._cython._projections import POLYTOPE_CODES
    from sparsekit.gpu.datafits import DeviceActiveRows
    from sparsekit.losses._fenchel_young_datafit import ActiveRows

    cp = cupy_backend
    rng = np.random.default_rng(4)
    X, _ = _problem(rng, n=50, d=6, density=0.6 if sparse else None)
    sw = rng.uniform(0.0, 2.0, 50)
    sw[:3] = 0.0
    W, b = rng.normal(size=(6, 4)), rng.normal(size=4)
    budget = 2.0
    X, W = X * units, W / units
    Xh = sp.csr_matrix(X) if sparse else X
    cpu = ActiveRows(Xh, Xh, sw, W, b, polytope, POLYTOPE_CODES[polytope], budget, 0.1, units)
    gpu = DeviceActiveRows(_device(cp, X, sparse), cp.asarray(sw), W, b, polytope, budget,
                           0.1, units)
    assert gpu.n_active == cpu.n_active > 0
    V, c = rng.normal(size=(6, 4)), rng.normal(size=4)
    for got, want in zip(gpu.product(V, c), cpu.product(V, c)):
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("sparse", [False, True])
def test_sparsemax_classifier_scales_alpha_on_the_gpu_as_on_the_cpu(cupy_backend, sparse):
    """alpha="scale" reads the weighted mean squared row norm of device X as of host X."""
    from sparsekit import SparsemaxClassifier
    from sparsekit.linear_model._sparsemax_problem import scale_sums

    rng = np.random.default_rng(6)
    X, _ = _problem(rng, n=40, d=5, density=0.6 if sparse else None)
    y, sw = rng.integers(0, 3, 40), rng.uniform(0.5, 2.0, 40)
    Xh = sp.csr_matrix(X) if sparse else X
    cpu = SparsemaxClassifier(tol=1e-4).fit(Xh, y, sample_weight=sw)
    gpu = SparsemaxClassifier(tol=1e-4, device="cuda").fit(_device(cupy_backend, X, sparse),
                                                           y, sample_weight=sw)
    expected = 5e-5 * np.average(np.sum(X ** 2, axis=1), weights=sw)
    assert gpu.alpha_ == pytest.approx(expected, rel=1e-12)
    assert cpu.alpha_ == pytest.approx(expected, rel=1e-12)
    # the weights' scale too: the sums over device X are those over host X
    np.testing.assert_allclose(scale_sums(_device(cupy_backend, X, sparse), sw),
                               scale_sums(Xh, sw), rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_sparsemax_classifier_log_proba_of_device_x(cupy_backend, sparse):
    """predict_log_proba of CuPy X: a CuPy array, the host's log probabilities (-inf at the
    exact zeros), without a warning."""
    from sparsekit import SparsemaxClassifier

    rng = np.random.default_rng(7)
    X, _ = _problem(rng, n=60, d=5, density=0.6 if sparse else None)
    y = np.argmax(X[:, :3], axis=1)
    Xh = sp.csr_matrix(X) if sparse else X
    clf = SparsemaxClassifier(alpha=1e-3).fit(Xh, y)
    expected = clf.predict_log_proba(Xh)
    assert np.isneginf(expected).any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = clf.predict_log_proba(_device(cupy_backend, X, sparse))
    assert type(got).__module__.split(".")[0] == "cupy"
    np.testing.assert_allclose(got.get(), expected, atol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", ["lbfgs", "newton-cg"])
def test_a_column_in_other_units_fits_on_the_gpu_as_on_the_cpu(cupy_backend, sparse, solver):
    """A column in other units: the device fit scales its solver weight by the same factor
    (newton-cg's Hessian rows divided column by column on the device) and fits the CPU's
    model."""
    from sparsekit import SparsemaxClassifier

    rng = np.random.default_rng(7)
    X, _ = _problem(rng, n=60, d=6, density=0.7 if sparse else None)
    X[:, 2] *= 1e6                                         # an amount in other units
    y = rng.integers(0, 3, 60)
    Xh = sp.csr_matrix(X) if sparse else X
    kw = dict(solver=solver, tol=1e-8)
    cpu = SparsemaxClassifier(**kw).fit(Xh, y)
    gpu = SparsemaxClassifier(**kw, device="cuda").fit(_device(cupy_backend, X, sparse), y)
    assert gpu.alpha_ == pytest.approx(cpu.alpha_, rel=1e-12)
    assert abs(gpu.n_iter_ - cpu.n_iter_) <= max(2, cpu.n_iter_ // 10)
    np.testing.assert_allclose(gpu.predict_proba(Xh), cpu.predict_proba(Xh), atol=1e-4)


@pytest.mark.parametrize("solver", ["lbfgs", "nqn", "newton-cg"])
@pytest.mark.parametrize("sparse", [False, True])
def test_sparsemax_classifier_on_the_gpu_matches_cpu(cupy_backend, solver, sparse):
    """Every solver fitted with device="cuda" (host X moved there, and CuPy X) gives the
    CPU fit's model; CuPy X in, CuPy scores, probabilities and labels out; the model
    predicts host input after set_params(device="cpu")."""
    from sparsekit import SparsemaxClassifier

    cp = cupy_backend
    rng = np.random.default_rng(5)
    X, _ = _problem(rng, n=40, d=5, density=0.6 if sparse else None)
    y = np.argmax(X[:, :3] + 0.5 * rng.normal(size=(40, 3)), axis=1) * 10
    Xh = sp.csr_matrix(X) if sparse else X
    params = {"alpha": 1e-1, "solver": solver, "tol": 1e-8, "max_iter": 2000}
    cpu = SparsemaxClassifier(**params).fit(Xh, y)
    for X_fit in (Xh, _device(cp, X, sparse)):
        gpu = SparsemaxClassifier(**params, device="cuda").fit(X_fit, y)
        assert type(gpu.coef_) is np.ndarray
        np.testing.assert_allclose(gpu.coef_, cpu.coef_, atol=1e-5)
        np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, atol=1e-5)
    Xd = _device(cp, X, sparse)
    proba = gpu.predict_proba(Xd)
    assert type(proba).__module__.split(".")[0] == "cupy"
    np.testing.assert_allclose(proba.get(), cpu.predict_proba(Xh), atol=1e-5)
    np.testing.assert_allclose(gpu.decision_function(Xd).get(), cpu.decision_function(Xh),
                               atol=1e-5)
    np.testing.assert_array_equal(gpu.predict(Xd).get(), cpu.predict(Xh))
    host = gpu.predict_proba(Xh)
    assert isinstance(host, np.ndarray)
    np.testing.assert_allclose(host, cpu.predict_proba(Xh), atol=1e-5)
    np.testing.assert_allclose(gpu.set_params(device="cpu").predict_proba(Xh),
                               cpu.predict_proba(Xh), atol=1e-5)
