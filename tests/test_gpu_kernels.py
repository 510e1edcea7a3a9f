"""The CUDA sources of sparsekit/gpu/kernels, checked without a GPU.

1. Every ``.cu`` file compiles with nvcc for sm_80 and sm_90 and, inlined as CuPy compiles
   it, with NVRTC (pip's ``nvidia-cuda-nvrtc-cu12``), warnings as errors.
2. The CPU emulation of the kernels (tests/_cuda_emulation.py: one OS thread or one fiber
   per CUDA thread, real barriers) runs every kernel: its results against
   ``sparsekit.projections`` and brute-force references, multi-warp blocks against one
   warp, and once under ThreadSanitizer, which must also report a race for every barrier
   taken out of the sources.

Under ``CI`` a missing tool (nvcc, NVRTC, a C++20 compiler, ThreadSanitizer) is a failure,
elsewhere a skip.
"""
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import _cuda_emulation
import sparsekit
from _gpu import CU_FILES, KERNEL_SOURCES, kernel_launches, run_every_kernel
from sparsekit.gpu._kernels import kernel_source

TESTS = Path(__file__).resolve().parent
ARCHS = ("80", "90")


def _missing(what):
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing on the CI machine")
    pytest.skip(f"{what} not installed")


# ---------------------------------------------------------------- 1. compilers
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("source", CU_FILES, ids=lambda p: p.name)
def test_cuda_source_compiles_with_nvcc(source, arch, tmp_path):
    if shutil.which("nvcc") is None:
        _missing("nvcc")
    result = subprocess.run(
        ["nvcc", "--ptx", f"-arch=sm_{arch}", "--std=c++14", "-Werror", "all-warnings",
         f"-I{source.parent}", str(source), "-o", str(tmp_path / "out.ptx")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    entries = (tmp_path / "out.ptx").read_text().count(".entry")
    assert entries == source.read_text().count("__global__")


def _nvrtc():
    try:
        import nvidia.cuda_nvrtc
    except ImportError:
        _missing("NVRTC (pip install nvidia-cuda-nvrtc-cu12)")
    lib_dir = Path(list(nvidia.cuda_nvrtc.__path__)[0]) / "lib"
    for builtins in glob.glob(str(lib_dir / "libnvrtc-builtins.so.*")):
        ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
    return ctypes.CDLL(str(lib_dir / "libnvrtc.so.12"))


def nvrtc_compile(lib, code, options):
    """(result code, compiler log, PTX) of NVRTC on ``code``."""
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), code.encode(), b"kernel.cu", 0, None,
                                  None) == 0
    try:
        argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), argv)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        ptx = b""
        if rc == 0:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, buf)
            ptx = buf.value
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, log.value.decode(), ptx.decode()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("source", KERNEL_SOURCES, ids=lambda p: p.name)
def test_cuda_source_compiles_with_nvrtc_as_cupy_does(source, arch):
    """The text CuPy compiles (local includes inlined) with the options sparsekit gives
    RawModule; NVRTC has no -Werror, so any line in its log (a warning) fails."""
    from sparsekit.gpu._kernels import COMPILE_OPTIONS

    lib = _nvrtc()
    code = kernel_source(source.name)
    assert "#include" not in code
    options = [*COMPILE_OPTIONS, f"--gpu-architecture=compute_{arch}"]
    rc, log, ptx = nvrtc_compile(lib, code, options)
    assert rc == 0 and log.strip() == "", log
    assert ptx.count(".entry") == code.count("__global__")
    # the check has teeth: a warning is seen
    rc, log, _ = nvrtc_compile(lib, "__global__ void f(int* a) { int x; a[0] = x; }", options)
    assert rc == 0 and "warning" in log


# ---------------------------------------------------------------- 2. the CPU emulation
@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    """{file name: EmulatedModule} of every kernel source."""
    if _cuda_emulation.compiler() is None:
        _missing("a C++ compiler")
    build = tmp_path_factory.mktemp("cuda_emulation")
    try:
        modules = _cuda_emulation.build_many([kernel_source(p.name) for p in KERNEL_SOURCES],
                                             build)
        return dict(zip([p.name for p in KERNEL_SOURCES], modules))
    except RuntimeError as exc:
        if "barrier" in str(exc) or "atomic_ref" in str(exc):
            _missing("a C++20 compiler")
        raise


class _WarpRows:
    """An emulated module whose row kernels launch as their one-warp-per-row twins."""

    def __init__(self, module):
        self._module = module

    def launch(self, name, grid, block, args, **kwargs):
        twin = f"{name[:-4]}_warp{name[-4:]}"
        if twin not in self._module.signatures:
            twin = name
        return self._module.launch(twin, grid, block, args, **kwargs)


@pytest.fixture(params=["block", "warp"])
def rows(request, emu):
    """``emu`` with the row kernels one block per row, or one warp per row."""
    return emu if request.param == "block" else {f: _WarpRows(m) for f, m in emu.items()}


def _sfx(dtype):
    return "f32" if np.dtype(dtype) == np.float32 else "f64"


def run_project(emu, Z, polytope, budget=1.0, weights=None, grid=3, block=32):
    """(P, tau) of the projection kernels; asserts that they flag no non-finite entry."""
    Z = np.ascontiguousarray(Z)
    n, k = Z.shape
    P = np.full_like(Z, np.nan)
    tau = np.full(n, np.nan)
    flag = np.zeros(1, dtype=np.int32)
    module = emu["projections.cu"]
    if polytope == "simplex":
        module.launch(f"project_simplex_{_sfx(Z.dtype)}", grid, block,
                      [Z, P, tau, np.int64(n), np.int64(k), np.float64(budget), flag])
    else:
        W = Z if weights is None else np.ascontiguousarray(weights, dtype=Z.dtype)
        module.launch(f"project_capped_{_sfx(Z.dtype)}", grid, block,
                      [Z, W, np.int32(weights is not None), P, tau, np.int64(n), np.int64(k),
                       np.float64(budget), np.int32(MODES[polytope]), flag])
    assert flag[0] == int(not np.isfinite(Z).all())
    return P, tau


def run_jvp(emu, P, tau, V, polytope, weights=None, block=32):
    n, k = P.shape
    out = np.full_like(P, np.nan)
    W = P if weights is None else np.ascontiguousarray(weights, dtype=P.dtype)
    emu["projections.cu"].launch(
        f"projection_jvp_{_sfx(P.dtype)}", 2, block,
        [P, np.ascontiguousarray(tau, np.float64), np.ascontiguousarray(V, P.dtype), W,
         np.int32(weights is not None), out, np.int64(n), np.int64(k),
         np.int32(polytope == "simplex"), np.int32(polytope in ("simplex", "capped_simplex"))])
    return out


def run_loss(emu, Z, Q, block=32):
    n, k = Z.shape
    G = np.full_like(Z, np.nan)
    loss = np.full(n, np.nan)
    flag = np.zeros(1, dtype=np.int32)
    emu["sparsemax_loss.cu"].launch(
        f"sparsemax_loss_grad_{_sfx(Z.dtype)}", 2, block,
        [Z, np.ascontiguousarray(Q, Z.dtype), G, loss, np.int64(n), np.int64(k), flag])
    assert flag[0] == int(not np.isfinite(Z).all())
    return loss, G


MODES = {"capped_simplex": 0, "knapsack": 1, "budget": 1, "at_most_one": 1,
         "at_least_one": 2, "box": 3}


def test_every_kernel_has_a_launch_case(emu):
    launched = {name for dtype in (np.float32, np.float64)
                for _, name, _, _ in kernel_launches(dtype, n=2, k=3)}
    assert launched == {name for m in emu.values() for name in m.signatures}


@pytest.mark.parametrize("k", [5, 5000])     # a row in the shared cache, and one read in place
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_emulated_kernels_flag_non_finite_entries(rows, k, bad):
    """The finiteness check of Z is the kernels' (no separate pass): any NaN or infinity
    in any row sets the flag, whatever the polytope; a finite Z leaves it clear."""
    Z = np.random.default_rng(0).normal(size=(3, k))
    Z[2, k - 1] = bad
    for polytope in ("simplex", "capped_simplex", "box"):
        run_project(rows, Z, polytope, budget=1.0)     # asserts the flag
    run_loss(rows, Z, np.full_like(Z, 1.0 / k))
    run_project(rows, np.nan_to_num(Z, posinf=1.0, neginf=-1.0), "simplex")


def test_emulated_launch_checks_arguments(emu):
    Z = np.zeros((2, 3))
    P, tau, flag = np.empty_like(Z), np.empty(2), np.zeros(1, dtype=np.int32)
    launch = emu["projections.cu"].launch
    with pytest.raises(TypeError, match="takes 7 arguments, got 5"):
        launch("project_simplex_f64", 1, 32, [Z, P, tau, np.int64(2), np.int64(3)])
    with pytest.raises(TypeError, match="must be a NumPy int64 scalar, got 2"):
        launch("project_simplex_f64", 1, 32, [Z, P, tau, 2, np.int64(3), np.float64(1), flag])
    with pytest.raises(TypeError, match="got an array of float32"):
        launch("project_simplex_f64", 1, 32, [Z.astype(np.float32), P, tau, np.int64(2),
                                             np.int64(3), np.float64(1), flag])
    with pytest.raises(TypeError, match="not C-contiguous"):
        launch("project_simplex_f64", 1, 32, [np.zeros((3, 2)).T, P, tau, np.int64(2),
                                             np.int64(3), np.float64(1), flag])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_multi_warp_blocks_in_os_threads_match_one_warp(emu, dtype):
    """Every kernel with blocks of three warps, each CUDA thread an OS thread, grid-stride
    over the rows: the results of one-warp blocks run as fibers (the reductions' order
    differs, so up to rounding)."""
    tol = 1e-12 if dtype == np.float64 else 1e-5
    one = run_every_kernel(emu, dtype, grid=4, block=32, threads=False, n=4, k=130)
    many = run_every_kernel(emu, dtype, grid=2, block=96, threads=True, n=4, k=130)
    for a, b in zip(one, many):
        for x, y in zip(a, b):
            assert np.isfinite(y).all()
            np.testing.assert_allclose(y, x, rtol=tol, atol=tol)


def test_fibers_switched_by_swapcontext_match_the_stack_switch(emu, tmp_path):
    """The fibers' portable switch (glibc's swapcontext, on machines other than x86-64)
    runs the kernels to the results of the default one, bit for bit (the same order): the
    loss's, whose block and warp reductions take both kinds of barrier."""
    file = "sparsemax_loss.cu"
    portable = {name: module for name, module in emu.items() if name != file}
    portable[file] = _cuda_emulation.build(kernel_source(file), tmp_path,
                                           defines=["SK_UCONTEXT"])
    for dtype in (np.float64, np.float32):
        fast = run_every_kernel(emu, dtype, grid=2, block=64, threads=False, n=4, k=40)
        slow = run_every_kernel(portable, dtype, grid=2, block=64, threads=False, n=4, k=40)
        for a, b in zip(fast, slow):
            for x, y in zip(a, b):
                assert np.isfinite(x).all()
                np.testing.assert_array_equal(y, x)


def _tsan(argv):
    runtime = _cuda_emulation.tsan_runtime()
    if runtime is None:
        _missing("ThreadSanitizer's runtime (libtsan)")
    code = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); import _gpu; "
            "_gpu.tsan_main(sys.argv[1:])")
    # the sparsekit this session imports (installed or built in place), never a source tree
    # that happens to be the working directory
    package_root = str(Path(sparsekit.__file__).resolve().parents[1])
    env = {**os.environ, "LD_PRELOAD": str(runtime), "PYTHONPATH": package_root,
           "TSAN_OPTIONS": "halt_on_error=1 exitcode=66 report_signal_unsafe=0"}
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, timeout=900, env=env, cwd=argv[0])


@pytest.fixture(scope="module")
def tsan_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tsan"))


def test_every_kernel_is_race_free_under_thread_sanitizer(tsan_dir):
    result = _tsan([tsan_dir])
    assert result.returncode == 0 and "ThreadSanitizer" not in result.stderr, \
        result.stderr[-3000:]
    assert "ran every kernel" in result.stdout


BARRIERS = [(p.name, i) for p in KERNEL_SOURCES
            for i in range(len(re.findall(r"__syncthreads\(\);", kernel_source(p.name))))]


@pytest.mark.parametrize("source, barrier", BARRIERS, ids=[f"{f}-{i}" for f, i in BARRIERS])
def test_removing_a_barrier_is_a_reported_race(tsan_dir, source, barrier):
    """Each ``__syncthreads()`` of each inlined source is needed: without it the run
    above reports a data race."""
    result = _tsan([tsan_dir, source, str(barrier)])
    assert result.returncode == 66 and "ThreadSanitizer: data race" in result.stderr, \
        (result.returncode, result.stderr[-2000:])


# ---------------------------------------------------------------- brute-force references
def sparsemax_sort(z):
    """Held et al. / Martins & Astudillo Algorithm 1, in float64 (radius r)."""
    return simplex_sort(z, 1.0)


def simplex_sort(z, r):
    z = np.asarray(z, dtype=np.float64)
    zmax = z.max()
    z = z - zmax  # shifted, as every accurate implementation must
    u = np.sort(z)[::-1]
    css = np.cumsum(u)
    ks = np.arange(1, z.size + 1)
    support = u - (css - r) / ks > 0
    kk = ks[support][-1]
    tau = (css[kk - 1] - r) / kk
    return np.maximum(z - tau, 0.0), tau + zmax


def capped_bisect(z, budget, w, mode):
    """clip(z - t w, 0, 1) with t by 200 bisection steps (mode as in the kernel)."""
    z = np.asarray(z, dtype=np.float64)
    g = lambda t: np.sum(w * np.clip(z - t * w, 0, 1)) - budget  # noqa: E731
    if mode == 3 or (mode == 1 and g(0.0) <= 0) or (mode == 2 and g(0.0) >= 0):
        return np.clip(z, 0, 1)
    lo, hi = np.min((z - 1) / w) - 1, np.max(z / w) + 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if g(mid) > 0 else (lo, mid)
    return np.clip(z - 0.5 * (lo + hi) * w, 0, 1)


def adversarial_rows(rng, k):
    rows = [
        rng.normal(size=k),
        np.zeros(k),                                   # all ties
        np.r_[np.full(k - 1, 3.0), 3.0 + 1e-9][:k],    # near-ties
        rng.normal(size=k) * 1e3,                      # huge spread
        rng.normal(size=k) * 1e-7,                     # tiny spread
        rng.integers(-2, 3, size=k).astype(float) / 4, # many exact ties
        rng.normal(size=k) + 1e6,                      # large offset
        -np.abs(rng.normal(size=k)) * 5,
    ]
    return np.array(rows)


KS = [1, 2, 3, 33, 500]


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_sparsemax_matches_sort_reference(rows, k, dtype):
    rng = np.random.default_rng(k)
    Z = adversarial_rows(rng, k).astype(dtype)
    P, tau = run_project(rows, Z, "simplex")
    tol = 1e-12 if dtype == np.float64 else 2e-6
    for z, p, t in zip(Z, P, tau):
        p_ref, t_ref = sparsemax_sort(z)
        np.testing.assert_allclose(p, p_ref, atol=tol, rtol=0)
        assert abs(t - t_ref) <= tol * max(1.0, abs(t_ref))
        assert abs(p.sum(dtype=np.float64) - 1) < (1e-12 if dtype == np.float64 else 1e-5)
        np.testing.assert_array_equal(p == 0, p_ref == 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_sparsemax_shift_invariant(rows, dtype):
    z = np.array([[0.3, 0.1, -0.2, 0.25]], dtype=np.float64)
    P0, _ = run_project(rows, z.astype(dtype), "simplex")
    P1, tau = run_project(rows, (z + 1e6).astype(dtype), "simplex")
    np.testing.assert_allclose(P1, P0, atol=0.1 if dtype == np.float32 else 1e-9)
    # exact: float32(z + 1e6) is the row the kernel sees; its sparsemax is that of the shift
    np.testing.assert_allclose(P1[0], sparsemax_sort((z + 1e6).astype(dtype)[0])[0],
                               atol=1e-6)
    assert np.isfinite(tau).all()


@pytest.mark.parametrize("radius", [0.5, 3.0])
def test_emulated_simplex_radius(rows, radius):
    Z = np.random.default_rng(0).normal(size=(5, 40))
    P, _ = run_project(rows, Z, "simplex", budget=radius)
    for z, p in zip(Z, P):
        np.testing.assert_allclose(p, simplex_sort(z, radius)[0], atol=1e-12)


@pytest.mark.parametrize("block", [64, 160])
def test_emulated_block_sizes_and_grid_stride(rows, block):
    Z = np.random.default_rng(1).normal(size=(7, 300))
    P, _ = run_project(rows, Z, "simplex", grid=2, block=block)
    np.testing.assert_allclose(P, [sparsemax_sort(z)[0] for z in Z], atol=1e-12)


@pytest.mark.parametrize("polytope, budget, weighted", [
    ("capped_simplex", 2.5, False), ("capped_simplex", 0.0, False),
    ("capped_simplex", 2.5, True), ("knapsack", 1.5, False), ("knapsack", 1.5, True),
    ("budget", 2.0, False), ("budget", 100.0, False), ("at_most_one", 1.0, False),
    ("at_least_one", 1.0, False), ("box", 1.0, False),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_capped_family_matches_bisection(rows, polytope, budget, weighted, dtype):
    rng = np.random.default_rng(7)
    for k in (1, 2, 37):
        Z = np.vstack([adversarial_rows(rng, k)[:6], rng.normal(size=(4, k)) * 2 + 0.5,
                       rng.uniform(-0.5, 1.5, size=(2, k))])
        Z = Z.astype(dtype)
        w = rng.uniform(0.5, 2.0, size=k) if weighted else None
        wd = np.ones(k) if w is None else w.astype(dtype).astype(np.float64)
        b = min(budget, wd.sum()) if polytope == "capped_simplex" else budget
        P, tau = run_project(rows, Z, polytope, budget=b, weights=w)
        tol = 1e-9 if dtype == np.float64 else 1e-5
        for z, p, t in zip(Z, P, tau):
            ref = capped_bisect(z, b, wd, MODES[polytope])
            np.testing.assert_allclose(p, ref, atol=tol * max(1, np.abs(z).max() / 1e3),
                                       err_msg=f"k={k} z={z}")
            np.testing.assert_allclose(p, np.clip(z.astype(np.float64) - t * wd, 0, 1),
                                       atol=tol)


def test_emulated_matches_cpu_package(rows):
    proj = pytest.importorskip("sparsekit.projections")
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(9, 50)) * 3
    w = rng.uniform(0.2, 3, size=50)
    cases = [("simplex", {}, 1.0, None), ("capped_simplex", {"budget": 4.0}, 4.0, None),
             ("capped_simplex", {"budget": 4.0, "weights": w}, 4.0, w),
             ("knapsack", {"budget": 3.0, "weights": w}, 3.0, w),
             ("budget", {"budget": 2.0}, 2.0, None), ("box", {}, 1.0, None),
             ("at_least_one", {}, 1.0, None), ("at_most_one", {}, 1.0, None)]
    for polytope, params, budget, weights in cases:
        P, tau = run_project(rows, Z, polytope, budget=budget, weights=weights)
        np.testing.assert_allclose(P, proj.project(Z, polytope, **params), atol=1e-10,
                                   err_msg=polytope)
        V = rng.normal(size=Z.shape)
        out = run_jvp(rows, P, tau, V, polytope, weights=weights)
        np.testing.assert_allclose(out, proj.jvp(Z, V, polytope, **params), atol=1e-10,
                                   err_msg=polytope)


def test_emulated_jvp_matches_finite_differences(rows):
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(4, 20)) * 2
    V = rng.normal(size=Z.shape)
    eps = 1e-7
    for polytope, budget in (("simplex", 1.0), ("capped_simplex", 3.0), ("budget", 1.5)):
        P, tau = run_project(rows, Z, polytope, budget=budget)
        out = run_jvp(rows, P, tau, V, polytope)
        Pp = run_project(rows, Z + eps * V, polytope, budget=budget)[0]
        Pm = run_project(rows, Z - eps * V, polytope, budget=budget)[0]
        np.testing.assert_allclose(out, (Pp - Pm) / (2 * eps), atol=1e-5, err_msg=polytope)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_sparsemax_loss_and_grad(rows, dtype):
    rng = np.random.default_rng(5)
    k = 45
    Z = (rng.normal(size=(6, k)) * 3).astype(dtype)
    Z[5] += 1e4
    Q = rng.dirichlet(np.ones(k) * 0.3, size=6)
    Q[0] = 0
    Q[0, 3] = 1
    loss, G = run_loss(rows, Z, Q.astype(dtype))
    for z, q, l, g in zip(Z.astype(np.float64), Q.astype(dtype).astype(np.float64), loss, G):
        p, _ = sparsemax_sort(z)
        zs = z - z.max()
        expected = 0.5 * np.sum((q - p) * (q + p - 2 * zs))  # Fenchel-Young form
        assert l >= -1e-12
        np.testing.assert_allclose(l, expected, rtol=1e-9 if dtype == np.float64 else 1e-5,
                                   atol=1e-10)
        np.testing.assert_allclose(g, p - q, atol=1e-12 if dtype == np.float64 else 1e-6)
    loss0, G0 = run_loss(rows, Z[:1], np.eye(k, dtype=dtype)[[int(np.argmax(Z[0]))]] * 0
                         + run_project(rows, Z[:1], "simplex")[0])
    np.testing.assert_allclose(loss0, 0.0, atol=1e-6)
    np.testing.assert_allclose(G0, 0.0, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_capped_family_keeps_its_constraints_at_huge_scores(rows, dtype):
    """Past 2^53 (2^24 in float32) unshifted scores lose the [0, 1] resolution: the kernel
    searches on scores shifted by their largest breakpoint (as the CPU kernel does)."""
    proj = pytest.importorskip("sparsekit.projections")
    big = 1e300 if dtype == np.float64 else 3e38
    for c in (1e16, 1e30, big):
        Z = np.array([[c, c, -c], [c, c / 2, -c], [-c, -c, -c]], dtype=dtype)
        for polytope, budget in (("budget", 1.0), ("capped_simplex", 1.0),
                                 ("at_least_one", 1.0)):
            P, tau = run_project(rows, Z, polytope, budget=budget)
            cpu = proj.project(Z, polytope, **({"budget": budget}
                                               if polytope != "at_least_one" else {}))
            np.testing.assert_allclose(P, cpu, atol=1e-6, err_msg=f"{polytope} {c:g}")
        np.testing.assert_allclose(run_project(rows, Z[:1], "budget")[0], [[0.5, 0.5, 0.0]])
        np.testing.assert_allclose(run_project(rows, Z[2:], "at_least_one")[0],
                                   [[1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


def test_emulated_loss_is_zero_not_nan_at_the_largest_finite_scores(rows):
    Z = np.array([[1e308, -1e308, 0.0]])
    loss, G = run_loss(rows, Z, np.array([[1.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(loss, [0.0])
    np.testing.assert_array_equal(G, [[0.0, 0.0, 0.0]])


@pytest.mark.parametrize("polytope", ["capped_simplex", "budget"])
def test_emulated_capped_keeps_resolution_far_below_the_top(rows, polytope):
    """Scores capped at 1 far above the answer (or a tiny weight, whose ratio z/w sets the
    shift) must not cost the [0, 1] resolution of the coordinates the answer depends on."""
    cases = [(np.float64, [1e12, 0.9, 0.8], 2.0, None, [1, 0.55, 0.45]),
             (np.float32, [3.4e7, 0.9, 0.8], 2.0, None, [1, 0.55, 0.45])]
    if polytope == "capped_simplex":
        cases.append((np.float64, [0.9, 0.8, 0.2], 1.0, [1, 1e-12, 1], [0.85, 0.8, 0.15]))
    for dtype, z, budget, w, expected in cases:
        P, tau = run_project(rows, np.array([z], dtype=dtype), polytope, budget=budget,
                             weights=w)
        np.testing.assert_allclose(P[0], expected, atol=1e-12 if dtype == np.float64 else 1e-6,
                                   err_msg=f"{dtype.__name__} z={z} w={w}")


def test_emulated_capped_simplex_jvp_is_active_where_tau_is_zero(rows):
    """The capped simplex's equality constraint is active even where its threshold is 0
    (here p = [0.7, 0.3, 0] exactly): the GPU once treated tau = 0 as inactive."""
    proj = pytest.importorskip("sparsekit.projections")
    Z = np.array([[0.7, 0.3, -0.5]])
    V = np.array([[1.0, 0.0, 0.0]])
    P, tau = run_project(rows, Z, "capped_simplex", budget=1.0)
    assert tau[0] == 0.0
    out = run_jvp(rows, P, tau, V, "capped_simplex")
    np.testing.assert_allclose(out, [[0.5, -0.5, 0.0]], atol=1e-15)
    np.testing.assert_allclose(out, proj.jvp(Z, V, "capped_simplex", budget=1.0), atol=1e-15)


@pytest.mark.parametrize("dtype, z, budget, w", [
    (np.float64, [0.9, -0.8, 0.2], 1.0, [1e-17, 1, 1]),
    (np.float64, [0.4, 1.0, -0.9], 8e8, [1e-10, 1e3, 1e9]),
    (np.float64, [-1.643023371405677e16, -2567301263654940.5], 1.372195468024335, None),
    (np.float64, [-1.0715285177413546e16, -2.048317594914385e16, -4.122334763082323e16],
     1.9603989153993757, None),
    (np.float64, [0.9, 0.8, 0.2], 1.0, [1, 1e-30, 1]),
    (np.float64, [0.9, 0.8, 0.2], 1.0, [1, 1e-100, 1]),
    (np.float64, [1e100, -1e100, 0.5, 0.6], 2.0, None),
    (np.float64, [1e300, -1e300, 0.5, 0.6], 2.0, None),
    (np.float32, [3e38, -3e38, 0.5, 0.6], 2.0, None),
])
def test_emulated_capped_simplex_matches_cpu_at_extreme_scales(rows, dtype, z, budget, w):
    """One redo of the search around its first root is not enough when that root is off
    by ~ulp(max z/w) (tiny weights, huge scores of both signs): [1, 1e-30, 1] gave a
    weighted sum of 0.72, [1e300, -1e300, .5, .6] all zeros. The CPU kernel sweeps sorted
    breakpoints and is the reference."""
    proj = pytest.importorskip("sparsekit.projections")
    Z = np.array([z], dtype=dtype)
    params = {"budget": budget, "weights": None if w is None else np.array(w, dtype=dtype)}
    P, tau = run_project(rows, Z, "capped_simplex", budget=budget, weights=params["weights"])
    cpu = proj.project(Z, "capped_simplex", **params)
    np.testing.assert_allclose(P, cpu, atol=1e-12 if dtype == np.float64 else 1e-6)
    wd = np.ones(len(z)) if w is None else np.array(w, dtype=dtype).astype(np.float64)
    np.testing.assert_allclose(P.astype(np.float64)[0] @ wd, budget, rtol=1e-6)


def test_emulated_capped_keeps_nan_from_an_overflowing_ratio(rows):
    """z/w overflowing to inf makes the CPU kernel's tau NaN, which the Python layers turn
    into an error; the GPU kernel must give NaN too, not hide it behind clip(NaN) = 0 (an
    all-zero row that breaks the constraint)."""
    from sparsekit._cython._projections import POLYTOPE_CODES, project_rows

    Z = np.array([[1e308, 0.5, 0.2]])
    w = np.array([1e-10, 1.0, 1.0])
    cpu, tau = np.empty_like(Z), np.empty(1)
    with np.errstate(all="ignore"):
        project_rows(POLYTOPE_CODES["capped_simplex"], Z, cpu, tau, 1.0, w, True)
    P, _ = run_project(rows, Z, "capped_simplex", budget=1.0, weights=w)
    assert np.isnan(tau).all() and np.isnan(cpu).any()
    np.testing.assert_array_equal(np.isnan(P), np.isnan(cpu))
