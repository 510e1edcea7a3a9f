"""What random cache lines cost a busy core, prefetched or not, by the region they are in.

Compiles ``prefetch_cost.c`` with gcc and times a loop of L1-resident gathers and updates
(about one OVE step of ExtremeSoftmaxSGD at K = 100 in length) that per iteration also
(a) prefetches N random lines nothing uses, (b) reads and updates N random lines it
prefetched 2 or 4 iterations earlier, or (c) reads and updates them without a prefetch,
for regions from the L2-sized to well beyond the L3 and TLB reach. The time over the bare
loop bounds what prefetching can hide of the extreme_softmax scale benchmark's extra time
per step at K = 1e5 (doc/benchmarks.md, ExtremeSoftmaxSGD section 2). Run::

    python benchmarks/bench_prefetch_cost.py [--reps 7]

(alone on the machine: on a shared one, under the same ``flock`` as the other timings).
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

REGIONS_MIB = [2, 8, 24, 98, 512]
N_LINES = 16         # about the DRAM lines of an OVE step at K = 1e5 (cache model: 17.3)
WORK = 160           # gather-and-update operations per iteration
ITERATIONS = 200_000
#: (column, mode, ahead) of prefetch_cost.c
VARIANTS = [("prefetched, never used", 0, 0), ("prefetched 2 ahead, then used", 1, 2),
            ("prefetched 4 ahead, then used", 1, 4), ("used, no prefetch", 2, 0)]


def build(folder):
    source = Path(__file__).with_name("prefetch_cost.c")
    binary = Path(folder) / "prefetch_cost"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(source)], check=True)
    version = subprocess.run(["gcc", "--version"], check=True, capture_output=True,
                             text=True).stdout.splitlines()[0]
    return binary, version


def ns_per_iteration(binary, region_mib, n_lines, mode, ahead):
    out = subprocess.run([str(binary), str(region_mib), str(n_lines), str(WORK),
                          str(ITERATIONS), str(mode), str(ahead)], check=True,
                         capture_output=True, text=True)
    return float(out.stdout.split()[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=7, help="interleaved rounds")
    args = parser.parse_args()
    times = {}
    with tempfile.TemporaryDirectory() as folder:
        binary, compiler = build(folder)
        for _ in range(args.reps):
            for mib in REGIONS_MIB:
                times.setdefault((mib, None), []).append(ns_per_iteration(binary, mib, 0, 0, 0))
                for name, mode, ahead in VARIANTS:
                    times.setdefault((mib, name), []).append(
                        ns_per_iteration(binary, mib, N_LINES, mode, ahead))
    rows, extra = [], {}
    for mib in REGIONS_MIB:
        base = statistics.median(times[(mib, None)])
        for name, _, _ in VARIANTS:
            extra[(mib, name)] = statistics.median(times[(mib, name)]) - base
        rows.append([f"{mib} MiB", f"{base:.0f}"]
                    + [f"{extra[(mib, name)]:.0f}" for name, _, _ in VARIANTS])
    best = min(extra[(98, name)] for name, _, _ in VARIANTS[1:])
    body = (f"A loop of {WORK} L1-resident gather-and-update operations per iteration in four "
            f"parts; besides, per iteration, {N_LINES} random lines of the region are "
            "prefetched (PREFETCHW, spread over the four parts) and never used, or read and "
            "updated before the first part after being prefetched 2 or 4 iterations "
            "earlier, or read and updated without a prefetch. Thread CPU ns per iteration of "
            f"the bare loop, and what the {N_LINES} lines add to it; medians of {args.reps} "
            f"interleaved runs of {ITERATIONS} iterations ({compiler}, -O2).\n\n"
            + _report.markdown_table(["region", "bare loop, ns / iteration"]
                                     + [f"+ {N_LINES} lines {name}" for name, _, _ in VARIANTS],
                                     rows)
            + "\n\nThe region sizes bracket this machine's caches (L2 512 KiB per core, L3 "
            "32 MiB shared with the host's other tenants) and the reach of its TLB. The "
            "smallest region's row is the cost of the instructions themselves; the larger "
            "regions add the core time that lines from outside the caches take. An OVE step "
            "of the scale benchmark at K = 1e5 touches about 17 lines from DRAM (cache model, "
            "section 2 of the ExtremeSoftmaxSGD benchmarks) in a 98 MB weight matrix: the "
            f"best the loop reaches for {N_LINES} such lines is {best:.0f} ns per iteration, "
            f"about {best / N_LINES:.1f} ns per line, of which "
            f"{extra[(98, VARIANTS[0][0])]:.0f} ns is taken by the prefetches alone, against "
            "an extra of under half the K = 100 step (~135 ns for OVE) that a K = 1e5 / "
            "K = 1e2 epoch ratio under 1.5 allows.\n")
    print(body)
    _report.write_section("prefetch_cost", "Memory probe: core time of random lines", body,
                          packages=())


if __name__ == "__main__":
    main()
