"""Multinomial Hessian products on a sparse X walked by columns: free entries or all classes.

A matrix-free Hessian product of the multinomial ℓ1 fit on a sparse X whose products walk
the columns (fewer than 32 classes and (n, K) scores under 16 MB, the free columns holding
less than half of X's entries) computes X V and Xᵀ R over the free columns. By all classes
(the route before): V and the result as (free columns × K) arrays, so a free set touching
most columns holds two arrays of the weights' size per product, whatever its share of
their classes, and each stored entry updates K classes (the AVX2 kernels with at most 12
classes). By free entries (``mn_margins_free_csc``, ``mn_rmatmat_free_csc``): each stored
entry touches its column's free classes only, with no such arrays. For free sets of several
shapes (columns drawn at random, the classes of each drawn at random): milliseconds of one
product (median of 5 after one warm-up call, one thread; both routes in the same run, the
same products to 1e-12), the memory a product allocates beyond its result
(tracemalloc's peak during the call), in MiB, and the route a fit's product takes: free
entries where they are at most half of their columns' classes, unless the columns are long
enough for the AVX2 kernel's blocks of rows (at most 12 classes).

Writes section "multinomial_free_products" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_free_products.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import time
import tracemalloc

import numpy as np
import scipy.sparse as sp
from bench_multinomial_sparse_products import sparse

from sparsekit.losses._multinomial_datafit import Multinomial

#: (share of the columns, classes a column) of each free set
FREE_SETS = [(1.0, 1), (1.0, 0.5), (1.0, 1.0), (0.25, 1), (0.25, 1.0)]


def cases():
    """(name, CSR X, y, K)."""
    X, y = sparse("mnist")
    yield "MNIST, 60000 x 784", X, y.astype(int), 10
    X, y = sparse("debian")
    yield f"Debian, 8 sections, {X.shape[0]} x {X.shape[1]}", X, np.unique(y, return_inverse=True)[1], 8
    rng = np.random.default_rng(0)
    n, d, per_row = 30_000, 300_000, 50
    X = sp.csr_matrix((rng.random(n * per_row), (np.repeat(np.arange(n), per_row),
                                                  rng.integers(0, d, n * per_row))),
                      shape=(n, d))
    X.sum_duplicates()
    X = sp.csr_matrix(X[:, np.flatnonzero(X.getnnz(axis=0))])
    for K in (5, 20):
        yield f"{n} x {X.shape[1]:,}, 50 entries a row", X, np.arange(n) % K, K


def free_set(rng, f, cols_share, classes):
    """Sorted free weight entries: ``cols_share`` of the columns that store an entry, each
    with ``classes`` of its classes (a count, or a share of K) drawn at random."""
    K = f.n_classes
    stored = np.flatnonzero(f._col_nnz)
    cols = np.sort(rng.choice(stored, max(1, int(cols_share * stored.size)), replace=False))
    k = classes if isinstance(classes, int) else max(1, int(round(classes * K)))
    picks = np.argsort(rng.random((cols.size, K)), axis=1)[:, :k]
    return np.sort((cols[:, None] * K + picks).ravel())


def product(H, v):
    """(milliseconds, median of 5 after a warm-up call; MiB allocated during the call
    beyond its result; the result)."""
    out = H(v)
    tracemalloc.start()
    H(v)
    peak = tracemalloc.get_traced_memory()[1] - out.nbytes
    tracemalloc.stop()
    times = []
    for _ in range(5):
        start = time.perf_counter()
        H(v)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times)), peak / 2**20, out


def main():
    rng = np.random.default_rng(0)
    rows = []
    for name, X, y, K in cases():
        f = Multinomial(X, y, K, fit_intercept=True)
        x = rng.normal(scale=0.1, size=f.n_params)
        f.value_grad(x)
        weights_mib = 8 * f.n_params / 2**20
        for cols_share, classes in FREE_SETS:
            free = free_set(rng, f, cols_share, classes)
            H = f._matrix_free(free)
            if H.walks_rows or H._by_rows:
                continue                          # the rows' routes, not compared here
            v = rng.normal(size=free.size)
            chosen = "free entries" if H._by_entries else "all classes"
            H._by_entries = True
            t_new, m_new, new = product(H, v)
            H._by_entries = False
            t_old, m_old, old = product(H, v)
            np.testing.assert_allclose(new, old, rtol=1e-12, atol=1e-12 * np.abs(old).max())
            per_col = classes if isinstance(classes, int) else f"{classes:.0%} of K"
            rows.append([name, K, f"{weights_mib:.1f}", f"{cols_share:.0%}", per_col,
                         f"{free.size:,}", f"{t_old:.2f}", f"{t_new:.2f}",
                         f"{t_new / t_old:.2f}", f"{m_old:.1f}", f"{m_new:.1f}", chosen])
            print(*rows[-1], flush=True)
    body = f"""{__doc__.split("Writes section")[0].split(chr(10), 2)[2].strip()}

{_report.markdown_table(["X", "K", "weights MiB", "free columns", "classes a column",
                         "free entries", "all classes (ms)", "free entries (ms)", "ratio",
                         "all classes: MiB allocated", "free entries: MiB allocated",
                         "the fit's route"],
                        rows)}
"""
    _report.write_section("multinomial_free_products",
                          "Multinomial Hessian products on a sparse X: free entries or "
                          "all classes", body)


if __name__ == "__main__":
    main()
