"""SparsemaxClassifier on dense tables: its loss kernel, and its fits beside LogisticRegression.

Four parts, every product on one BLAS thread:

1. The fused loss and gradient of the dense kernel (``cpu_data_term``: the scores ``X W +
   b``, each row's Fenchel-Young loss and ``p - y``, then ``Xᵀ G``, in blocks of rows), ms
   per evaluation (median of 30), beside NumPy's two products alone (``X @ W`` and
   ``X.T @ G``: no loss), on random dense X of the shapes given, float64 (and float32
   for one output), at one output (two classes: the box), 3 to 10 classes (the simplex).
2. ``SparsemaxClassifier()`` and ``LogisticRegression()`` at their defaults, fit on
   standardized dense tables (median of 5 fits after one untimed fit): scikit-learn's
   breast cancer (569 x 30, 2 classes) and ``make_classification`` tables (half the
   columns informative, a tenth of the labels drawn at random, seed 0); iterations,
   training accuracy, time ratio.
3. The same kernel on a dense X with a given share of nonzero entries (50,000 x 100, the
   others 0) against the CSR kernel on its CSR copy, ms per evaluation (median of 20), by
   the number of outputs: the evidence for the share below which ``fit`` takes the CSR
   copy (``fits_through_csr``).
4. The CSR kernel on random sparse rows of 10, 50 and 200 stored entries (50,000 x 1000)
   with 3 to 20 classes on the simplex, ms per evaluation (median of 30).

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the
same script run on an earlier commit's build) beside this run's. Writes section
"sparsemax_dense_kernel" of doc/benchmarks.md::

    python benchmarks/bench_sparsemax_dense.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import SparsemaxClassifier  # noqa: E402
from sparsekit._cython._projections import POLYTOPE_CODES  # noqa: E402
from sparsekit.losses._fenchel_young_datafit import cpu_data_term  # noqa: E402

#: (rows, columns, outputs, dtype) of the kernel part
KERNEL_SHAPES = [(100_000, 50, 1, "float64"), (100_000, 50, 1, "float32"),
                 (20_000, 20, 1, "float64"), (20_000, 500, 1, "float64"),
                 (100_000, 50, 3, "float64"), (100_000, 50, 5, "float64"),
                 (100_000, 50, 10, "float64"), (20_000, 500, 3, "float64"),
                 (20_000, 500, 10, "float64")]
#: (name, rows, columns, classes) of the fit part (rows None: breast cancer)
TABLES = [("breast cancer", None, 30, 2), ("make_classification", 20_000, 20, 2),
          ("make_classification", 20_000, 20, 5), ("make_classification", 100_000, 50, 2),
          ("make_classification", 5_000, 100, 3)]


def kernel_rows():
    rows = []
    for n, d, k, dtype in KERNEL_SHAPES:
        rng = np.random.default_rng(0)
        X = rng.standard_normal((n, d)).astype(dtype)
        labels = rng.integers(0, max(k, 2), n)
        Y = sp.csr_matrix((labels == 1).astype(float)[:, None] if k == 1 else np.eye(k)[labels])
        W = (0.1 * rng.standard_normal((d, k))).astype(dtype)
        b = np.zeros(k, dtype=dtype)
        code = POLYTOPE_CODES["box" if k == 1 else "simplex"]
        term = cpu_data_term(X, Y, np.ones(n, dtype=dtype), code, 1.0)
        G = rng.standard_normal((n, k)).astype(dtype)
        fused, _ = _report.median_time(lambda: term(W, b), repeat=30, warmup=2)
        products, _ = _report.median_time(lambda: (X @ W, X.T @ G), repeat=30, warmup=2)
        rows.append({"shape": f"{n} x {d}, {k} output{'s' if k > 1 else ''}, {dtype}",
                     "kernel": fused * 1e3, "numpy": products * 1e3})
        print(rows[-1], flush=True)
    return rows


def tables():
    for name, n, d, k in TABLES:
        if n is None:
            X, y = load_breast_cancer(return_X_y=True)
        else:
            X, y = make_classification(n, d, n_informative=d // 2, n_classes=k,
                                       flip_y=0.1, random_state=0)
        yield f"{name} {X.shape[0]} x {X.shape[1]}, {k} classes", \
            StandardScaler().fit_transform(X), y


def fit_rows():
    rows = []
    for name, X, y in tables():
        row = {"data": name}
        for label, make in (("smx", SparsemaxClassifier), ("lr", LogisticRegression)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = make()
                seconds, est = _report.median_time(lambda: est.fit(X, y), repeat=5, warmup=1)
            row[label] = seconds * 1e3
            row[f"{label}_iter"] = int(np.max(est.n_iter_))
            row[f"{label}_acc"] = float(est.score(X, y))
        rows.append(row)
        print(row, flush=True)
    return rows


def density_rows(shares=(0.05, 0.1, 0.15, 0.25, 0.4), outputs=(1, 3, 5, 7, 8, 10)):
    rows = []
    rng = np.random.default_rng(0)
    n, d = 50_000, 100
    for share in shares:
        X = rng.standard_normal((n, d))
        X[rng.random((n, d)) > share] = 0
        Xs = sp.csr_matrix(X)
        row = {"share": share}
        for k in outputs:
            labels = rng.integers(0, max(k, 2), n)
            Y = sp.csr_matrix((labels == 1).astype(float)[:, None] if k == 1
                              else np.eye(k)[labels])
            W, b = 0.1 * rng.standard_normal((d, k)), np.zeros(k)
            code = POLYTOPE_CODES["box" if k == 1 else "simplex"]
            dense = cpu_data_term(X, Y, np.ones(n), code, 1.0)
            csr = cpu_data_term(Xs, Y, np.ones(n), code, 1.0)
            row[k] = [_report.median_time(lambda f=f: f(W, b), repeat=20, warmup=2)[0] * 1e3
                      for f in (dense, csr)]
        rows.append(row)
        print(row, flush=True)
    return rows


def csr_rows(entries=(10, 50, 200), outputs=(3, 5, 10, 16, 20)):
    rows = []
    n, d = 50_000, 1000
    for nnz in entries:
        X = sp.random(n, d, density=nnz / d, format="csr", random_state=0)
        row = {"entries": nnz}
        for k in outputs:
            Y = sp.csr_matrix(np.eye(k)[np.random.default_rng(1).integers(0, k, n)])
            W, b = 0.3 * np.random.default_rng(2).standard_normal((d, k)), np.zeros(k)
            term = cpu_data_term(X, Y, np.ones(n), POLYTOPE_CODES["simplex"], 1.0)
            row[str(k)] = _report.median_time(lambda: term(W, b), repeat=30, warmup=2)[0] * 1e3
        rows.append(row)
        print(row, flush=True)
    return rows


def main():
    results, earlier = _report.beside_before(__doc__.split("\n\n")[0], lambda: {
        "kernel": kernel_rows(), "fits": fit_rows(), "density": density_rows(),
        "csr": csr_rows()})
    before = earlier or {"commit": None, "kernel": [], "fits": []}
    old_kernel = {r["shape"]: r for r in before["kernel"]}
    old_fits = {r["data"]: r for r in before["fits"]}
    then = f" (commit {before['commit']})" if earlier else ""
    header = ["X (dense)", "fused kernel, ms", f"before{then}", "NumPy's two products, ms",
              "kernel / products"]
    kernel = [[r["shape"], f"{r['kernel']:.2f}",
               f"{old_kernel[r['shape']]['kernel']:.2f}" if r["shape"] in old_kernel else "-",
               f"{r['numpy']:.2f}", f"{r['kernel'] / r['numpy']:.2f}x"]
              for r in results["kernel"]]
    fit_header = ["table", "SparsemaxClassifier, ms (iterations)", f"before{then}",
                  "LogisticRegression, ms (iterations)", "time / LogisticRegression",
                  "training accuracy (SMX / LR)"]
    fits = [[r["data"], f"{r['smx']:.1f} ({r['smx_iter']})",
             f"{old_fits[r['data']]['smx']:.1f}" if r["data"] in old_fits else "-",
             f"{r['lr']:.1f} ({r['lr_iter']})", f"{r['smx'] / r['lr']:.2f}x",
             f"{r['smx_acc']:.4f} / {r['lr_acc']:.4f}"] for r in results["fits"]]
    body = ("Loss and gradient of SparsemaxClassifier's dense kernel per evaluation (median "
            "of 30), beside NumPy's two products alone (no loss) on the same X; one BLAS "
            "thread.\n\n" + _report.markdown_table(header, kernel)
            + "\n\nFits at the defaults on standardized dense tables (median of 5 after one "
            "untimed fit):\n\n" + _report.markdown_table(fit_header, fits))
    outputs = [k for k in results["density"][0] if k != "share"]
    density = [[f"{r['share']:.0%}"] + [f"{r[k][0]:.2f} / {r[k][1]:.2f} ({r[k][1] / r[k][0]:.2f})"
                                        for k in outputs] for r in results["density"]]
    body += ("\n\nDense X (50,000 x 100) with the given share of nonzero entries: the dense "
             "kernel / the CSR kernel on its CSR copy, ms per evaluation (median of 20), "
             "and their ratio, by outputs (1: two classes on the box; more: classes on the "
             "simplex):\n\n" + _report.markdown_table(
                 ["nonzero"] + [f"{k} output{'s' if k > 1 else ''}" for k in outputs], density))
    old_csr = {r["entries"]: r for r in before.get("csr", [])}
    classes = [k for k in results["csr"][0] if k != "entries"]
    csr = [[str(r["entries"])] + [f"{r[k]:.2f}" + (f" ({old_csr[r['entries']][k]:.2f})"
                                                   if r["entries"] in old_csr else "")
                                  for k in classes] for r in results["csr"]]
    body += ("\n\nThe CSR kernel on random rows of the given number of stored entries "
             "(50,000 x 1000; classes on the simplex), ms per evaluation (median of 30)"
             + (f", before{then} in parentheses" if earlier else "") + ":\n\n"
             + _report.markdown_table(["entries a row"] + [f"{k} classes" for k in classes],
                                      csr))
    _report.write_section("sparsemax_dense_kernel",
                          "SparsemaxClassifier on dense tables: the loss kernel and the fits",
                          body)


if __name__ == "__main__":
    main()
