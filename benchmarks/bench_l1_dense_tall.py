"""L1LogisticOBA on tall dense tables: the subspace Hessian's route, and fits beside the peers.

Four parts, every product on one BLAS thread:

1. The subspace Hessian ``[X_F, 1]ᵀ diag(D) [X_F, 1]`` of the logistic datafit on a random
   dense X (Fortran order, curvature weights of a random w), ms per formation (median of
   5 after one untimed) by its two routes: NumPy's float64 products of the slice (``X[:, F] * √D``, then
   ``Xsᵀ Xs``) and float32 panels through ``ssyrk`` (``PanelGram``, formed anew each time),
   for k free columns of the given shapes; and the route the datafit takes.
2. ``L1LogisticOBA()`` at its defaults (C = 1, one-vs-rest, an unpenalized intercept, tol
   1e-8) on ``make_classification`` tables (n_informative min(20, d − 4), seed 0; float32
   as generated then cast, or float64), process CPU seconds of one fit (median of 3 where a fit takes
   under 5 s); the peers in the same run: ``LogisticRegression()`` (lbfgs, its ℓ2 default)
   and LIBLINEAR ``-s 6 -B 1 -R -e 1e-4 -c 1`` (the same objective as OBA's, one-vs-rest
   for more classes; its problem built untimed), with OBA's objective's relative gap to
   LIBLINEAR's (negative: OBA's is lower).

3. Mostly-zero arrays: 50,000 x 500 dense arrays at 10-50% nonzero entries, binary, at the
   defaults, against their CSR copies (where a dense X starts being solved as its sparse
   copy).
4. An image table as users hold it: MNIST's 60,000 training images as the NumPy array of
   raw pixels (uint8, 0-255) and as pixels / 255 (float64), digit 0 against the rest, and
   the array's CSR copy beside: ``L1LogisticOBA(C=C)`` (tol 1e-8) against LIBLINEAR at
   ``-e 1e-4``, CPU seconds of one fit; then ``L1LogisticOBA()`` on the raw array with its
   ten classes, one-vs-rest, against LIBLINEAR's one-vs-rest (skipped without the data).

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the
same script run on an earlier commit's build) beside this run's. Writes section
"l1_dense_tall" of doc/benchmarks.md::

    python benchmarks/bench_l1_dense_tall.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import L1LogisticOBA  # noqa: E402
from sparsekit.losses._logistic_datafit import Logistic  # noqa: E402

#: (rows, columns, dtype, free columns) of the Gram part
GRAM_SHAPES = [(1_000_000, 50, "float32", (4, 16, 50)), (100_000, 50, "float64", (4, 16, 32, 50)),
               (5_000, 50, "float64", (8, 50)), (300, 50, "float64", (50,))]
#: (rows, columns, classes, dtype) of the fit part
TABLES = [(1_000_000, 50, 2, "float32"), (300_000, 50, 5, "float32"),
          (200_000, 20, 2, "float64"), (100_000, 100, 3, "float64"), (20_000, 30, 2, "float64")]


def gram_rows():
    rows = []
    rng = np.random.default_rng(0)
    for n, d, dtype, ks in GRAM_SHAPES:
        X = np.asfortranarray(rng.standard_normal((n, d)).astype(dtype))
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        datafit = Logistic(X, y, fit_intercept=True)
        datafit.value_grad(0.1 * rng.standard_normal(d + 1))
        for k in ks:
            cols = np.sort(rng.choice(d, k, replace=False))
            numpy, _ = _report.median_time(lambda: datafit._gram(cols, True, False, syrk=False),
                                           repeat=5, warmup=1)

            def panels():
                datafit._panel_gram = None       # formed anew, not carried
                datafit._gram(cols, True, False, syrk=True)
            panel_ms = 1e3 * _report.median_time(panels, repeat=5, warmup=1)[0]
            datafit._panel_gram = None
            H = datafit.hessp(datafit._x_at, np.append(cols, d))
            if not getattr(H, "is_explicit", False):
                route = "matrix-free"
            else:
                route = "panels" if datafit._panel_gram is not None else "float64"
            rows.append({"shape": f"{n} x {d} {dtype}", "k": k, "numpy": 1e3 * numpy,
                         "panels": panel_ms, "route": route})
            datafit._panel_gram = None
            print(rows[-1], flush=True)
    return rows


def liblinear(X, y, C=1.0, long=5.0):
    """(CPU seconds, coef (classes x features, one row for two classes), intercepts)."""
    from liblinear import liblinearutil

    prob = liblinearutil.problem([float(v) for v in y], np.ascontiguousarray(X, np.float64))
    param = liblinearutil.parameter(f"-s 6 -B 1 -R -q -c {C!r} -e 1e-4")
    seconds, model = _report.cpu_time(lambda: liblinearutil.train(prob, param), long=long)
    labels = model.get_labels()
    k = 1 if len(labels) == 2 else len(labels)
    # a copy: the model's memory goes with it; its features end at the last column that
    # stores a nonzero (MNIST's last pixels are 0 in every image), then the bias
    nf = model.get_nr_feature()
    W = np.array(np.ctypeslib.as_array(model.w, shape=(nf + 1, k)).T)
    if k == 1:                      # the weights of labels[0] against the other label
        W = W if labels[0] == 1 else -W
    else:                           # one row per label, in LIBLINEAR's order of labels
        W = W[np.argsort(labels)]
    coef = np.zeros((k, X.shape[1]))
    coef[:, :nf] = W[:, :nf]
    return seconds, coef, W[:, nf]


def objective_at(X, y, coef, intercept, C):
    """The one-vs-rest -s 6 objective at ``C``, summed over the problems (one for two
    classes)."""
    classes = np.unique(y)
    targets = [classes[1]] if classes.size == 2 else classes
    total = 0.0
    for row, b, c in zip(coef, intercept, targets):
        margins = np.where(y == c, 1.0, -1.0) * (X @ row.astype(np.float64) + b)
        total += np.abs(row).sum() + C * np.logaddexp(0.0, -margins).sum()
    return total


def fit_rows():
    rows = []
    for n, d, k, dtype in TABLES:
        X, y = make_classification(n, d, n_informative=min(20, d - 4), n_classes=k,
                                   random_state=0)
        X = X.astype(dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            oba_s, oba = _report.cpu_time(lambda: L1LogisticOBA().fit(X, y))
            lr_s, lr = _report.cpu_time(lambda: LogisticRegression().fit(X, y))
        ll_s, ll_coef, ll_b = liblinear(X, y)
        f_oba = objective_at(X, y, oba.coef_, oba.intercept_, 1.0)
        f_ll = objective_at(X, y, ll_coef, ll_b, 1.0)
        rows.append({"data": f"{n} x {d} {dtype}, {k} classes", "oba": oba_s,
                     "oba_iter": int(np.sum(oba.n_iter_)), "lr": lr_s, "liblinear": ll_s,
                     "gap": (f_oba - f_ll) / abs(f_ll), "oba_acc": float(oba.score(X, y)),
                     "lr_acc": float(lr.score(X, y))})
        print(rows[-1], flush=True)
    return rows


#: shares of nonzero entries of the density part's arrays (50,000 x 500, binary, C = 1)
DENSITIES = (0.1, 0.2, 0.29, 0.4, 0.5)


def density_rows():
    """The density part: a dense array and its CSR copy at each share of nonzero entries."""
    import scipy.sparse as sp

    rows, rng = [], np.random.default_rng(0)
    for share in DENSITIES:
        X = rng.standard_normal((50_000, 500)) * (rng.random((50_000, 500)) < share)
        w = rng.standard_normal(500) * (rng.random(500) < 0.2)
        y = (X @ w + 0.5 * rng.standard_normal(50_000) > 0).astype(int)
        row = {"share": share}
        for form, data in (("array", X), ("CSR", sp.csr_matrix(X))):
            seconds, est = _report.cpu_time(lambda: L1LogisticOBA().fit(data, y), long=1.0)
            row[f"{form} seconds"], row[f"{form} iterations"] = seconds, int(est.n_iter_[0])
        rows.append(row)
        print(row, flush=True)
    return rows


#: (pixels divided by, C) of the image part's binary fits
IMAGE_FITS = [(1.0, 0.01), (1.0, 1.0), (255.0, 0.1), (255.0, 1.0), (255.0, 10.0)]


def image_rows():
    """The image part (none without MNIST in the data folder)."""
    import scipy.sparse as sp

    from sparsekit.datasets import load_mnist
    try:
        X, y = load_mnist()
    except (OSError, ValueError) as exc:
        print(f"image part skipped: {exc}", flush=True)
        return []
    rows, y0 = [], np.where(y == 0, 1, 0)
    for scale, C in IMAGE_FITS:
        A = X if scale == 1.0 else X / scale
        fits = {}
        for form, data in (("array", A), ("CSR", sp.csr_matrix(A))):
            seconds, est = _report.cpu_time(lambda: L1LogisticOBA(C=C).fit(data, y0), long=1.0)
            fits[form] = {"seconds": seconds, "iterations": int(est.n_iter_[0]),
                          "F": objective_at(A, y0, est.coef_, est.intercept_, C)}
        ll_s, ll_coef, ll_b = liblinear(A, y0, C=C, long=1.0)
        rows.append({"data": f"{'raw pixels' if scale == 1 else 'pixels / 255'}, C = {C:g}",
                     **{f"{form} {k}": v for form, fit in fits.items() for k, v in fit.items()},
                     "liblinear": ll_s, "liblinear F": objective_at(A, y0, ll_coef, ll_b, C)})
        print(rows[-1], flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        est = L1LogisticOBA().fit(X, y)
        oba_s = time.process_time() - start
    ll_s, ll_coef, ll_b = liblinear(X, y, long=1.0)
    rows.append({"data": "raw pixels, 10 classes, L1LogisticOBA()", "array seconds": oba_s,
                 "array iterations": int(np.sum(est.n_iter_)),
                 "array F": objective_at(X, y, est.coef_, est.intercept_, 1.0),
                 "liblinear": ll_s, "liblinear F": objective_at(X, y, ll_coef, ll_b, 1.0)})
    print(rows[-1], flush=True)
    return rows


def main():
    results, earlier = _report.beside_before(__doc__.split("\n\n")[0], lambda: {
        "gram": gram_rows(), "fits": fit_rows(), "densities": density_rows(),
        "images": image_rows()})
    then = f" (commit {earlier['commit']})" if earlier else ""
    old_fits = {r["data"]: r for r in (earlier or {}).get("fits", [])}
    gram = [[r["shape"], str(r["k"]), f"{r['numpy']:.3f}", f"{r['panels']:.3f}",
             f"{r['panels'] / r['numpy']:.2f}", r["route"]] for r in results["gram"]]
    body = ("The subspace Hessian over k free columns and the intercept, ms per formation "
            "(median of 5 after one untimed), by NumPy's float64 products and by float32 panels "
            "(`ssyrk`); the route the datafit takes for these k columns at these weights "
            "(a formed Hessian by one of the two, or matrix-free products):\n\n"
            + _report.markdown_table(["X (dense)", "k", "float64 products, ms",
                                      "float32 panels, ms", "panels / products",
                                      "route taken"], gram))
    header = ["table", "L1LogisticOBA, s (iterations)", f"before{then}",
              "LogisticRegression (lbfgs), s", "LIBLINEAR -s 6 -e 1e-4, s",
              "OBA / LogisticRegression", "OBA / LIBLINEAR",
              "OBA's objective vs LIBLINEAR's", "training accuracy (OBA / LR)"]
    fits = []
    for r in results["fits"]:
        old = old_fits.get(r["data"])
        fits.append([r["data"], f"{r['oba']:.2f} ({r['oba_iter']})",
                     f"{old['oba']:.2f} ({old['oba_iter']})" if old else "-",
                     f"{r['lr']:.2f}", f"{r['liblinear']:.2f}", f"{r['oba'] / r['lr']:.2f}x",
                     f"{r['oba'] / r['liblinear']:.2f}x", f"{r['gap']:+.1e}",
                     f"{r['oba_acc']:.4f} / {r['lr_acc']:.4f}"])
    body += ("\n\nFits at the defaults (process CPU seconds; iterations summed over the "
             "one-vs-rest problems):\n\n" + _report.markdown_table(header, fits))
    old_shares = {r["share"]: r for r in (earlier or {}).get("densities", [])}
    shares = [[f"{r['share']:.0%}",
               f"{r['array seconds']:.2f} ({r['array iterations']})",
               (f"{old_shares[r['share']]['array seconds']:.2f} "
                f"({old_shares[r['share']]['array iterations']})"
                if r["share"] in old_shares else "-"),
               f"{r['CSR seconds']:.2f} ({r['CSR iterations']})",
               f"{r['array seconds'] / r['CSR seconds']:.2f}x"]
              for r in results.get("densities", [])]
    if shares:
        body += ("\n\nA dense X of mostly zeros: 50,000 x 500 arrays of standard normal "
                 "entries, each nonzero with the given probability, the labels of a sparse "
                 "w plus noise; `L1LogisticOBA()` on the array and on its CSR copy (process "
                 "CPU seconds, median of 3 fits under 1 s). An array of at most "
                 "`SPARSE_COPY_DENSITY` = 30% nonzero entries is solved as its sparse "
                 "copy, as LIBLINEAR solves every X: the CSR copy is made in two passes "
                 "over the array, then the CSC one:\n\n"
                 + _report.markdown_table(["nonzero entries", "array, s (iterations)",
                                           f"before{then}", "CSR copy, s (iterations)",
                                           "array / CSR copy"], shares))
    old_images = {r["data"]: r for r in (earlier or {}).get("images", [])}
    images = []
    for r in results.get("images", []):
        old = old_images.get(r["data"])

        def cell(fit, form):
            if fit is None or f"{form} seconds" not in fit:
                return "-"
            return f"{fit[form + ' seconds']:.2f} ({fit[form + ' iterations']})"

        best = min(r["array F"], r.get("CSR F", np.inf), r["liblinear F"])
        images.append([r["data"], cell(r, "array"), cell(old, "array"), cell(r, "CSR"),
                       f"{r['liblinear']:.2f}", f"{r['array seconds'] / r['liblinear']:.2f}x",
                       f"{(r['array F'] - best) / best:.1e}",
                       f"{(r['liblinear F'] - best) / best:.1e}"])
    if images:
        body += ("\n\nMNIST's training images as a NumPy array (CPU seconds of one fit, "
                 "iterations summed over the problems; the CSR copy of the same array beside; "
                 "objectives relative to the lowest of the row's). MNIST's pixels are 19% "
                 "nonzero: the array is solved as its sparse copy (the part above), so its "
                 "fits are the CSR copy's plus the array's checks and the copy. LIBLINEAR "
                 "runs at `-e 1e-4`, "
                 "scikit-learn's default tol for it, and stops where its own test passes; "
                 "its objective is in the last column:\n\n"
                 + _report.markdown_table(
                     ["data, digit 0 against the rest", "L1LogisticOBA, array, s (iterations)",
                      f"before{then}", "L1LogisticOBA, CSR copy, s", "LIBLINEAR -e 1e-4, s",
                      "OBA array / LIBLINEAR", "OBA's F above the lowest",
                      "LIBLINEAR's F above the lowest"], images))
    _report.write_section("l1_dense_tall",
                          "L1LogisticOBA on tall dense tables: the subspace Hessian's route",
                          body, packages=("numpy", "scipy", "scikit-learn",
                                          "liblinear-official"))


if __name__ == "__main__":
    main()
