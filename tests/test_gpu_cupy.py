"""The CuPy paths: import isolation, clear errors without CuPy/GPU, and CPU/GPU parity.

The parity tests take the ``cupy_backend`` fixture (tests/conftest.py): they run on the
NumPy-backed CuPy stand-in, whose kernels run in the CPU emulation, and again on real CuPy
(marked ``gpu``), which skips without a usable CUDA device.
"""
import sys
import types
import warnings

import numpy as np
import pytest

from _gpu import cupy_imports_of
from sparsekit.gpu import is_cupy_array, require_cupy
import scipy.sparse as sp




def test_importing_the_cpu_package_never_imports_cupy(tmp_path):
    assert cupy_imports_of("""
        import sparsekit
        for name in ("datasets", "projections", "losses", "optimize", "linear_model",
                     "utils", "gpu", "gpu.projections", "gpu.losses"):
            try:
                importlib.import_module("sparsekit." + name)
            except ImportError as exc:  # another module's extension not built yet
                if "cupy" in str(exc).lower():
                    raise
        for name in sparsekit.__all__ + dir(sparsekit):
            getattr(sparsekit, name, None)
        assert {"SparsemaxClassifier", "gpu", "projections"} <= set(dir(sparsekit))
        assert sparsekit.gpu.require_cupy is not None
    """, tmp_path) == "[] []"


def test_require_cupy_without_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` fail
    with pytest.raises(ImportError, match=r"pip install .\.\[gpu\]. in the sparsekit checkout"):
        require_cupy()
    from sparsekit.gpu import projections as gpu_projections

    with pytest.raises(ImportError, match="need CuPy"):
        gpu_projections.sparsemax(np.zeros((2, 3)))


def test_require_cupy_without_device(monkeypatch):
    def no_device():
        raise OSError("CUDA driver not found")

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=no_device))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(RuntimeError, match="no CUDA device is usable"):
        require_cupy()
    fake.cuda.runtime.getDeviceCount = lambda: 0
    with pytest.raises(RuntimeError, match="no CUDA device was found"):
        require_cupy()


def test_require_cupy_without_nvrtc(monkeypatch):
    """A device but no runtime compiler (CuPy installed without its [ctk] extra and no CUDA
    toolkit): a clear error that names NVRTC and the extras, instead of a compile failure
    at the first kernel."""
    def no_nvrtc():
        raise OSError("libnvrtc.so.12: cannot open shared object file")

    fake = types.ModuleType("cupy")
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
                                      nvrtc=types.SimpleNamespace(getVersion=no_nvrtc))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    with pytest.raises(RuntimeError, match=r"NVRTC.*libnvrtc.*gpu-cuda13"):
        require_cupy()
    fake.cuda.nvrtc.getVersion = lambda: (12, 4)
    assert require_cupy() is fake


def test_is_cupy_array_does_not_need_cupy():
    assert not is_cupy_array(np.zeros(3))
    assert not is_cupy_array([1.0])


def test_cpu_dispatch_to_cuda_without_cupy_is_a_clear_error(monkeypatch):
    projections = pytest.importorskip("sparsekit.projections")
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(ImportError, match="need CuPy"):
        projections.sparsemax(np.zeros((2, 3)), device="cuda")


# ----------------------------------------------------------------- parity (needs a GPU)
CASES = [
    ("simplex", {}), ("simplex", {"radius": 2.5}),
    ("capped_simplex", {"budget": 0.5}), ("capped_simplex", {"budget": 0.5, "weights": True}),
    ("knapsack", {"budget": 0.5, "weights": True}), ("budget", {"budget": 0.5}),
    ("box", {}), ("at_least_one", {}), ("at_most_one", {}),
]


def _rows(k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(12, k)) * 2
    Z[0] = 0.0                                     # all ties
    Z[1] = rng.integers(-2, 3, size=k) / 4         # many exact ties
    Z[2] += 1e6                                    # offset
    Z[3] *= 1e3                                    # huge spread
    Z[4] *= 1e-6                                   # tiny spread
    return Z.astype(dtype)


def _params(params, k, rng):
    out = dict(params)
    if out.get("weights") is True:
        out["weights"] = rng.uniform(0.5, 2.0, size=k)
    if "budget" in out:
        out["budget"] = out["budget"] * k  # scales with K (stays <= sum of weights)
    return out


@pytest.mark.parametrize("k", [1, 2, 10, 100, 1000, 20000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("polytope, params", CASES)
def test_gpu_projection_and_jvp_match_cpu(cupy_backend, k, dtype, polytope, params):
    import cupy as cp

    from sparsekit import projections

    rng = np.random.default_rng(k)
    params = _params(params, k, rng)
    Z = _rows(k, dtype)
    tol = 1e-9 if dtype == np.float64 else 1e-5
    P_gpu = projections.project(cp.asarray(Z), polytope, **params)
    assert is_cupy_array(P_gpu) and P_gpu.dtype == Z.dtype and P_gpu.shape == Z.shape
    P_cpu = projections.project(Z, polytope, **params)
    np.testing.assert_allclose(P_gpu.get(), P_cpu, atol=tol * max(1.0, k / 100))
    V = rng.normal(size=Z.shape).astype(dtype)
    J_gpu = projections.jvp(cp.asarray(Z), cp.asarray(V), polytope, **params)
    J_cpu = projections.jvp(Z, V, polytope, **params)
    # the Jacobian jumps at ties/kinks (rows 0-4); compare it on the generic rows
    np.testing.assert_allclose(J_gpu.get()[5:], J_cpu[5:], atol=1e-4)


@pytest.mark.parametrize("k, kernel, block", [(1, "project_simplex_warp_f64", 256),
                                               (256, "project_simplex_warp_f64", 256),
                                               (257, "project_simplex_f64", 256),
                                               (20000, "project_simplex_f64", 256)])
def test_gpu_rows_of_at_most_256_entries_get_a_warp_each(monkeypatch, k, kernel, block):
    """Short rows go to the one-warp-per-row kernels, eight rows to a block; longer rows
    get a block each (the stand-in's launches, recorded)."""
    import _cupy_standin

    from sparsekit.gpu import _kernels, projections as gpu_projections

    cp = _cupy_standin.install(monkeypatch)
    _kernels._module.cache_clear()
    launched = []
    call = _cupy_standin.RawKernel.__call__
    monkeypatch.setattr(_cupy_standin.RawKernel, "__call__",
                        lambda self, grid, blk, args, **kw: (
                            launched.append((self.name, grid, blk)),
                            call(self, grid, blk, args, **kw))[1])
    Z = cp.asarray(np.vstack([_rows(k, np.float64)] * 2)[:17])
    gpu_projections.project(Z, "simplex")
    _kernels._module.cache_clear()
    rows_per_block = 8 if "warp" in kernel else 1
    assert launched == [(kernel, (-(-17 // rows_per_block),), (block,))]


@pytest.mark.parametrize("k, chunk", [(300, 64), (257, 256), (4000, 1000), (1, 64)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_long_simplex_rows_split_among_blocks_match_cpu(monkeypatch, cupy_backend, k,
                                                            chunk, dtype):
    """Few long rows, several blocks each (the thresholds lowered so that the stand-in runs
    them): the CPU projection and thresholds on ties, offsets, huge and tiny spreads, a row
    with one dominant entry, chunks that do not divide the row; non-finite entries flagged."""
    import cupy as cp

    from sparsekit import projections
    from sparsekit.gpu import projections as gpu_projections

    monkeypatch.setattr(gpu_projections, "SPLIT_MIN_COLS", 1)
    monkeypatch.setattr(gpu_projections, "SPLIT_CHUNK", chunk)
    Z = _rows(k, dtype)
    Z[6, :] = -1e3
    Z[6, k // 2] = 5.0                               # one entry takes the whole mass
    assert gpu_projections.split_rows(*Z.shape)
    for radius in (1.0, 0.37 * k):
        P_gpu, tau_gpu, _, _ = gpu_projections.project_with_tau(cp.asarray(Z), "simplex",
                                                                {"radius": radius})
        P_cpu = projections.project(Z, "simplex", radius=radius)
        tol = 1e-9 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(P_gpu.get(), P_cpu, atol=tol * max(1.0, radius))
        np.testing.assert_allclose(P_gpu.get().sum(axis=1), radius, rtol=tol * 10)
        # tau: the threshold of the unshifted row, P = max(z - tau, 0)
        np.testing.assert_allclose(np.maximum(Z - tau_gpu.get()[:, None], 0.0), P_gpu.get(),
                                   atol=tol * max(1.0, radius) * 10)
    bad = Z.copy()
    bad[2, -1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        gpu_projections.project(cp.asarray(bad), "simplex")


@pytest.mark.parametrize("n, split", [(1, True), (128, True), (129, False)])
def test_gpu_few_long_simplex_rows_get_several_blocks(monkeypatch, n, split):
    """Rows of 65,536 entries or more, at most 128 of them: chunks of 16,384 entries with
    a block each, one launch pair per pass until no row is pending; more rows: a block
    each (the stand-in's launches, recorded; rows of 65,536 ones)."""
    import _cupy_standin

    from sparsekit.gpu import _kernels, projections as gpu_projections

    cp = _cupy_standin.install(monkeypatch)
    _kernels._module.cache_clear()
    launched = []
    monkeypatch.setattr(_cupy_standin.RawKernel, "__call__",
                        lambda self, grid, blk, args, **kw: launched.append(self.name))
    monkeypatch.setattr(gpu_projections, "require_cupy", lambda: cp)
    assert gpu_projections.split_rows(n, 65536) is split
    assert not gpu_projections.split_rows(1, 65535)
    if split:   # the launches only (the kernels are not run: pending stays 0)
        Z = cp.asarray(np.ones((n, 65536)))
        P, tau = cp.empty(Z.shape), cp.empty(n)
        gpu_projections._project_simplex_split(Z, P, tau, 1.0, cp.zeros(1, dtype=np.int32))
        assert launched == ["simplex_split_max_f64", "simplex_split_start_f64",
                            "simplex_split_sums_f64", "simplex_split_step_f64",
                            "simplex_split_write_f64"]
    _kernels._module.cache_clear()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_named_functions_and_1d_rows(cupy_backend, dtype):
    import cupy as cp

    from sparsekit import projections
    from sparsekit.gpu import projections as gp

    Z = _rows(50, dtype, seed=1)
    Zd = cp.asarray(Z)
    w = np.linspace(0.5, 2.0, 50)
    pairs = [
        (gp.sparsemax(Zd, method="sort"), projections.sparsemax(Z)),
        (projections.sparsemax(Zd), projections.sparsemax(Z)),
        (gp.project_simplex(Zd, radius=2.0), projections.project_simplex(Z, 2.0)),
        (gp.project_capped_simplex(Zd, 5.0, w), projections.project_capped_simplex(Z, 5.0, w)),
        (gp.project_knapsack(Zd, 5.0, w), projections.project_knapsack(Z, 5.0, w)),
        (gp.project_budget(Zd, 3.0), projections.project_budget(Z, 3.0)),
        (gp.project_box(Zd), projections.project_box(Z)),
        (gp.project_at_least_one(Zd), projections.project_at_least_one(Z)),
        (gp.project_at_most_one(Zd), projections.project_at_most_one(Z)),
        (projections.project_budget(Z, 3.0, device="cuda"), projections.project_budget(Z, 3.0)),
        (gp.sparsemax(Zd[3]), projections.sparsemax(Z[3])),
    ]
    for got, expected in pairs:
        assert is_cupy_array(got) and got.shape == expected.shape
        np.testing.assert_allclose(got.get(), expected, atol=1e-5)
    P = gp.sparsemax(Zd).get()
    assert (P == 0).any() and np.allclose(P.sum(axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_losses_match_cpu(cupy_backend, dtype):
    import cupy as cp

    from sparsekit import losses
    from sparsekit.gpu.losses import fenchel_young_loss_and_grad, sparsemax_loss_and_grad

    rng = np.random.default_rng(2)
    Z = _rows(300, dtype, seed=2)
    labels = rng.integers(0, 300, size=Z.shape[0])
    Q = rng.dirichlet(np.ones(300) * 0.1, size=Z.shape[0]).astype(dtype)
    rtol = 1e-9 if dtype == np.float64 else 1e-4
    for target in (Q, labels):
        loss, grad = sparsemax_loss_and_grad(cp.asarray(Z), cp.asarray(target))
        np.testing.assert_allclose(loss.get(), losses.sparsemax_loss(Z, target), rtol=rtol,
                                   atol=1e-6)
    loss_cpu, grad_cpu = losses.fenchel_young_loss_and_grad(Z, Q, "simplex")
    np.testing.assert_allclose(grad.get()[0], losses.fenchel_young_loss_and_grad(
        Z, np.eye(300, dtype=dtype)[labels], "simplex")[1][0], atol=1e-5)
    Y = (rng.random(size=Z.shape) < 0.01).astype(dtype)
    for polytope, params, target in (("simplex", {}, Q), ("box", {}, Y),
                                     ("budget", {"budget": 20.0}, Y),
                                     ("at_least_one", {}, np.maximum(Y, np.eye(300)[0]))):
        target = target.astype(dtype)
        l_gpu, g_gpu = fenchel_young_loss_and_grad(cp.asarray(Z), cp.asarray(target),
                                                   polytope, **params)
        l_cpu, g_cpu = losses.fenchel_young_loss_and_grad(Z, target, polytope, **params)
        np.testing.assert_allclose(l_gpu.get(), l_cpu, rtol=rtol * 10, atol=1e-4)
        np.testing.assert_allclose(g_gpu.get(), g_cpu, atol=1e-5)


def test_gpu_weighted_float32_is_solved_in_float64_as_on_the_cpu(cupy_backend):
    """Weights below the float32 range round to 0 there (the GPU once returned P = 0,
    tau = NaN); CuPy weights are accepted; the capped simplex's jvp is active at tau = 0."""
    import cupy as cp

    from sparsekit import losses, projections
    from sparsekit.gpu import projections as gp
    from sparsekit.gpu.losses import fenchel_young_loss_and_grad

    Z = np.array([[0.9, 0.8, 0.2]], dtype=np.float32)
    w = np.array([1.0, 1e-46, 1.0])
    for weights in (w, cp.asarray(w)):
        P = gp.project_capped_simplex(cp.asarray(Z), budget=1.0, weights=weights).get()
        assert P.dtype == np.float32
        np.testing.assert_allclose(P, projections.project_capped_simplex(Z, 1.0, w), atol=1e-7)
        np.testing.assert_allclose(P, [[0.85, 0.8, 0.15]], atol=1e-6)
    Y = np.array([[0.5, 0.0, 0.5]], dtype=np.float32)
    l_gpu, g_gpu = fenchel_young_loss_and_grad(cp.asarray(Z), cp.asarray(Y), "capped_simplex",
                                               budget=1.0, weights=w)
    l_cpu, g_cpu = losses.fenchel_young_loss_and_grad(Z, Y, "capped_simplex", budget=1.0,
                                                      weights=w)
    np.testing.assert_allclose(l_gpu.get(), l_cpu, rtol=1e-6)
    np.testing.assert_allclose(g_gpu.get(), g_cpu, atol=1e-6)
    Z2, V = np.array([[0.7, 0.3, -0.5]]), np.array([[1.0, 0.0, 0.0]])
    np.testing.assert_allclose(gp.jvp(cp.asarray(Z2), cp.asarray(V), "capped_simplex",
                                      budget=1.0).get(), [[0.5, -0.5, 0.0]], atol=1e-15)
    tiny = np.array([1e-50, 2e-50, 1e-50])    # the jvp uses the float64 weights and tau too
    Z3, V3 = np.array([[0.3, 0.2, 0.9]], np.float32), np.array([[1.0, 0.0, 0.0]], np.float32)
    JV = gp.jvp(cp.asarray(Z3), cp.asarray(V3), "capped_simplex", budget=1.5e-50, weights=tiny)
    assert JV.dtype == np.float32
    np.testing.assert_allclose(JV.get(), projections.jvp(Z3.astype(np.float64), V3,
                                                         "capped_simplex", budget=1.5e-50,
                                                         weights=tiny), atol=1e-6)


def test_gpu_bad_inputs_are_clear_errors(cupy_backend):
    import cupy as cp

    from sparsekit.gpu import projections as gp
    from sparsekit.gpu.losses import fenchel_young_loss_and_grad, sparsemax_loss_and_grad

    with pytest.raises(ValueError, match="NaN"):
        gp.sparsemax(cp.asarray([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="2-D"):
        gp.sparsemax(cp.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="at least one column"):
        gp.sparsemax(cp.zeros((2, 0)))
    with pytest.raises(ValueError, match="method"):
        gp.sparsemax(cp.zeros((2, 2)), method="bisect")
    with pytest.raises(ValueError, match="exceeds"):
        gp.project_capped_simplex(cp.zeros((2, 3)), budget=4.0)
    with pytest.raises(ValueError, match="outside"):
        sparsemax_loss_and_grad(cp.zeros((2, 3)), cp.ones((2, 3)))
    with pytest.raises(ValueError, match="budget must be at least"):
        fenchel_young_loss_and_grad(cp.zeros((1, 3)), cp.ones((1, 3)), "budget", budget=2.0)
    assert gp.sparsemax(cp.zeros((0, 4))).shape == (0, 4)


def test_gpu_fenchel_young_wrapper_with_numpy_for_cupy(monkeypatch):
    """``sparsekit.gpu.losses.fenchel_young_loss_and_grad`` around its kernels (NumPy in
    CuPy's place, the CPU projection in the kernel's): ``negated`` and the largest finite
    scores give the CPU function's values."""
    import sparsekit.gpu.losses as gpu_losses
    from sparsekit.losses import fenchel_young_loss_and_grad
    from sparsekit.projections import project
    from sparsekit.projections._dispatch import project_with_tau

    def numpy_rows(Z, name="Z", check_finite=True):
        Z = np.asarray(Z, dtype=np.float64)
        return np, np.atleast_2d(Z), Z.ndim == 1
    monkeypatch.setattr(gpu_losses, "as_device_rows", numpy_rows)
    monkeypatch.setattr(gpu_losses, "project_with_tau", project_with_tau)
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(6, 4)) * 2
    mask = [True, False, True, False]
    for polytope, params in (("simplex", {}), ("budget", {"budget": 2.0}), ("box", {}),
                             ("at_least_one", {})):
        for negated in (None, mask):
            Y = project(rng.normal(size=Z.shape), polytope, negated=negated, **params)
            cpu = fenchel_young_loss_and_grad(Z, Y, polytope, negated=negated, **params)
            gpu = gpu_losses.fenchel_young_loss_and_grad(Z, Y, polytope, negated=negated,
                                                         **params)
            np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(gpu[1], cpu[1], atol=1e-14)
    z = np.array([[1e308, -1e308]])
    for polytope in ("simplex", "box"):
        with np.errstate(over="ignore"):  # z - max z is -inf in NumPy (CuPy warns of none)
            loss, _ = gpu_losses.fenchel_young_loss_and_grad(z, project(z, polytope), polytope)
        np.testing.assert_array_equal(loss, [0.0])


def test_gpu_rejects_what_the_cpu_rejects(cupy_backend):
    """Complex scores (the CPU's TypeError) and a weighted row whose ratio z_i / w_i
    overflows (the CPU's ValueError), instead of a dropped imaginary part or NaN rows."""
    import cupy as cp

    from sparsekit import projections

    with pytest.raises(TypeError, match="real"):
        projections.project(cp.asarray([[1 + 5j, 0.5 - 3j, 0.0]]))
    Z = cp.asarray([[1e299, 0.5, 0.2]])
    with pytest.raises(ValueError, match="overflows"):
        projections.project(Z, "capped_simplex", budget=1.0, weights=np.array([1e-10, 1, 1]))
    with pytest.raises(ValueError, match="spread of a row's scores overflows"):
        projections.project(cp.asarray([[1.7e308, -1.7e308, 1.0]]), "capped_simplex",
                            budget=1.5)
    from sparsekit.gpu import losses

    with pytest.raises(ValueError, match=r"columns \[0\] negated"):
        losses.fenchel_young_loss_and_grad(cp.zeros((1, 4)), cp.asarray([[0.0, 1, 1, 0]]),
                                           "capped_simplex", negated=[True, False, False, False],
                                           budget=1.0)


# --- Details of the CuPy paths that tests/test_gpu_cupy.py leaves out: input conversion

def test_inlined_kernel_sources_hold_no_local_include():
    """What CuPy compiles (compiled by NVRTC in tests/test_gpu_kernels.py): every local
    ``#include "..."`` replaced by the file's text."""
    from sparsekit.gpu._kernels import KERNEL_DIR, kernel_source

    common = (KERNEL_DIR / "row_common.cu").read_text()
    for source in ("projections.cu", "sparsemax_loss.cu"):
        text = kernel_source(source)
        assert "#include \"" not in text
        assert common in text


def test_gpu_integer_and_strided_inputs_match_cpu(cupy_backend):
    """Integer scores are solved in float64 as on the CPU; views that are not
    C-contiguous (transposed, strided) give the values of their contiguous copies."""
    import cupy as cp

    from sparsekit import projections

    rng = np.random.default_rng(3)
    Zi = rng.integers(-3, 4, size=(7, 6))
    for polytope, params in (("simplex", {}), ("budget", {"budget": 2.0}),
                             ("capped_simplex", {"budget": 2.0, "weights": np.arange(1.0, 7)})):
        P = projections.project(cp.asarray(Zi), polytope, **params)
        assert P.dtype == np.float64
        np.testing.assert_allclose(P.get(), projections.project(Zi, polytope, **params),
                                   atol=1e-12)
    for dtype in (np.float32, np.float64):
        Z = (rng.normal(size=(9, 12)) * 2).astype(dtype)
        V = rng.normal(size=(12, 9)).astype(dtype)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        for view, vview in ((lambda A: A[:, ::2], lambda A: A.T[:, ::2]),
                            (lambda A: A.T, lambda A: A)):
            Zd, Vd = view(cp.asarray(Z)), vview(cp.asarray(V))
            Zh, Vh = np.ascontiguousarray(view(Z)), np.ascontiguousarray(vview(V))
            for polytope, params in (("simplex", {}), ("at_most_one", {})):
                P = projections.project(Zd, polytope, **params)
                np.testing.assert_allclose(P.get(), projections.project(Zh, polytope, **params),
                                           atol=tol)
                J = projections.jvp(Zd, Vd, polytope, **params)
                np.testing.assert_allclose(J.get(), projections.jvp(Zh, Vh, polytope, **params),
                                           atol=10 * tol)


def test_gpu_jvp_checks_V_as_the_cpu_does(cupy_backend):
    import cupy as cp

    from sparsekit import projections
    from sparsekit.gpu import projections as gp

    Z = np.array([[0.5, 0.2, -0.1, 0.9, 0.0]] * 3)
    for bad, match in ((np.zeros((3, 3)), "shape of Z"), (np.zeros((2, 5)), "shape of Z"),
                       (np.array([[0.0, np.nan, 0, 0, 0]] * 3), "NaN"),
                       (np.array([[0.0, 1, 0, np.inf, 0]] * 3), "NaN or infinity")):
        with pytest.raises(ValueError, match=match):
            projections.jvp(Z, bad, "simplex")           # the CPU's error ...
        with pytest.raises(ValueError, match=match):
            gp.jvp(cp.asarray(Z), cp.asarray(bad), "simplex")   # ... on the GPU too
    with pytest.raises(TypeError, match="real"):
        gp.jvp(cp.asarray(Z), cp.asarray(Z + 1j), "simplex")
    Vi = np.arange(15).reshape(3, 5)
    np.testing.assert_allclose(gp.jvp(cp.asarray(Z), cp.asarray(Vi), "budget", budget=1.0).get(),
                               projections.jvp(Z, Vi, "budget", budget=1.0), atol=1e-12)
    assert gp.jvp(cp.zeros((0, 4)), cp.zeros((0, 4))).shape == (0, 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_sparsemax_loss_targets_and_results(cupy_backend, dtype):
    """Labels are checked as on the CPU; a 1-D row gives a float; float64 targets are
    rounded to the scores' dtype; the loss is float64 and the gradient in Z's dtype."""
    import cupy as cp

    from sparsekit import losses
    from sparsekit.gpu.losses import sparsemax_loss_and_grad

    rng = np.random.default_rng(4)
    Z = (rng.normal(size=(5, 4)) * 2).astype(dtype)
    for labels, match in ((np.array([0, 1, 4, 2, 0]), "labels must lie"),
                          (np.array([0, -1, 3, 2, 0]), "labels must lie"),
                          (np.array([0, 1, 2]), "labels for 5 rows")):
        with pytest.raises(ValueError, match=match):
            losses.sparsemax_loss(Z, labels)
        with pytest.raises(ValueError, match=match):
            sparsemax_loss_and_grad(cp.asarray(Z), cp.asarray(labels))
    Q = rng.dirichlet(np.ones(4), size=5)              # float64 targets
    loss, grad = sparsemax_loss_and_grad(cp.asarray(Z), cp.asarray(Q))
    assert loss.dtype == np.float64 and grad.dtype == dtype and loss.shape == (5,)
    rtol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(loss.get(), losses.sparsemax_loss(Z, Q), rtol=rtol, atol=1e-6)
    np.testing.assert_allclose(grad.get(), losses.fenchel_young_loss_and_grad(Z, Q)[1],
                               atol=1e-6)
    one, g1 = sparsemax_loss_and_grad(cp.asarray(Z[2]), cp.asarray(Q[2]))
    assert isinstance(one, float) and g1.shape == (4,)
    np.testing.assert_allclose(one, losses.sparsemax_loss(Z[2], Q[2]), rtol=rtol, atol=1e-6)
    loss0, grad0 = sparsemax_loss_and_grad(cp.zeros((0, 4), dtype), cp.zeros((0, 4), dtype))
    assert loss0.shape == (0,) and grad0.shape == (0, 4)


def test_gpu_fenchel_young_dtypes_and_large_offsets(cupy_backend):
    """The loss is float64 and the gradient in Z's dtype (also for a weighted float32
    problem, solved in float64); simplex scores far from 0 are shifted by the row max
    before the loss is accumulated, as on the CPU."""
    import cupy as cp

    from sparsekit import losses
    from sparsekit.gpu.losses import fenchel_young_loss_and_grad

    rng = np.random.default_rng(5)
    Z = (rng.normal(size=(6, 5)) * 2).astype(np.float32)
    Y = np.zeros((6, 5), np.float32)
    Y[np.arange(6), rng.integers(0, 5, 6)] = 1
    w = np.linspace(0.5, 2.0, 5)
    capped = np.zeros_like(Y)
    capped[:, 4] = 0.5                                  # w.y = 1
    for polytope, params, target in (
            ("capped_simplex", {"budget": 1.0, "weights": w}, capped),
            ("knapsack", {"budget": 1.0, "weights": w}, 0.5 * Y),
            ("at_most_one", {}, Y)):
        l_gpu, g_gpu = fenchel_young_loss_and_grad(cp.asarray(Z), cp.asarray(target),
                                                   polytope, **params)
        l_cpu, g_cpu = losses.fenchel_young_loss_and_grad(Z, target, polytope, **params)
        assert l_gpu.dtype == np.float64 and g_gpu.dtype == np.float32 == g_cpu.dtype
        np.testing.assert_allclose(l_gpu.get(), l_cpu, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_gpu.get(), g_cpu, atol=1e-6)
    # a weighted float32 problem is solved, and its targets checked, in float64 (tol 1e-6)
    off = np.array([[0.5, 0.250025, 0.0]], np.float32)     # w.y = 1 + 5e-5
    w3 = np.array([1.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="outside"):
        losses.fenchel_young_loss_and_grad(Z[:1, :3], off, "capped_simplex", budget=1.0,
                                           weights=w3)
    with pytest.raises(ValueError, match="outside"):
        fenchel_young_loss_and_grad(cp.asarray(Z[:1, :3]), cp.asarray(off), "capped_simplex",
                                    budget=1.0, weights=w3)
    # float64 scores near 1e15 (multiples of 1/8, exact there) and simplex targets
    Zb = 1e15 + rng.integers(-16, 17, size=(6, 5)) / 8
    Q = rng.dirichlet(np.ones(5), size=6)
    l_gpu, g_gpu = fenchel_young_loss_and_grad(cp.asarray(Zb), cp.asarray(Q), "simplex")
    l_cpu, g_cpu = losses.fenchel_young_loss_and_grad(Zb, Q, "simplex")
    np.testing.assert_allclose(l_gpu.get(), l_cpu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(g_gpu.get(), g_cpu, atol=1e-12)
    Zs = (1e6 + rng.integers(-64, 65, size=(6, 5)) / 16).astype(np.float32)
    l_gpu = fenchel_young_loss_and_grad(cp.asarray(Zs), cp.asarray(Q), "simplex")[0]
    np.testing.assert_allclose(l_gpu.get(), losses.fenchel_young_loss(Zs, Q, "simplex"),
                               rtol=1e-4, atol=1e-4)


def _classifier_problem(polytope, dtype, rng, n=40, d=6, k=5):
    Xd = rng.normal(size=(n, d)).astype(dtype)
    if polytope == "simplex":
        Y = rng.dirichlet(np.ones(k) * 0.3, size=n)
    else:
        Y = (rng.random((n, k)) < 0.3).astype(float)
        Y[np.arange(n), rng.integers(0, k, n)] = 1     # at least one label (<= 2 in budget)
        if polytope == "budget":
            Y[:, 2:] = 0
            Y[np.arange(n), rng.integers(0, 2, n)] = 1
    sw = rng.uniform(0.0, 3.0, n).astype(dtype)
    sw[:4] = 0.0
    return Xd, sp.csr_matrix(Y), sw


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("polytope, budget", [("simplex", 1.0), ("budget", 2.0), ("box", 1.0),
                                              ("at_least_one", 1.0)])
def test_gpu_classifier_data_term_matches_cpu(cupy_backend, polytope, budget, dtype):
    """``SparsemaxClassifier(device="cuda")``'s data term (weighted loss sum and its
    gradient in W and b) against the CPU kernel, dense and CSR X, scores far from 0; both
    write the gradient in W into an ``out`` given."""
    from sparsekit._cython._projections import POLYTOPE_CODES
    from sparsekit.losses._fenchel_young_datafit import cpu_data_term, gpu_data_term

    rng = np.random.default_rng(6)
    Xd, Y, sw = _classifier_problem(polytope, dtype, rng)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for X in (Xd, sp.csr_matrix(Xd)):
        cpu = cpu_data_term(X, Y, sw, POLYTOPE_CODES[polytope], budget)
        gpu = gpu_data_term(X, Y, sw, polytope, budget)
        for scale in (0.3, 3.0):
            W = (rng.normal(size=(Xd.shape[1], Y.shape[1])) * scale).astype(dtype)
            b = (rng.normal(size=Y.shape[1]) * scale + 2.0).astype(dtype)
            l_cpu, gW_cpu, gb_cpu = (np.copy(a) for a in cpu(W, b))
            l_gpu, gW_gpu, gb_gpu = gpu(W, b)
            assert isinstance(gW_gpu, np.ndarray) and gW_gpu.shape == gW_cpu.shape
            np.testing.assert_allclose(l_gpu, l_cpu, rtol=tol)
            np.testing.assert_allclose(gW_gpu, gW_cpu, rtol=tol, atol=tol * np.abs(gW_cpu).max())
            np.testing.assert_allclose(gb_gpu, gb_cpu, rtol=tol, atol=tol * np.abs(gb_cpu).max())
            for term in (cpu, gpu):          # ``out`` receives the gradient in W
                out = np.empty_like(gW_cpu)
                assert term(W, b, out=out)[1] is out
                np.testing.assert_allclose(out, gW_cpu, rtol=tol,
                                           atol=tol * np.abs(gW_cpu).max())
        if polytope == "simplex":   # W = 0, intercepts far from 0 (exact): shift first
            far = {np.float32: 1e6, np.float64: 1e12}[dtype]
            W = np.zeros((Xd.shape[1], Y.shape[1]), dtype)
            b = (far + rng.integers(-16, 17, size=Y.shape[1]) / 16).astype(dtype)
            l_cpu, l_gpu = float(cpu(W, b)[0]), gpu(W, b)[0]
            np.testing.assert_allclose(l_gpu, l_cpu, rtol=tol)


def test_gpu_classifier_checks_the_solvers_host_memory(cupy_backend, monkeypatch):
    """On a GPU the solver's arrays are on the host too: auto runs Newton-CG where L-BFGS's
    would not fit there, and a named solver that would not fit is refused, SDCA (CPU only)
    not offered."""
    import sparsekit.linear_model._sparsemax_solvers as solvers
    from sparsekit.linear_model import SparsemaxClassifier

    rng = np.random.default_rng(8)
    X, y = rng.normal(size=(60, 4)), np.arange(60) % 3
    weights = (4 + 1) * 3 * 8
    monkeypatch.setattr(solvers, "physical_memory", lambda: 20 * weights)
    assert SparsemaxClassifier(device="cuda").fit(X, y).solver_ == "newton-cg"
    with pytest.raises(ValueError, match=r"solver='lbfgs' would hold .* GiB: use "
                                         r"solver='newton-cg' \(about 14 such arrays\), or "
                                         r"hash"):
        SparsemaxClassifier(device="cuda", solver="lbfgs").fit(X, y)


def test_gpu_classifier_fit_and_predict_proba_match_cpu(cupy_backend):
    """Fit on the GPU and on the CPU (sample weights, negated labels: IMPLY); the GPU's
    ``predict_proba`` is the CPU's for the same model."""
    from sparsekit.linear_model import SparsemaxClassifier
    from sparsekit.projections import project

    rng = np.random.default_rng(8)
    X = rng.normal(size=(60, 4))
    Y = (rng.random((60, 3)) < 0.5).astype(int)
    Y[(Y[:, 0] == 1) & (Y[:, 1:].sum(axis=1) == 0), 1] = 1    # rows of IMPLY(y0 => y1 or y2)
    sw = rng.uniform(0.2, 3.0, 60)
    fits = {}
    for device in ("cpu", "cuda"):
        clf = SparsemaxClassifier(alpha=1e-2, polytope="at_least_one",
                                  negated=[True, False, False], tol=1e-10, max_iter=500,
                                  device=device)
        fits[device] = clf.fit(X, Y, sample_weight=sw)
    cpu, gpu = fits["cpu"], fits["cuda"]
    np.testing.assert_allclose(gpu.coef_, cpu.coef_, atol=1e-4)
    np.testing.assert_allclose(gpu.intercept_, cpu.intercept_, atol=1e-4)
    X2 = rng.normal(size=(200, 4)) * 10                 # scores where the flip matters
    proba = gpu.predict_proba(X2)
    assert isinstance(proba, np.ndarray)
    scores = X2 @ gpu.coef_.T + gpu.intercept_
    assert not np.allclose(proba, project(scores, "at_least_one"))
    np.testing.assert_allclose(proba, project(scores, "at_least_one", negated=[1, 0, 0]),
                               atol=1e-12)
    np.testing.assert_allclose(proba, gpu.set_params(device="cpu").predict_proba(X2),
                               atol=1e-12)
    proba = gpu.set_params(device="cuda").predict_proba(X)
    assert (proba[:, 0] >= 0).all()
    np.testing.assert_allclose(proba, cpu.predict_proba(X), atol=1e-3)


@pytest.mark.parametrize("polytope", ["simplex", "box"])
@pytest.mark.parametrize("on_device", [False, True])
def test_gpu_classifier_label_sets_threshold_matches_cpu(cupy_backend, monkeypatch,
                                                         on_device, polytope):
    """Label sets on the simplex and the box: the decision threshold found on the
    training rows' projections (computed on the device, in blocks) is the CPU's."""
    from sparsekit.linear_model import SparsemaxClassifier
    from sparsekit.metrics import _thresholds

    rng = np.random.default_rng(9)
    X = rng.normal(size=(90, 5))
    scores = X @ rng.normal(size=(5, 4)) + rng.normal(size=(90, 4))
    Y = (scores > 0.5).astype(int)
    Y[np.arange(90), scores.argmax(axis=1)] = 1
    cpu = SparsemaxClassifier(polytope=polytope, tol=1e-10, max_iter=2000).fit(X, Y)
    monkeypatch.setattr(_thresholds, "SCORE_BLOCK", 4 * 7)   # blocks of 7 rows
    gpu = SparsemaxClassifier(polytope=polytope, tol=1e-10, max_iter=2000,
                              device="cuda").fit(
        cupy_backend.asarray(X) if on_device else X, Y)
    assert cpu.threshold_ > 0
    np.testing.assert_allclose(gpu.threshold_, cpu.threshold_, atol=1e-6)
    predicted = gpu.predict(cupy_backend.asarray(X) if on_device else X)
    np.testing.assert_array_equal(predicted.get() if on_device else predicted,
                                  cpu.predict(X))


def test_gpu_fits_leave_nothing_for_the_cyclic_garbage_collector(cupy_backend):
    """What a device fit makes (its datafits, kernels' launchers, device buffers) is freed
    once nothing refers to it, not when Python's cyclic garbage collector next runs."""
    from _memory import left_for_the_collector
    from sparsekit import ExtremeSoftmaxSGD, L1LogisticOBA, SparsemaxClassifier

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 8)), np.arange(60) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for est in (L1LogisticOBA(device="cuda"), L1LogisticOBA(device="cuda", l1_ratio=0.5),
                    L1LogisticOBA(device="cuda", multiclass="multinomial"),
                    SparsemaxClassifier(device="cuda", max_iter=20),
                    ExtremeSoftmaxSGD(device="cuda", random_state=0)):
            assert not left_for_the_collector(lambda: est.fit(X, y)), est
