"""The multinomial datafit's formed Hessian on a sparse X: the sparse route's time per update.

OBA forms the Hessian on a free set of (feature, class) entries when that costs fewer than
about 150 matrix-free products; on a sparse X with few nonzeros per free column it is
summed from the stored entries (the sparse route): Σᵢ rᵢ(rᵢ + 1)/2 updates for rᵢ free
weight entries in row i, and rᵢ runs over the free intercepts. Free sets are those OBA
visits in the first seconds of a fit (``--seconds``) on the Debian descriptions at 10 and
100 times the smallest active C (58 classes) and the first label of Mulan's Bibtex and
Delicious at C = 0.2 and 1 (146 and 352 classes); for the three largest of each that the
datafit forms by the sparse route, the seconds of one formed Hessian (best of 3), its
updates and the nanoseconds per update (the intercepts' own block, by BLAS, included).

Writes section "multinomial_gram" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_gram.py [--seconds 30]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_compare import load as load_compare  # noqa: E402
from bench_l1_multinomial import load, smallest_C  # noqa: E402
from bench_multinomial_products import best_of, free_sets  # noqa: E402

from sparsekit._cython._gram_kernels import mn_entry_counts  # noqa: E402

SETS = [("debian", 10), ("debian", 100), ("bibtex", 1.0), ("delicious", 0.2),
        ("delicious", 1.0)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="seconds of OBA's fit whose free sets are measured")
    args = parser.parse_args()
    rows = []
    for name, c in SETS:
        if name == "debian":
            X, y = load(name)
            C, label = c * smallest_C(X, y, 1.0), f"{c:g} C_min"
        else:
            data = load_compare(name)
            X, y, C, label = data.X, data.y, c, f"C = {c:g}"
        codes = np.searchsorted(np.unique(y), y)
        datafit, seen = free_sets(X, codes, C, args.seconds)
        formed = []
        for x, free in seen:
            datafit.value_grad(x)
            H = datafit._matrix_free(free)
            m = H.shape[0]
            if 0 < m <= datafit.max_explicit:
                costs = datafit._gram_costs(H)
                if min(costs, key=costs.get) == "sparse":
                    formed.append((m, x, free))
        print(f"{name} {label}: {len(seen)} free sets, {len(formed)} by the sparse route",
              flush=True)
        picks = sorted(formed, key=lambda t: t[0])[-3:]
        for m, x, free in picks:
            datafit.value_grad(x)
            H = datafit._matrix_free(free)
            H.free_rows()
            pairs, entries = mn_entry_counts(datafit.X.indices, datafit.X.indptr, H._cols,
                                             H._col_start, np.empty(datafit.n_samples))
            updates = pairs + entries * H._b_entries.size
            seconds, _ = best_of(lambda: datafit._gram_sparse(H))
            rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, K = {codes.max() + 1})",
                         label, f"{m:,}", f"{H._b_entries.size}", f"{pairs:.3g}",
                         f"{entries * H._b_entries.size:.3g}", f"{seconds * 1e3:.1f}",
                         f"{seconds * 1e9 / updates:.2f}"])
            print("  " + " | ".join(rows[-1][1:]), flush=True)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "C", "free entries", "free intercepts", "updates, weights",
                 "updates, intercepts", "formed (ms)", "ns per update"], rows))
    _report.write_section("multinomial_gram",
                          "Multinomial Hessian formed on a sparse X: time per update", body)


if __name__ == "__main__":
    main()
