"""Predictions of sparse rows: one walk of X, over an ℓ1 model's nonzero weights or a
dense model's rows of weights read ahead.

The Debian package descriptions (58 archive sections), the split of section
"multiclass_text" (75/25, ``random_state=0``), TF-IDF of words and of words and word pairs
(``sublinear_tf=True, min_df=2``, fit on the training rows). ``L1LogisticOBA(C=1)``,
one-vs-rest and multinomial, ``SparsemaxClassifier()`` and
``ExtremeSoftmaxSGD(random_state=0)`` are fit once per matrix; then ``decision_function``
is timed on the test rows, CSR and CSC, all of them and batches of 1,000, 100 and 1 rows
(a batch's time: the median over the batches of the test rows, of ``--repeat`` passes),
against:

- scikit-learn's product on the same weights (``LogisticRegression`` with the model's
  ``coef_`` and ``intercept_``: ``X @ coef_.T + intercept_``), and for the ℓ1 models after
  ``sparsify()`` (its documented route for models with most weights zero);
- "before": for the ℓ1 models their scores as they were, one walk of CSR X per class and
  SciPy's product for CSC X; for the others the same code with SciPy's product of CSR X
  in place of the walk with the weights read ahead.

Then ``predict_proba`` of all the test rows under the ℓ1 models, against the same
routes. Every time includes the input's validation. A sparsified model pays no scan of its dense
weights for their nonzeros, which the ℓ1 estimator's default dense ``coef_`` costs each
call (``sparse_coef=True`` or ``sparsify()`` take that route in sparsekit too). Process CPU
seconds, one thread (BLAS pinned); the scores of all routes agree to 1e-12 (checked).
Writes section "sparse_predictions" of doc/benchmarks.md::

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
from sparsekit.linear_model import (ExtremeSoftmaxSGD, L1LogisticOBA,  # noqa: E402
                                    SparsemaxClassifier)
from sparsekit.linear_model import _l1_logistic, _sparsemax  # noqa: E402
from sparsekit.losses import _softmax  # noqa: E402
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


def by_class(est, method="decision_function"):
    """``est.decision_function`` (or ``method``) as it was: one walk of CSR X per class,
    SciPy's product for CSC X (after the same validation)."""
    def scores(X):
        routed = _l1_logistic.linear_scores
        _l1_logistic.linear_scores = lambda X, coef, b, n_threads: _scores._by_class(
            X, coef, np.asarray(b, dtype=np.float64))
        try:
            return getattr(est, method)(X)
        finally:
            _l1_logistic.linear_scores = routed
    return scores


def probability_routes(est):
    """``predict_proba`` of an ℓ1 model: sparsekit's; as it was (the exponential of the
    log-probabilities of the class-by-class scores); scikit-learn's of the same weights
    (the softmax of ``LogisticRegression``, or for one-vs-rest the σ's normalized per row,
    ``_predict_proba_lr``, which ``OneVsRestClassifier`` computes class by class)."""
    lr = peer(est, False)
    return [est.predict_proba, lambda X: np.exp(by_class(est, "predict_log_proba")(X)),
            lr.predict_proba if est.multiclass == "multinomial" else lr._predict_proba_lr]


def scipy_product(est):
    """``est.decision_function`` with SciPy's product of CSR rows, as it was."""
    def product(X, Wt, intercept=None, n_threads=1):
        Z = np.asarray(X @ np.asarray(Wt, dtype=np.float64))
        return Z if intercept is None else Z + intercept

    def scores(X):
        routed = _sparsemax.csr_scores, _softmax.csr_scores
        _sparsemax.csr_scores = _softmax.csr_scores = product
        try:
            return est.decision_function(X)
        finally:
            _sparsemax.csr_scores, _softmax.csr_scores = routed
    return scores


MODELS = [("L1LogisticOBA, one-vs-rest", lambda: L1LogisticOBA(C=1.0)),
          ("L1LogisticOBA, multinomial", lambda: L1LogisticOBA(C=1.0, multiclass="multinomial")),
          ("SparsemaxClassifier", SparsemaxClassifier),
          ("ExtremeSoftmaxSGD", lambda: ExtremeSoftmaxSGD(random_state=0))]


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
    rows, shapes, proba_rows = [], [], []
    for name, A_tr, A_te in matrices:
        shapes.append(f"{name}: {A_tr.shape[1]:,} columns, {A_te.shape[0]:,} test rows "
                      f"({A_te.nnz:,} nonzeros)")
        print(shapes[-1], flush=True)
        for model, make in MODELS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est = make().fit(A_tr, y_tr)
            used = int(np.count_nonzero(est.coef_.any(axis=0)))
            l1 = isinstance(est, L1LogisticOBA)
            routes = [est.decision_function, by_class(est) if l1 else scipy_product(est),
                      peer(est, False).decision_function,
                      peer(est, True).decision_function if l1 else None]
            for fmt in ("csr", "csc"):
                A = A_te.asformat(fmt)
                scores = [np.asarray(fn(A)) for fn in routes if fn is not None]
                gap = max(float(np.abs(s - scores[0]).max()) for s in scores[1:])
                assert gap < 1e-12, gap
                for batch in BATCHES:
                    if fmt == "csc" and batch is not None and batch < 1000:
                        continue            # CSC batches of a few rows are not a use
                    t = [np.nan if fn is None else batch_seconds(fn, A, batch, args.repeat)
                         for fn in routes]
                    rows.append([name, model, f"{used:,}", fmt.upper(),
                                 "all" if batch is None else f"{batch:,}",
                                 *(f"{v * 1e3:.3f}" if l1 or i < 3 else "—"
                                   for i, v in enumerate(t)),
                                 f"{t[2] / t[0]:.1f}x",
                                 f"{t[3] / t[0]:.2f}x" if l1 else "—",
                                 f"{t[1] / t[0]:.2f}x"])
                    print(" | ".join(rows[-1]), flush=True)
            if l1:
                routes = probability_routes(est)
                probabilities = [fn(A_te) for fn in routes]
                gap = max(float(np.abs(p - probabilities[0]).max()) for p in probabilities)
                assert gap < 1e-12, gap
                t = [batch_seconds(fn, A_te, None, args.repeat) for fn in routes]
                proba_rows.append([name, model, *(f"{v * 1e3:.2f}" for v in t),
                                   f"{t[1] / t[0]:.2f}x", f"{t[2] / t[0]:.2f}x"])
                print(" | ".join(proba_rows[-1]), flush=True)
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
        "",
        "`predict_proba` of all the test rows (CSR) under the ℓ1 models: sparsekit's "
        "(the σ's or the softmax in probability space, one pass of "
        "`exp`), as it was (the exponential of the log-probabilities, from the "
        "class-by-class scores), and scikit-learn's of the same weights "
        "(`LogisticRegression.predict_proba` for the multinomial model; for one-vs-rest "
        "the σ's normalized per row, `_predict_proba_lr`); all agree to 1e-12 (checked).",
        "",
        _report.markdown_table(["features", "model", "sparsekit (ms)", "before (ms)",
                                "scikit-learn (ms)", "before / sparsekit",
                                "scikit-learn / sparsekit"], proba_rows),
    ])
    _report.write_section("sparse_predictions", "Predictions of sparse rows", body)


if __name__ == "__main__":
    main()
