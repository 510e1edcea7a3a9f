"""The CUDA sources of sparsekit/gpu/kernels, checked without a GPU.

1. Every ``.cu`` file compiles to PTX with ``nvcc --ptx -arch=sm_90`` (skipped without nvcc).
2. The same sources are compiled for the CPU with a small CUDA emulation (one OS thread per
   CUDA thread, ``std::barrier`` for ``__syncthreads`` and warp shuffles) and run through
   ctypes, so the kernels' logic (block reductions, bracketing search, grid-stride loops)
   is compared with ``sparsekit.projections`` and brute-force references on a CPU-only
   machine (skipped without a C++20 compiler).
"""
import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

KERNEL_DIR = Path(__file__).resolve().parents[1] / "sparsekit" / "gpu" / "kernels"
CU_FILES = sorted(KERNEL_DIR.glob("*.cu"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("source", CU_FILES, ids=lambda p: p.name)
def test_cuda_source_compiles_to_ptx(source, tmp_path):
    result = subprocess.run(
        ["nvcc", "--ptx", "-arch=sm_90", "--std=c++14", f"-I{KERNEL_DIR}", str(source),
         "-o", str(tmp_path / "out.ptx")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    entries = (tmp_path / "out.ptx").read_text().count(".entry")
    assert entries == source.read_text().count("__global__")


def test_inlined_sources_compile_to_ptx_without_include_paths(tmp_path):
    """What CuPy compiles: the sources with their local includes inlined."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed")
    from sparsekit.gpu._kernels import kernel_source

    for source in ("projections.cu", "sparsemax_loss.cu"):
        text = kernel_source(source)
        assert "#include" not in text
        (tmp_path / source).write_text(text)
        result = subprocess.run(
            ["nvcc", "--ptx", "-arch=sm_90", "--std=c++14", str(tmp_path / source),
             "-o", str(tmp_path / "out.ptx")], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr


HARNESS = r"""
#include <barrier>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

struct sk_dim3 { long long x; };
static thread_local sk_dim3 threadIdx;
static sk_dim3 blockIdx, blockDim, gridDim;
static std::barrier<>* sk_block_barrier;
static std::barrier<>* sk_warp_barrier[32];
static double sk_exchange[32][32];

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

static inline void __syncthreads() { sk_block_barrier->arrive_and_wait(); }
static inline double __longlong_as_double(long long bits) {
    double d; std::memcpy(&d, &bits, sizeof d); return d;
}
static inline double __shfl_down_sync(unsigned, double v, int offset) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    sk_exchange[warp][lane] = v;
    sk_warp_barrier[warp]->arrive_and_wait();
    const double r = lane + offset < 32 ? sk_exchange[warp][lane + offset] : v;
    sk_warp_barrier[warp]->arrive_and_wait();
    return r;
}

#include "projections.cu"
#include "sparsemax_loss.cu"

template <class F> static void emu_run(int grid, int block, F kernel) {
    gridDim.x = grid; blockDim.x = block;
    std::barrier<> block_barrier(block);
    sk_block_barrier = &block_barrier;
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    for (int w = 0; w < block / 32; ++w) {
        warps.emplace_back(new std::barrier<>(32));
        sk_warp_barrier[w] = warps.back().get();
    }
    for (int b = 0; b < grid; ++b) {
        blockIdx.x = b;
        std::vector<std::thread> threads;
        for (int t = 0; t < block; ++t)
            threads.emplace_back([t, &kernel] { threadIdx.x = t; kernel(); });
        for (auto& th : threads) th.join();
    }
}

#define EMU(T, S)                                                                          \
extern "C" void emu_project_simplex_##S(int g, int b, const T* Z, T* P, double* tau,      \
                                        long long n, long long k, double r) {             \
    emu_run(g, b, [=] { project_simplex_##S(Z, P, tau, n, k, r); });                      \
}                                                                                          \
extern "C" void emu_project_capped_##S(int g, int b, const T* Z, const T* W, int wtd,     \
                                       T* P, double* tau, long long n, long long k,       \
                                       double budget, int mode) {                          \
    emu_run(g, b, [=] { project_capped_##S(Z, W, wtd, P, tau, n, k, budget, mode); });   \
}                                                                                          \
extern "C" void emu_projection_jvp_##S(int g, int b, const T* P, const double* tau,       \
                                       const T* V, const T* W, int wtd, T* OUT,            \
                                       long long n, long long k, int simplex, int eq) {   \
    emu_run(g, b, [=] { projection_jvp_##S(P, tau, V, W, wtd, OUT, n, k, simplex, eq); }); \
}                                                                                          \
extern "C" void emu_sparsemax_loss_grad_##S(int g, int b, const T* Z, const T* Q, T* G,   \
                                            double* loss, long long n, long long k) {     \
    emu_run(g, b, [=] { sparsemax_loss_grad_##S(Z, Q, G, loss, n, k); });                 \
}
EMU(float, f32)
EMU(double, f64)
"""

MODES = {"capped_simplex": 0, "knapsack": 1, "budget": 1, "at_most_one": 1,
         "at_least_one": 2, "box": 3}


@pytest.fixture(scope="module")
def emu(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler for the CUDA emulation")
    build = tmp_path_factory.mktemp("cuda_emulation")
    (build / "harness.cpp").write_text(HARNESS)
    lib = build / "emu.so"
    result = subprocess.run(
        [cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", f"-I{KERNEL_DIR}",
         str(build / "harness.cpp"), "-o", str(lib)],
        capture_output=True, text=True, timeout=300,
    )
    if result.returncode != 0 and "barrier" in result.stderr:
        pytest.skip(f"{cxx} lacks C++20 <barrier>")
    assert result.returncode == 0, result.stderr
    return ctypes.CDLL(str(lib))


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def _sfx(dtype):
    return "f32" if np.dtype(dtype) == np.float32 else "f64"


def _block(k):
    """One warp by default: OS threads are costly; multi-warp blocks have their own test."""
    return 32


def run_project(emu, Z, polytope, budget=1.0, weights=None, grid=3, block=None):
    Z = np.ascontiguousarray(Z)
    n, k = Z.shape
    P = np.full_like(Z, np.nan)
    tau = np.full(n, np.nan)
    block = block or _block(k)
    if polytope == "simplex":
        getattr(emu, f"emu_project_simplex_{_sfx(Z.dtype)}")(
            grid, block, _ptr(Z), _ptr(P), _ptr(tau), ctypes.c_longlong(n),
            ctypes.c_longlong(k), ctypes.c_double(budget))
    else:
        W = Z if weights is None else np.ascontiguousarray(weights, dtype=Z.dtype)
        getattr(emu, f"emu_project_capped_{_sfx(Z.dtype)}")(
            grid, block, _ptr(Z), _ptr(W), ctypes.c_int(weights is not None), _ptr(P),
            _ptr(tau), ctypes.c_longlong(n), ctypes.c_longlong(k), ctypes.c_double(budget),
            ctypes.c_int(MODES[polytope]))
    return P, tau


def run_jvp(emu, P, tau, V, polytope, weights=None, block=None):
    n, k = P.shape
    out = np.full_like(P, np.nan)
    W = P if weights is None else np.ascontiguousarray(weights, dtype=P.dtype)
    getattr(emu, f"emu_projection_jvp_{_sfx(P.dtype)}")(
        2, block or _block(k), _ptr(P), _ptr(tau), _ptr(np.ascontiguousarray(V, P.dtype)),
        _ptr(W), ctypes.c_int(weights is not None), _ptr(out), ctypes.c_longlong(n),
        ctypes.c_longlong(k), ctypes.c_int(polytope == "simplex"),
        ctypes.c_int(polytope in ("simplex", "capped_simplex")))
    return out


def run_loss(emu, Z, Q, block=None):
    n, k = Z.shape
    G = np.full_like(Z, np.nan)
    loss = np.full(n, np.nan)
    getattr(emu, f"emu_sparsemax_loss_grad_{_sfx(Z.dtype)}")(
        2, block or _block(k), _ptr(Z), _ptr(np.ascontiguousarray(Q, Z.dtype)), _ptr(G),
        _ptr(loss), ctypes.c_longlong(n), ctypes.c_longlong(k))
    return loss, G


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
def test_emulated_sparsemax_matches_sort_reference(emu, k, dtype):
    rng = np.random.default_rng(k)
    Z = adversarial_rows(rng, k).astype(dtype)
    P, tau = run_project(emu, Z, "simplex")
    tol = 1e-12 if dtype == np.float64 else 2e-6
    for z, p, t in zip(Z, P, tau):
        p_ref, t_ref = sparsemax_sort(z)
        np.testing.assert_allclose(p, p_ref, atol=tol, rtol=0)
        assert abs(t - t_ref) <= tol * max(1.0, abs(t_ref))
        assert abs(p.sum(dtype=np.float64) - 1) < (1e-12 if dtype == np.float64 else 1e-5)
        np.testing.assert_array_equal(p == 0, p_ref == 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_sparsemax_shift_invariant(emu, dtype):
    z = np.array([[0.3, 0.1, -0.2, 0.25]], dtype=np.float64)
    P0, _ = run_project(emu, z.astype(dtype), "simplex")
    P1, tau = run_project(emu, (z + 1e6).astype(dtype), "simplex")
    np.testing.assert_allclose(P1, P0, atol=0.1 if dtype == np.float32 else 1e-9)
    # exact: float32(z + 1e6) is the row the kernel sees; its sparsemax is that of the shift
    np.testing.assert_allclose(P1[0], sparsemax_sort((z + 1e6).astype(dtype)[0])[0],
                               atol=1e-6)
    assert np.isfinite(tau).all()


@pytest.mark.parametrize("radius", [0.5, 3.0])
def test_emulated_simplex_radius(emu, radius):
    Z = np.random.default_rng(0).normal(size=(5, 40))
    P, _ = run_project(emu, Z, "simplex", budget=radius)
    for z, p in zip(Z, P):
        np.testing.assert_allclose(p, simplex_sort(z, radius)[0], atol=1e-12)


@pytest.mark.parametrize("block", [64, 160])
def test_emulated_block_sizes_and_grid_stride(emu, block):
    Z = np.random.default_rng(1).normal(size=(7, 300))
    P, _ = run_project(emu, Z, "simplex", grid=2, block=block)
    np.testing.assert_allclose(P, [sparsemax_sort(z)[0] for z in Z], atol=1e-12)


@pytest.mark.parametrize("polytope, budget, weighted", [
    ("capped_simplex", 2.5, False), ("capped_simplex", 0.0, False),
    ("capped_simplex", 2.5, True), ("knapsack", 1.5, False), ("knapsack", 1.5, True),
    ("budget", 2.0, False), ("budget", 100.0, False), ("at_most_one", 1.0, False),
    ("at_least_one", 1.0, False), ("box", 1.0, False),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_capped_family_matches_bisection(emu, polytope, budget, weighted, dtype):
    rng = np.random.default_rng(7)
    for k in (1, 2, 37):
        Z = np.vstack([adversarial_rows(rng, k)[:6], rng.normal(size=(4, k)) * 2 + 0.5,
                       rng.uniform(-0.5, 1.5, size=(2, k))])
        Z = Z.astype(dtype)
        w = rng.uniform(0.5, 2.0, size=k) if weighted else None
        wd = np.ones(k) if w is None else w.astype(dtype).astype(np.float64)
        b = min(budget, wd.sum()) if polytope == "capped_simplex" else budget
        P, tau = run_project(emu, Z, polytope, budget=b, weights=w)
        tol = 1e-9 if dtype == np.float64 else 1e-5
        for z, p, t in zip(Z, P, tau):
            ref = capped_bisect(z, b, wd, MODES[polytope])
            np.testing.assert_allclose(p, ref, atol=tol * max(1, np.abs(z).max() / 1e3),
                                       err_msg=f"k={k} z={z}")
            np.testing.assert_allclose(p, np.clip(z.astype(np.float64) - t * wd, 0, 1),
                                       atol=tol)


def test_emulated_matches_cpu_package(emu):
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
        P, tau = run_project(emu, Z, polytope, budget=budget, weights=weights)
        np.testing.assert_allclose(P, proj.project(Z, polytope, **params), atol=1e-10,
                                   err_msg=polytope)
        V = rng.normal(size=Z.shape)
        out = run_jvp(emu, P, tau, V, polytope, weights=weights)
        np.testing.assert_allclose(out, proj.jvp(Z, V, polytope, **params), atol=1e-10,
                                   err_msg=polytope)


def test_emulated_jvp_matches_finite_differences(emu):
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(4, 20)) * 2
    V = rng.normal(size=Z.shape)
    eps = 1e-7
    for polytope, budget in (("simplex", 1.0), ("capped_simplex", 3.0), ("budget", 1.5)):
        P, tau = run_project(emu, Z, polytope, budget=budget)
        out = run_jvp(emu, P, tau, V, polytope)
        Pp = run_project(emu, Z + eps * V, polytope, budget=budget)[0]
        Pm = run_project(emu, Z - eps * V, polytope, budget=budget)[0]
        np.testing.assert_allclose(out, (Pp - Pm) / (2 * eps), atol=1e-5, err_msg=polytope)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_sparsemax_loss_and_grad(emu, dtype):
    rng = np.random.default_rng(5)
    k = 45
    Z = (rng.normal(size=(6, k)) * 3).astype(dtype)
    Z[5] += 1e4
    Q = rng.dirichlet(np.ones(k) * 0.3, size=6)
    Q[0] = 0
    Q[0, 3] = 1
    loss, G = run_loss(emu, Z, Q.astype(dtype))
    for z, q, l, g in zip(Z.astype(np.float64), Q.astype(dtype).astype(np.float64), loss, G):
        p, _ = sparsemax_sort(z)
        zs = z - z.max()
        expected = 0.5 * np.sum((q - p) * (q + p - 2 * zs))  # Fenchel-Young form
        assert l >= -1e-12
        np.testing.assert_allclose(l, expected, rtol=1e-9 if dtype == np.float64 else 1e-5,
                                   atol=1e-10)
        np.testing.assert_allclose(g, p - q, atol=1e-12 if dtype == np.float64 else 1e-6)
    loss0, G0 = run_loss(emu, Z[:1], np.eye(k, dtype=dtype)[[int(np.argmax(Z[0]))]] * 0
                         + run_project(emu, Z[:1], "simplex")[0])
    np.testing.assert_allclose(loss0, 0.0, atol=1e-6)
    np.testing.assert_allclose(G0, 0.0, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_emulated_capped_family_keeps_its_constraints_at_huge_scores(emu, dtype):
    """Past 2^53 (2^24 in float32) unshifted scores lose the [0, 1] resolution: the kernel
    searches on scores shifted by their largest breakpoint (as the CPU kernel does)."""
    proj = pytest.importorskip("sparsekit.projections")
    big = 1e300 if dtype == np.float64 else 3e38
    for c in (1e16, 1e30, big):
        Z = np.array([[c, c, -c], [c, c / 2, -c], [-c, -c, -c]], dtype=dtype)
        for polytope, budget in (("budget", 1.0), ("capped_simplex", 1.0),
                                 ("at_least_one", 1.0)):
            P, tau = run_project(emu, Z, polytope, budget=budget)
            cpu = proj.project(Z, polytope, **({"budget": budget}
                                               if polytope != "at_least_one" else {}))
            np.testing.assert_allclose(P, cpu, atol=1e-6, err_msg=f"{polytope} {c:g}")
        np.testing.assert_allclose(run_project(emu, Z[:1], "budget")[0], [[0.5, 0.5, 0.0]])
        np.testing.assert_allclose(run_project(emu, Z[2:], "at_least_one")[0],
                                   [[1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)


def test_emulated_loss_is_zero_not_nan_at_the_largest_finite_scores(emu):
    Z = np.array([[1e308, -1e308, 0.0]])
    loss, G = run_loss(emu, Z, np.array([[1.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(loss, [0.0])
    np.testing.assert_array_equal(G, [[0.0, 0.0, 0.0]])


@pytest.mark.parametrize("polytope", ["capped_simplex", "budget"])
def test_emulated_capped_keeps_resolution_far_below_the_top(emu, polytope):
    """Scores capped at 1 far above the answer (or a tiny weight, whose ratio z/w sets the
    shift) must not cost the [0, 1] resolution of the coordinates the answer depends on."""
    cases = [(np.float64, [1e12, 0.9, 0.8], 2.0, None, [1, 0.55, 0.45]),
             (np.float32, [3.4e7, 0.9, 0.8], 2.0, None, [1, 0.55, 0.45])]
    if polytope == "capped_simplex":
        cases.append((np.float64, [0.9, 0.8, 0.2], 1.0, [1, 1e-12, 1], [0.85, 0.8, 0.15]))
    for dtype, z, budget, w, expected in cases:
        P, tau = run_project(emu, np.array([z], dtype=dtype), polytope, budget=budget,
                             weights=w)
        np.testing.assert_allclose(P[0], expected, atol=1e-12 if dtype == np.float64 else 1e-6,
                                   err_msg=f"{dtype.__name__} z={z} w={w}")


def test_emulated_capped_simplex_jvp_is_active_where_tau_is_zero(emu):
    """The capped simplex's equality constraint is active even where its threshold is 0
    (here p = [0.7, 0.3, 0] exactly): the GPU once treated tau = 0 as inactive."""
    proj = pytest.importorskip("sparsekit.projections")
    Z = np.array([[0.7, 0.3, -0.5]])
    V = np.array([[1.0, 0.0, 0.0]])
    P, tau = run_project(emu, Z, "capped_simplex", budget=1.0)
    assert tau[0] == 0.0
    out = run_jvp(emu, P, tau, V, "capped_simplex")
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
def test_emulated_capped_simplex_matches_cpu_at_extreme_scales(emu, dtype, z, budget, w):
    """One redo of the search around its first root is not enough when that root is off
    by ~ulp(max z/w) (tiny weights, huge scores of both signs): [1, 1e-30, 1] gave a
    weighted sum of 0.72, [1e300, -1e300, .5, .6] all zeros. The CPU kernel sweeps sorted
    breakpoints and is the reference."""
    proj = pytest.importorskip("sparsekit.projections")
    Z = np.array([z], dtype=dtype)
    params = {"budget": budget, "weights": None if w is None else np.array(w, dtype=dtype)}
    P, tau = run_project(emu, Z, "capped_simplex", budget=budget, weights=params["weights"])
    cpu = proj.project(Z, "capped_simplex", **params)
    np.testing.assert_allclose(P, cpu, atol=1e-12 if dtype == np.float64 else 1e-6)
    wd = np.ones(len(z)) if w is None else np.array(w, dtype=dtype).astype(np.float64)
    np.testing.assert_allclose(P.astype(np.float64)[0] @ wd, budget, rtol=1e-6)


def test_emulated_capped_keeps_nan_from_an_overflowing_ratio(emu):
    """z/w overflowing to inf makes the CPU kernel's tau NaN, which the Python layers turn
    into an error; the GPU kernel must give NaN too, not hide it behind clip(NaN) = 0 (an
    all-zero row that breaks the constraint)."""
    from sparsekit._cython._projections import POLYTOPE_CODES, project_rows

    Z = np.array([[1e308, 0.5, 0.2]])
    w = np.array([1e-10, 1.0, 1.0])
    cpu, tau = np.empty_like(Z), np.empty(1)
    with np.errstate(all="ignore"):
        project_rows(POLYTOPE_CODES["capped_simplex"], Z, cpu, tau, 1.0, w, True)
    P, _ = run_project(emu, Z, "capped_simplex", budget=1.0, weights=w)
    assert np.isnan(tau).all() and np.isnan(cpu).any()
    np.testing.assert_array_equal(np.isnan(P), np.isnan(cpu))
