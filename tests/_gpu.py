"""GPU test helpers: the skip marker of the tests that need CuPy and a usable CUDA device,
host data moved to the device of a ``cupy`` module, and a check that CPU code never tries
to import CuPy (in a fresh interpreter, which other
import checks use too)."""
import itertools
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import sparsekit
from sparsekit.gpu import require_cupy


def _gpu_available():
    try:
        require_cupy()
    except (ImportError, RuntimeError):
        return False
    return True


needs_gpu = pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA device")


def on_device(cp, X):
    """Host X on the device of ``cp`` (real CuPy or the stand-in): a cupyx CSR matrix for
    sparse X, else a CuPy array."""
    if sp.issparse(X):
        import cupyx.scipy.sparse as cusp

        return cusp.csr_matrix(sp.csr_matrix(X))
    return cp.asarray(X)

_SPY = """
import importlib, importlib.abc, sys
attempts = []
class Spy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("cupy", "cupyx"):
            attempts.append(name)
        return None
sys.meta_path.insert(0, Spy())
"""


def run_fresh(code, cwd):
    """Run ``code`` in a fresh interpreter (in ``cwd``) and return what it printed. It
    imports the sparsekit this test session uses (installed or in-place build), never an
    uncompiled source tree that happens to be the working directory."""
    package_root = str(Path(sparsekit.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=cwd, env={**os.environ, "PYTHONPATH": package_root})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def cupy_imports_of(body, cwd):
    """Run ``body`` in a fresh interpreter (:func:`run_fresh`) and return the CuPy modules
    it loaded and tried to import: ``"[] []"`` when it never touches CuPy."""
    return run_fresh(_SPY + textwrap.dedent(body) + (
        "\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupyx')),"
        " attempts)\n"), cwd)


# ---------------------------------------------------------------- every kernel, once
KERNEL_DIR = Path(sparsekit.__file__).resolve().parent / "gpu" / "kernels"
CU_FILES = sorted(KERNEL_DIR.glob("*.cu"))
#: the sources CuPy compiles (the others are only included by them)
KERNEL_SOURCES = [p for p in CU_FILES if "__global__" in p.read_text()]


def kernel_launches(dtype, n=5, k=70, seed=0):
    """One launch of every kernel of sparsekit/gpu/kernels on ``n`` rows of ``k`` entries:
    a list of ``(file, kernel, args, outputs)`` with fresh arrays (outputs NaN-filled), the
    capped kernel once per constraint mode, weighted and not."""
    from sparsekit._cython._projections import POLYTOPE_CODES, project_rows

    rng = np.random.default_rng(seed)
    s = "f32" if np.dtype(dtype) == np.float32 else "f64"
    i64, f64, i32 = np.int64, np.float64, np.int32
    Z = (rng.normal(size=(n, k)) * 2).astype(dtype)
    Z[0] = 0.0                                        # ties
    W = rng.uniform(0.5, 2.0, size=k).astype(dtype)

    def out():
        return np.full((n, k), np.nan, dtype=dtype), np.full(n, np.nan)

    P, tau = out()
    flag = np.zeros(1, dtype=np.int32)
    launches = [("projections.cu", f"project_simplex_{s}",
                 [Z, P, tau, i64(n), i64(k), f64(1.0), flag], (P, tau, flag))]
    for mode, budget in ((0, 2.5), (1, 1.5), (2, 1.0), (3, 1.0)):
        for weighted in (0, 1):
            P, tau = out()
            flag = np.zeros(1, dtype=np.int32)
            launches.append(("projections.cu", f"project_capped_{s}",
                             [Z, W, i32(weighted), P, tau, i64(n), i64(k), f64(budget),
                              i32(mode), flag], (P, tau, flag)))
    Pc, tc = np.empty_like(Z), np.empty(n, dtype=dtype)
    project_rows(POLYTOPE_CODES["simplex"], Z, Pc, tc, 1.0, np.ones(k, dtype), False)
    V = rng.normal(size=(n, k)).astype(dtype)
    for simplex, equality in ((1, 1), (0, 0)):
        OUT = out()[0]
        launches.append(("projections.cu", f"projection_jvp_{s}",
                         [Pc, tc.astype(np.float64), V, W, i32(0), OUT, i64(n), i64(k),
                          i32(simplex), i32(equality)], (OUT,)))
    # few long simplex rows, several blocks each (chunks of 32 entries): the whole search,
    # launch by launch, from the states the host derives from the CPU projection
    chunk = 32
    n_chunks = -(-k // chunk)
    partial_max, flag = np.full(n * n_chunks, np.nan), np.zeros(1, dtype=np.int32)
    launches.append(("projections.cu", f"simplex_split_max_{s}",
                     [Z, i64(n), i64(k), i64(chunk), partial_max, flag], (partial_max, flag)))
    zmax = Z.astype(np.float64).max(axis=1)
    state = np.zeros((n, 8))
    state[:, 0], state[:, 1], state[:, 3], state[:, 5] = zmax, -1.0, -1.0, 1.0
    if s == "f64":  # the per-row steps are float64 whatever Z's dtype
        start = np.full(n * 8, np.nan)
        launches.append(("projections.cu", "simplex_split_start_f64",
                         [np.repeat(zmax, n_chunks), i64(n), i64(n_chunks), f64(1.0), start],
                         (start,)))
    partial = np.full(3 * n * n_chunks, np.nan)
    launches.append(("projections.cu", f"simplex_split_sums_{s}",
                     [Z, i64(n), i64(k), i64(chunk), state.ravel().copy(), partial],
                     (partial,)))
    if s == "f64":
        sums = np.zeros((n, n_chunks, 3))
        shifted = Z.astype(np.float64) - zmax[:, None]
        for c in range(n_chunks):
            part = shifted[:, c * chunk:(c + 1) * chunk]
            sums[:, c] = np.stack([np.where(part > -1.0, part, 0).sum(1),
                                   (part > -1.0).sum(1), ((part > -1) & (part < 0)).sum(1)], 1)
        stepped, pending = state.ravel().copy(), np.zeros(1, dtype=np.int32)
        launches.append(("projections.cu", "simplex_split_step_f64",
                         [sums.ravel(), i64(n), i64(n_chunks), f64(1.0), i32(0), stepped,
                          pending], (stepped, pending)))
    done = state.copy()
    done[:, 4] = tc - zmax + 1.0       # (a - radius) / b: the threshold of the shifted row
    done[:, 1], done[:, 6] = -np.inf, 1.0
    P, tau = out()
    launches.append(("projections.cu", f"simplex_split_write_{s}",
                     [Z, P, tau, i64(n), i64(k), i64(chunk), f64(1.0), done.ravel()],
                     (P, tau)))
    Q = rng.dirichlet(np.full(k, 0.3), size=n).astype(dtype)
    G, loss = out()
    flag = np.zeros(1, dtype=np.int32)
    launches.append(("sparsemax_loss.cu", f"sparsemax_loss_grad_{s}",
                     [Z, Q, G, loss, i64(n), i64(k), flag], (G, loss, flag)))
    # ExtremeSoftmaxSGD's steps: CSR rows (int32 indices), K = 9 classes, m = 3, a bias
    K, m, D = 9, 3, k
    Xs = (rng.random((n, D)) < 0.3) * rng.normal(size=(n, D))
    indptr = np.concatenate([[0], np.cumsum((Xs != 0).sum(axis=1))]).astype(np.int32)
    indices = np.nonzero(Xs)[1].astype(np.int32)
    data = Xs[Xs != 0].astype(dtype)
    R = (rng.normal(size=(K, D + 1)) * 0.1).astype(dtype)
    rows = np.arange(n, dtype=np.int64)
    classes = np.array([rng.permutation(K)[:m + 1] for _ in range(n)], dtype=np.int64)
    sw = rng.uniform(0.5, 2.0, n)
    for method in (1, 0):  # U-max, Implicit SGD (its proximal step on the first lane)
        u, coef, status = (np.zeros(n), np.full((n, m + 1), np.nan),
                           np.zeros(1, dtype=np.int32))
        launches.append(("softmax_sgd.cu", f"sgd_coefficients_{s}",
                         [data, indices, indptr, i32(0), i64(D), i32(1), rows, classes, sw, R,
                          i64(D + 1), u, coef, i64(n), i32(m), i32(method), f64(0.5),
                          f64(np.log((K - 1) / m)), f64(0.0), f64(np.inf), status],
                         (coef, u, status)))
    R2 = R.copy()
    launches.append(("softmax_sgd.cu", f"sgd_update_{s}",
                     [data, indices, indptr, i32(0), i64(D), i32(1), rows, classes,
                      np.nan_to_num(coef) + 0.1, R2, i64(D + 1), i64(n), i32(m)], (R2,)))
    # the one-warp-per-row twins of the row kernels (those that have one), on the same inputs
    from sparsekit.gpu._kernels import kernel_source

    for file, name, args, outputs in list(launches):
        twin = f"{name[:-4]}_warp{name[-4:]}"
        if f" {twin}(" in kernel_source(file):
            fresh = {id(o): np.full_like(o, np.nan) if o.dtype.kind == "f" else np.zeros_like(o)
                     for o in outputs}
            launches.append((file, twin, [fresh.get(id(a), a) for a in args],
                             tuple(fresh[id(o)] for o in outputs)))
    if s == "f64":  # the logistic terms are float64 whatever X's dtype: on n * k margins
        m = (rng.normal(size=n * k) * 30).astype(np.float64)
        labels = np.where(rng.random(n * k) < 0.5, -1.0, 1.0)
        outs = tuple(np.full(n * k, np.nan) for _ in range(3))
        launches.append(("logistic.cu", "logistic_pointwise_f64",
                         [m, labels, rng.uniform(0, 2, n * k), *outs, i64(n * k)], outs))
    return launches


def run_every_kernel(modules, dtype, grid, block, threads, n=5, k=70):
    """Launch :func:`kernel_launches` through ``modules`` ({file: EmulatedModule}); returns
    the outputs of each launch, in order."""
    results = []
    for file, name, args, outputs in kernel_launches(dtype, n, k):
        modules[file].launch(name, grid, block, args, threads=threads)
        results.append(outputs)
    return results


#: the numbered barriers of :func:`numbered_barriers` (a source's prefix)
NUMBERED_BARRIERS = """
static int sk_dropped_barrier = -1;
extern "C" void sk_drop_barrier(int index) { sk_dropped_barrier = index; }
static inline void sk_barrier(int index) {
    if (index != sk_dropped_barrier) __syncthreads();
}
"""


def numbered_barriers(code):
    """``code`` with its i-th ``__syncthreads();`` (counted from 0) made ``sk_barrier(i);``."""
    counter = itertools.count()
    return re.sub(r"__syncthreads\(\);", lambda _: f"sk_barrier({next(counter)});", code)


def tsan_main(argv):
    """Entry point of the ThreadSanitizer run (a subprocess with the sanitizer runtime
    preloaded): build every source sanitized, with ``argv = [file, barrier index]`` that
    barrier (``__syncthreads();`` in the inlined source, counted from 0) skipped, and run
    every kernel in OS threads with two-warp blocks and grid-stride loops."""
    import _cuda_emulation
    from sparsekit.gpu._kernels import kernel_source

    build_dir = Path(argv[0])
    drop = (argv[1], int(argv[2])) if len(argv) > 2 else None
    files = [p for p in KERNEL_SOURCES if drop is None or p.name == drop[0]]
    # one sanitized build per source serves the run with every barrier and each run
    # without one (a compile per run was most of its time): the barriers are numbered, and
    # the one set by sk_drop_barrier is skipped by every thread
    codes = [NUMBERED_BARRIERS + numbered_barriers(kernel_source(p.name)) for p in files]
    modules = dict(zip([p.name for p in files],
                       _cuda_emulation.build_many(codes, build_dir, sanitize=True)))
    if drop:
        modules[drop[0]].symbol("sk_drop_barrier")(drop[1])
    # a race is reported when the sanitizer's shadow memory still holds the other side's
    # access, which depends on the interleaving: a run without a barrier repeats the
    # launches until the sanitizer halts it (halt_on_error). The last barrier of a block
    # reduction is the hardest to catch: measured, a launch misses it up to 7 times in a
    # row (2 launches per round for a file with one kernel), so 40 rounds.
    for _round in range(1 if drop is None else 40):
        for dtype in (np.float64, np.float32):
            for file, name, args, _ in kernel_launches(dtype, n=3, k=40):
                if file in modules:
                    modules[file].launch(name, 1, 64, args, threads=True)
    print("ran every kernel")
