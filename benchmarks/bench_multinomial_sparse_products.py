"""Multinomial ℓ1 logistic regression on a sparse X: its products by AVX2 kernels.

The two products of every multinomial gradient and matrix-free Hessian product on a sparse
X walked by columns (``mn_margins_csc``: Z = b + X[:, cols] W, ``mn_rmatmat_csc``: Xᵀ R
over the listed columns) and a whole Hessian product (X V, the softmax curvature, Xᵀ R),
one call each, every column that stores an entry listed unless the row says otherwise:
milliseconds (median of 5 after one warm-up call) of the scalar loops (``simd=False``)
and, with at most 12 classes, of the AVX2 kernels where the CPU runs them (the default;
X W by them only where the listed columns store 8 entries or more per block of 1,024
rows, else by the loops), on 1 and 2 threads, in the same run; the Hessian product by the loops over the columns
against one pass over the rows of X (``mn_hessp_csr``, the other columns' weights zero:
the route of the fits' matrix-free Hessians where the free columns hold half of X's
entries). Then
``L1LogisticOBA(multiclass="multinomial")`` fits on sparse X (CSR, float64; an
unpenalized intercept, tol 1e-8, its default): MNIST (pixels / 255) at 10 and 100 times
the smallest C with a nonzero weight and at C = 1, digits (pixels / 16) at 10, 100 and
1000 times, and the Debian package descriptions of the 8 largest sections (TF-IDF of
words) at 10 and 100 times and at C = 1: wall seconds (median of 3 where a fit takes under 5 s) and
iterations, and the objective as a gap to the earlier commit's (negative: lower).

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's fits (the
same script run on an earlier commit's build, whose kernels may lack ``simd``: its kernel
table is then left out) beside this run's. Writes section "multinomial_sparse_products" of
doc/benchmarks.md::

    python benchmarks/bench_multinomial_sparse_products.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import numpy as np
import scipy.sparse as sp
from bench_l1_multinomial import load, objective, smallest_C
from sklearn.feature_extraction.text import TfidfVectorizer

from sparsekit import L1LogisticOBA
from sparsekit._cython import _oba_kernels as K
from sparsekit.datasets import load_debian

#: C as multiples of the smallest C with a nonzero weight (None: C = 1, the default)
FACTORS = {"mnist": [10, 100, None], "digits": [10, 100, 1000], "debian": [10, 100, None]}
DEBIAN_SECTIONS = 8


def sparse(name):
    """(CSR X, y) of a data set: MNIST and digits as bench_l1_multinomial loads them, the
    Debian descriptions of the DEBIAN_SECTIONS largest sections as TF-IDF of words."""
    if name == "debian":
        corpus = load_debian(data_home=_report.DATA_HOME)
        section = np.asarray(corpus.section)
        names, counts = np.unique(section, return_counts=True)
        keep = np.isin(section, names[np.argsort(-counts)[:DEBIAN_SECTIONS]])
        X = TfidfVectorizer().fit_transform([t for t, k in zip(corpus.text, keep) if k])
        return sp.csr_matrix(X, dtype=np.float64), section[keep]
    X, y = load(name)
    return sp.csr_matrix(X, dtype=np.float64), y


def has_simd_argument():
    """Whether this build's CSC kernels take ``simd`` (an earlier build's may not)."""
    S = sp.csc_matrix(np.ones((2, 1)))
    try:
        K.mn_margins_csc(S.data, S.indices, S.indptr, np.ones((1, 2)),
                         np.zeros(1, dtype=np.int64), np.zeros(2), np.empty((2, 2)), 1, False)
    except TypeError:
        return False
    return True


def kernel_cases():
    """(name, CSC X, K, cols or None for every column that stores an entry)."""
    X, _ = sparse("mnist")
    X = X.tocsc()
    yield "MNIST, 60000 x 784, 19% stored, K = 10", X, 10, None
    busiest = np.sort(np.argsort(-np.diff(X.indptr))[:196])
    yield "MNIST, its 196 busiest columns", X, 10, busiest
    X = sp.random(300_000, 1_000, density=0.01, format="csc", random_state=0)
    yield "300000 x 1000, 1% stored, K = 5", X, 5, None
    X, _ = sparse("debian")
    X = X.tocsc()
    yield f"Debian, {DEBIAN_SECTIONS} sections, {X.shape[0]} x {X.shape[1]}, K = 8", X, 8, None
    yield "the same, K = 12", X, 12, None
    X, _ = sparse("digits")
    yield "digits, 1797 x 64, K = 10", X.tocsc(), 10, None


def kernel_rows():
    out = []
    rng = np.random.default_rng(1)
    for name, X, k, cols in kernel_cases():
        X.sort_indices()
        if cols is None:
            cols = np.flatnonzero(np.diff(X.indptr))
        cols = cols.astype(np.int64)
        n = X.shape[0]
        W, b = rng.normal(size=(cols.size, k)), rng.normal(size=k)
        R, Z, G = rng.normal(size=(n, k)), np.empty((n, k)), np.empty((cols.size, k))
        P = np.exp(rng.normal(size=(n, k)))
        P /= P.sum(axis=1, keepdims=True)
        sw = np.full(n, 1.0 / n)
        rows = X.tocsr()                             # the other columns' weights zero
        V = np.zeros((X.shape[1], k))
        V[cols] = W
        width = (X.shape[1] + 1) * 4 * -(-k // 4)
        work, out_b = np.empty((K.free_chunks(n, width), width)), np.empty(k)
        GV = np.empty_like(V)

        def by_columns(threads):
            K.mn_margins_csc(X.data, X.indices, X.indptr, W, cols, b, Z, threads, False)
            K.mn_curvature(P, Z, sw, threads)
            K.mn_rmatmat_csc(X.data, X.indices, X.indptr, Z, cols, G, False, threads, False)

        row = {"case": name}
        for threads in (1, 2):
            for simd in (False, True):
                key = f"{'simd' if simd else 'loops'}_{threads}"
                row[f"margins_{key}"] = _report.median_time(
                    lambda: K.mn_margins_csc(X.data, X.indices, X.indptr, W, cols, b, Z,
                                             threads, simd), 5, 1)[0]
                row[f"rmatmat_{key}"] = _report.median_time(
                    lambda: K.mn_rmatmat_csc(X.data, X.indices, X.indptr, R, cols, G, False,
                                             threads, simd), 5, 1)[0]
            row[f"hessp_loops_{threads}"] = _report.median_time(
                lambda: by_columns(threads), 5, 1)[0]
            row[f"hessp_simd_{threads}"] = _report.median_time(
                lambda: K.mn_hessp_csr(rows.data, rows.indices, rows.indptr, V, b, P, sw, GV,
                                       out_b, work, threads), 5, 1)[0]
        out.append(row)
        print(row, flush=True)
    return out


def fit_cases():
    """(name, X, y, C)."""
    for name, factors in FACTORS.items():
        X, y = sparse(name)
        c_min = smallest_C(X, y, 1.0)
        for factor in factors:
            yield (f"{name} {X.shape[0]} x {X.shape[1]}, "
                   + (f"{factor} C_min" if factor else "C = 1"), X, y,
                   factor * c_min if factor else 1.0)


def fit_rows():
    out = []
    for name, X, y, C in fit_cases():
        seconds, oba, _ = _report.timed_fit(L1LogisticOBA(multiclass="multinomial", C=C),
                                            X, y)
        out.append({"data": name, "oba": seconds, "iterations": int(oba.n_iter_[0]),
                    "objective": objective(X, y, oba.coef_, oba.intercept_, C, 1.0)})
        print(out[-1], flush=True)
    return out


def kernel_table(rows):
    table = []
    for r in rows:
        cells = [r["case"]]
        for product in ("margins", "rmatmat", "hessp"):
            for threads in (1, 2):
                loops, simd = r[f"{product}_loops_{threads}"], r[f"{product}_simd_{threads}"]
                cells.append(f"{loops * 1e3:.1f} → {simd * 1e3:.1f} ({loops / simd:.1f}x)")
        table.append(cells)
    return ("One call, milliseconds: the scalar loops → the default route, the AVX2 "
            "kernels (X W by the loops where the columns store fewer than 8 entries per "
            "block of 1,024 rows: Debian's), in the same run (the loops' time over the "
            "default's); a Hessian product by the loops over the columns → one pass over the "
            "rows of X (its other columns' weights zero):\n\n"
            + _report.markdown_table(["X, classes", "X W, 1 thread", "X W, 2 threads",
                                      "Xᵀ R, 1 thread", "Xᵀ R, 2 threads",
                                      "Hessian product, 1 thread",
                                      "Hessian product, 2 threads"], table))


def main():
    results, earlier = _report.beside_before(__doc__.split("\n\n")[0], lambda: {
        "kernels": kernel_rows() if has_simd_argument() else [], "fits": fit_rows()})
    then = f" (commit {earlier['commit']})" if earlier else ""
    body = kernel_table(results["kernels"]) if results["kernels"] else ""
    old_fits = {r["data"]: r for r in (earlier or {}).get("fits", [])}
    table = []
    for r in results["fits"]:
        old = old_fits.get(r["data"])
        table.append([
            r["data"], f"{r['oba']:.2f} ({r['iterations']})",
            f"{old['oba']:.2f} ({old['iterations']})" if old else "-",
            f"{old['oba'] / r['oba']:.2f}x" if old else "-",
            f"{(r['objective'] - old['objective']) / abs(old['objective']):+.1e}"
            if old else "-"])
    body += ("\n\nMultinomial fits on sparse X (CSR, wall seconds, one BLAS thread):\n\n"
             + _report.markdown_table(
                 ["data", "OBA, s (iterations)", f"before{then}", "speed-up",
                  "objective vs before"], table))
    _report.write_section("multinomial_sparse_products",
                          "Multinomial ℓ1 logistic regression on a sparse X: its products",
                          body)


if __name__ == "__main__":
    main()
