"""The GPU paths against the card's copy bandwidth and against the CPU (needs a CUDA device).

1. Projections: rows of K standard-normal logits (K from 16 to 65536, float32 and float64,
   ~128 MiB of input per call) through ``sparsekit.gpu.projections`` (simplex and the
   capped family). Throughput counts the bytes read and written (2 * n * K * itemsize),
   against the device's own copy bandwidth measured in the same run (``cupy.copyto`` of the
   same array: one read and one write per element). Median of ``--repeat`` runs timed with
   CUDA events after one warm-up. Few long rows (4 rows of 2^20 and 2^23 entries): the
   simplex projection with several blocks per row against one block per row.
2. Fits: ``L1LogisticOBA`` (C = 1, tol 1e-6, no intercept) on a9a, w8a and MNIST (0-4 vs
   5-9); on MNIST's ten digits ``L1LogisticOBA(multiclass="multinomial")`` (C = 0.01,
   tol 1e-6) and ``SparsemaxClassifier`` (alpha 1e-4, lbfgs and newton-cg); ``device="cuda"`` against ``device="cpu"`` (one CPU thread), with the objectives of both
   fits; the GPU fits are timed after one warm-up fit (kernel compilation excluded).
3. Cross-validation on a9a: ``L1LogisticOBACV(Cs=10, cv=5)`` and
   ``SparsemaxClassifierCV(alphas=5, cv=5)``, ``device="cuda"`` against ``device="cpu"``
   (one process), with the largest difference between their held-out scores and the
   choices (C_ or alpha_) of both.
4. ExtremeSoftmaxSGD epochs on the synthetic teacher (K = 1e4, D = 1000, 20 draws a row,
   100,000 training rows, float32), sampled softmax and Implicit SGD, m = 5, batch_size
   256: seconds per epoch on the GPU against the CPU driver (one thread, same batches), and
   the test accuracy of both.

Writes section "gpu" of doc/benchmarks.md. Without a usable CUDA device it exits with the
reason and writes nothing: GPU figures are measured, never estimated.

    python benchmarks/bench_gpu.py             # the full protocol
    python benchmarks/bench_gpu.py --quick     # 16 MiB calls, two data sets, one repeat
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import (L1LogisticOBA, L1LogisticOBACV, SparsemaxClassifier,  # noqa: E402
                       SparsemaxClassifierCV)
from sparsekit.datasets import load_libsvm, load_mnist  # noqa: E402
from sparsekit.gpu import require_cupy  # noqa: E402

KS = (16, 128, 1024, 4096, 65536)
POLYTOPES = ("simplex", "capped_simplex", "budget", "at_least_one")


def device_time(cp, fn, repeat):
    """Median seconds of ``fn()`` on the current stream (CUDA events), after a warm-up."""
    fn()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def projection_rows(cp, megabytes, repeat, ks=KS):
    from sparsekit.gpu import projections as gp

    rows = []
    for dtype in (np.float32, np.float64):
        for k in ks:
            n = max(1, megabytes * 2**20 // (k * np.dtype(dtype).itemsize))
            Z = cp.asarray(np.random.default_rng(0).standard_normal((n, k)), dtype=dtype)
            out = cp.empty_like(Z)
            nbytes = 2 * Z.nbytes
            copy = nbytes / device_time(cp, lambda: cp.copyto(out, Z), repeat) / 1e9
            for polytope in POLYTOPES:
                params = {"budget": k / 4} if polytope in ("capped_simplex", "budget") else {}
                seconds = device_time(cp, lambda: gp.project(Z, polytope, **params), repeat)
                rows.append([np.dtype(dtype).name, k, n, polytope, f"{seconds * 1e3:.2f}",
                             f"{nbytes / seconds / 1e9:.1f}", f"{copy:.1f}",
                             f"{nbytes / seconds / 1e9 / copy:.2f}"])
            print(rows[-1], flush=True)
    return rows


def long_row_rows(cp, repeat, ks=(2**20, 2**23), n=4):
    """Few long simplex rows: several blocks per row (the default past ``SPLIT_MIN_COLS``)
    against one block per row, GB/s as in :func:`projection_rows`."""
    from sparsekit.gpu import projections as gp

    rows = []
    for dtype in (np.float32, np.float64):
        for k in ks:
            Z = cp.asarray(np.random.default_rng(0).standard_normal((n, k)), dtype=dtype)
            nbytes = 2 * Z.nbytes
            seconds = {}
            for layout, max_rows in (("several blocks", gp.SPLIT_MAX_ROWS), ("one block", 0)):
                default, gp.SPLIT_MAX_ROWS = gp.SPLIT_MAX_ROWS, max_rows
                try:
                    seconds[layout] = device_time(cp, lambda: gp.project(Z, "simplex"), repeat)
                finally:
                    gp.SPLIT_MAX_ROWS = default
            for layout, t in seconds.items():
                rows.append([np.dtype(dtype).name, k, n, layout, f"{t * 1e3:.2f}",
                             f"{nbytes / t / 1e9:.1f}"])
            print(rows[-2:], flush=True)
    return rows


def l1_objective(est, X, y, C):
    m = np.asarray(X @ est.coef_.ravel()).ravel()
    return float(np.abs(est.coef_).sum() + C * np.logaddexp(0.0, -y * m).sum())


def multinomial_row(cp, X, digits, C=0.01):
    """The multinomial ℓ1 fit on the CPU and on the GPU: times and objectives."""
    times, objectives = {}, {}
    for device in ("cpu", "cuda", "cuda"):  # the first GPU fit compiles the kernels
        est = L1LogisticOBA(C=C, tol=1e-6, multiclass="multinomial", device=device)
        t0 = time.perf_counter()
        est.fit(X, digits)
        cp.cuda.Device().synchronize()
        times[device] = time.perf_counter() - t0
        Z = np.asarray(X @ est.coef_.T) + est.intercept_
        codes = np.searchsorted(est.classes_, digits)
        objectives[device] = float(np.abs(est.coef_).sum() + C * (
            logsumexp(Z, axis=1) - Z[np.arange(len(codes)), codes]).sum())
    return ["L1LogisticOBA multinomial, mnist (10 classes)", f"{times['cpu']:.3f}",
            f"{times['cuda']:.3f}", f"{times['cpu'] / times['cuda']:.2f}",
            f"{abs(objectives['cuda'] - objectives['cpu']) / objectives['cpu']:.1e}"]


def fit_rows(cp, datasets):
    rows = []
    for name in datasets:
        if name == "mnist":
            X, digits = load_mnist("train", data_home=_report.DATA_HOME)
            X = X.astype(np.float64) / 255.0
            y = np.where(digits <= 4, 1.0, -1.0)
        else:
            X, y = load_libsvm(name, data_home=_report.DATA_HOME)
        times, objectives = {}, {}
        for device in ("cpu", "cuda", "cuda"):  # the first GPU fit compiles the kernels
            est = L1LogisticOBA(C=1.0, tol=1e-6, fit_intercept=False, device=device)
            t0 = time.perf_counter()
            est.fit(X, y)
            cp.cuda.Device().synchronize()
            times[device] = time.perf_counter() - t0
            objectives[device] = l1_objective(est, X, y, 1.0)
        rows.append([f"L1LogisticOBA, {name}", f"{times['cpu']:.3f}", f"{times['cuda']:.3f}",
                     f"{times['cpu'] / times['cuda']:.2f}",
                     f"{abs(objectives['cuda'] - objectives['cpu']) / objectives['cpu']:.1e}"])
        print(rows[-1], flush=True)
    if "mnist" in datasets:
        X, digits = load_mnist("train", data_home=_report.DATA_HOME)
        rows.append(multinomial_row(cp, sp.csr_matrix(X.astype(np.float64) / 255.0), digits))
        print(rows[-1], flush=True)
        X = X.astype(np.float32) / 255.0
        for solver in ("lbfgs", "newton-cg"):
            times, accuracy = {}, {}
            for device in ("cpu", "cuda", "cuda"):
                est = SparsemaxClassifier(alpha=1e-4, solver=solver, tol=1e-5, device=device)
                t0 = time.perf_counter()
                est.fit(X, digits)
                cp.cuda.Device().synchronize()
                times[device] = time.perf_counter() - t0
                accuracy[device] = est.score(X, digits)
            rows.append([f"SparsemaxClassifier {solver}, mnist (10 classes)",
                         f"{times['cpu']:.3f}", f"{times['cuda']:.3f}",
                         f"{times['cpu'] / times['cuda']:.2f}",
                         f"accuracy {accuracy['cpu']:.4f} / {accuracy['cuda']:.4f}"])
            print(rows[-1], flush=True)
    return rows


def cv_rows(cp, X, y, Cs=10, alphas=5, cv=5):
    """Both CV estimators on the CPU and on the GPU (after a warm-up fit of each on the
    GPU): wall seconds, the largest score difference, the choices."""
    rows = []
    for name, make, choice in (
            (f"L1LogisticOBACV(Cs={Cs}, cv={cv})", lambda device: L1LogisticOBACV(
                Cs=Cs, cv=cv, device=device), "C_"),
            (f"SparsemaxClassifierCV(alphas={alphas}, cv={cv})",
             lambda device: SparsemaxClassifierCV(alphas=alphas, cv=cv, device=device),
             "alpha_")):
        times, fitted = {}, {}
        for device in ("cpu", "cuda", "cuda"):  # the first GPU fit compiles the kernels
            t0 = time.perf_counter()
            fitted[device] = make(device).fit(X, y)
            cp.cuda.Device().synchronize()
            times[device] = time.perf_counter() - t0
        cpu, gpu = fitted["cpu"], fitted["cuda"]
        rows.append([name, f"{times['cpu']:.3f}", f"{times['cuda']:.3f}",
                     f"{times['cpu'] / times['cuda']:.2f}",
                     f"{np.abs(gpu.scores_ - cpu.scores_).max():.1e}",
                     f"{getattr(cpu, choice):.4g} / {getattr(gpu, choice):.4g}"])
        print(rows[-1], flush=True)
    return rows


def softmax_rows(cp, n_rows):
    from sparsekit import ExtremeSoftmaxSGD
    from sparsekit.datasets import make_extreme_softmax_teacher

    X, y = make_extreme_softmax_teacher(n_rows + 10_000, 1000, 10_000, 20, dtype=np.float32,
                                        random_state=0)
    train, test = slice(0, n_rows), slice(n_rows, None)
    rows = []
    for method in ("sampled_softmax", "implicit"):
        for device in ("cpu", "cuda", "cuda"):
            est = ExtremeSoftmaxSGD(method, n_sampled=5, batch_size=256, n_epochs=3,
                                    random_state=0, device=device).fit(X[train], y[train])
            rows.append([method, device, f"{np.median(est.epoch_times_):.3f}",
                         f"{est.score(X[test], y[test]):.4f}"])
        rows.pop(-2)                                   # the warm-up fit (compilation)
    print(rows, flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    try:
        cp = require_cupy()
    except (ImportError, RuntimeError) as exc:
        print(f"bench_gpu: not run, no usable CUDA device: {exc}")
        return
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    card = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    repeat = 1 if args.quick else args.repeat
    projections = projection_rows(cp, 16 if args.quick else 128, repeat)
    long_rows = long_row_rows(cp, repeat, ks=(2**17,) if args.quick else (2**20, 2**23))
    fits = fit_rows(cp, ["a9a", "mnist"] if args.quick else ["a9a", "w8a", "mnist"])
    cvs = cv_rows(cp, *load_libsvm("a9a", data_home=_report.DATA_HOME))
    epochs = softmax_rows(cp, 20_000 if args.quick else 100_000)
    body = f"""
Device: {card}, CuPy {cp.__version__}. Projections: median of {repeat} runs timed with CUDA
events; GB/s counts the bytes read and written; "copy" is ``cupy.copyto`` of the same array
in the same run, the card's bandwidth ceiling for a one-pass kernel.

### Projection throughput
{_report.markdown_table(["dtype", "K", "rows", "polytope", "ms", "GB/s", "copy GB/s",
                         "share of copy"], projections)}

### Few long rows: simplex projection of 4 rows, several blocks per row against one
{_report.markdown_table(["dtype", "K", "rows", "layout", "ms", "GB/s"], long_rows)}

### Fits: device="cuda" against device="cpu" (wall seconds; the GPU fit after a warm-up)
{_report.markdown_table(["estimator, data", "CPU s", "GPU s", "speed-up",
                         "objective rel. diff. / accuracy"], fits)}

### Cross-validation on a9a: device="cuda" against device="cpu" (wall seconds; after a warm-up)
{_report.markdown_table(["estimator", "CPU s", "GPU s", "speed-up", "largest score diff.",
                         "choice CPU / GPU"], cvs)}

### ExtremeSoftmaxSGD epochs (teacher, K = 1e4, m = 5, batch 256)
{_report.markdown_table(["method", "device", "s per epoch (median)", "test accuracy"],
                        epochs)}
"""
    _report.write_section("gpu", "The GPU paths (CuPy)", body,
                          packages=["numpy", "scipy", "cupy"])


if __name__ == "__main__":
    main()
