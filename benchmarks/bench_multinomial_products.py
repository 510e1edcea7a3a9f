"""The multinomial datafit's matrix-free Hessian products: walking the columns or the rows.

On a sparse X a product on a free set of (feature, class) entries is X V then Xᵀ R over
the columns holding a free entry. Walked by columns (CSC), every stored entry reads or
updates a whole row of K numbers of the (n, K) matrices U and R; walked by the rows of a
CSR copy of the free columns, each stored entry touches only its column's free classes:
in three passes (U = X V, R from U and P, Xᵀ R; each row of U and R written or read once,
the route until 2026-11-25) or in one (``mn_hessp_free_csr``: each row's uᵢ and rᵢ in cache,
P read once). Free sets are those OBA visits in the first seconds of a fit (``--seconds``)
on the Debian descriptions at 1000 times the smallest active C (58 classes), the first
label of Mulan's Bibtex and Delicious at C = 1 (146 and 352 classes) and MNIST at 100
times the smallest active C (10 classes); for five of them, the seconds of one product
(best of 3) and of the Hessian diagonal by each route, the time to build the rows' copy of
the free columns (once per free set), which route the datafit takes, and the seconds of
the value and gradient at that point with the columns walked or, where the datafit may
(many classes, few features), the rows (best of 3).

Writes section "multinomial_products" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_products.py [--seconds 30]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_compare import load as load_compare  # noqa: E402
from bench_l1_multinomial import load, smallest_C  # noqa: E402

from sparsekit.linear_model._l1_solve import MULTINOMIAL_CG_MAXITER, oba_solve  # noqa: E402
from sparsekit._cython import _oba_kernels as K  # noqa: E402
from sparsekit.losses._multinomial_datafit import Multinomial  # noqa: E402

SETS = [("debian", 1000), ("bibtex", None), ("delicious", None), ("mnist", 100)]


def free_sets(X, codes, C, seconds):
    """(datafit, [(x, free)]): the points and free sets of OBA's Hessians during its first
    ``seconds``."""
    datafit = Multinomial(X, codes, codes.max() + 1, fit_intercept=True)
    seen, hessp, t0 = [], datafit.hessp, time.perf_counter()

    def record(x, free):
        seen.append((x.copy(), np.asarray(free).copy()))
        return hessp(x, free)

    def stop(intermediate_result):
        if time.perf_counter() - t0 > seconds:
            raise StopIteration

    datafit.hessp = record
    oba_solve(datafit, C, 1e-9, 100_000, None, 0, 1.0, MULTINOMIAL_CG_MAXITER, stop)
    datafit.hessp = hessp
    return datafit, seen


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def three_passes(H, v, work):
    """The row walk's product as it was until 2026-11-25: U = X V, the curvature terms and
    Xᵀ R in three passes over an (n, K) matrix (``work``: Xᵀ R's partial sums, kept), then
    R's column sums for the intercepts."""
    f, nwf = H._f, H._w_entries.size
    X = H.free_rows()
    vb = np.zeros(f.n_classes)
    vb[H._b_entries] = v[nwf:]
    U, out = np.empty((f.n_samples, f.n_classes)), np.empty(v.size)
    K.mn_margins_free_csr(X.data, X.indices, X.indptr, H._col_start, H._class,
                          np.ascontiguousarray(v[:nwf]), vb, U)
    K.mn_curvature(f._P, U, f._sw)
    K.mn_rmatmat_free_csr(X.data, X.indices, X.indptr, U, H._col_start, H._class,
                          out[:nwf], work)
    out[nwf:] = U.sum(axis=0)[H._b_entries]
    return out


def measure(datafit, x, free, rng):
    """Seconds of the rows' copy of the free columns, one product and the diagonal by each
    route (and of the rows' product in three passes), the value and gradient by each route,
    the products' largest relative difference and the route the datafit chooses."""
    datafit.value_grad(x)
    chosen = datafit._matrix_free(free).walks_rows
    v = rng.normal(size=free.size)
    cells, outs = {}, []
    for route, classes in (("columns", np.inf), ("rows", 0)):
        datafit.row_walk_classes, datafit.row_walk_ratio = classes, 0.0
        H = datafit._matrix_free(free)
        build, _ = best_of(H.free_rows, 1)      # the copy the row walk reads (made once)
        product, out = best_of(lambda: H(v))
        diagonal, _ = best_of(H.diagonal, 1)
        cells[route] = (build, product, diagonal)
        outs.append(out)
        if route == "rows":
            nwf = H._w_entries.size
            work = np.empty((K.free_chunks(H.free_rows().shape[0], nwf), nwf))
            cells["three passes"], out3 = best_of(lambda: three_passes(H, v, work))
            outs.append(out3)
    del datafit.row_walk_ratio                                  # the class's rule again
    cells["value and gradient, rows"] = None        # the datafit keeps the columns
    for route, classes in (("columns", np.inf), ("rows", Multinomial.row_walk_classes)):
        datafit.row_walk_classes = classes
        if route == "columns" or datafit._walks_x_rows():
            cells["value and gradient, " + route], _ = best_of(lambda: datafit.value_grad(x))
    del datafit.row_walk_classes
    diff = max(float(np.abs(outs[0] - o).max() / max(np.abs(outs[0]).max(), 1e-300))
               for o in outs[1:])
    return cells, diff, "rows" if chosen else "columns"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="seconds of OBA's fit whose free sets are measured")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for name, factor in SETS:
        if factor is None:
            data = load_compare(name)
            X, y = data.X, data.y
        else:
            X, y = load(name)
        codes = np.searchsorted(np.unique(y), y)
        C = factor * smallest_C(X, y, 1.0) if factor else 1.0
        datafit, seen = free_sets(X, codes, C, args.seconds)
        Kc = codes.max() + 1
        print(f"{name}: {len(seen)} free sets", flush=True)
        picks = sorted(set(np.linspace(1, len(seen) - 1, 5).astype(int))) if len(seen) > 1 \
            else range(len(seen))
        for k in picks:
            x, free = seen[k]
            cells, diff, chosen = measure(datafit, x, free, rng)
            H = datafit._matrix_free(free)
            nnz = datafit._col_nnz[H._cols]
            pairs = float(nnz @ np.diff(H._col_start))
            (_, pc, dc), (bc, pr, dr) = cells["columns"], cells["rows"]
            p3 = cells["three passes"]
            vc, vr = (cells["value and gradient, " + r] for r in ("columns", "rows"))
            rows.append([f"{name} ({X.shape[0]} x {X.shape[1]}, K = {Kc})",
                         f"{free.size:,}", f"{H._cols.size:,}",
                         f"{Kc * float(nnz.sum()) / max(pairs, 1):.1f}",
                         f"{pc * 1e3:.1f}", f"{p3 * 1e3:.1f}", f"{pr * 1e3:.1f}",
                         f"{pc / pr:.2f}x", f"{p3 / pr:.2f}x",
                         f"{dc * 1e3:.1f}", f"{dr * 1e3:.1f}", f"{bc * 1e3:.1f}",
                         chosen, f"{diff:.0e}",
                         f"{vc * 1e3:.1f}", f"{vr * 1e3:.1f}" if vr is not None else "—"])
            print("  " + " | ".join(rows[-1][1:]), flush=True)
    body = (" ".join(__doc__.split("\n\n")[1:2]).replace("\n", " ") + "\n\n"
            + _report.markdown_table(
                ["data", "free entries", "free columns", "K nnz / pairs",
                 "product, columns (ms)", "product, rows in 3 passes (ms)",
                 "product, rows in 1 pass (ms)", "speed-up over columns",
                 "speed-up over 3 passes", "diagonal, columns (ms)", "diagonal, rows (ms)",
                 "rows' copy (ms)", "datafit's route", "largest difference",
                 "value and gradient, columns (ms)", "value and gradient, rows (ms)"], rows)
            + "\n\n\"K nnz / pairs\": the stored entries of the free columns times K over "
              "their (stored entry, free class) pairs, the work the row walk saves; "
              "\"largest difference\": between the columns' product and each row walk's, "
              "relative to the largest entry; \"value and gradient, rows\": with K at "
              "least 32 and K times the features at most 2²⁰, the scores walk the rows of X "
              "where the datafit finds that cheaper, and the gradient where X has at least "
              "4 times more rows than columns (—: the datafit keeps the columns).")
    _report.write_section("multinomial_products",
                          "Multinomial Hessian products: columns or rows", body)


if __name__ == "__main__":
    main()
