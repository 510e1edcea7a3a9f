"""Predictions of sparse rows under an ℓ1 model: one walk of X over the model's nonzeros.

The Debian package descriptions (58 archive sections), the split of section
"multiclass_text" (75/25, ``random_state=0``), TF-IDF of words and of words and word pairs
(``sublinear_tf=True, min_df=2``, fit on the training rows). ``L1LogisticOBA(C=1)``,
one-vs-rest and multinomial, is fit once per matrix; then ``decision_function`` is timed on
the test rows, CSR and CSC, all of them and batches of 1,000, 100 and 1 rows (a batch's
time: the median over the batches of the test rows, of ``--repeat`` passes), against:

- scikit-learn's product on the same weights (``LogisticRegression`` with the model's
  ``coef_`` and ``intercept_``: ``X @ coef_.T + intercept_``), dense and after
  ``sparsify()`` (its documented route for models with most weights zero);
- ``L1LogisticOBA``'s scores as they were before: one walk of CSR X per class, SciPy's
  product for CSC X.

Every time includes the input's validation. A sparsified model pays no scan of its dense
weights for their nonzeros, which the estimator's default dense ``coef_`` costs each call
(``sparse_coef=True`` or ``sparsify()`` take that route in sparsekit too). Process CPU
seconds, one thread (BLAS pinned); the scores of all routes agree to 1e-12 (checked). Writes section "sparse_predictions" of doc/benchmarks.md::

    python benchmarks/bench_sparse_predictions.py [--repeat 7]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(_report.REPO))  # the in-place build, also when not installed
from bench_multiclass_text import split, texts  # noqa: E402
from sparsekit.linear_model import L1LogisticOBA  # noqa: E402
from sparsekit.linear_model import _l1_logistic  # noqa: E402
from sparsekit.utils import _scores  # noqa: E402

BATCHES = (None, 1000, 100, 1)


def batch_seconds(fn, X, rows, repeat):
    """Median CPU seconds of ``fn`` on one batch of ``rows`` rows of X (all with None)."""
    if rows is None:
        batches = [X]
    else:
        step = max(1, X.shape[0] // 50) if rows == 1 else rows   # 50 single rows
        batches = [X[i:i + rows] for i in range(0, X.shape[0] - rows + 1, step)][:50]
    times = []
    for _ in range(repeat):
        for batch in batches:
            t = time.process_time()
            fn(batch)
            times.append(time.process_time() - t)
    return float(np.median(times))


def peer(est, sparse):
    """scikit-learn's LogisticRegression carrying ``est``'s weights (sparsified)."""
    lr = LogisticRegression()
    lr.coef_, lr.intercept_, lr.classes_ = est.coef_.copy(), est.intercept_, est.classes_
    lr.n_features_in_ = est.n_features_in_
    return lr.sparsify() if sparse else lr


def by_class(est):
    """``est.decision_function`` as it was: one walk of CSR X per class, SciPy's product for
    CSC X (after the same validation)."""
    def scores(X):
        routed = _l1_logistic.linear_scores
        _l1_logistic.linear_scores = lambda X, coef, b, n_threads: _scores._by_class(
            X, coef, np.asarray(b, dtype=np.float64))
        try:
            return est.decision_function(X)
        finally:
            _l1_logistic.linear_scores = routed
    return scores


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    X_tr, X_te, y_tr, _ = split()
    words = X_tr.shape
    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2, ngram_range=(1, 2))
    text_tr, text_te, _, _ = texts()
    matrices = [("words", X_tr, X_te),
                ("words and pairs", vectorizer.fit_transform(text_tr),
                 vectorizer.transform(text_te))]
    rows, shapes = [], []
    for name, A_tr, A_te in matrices:
        shapes.append(f"{name}: {A_tr.shape[1]:,} columns, {A_te.shape[0]:,} test rows "
                      f"({A_te.nnz:,} nonzeros)")
        print(shapes[-1], flush=True)
        for multiclass in ("ovr", "multinomial"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est = L1LogisticOBA(C=1.0, multiclass=multiclass).fit(A_tr, y_tr)
            used = int(np.count_nonzero(est.coef_.any(axis=0)))
            routes = [("sparsekit", est.decision_function), ("before", by_class(est)),
                      ("scikit-learn", peer(est, False).decision_function),
                      ("scikit-learn sparsified", peer(est, True).decision_function)]
            for fmt in ("csr", "csc"):
                A = A_te.asformat(fmt)
                scores = [np.asarray(fn(A)) for _, fn in routes]
                gap = max(float(np.abs(s - scores[0]).max()) for s in scores[1:])
                assert gap < 1e-12, gap
                for batch in BATCHES:
                    if fmt == "csc" and batch is not None and batch < 1000:
                        continue            # CSC batches of a few rows are not a use
                    t = [batch_seconds(fn, A, batch, args.repeat) for _, fn in routes]
                    rows.append([name, multiclass, f"{used:,}", fmt.upper(),
                                 "all" if batch is None else f"{batch:,}",
                                 f"{t[0] * 1e3:.3f}", f"{t[1] * 1e3:.3f}",
                                 f"{t[2] * 1e3:.3f}", f"{t[3] * 1e3:.3f}",
                                 f"{t[2] / t[0]:.1f}x", f"{t[3] / t[0]:.2f}x",
                                 f"{t[1] / t[0]:.2f}x"])
                    print(" | ".join(rows[-1]), flush=True)
    body = "\n".join([
        " ".join(" ".join(__doc__.split("\n\n")[1:4]).replace("- ", "").split())
        .split(" Writes")[0],
        "",
        f"Training rows: {words[0]:,}; " + "; ".join(shapes) + ".",
        "",
        _report.markdown_table(["features", "model", "features in use", "X", "rows",
                                "sparsekit (ms)", "before (ms)",
                                "scikit-learn (ms)", "scikit-learn sparsified (ms)",
                                "scikit-learn / sparsekit", "sparsified / sparsekit",
                                "before / sparsekit"], rows),
    ])
    _report.write_section("sparse_predictions",
                          "Predictions of sparse rows under an ℓ1 model", body)


if __name__ == "__main__":
    main()
