"""SparsemaxClassifier on the same data in other units (X multiplied by a constant).

With ``alpha="scale"`` the model does not depend on the units of X; this measures whether
the fit does: for each data set and factor c, ``SparsemaxClassifier(tol=1e-6)`` (its other
defaults: ``solver="auto"``, ``max_iter=1000``) and, on sparse X, the same with
``solver="lbfgs"``, fit on c X of a stratified 70/30 split (seed 0): iterations (epochs
for sdca), test accuracy, fit seconds (wall, one thread) and whether it warned. Data:
a9a (0/1 features) at c = 1e-3, 1, 1e3; scikit-learn's digits as given (0-16) and / 16;
the first 20000 MNIST training images as given (0-255) and / 255 (CSR); 20000 documents
of the Debian corpus as TF-IDF at c = 1 and 1e3.

``--save FILE`` writes the rows as JSON; ``--before FILE`` puts such a file's rows (the
same script run on an earlier commit's checkout) beside this run's. Writes section
"sparsemax_units" of doc/benchmarks.md::

    python benchmarks/bench_sparsemax_units.py [--save F] [--before F]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import SparsemaxClassifier  # noqa: E402
from sparsekit.datasets import load_a9a, load_debian, load_mnist  # noqa: E402


def data_sets():
    """``(name, X, y, factors, solvers)``."""
    X, y = load_a9a()
    yield "a9a", X, y, (1e-3, 1.0, 1e3), ("auto", "lbfgs")
    X, y = load_digits(return_X_y=True)
    yield "digits (0-16)", X, y, (1.0, 1 / 16), ("auto",)
    X, y = load_mnist()
    X = sp.csr_matrix(X[:20000], dtype=np.float64)
    yield "mnist 20000 (0-255)", X, y[:20000], (1.0, 1 / 255), ("auto", "lbfgs")
    corpus = load_debian()
    rows = np.random.default_rng(0).permutation(len(corpus.text))[:20000]
    yield ("debian 20000 docs, TF-IDF",
           TfidfVectorizer().fit_transform([corpus.text[i] for i in rows]),
           np.asarray(corpus.section)[rows], (1.0, 1e3), ("auto", "lbfgs"))


def measure():
    rows = []
    for name, X, y, factors, solvers in data_sets():
        counts = np.unique(y, return_counts=True)[1]
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, random_state=0, stratify=y if counts.min() > 1 else None)
        for c in factors:
            for solver in solvers:
                if solver == "lbfgs" and name.startswith("debian") and c != 1.0:
                    continue      # L-BFGS on the TF-IDF: once (minutes per fit)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", ConvergenceWarning)
                    start = time.perf_counter()
                    model = SparsemaxClassifier(solver=solver, tol=1e-6, random_state=0).fit(
                        c * X_train, y_train)
                    seconds = time.perf_counter() - start
                warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
                row = {"data": name, "factor": c, "solver": f"{solver} ({model.solver_})",
                       "iterations": int(model.n_iter_),
                       "accuracy": float(model.score(c * X_test, y_test)),
                       "seconds": seconds, "warned": warned}
                print(row, flush=True)
                rows.append(row)
    return rows


def main():
    warnings.simplefilter("ignore", UserWarning)
    results, earlier = _report.beside_before(__doc__.split("\n")[0],
                                             lambda: {"rows": measure()})
    rows = results["rows"]
    header = ["data", "X times", "solver", "this commit"]
    before = {}
    if earlier:
        header.append(f"commit {earlier['commit']}")
        before = {(r["data"], r["factor"], r["solver"]): r for r in earlier["rows"]}
    table = []
    for row in rows:
        cells = [row["data"], f"{row['factor']:g}", row["solver"], _report.fit_cell(row)]
        if earlier:
            old = before.get((row["data"], row["factor"], row["solver"]))
            cells.append(_report.fit_cell(old) if old else "")
        table.append(cells)
    body = ("Iterations (epochs for sdca) / test accuracy / fit seconds of "
            "`SparsemaxClassifier(solver=s, tol=1e-6)` at its other defaults "
            "(`alpha=\"scale\"`, `max_iter=1000`) on c X of a stratified 70/30 split (seed 0), wall time on one "
            "thread; \"warned\": a ConvergenceWarning. The solver in parentheses is the "
            "one `auto` picked.\n\n" + _report.markdown_table(header, table))
    _report.write_section("sparsemax_units",
                          "SparsemaxClassifier on the same data in other units", body)


if __name__ == "__main__":
    main()
