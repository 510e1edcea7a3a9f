"""SparsemaxClassifier's default ``alpha``: a fixed value against ``"scale"``.

``alpha="scale"`` is 5e-5 times the mean squared norm of X's rows. For each data set, a
stratified 70/30 split (seed 0) and ``SparsemaxClassifier(alpha=a, max_iter=300)`` at
a = 1e-2, 1e-3 (the earlier default), 1e-4, 1e-5 and ``"scale"``: test accuracy, mean
number of classes with nonzero probability on the test rows, fit seconds (wall, one
thread), and scikit-learn's ``LogisticRegression(max_iter=300)`` accuracy beside. Data:
a9a and w8a (binary features), scikit-learn's digits / 16, 20000 documents of the Debian
corpus (TF-IDF, 58 sections), the first label of Mulan's Bibtex training set (binary
features, 146 classes) and the first 20000 MNIST training images / 255.

Writes section "sparsemax_alpha" of doc/benchmarks.md::

    python benchmarks/bench_sparsemax_alpha.py
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
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit import SparsemaxClassifier  # noqa: E402
from sparsekit.datasets import (load_a9a, load_debian, load_libsvm, load_mnist,  # noqa: E402
                                load_mulan)
from sparsekit.linear_model import first_label  # noqa: E402

ALPHAS = (1e-2, 1e-3, 1e-4, 1e-5, "scale")


def data_sets():
    yield "a9a", *load_a9a()
    yield "w8a", *load_libsvm("w8a")
    X, y = load_digits(return_X_y=True)
    yield "digits / 16", X / 16.0, y
    corpus = load_debian()
    rows = np.random.default_rng(0).permutation(len(corpus.text))[:20000]
    yield ("debian 20000 docs, TF-IDF",
           TfidfVectorizer().fit_transform([corpus.text[i] for i in rows]),
           np.asarray(corpus.section)[rows])
    X, Y = load_mulan("bibtex", subset="train")
    Y = sp.csr_matrix(Y)
    keep = np.diff(Y.indptr) > 0
    yield "bibtex (first label)", sp.csr_matrix(X)[keep], first_label(Y[keep])
    X, y = load_mnist()
    yield "mnist 20000 / 255", sp.csr_matrix(X[:20000], dtype=np.float64) / 255.0, y[:20000]


def main():
    warnings.simplefilter("ignore", ConvergenceWarning)
    header = ["data", "n", "mean ‖x‖²", "alpha of \"scale\"", "LogisticRegression"] + [
        f"alpha {a}" if isinstance(a, str) else f"alpha {a:g}" for a in ALPHAS]
    rows = []
    for name, X, y in data_sets():
        counts = np.unique(y, return_counts=True)[1]
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, random_state=0, stratify=y if counts.min() > 1 else None)
        cells = []
        for alpha in ALPHAS:
            start = time.perf_counter()
            model = SparsemaxClassifier(alpha=alpha, max_iter=300, tol=1e-6).fit(X_train, y_train)
            seconds = time.perf_counter() - start
            support = np.mean((model.predict_proba(X_test) > 0).sum(axis=1))
            cells.append(f"{model.score(X_test, y_test):.4f} / {support:.1f} / {seconds:.1f} s")
            print(f"{name} alpha {alpha}: {cells[-1]}", flush=True)
        lr = LogisticRegression(max_iter=300).fit(X_train, y_train).score(X_test, y_test)
        squares = (X_train.multiply(X_train).sum(axis=1) if sp.issparse(X_train)
                   else (X_train ** 2).sum(axis=1))
        rows.append([name, X_train.shape[0], f"{np.mean(squares):.1f}",
                     f"{model.alpha_:.1e}", f"{lr:.4f}"] + cells)
    body = ("Test accuracy / mean classes with nonzero probability / fit seconds of "
            "`SparsemaxClassifier(alpha=a, max_iter=300, tol=1e-6)` on a stratified 70/30 split (seed 0), "
            "one thread; `alpha \"scale\"` is 5e-5 x the mean squared row norm of the training "
            "rows (its value in the fourth column); n counts the training rows.\n\n"
            + _report.markdown_table(header, rows))
    _report.write_section("sparsemax_alpha", "SparsemaxClassifier: a fixed alpha or alpha=\"scale\"",
                          body)


if __name__ == "__main__":
    main()
