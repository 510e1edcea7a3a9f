"""What the tolerance buys: multinomial ℓ1 logistic regression on a text corpus at tol 1e-4 to 1e-8.

The data of bench_multiclass_text.py (the Debian package descriptions, split 75/25 with a
fixed seed, ``TfidfVectorizer(sublinear_tf=True, min_df=2)`` fit on the training rows, 58
sections as classes). For each C, ``L1LogisticOBA(C, multiclass="multinomial", tol=tol)``
at each tolerance (the estimator's default is 1e-8) and the one-vs-rest fit at its defaults
for reference: process CPU seconds of one fit each (BLAS pinned to one thread), iterations,
the objective's excess over the tightest fit's (relative), nonzero weights, test accuracy
and log loss. Writes section "multinomial_tol" of doc/benchmarks.md::

    python benchmarks/bench_multinomial_tol.py [--Cs 1 10] [--tols 1e-4 1e-6 1e-8]
"""
import _report  # noqa: F401  (pins BLAS threads before NumPy)

import argparse
import warnings

import numpy as np
from bench_hashed_features import cpu_seconds
from bench_l1_multinomial import objective
from bench_multiclass_text import described_split
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score, log_loss

from sparsekit.linear_model import L1LogisticOBA


def fitted(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cpu_seconds(lambda: L1LogisticOBA(**params).fit(X, y))


def scores(est, X_te, y_te):
    proba = est.predict_proba(X_te)
    pred = est.classes_[np.argmax(proba, axis=1)]
    return (f"{accuracy_score(y_te, pred):.4f}",
            f"{log_loss(y_te, proba, labels=est.classes_):.4f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--Cs", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--tols", type=float, nargs="+", default=[1e-4, 1e-6, 1e-8])
    args = parser.parse_args()
    tols = sorted(args.tols, reverse=True)
    X_tr, X_te, y_tr, y_te, classes, shape = described_split()
    rows = []
    for C in args.Cs:
        fits = [(tol, *fitted(X_tr, y_tr, C=C, tol=tol, multiclass="multinomial"))
                for tol in tols]
        F = [objective(X_tr, y_tr, est.coef_, est.intercept_, C, 1.0) for _, _, est in fits]
        tightest, best = fits[-1][1], min(F)
        for (tol, seconds, est), value in zip(fits, F):
            rows.append([f"{C:g}", "multinomial", f"{tol:g}", f"{seconds:.1f}",
                         f"{seconds / tightest:.2f}x", f"{int(est.n_iter_[0]):,}",
                         f"{(value - best) / best:.1e}",
                         f"{int(np.count_nonzero(est.coef_)):,}", *scores(est, X_te, y_te)])
            print(" | ".join(rows[-1]), flush=True)
        seconds, est = fitted(X_tr, y_tr, C=C)
        rows.append([f"{C:g}", "one-vs-rest (default)", "1e-08", f"{seconds:.1f}",
                     f"{seconds / tightest:.2f}x", f"{int(est.n_iter_.sum()):,} "
                     f"({classes.size} problems)", "—", f"{int(np.count_nonzero(est.coef_)):,}",
                     *scores(est, X_te, y_te)])
        print(" | ".join(rows[-1]), flush=True)
    body = "\n".join([
        f"The data of section *multiclass_text* ({shape}). `L1LogisticOBA(C, "
        "multiclass=\"multinomial\", tol=tol)`; the default `tol` is 1e-8, a bound on OBA's "
        "optimality measure ‖w − S(w − ∇f)‖∞ with f the weighted mean loss. Process CPU seconds "
        "of one fit each, one thread; \"/ tightest\": the time over the multinomial fit at "
        f"tol {tols[-1]:g}; \"excess\": the objective C Σᵢ NLL + ‖W‖₁ over the lowest of the "
        "C's multinomial fits, relative. The one-vs-rest fit (the default `multiclass`) solves "
        "another problem; its row is there for its time and test scores.",
        "",
        _report.markdown_table(["C", "model", "tol", "fit (s)", "/ tightest", "iterations",
                                "excess", "nonzero weights", "test accuracy",
                                "test log loss"], rows),
    ])
    _report.write_section("multinomial_tol",
                          "Multinomial ℓ1 logistic regression on a text corpus: what the "
                          "tolerance buys", body)


if __name__ == "__main__":
    main()
