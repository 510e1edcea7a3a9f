"""SparsemaxClassifier and ExtremeSoftmaxSGD on a dense X of mostly zeros, and its CSR copy.

Two parts, every product on one BLAS thread:

1. MNIST as users hold it: the 60,000 training images as a NumPy array of pixels / 255
   (float64, 19% nonzero) and as its CSR copy, ten classes, and the images of the digits
   0-4 and 0-2 (five and three classes), ``SparsemaxClassifier()`` and
   ``ExtremeSoftmaxSGD()`` at their defaults (``random_state=0``): process CPU seconds of one
   fit (median of 3 where a fit takes under 10 s), the solver that ran, and the accuracy on
   the test images of those classes (skipped without the data).
2. The SGD passes against the density: 20,000 x 500 arrays of standard normal entries, each
   nonzero with the given probability, labels drawn from a softmax of a random W;
   ``ExtremeSoftmaxSGD(method, n_epochs=5)`` by the dense driver (the array, its sparse copy
   switched off) and on the CSR input: where a dense X starts being trained on as its sparse
   copy.

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the
same script run on an earlier commit's build) beside this run's. Writes section
"dense_mostly_zeros" of doc/benchmarks.md::

    python benchmarks/bench_dense_mostly_zeros.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
import sparsekit.utils._rows as rows_module  # noqa: E402
from sparsekit import ExtremeSoftmaxSGD, SparsemaxClassifier  # noqa: E402

#: (name, estimator factory) of the image part
ESTIMATORS = [("SparsemaxClassifier()", lambda: SparsemaxClassifier(random_state=0)),
              ("ExtremeSoftmaxSGD()", lambda: ExtremeSoftmaxSGD(random_state=0))]
#: the image part's classes (the digits below each)
CLASS_SUBSETS = (10, 5, 3)
#: the density part's shares of nonzero entries, classes and methods
DENSITIES = (0.1, 0.2, 0.3, 0.4, 0.5, 0.7)
CLASSES = (10, 1000)
METHODS = ("sampled_softmax", "implicit")


def image_rows():
    """The image part (none without MNIST in the data folder)."""
    from sparsekit.datasets import load_mnist
    try:
        X, y = load_mnist()
        X_test, y_test = load_mnist("test")
    except (OSError, ValueError) as exc:
        print(f"image part skipped: {exc}", flush=True)
        return []
    X, X_test = X / 255.0, X_test / 255.0
    rows = []
    for k in CLASS_SUBSETS:
        train, test = y < k, y_test < k
        A, b = X[train], y[train]
        for name, make in ESTIMATORS:
            row = {"estimator": name, "classes": k}
            for form, data in (("array", A), ("CSR", sp.csr_matrix(A))):
                seconds, est = _report.cpu_time(lambda: make().fit(data, b), long=10.0)
                row[form] = {"seconds": seconds, "solver": getattr(est, "solver_", "-"),
                             "accuracy": float(est.score(X_test[test], y_test[test]))}
            rows.append(row)
            print(row, flush=True)
    return rows


def density_rows():
    """The density part: the dense driver and the CSR input at each share and method."""
    rows, rng = [], np.random.default_rng(0)
    n, d = 20_000, 500
    for share in DENSITIES:
        X = rng.standard_normal((n, d)) * (rng.random((n, d)) < share)
        X_csr = sp.csr_matrix(X)
        for k in CLASSES:
            S = X @ rng.standard_normal((d, k)) / np.sqrt(share * d)
            y = np.argmax(S + rng.gumbel(size=S.shape), axis=1)
            row = {"share": share, "classes": k}
            for method in METHODS:
                def fit(data):
                    return ExtremeSoftmaxSGD(method, n_epochs=5, random_state=0).fit(data, y)

                # the dense driver on the array (an earlier build has no sparse copy)
                saved = getattr(rows_module, "SPARSE_COPY_DENSITY", 0.0)
                rows_module.SPARSE_COPY_DENSITY = 0.0
                try:
                    row[f"{method} dense"] = _report.cpu_time(lambda: fit(X))[0]
                finally:
                    rows_module.SPARSE_COPY_DENSITY = saved
                row[f"{method} CSR"] = _report.cpu_time(lambda: fit(X_csr))[0]
            rows.append(row)
            print(row, flush=True)
    return rows


def main():
    warnings.simplefilter("ignore")       # the fits' ConvergenceWarnings: timed as they run
    results, earlier = _report.beside_before(__doc__.split("\n\n")[0], lambda: {
        "images": image_rows(), "densities": density_rows()})
    then = f" (commit {earlier['commit']})" if earlier else ""
    old_images = {(r["estimator"], r.get("classes", 10)): r
                  for r in (earlier or {}).get("images", [])}
    images = []
    for r in results["images"]:
        old = old_images.get((r["estimator"], r["classes"]), {}).get("array")
        images.append([r["estimator"], str(r["classes"]),
                       f"{r['array']['seconds']:.2f} ({r['array']['solver']})",
                       f"{old['seconds']:.2f} ({old['solver']})" if old else "-",
                       f"{r['CSR']['seconds']:.2f} ({r['CSR']['solver']})",
                       f"{r['array']['seconds'] / r['CSR']['seconds']:.2f}x",
                       (f"{old['seconds'] / r['CSR']['seconds']:.2f}x" if old else "-"),
                       f"{r['array']['accuracy']:.4f} / {r['CSR']['accuracy']:.4f}"])
    body = ""
    if images:
        body += ("MNIST's training images as a NumPy array of pixels / 255 (19% nonzero) "
                 "and as its CSR copy: the 60,000 of the ten classes, and the images of the "
                 "digits 0-4 and 0-2 (five and three classes); each estimator at its "
                 "defaults (`random_state=0`): process CPU seconds of one fit (median of 3 "
                 "under 10 s), the solver that ran, and the accuracy on the test images of "
                 "those classes. SparsemaxClassifier's SDCA walks a dense X of at most "
                 "`SPARSE_COPY_DENSITY` = 30% nonzero entries as its CSR copy, and "
                 "`solver=\"auto\"` decides on it (its loss kernel for the other solvers reads "
                 "the copy up to 25% nonzero, 12.5-22.5% with 3 to 7 classes); "
                 "ExtremeSoftmaxSGD trains on that copy up to 30%, as L1LogisticOBA "
                 "solves:\n\n"
                 + _report.markdown_table(
                     ["estimator", "classes", "array, s (solver)", f"before{then}", "CSR, s (solver)",
                      "array / CSR", "before / CSR", "test accuracy (array / CSR)"], images))
    dens = [[f"{r['share']:.0%}", str(r["classes"])]
            + [f"{r[m + ' dense']:.2f} / {r[m + ' CSR']:.2f} "
               f"({r[m + ' CSR'] / r[m + ' dense']:.2f}x)" for m in METHODS]
            for r in results["densities"]]
    body += ("\n\nThe SGD passes against the density: 20,000 x 500 arrays of standard normal "
             "entries, each nonzero with the given probability, labels drawn from a softmax "
             "of a random W; `ExtremeSoftmaxSGD(method, n_epochs=5)`, process CPU seconds of "
             "a fit (median of 3) by the dense driver on the array (its sparse copy switched "
             "off) and on the CSR input (CSR / dense driver):\n\n"
             + _report.markdown_table(["nonzero entries", "classes"]
                                      + [f"{m}: dense driver / CSR, s" for m in METHODS],
                                      dens))
    _report.write_section("dense_mostly_zeros",
                          "SparsemaxClassifier and ExtremeSoftmaxSGD on a dense X of mostly "
                          "zeros", body, packages=("numpy", "scipy", "scikit-learn"))


if __name__ == "__main__":
    main()
