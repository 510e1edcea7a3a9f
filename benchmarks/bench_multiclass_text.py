"""One-vs-rest or multinomial: ℓ1 logistic regression on a text corpus, as a user fits it.

The Debian package descriptions (58 archive sections as classes), split 75/25 with a fixed
seed; ``TfidfVectorizer(sublinear_tf=True, min_df=2)`` fit on the training rows (words, no
pairs: the vectorizer a user starts with). For each C:

- ``L1LogisticOBA(C)``, one-vs-rest (the default) and ``multiclass="multinomial"``, at the
  estimator's defaults (tol 1e-8);
- LIBLINEAR ``-s 6 -B 1 -R`` (the same one-vs-rest objectives, the intercept unpenalized)
  at ``-e 1e-4`` (scikit-learn's ``tol`` for its ``liblinear`` solver) on the same CSR,
  problem built outside the timing;

and once, ``SparsemaxClassifier`` and ``ExtremeSoftmaxSGD`` at their defaults, the package's
other models of the classes. Process CPU seconds of one fit each (BLAS pinned to one
thread); test accuracy and log loss on the held-out rows (LIBLINEAR's one-vs-rest
probabilities normalized as scikit-learn's ``predict_proba`` does for one-vs-rest logistic
regression). Writes section "multiclass_text" of doc/benchmarks.md::

    python benchmarks/bench_multiclass_text.py
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import warnings

import numpy as np
from bench_hashed_features import cpu_seconds, liblinear
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from sparsekit.datasets import load_debian  # noqa: E402
from sparsekit.linear_model import (ExtremeSoftmaxSGD, L1LogisticOBA,  # noqa: E402
                                    SparsemaxClassifier)


def texts():
    """The descriptions and sections, split 75/25: training and test texts, then labels."""
    corpus = load_debian(data_home=_report.DATA_HOME)
    return train_test_split(corpus.text, np.asarray(corpus.section), test_size=0.25,
                            random_state=0)


def split():
    text_tr, text_te, y_tr, y_te = texts()
    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2)
    return vectorizer.fit_transform(text_tr), vectorizer.transform(text_te), y_tr, y_te


def described_split():
    """:func:`split`, the training classes and a line describing the data (also printed)."""
    X_tr, X_te, y_tr, y_te = split()
    classes = np.unique(y_tr)
    shape = (f"{X_tr.shape[0]:,} training rows × {X_tr.shape[1]:,} columns "
             f"({X_tr.nnz:,} nonzeros), {X_te.shape[0]:,} test rows, {classes.size} classes")
    print(shape, flush=True)
    return X_tr, X_te, y_tr, y_te, classes, shape


def ovr_proba(scores):
    """scikit-learn's one-vs-rest probabilities: the sigmoids, normalized per row."""
    p = expit(scores)
    return p / p.sum(axis=1, keepdims=True)


def scores_row(name, C, seconds, base, iterations, nonzeros, y_te, proba, classes):
    pred = classes[np.argmax(proba, axis=1)]
    missed = proba[np.arange(y_te.size), np.searchsorted(classes, y_te)] == 0
    loss = (f"{log_loss(y_te, proba, labels=classes):.4f}" if not missed.any()
            else f"— (true class at probability 0 on {missed.mean():.1%} of the rows)")
    return [name, "—" if C is None else f"{C:g}", f"{seconds:.2f}",
            "—" if base is None else f"{seconds / base:.2f}x", iterations,
            "—" if nonzeros is None else f"{nonzeros:,}", f"{accuracy_score(y_te, pred):.4f}",
            loss]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--Cs", type=float, nargs="+", default=[0.1, 1.0, 10.0])
    args = parser.parse_args()
    X_tr, X_te, y_tr, y_te, classes, shape = described_split()
    rows = []
    for C in args.Cs:
        base = None
        for multiclass in ("ovr", "multinomial"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                seconds, est = cpu_seconds(
                    lambda: L1LogisticOBA(C=C, multiclass=multiclass).fit(X_tr, y_tr))
            base = seconds if base is None else base
            iterations = (f"{int(est.n_iter_.sum()):,} ({classes.size} problems)" if multiclass == "ovr"
                          else f"{int(est.n_iter_[0]):,}")
            rows.append(scores_row(f"L1LogisticOBA, {multiclass}", C, seconds, base,
                                   iterations, int(np.count_nonzero(est.coef_)), y_te,
                                   est.predict_proba(X_te), est.classes_))
            print(" | ".join(rows[-1]), flush=True)
        seconds, coef, intercept = liblinear(X_tr, y_tr, classes, 1e-4, C=C)
        rows.append(scores_row("LIBLINEAR -s 6, one-vs-rest, -e 1e-4", C, seconds, base, "—",
                               int(np.count_nonzero(coef)), y_te,
                               ovr_proba(np.asarray(X_te @ coef.T) + intercept), classes))
        print(" | ".join(rows[-1]), flush=True)
    for name, make in (("SparsemaxClassifier (defaults)", SparsemaxClassifier),
                       ("ExtremeSoftmaxSGD (defaults)", ExtremeSoftmaxSGD)):
        seconds, est = cpu_seconds(lambda: make().fit(X_tr, y_tr))
        rows.append(scores_row(name, None, seconds, None, "—", None, y_te,
                               est.predict_proba(X_te), est.classes_))
        print(" | ".join(rows[-1]), flush=True)
    body = "\n".join([
        f"The Debian package descriptions, split 75/25 (`random_state=0`): {shape}; "
        "`TfidfVectorizer(sublinear_tf=True, min_df=2)` fit on the training rows. "
        "Process CPU seconds of one fit each, one thread; \"/ one-vs-rest\": the time over "
        "`L1LogisticOBA`'s one-vs-rest fit at the same C. LIBLINEAR `-s 6 -B 1 -R` solves "
        "the same one-vs-rest problems (the intercept unpenalized) at `-e 1e-4`, "
        "scikit-learn's default `tol` for its `liblinear` solver, on the same CSR (problem "
        "built outside the timing); its probabilities are the sigmoids normalized per row, "
        "as scikit-learn's one-vs-rest `predict_proba`. Log loss and accuracy on the test "
        "rows.",
        "",
        _report.markdown_table(["model", "C", "fit (s)", "/ one-vs-rest", "iterations",
                                "nonzero weights", "test accuracy", "test log loss"], rows),
    ])
    _report.write_section("multiclass_text",
                          "ℓ1 logistic regression on a text corpus: one-vs-rest or multinomial",
                          body, packages=("numpy", "scipy", "scikit-learn",
                                          "liblinear-official"))


if __name__ == "__main__":
    main()
