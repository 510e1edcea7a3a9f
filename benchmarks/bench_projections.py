"""Sparsemax projection throughput: sparsekit (Cython) against NumPy and entmax (PyTorch).

For K in {10, 100, 1000, 10000, 100000}, float32 and float64, and n * K = 1e7 logits
(standard normal), one thread everywhere, it times

- ``sparsekit.projections.sparsemax`` (O(K) pivot kernel, default) and ``method="sort"``,
- a vectorized NumPy sort-based sparsemax (notes/sparsemax_report.md Algorithm 2: sort,
  cumsum, support size), written below,
- ``entmax.sparsemax`` on PyTorch CPU (``torch.set_num_threads(1)``),

each returning a freshly allocated output. Throughput counts the bytes of the input read and
of the output written (2 * n * K * itemsize). Every run is timed twice: wall clock
(``_report.median_time``) and CPU time of the calling thread (``time.thread_time``); all
three implementations run on that one thread, and on a shared machine the thread time is
the figure that other jobs disturb least, so throughputs and ratios use it (the wall-clock
throughput of sparsekit is listed too). Medians of ``--repeat`` runs; the ratios are
against the peers measured in the same run. Writes section "projections" of
doc/benchmarks.md.

    python benchmarks/bench_projections.py            # full protocol
    python benchmarks/bench_projections.py --quick    # n * K = 1e6, one repeat
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.projections import sparsemax  # noqa: E402

KS = (10, 100, 1000, 10000, 100000)
TARGETS = "≥ 5× NumPy for K ≥ 100, ≥ 3× at K = 10, ≥ 10× entmax everywhere"


def timed(fn, repeat, warmup=0):
    """``(cpu, wall, result)``: medians of the thread CPU time and of the wall time."""
    cpu = []

    def run():
        t0 = time.thread_time()
        out = fn()
        cpu.append(time.thread_time() - t0)
        return out

    wall, out = _report.median_time(run, repeat=repeat, warmup=warmup)
    return statistics.median(cpu[warmup:]), wall, out


def numpy_sparsemax(Z):
    """Vectorized sort-based sparsemax of the rows of ``Z`` (same dtype)."""
    Z = Z - Z.max(axis=1, keepdims=True)
    s = -np.sort(-Z, axis=1)
    c = np.cumsum(s, axis=1)
    ks = np.arange(1, Z.shape[1] + 1, dtype=Z.dtype)
    support = (1 + ks * s > c).sum(axis=1, keepdims=True)
    tau = (np.take_along_axis(c, support - 1, axis=1) - 1) / support
    return np.maximum(Z - tau, 0)


def entmax_peer():
    """``entmax.sparsemax`` wrapped for NumPy input, or None when torch/entmax are missing."""
    try:
        import torch
        from entmax import sparsemax as entmax_sparsemax
    except ImportError:
        return None
    torch.set_num_threads(1)
    return lambda Z: entmax_sparsemax(torch.from_numpy(Z), dim=-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="n*K = 1e6, one repeat")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    total = 10**6 if args.quick else 10**7
    repeat = 1 if args.quick else args.repeat
    rng = np.random.default_rng(0)
    peer = entmax_peer()
    rows, misses = [], []
    for k in KS:
        for dtype in (np.float32, np.float64):
            n = total // k
            Z = rng.standard_normal((n, k)).astype(dtype)
            gbytes = 2 * Z.nbytes / 1e9
            t_piv, wall_piv, P = timed(lambda: sparsemax(Z), repeat, warmup=1)
            t_sort, _, P_sort = timed(lambda: sparsemax(Z, method="sort"), repeat)
            t_np, _, P_np = timed(lambda: numpy_sparsemax(Z), repeat)
            err = max(np.abs(P - P_np).max(), np.abs(P - P_sort).max())
            t_ent = r_ent = None
            if peer is not None:
                t_ent, _, P_ent = timed(lambda: peer(Z), repeat)
                err = max(err, np.abs(P - P_ent.numpy()).max())
                r_ent = t_ent / t_piv
            r_np = t_np / t_piv
            need_np = 3 if k == 10 else 5
            if r_np < need_np:
                misses.append(f"K={k} {np.dtype(dtype).name}: {r_np:.1f}× NumPy (target "
                              f"{need_np}×)")
            if r_ent is not None and r_ent < 10:
                misses.append(f"K={k} {np.dtype(dtype).name}: {r_ent:.1f}× entmax (target 10×)")
            rows.append([
                k, np.dtype(dtype).name, n,
                f"{n / t_piv:.3g}", f"{gbytes / t_piv:.2f}", f"{gbytes / wall_piv:.2f}",
                f"{gbytes / t_sort:.2f}",
                f"{gbytes / t_np:.2f}",
                "n/a" if t_ent is None else f"{gbytes / t_ent:.3f}",
                f"{r_np:.1f}×", "n/a" if r_ent is None else f"{r_ent:.1f}×", f"{err:.1e}",
            ])
            print(rows[-1], flush=True)
    header = ["K", "dtype", "rows", "sparsekit rows/s", "sparsekit GB/s",
              "sparsekit GB/s (wall)", "sparsekit sort GB/s", "NumPy GB/s", "entmax GB/s", "× NumPy", "× entmax",
              "max |Δp|"]
    load = os.getloadavg()[0]
    verdict = ("All targets met in this run." if not misses else
               "Targets missed in this run: " + "; ".join(misses) + ".")
    body = f"""
Row-wise sparsemax of standard-normal logits, n·K = {total:.0e}, one thread for every
implementation (`torch.set_num_threads(1)`, BLAS pinned). GB/s counts the input read plus the
output written (2·n·K·itemsize); every implementation allocates its output, and sparsekit's
figures include its input validation (finiteness check). Times are CPU time of the calling
thread (medians); the wall-clock throughput of sparsekit is given for reference. "sparsekit" is
the default O(K) kernel (one pass for the max and a candidate list, then Michelot's
iteration on the candidates, Condat's algorithm as fallback); "sparsekit sort" is the
sort-based reference kernel; NumPy is a vectorized sort/cumsum implementation (in the
script); entmax is `entmax.sparsemax` on PyTorch CPU. Ratios are of the median thread CPU
times of {repeat} runs, against the peers measured in the same run; max |Δp| is the largest
difference to any peer.

**Machine shared:** the 2-core machine was shared with other jobs while this ran (1-minute
load average {load:.1f} at the end): wall-clock numbers are several times too low, and even
thread CPU time suffers from cache and SMT contention, so absolute numbers are noisy and low;
the ratios are the meaningful figures. Targets: {TARGETS}. {verdict}

{_report.markdown_table(header, rows)}
"""
    _report.write_section("projections", "Sparsemax projection throughput", body,
                          packages=["numpy", "torch", "entmax"])


if __name__ == "__main__":
    main()
