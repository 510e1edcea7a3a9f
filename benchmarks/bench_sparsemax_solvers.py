"""SparsemaxClassifier's solvers side by side: the evidence for ``solver="auto"``.

For dense and sparse data sets (scikit-learn's digits; Mulan scene, dense; a9a and w8a,
sparse binary; Bibtex from XMLRepository, sparse multi-label indicators; 5000 documents of
the Debian corpus, TF-IDF text, 58 sections) and ``alpha`` in {1e-3, 1e-4,
1e-5}, it fits ``SparsemaxClassifier`` with each of
``lbfgs``, ``newton-cg`` and ``sdca`` at the default ``tol`` (one thread, median of 3 below
2 s, one fit above; ``max_iter`` 2000) and reports the time and the objective each reached
(relative to the lowest of the three). ``auto`` is the solver the rule picks.

Writes section "sparsemax_solvers" of doc/benchmarks.md::

    python benchmarks/bench_sparsemax_solvers.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import statistics
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.datasets import load_debian, load_libsvm, load_mulan, load_xmlrepo  # noqa: E402
from sparsekit.linear_model import SparsemaxClassifier  # noqa: E402
from sparsekit.linear_model._sparsemax_solvers import auto_solver  # noqa: E402
from sparsekit.projections import project  # noqa: E402

SOLVERS = ("lbfgs", "newton-cg", "sdca")


def data_sets(quick):
    X, y = load_digits(return_X_y=True)
    yield "digits", "dense", X / 16.0, y
    X, Y = load_mulan("scene", subset="train")
    yield "scene", "dense", StandardScaler().fit_transform(X), Y
    for name in ("a9a", "w8a"):
        X, y = load_libsvm(name)
        yield name, "sparse", (X[:5000] if quick else X), (y[:5000] if quick else y)
    for name in ("Bibtex",):
        X, Y = load_xmlrepo(name, subset="train")
        keep = np.asarray(Y.sum(axis=1)).ravel() > 0
        X, Y = X[keep], sp.csr_matrix(Y)[keep]
        if quick:
            X, Y = X[:1000], Y[:1000]
        yield name, "sparse", X, Y
    corpus = load_debian(data_home=_report.DATA_HOME)
    keep = np.random.default_rng(0).permutation(len(corpus.text))[:1000 if quick else 5000]
    X = TfidfVectorizer().fit_transform([corpus.text[i] for i in keep])
    yield "debian (TF-IDF)", "sparse", sp.csr_matrix(X), np.asarray(corpus.section)[keep]


def dual_condition(X, alpha):
    """The mean squared row norm over alpha n, which ``solver="auto"`` compares with 20."""
    X = sp.csr_matrix(X, dtype=np.float64)
    return float(X.data @ X.data) / X.shape[0] / (alpha * X.shape[0])


def objective(clf, X, Y):
    """The fitted model's objective (mean Fenchel-Young loss on the simplex + ridge)."""
    Z = np.asarray(X @ clf.coef_.T) + clf.intercept_
    if Y.ndim == 1:
        T = (Y[:, None] == clf.classes_[None, :]).astype(float)
    else:
        T = sp.csr_matrix(Y).toarray().astype(float)
        T /= T.sum(axis=1, keepdims=True)
    P = project(Z, "simplex")
    loss = 0.5 * ((T - Z) ** 2).sum(1) - 0.5 * ((P - Z) ** 2).sum(1)
    return float(loss.mean() + 0.5 * clf.alpha_ * (clf.coef_.astype(float) ** 2).sum())


def fit(solver, alpha, X, y):
    times = []
    while True:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = SparsemaxClassifier(alpha=alpha, solver=solver, max_iter=2000,
                                      random_state=0).fit(X, y)
        times.append(time.perf_counter() - start)
        if times[-1] > 2.0 or len(times) == 3:
            return statistics.median(times), clf


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="subsets (smoke run)")
    args = parser.parse_args()
    rows, wins = [], {}
    for name, kind, X, y in data_sets(args.quick):
        for alpha in (1e-3, 1e-4, 1e-5):
            results = {s: fit(s, alpha, X, y) for s in SOLVERS}
            f = {s: objective(clf, X, y) for s, (_, clf) in results.items()}
            best = min(f.values())
            fastest = min(SOLVERS, key=lambda s: results[s][0])
            auto = auto_solver(lambda: X, alpha)   # the rows as SDCA walks them
            wins[(kind, alpha)] = wins.get((kind, alpha), []) + [fastest]
            row = [name, f"{X.shape[0]} x {X.shape[1]}, {kind}", f"{alpha:g}",
                   f"{dual_condition(X, alpha):.3g}"]
            for s in SOLVERS:
                seconds, clf = results[s]
                gap = (f[s] - best) / abs(best)
                row.append(f"{seconds:.2f} ({clf.n_iter_} it, +{gap:.0e})")
            row += [fastest, auto, f"{results[auto][0] / results[fastest][0]:.2f}x"]
            rows.append(row)
            print(row, flush=True)
    body = f"""
Time of `SparsemaxClassifier(alpha, solver).fit` at the default `tol` (1e-4 on the largest
gradient entry; one thread; median of 3 fits below 2 s) with, in brackets, the iterations
(epochs for sdca) and the objective's excess over the lowest of the three solvers. "auto" is
the solver `solver="auto"` (the default) picks: `sdca` for sparse X when the dual's
condition number, the mean squared row norm over `alpha * n_samples` (column "cond."), is at
most 20 (no bounds, on the CPU), else `lbfgs`; the column "auto / fastest" is its time over
the fastest solver's.

{_report.markdown_table(["data", "shape", "alpha", "cond.", *SOLVERS, "fastest", "auto",
                         "auto / fastest"], rows)}
"""
    if args.quick:
        print(body)
        return
    _report.write_section("sparsemax_solvers", "SparsemaxClassifier: which solver", body)


if __name__ == "__main__":
    main()
