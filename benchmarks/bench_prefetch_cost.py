"""What a prefetched random cache line costs a busy core, by the size of the region it is in.

Compiles ``prefetch_cost.c`` with gcc and times a loop of L1-resident gathers and updates
(about one OVE step of ExtremeSoftmaxSGD at K = 100) with 0 and with N write-intent
prefetches of random lines per iteration, for regions from the L2-sized to well beyond the
L3 and TLB reach. The difference, per line, is core time the prefetches take from the loop
although nothing waits for their lines: a bound on what prefetching can hide of the
extreme_softmax scale benchmark's extra time per step at K = 1e5 (doc/benchmarks.md,
ExtremeSoftmaxSGD section 2). Run::

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
N_PREFETCH = 16      # about the DRAM lines of an OVE step at K = 1e5 (cache model: 17.3)
WORK = 160           # gather-and-update operations per iteration
ITERATIONS = 200_000


def build(folder):
    source = Path(__file__).with_name("prefetch_cost.c")
    binary = Path(folder) / "prefetch_cost"
    subprocess.run(["gcc", "-O2", "-o", str(binary), str(source)], check=True)
    version = subprocess.run(["gcc", "--version"], check=True, capture_output=True,
                             text=True).stdout.splitlines()[0]
    return binary, version


def ns_per_iteration(binary, region_mib, n_prefetch):
    out = subprocess.run([str(binary), str(region_mib), str(n_prefetch), str(WORK),
                          str(ITERATIONS)], check=True, capture_output=True, text=True)
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
                for n in (0, N_PREFETCH):
                    times.setdefault((mib, n), []).append(ns_per_iteration(binary, mib, n))
    rows, per_line = [], {}
    for mib in REGIONS_MIB:
        base = statistics.median(times[(mib, 0)])
        with_pf = statistics.median(times[(mib, N_PREFETCH)])
        per_line[mib] = (with_pf - base) / N_PREFETCH
        rows.append([f"{mib} MiB", f"{base:.0f}", f"{with_pf:.0f}",
                     f"{with_pf - base:.0f}", f"{per_line[mib]:.1f}"])
    body = (f"A loop of {WORK} L1-resident gather-and-update operations per iteration in four "
            f"parts, with 0 or {N_PREFETCH} PREFETCHW of random lines of the region spread "
            "over the parts (lines nothing reads later); thread CPU ns per iteration, median "
            f"of {args.reps} interleaved runs of {ITERATIONS} iterations ({compiler}, "
            "-O2).\n\n"
            + _report.markdown_table(
                ["region", "ns / iteration, no prefetch", f"with {N_PREFETCH} prefetches",
                 "extra", "extra per line"], rows)
            + "\n\nThe region sizes bracket this machine's caches (L2 512 KiB per core, L3 "
            "32 MiB shared) and the reach of its TLB. The row of the smallest region is the "
            "cost of the instructions themselves; what the larger regions add is core time "
            "each line outside the caches takes although nothing waits for it. An OVE step "
            "of the scale benchmark at K = 1e5 asks for about 17 such lines from DRAM "
            "(cache model, section 2 of the ExtremeSoftmaxSGD benchmarks) from a 98 MB "
            f"weight matrix: at the 98 MiB row's rate, about {17 * per_line[98]:.0f} ns of "
            "core time per step before any wait for a line that arrives late, against an "
            "extra of under half the K = 100 step (~135 ns for OVE) that a K = 1e5 / K = 1e2 "
            "epoch ratio under 1.5 allows.\n")
    print(body)
    _report.write_section("prefetch_cost", "Memory probe: core time per prefetched line", body,
                          packages=())


if __name__ == "__main__":
    main()
